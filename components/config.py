"""The stack configuration (``pulumi config``), read and checked once.

Every mistake is one :class:`pulumi.RunError` naming the key and the fix, raised before any
resource is registered, so ``pulumi preview`` fails with it instead of a stack trace.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict, List, Optional

import pulumi

#: the references Docker accepts: [registry[:port]/]path[:tag][@sha256:digest]
_REFERENCE = re.compile(
    r"\A(?:[a-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._/-][a-z0-9]+)*(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?\Z"
)
_REGISTRY = re.compile(r"\A[a-z0-9.-]+(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*\Z")

DEFAULT_READY_TIMEOUT = 180


@dataclasses.dataclass
class StackConfig:
    profile: str
    kubeconfig: Optional[pulumi.Output[str]]
    context: Optional[str]
    crd_sources: Optional[List[str]]
    docker_config_json: Optional[pulumi.Output[str]]
    #: prebuilt image references by job name
    images: Dict[str, str]
    #: registry prefix for built images of jobs without image.name
    image_registry: Optional[str]
    registry_username: Optional[str]
    registry_password: Optional[pulumi.Output[str]]
    push_images: bool
    ready_timeout: int
    retain_on_delete: bool
    #: ask the API server for labelled nodes before deploying (components/readiness.py)
    check_nodes: bool
    #: the kubeconfig (path or contents) as plain text, for the node check only
    kubeconfig_text: Optional[str]


def _fail(key: str, problem: str, fix: str) -> pulumi.RunError:
    return pulumi.RunError(f"stack config {key}: {problem}. {fix}")


def _typed(config: pulumi.Config, key: str, getter: str, what: str) -> Any:
    try:
        return getattr(config, getter)(key)
    except pulumi.ConfigTypeError:
        raise _fail(key, f"is not {what}", f"Set it with `pulumi config set {key} <{what}>`.") from None


def read_config(config: pulumi.Config) -> StackConfig:
    profile = config.get("profile")
    if not profile:
        raise _fail(
            "profile",
            "is not set",
            "Name the profile to deploy: `pulumi config set profile examples/<name>.yaml` "
            "(each Pulumi.<stack>.yaml of the examples sets it).",
        )
    crd_sources = _typed(config, "crdSources", "get_object", "a list of file paths")
    if crd_sources is not None and (
        not isinstance(crd_sources, list) or not all(isinstance(p, str) and p for p in crd_sources)
    ):
        raise _fail(
            "crdSources", "must be a list of file paths", "Use `pulumi config set --path 'crdSources[0]' FILE`."
        )
    images = _typed(config, "images", "get_object", "a mapping of job name to image reference") or {}
    if not isinstance(images, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in images.items()):
        raise _fail(
            "images", "must map job names to image references", "Use `pulumi config set --path images.JOB REF`."
        )
    for job, ref in images.items():
        if not _REFERENCE.match(ref):
            raise _fail(
                f"images.{job}", f"{ref!r} is not an image reference", "Write registry/name:tag or name@sha256:..."
            )
    registry = config.get("imageRegistry")
    if registry is not None and not _REGISTRY.match(registry):
        raise _fail("imageRegistry", f"{registry!r} is not a registry prefix", "Write e.g. registry.example.com/ai.")
    timeout = _typed(config, "readyTimeout", "get_int", "an integer") or DEFAULT_READY_TIMEOUT
    if not 10 <= timeout <= 3600:
        raise _fail("readyTimeout", f"{timeout} is outside 10..3600 seconds", "Choose a wait between 10 s and 1 h.")
    push = _typed(config, "pushImages", "get_bool", "true or false")
    retain = _typed(config, "retainOnDelete", "get_bool", "true or false")
    check = _typed(config, "checkNodes", "get_bool", "true or false")
    return StackConfig(
        profile=profile,
        kubeconfig=config.get_secret("kubeconfig"),
        context=config.get("context"),
        crd_sources=crd_sources,
        docker_config_json=config.get_secret("dockerConfigJson"),
        images=dict(images),
        image_registry=registry,
        registry_username=config.get("registryUsername"),
        registry_password=config.get_secret("registryPassword"),
        push_images=True if push is None else push,
        ready_timeout=timeout,
        retain_on_delete=True if retain is None else retain,
        check_nodes=True if check is None else check,
        kubeconfig_text=config.get("kubeconfig"),
    )
