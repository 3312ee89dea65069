"""Volcano as MindCluster ships it: vc-scheduler with the Ascend plugin, vc-controller-manager.

Facts from ``MC:@<tag> component/ascend-for-volcano/build/volcano-v{1.7.0,1.9.0,1.12.0}.yaml`` and
INST05 (docs/sources.md). No admission webhook is deployed,
as in the release manifests.
"""

from __future__ import annotations

from typing import Dict, List

import yaml

from .. import constants as C
from .. import releases as R
from ..constants import LOG_ROOT, NAMESPACE_VOLCANO, UID_HWMINDX
from ..traits import traits
from ..versions import Version
from . import k8s
from .k8s import LogDir, Obj, Rule
from .settings import VOLCANO_CONTROLLERS, VOLCANO_SCHEDULER, Settings

MONITORING_NAMESPACE = "volcano-monitoring"
SCHEDULER_CONFIGMAP = "volcano-scheduler-configmap"
SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
CONTROLLER_CONFIGMAP = "volcano-controller-configmap"
SCHEDULER_METRICS_PORT = 8080
CONTROLLER_METRICS_PORT = 8081
KLOG_SOCKS = "/tmp/klog-socks"
_V_INCUBATOR = ("scheduling.incubator.k8s.io", "scheduling.volcano.sh")
_OWNER = f"{UID_HWMINDX}:{UID_HWMINDX}"


def is_112(volcano: str) -> bool:
    return R.at_least(Version(volcano), R.VOLCANO_112)


def is_19(volcano: str) -> bool:
    return R.at_least(Version(volcano), R.VOLCANO_19)


# --- init-params (INST05 Table 3) ------------------------------------------------------------------


def default_init_params(release: str) -> Dict[str, str]:
    """The release's ``init-params``; 7.3.0 added self-maintain-available-card and forceEnqueue,
    26.1.0 prefer-previous-node (``volcano-v1.x.0.yaml`` at each tag; INST05)."""
    params = {
        C.INIT_PARAM_GRACE_OVER_TIME: "900",
        "presetVirtualDevice": "true",
        "nslb-version": "1.0",
        "shared-tor-num": "2",
        "useClusterInfoManager": "true",
    }
    t = traits(release)
    if t.volcano_self_maintained_cards:
        params["self-maintain-available-card"] = "true"
    params["super-pod-size"] = "48"
    params["reserve-nodes"] = "2"
    if t.volcano_self_maintained_cards:
        params["forceEnqueue"] = "true"
    if R.at_least(Version(release), R.PREFER_PREVIOUS_NODE):
        params["prefer-previous-node"] = "true"
    return params


def init_params(s: Settings) -> Dict[str, str]:
    """Release defaults with the plan's ``grace-over-time``, so the window Volcano waits before
    force-deleting a pod matches the jobs' grace periods (INST05)."""
    params = default_init_params(s.release)
    params[C.INIT_PARAM_GRACE_OVER_TIME] = str(s.plan.grace_over_time)
    return params


def scheduler_conf(s: Settings) -> str:
    """``volcano-scheduler.conf``. Volcano 1.12 puts gang first and lets the NPU plugin preempt and
    reclaim (``volcano-v1.12.0.yaml``); earlier builds keep priority, gang, conformance, NPU."""
    plugin = s.plan.volcano_plugin_name
    off = {"enableNodeOrder": False}
    if is_112(s.plan.volcano_version):
        first_tier = [
            {"name": "gang", **off},
            {"name": plugin, "enablePreemptable": True, "enableReclaimable": True},
            {"name": "priority", **off},
            {"name": "conformance", **off},
        ]
    else:
        first_tier = [
            {"name": "priority", **off},
            {"name": "gang", **off},
            {"name": "conformance", **off},
            {"name": plugin},
        ]
    conf = {
        "actions": "enqueue, allocate, backfill",
        "tiers": [
            {"plugins": first_tier},
            {
                "plugins": [
                    {"name": "drf", **off},
                    {
                        "name": "predicates",
                        **off,
                        "arguments": {
                            "predicate.GPUSharingEnable": False,
                            "predicate.GPUNumberEnable": False,
                        },
                    },
                    {"name": "proportion", **off},
                    {"name": "nodeorder"},
                    {"name": "binpack", **off},
                ]
            },
        ],
        "configurations": [{"name": "init-params", "arguments": init_params(s)}],
    }
    text: str = yaml.safe_dump(conf, sort_keys=False, default_flow_style=False)
    return text


# --- RBAC ------------------------------------------------------------------------------------------


def scheduler_rules(volcano: str, release: str) -> List[Rule]:
    v19, v112 = is_19(volcano), is_112(volcano)
    pod_verbs = ["create", "get", "list", "watch", "update", "patch", "bind", "updateStatus", "delete"]
    rules: List[Rule] = [
        (
            ["apiextensions.k8s.io"],
            ["customresourcedefinitions"],
            ["create", "get", "list", "watch", "delete"],
        ),
        (["batch.volcano.sh"], ["jobs"], ["get", "list", "watch", "update", "delete"]),
        (["batch.volcano.sh"], ["jobs/status"], ["update", "patch"]),
        ([""], ["events"], ["create", "list", "watch", "update", "patch"]),
    ]
    if not v19:
        rules.append(([""], ["services"], ["get"]))
    if v112:
        rules.append(([""], ["pods"], [v for v in pod_verbs if v != "updateStatus"]))
        rules.append(([""], ["pods/status"], ["update"]))
    else:
        rules.append(([""], ["pods", "pods/status"], pod_verbs))
    rules.append(([""], ["pods/binding"], ["create"]))
    # 6.0.0's Volcano 1.9.0 manifest lacks the bindings rule its later builds carry.
    if v19 and traits(release).volcano_self_maintained_cards:
        rules.append(([""], ["bindings"], ["create"]))
    storage = ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities"]
    if v112:
        storage.append("volumeattachments")
    rules += [
        ([""], ["persistentvolumeclaims"], ["list", "watch", "update"]),
        ([""], ["persistentvolumes"], ["list", "watch", "update"]),
        ([""], ["namespaces", "services", "replicationcontrollers"], ["list", "watch", "get"]),
        ([""], ["resourcequotas"], ["list", "watch"]),
        ([""], ["nodes"], ["get", "list", "watch", "update", "patch"] if v19 else ["list", "watch"]),
        (["storage.k8s.io"], storage, ["list", "watch"]),
        (["policy"], ["poddisruptionbudgets"], ["list", "watch"]),
        (["scheduling.k8s.io"], ["priorityclasses"], ["get", "list", "watch"]),
        (
            _V_INCUBATOR,
            ["queues"],
            ["get", "list", "watch", "create", "delete"] + (["update"] if v112 else []),
        ),
        (_V_INCUBATOR, ["queues/status"], ["update", "patch"] if v112 else ["update"]),
    ]
    if v112:
        rules.append((_V_INCUBATOR, ["podgroups", "podgroups/status"], ["list", "watch", "update", "patch"]))
    else:
        rules.append((_V_INCUBATOR, ["podgroups"], ["list", "watch", "update"]))
    rules.append((["nodeinfo.volcano.sh"], ["numatopologies"], ["get", "list", "watch", "delete"]))
    if v112:
        rules.append((["topology.volcano.sh"], ["hypernodes", "hypernodes/status"], ["get", "list", "watch"]))
    rules.append(([""], ["configmaps"], ["get", "create", "delete", "update", "list", "watch"]))
    if v19:
        rules.append((["apps"], ["daemonsets", "replicasets", "statefulsets"], ["list", "watch", "get"]))
        rules.append((["apps"], ["deployments"], ["get"]))
        rules.append((["coordination.k8s.io"], ["leases"], ["get", "create", "update", "watch"]))
    else:
        rules.append((["apps"], ["daemonsets", "replicasets", "statefulsets", "deployments"], ["list", "watch", "get"]))
    if v112:
        rules += [
            (["resource.k8s.io"], ["resourceclaims"], ["get", "list", "watch", "create", "update", "patch"]),
            (["resource.k8s.io"], ["resourceclaims/status"], ["update"]),
            (["resource.k8s.io"], ["deviceclasses", "resourceslices"], ["get", "list", "watch", "create"]),
        ]
    return rules


def controller_rules(volcano: str) -> List[Rule]:
    v19, v112 = is_19(volcano), is_112(volcano)
    crud = ["get", "list", "watch", "create", "delete", "update"]
    rules: List[Rule] = [
        (
            ["apiextensions.k8s.io"],
            ["customresourcedefinitions"],
            ["create", "get", "list", "watch", "delete"],
        ),
        (
            ["batch.volcano.sh"],
            ["jobs"],
            (["create"] if v19 else []) + ["get", "list", "watch", "update", "delete"],
        ),
        (["batch.volcano.sh"], ["jobs/status", "jobs/finalizers"], ["update", "patch"]),
        (["bus.volcano.sh"], ["commands"], ["get", "list", "watch", "delete"]),
        ([""], ["events"], ["create", "list", "watch", "update", "patch"]),
        (
            [""],
            ["pods"],
            ["create", "get", "list", "watch", "delete", "patch"]
            if v112
            else ["create", "get", "list", "watch", "update", "bind", "delete", "patch"],
        ),
        ([""], ["pods/finalizers"], ["update", "patch"]),
        ([""], ["persistentvolumeclaims"], ["get", "list", "watch", "create"]),
        ([""], ["services"], ["get", "list", "watch", "create", "delete"]),
        ([""], ["configmaps"], ["get", "list", "watch", "create", "delete", "update"]),
        ([""], ["secrets"], ["get", "create", "delete", "update"] if v19 else crud),
        (_V_INCUBATOR, ["podgroups", "queues", "queues/status"], crud + (["patch"] if v112 else [])),
    ]
    if v19:
        rules += [
            (["flow.volcano.sh"], ["jobflows", "jobtemplates"], crud),
            (
                ["flow.volcano.sh"],
                ["jobflows/status", "jobs/finalizers", "jobtemplates/status", "jobtemplates/finalizers"],
                ["update", "patch"],
            ),
        ]
    rules += [
        (["scheduling.k8s.io"], ["priorityclasses"], ["get", "list", "watch", "create", "delete"]),
        (["networking.k8s.io"], ["networkpolicies"], ["get", "create", "delete"]),
    ]
    if v112:
        rules.append((["apps"], ["daemonsets"], ["get"]))
        rules.append((["apps"], ["replicasets", "statefulsets"], ["get", "list", "watch"]))
    elif v19:
        rules.append((["apps"], ["daemonsets", "statefulsets"], ["get"]))
        rules.append((["apps"], ["replicasets"], ["get", "list", "watch"]))
    else:
        rules.append((["apps"], ["daemonsets", "replicasets", "statefulsets"], ["get"]))
    rules.append((["batch"], ["jobs"], ["get"]))
    if v19:
        rules.append((["coordination.k8s.io"], ["leases"], ["get", "create", "update", "watch"]))
    if v112:
        rules.append((["topology.volcano.sh"], ["hypernodes", "hypernodes/status"], crud[:3] + crud[3:] + ["patch"]))
        rules.append(([""], ["nodes"], ["list", "watch"]))
    return rules


# --- workloads -------------------------------------------------------------------------------------


def _ash(line: str) -> Obj:
    """Volcano images are alpine: ``/bin/ash -c 'umask 027; <binary> ... 2>&1'``."""
    return {"command": ["/bin/ash"], "args": ["-c", f"umask 027; {line} 2>&1"]}


def _security(v112: bool) -> Obj:
    sc: Obj = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsUser": UID_HWMINDX,
        "runAsGroup": UID_HWMINDX,
        "capabilities": {"drop": ["ALL"]},
    }
    if v112:
        sc["capabilities"] = {"add": ["DAC_OVERRIDE"], "drop": ["ALL"]}
        sc["runAsNonRoot"] = True
    return sc


def _deployment(s: Settings, name: str, app: str, sa: str, container: Obj, volumes: List[Obj], log: LogDir) -> Obj:
    component = VOLCANO_SCHEDULER if name == "volcano-scheduler" else VOLCANO_CONTROLLERS
    image = s.image(component)
    pod: Obj = {
        "serviceAccountName": sa,
        "nodeSelector": s.master_selector,
        "securityContext": {"fsGroup": UID_HWMINDX, **k8s.SECCOMP_RUNTIME_DEFAULT},
        **s.pod_extras(),
    }
    if is_112(s.plan.volcano_version):
        pod["priorityClassName"] = "system-cluster-critical"
    inits = log.init_containers(image, s.pull_policy(component))
    if inits:
        pod["initContainers"] = inits
    pod["containers"] = [{"name": name, "image": image, "imagePullPolicy": s.pull_policy(component), **container}]
    pod["volumes"] = volumes
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": k8s.meta(name, NAMESPACE_VOLCANO, {"app": app}),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app}}, "spec": pod},
        },
    }


def scheduler_flags(s: Settings) -> List[str]:
    vv = s.plan.volcano_version
    log_dir = f"{LOG_ROOT}/volcano-scheduler"
    flags = [
        "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf",
        "--plugins-dir=plugins",
        "--logtostderr=false",
    ]
    if is_19(vv):
        flags.append("--leader-elect=false")
    if is_112(vv):
        flags += [
            "--enable-healthz=true",
            "--enable-metrics=true",
            "--kube-api-qps=2000",
            "--kube-api-burst=2000",
            "--schedule-period=1s",
        ]
    # --percentage-nodes-to-find=100 (score every node) is in the 1.9/1.12 manifests from 7.3.0.
    if is_112(vv) or (is_19(vv) and s.t.volcano_self_maintained_cards):
        flags.append("--percentage-nodes-to-find=100")
    if is_112(vv):
        flags.append("--node-worker-threads=20")
    flags += [
        f"--log_dir={log_dir}",
        f"--log_file={log_dir}/volcano-scheduler.log",
        "-v=3" if s.t.volcano_verbose_log else "-v=2",
    ]
    return flags


def controller_flags(s: Settings) -> List[str]:
    v112 = is_112(s.plan.volcano_version)
    log_dir = f"{LOG_ROOT}/volcano-controller"
    flags = ["--kube-api-qps=800", "--kube-api-burst=800"]
    if v112:
        # The 1.12 manifest passes --worker-threads=6 then =3; the last one wins, so only 3 is kept.
        flags += [
            "--enable-healthz=true",
            "--enable-metrics=true",
            "--worker-threads=3",
            "--logtostderr=false",
        ]
        flags += ["--worker-threads-for-gc=5", "--worker-threads-for-podgroup=5"]
    else:
        flags += ["--worker-threads=6", "--logtostderr=false"]
    flags += [f"--log_dir={log_dir}", f"--log_file={log_dir}/volcano-controller.log", "-v=4"]
    return flags


def scheduler_objects(s: Settings) -> List[Obj]:
    vv = s.plan.volcano_version
    v112 = is_112(vv)
    log = LogDir(s.t, "scheduler-config-log", "volcano-scheduler", _OWNER)
    mounts = [k8s.mount("scheduler-config", "/volcano.scheduler", read_only=True), log.mount()]
    volumes: List[Obj] = [
        {"name": "scheduler-config", "configMap": {"name": SCHEDULER_CONFIGMAP, "defaultMode": 4}},
        log.host_volume(),
    ]
    if is_19(vv):
        mounts.append(k8s.mount("klog-sock", KLOG_SOCKS))
        volumes.append(k8s.host_path("klog-sock", KLOG_SOCKS))
    mounts.append(k8s.mount("localtime", "/etc/localtime", read_only=True))
    volumes.append(k8s.host_path("localtime", "/etc/localtime"))
    container: Obj = _ash(" ".join(["/vc-scheduler", *scheduler_flags(s)]))
    if v112:
        container["env"] = [{"name": "DEBUG_SOCKET_DIR", "value": KLOG_SOCKS}]
    container.update(resources=s.resources(VOLCANO_SCHEDULER), securityContext=_security(v112), volumeMounts=mounts)
    name = "volcano-scheduler"
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": k8s.meta(SCHEDULER_CONFIGMAP, NAMESPACE_VOLCANO),
            "data": {SCHEDULER_CONF_KEY: scheduler_conf(s)},
        },
        *k8s.rbac(name, NAMESPACE_VOLCANO, name, "volcano-scheduler-role", scheduler_rules(vv, s.release)),
        _metrics_service("volcano-scheduler-service", "volcano-scheduler", SCHEDULER_METRICS_PORT),
        _deployment(s, name, "volcano-scheduler", name, container, volumes, log),
    ]


def controller_objects(s: Settings) -> List[Obj]:
    vv = s.plan.volcano_version
    v112 = is_112(vv)
    log = LogDir(s.t, "device-volcanocontroller", "volcano-controller", _OWNER)
    container: Obj = _ash(" ".join(["/vc-controller-manager", *controller_flags(s)]))
    if v112:
        container["env"] = [
            {"name": "KUBE_POD_NAMESPACE", "value": NAMESPACE_VOLCANO},
            {"name": "HELM_RELEASE_NAME", "value": "volcano"},
        ]
    container.update(
        resources=s.resources(VOLCANO_CONTROLLERS),
        securityContext=_security(v112),
        volumeMounts=[log.mount(), k8s.mount("localtime", "/etc/localtime", read_only=True)],
    )
    volumes = [log.host_volume(), k8s.host_path("localtime", "/etc/localtime")]
    name = "volcano-controllers"
    objects: List[Obj] = []
    if v112:
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": k8s.meta(CONTROLLER_CONFIGMAP, NAMESPACE_VOLCANO),
                "data": {"volcano-controller.conf": ""},
            }
        )
    objects += k8s.rbac(name, NAMESPACE_VOLCANO, name, "volcano-controllers-role", controller_rules(vv))
    if v112:
        objects.append(_metrics_service("volcano-controllers-service", "volcano-controller", CONTROLLER_METRICS_PORT))
    objects.append(_deployment(s, name, "volcano-controller", name, container, volumes, log))
    return objects


def _metrics_service(name: str, app: str, port: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            **k8s.meta(name, NAMESPACE_VOLCANO, {"app": app}),
            "annotations": {
                "prometheus.io/path": "/metrics",
                "prometheus.io/port": str(port),
                "prometheus.io/scrape": "true",
            },
        },
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": app},
            "ports": [{"name": "metrics", "port": port, "protocol": "TCP", "targetPort": port}],
        },
    }


def namespaces(s: Settings) -> List[Obj]:
    """volcano-system, plus the (unused by this stack) volcano-monitoring the 1.7/1.12 files create."""
    out = [k8s.namespace(NAMESPACE_VOLCANO)]
    if not is_19(s.plan.volcano_version) or is_112(s.plan.volcano_version):
        out.append(k8s.namespace(MONITORING_NAMESPACE))
    return out


def queue_objects(s: Settings) -> List[Obj]:
    """The queues the profile's jobs name (SchedulerPlan.queues), created with the scheduling stack.

    The Ascend Operator with gang scheduling gets a job's queue when it first reconciles the job and,
    when there is none, marks the job failed validation and returns no error, so nothing retries it
    until the job is edited (MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/ascendjob_validate.go:72-80,
    ascendjob_controller.go:148-151; the same at v26.1.0 ascendjob_validate.go:81-89). Volcano's
    scheduler creates ``default`` only once it runs (volcano-sh/volcano v1.9.0
    pkg/scheduler/cache/cache.go:483-510, v1.12.0 cache.go:457-480), so a job applied right after the
    stack could find no queue. Each queue is therefore an object of the stack, with the spec Volcano
    gives its own default queue (weight 1, reclaimable), which Volcano's create then leaves as it is
    (it tolerates AlreadyExists)."""
    return [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": k8s.meta(name),
            "spec": {"weight": 1, "reclaimable": True},
        }
        for name in s.plan.queues
    ]


def objects(s: Settings) -> List[Obj]:
    return scheduler_objects(s) + controller_objects(s) + queue_objects(s)
