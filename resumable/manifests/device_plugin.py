"""Ascend Device Plugin for Volcano scheduling (``device-plugin-volcano-v{ver}.yaml``; INST04).

Up to 26.0 the file is the Ascend 910 variant (``-910`` names, ``accelerator: huawei-Ascend910``);
26.1 merged the chip variants into one DaemonSet on ``workerselector`` nodes. The resilience
arguments come from the plan (``-volcanoType``, ``-hotReset=2`` for process-level recovery,
``-listWatchPeriod``; INST04 step 4, RT07). Do not rename the DaemonSet: runtime auto-detection
relies on its name (INST04).
"""

from __future__ import annotations

from typing import List, Tuple

from .. import constants as C
from ..constants import DRIVER_PATH, LOG_ROOT, NAMESPACE_DEVICE_PLUGIN
from ..traits import Traits, device_plugin_selector
from . import k8s
from .k8s import LogDir, Obj, Rule
from .settings import DEVICE_PLUGIN, Settings

HEALTHZ_PORT = 11251
#: Node label value the <=26.0 Volcano device-plugin file selects (Atlas training servers).
APP_LABEL = C.DEVICE_PLUGIN_APP_LABEL
CHIP_TAINTS_261 = ("huawei.com/Ascend910", "huawei.com/Ascend310", "huawei.com/Ascend310P", "huawei.com/npu")
RESET_DIR = C.RESET_CONFIG_HOST_ROOT
DATATRACE_DIR = "/user/cluster-info/datatrace-config"


def names(t: Traits) -> List[str]:
    """ServiceAccount, ClusterRole, ClusterRoleBinding, DaemonSet."""
    suffix = "" if t.merged_device_plugin else "-910"
    return [
        f"ascend-device-plugin-sa{suffix}",
        f"pods-node-ascend-device-plugin-role{suffix}",
        f"pods-node-ascend-device-plugin-rolebinding{suffix}",
        f"ascend-device-plugin-daemonset{suffix}",
    ]


def rules(t: Traits) -> List[Rule]:
    out: List[Rule] = [
        ([""], ["pods"], ["get", "list", "update", "watch", "patch"]),
        ([""], ["nodes"], ["get", "patch"]),
    ]
    if t.full_fault_paths:
        out.append(([""], ["nodes/proxy"], ["get"]))
    out += [
        ([""], ["nodes/status"], ["get", "patch", "update"]),
        ([""], ["configmaps"], ["get", "create", "update", "list", "watch"]),
        ([""], ["events"], ["create"]),
    ]
    return out


def flags(s: Settings) -> List[Tuple[str, str]]:
    base = [] if s.t.merged_device_plugin else [("-useAscendDocker", "true")]
    base += [
        (C.FLAG_VOLCANO_TYPE, "true"),
        ("-presetVirtualDevice", "true"),
        ("-logFile", f"{LOG_ROOT}/devicePlugin/devicePlugin.log"),
        ("-logLevel", "0"),
    ]
    if s.t.healthz:
        base += [("--enable-healthz", "true"), ("--healthz-address", str(HEALTHZ_PORT))]
    if s.plan.hot_reset is not None:
        base.append((C.FLAG_HOT_RESET, str(s.plan.hot_reset)))
    base.append((C.FLAG_LIST_WATCH_PERIOD, str(s.plan.list_watch_period)))
    return base


def _runtime_mounts(s: Settings) -> List[Tuple[str, str]]:
    """26.0 mounts the container runtime's sockets (the file says to delete the docker ones on
    containerd); 26.1 leaves that to Ascend Docker Runtime (MOUNT_BY_RUNTIME_FOR_DP)."""
    if not s.t.device_plugin_runtime_mounts:
        return []
    out = []
    if s.plan.container_runtime == "docker":
        out += [("docker-sock", "/run/docker.sock"), ("docker-dir", "/run/docker")]
    out.append(("containerd", "/run/containerd"))
    return out


def objects(s: Settings) -> List[Obj]:
    t = s.t
    sa, role, binding, ds_name = names(t)
    image = s.image(DEVICE_PLUGIN)
    policy = s.pull_policy(DEVICE_PLUGIN)
    log = LogDir(t, "log-path", "devicePlugin", "root:root")
    command, args = k8s.shell(k8s.flag_line("device-plugin", flags(s)))
    mounts = [
        k8s.mount("device-plugin", "/var/lib/kubelet/device-plugins"),
        k8s.mount("vnpucfg", "/etc/vnpu.cfg"),
        k8s.mount("vnpu-cut", "/run/vnpu_cfg_lock"),
        k8s.mount("pod-resource", "/var/lib/kubelet/pod-resources"),
        k8s.mount("hiai-driver", DRIVER_PATH, read_only=True),
        log.mount(),
        k8s.mount("tmp", "/tmp"),
        k8s.mount("reset-config-dir", RESET_DIR),
        k8s.mount("lingqu-log", "/var/log/lingqu"),
    ]
    volumes = [
        k8s.host_path("device-plugin", "/var/lib/kubelet/device-plugins"),
        k8s.host_path("pod-resource", "/var/lib/kubelet/pod-resources"),
        k8s.host_path("hiai-driver", DRIVER_PATH),
        log.host_volume(),
        k8s.host_path("reset-config-dir", RESET_DIR, "DirectoryOrCreate"),
        k8s.host_path("vnpu-cut", "/run/vnpu_cfg_lock", "DirectoryOrCreate"),
        k8s.host_path("tmp", "/tmp"),
        k8s.host_path("vnpucfg", "/etc/vnpu.cfg", "File"),
        k8s.host_path("lingqu-log", "/var/log/lingqu", "DirectoryOrCreate"),
    ]
    if t.full_fault_paths:
        mounts.append(k8s.mount("data-trace-file-dir", DATATRACE_DIR))
        volumes.append(k8s.host_path("data-trace-file-dir", DATATRACE_DIR, "DirectoryOrCreate"))
    if t.device_plugin_runtime_mounts:
        mounts.append(k8s.mount("dpu-config", "/user/mindx-dl/dpu"))
        volumes.append(k8s.host_path("dpu-config", "/user/mindx-dl/dpu-config", "DirectoryOrCreate"))
    if t.full_fault_paths:
        mounts.append(k8s.mount("localtime", "/etc/localtime", read_only=True))
        volumes.append(k8s.host_path("localtime", "/etc/localtime"))
    for name, path in _runtime_mounts(s):
        mounts.append(k8s.mount(name, path, read_only=True))
        volumes.append(k8s.host_path(name, path))
    env = []
    if t.merged_device_plugin:
        env.append({"name": "MOUNT_BY_RUNTIME_FOR_DP", "value": "true"})
    env.append(k8s.field_env("NODE_NAME", "spec.nodeName"))
    if t.full_fault_paths:
        env.append(k8s.field_env("HOST_IP", "status.hostIP"))
    container: Obj = {
        "name": "device-plugin-01",
        "image": image,
        "imagePullPolicy": policy,
        "command": command,
        "args": args,
        "resources": s.resources(DEVICE_PLUGIN),
        "env": env,
        "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
        "volumeMounts": mounts,
    }
    if t.healthz:
        container["livenessProbe"] = k8s.liveness(HEALTHZ_PORT, 30, 15, 5)
    tolerations: List[Obj] = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    taints = CHIP_TAINTS_261 if t.merged_device_plugin else CHIP_TAINTS_261[:1]
    tolerations += [{"key": k, "operator": "Exists", "effect": "NoSchedule"} for k in taints]
    tolerations.append({"key": "device-plugin", "operator": "Equal", "value": "v2", "effect": "NoSchedule"})
    pod: Obj = {
        "serviceAccountName": sa,
        "priorityClassName": "system-node-critical",
        "tolerations": tolerations,
        "securityContext": dict(k8s.SECCOMP_RUNTIME_DEFAULT),
        **s.pod_extras(),
    }
    pod["nodeSelector"] = device_plugin_selector(t, s.worker_selector)
    if t.merged_device_plugin:
        pod["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "servertype", "operator": "NotIn", "values": ["soc"]}]}
                    ]
                }
            }
        }
        pod["hostPID"] = True
    k8s.fill_pod(pod, log.init_containers(image, policy), container, volumes)
    daemonset = k8s.daemonset(
        ds_name,
        NAMESPACE_DEVICE_PLUGIN,
        {"name": APP_LABEL},
        pod,
        template_annotations={"scheduler.alpha.kubernetes.io/critical-pod": ""},
        update_strategy="RollingUpdate",
    )
    return [*k8s.rbac(sa, NAMESPACE_DEVICE_PLUGIN, role, binding, rules(t)), daemonset]
