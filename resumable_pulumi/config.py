"""The stack configuration (``pulumi config``), read and checked once.

Every mistake is one :class:`pulumi.RunError` naming the key and the fix, raised before any
resource is registered, so ``pulumi preview`` fails with it instead of a stack trace.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

import pulumi

from resumable.formats import IMAGE, REGISTRY, problem

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
    #: ask the API server for labelled nodes before deploying (resumable_pulumi/readiness.py)
    check_nodes: bool
    #: the kubeconfig (path or contents) as plain text, for the node check only
    kubeconfig_text: Optional[str]
    #: all | cluster | workload (resumable_pulumi/program.py)
    role: str = "all"
    #: the cluster stack a workload stack runs on (``org/project/stack``); None: adopt the cluster
    cluster_stack: Optional[str] = None
    #: pulumi-kubernetes ``clusterIdentifier``; None: the profile's cluster name
    cluster_identifier: Optional[str] = None
    #: build images during ``pulumi preview`` too
    build_on_preview: bool = False


class _Problems:
    """Every mistake in the stack config, reported together as one RunError."""

    def __init__(self) -> None:
        self.items: List[str] = []

    def add(self, key: str, problem: str, fix: str) -> None:
        self.items.append(f"stack config {key}: {problem}. {fix}")

    def typed(self, config: pulumi.Config, key: str, getter: str, what: str) -> Any:
        try:
            return getattr(config, getter)(key)
        except pulumi.ConfigTypeError:
            self.add(key, f"is not {what}", f"Set it with `pulumi config set {key} <{what}>`.")
            return None

    def raise_any(self) -> None:
        if self.items:
            raise pulumi.RunError(" ".join(self.items))


def _unset(value: Optional[str]) -> Optional[str]:
    """Pulumi.yaml gives optional strings the default "" (so the CLI does not ask for them)."""
    return value or None


def read_config(config: pulumi.Config) -> StackConfig:
    """The stack config; every problem at once in one RunError (the CLI names missing keys the
    same way, pkg/workspace/config.go missingStackConfigurationKeysError)."""
    problems = _Problems()
    profile = config.get("profile")
    if not profile:
        problems.add(
            "profile",
            "is not set",
            "Name the profile to deploy: `pulumi config set profile examples/<name>.yaml` "
            "(each Pulumi.<stack>.yaml of the examples sets it).",
        )
    crd_sources = problems.typed(config, "crdSources", "get_object", "a list of file paths")
    if crd_sources is not None and (
        not isinstance(crd_sources, list) or not all(isinstance(p, str) and p for p in crd_sources)
    ):
        problems.add(
            "crdSources", "must be a list of file paths", "Use `pulumi config set --path 'crdSources[0]' FILE`."
        )
        crd_sources = None
    images = problems.typed(config, "images", "get_object", "a mapping of job name to image reference") or {}
    if not isinstance(images, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in images.items()):
        problems.add(
            "images", "must map job names to image references", "Use `pulumi config set --path images.JOB REF`."
        )
        images = {}
    # the profile's own formats (resumable/formats.py), so config and profile accept the same references
    for job, ref in images.items():
        wrong = problem(IMAGE, ref)
        if wrong:
            problems.add(f"images.{job}", wrong, "Write registry/name:tag or name@sha256:...")
    registry = _unset(config.get("imageRegistry"))
    wrong = problem(REGISTRY, registry) if registry is not None else None
    if wrong:
        problems.add("imageRegistry", wrong, "Write e.g. registry.example.com/ai.")
    timeout = problems.typed(config, "readyTimeout", "get_int", "an integer") or DEFAULT_READY_TIMEOUT
    if not 10 <= timeout <= 3600:
        problems.add("readyTimeout", f"{timeout} is outside 10..3600 seconds", "Choose a wait between 10 s and 1 h.")
    push = problems.typed(config, "pushImages", "get_bool", "true or false")
    retain = problems.typed(config, "retainOnDelete", "get_bool", "true or false")
    check = problems.typed(config, "checkNodes", "get_bool", "true or false")
    build_on_preview = problems.typed(config, "buildOnPreview", "get_bool", "true or false")
    role = _unset(config.get("stackRole")) or "all"
    if role not in ("all", "cluster", "workload"):
        problems.add("stackRole", f"{role!r} is not all, cluster or workload", "See docs/pulumi.md (stack roles).")
    username = _unset(config.get("registryUsername"))
    password = config.get("registryPassword")
    if bool(username) != bool(password):
        given, absent = (
            ("registryUsername", "registryPassword") if username else ("registryPassword", "registryUsername")
        )
        problems.add(
            absent,
            f"is not set but {given} is: a registry login needs both",
            "Set `pulumi config set registryUsername USER` and `pulumi config set --secret registryPassword TOKEN`, "
            f"or remove {given}.",
        )
    problems.raise_any()
    return StackConfig(
        profile=profile or "",
        kubeconfig=config.get_secret("kubeconfig"),
        context=_unset(config.get("context")),
        crd_sources=crd_sources or None,
        docker_config_json=config.get_secret("dockerConfigJson"),
        images=dict(images),
        image_registry=registry,
        registry_username=username,
        registry_password=config.get_secret("registryPassword") if password else None,
        push_images=True if push is None else push,
        ready_timeout=timeout,
        retain_on_delete=True if retain is None else retain,
        check_nodes=True if check is None else check,
        kubeconfig_text=config.get("kubeconfig"),
        role=role,
        cluster_stack=_unset(config.get("clusterStack")),
        cluster_identifier=_unset(config.get("clusterIdentifier")),
        build_on_preview=bool(build_on_preview),
    )
