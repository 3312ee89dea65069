"""Ascend Operator: the AscendJob controller (``ascend-operator-v{ver}.yaml``; INST08).

Runs on the master as hwMindX (9000) and writes each job's RankTable (``hccl.json``) under
``/user/mindx-dl/ranktable``, which must be shared storage visible to the training nodes (INST08).
"""

from __future__ import annotations

from typing import List

from ..constants import LOG_ROOT, NAMESPACE_MINDX_DL, RANKTABLE_HOST_ROOT, UID_HWMINDX
from ..traits import Traits
from . import k8s
from .k8s import LogDir, Obj, Rule
from .settings import ASCEND_OPERATOR, Settings

NAME = "ascend-operator-manager"
APP = "controller-manager"
HEALTHZ_PORT = 11252
FLAGS = [
    ("--kubeApiQps", "800"),
    ("--kubeApiBurst", "800"),
    ("--enableGangScheduling", "true"),
    ("--logFile", f"{LOG_ROOT}/ascend-operator/ascend-operator.log"),
    ("--logLevel", "0"),
]


def rules(t: Traits) -> List[Rule]:
    pods = ["create", "list", "watch", "delete", "get"]
    if t.full_fault_paths:
        pods += ["collectionCreate", "update"]
    if t.operator_patches_pods:
        pods.append("patch")
    apps = ["deployments", "replicasets"] + (["statefulsets"] if t.full_fault_paths else [])
    crud = ["create", "list", "watch", "delete", "get"]
    return [
        ([""], ["events"], ["create", "patch", "list", "watch", "delete"]),
        ([""], ["pods"], pods),
        ([""], ["services"], crud),
        ([""], ["configmaps"], [*crud, "update"]),
        (["scheduling.volcano.sh"], ["podgroups"], [*crud, "update"]),
        (["scheduling.volcano.sh"], ["queues", "queue/status"], ["get", "list", "watch"]),
        (["scheduling.volcano.sh"], ["priorityclasses"], ["list", "watch"]),
        (["mindxdl.gitee.com"], ["ascendjobs"], [*crud, "patch", "update"]),
        (["mindxdl.gitee.com"], ["ascendjobs/finalizers"], ["update"]),
        (["mindxdl.gitee.com"], ["ascendjobs/status"], ["get", "patch", "update"]),
        (["batch.volcano.sh"], ["jobs"], ["get", "watch", "list"]),
        (["apps"], apps, ["get", "watch", "list"]),
    ]


def objects(s: Settings) -> List[Obj]:
    t = s.t
    image = s.image(ASCEND_OPERATOR)
    policy = s.pull_policy(ASCEND_OPERATOR)
    log = LogDir(t, "ascend-operator-log", "ascend-operator", f"{UID_HWMINDX}:{UID_HWMINDX}")
    flags = list(FLAGS)
    if t.healthz:
        flags += [("--enable-healthz", "true"), ("--healthz-address", str(HEALTHZ_PORT))]
    command, args = k8s.shell(k8s.flag_line("ascend-operator", flags))
    container: Obj = {
        "name": "manager",
        "image": image,
        "imagePullPolicy": policy,
        "command": command,
        "args": args,
        "resources": s.resources(ASCEND_OPERATOR),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsUser": UID_HWMINDX,
            "runAsGroup": UID_HWMINDX,
        },
        "volumeMounts": [
            log.mount(),
            k8s.mount("ranktable-dir", RANKTABLE_HOST_ROOT),
            k8s.mount("localtime", "/etc/localtime", read_only=True),
        ],
    }
    if t.healthz:
        container["livenessProbe"] = k8s.liveness(HEALTHZ_PORT, 10, 10, 3)
    pod: Obj = {
        "serviceAccountName": NAME,
        "nodeSelector": s.master_selector,
        "terminationGracePeriodSeconds": 10,
        "securityContext": dict(k8s.SECCOMP_RUNTIME_DEFAULT),
        **s.pod_extras(),
    }
    inits = log.init_containers(image, policy)
    if inits:
        pod["initContainers"] = inits
    pod["containers"] = [container]
    pod["volumes"] = [
        log.host_volume(),
        k8s.host_path("ranktable-dir", RANKTABLE_HOST_ROOT, "DirectoryOrCreate"),
        k8s.host_path("localtime", "/etc/localtime"),
    ]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": k8s.meta(NAME, NAMESPACE_MINDX_DL, {"app": APP}),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": APP}},
            "template": {"metadata": {"labels": {"app": APP}}, "spec": pod},
        },
    }
    return [*k8s.rbac(NAME, NAMESPACE_MINDX_DL, f"{NAME}-role", f"{NAME}-rolebinding", rules(t)), deployment]
