"""ClusterD: cluster-wide fault collection and the gRPC service TaskD, MindIO and the Elastic Agent
talk to (``clusterd-v{ver}.yaml``; INST06). One replica on the master, running as hwMindX."""

from __future__ import annotations

from typing import List

import yaml

from ..constants import (
    CLUSTERD_GRPC_PORT,
    CLUSTERD_SERVICE,
    LOG_ROOT,
    NAMESPACE_CLUSTER_SYSTEM,
    NAMESPACE_MINDX_DL,
    UID_HWMINDX,
)
from ..traits import Traits
from . import k8s
from .k8s import LogDir, Obj, Rule
from .settings import CLUSTERD, Settings

NAME = "clusterd"
HEALTHZ_PORT = 11253
CONFIG_CM = "clusterd-config-cm"
#: Manual separation policy ClusterD reads from 26.0 (INST06 step 4): a node faulting
#: ``fault_threshold`` times within ``fault_window_hours`` is separated until fault-free for
#: ``fault_free_hours``.
MANUAL_SEPARATE_POLICY = {
    "enabled": True,
    "separate": {"fault_window_hours": 24, "fault_threshold": 3},
    "release": {"fault_free_hours": 48},
}
#: 6.0.0 elected a leader through this Lease.
LEASE = "cluster-info-collector"


def rules(t: Traits) -> List[Rule]:
    out: List[Rule] = [
        ([""], ["pods"], ["get", "list", "update", "watch", "patch"]),
        ([""], ["services"], ["get"]),
        (
            [""],
            ["configmaps"],
            ["get", "create", "update", "list", "watch", "delete"] + (["patch"] if t.full_fault_paths else []),
        ),
        (
            [""],
            ["nodes"],
            ["get", "list", "patch", "watch"] if t.full_fault_paths else ["get", "list", "watch"],
        ),
        ([""], ["nodes/status"], ["get", "patch"]),
    ]
    if not t.full_fault_paths:
        out.append((["coordination.k8s.io"], ["leases"], ["get", "list", "watch", "delete", "create", "update"]))
    out += [
        (["batch.volcano.sh"], ["jobs"], ["get", "list", "watch", "update", "delete"]),
        (
            ["scheduling.incubator.k8s.io", "scheduling.volcano.sh"],
            ["podgroups"],
            ["list", "watch", "update", "get", "patch"],
        ),
        (["batch"], ["jobs"], ["get"]),
    ]
    if t.full_fault_paths:
        out.append((["mindxdl.gitee.com"], ["ascendjobs"], ["list", "watch", "get", "update"]))
        out.append(([""], ["events"], ["list"]))
    return out


def objects(s: Settings) -> List[Obj]:
    t = s.t
    image = s.image(CLUSTERD)
    policy = s.pull_policy(CLUSTERD)
    log = LogDir(t, "log-clusterd", "clusterd", f"{UID_HWMINDX}:{UID_HWMINDX}")
    flags = [("-logFile", f"{LOG_ROOT}/clusterd/clusterd.log"), ("-logLevel", "0")]
    if t.healthz:
        flags += [("--enable-healthz", "true"), ("--healthz-address", str(HEALTHZ_PORT))]
    command, args = k8s.shell(k8s.flag_line("/usr/local/bin/clusterd", flags))
    mounts = [log.mount()]
    volumes = [log.host_volume()]
    if t.full_fault_paths:
        mounts.append(k8s.mount("config-clusterd", "/user1/mindx-dl/clusterd"))
        volumes.append(k8s.host_path("config-clusterd", "/user1/mindx-dl/clusterd", "DirectoryOrCreate"))
    mounts.append(k8s.mount("localtime", "/etc/localtime", read_only=True))
    volumes.append(k8s.host_path("localtime", "/etc/localtime"))
    if t.full_fault_paths:
        mounts.append(k8s.mount("slownode", "/user/slownode-cluster"))
        volumes.append(k8s.host_path("slownode", "/user/slownode-cluster", "DirectoryOrCreate"))
    container: Obj = {
        "name": NAME,
        "image": image,
        "imagePullPolicy": policy,
        "command": command,
        "args": args,
        "resources": s.resources(CLUSTERD),
        "env": [k8s.field_env("NODE_NAME", "spec.nodeName"), k8s.field_env("POD_IP", "status.podIP")],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": mounts,
    }
    if t.healthz:
        container["livenessProbe"] = k8s.liveness(HEALTHZ_PORT, 10, 10, 3)
    pod: Obj = {
        "serviceAccountName": NAME,
        "nodeSelector": s.master_selector,
        "securityContext": dict(k8s.SECCOMP_RUNTIME_DEFAULT),
        **s.pod_extras(),
    }
    k8s.fill_pod(pod, log.init_containers(image, policy), container, volumes)
    out: List[Obj] = []
    if t.clusterd_config_cm:
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": k8s.meta(CONFIG_CM, NAMESPACE_CLUSTER_SYSTEM),
                "data": {"manually_separate_policy.conf": yaml.safe_dump(MANUAL_SEPARATE_POLICY, sort_keys=False)},
            }
        )
    out += k8s.rbac(NAME, NAMESPACE_MINDX_DL, "pods-clusterd-role", "pods-clusterd-rolebinding", rules(t))
    if not t.full_fault_paths:
        out.append(
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": k8s.meta(LEASE, NAMESPACE_MINDX_DL),
            }
        )
    out.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": k8s.meta(NAME, NAMESPACE_MINDX_DL),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": NAME}},
                "template": {"metadata": {"labels": {"app": NAME}}, "spec": pod},
            },
        }
    )
    out.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": k8s.meta(CLUSTERD_SERVICE, NAMESPACE_MINDX_DL),
            "spec": {
                "selector": {"app": NAME},
                "ports": [{"protocol": "TCP", "port": CLUSTERD_GRPC_PORT, "targetPort": CLUSTERD_GRPC_PORT}],
            },
        }
    )
    return out
