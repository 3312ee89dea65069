"""The job part of the plan: labels, annotations, replicas, ports, env and volumes of one job."""

from __future__ import annotations

from typing import Dict, List, Optional

from .. import constants as C
from .. import releases as R
from ..facts import JobFacts, uses_compile_cache
from .budget import budget, ladder
from .env import container_env
from .image import build_image
from .launcher import build_launcher
from .model import EnvVar, JobPlan, Note, Port, ReplicaPlan, SharedVolumePlan, Volume

#: Size of /dev/shm the samples give training pods (RT06 step 5).
SHM_SIZE = "16Gi"


def job_labels(f: JobFacts) -> Dict[str, str]:
    r = f.job.recovery
    labels: Dict[str, str] = {C.LABEL_FRAMEWORK: f.framework, C.LABEL_RING_CONTROLLER: f.cluster.chip}
    if r.fault_scheduling != "off":
        labels[C.LABEL_FAULT_SCHEDULING] = r.fault_scheduling
    if r.fault_retry_times is not None:
        labels[C.LABEL_FAULT_RETRY_TIMES] = str(r.fault_retry_times)
    if r.pod_rescheduling:
        labels[C.LABEL_POD_RESCHEDULING] = "on"
    if f.process_level and not f.at_least(R.OPERATOR_INJECTS_RECOVERY_ENV):
        labels[C.LABEL_PROCESS_RECOVER_ENABLE] = "on"
    if r.sub_health != "ignore":
        labels[C.LABEL_SUB_HEALTHY_STRATEGY] = r.sub_health
    return labels


def job_annotations(f: JobFacts) -> Dict[str, str]:
    job = f.job
    out: Dict[str, str] = {}
    if f.strategies:
        out[C.ANNOTATION_RECOVER_STRATEGY] = ",".join(f.strategies)
    timeout = job.recovery.wait_reschedule_timeout
    if timeout is not None:
        out[C.ANNOTATION_WAIT_RESCHEDULE_TIMEOUT] = str(timeout)
    elif "elastic-training" in f.strategies:
        out[C.ANNOTATION_WAIT_RESCHEDULE_TIMEOUT] = "270"
    if job.schedule_policy:
        out[C.ANNOTATION_SCHEDULE_POLICY] = job.schedule_policy
    return out


def ports(f: JobFacts) -> List[Port]:
    job = f.job
    out = [Port(C.ASCENDJOB_PORT_NAME, C.ASCENDJOB_PORT_DEFAULT, reason="MASTER_PORT / MS_SCHED_PORT (YAMLCFG)")]
    if f.uses_taskd:
        out.append(Port(C.TASKD_PORT_NAME, C.TASKD_MANAGER_PORT, reason="TaskD Manager, on every pod (RT04)"))
    if ("dump" in f.strategies or f.process_level) and job.recovery.ttp_port is not None:
        out.append(Port(C.TTP_PORT_NAME, job.recovery.ttp_port, reason="MindIO TTP controller (RT05)"))
    return out


def replicas(f: JobFacts, env: List[EnvVar], job_ports: List[Port]) -> List[ReplicaPlan]:
    job = f.job
    r = job.recovery

    def replica(kind: str, count: int, npus: int, manager: bool) -> ReplicaPlan:
        return ReplicaPlan(
            type=kind,
            replicas=count,
            npus=npus,
            restart_policy=r.restart_policy,
            host_network=f.cluster.host_network,
            termination_grace_period_seconds=r.termination_grace_period,
            ports=list(job_ports),
            env=list(env),
            runs_taskd_manager=manager,
            labels={C.LABEL_RING_CONTROLLER: f.cluster.chip},
            annotations={},
        )

    where = f.taskd_manager_where
    if f.is_pytorch:
        out = [replica("Master", 1, job.npus_per_node, where == "rank0")]
        if job.nodes > 1:
            out.append(replica("Worker", job.nodes - 1, job.npus_per_node, False))
        return out
    return [
        replica("Scheduler", 1, 0, where == "scheduler"),
        replica("Worker", job.nodes, job.npus_per_node, False),
    ]


def volumes(f: JobFacts, storage: List[SharedVolumePlan]) -> List[Volume]:
    job = f.job
    vols = [Volume("shm", "/dev/shm", "empty_dir_memory", size_limit=SHM_SIZE, reason="RT06 step 5")]
    by_path = {v.mount_path: v for v in storage}
    if uses_compile_cache(f) and job.compile.cache_path in by_path:
        v = by_path[job.compile.cache_path]
        vols.append(Volume("op-cache", v.mount_path, "pvc", claim_name=v.name, reason="ASCEND_CACHE_PATH (RTO 表10)"))
    if job.checkpoint.path in by_path:
        v = by_path[job.checkpoint.path]
        vols.append(Volume("checkpoints", v.mount_path, "pvc", claim_name=v.name, reason="checkpoints"))
    if job.ranktable:
        vols.append(
            Volume(
                C.RANKTABLE_VOLUME,
                C.RANKTABLE_MOUNT,
                "host_path",
                path="%s/%s.%s" % (C.RANKTABLE_HOST_ROOT, job.namespace, job.name),
                reason="the operator detects file mode by the volume name (RT06)",
            )
        )
    return vols


def _software(f: JobFacts) -> str:
    if not f.is_pytorch:
        return "MindSpore %s" % f.mindspore
    return "torch %s, FrameworkPTAdapter %s%s" % (f.torch, "" if f.adapter_info.exact else ">= ", f.adapter)


def build_job(f: JobFacts, storage: List[SharedVolumePlan], profile_dir: Optional[str]) -> JobPlan:
    job = f.job
    env = container_env(f)
    notes: List[Note] = []
    if f.process_level and f.at_least(R.OPERATOR_INJECTS_RECOVERY_ENV):
        notes.append(
            Note(
                "the Ascend Operator labels the PodGroup process-recover-enable=on and injects PROCESS_RECOVER, "
                "ELASTIC_PROCESS_RECOVER_ENABLE, HIGH_AVAILABILITY%s from recover-strategy"
                % (", ENABLE_RESTART_FAULT_PROCESS" if "recover-in-place" in f.strategies else ""),
                R.OPERATOR_INJECTS_RECOVERY_ENV.source,
            )
        )
    if job.recovery.watchdog == "auto" and (f.process_level or f.hot_switch):
        notes.append(Note("watchdog off because a process-level strategy is used", "RTO 表1; RT04 Table 3"))
    elif job.recovery.watchdog == "auto" and f.watchdog_supported is False:
        notes.append(
            Note(
                "the image's torch/torch_npu (%s) has no watchdog: a parameter-plane fault waits for the "
                "collective timeout; %s is left unset" % (_software(f), C.ENV_HCCL_ASYNC_ERROR_HANDLING),
                "RTO 表1",
            )
        )
    for field, name in sorted(f.origins.items()):
        notes.append(
            Note(
                "env %s=%s is read as %s" % (name, f.declared.env[name], field),
                "PROJECT (a setting is checked the same whether written as a field or in env)",
            )
        )
    if f.process_level or f.pod_level:
        notes.append(Note("a fault on the rank-0 pod escalates to job-level rescheduling", "K8S Table 6; RT01"))
    return JobPlan(
        name=job.name,
        namespace=job.namespace,
        kind="AscendJob" if job.kind == "ascendjob" else "Job",
        framework=f.framework,
        levels=ladder(f),
        strategies=list(f.strategies),
        labels=job_labels(f),
        annotations=job_annotations(f),
        replicas=replicas(f, env, ports(f)),
        volumes=volumes(f, storage),
        image=build_image(f, profile_dir),
        launcher=build_launcher(f),
        budget=budget(f, job),
        notes=notes,
    )
