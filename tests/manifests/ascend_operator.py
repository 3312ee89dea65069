"""A double of the Ascend Operator's AscendJob admission and per-pod env injection, written from its
source (Ascend/mind-cluster component/ascend-operator) at v7.3.0 and v26.1.0. Each behaviour cites
file:line at both tags (``pkg/controllers/v1/`` unless a path is given); refusals are reproduced
with the operator's reason. Only what decides whether a rendered job starts and what its launcher
reads is reproduced: elastic scaling (scaler.ValidJob), MindIE inference jobs, 26.x soft-share
device jobs and dynamic vNPU ("huawei.com/npu-core") jobs are out of scope (the last is refused here
rather than guessed). Injected variables the launcher never reads (MINDX_SERVER_IP, 26.x
MINDX_SERVER_DOMAIN and REPLICA_TYPE, HCCL_LOGIC_SUPERPOD_ID, the ASCEND_VISIBLE_DEVICES fieldRef)
are left out. The recovery env setPytorchEnv / setMindSporeEnv end with (``CITE[release]["recovery_env"]``)
is the product's model of it, :func:`resumable.operatorenv.injected_into`, which tests/plan/test_operatorenv.py
checks against the same source.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from resumable.operatorenv import injected_into
from resumable.versions import Version

RELEASES = ("7.3.0", "26.1.0")

#: file:line of each behaviour at each release
CITE: Dict[str, Dict[str, str]] = {
    "7.3.0": {
        "queue": "ascendjob_validate.go:72-80 (validateBasicInfo; getQueueFromApiserver :85-87)",
        "success_policy": "ascendjob_validate.go:63-70",
        "framework": "pkg/api/v1/defaults.go:130-143 (GetJobFramework)",
        "replica_type": "ascendjob_validate.go:151-153, 213-247",
        "replicas": "ascendjob_validate.go:113-132; consts.go:124 maxReplicas = 20000",
        "leader": "ascendjob_validate.go:155-160, 249-257",
        "no_leader": "ascendjob_validate.go:167-181",
        "container": "ascendjob_validate.go:186-211 (every container needs an image)",
        "default_port": "pkg/api/v1/defaults.go:43-67 (setDefaultPort: ascendjob-port 2222)",
        "service": "service.go:95-112, 139-154 (getMngSvcIpAndPort, getServiceIpAndPort)",
        "chips_status": "job.go:238-246 (syncReplicas); utils.go:244-266 (checkNonWorkerRplMountChips)",
        "npu_request": "utils.go:106-131 (getNpuReqInfoPerPod, getNpuWorkerSpec)",
        "npu_replicas": "utils.go:145-155 (getTotalNpuReplicas)",
        "rank": "pod.go:615-624 (createPodSpec)",
        "set_env": "pod.go:653-680 (setEnv)",
        "common_env": "env.go:166-182 (setCommonEnv)",
        "pytorch_env": "env.go:240-260 (setPytorchEnv)",
        "mindspore_env": "env.go:200-238 (setMindSporeEnv); utils.go:278-286 (checkNpuPod)",
        "recovery_env": "env.go:232-234, 255-256 (addProcessRecoverEnv :348-378, addMSPodScheduleEnv :318-328, "
        "addSubHealthyEnv :330-346)",
    },
    "26.1.0": {
        "queue": "ascendjob_validate.go:81-89 (validateBasicInfo; getQueueFromApiserver :94-96)",
        "success_policy": "ascendjob_validate.go:72-79",
        "scale_out_type": "ascendjob_validate.go:48-54; pkg/utils/job_v2.go:53-63",
        "framework": "pkg/api/v1/defaults.go:133-146 (GetJobFramework)",
        "replica_type": "ascendjob_validate.go:146-148, 224-258",
        "replicas": "ascendjob_validate.go:122-141",
        "leader": "ascendjob_validate.go:165-170, 260-268",
        "no_leader": "ascendjob_validate.go:177-191",
        "container": "ascendjob_validate.go:196-222 (the ascend container needs an image)",
        "default_port": "pkg/api/v1/defaults.go (setDefaultPort: ascendjob-port 2222)",
        "service": "service.go:95-112, 139-154",
        "chips_status": "job.go:247-255 (syncReplicas); utils.go:246-268 (checkNonWorkerRplMountChips)",
        "npu_request": "utils.go:106-131",
        "npu_replicas": "utils.go:145-155",
        "rank": "pod.go:723-732 (createPodSpec)",
        "set_env": "pod.go:761-790 (setEnv)",
        "common_env": "env.go:168-186 (setCommonEnv)",
        "pytorch_env": "env.go:248-272 (setPytorchEnv)",
        "mindspore_env": "env.go:204-246 (setMindSporeEnv); utils.go:280-288 (checkNpuPod)",
        "recovery_env": "env.go:240-242, 267-268 (addProcessRecoverEnv :367-398, addMSPodScheduleEnv :337-347, "
        "addSubHealthyEnv :349-365)",
    },
}

CONTAINER = "ascend"  # ascend-common api.DefaultContainerName
PORT_NAME = "ascendjob-port"  # api.DefaultPortName
DEFAULT_PORT = 2222
MAX_REPLICAS = 20000
NPU_PREFIX = "huawei.com/"  # api.ResourceNamePrefix
LEADERS = {"pytorch": "Master", "mindspore": "Scheduler", "tensorflow": "Chief"}
#: the Master/Scheduler service's cluster IP the double hands out (getMngSvcIpAndPort)
SERVICE_IP = "10.96.0.10"
JOB_UID = "0b5c6d1e-uid"
SCALE_OUT_TYPES = ("RoCE", "UBoE")


class Refused(Exception):
    """The operator's validateError: reason and message, with the source line."""


def _containers(spec: Dict[str, Any]) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = spec.get("template", {}).get("spec", {}).get("containers") or []
    return out


def _npus(container: Dict[str, Any]) -> int:
    """getContainerResourceReq: the NPU request of a container (resources.requests huawei.com/...)."""
    for name, value in (container.get("resources", {}).get("requests") or {}).items():
        if name.startswith(NPU_PREFIX):
            if name.endswith("npu-core"):
                raise Refused("dynamic vNPU (%s) is out of this double's scope" % name)
            return int(value)
    return 0


def _ascend(spec: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    return next((c for c in _containers(spec) if c.get("name") == CONTAINER), None)


def _v26(release: str) -> bool:
    return release.split(".")[0] == "26"


def _replicas(spec: Dict[str, Any]) -> int:
    value = spec.get("replicas")
    return 1 if value is None else int(value)  # defaults.go setDefaultReplicas


def validate(job: Dict[str, Any], release: str, queues: Iterable[str] = ("default",), gang: bool = True) -> None:
    """validateJob: raise :class:`Refused` where the operator records a validateError and creates no
    PodGroup and no pod. The stack runs the operator with --enableGangScheduling=true."""
    cite = CITE[release]
    spec = job.get("spec", {})
    specs: Optional[Dict[str, Dict[str, Any]]] = spec.get("replicaSpecs")
    if _v26(release) and (job["metadata"].get("labels") or {}).get("scaleout-type", "").strip() not in (
        "",
        *SCALE_OUT_TYPES,
    ):
        raise Refused("invalid scaleout-type label (%s)" % cite["scale_out_type"])
    if not specs:
        raise Refused("replicaSpecs is not set (ascendjob_validate.go validateBasicInfo)")
    policy = spec.get("successPolicy")
    if policy not in (None, "", "AllWorkers"):
        raise Refused("job success policy is invalid (%s)" % cite["success_policy"])
    scheduling = (spec.get("runPolicy") or {}).get("schedulingPolicy")
    if gang and scheduling is not None:
        queue = scheduling.get("queue") or ""
        if queue not in set(queues):  # Queues().Get(name): "" and an absent queue fail alike
            raise Refused(
                "QueueGetFailed: check queue<%s> failed, maybe it is not created (%s)" % (queue, cite["queue"])
            )
    frame = (job["metadata"].get("labels") or {}).get("framework")
    if frame not in LEADERS:
        raise Refused("framework label<%s> is not in %s (%s)" % (frame, sorted(LEADERS), cite["framework"]))
    has_leader = False
    for rtype, value in specs.items():
        if rtype not in (LEADERS[frame], "Worker"):
            raise Refused(
                "replicaType is %s but must be one of %s (%s)"
                % (rtype, [LEADERS[frame], "Worker"], cite["replica_type"])
            )
        if value is None:
            raise Refused("%s replicaSpec is not set" % rtype)
        count = _replicas(value)
        if not 0 <= count <= MAX_REPLICAS:
            raise Refused("%s replicas %d out of 0..%d (%s)" % (rtype, count, MAX_REPLICAS, cite["replicas"]))
        if not _containers(value):
            raise Refused("%s: containers definition expected (%s)" % (rtype, cite["container"]))
        if rtype != "Worker":
            has_leader = True
            if count != 1:
                raise Refused("replicaType<%s> replicas must be only 1 (%s)" % (rtype, cite["leader"]))
        checked = (
            _containers(value) if not _v26(release) else [c for c in _containers(value) if c.get("name") == CONTAINER]
        )
        if any(not c.get("image") for c in checked):
            raise Refused("Image is undefined in a container of %s (%s)" % (rtype, cite["container"]))
        if _ascend(value) is None:
            raise Refused("There is no container named %s in %s (%s)" % (CONTAINER, rtype, cite["container"]))
    if not has_leader:
        if frame != "mindspore":
            raise Refused("there need 1 leader replica-type (%s)" % cite["no_leader"])
        worker = specs.get("Worker") or {}
        if _npus(_ascend(worker) or {}) * _replicas(worker) > 1:
            raise Refused("scheduler not found, but need 1 while req npu more than 1 (%s)" % cite["no_leader"])


def _service_port(job: Dict[str, Any], frame: str) -> str:
    """The leader's ascendjob-port (defaults.go setDefaultPort adds 2222 when absent; the service
    carries the container's port named ascendjob-port)."""
    leader = job["spec"]["replicaSpecs"].get(LEADERS[frame]) or {}
    for port in (_ascend(leader) or {}).get("ports") or []:
        if port.get("name") == PORT_NAME:
            return str(port["containerPort"])
    return str(DEFAULT_PORT)


def pod_envs(
    job: Dict[str, Any], release: str, pod_ips: Dict[Tuple[str, int], str]
) -> Dict[Tuple[str, int], Dict[str, str]]:
    """For every pod (replica type, index): the env the operator adds to its ascend container, after
    the job's own, for a job :func:`validate` admits. ``pod_ips`` gives each pod's IP (for the
    status.podIP fieldRefs)."""
    specs: Dict[str, Dict[str, Any]] = job["spec"]["replicaSpecs"]
    frame = job["metadata"]["labels"]["framework"]
    # syncReplicas: nonWorkerPodMountChipStatus = a non-Worker replica requests NPUs
    status = any(_npus(_ascend(s) or {}) > 0 for r, s in specs.items() if r != "Worker")
    if status:
        requests = {_npus(_ascend(s) or {}) for s in specs.values()}
        if len(requests) != 1:  # getNpuWorkerSpec returns whichever spec the map yields first
            raise Refused(
                "replicas request different NPU counts %s: the operator picks one at random" % sorted(requests)
            )
        ct_req = requests.pop()
        npu_replicas = sum(_replicas(s) for s in specs.values())
    else:
        ct_req = _npus(_ascend(specs.get("Worker") or {}) or {})
        npu_replicas = _replicas(specs.get("Worker") or {})
    port = _service_port(job, frame)
    out: Dict[Tuple[str, int], Dict[str, str]] = {}
    for rtype, spec in specs.items():
        for index in range(_replicas(spec)):
            ip = pod_ips[(rtype, index)]
            rank = index + 1 if status and rtype == "Worker" else index
            env = {e["name"]: str(e.get("value", "")) for e in (_ascend(spec) or {}).get("env", []) if "value" in e}
            for e in (_ascend(spec) or {}).get("env", []):
                if e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.podIP":
                    env[e["name"]] = ip
            out[(rtype, index)] = env
            if frame == "mindspore" and len(specs) == 1 and rtype == "Worker":
                continue  # setEnv: a Scheduler-less MindSpore job gets nothing
            env.update(
                {
                    "MINDX_TASK_ID": JOB_UID,
                    "HostNetwork": str(bool(spec["template"]["spec"].get("hostNetwork"))).lower(),
                }
            )
            if ct_req == 0:
                continue
            if frame == "pytorch":
                env.update(
                    {
                        "LOCAL_WORLD_SIZE": str(ct_req),
                        "WORLD_SIZE": str(ct_req * npu_replicas),
                        "LOCAL_RANK": ",".join(str(i) for i in range(ct_req)),
                        "MASTER_ADDR": SERVICE_IP,
                        "MASTER_PORT": port,
                        "RANK": str(rank),
                    }
                )
            elif frame == "mindspore":
                env.update(
                    {
                        "MS_SCHED_HOST": ip if rtype == "Scheduler" else SERVICE_IP,
                        "MS_LOCAL_WORKER": str(ct_req),
                        "MS_WORKER_NUM": str(ct_req * npu_replicas),
                        "MS_NODE_RANK": str(rank),
                        "MS_SCHED_PORT": port,
                        "MS_SERVER_NUM": "0",
                        "MS_ROLE": "MS_SCHED" if rtype == "Scheduler" else "MS_WORKER",
                        "NPU_POD": str(_npus(_ascend(spec) or {}) > 0).lower(),
                    }
                )
            env.update({i.name: i.value for i in injected_into(job, Version(release))})  # CITE["recovery_env"]
    return out
