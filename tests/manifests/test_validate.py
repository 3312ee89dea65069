"""Every built-in object passes kubernetes-validate --strict, for every supported combination.

kubernetes-validate has no schema for custom kinds: the stack's one custom resource, the Volcano
queue its jobs name (D18), is checked against its CRD by check_rendered (test_check_rendered) and by
the API server in the cluster tests; CRDs themselves are apiextensions/v1 and validate here.
"""

from __future__ import annotations

from typing import List, Tuple

import kubernetes_validate
import pytest

from resumable.manifests import build_stack
from resumable.releases import STACK_RELEASES, VOLCANO_BUILDS
from resumable.versions import Version

from .plans import scheduler_plan

#: kubernetes-validate ships schemas for 1.25..1.37.
VALIDATOR_MIN = Version("1.25")


def kube_versions(volcano: str) -> List[str]:
    """The oldest and newest Kubernetes both the Volcano build and kubernetes-validate support."""
    build = VOLCANO_BUILDS[volcano]
    oldest = max(Version(build.kubernetes_min), VALIDATOR_MIN).text
    return [oldest, build.kubernetes_max]


CASES: List[Tuple[str, str, str, str, str]] = [
    (release, volcano, arch, runtime, kube)
    for release, stack in STACK_RELEASES.items()
    for volcano in stack.volcano
    for arch, runtime in (("aarch64", "containerd"), ("x86_64", "docker"))
    for kube in kube_versions(volcano)
]


@pytest.mark.parametrize("release, volcano, arch, runtime, kube", CASES)
def test_every_object_is_valid_strict(release: str, volcano: str, arch: str, runtime: str, kube: str) -> None:
    plan = scheduler_plan(
        release, volcano, arch, kubernetes=kube, container_runtime=runtime, image_pull_secrets=["regcred"]
    )
    objects = build_stack(plan)
    assert objects
    for obj in objects:
        if obj["apiVersion"].startswith("scheduling.volcano.sh/"):  # the queue (D18): a custom resource
            continue
        try:
            kubernetes_validate.validate(obj, kube, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} at {kube}: {exc.message} ({list(exc.path)})")


def test_validator_catches_a_typo() -> None:
    """Guard: strict validation really rejects unknown fields in a built object."""
    obj = build_stack(scheduler_plan())[-1]
    obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Never"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(obj, "1.28", strict=True)
