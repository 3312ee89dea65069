"""NodeD: per-node fault and health reporting (``noded-v{ver}.yaml``; INST09).

``-reportInterval`` comes from the plan (resumable training: 5 s; range 1-300 s; RT07).
"""

from __future__ import annotations

from typing import List, Tuple

from .. import constants as C
from ..constants import DRIVER_PATH, ENV_XDL_IP, LOG_ROOT, NAMESPACE_MINDX_DL
from ..traits import Traits
from . import k8s
from .k8s import LogDir, Obj, Rule
from .settings import NODED, Settings

NAME = "noded"
HEALTHZ_PORT = 11255
PINGMESH_DIR = "/user/mind-cluster/pingmesh"
PROFILING_DIR = "/user/cluster-info/profiling"


def rules(t: Traits) -> List[Rule]:
    cm = ["get", "create", "update", "list", "watch"] + (["delete"] if t.full_fault_paths else [])
    out: List[Rule] = [([""], ["configmaps"], cm)]
    if t.noded_host_network:
        out.append(([""], ["nodes"], ["get", "list", "patch"]))
    elif t.full_fault_paths:
        out.append(([""], ["nodes"], ["patch"]))
    if t.noded_watches_pods:
        out.append(([""], ["pods"], ["get", "list", "watch", "patch"]))
        out.append((["apps"], ["daemonsets"], ["get"]))
    return out


def flags(s: Settings) -> List[Tuple[str, str]]:
    base = [("-logFile", f"{LOG_ROOT}/noded/noded.log"), ("-logLevel", "0")]
    if s.t.healthz:
        base += [("--enable-healthz", "true"), ("--healthz-address", str(HEALTHZ_PORT))]
    base.append((C.FLAG_REPORT_INTERVAL, str(s.plan.report_interval)))
    return base


def objects(s: Settings) -> List[Obj]:
    t = s.t
    image = s.image(NODED)
    policy = s.pull_policy(NODED)
    log = LogDir(t, "log-noded", "noded", "root:root")
    command, args = k8s.shell(k8s.flag_line("/usr/local/bin/noded", flags(s)))
    mounts = [log.mount()]
    volumes = [log.host_volume()]
    if t.full_fault_paths:
        mounts += [
            k8s.mount("hiai-driver", DRIVER_PATH, read_only=True),
            k8s.mount("pingmesh-result", PINGMESH_DIR),
        ]
        volumes += [
            k8s.host_path("hiai-driver", DRIVER_PATH),
            k8s.host_path("pingmesh-result", PINGMESH_DIR, "DirectoryOrCreate"),
        ]
    mounts.append(k8s.mount("localtime", "/etc/localtime", read_only=True))
    volumes.append(k8s.host_path("localtime", "/etc/localtime"))
    if t.full_fault_paths:
        mounts += [k8s.mount("dev-dir", "/dev"), k8s.mount("slownode", PROFILING_DIR)]
        volumes += [
            k8s.host_path("dev-dir", "/dev", "Directory"),
            k8s.host_path("slownode", PROFILING_DIR, "DirectoryOrCreate"),
        ]
    env = [k8s.field_env("NODE_NAME", "spec.nodeName")]
    if t.full_fault_paths:
        env.append(k8s.field_env(ENV_XDL_IP, "status.hostIP"))
    security: Obj = {"privileged": True}
    if not t.noded_watches_pods:
        security = {"readOnlyRootFilesystem": True, "privileged": True}
    container: Obj = {
        "name": NAME,
        "image": image,
        "imagePullPolicy": policy,
        "command": command,
        "args": args,
        "resources": s.resources(NODED),
        "env": env,
        "securityContext": security,
        "volumeMounts": mounts,
    }
    if t.healthz:
        container["livenessProbe"] = k8s.liveness(HEALTHZ_PORT, 20, 15, 5)
    pod: Obj = {
        "serviceAccountName": NAME,
        "nodeSelector": s.worker_selector,
        "securityContext": dict(k8s.SECCOMP_RUNTIME_DEFAULT),
        **s.pod_extras(),
    }
    if t.noded_host_network:
        pod["hostNetwork"] = True
    k8s.fill_pod(pod, log.init_containers(image, policy), container, volumes)
    daemonset = k8s.daemonset(NAME, NAMESPACE_MINDX_DL, {"app": NAME}, pod)
    return [*k8s.rbac(NAME, NAMESPACE_MINDX_DL, "pods-noded-role", "pods-noded-rolebinding", rules(t)), daemonset]
