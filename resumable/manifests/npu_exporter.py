"""NPU Exporter: Prometheus metrics of the NPUs on every worker (``npu-exporter-v{ver}.yaml``).

No ServiceAccount token, a NetworkPolicy that only lets pods labelled ``app: prometheus`` in and
out. Only the container-runtime sockets of the plan's runtime are mounted (the manifest lists
docker, cri-dockerd, containerd and iSula sockets and says to delete the unused ones).
"""

from __future__ import annotations

from typing import List, Tuple

from ..constants import DRIVER_PATH, LOG_ROOT, NAMESPACE_NPU_EXPORTER
from . import k8s
from .k8s import LogDir, Obj
from .settings import NPU_EXPORTER, Settings

NAME = "npu-exporter"
METRICS_PORT = 8082
HEALTHZ_PORT = 11256
NETWORK_POLICY = "exporter-network-policy"
RUNTIME_SOCKETS = {
    "docker": [
        ("docker-shim", "/var/run/dockershim.sock"),
        ("docker", "/var/run/docker"),
        ("cri-dockerd", "/var/run/cri-dockerd.sock"),
        ("containerd", "/run/containerd"),
    ],
    "containerd": [("containerd", "/run/containerd")],
}


def flags(s: Settings) -> List[Tuple[str, str]]:
    out = [("-port", str(METRICS_PORT)), ("-ip", "0.0.0.0")]
    if not s.t.exporter_no_update_time:
        out.append(("-updateTime", "5"))
    out += [
        ("-logFile", f"{LOG_ROOT}/npu-exporter/npu-exporter.log"),
        ("-logLevel", "0"),
        ("-containerMode", s.plan.container_runtime),
    ]
    if s.t.healthz:
        out += [("--enable-healthz", "true"), ("--healthz-address", str(HEALTHZ_PORT))]
    return out


def network_policy() -> Obj:
    prometheus = [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "prometheus"}}}]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": k8s.meta(NETWORK_POLICY, NAMESPACE_NPU_EXPORTER),
        "spec": {
            "podSelector": {"matchLabels": {"app": NAME}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": prometheus}],
            "egress": [{"to": prometheus}],
        },
    }


def objects(s: Settings) -> List[Obj]:
    t = s.t
    image = s.image(NPU_EXPORTER)
    policy = s.pull_policy(NPU_EXPORTER)
    log = LogDir(t, "log-npu-exporter", "npu-exporter", "root:root")
    command, args = k8s.shell("umask 027;" + k8s.flag_line("npu-exporter", flags(s)))
    mounts = [
        log.mount(),
        k8s.mount("localtime", "/etc/localtime", read_only=True),
        k8s.mount("ascend-driver", DRIVER_PATH, read_only=True),
        k8s.mount("ascend-dcmi", "/usr/local/dcmi", read_only=True),
    ]
    volumes = [
        log.host_volume(),
        k8s.host_path("localtime", "/etc/localtime"),
        k8s.host_path("ascend-driver", DRIVER_PATH),
        k8s.host_path("ascend-dcmi", "/usr/local/dcmi"),
    ]
    for name, path in RUNTIME_SOCKETS[s.plan.container_runtime]:
        mounts.append(k8s.mount(name, path, read_only=True))
        volumes.append(k8s.host_path(name, path))
    if not t.full_fault_paths:
        mounts.append(k8s.mount("sys", "/sys", read_only=True))
        volumes.append(k8s.host_path("sys", "/sys"))
    mounts.append(k8s.mount("tmp", "/tmp"))
    volumes.append(k8s.host_path("tmp", "/tmp"))
    container: Obj = {
        "name": NAME,
        "image": image,
        "imagePullPolicy": policy,
        "command": command,
        "args": args,
        "resources": s.resources(NPU_EXPORTER),
        "securityContext": {
            "privileged": True,
            "readOnlyRootFilesystem": True,
            "runAsUser": 0,
            "runAsGroup": 0,
        },
        "ports": [{"name": "http", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "volumeMounts": mounts,
    }
    if t.healthz:
        container["livenessProbe"] = k8s.liveness(HEALTHZ_PORT, 20, 15, 5)
    pod: Obj = {
        "automountServiceAccountToken": False,
        "nodeSelector": s.worker_selector,
        "securityContext": dict(k8s.SECCOMP_RUNTIME_DEFAULT),
        **s.pod_extras(),
    }
    k8s.fill_pod(pod, log.init_containers(image, policy), container, volumes)
    daemonset = k8s.daemonset(NAME, NAMESPACE_NPU_EXPORTER, {"app": NAME}, pod)
    return [network_policy(), daemonset]
