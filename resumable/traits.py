"""What changes between the MindCluster releases whose stack this project deploys.

Every flag is read off the release manifests (``MC:@<tag> component/*/build/*.yaml``; sources in
docs/sources.md), named after what it changes and set from one :class:`resumable.releases.Gate`,
so the component builders read as "if the release has healthz ports ..." rather than version
compares. Below the plan and the manifests alike: the plan reads what a release's NPU DaemonSets
select (:func:`device_plugin_selector`), the builders everything else.
"""

from __future__ import annotations

from typing import Dict, NamedTuple

from . import releases as R
from .constants import NODE_LABEL_ACCELERATOR
from .versions import Version

#: the node label value the device plugin selected before 26.1 (device-plugin-volcano-v{ver}.yaml, 910)
ACCELERATOR_910 = "huawei-Ascend910"


class Traits(NamedTuple):
    release: str
    #: :data:`~resumable.releases.FULL_FAULT_PATHS`: NodeD/device plugin read driver, pingmesh and
    #: profiling paths; ClusterD mounts its customisation and slow-node dirs and watches
    #: AscendJobs; operator may use statefulsets.
    full_fault_paths: bool
    #: :data:`~resumable.releases.VOLCANO_SELF_MAINTAINED_CARDS`: init-params
    #: self-maintain-available-card and forceEnqueue, the 1.9.0 bindings rule and
    #: --percentage-nodes-to-find=100.
    volcano_self_maintained_cards: bool
    #: :data:`~resumable.releases.NODED_HOST_NETWORK`: NodeD on the host network, reading nodes.
    noded_host_network: bool
    #: :data:`~resumable.releases.OPERATOR_PATCHES_PODS`
    operator_patches_pods: bool
    #: :data:`~resumable.releases.CLUSTERD_CONFIG_CM`: ClusterD reads ``clusterd-config-cm``.
    clusterd_config_cm: bool
    #: :data:`~resumable.releases.VOLCANO_VERBOSE_LOG`: Volcano logs at -v=3.
    volcano_verbose_log: bool
    #: From :data:`~resumable.releases.DEVICE_PLUGIN_RUNTIME_MOUNTS` until
    #: :data:`~resumable.releases.MERGED_DEVICE_PLUGIN`: the device plugin mounts the runtime's
    #: sockets and the DPU config dir.
    device_plugin_runtime_mounts: bool
    #: :data:`~resumable.releases.HEALTHZ`: healthz ports + liveness probes.
    healthz: bool
    #: :data:`~resumable.releases.LOG_INIT_CONTAINERS`: ``init-log-setup`` initContainers owning
    #: ``/var/log/mindx-dl/<component>`` (host path ``/var/log`` + subPath).
    log_init_containers: bool
    #: :data:`~resumable.releases.MERGED_DEVICE_PLUGIN`: chip-agnostic device plugin
    #: (``workerselector``, no ``-910`` suffix, runtime-mounted sockets).
    merged_device_plugin: bool
    #: :data:`~resumable.releases.NODED_WATCHES_PODS`: NodeD watches pods, reads daemonsets, has a
    #: writable root filesystem.
    noded_watches_pods: bool
    #: :data:`~resumable.releases.EXPORTER_NO_UPDATE_TIME`: NPU Exporter without -updateTime.
    exporter_no_update_time: bool
    #: :data:`~resumable.releases.VOLCANO_RELEASE_TAGS`: Volcano tags ``v1.x.0-v<release>``.
    volcano_release_tags: bool
    #: :data:`~resumable.releases.REGISTRY_OS_TAGS`: registry tags end with the OS flavour.
    registry_os_tags: bool


def traits(release: str) -> Traits:
    v = Version(release)
    return Traits(
        release=release,
        full_fault_paths=R.at_least(v, R.FULL_FAULT_PATHS),
        volcano_self_maintained_cards=R.at_least(v, R.VOLCANO_SELF_MAINTAINED_CARDS),
        noded_host_network=R.at_least(v, R.NODED_HOST_NETWORK),
        operator_patches_pods=R.at_least(v, R.OPERATOR_PATCHES_PODS),
        clusterd_config_cm=R.at_least(v, R.CLUSTERD_CONFIG_CM),
        volcano_verbose_log=R.at_least(v, R.VOLCANO_VERBOSE_LOG),
        device_plugin_runtime_mounts=R.at_least(v, R.DEVICE_PLUGIN_RUNTIME_MOUNTS)
        and not R.at_least(v, R.MERGED_DEVICE_PLUGIN),
        healthz=R.at_least(v, R.HEALTHZ),
        log_init_containers=R.at_least(v, R.LOG_INIT_CONTAINERS),
        merged_device_plugin=R.at_least(v, R.MERGED_DEVICE_PLUGIN),
        noded_watches_pods=R.at_least(v, R.NODED_WATCHES_PODS),
        exporter_no_update_time=R.at_least(v, R.EXPORTER_NO_UPDATE_TIME),
        volcano_release_tags=R.at_least(v, R.VOLCANO_RELEASE_TAGS),
        registry_os_tags=R.at_least(v, R.REGISTRY_OS_TAGS),
    )


def device_plugin_selector(t: Traits, worker_selector: Dict[str, str]) -> Dict[str, str]:
    """The device plugin's nodeSelector: ``workerselector`` from 26.1, ``accelerator: huawei-Ascend910``
    before (the 910 variant of ``device-plugin-volcano-v{ver}.yaml``). The driver role removes it from a node
    for its maintenance window (plan ``nodes.npu_daemonset_selector``)."""
    return dict(worker_selector) if t.merged_device_plugin else {NODE_LABEL_ACCELERATOR: ACCELERATOR_910}
