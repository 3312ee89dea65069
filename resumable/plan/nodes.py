"""The node part of the plan: what every node needs before MindCluster's pods run on it
(consumed by the Ansible roles through ``resumable plan --format json``)."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from .. import constants as C
from ..facts import JobFacts
from ..hardware import ACCELERATOR_TYPES
from ..profile import Profile
from ..traits import device_plugin_selector, traits
from .model import NodePlan, Note, SharedVolumePlan

#: ulimit -n advised for Pod-level rescheduling at scale (RT01 Pod-level constraints).
NOFILE_POD_LEVEL = 100000


def accelerator_label(chip: str) -> str:
    """Node label accelerator: huawei-Ascend910 for Atlas training, A2 and A3; huawei-npu for
    Atlas 350/850/950 (INST01 Table 1)."""
    return "huawei-npu" if chip == "ascend-npu" else "huawei-Ascend910"


def npu_resource(chip: str) -> str:
    """Extended resource name the pods request (YAMLCFG)."""
    return "huawei.com/npu" if chip == "ascend-npu" else "huawei.com/Ascend910"


def node_npus(profile: Profile) -> int:
    """NPUs in one compute node: the accelerator type's (INST01 Table 1), else the most a job asks."""
    known = ACCELERATOR_TYPES.get(profile.cluster.accelerator_type)
    if known is not None:
        return known.node_npus
    return max([job.npus_per_node for job in profile.jobs] or [1])


def reserved_ports(profile: Profile, facts: List[JobFacts]) -> List[int]:
    choice = profile.cluster.reserve_taskd_ports
    wanted = choice if choice is not None else any(f.host_network and f.uses_taskd for f in facts)
    return [C.TASKD_MANAGER_PORT, C.TASKD_PROXY_PORT] if wanted else []


def _users() -> List[Dict[str, Any]]:
    """HwHiAiUser runs the driver and the training processes, hwMindX the management components
    (INST01 Creating a User; APPX users: hwMindX has nologin as its shell and is a member of group
    HwHiAiUser)."""
    return [
        {
            "name": C.USER_HWHIAI,
            "uid": C.UID_HWHIAI,
            "gid": C.UID_HWHIAI,
            "home": "/home/%s" % C.USER_HWHIAI,
            "shell": "/bin/bash",
            "where": "all",
            "source": "FAQ 337",
        },
        {
            "name": C.USER_HWMINDX,
            "uid": C.UID_HWMINDX,
            "gid": C.UID_HWMINDX,
            "home": "/home/%s" % C.USER_HWMINDX,
            "shell": "/sbin/nologin",
            "where": "all",
            "groups": [C.USER_HWHIAI],
            "source": "INST01 Creating a User",
        },
    ]


def _log_dirs() -> List[Dict[str, Any]]:
    root = C.LOG_ROOT
    out: List[Dict[str, Any]] = [{"path": root, "mode": "0755", "owner": "root", "group": "root", "where": "all"}]
    for name in ("devicePlugin", "npu-exporter", "noded"):
        out.append(
            {"path": "%s/%s" % (root, name), "mode": "0750", "owner": "root", "group": "root", "where": "compute"}
        )
    for name in ("ascend-operator", "clusterd", "volcano-controller", "volcano-scheduler"):
        out.append(
            {
                "path": "%s/%s" % (root, name),
                "mode": "0750",
                "owner": C.USER_HWMINDX,
                "group": C.USER_HWMINDX,
                "where": "management",
            }
        )
    return out


#: The operator (hwMindX) writes <ns>.<job>/hccl.json under the ranktable root (INST08: owner 9000 or mode
#: 777); training processes run as HwHiAiUser read it, and hwMindX is a member of group HwHiAiUser. Group
#: HwHiAiUser with the setgid bit keeps new entries readable and writable for both.
RANKTABLE_ACCESS = {"owner": C.USER_HWMINDX, "group": C.USER_HWHIAI, "mode": "2775"}


def npu_daemonset_selector(release: str) -> Dict[str, str]:
    """Every node label an NPU DaemonSet selects (NodeD and NPU Exporter: workerselector; the device
    plugin: workerselector from 26.1, accelerator=huawei-Ascend910 before; INST01, INST04). Removing
    these labels stops all of them on a node, which the driver role does for its maintenance window."""
    worker = {C.NODE_LABEL_WORKER: C.NODE_LABEL_WORKER_VALUE}
    return {**worker, **device_plugin_selector(traits(release), worker)}


def job_dirs(storage: Sequence[SharedVolumePlan]) -> List[Dict[str, Any]]:
    """The job directories on the NFS export as the management nodes see them (under
    :data:`~resumable.constants.EXPORT_HOST_ROOT`), with the owner, group and mode the training's
    (squashed) root user needs to write there (storage.nfs; manifests.storage prepares the same
    directories from a Kubernetes Job)."""
    return [
        {
            "path": "%s/%s" % (C.EXPORT_HOST_ROOT, v.directory),
            "owner": v.owner,
            "group": v.group,
            "mode": v.mode,
            "volume": v.name,
            "namespace": v.namespaces[0],
        }
        for v in storage
        if v.directory
    ]


def build_nodes(profile: Profile, facts: List[JobFacts], storage: Sequence[SharedVolumePlan] = ()) -> NodePlan:
    cluster = profile.cluster
    labels = {
        C.NODE_LABEL_ROLE_WORKER: "worker",
        C.NODE_LABEL_WORKER: C.NODE_LABEL_WORKER_VALUE,
        C.NODE_LABEL_HOST_ARCH: C.HOST_ARCH_VALUES[cluster.arch],
        C.NODE_LABEL_ACCELERATOR: accelerator_label(cluster.chip),
        C.NODE_LABEL_ACCELERATOR_TYPE: cluster.accelerator_type,
        C.NODE_LABEL_NODED_ENABLE: "on",
    }
    mounts = []
    export_mount: Dict[str, Any] = {}
    if profile.storage.nfs is not None:
        export = "%s:%s" % (profile.storage.nfs.server, profile.storage.nfs.path.rstrip("/"))
        mounts.append(
            {
                "src": export,
                "path": C.RANKTABLE_HOST_ROOT,
                "subdir": "ranktable",
                "source": "%s/ranktable" % export,
                "fstype": "nfs",
                "opts": ",".join(C.NFS_MOUNT_OPTIONS),
                "where": "all",
                "reason": "the operator writes hccl.json under %s; training nodes read it" % C.RANKTABLE_HOST_ROOT,
            }
        )
        mounts[-1].update(RANKTABLE_ACCESS)
        if any(v.directory for v in storage):
            # not a shared mount the nodes need (resumable doctor --node does not ask for it): the
            # shared_storage role mounts it on management nodes to create the job directories
            export_mount = {
                "src": export,
                "path": C.EXPORT_HOST_ROOT,
                "subdir": "",
                "source": export,
                "fstype": "nfs",
                "opts": ",".join(C.NFS_MOUNT_OPTIONS),
                "where": "management",
                "reason": "the job directories (<namespace>/<job>/op-cache, checkpoints) are created there "
                "before a pod mounts them; the export's own owner and mode are left as the server has them",
            }
    ranktable_dirs = [
        "%s/%s.%s" % (C.RANKTABLE_HOST_ROOT, f.job.namespace, f.job.name) for f in facts if f.job.ranktable
    ]
    notes = [Note("HwHiAiUser must have uid/gid 1000 on every host and in every image", "FAQ 337")]
    if any(f.pod_level for f in facts):
        notes.append(Note("raise ulimit -n to %d for Pod-level rescheduling" % NOFILE_POD_LEVEL, "RT01"))
    if any(f.process_level or f.graceful for f in facts):
        notes.append(Note("keep master and worker clocks in sync", "RT07 Adaptation Example note"))
    return NodePlan(
        hdk=cluster.hdk,
        chip=cluster.chip,
        accelerator_type=cluster.accelerator_type,
        arch=cluster.arch,
        labels=labels,
        master_labels={C.NODE_LABEL_MASTER: C.NODE_LABEL_MASTER_VALUE},
        worker_selector={C.NODE_LABEL_WORKER: C.NODE_LABEL_WORKER_VALUE},
        npu_daemonset_selector=npu_daemonset_selector(cluster.mindcluster),
        users=_users(),
        log_dirs=_log_dirs(),
        reserved_ports=reserved_ports(profile, facts),
        shared_mounts=mounts,
        ranktable_dirs=ranktable_dirs,
        nofile_limit=NOFILE_POD_LEVEL if any(f.pod_level for f in facts) else None,
        notes=notes,
        container_runtime=cluster.container_runtime,
        docker_runtime={
            "version": cluster.mindcluster,
            "name": C.ASCEND_RUNTIME_NAME,
            "install_path": C.ASCEND_RUNTIME_INSTALL_ROOT,
            "binary": "%s/%s/%s" % (C.ASCEND_RUNTIME_INSTALL_ROOT, C.ASCEND_RUNTIME_DIR, C.ASCEND_RUNTIME_BINARY),
        },
        device_plugin={"namespace": C.NAMESPACE_DEVICE_PLUGIN, "selector": "name=%s" % C.DEVICE_PLUGIN_APP_LABEL},
        server_usage_labels={C.NODE_LABEL_SERVER_USAGE: C.SERVER_USAGE_INFER},
        inference_products=list(C.INFERENCE_PRODUCTS),
        host_files=[
            {
                "path": C.VNPU_CFG,
                "mode": "0600",
                "owner": "root",
                "where": "compute",
                "reason": "device plugin hostPath type File (MC:component/ascend-device-plugin/build/"
                "ascendplugin-volcano.yaml); created empty when missing, as the driver installer does",
            }
        ],
        ranktable_access=dict(RANKTABLE_ACCESS),
        job_dirs=job_dirs(storage),
        export_mount=export_mount,
        node_profile={"path": C.PROFILE_PATH, "env": C.ENV_RESUMABLE_PROFILE},
        npu_resource=npu_resource(cluster.chip),
        npus_per_node=node_npus(profile),
    )
