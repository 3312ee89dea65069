"""The per-component choices a :class:`SchedulerPlan` implies: images, pull policy, resources, nodes.

Component keys are the ones ``SchedulerPlan.resources`` uses (:data:`COMPONENTS`).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

from .. import formats as F
from ..choices import Component, values
from ..constants import NODE_LABEL_MASTER, NODE_LABEL_MASTER_VALUE, NODE_LABEL_WORKER, NODE_LABEL_WORKER_VALUE
from ..errors import ResumableError, shown
from ..plan.model import SchedulerPlan
from ..traits import traits
from .k8s import Obj, resources

VOLCANO_SCHEDULER = "volcano-scheduler"
VOLCANO_CONTROLLERS = "volcano-controllers"
ASCEND_OPERATOR = "ascend-operator"
CLUSTERD = "clusterd"
DEVICE_PLUGIN = "device-plugin"
NODED = "noded"
NPU_EXPORTER = "npu-exporter"
COMPONENTS: Tuple[str, ...] = values(Component)
VOLCANO_COMPONENTS = (VOLCANO_SCHEDULER, VOLCANO_CONTROLLERS)

#: Local image names the release manifests reference (INST01 "Preparing an Image": images are
#: built from the release zip or pulled from SWR ``ascendhub`` and retagged to these names).
LOCAL_IMAGE_NAMES: Dict[str, str] = {
    VOLCANO_SCHEDULER: "volcanosh/vc-scheduler",
    VOLCANO_CONTROLLERS: "volcanosh/vc-controller-manager",
    ASCEND_OPERATOR: "ascend-operator",
    CLUSTERD: "clusterd",
    DEVICE_PLUGIN: "ascend-k8sdeviceplugin",
    NODED: "noded",
    NPU_EXPORTER: "npu-exporter",
}

#: requests (cpu, memory) and memory limit of the release manifests; requests equal limits except
#: the Volcano scheduler's memory (4Gi request, 8Gi limit).
DEFAULT_RESOURCES: Dict[str, Tuple[str, str, Optional[str]]] = {
    VOLCANO_SCHEDULER: ("5500m", "4Gi", "8Gi"),
    VOLCANO_CONTROLLERS: ("2000m", "3Gi", None),
    ASCEND_OPERATOR: ("2000m", "3Gi", None),
    CLUSTERD: ("1000m", "1Gi", None),
    DEVICE_PLUGIN: ("500m", "500Mi", None),
    NODED: ("500m", "300Mi", None),
    NPU_EXPORTER: ("1000m", "1000Mi", None),
}


def check_images(images: Mapping[str, str]) -> Dict[str, str]:
    """Image overrides by component (``render --image``, Pulumi config ``images``), each a known
    component and a well-formed image reference; raise a one-paragraph error otherwise."""
    out: Dict[str, str] = {}
    for component, ref in images.items():
        where = "image override %s=%s" % (shown(component, 40)[1:-1], shown(ref, 60)[1:-1])
        if component not in COMPONENTS:
            raise ResumableError(
                "unknown component %s" % shown(component, 40), where, "Components: %s." % ", ".join(COMPONENTS)
            )
        problem = F.problem(F.IMAGE, ref) if isinstance(ref, str) else "is not a string"
        if problem is not None:
            raise ResumableError(problem, where, "Write %s." % F.FORMATS[F.IMAGE].description)
        out[component] = ref
    return out


#: Volcano's images come in alpinelatest and openeuler24.03 (MC:@branch_v26.1.0
#: docker/ascend-for-volcano/OVERVIEW.md:62-78): the flavour for each scheduler.image_os.
VOLCANO_OS = {"openeuler24.03": "openeuler24.03", "ubuntu22.04": "alpinelatest"}


def registry_os(release: str, registry: str, image_os: str, volcano: bool = False) -> Optional[str]:
    """The OS flavour a registry's tag carries: from 26.1.0, on a registry (local names have none)."""
    if not registry or not traits(release).registry_os_tags:
        return None
    return VOLCANO_OS[image_os] if volcano else image_os


def volcano_tag(volcano: str, release: str, registry: str, image_os: str = "openeuler24.03") -> str:
    """``v1.9.0`` up to 26.0 (local retagged name); ``v1.9.0-v26.1.0`` from 26.1 and on SWR, where the
    Volcano tag embeds the MindCluster release (INST05; HELM values 26.1); on a registry from 26.1.0 with
    the OS flavour, ``v1.9.0-v26.1.0-openeuler24.03`` (:data:`~resumable.releases.REGISTRY_OS_TAGS`)."""
    embedded = bool(registry) or traits(release).volcano_release_tags
    return F.volcano_image_tag(
        volcano, release if embedded else None, registry_os(release, registry, image_os, volcano=True)
    )


class Settings:
    """Resolved settings for one build of the stack."""

    def __init__(self, plan: SchedulerPlan, images: Optional[Mapping[str, str]] = None) -> None:
        assert plan.stack_release is not None, "check_supported() must run first"
        self.plan = plan
        self.release = plan.stack_release
        self.t = traits(plan.stack_release)
        self._images = check_images(images or {})

    def image(self, component: str) -> str:
        if component in self._images:
            return self._images[component]
        registry = self.plan.image_registry.rstrip("/")
        if component in VOLCANO_COMPONENTS:
            tag = volcano_tag(self.plan.volcano_version, self.plan.release, registry, self.plan.image_os)
        else:
            tag = F.with_os_flavour(
                F.release_image_tag(self.plan.release),
                registry_os(self.release, registry, self.plan.image_os),
            )
        return F.component_image_reference(LOCAL_IMAGE_NAMES[component], tag, registry)

    def pull_policy(self, component: str) -> str:
        """The plan's policy, else the manifests' default: ``IfNotPresent`` for Volcano, ``Never``
        (images pre-loaded on every node) for the MindCluster components (INST01)."""
        if self.plan.image_pull_policy:
            return self.plan.image_pull_policy
        return "IfNotPresent" if component in VOLCANO_COMPONENTS else "Never"

    def resources(self, component: str) -> Obj:
        cpu, memory, memory_limit = DEFAULT_RESOURCES[component]
        override = self.plan.resources.get(component) or {}
        if override:
            cpu = override.get("cpu", cpu)
            memory = override.get("memory", memory)
            memory_limit = override.get("memory", memory_limit)
        return resources(cpu, memory, memory_limit)

    @property
    def master_selector(self) -> Dict[str, str]:
        return {NODE_LABEL_MASTER: NODE_LABEL_MASTER_VALUE}

    @property
    def worker_selector(self) -> Dict[str, str]:
        return {NODE_LABEL_WORKER: NODE_LABEL_WORKER_VALUE}

    def pod_extras(self) -> Obj:
        """Pod-spec fields every component gets from the plan (image pull secrets)."""
        extras: Dict[str, Any] = {}
        if self.plan.image_pull_secrets:
            extras["imagePullSecrets"] = [{"name": n} for n in self.plan.image_pull_secrets]
        return extras


assert set(COMPONENTS) == set(LOCAL_IMAGE_NAMES) == set(DEFAULT_RESOURCES), "component tables disagree"
