"""The whole scheduling stack as plain Kubernetes objects, in install order."""

from __future__ import annotations

from typing import List, Mapping, NamedTuple, Optional, Sequence

from ..constants import NAMESPACE_CLUSTER_SYSTEM, NAMESPACE_MINDX_DL, NAMESPACE_NPU_EXPORTER
from ..plan.model import SchedulerPlan
from . import clusterd, crds, device_plugin, k8s, noded, npu_exporter, operator, volcano
from .k8s import Obj
from .settings import Settings
from .support import check_supported


class Stage(NamedTuple):
    """One step of the documented install order; every object of a stage depends on the previous
    stage (INST05, INST06, INST08: Volcano before the Ascend Operator before ClusterD)."""

    name: str
    objects: List[Obj]


def build_stages(
    scheduler: SchedulerPlan,
    crd_sources: Optional[Sequence[str]] = None,
    images: Optional[Mapping[str, str]] = None,
) -> List[Stage]:
    check_supported(scheduler)
    s = Settings(scheduler, images)
    namespaces = [k8s.namespace(NAMESPACE_MINDX_DL), k8s.namespace(NAMESPACE_CLUSTER_SYSTEM)]
    namespaces += volcano.namespaces(s)
    namespaces.append(k8s.namespace(NAMESPACE_NPU_EXPORTER))
    verbatim = crds.load_crds(crd_sources) if crd_sources else None
    stages = [
        ("namespaces", "mindcluster", namespaces),
        ("crds", "mindcluster", crds.crds(scheduler.volcano_version, verbatim)),
        ("volcano", "volcano", volcano.objects(s)),
        ("ascend-operator", "ascend-operator", operator.objects(s)),
        ("clusterd", "clusterd", clusterd.objects(s)),
        ("device-plugin", "ascend-device-plugin", device_plugin.objects(s)),
        ("noded", "noded", noded.objects(s)),
        ("npu-exporter", "npu-exporter", npu_exporter.objects(s)),
    ]
    labelled = [(stage, k8s.recommended_labels(objs, name)) for stage, name, objs in stages]
    node_agents = [obj for stage, objs in labelled[5:] for obj in objs]
    return [*(Stage(stage, objs) for stage, objs in labelled[:5]), Stage("node-agents", node_agents)]


def build_stack(
    scheduler: SchedulerPlan,
    crd_sources: Optional[Sequence[str]] = None,
    images: Optional[Mapping[str, str]] = None,
) -> List[Obj]:
    """Namespaces, CRDs, Volcano, Ascend Operator, ClusterD, device plugin, NodeD, NPU Exporter.

    ``crd_sources``: paths of the user's release files (``ascend-operator-v<ver>.yaml``,
    ``volcano-v<x>.yaml``) whose CRDs replace the trimmed ones built here. ``images``: full image
    references by component name, overriding the release defaults.
    Raises :class:`~resumable.manifests.support.UnsupportedStack` for plans this stack cannot deploy.
    """
    return [obj for stage in build_stages(scheduler, crd_sources, images) for obj in stage.objects]
