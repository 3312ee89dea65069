"""The job part of the plan: labels, annotations, replicas, ports, env and volumes of one job."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .. import constants as C
from .. import releases as R
from ..envderived import mindio_ttp_port
from ..facts import JobFacts, uses_compile_cache
from ..operatorenv import pod_rescheduling_label, recover_strategy_annotation, sub_healthy_label
from ..profile import JobVolume
from .budget import budget, ladder
from .env import container_env
from .image import build_image
from .launcher import build_launcher, hang_timeout
from .model import (
    ConfigMapPlan,
    EnvVar,
    JobPlan,
    Note,
    Port,
    ReplicaPlan,
    SharedVolumePlan,
    VolcanoPolicy,
    Volume,
)
from .nodes import npu_resource
from .pod import build_pod
from .storage import CHECKPOINTS, COMPILE_CACHE, volume_of

#: The Volcano Job sample of the MindCluster samples repository.
VCJOB_SAMPLE = (
    "MCD:samples/train/resumable-training/fault-rescheduling/withRanktable/pytorch/gpt-3/yamls/910B/"
    "pytorch_vcjob_910b.yaml"
)
#: Size of /dev/shm the samples give training pods (RT06 step 5).
SHM_SIZE = "16Gi"


def job_labels(f: JobFacts) -> Dict[str, str]:
    r = f.job.recovery
    labels: Dict[str, str] = {C.LABEL_RING_CONTROLLER: f.cluster.chip}
    if f.job.kind == "ascendjob":  # the operator selects its env injection by it; Volcano has none
        labels = {C.LABEL_FRAMEWORK: f.framework, **labels}
    if r.fault_scheduling != "off":
        labels[C.LABEL_FAULT_SCHEDULING] = r.fault_scheduling
    if r.fault_retry_times is not None:
        labels[C.LABEL_FAULT_RETRY_TIMES] = str(r.fault_retry_times)
    pod_rescheduling = pod_rescheduling_label(f)
    if pod_rescheduling is not None:
        labels[C.LABEL_POD_RESCHEDULING] = pod_rescheduling
    if f.process_level and not f.at_least(R.OPERATOR_INJECTS_RECOVERY_ENV):
        labels[C.LABEL_PROCESS_RECOVER_ENABLE] = "on"
    sub_healthy = sub_healthy_label(f)
    if sub_healthy is not None:
        labels[C.LABEL_SUB_HEALTHY_STRATEGY] = sub_healthy
    if f.job.tor_affinity is not None and f.at_least(R.TOR_AFFINITY):
        labels[C.LABEL_TOR_AFFINITY] = f.job.tor_affinity
    return labels


def job_annotations(f: JobFacts) -> Dict[str, str]:
    job = f.job
    out: Dict[str, str] = {}
    strategies = recover_strategy_annotation(f)
    if strategies is not None:
        out[C.ANNOTATION_RECOVER_STRATEGY] = strategies
    timeout = job.recovery.wait_reschedule_timeout
    if timeout is not None:
        out[C.ANNOTATION_WAIT_RESCHEDULE_TIMEOUT] = str(timeout)
    elif "elastic-training" in f.strategies:
        out[C.ANNOTATION_WAIT_RESCHEDULE_TIMEOUT] = str(C.WAIT_RESCHEDULE_TIMEOUT_DEFAULT)
    if job.schedule_policy:
        out[C.ANNOTATION_SCHEDULE_POLICY] = job.schedule_policy
    if job.sp_block is not None and f.at_least(R.SP_BLOCK):
        out[C.ANNOTATION_SP_BLOCK] = str(job.sp_block)
    return out


def ports(f: JobFacts) -> List[Port]:
    job = f.job
    out: List[Port] = []
    if job.kind == "ascendjob":
        why = "MASTER_PORT / MS_SCHED_PORT (YAMLCFG)"
        out.append(Port(C.ASCENDJOB_PORT_NAME, C.ASCENDJOB_PORT_DEFAULT, reason=why))
    if f.uses_taskd:
        out.append(Port(C.TASKD_PORT_NAME, C.TASKD_MANAGER_PORT, reason="TaskD Manager, on every pod (RT04)"))
    ttp_port = mindio_ttp_port(f)
    if ttp_port is not None:
        out.append(Port(C.TTP_PORT_NAME, ttp_port, reason="MindIO TTP controller (RT05)"))
    return out


def device_env(f: JobFacts) -> List[EnvVar]:
    """ASCEND_VISIBLE_DEVICES from the annotation the device plugin writes on the pod, where no
    operator injects it: every Volcano Job, and AscendJobs before the operator did it itself."""
    if f.job.kind == "ascendjob" and f.at_least(R.OPERATOR_SETS_VISIBLE_DEVICES):
        return []
    why = "Volcano Job: no operator injects it" if f.job.kind == "vcjob" else "operator before 7.0.RC1"
    return [
        EnvVar(
            C.ENV_ASCEND_VISIBLE_DEVICES,
            field_path="metadata.annotations['%s']" % npu_resource(f.cluster.chip),
            reason="%s (YAMLCFG; %s)" % (why, R.OPERATOR_SETS_VISIBLE_DEVICES.source),
        )
    ]


def job_env(f: JobFacts, env: List[EnvVar]) -> List[EnvVar]:
    """The container env: the strategy's (``env``, from plan.env), the device list where nobody
    injects it, the RankTable file of a Volcano Job, and where ``resumable launch`` finds the profile."""
    names = {e.name for e in env}
    extra = device_env(f)
    if f.job.kind == "vcjob" and C.ENV_RANK_TABLE_FILE not in names:
        extra.append(
            EnvVar(C.ENV_RANK_TABLE_FILE, C.RANKTABLE_MOUNT + "/" + C.RANKTABLE_FILE, reason="rings-config (RT06)")
        )
    extra.append(
        EnvVar(
            C.ENV_RESUMABLE_PROFILE,
            "%s/%s" % (C.PROFILE_MOUNT_DIR, C.PROFILE_FILE_NAME),
            reason="resumable launch reads the profile here",
        )
    )
    extra.append(EnvVar(C.ENV_RESUMABLE_JOB, f.job.name, reason="resumable launch plans this job"))
    return env + [e for e in extra if e.name not in names]


def node_selector(f: JobFacts) -> Dict[str, str]:
    """Compute nodes of the profile's architecture and server type (YAMLCFG nodeSelector)."""
    return {
        C.NODE_LABEL_HOST_ARCH: C.HOST_ARCH_VALUES[f.cluster.arch],
        C.NODE_LABEL_ACCELERATOR_TYPE: f.cluster.accelerator_type,
    }


def replicas(f: JobFacts, env: List[EnvVar], job_ports: List[Port]) -> List[ReplicaPlan]:
    job = f.job
    r = job.recovery
    pod = job.pod
    selector = node_selector(f)

    def replica(kind: str, count: int, npus: int, manager: bool) -> ReplicaPlan:
        return ReplicaPlan(
            type=kind,
            replicas=count,
            npus=npus,
            restart_policy=r.restart_policy,
            host_network=f.host_network,
            termination_grace_period_seconds=r.termination_grace_period,
            ports=list(job_ports),
            env=list(env),
            runs_taskd_manager=manager,
            labels={**pod.labels, C.LABEL_RING_CONTROLLER: f.cluster.chip},
            annotations=dict(pod.annotations),
            resources={npu_resource(f.cluster.chip): str(npus)} if npus else {},
            node_selector={**pod.node_selector, **selector},
        )

    where = f.taskd_manager_where
    if job.kind == "vcjob":
        return [replica(C.VCJOB_TASK, job.nodes, job.npus_per_node, where == "rank0")]
    if f.is_pytorch:
        out = [replica("Master", 1, job.npus_per_node, where == "rank0")]
        if job.nodes > 1:
            out.append(replica("Worker", job.nodes - 1, job.npus_per_node, False))
        return out
    # MindSpore: the Scheduler requests the Workers' NPUs and is msrun node 0, as every upstream msrun
    # sample has it (MCD:samples/train/resumable-training/fault-tolerance/ranktable/mindspore/Qwen3/yamls/
    # ms_multinodes_acjob_superpod.yaml). With NPUs on a non-Worker replica the operator numbers the
    # Workers from 1 and counts every replica in MS_WORKER_NUM (ascend-operator pkg/controllers/v1
    # job.go syncReplicas -> utils.go checkNonWorkerRplMountChips; pod.go createPodSpec rank = index + 1;
    # utils.go getTotalNpuReplicas; the same since 6.0.0, pod.go:430-437 there); without them
    # Scheduler and Worker-0 are both MS_NODE_RANK 0 and the Scheduler pod would start msrun workers
    # with no NPU.
    out = [replica("Scheduler", 1, job.npus_per_node, where == "scheduler")]
    if job.nodes > 1:
        out.append(replica("Worker", job.nodes - 1, job.npus_per_node, False))
    return out


#: Where the reset config comes from. The device plugin creates /user/restore/reset/<ns>.reset-config-<job>
#: on the node when a pod of the job is added and writes the ConfigMap's reset.json (and restartType)
#: into it as regular files; it never creates the ConfigMap, it only updates it
#: (MC:component/ascend-device-plugin/pkg/device/ascendtolerance.go writeCmToFileWhilePodAdd and
#: writeCMToFile, pkg/common/file_manager.go GenResetDirName, pkg/kubeclient/client_server.go
#: WriteResetInfoDataIntoCM at 7.3.0). The pods mount that host directory as every MindCluster sample
#: does (MCD:samples/train/resumable-training/.../yamls/*.yaml, volume reset-config, hostPath), not the
#: ConfigMap: a ConfigMap volume holds every key as a symlink, which TaskD's file reader refuses
#: (MC:component/taskd/taskd/python/toolkit/validator/file_process.py).
RESET_CONFIG_SOURCE = (
    "MC:component/ascend-device-plugin/pkg/device/ascendtolerance.go writeCMToFile; MCD: training samples"
)


def reset_config_host_dir(namespace: str, job_name: str) -> str:
    """The node directory the device plugin writes reset.json into (pkg/common/file_manager.go GenResetDirName)."""
    return "%s/%s.%s%s" % (C.RESET_CONFIG_HOST_ROOT, namespace, C.RESET_CONFIG_PREFIX, job_name)


def needs_reset_config(f: JobFacts) -> bool:
    """reset-config-<job>: graceful fault tolerance, process-level recovery, hot switching and the
    in-container agents (Elastic Agent, TaskD) read reset.json from it (RT01 "ConfigMap
    Description"; elastic agent constants RESET_CONFIG_PATH)."""
    return f.graceful or f.process_level or f.hot_switch or f.uses_mindx_elastic or f.uses_taskd


def profile_config_map(job_name: str) -> str:
    return "resumable-profile-%s" % job_name


def config_maps(f: JobFacts) -> List[ConfigMapPlan]:
    job = f.job
    out = [
        ConfigMapPlan(
            profile_config_map(job.name),
            {},
            {},
            holds_profile=True,
            reason="resumable launch plans the job from it (%s): the profile with this job alone"
            % C.ENV_RESUMABLE_PROFILE,
        )
    ]
    if needs_reset_config(f):
        out.append(
            ConfigMapPlan(
                C.RESET_CONFIG_PREFIX + job.name,
                {C.LABEL_RESET: "true"},
                {"reset.json": '{\n    "status": "initializing"\n}\n'},
                reason="the device plugin publishes fault and reset state in it and copies reset.json to the node "
                "(RT01; %s)" % RESET_CONFIG_SOURCE,
            )
        )
    if job.kind == "vcjob":
        out.append(
            ConfigMapPlan(
                C.RINGS_CONFIG_PREFIX + job.name,
                {C.LABEL_RING_CONTROLLER: f.cluster.chip},
                {C.RANKTABLE_FILE: '{\n    "status": "initializing"\n}\n'},
                reason="the Volcano plugin writes the RankTable of a Volcano Job into it (RT06; YAMLCFG)",
            )
        )
    return out


def volumes(f: JobFacts, storage: List[SharedVolumePlan]) -> List[Volume]:
    job = f.job
    vols = [Volume(C.VOLUME_SHM, "/dev/shm", "empty_dir_memory", size_limit=SHM_SIZE, reason="RT06 step 5")]
    cache = volume_of(storage, job.name, job.namespace, COMPILE_CACHE) if uses_compile_cache(f) else None
    if cache is not None:
        vols.append(
            Volume(
                C.VOLUME_OP_CACHE, cache.mount_path, "pvc", claim_name=cache.name, reason="ASCEND_CACHE_PATH (RTO 表10)"
            )
        )
    ckpt = volume_of(storage, job.name, job.namespace, CHECKPOINTS)
    if ckpt is not None:
        vols.append(Volume(C.VOLUME_CHECKPOINTS, ckpt.mount_path, "pvc", claim_name=ckpt.name, reason="checkpoints"))
    if job.kind == "vcjob":
        vols.append(
            Volume(
                C.RANKTABLE_VOLUME,
                C.RANKTABLE_MOUNT,
                "config_map",
                config_map=C.RINGS_CONFIG_PREFIX + job.name,
                reason="RankTable of a Volcano Job (RT06)",
            )
        )
    elif job.ranktable:
        vols.append(
            Volume(
                C.RANKTABLE_VOLUME,
                C.RANKTABLE_MOUNT,
                "host_path",
                path="%s/%s.%s" % (C.RANKTABLE_HOST_ROOT, job.namespace, job.name),
                reason="the operator detects file mode by the volume name (RT06)",
            )
        )
    if needs_reset_config(f):
        vols.append(
            Volume(
                C.RESET_CONFIG_VOLUME,
                C.RESET_CONFIG_MOUNT,
                "host_path",
                path=reset_config_host_dir(job.namespace, job.name),
                read_only=True,
                reason="reset.json as a regular file, written by the device plugin from the ConfigMap (%s)"
                % RESET_CONFIG_SOURCE,
            )
        )
    vols.append(Volume(C.VOLUME_DRIVER, C.DRIVER_PATH, "host_path", path=C.DRIVER_PATH, reason="D:api/ascend_job.md"))
    vols.append(
        Volume(
            C.VOLUME_LOCALTIME, C.LOCALTIME_PATH, "host_path", path=C.LOCALTIME_PATH, read_only=True, reason="samples"
        )
    )
    vols.append(
        Volume(
            C.VOLUME_PROFILE,
            C.PROFILE_MOUNT_DIR,
            "config_map",
            config_map=profile_config_map(job.name),
            read_only=True,
            reason="resumable launch / doctor read the profile here",
        )
    )
    for uv in job.volumes:
        vols.append(user_volume(uv))
    return vols


def user_volume(uv: JobVolume) -> Volume:
    """A volume of jobs[].volumes (rule job-volumes: exactly one source)."""
    common: Dict[str, Any] = {"read_only": uv.read_only, "reason": "profile"}
    if uv.claim is not None:
        return Volume(uv.name, uv.mount_path, "pvc", claim_name=uv.claim, **common)
    if uv.config_map is not None:
        return Volume(uv.name, uv.mount_path, "config_map", config_map=uv.config_map, **common)
    if uv.secret is not None:
        return Volume(uv.name, uv.mount_path, "secret", secret=uv.secret, **common)
    if uv.empty_dir is not None:
        limit = uv.empty_dir if uv.empty_dir.strip("0.") else None
        return Volume(uv.name, uv.mount_path, "empty_dir", size_limit=limit, **common)
    return Volume(uv.name, uv.mount_path, "host_path", path=uv.host_path, **common)


def policies(f: JobFacts) -> List[VolcanoPolicy]:
    """Volcano Job lifecycle policies: an evicted pod restarts the job (the vcjob sample, MCD:);
    with fault-retry-times a failed pod is left to the MindCluster retry logic (PodFailed -> Ignore,
    accepted only by MindCluster's patched Volcano) (YAMLCFG; VCAPI)."""
    if f.job.kind != "vcjob":
        return []
    out = [VolcanoPolicy("PodEvicted", "RestartJob", reason="%s" % VCJOB_SAMPLE)]
    if f.job.recovery.fault_retry_times is not None:
        out.append(VolcanoPolicy("PodFailed", "Ignore", reason="fault-retry-times (YAMLCFG; VCAPI)"))
    return out


#: the samples' job log layout: /job/code/alllogs/$MINDX_TASK_ID on the NFS code volume
LOG_SOURCE = "MCD:samples/train/resumable-training/fault-tolerance/without-ranktable/pytorch/Qwen3/train_start.sh"


def log_root(f: JobFacts, storage: List[SharedVolumePlan]) -> Tuple[str, str]:
    """Where the job's logs and recovery timeline go, and why there: a directory that outlives the pod.

    The MindCluster samples write them under /job/code/alllogs, /job/code being the job's NFS code
    volume (MCD Qwen3 train_start.sh, ms_multinodes_acjob_superpod.yaml); a profile volume that holds
    /job/code/alllogs keeps that layout. Otherwise they go next to the checkpoints, on the job's
    shared storage (no new volume). Without either they are on the container's own disk and a
    rescheduled pod loses them; the plan says so."""
    for uv in f.job.volumes:
        holds = uv.mount_path == C.JOB_LOG_ROOT or C.JOB_LOG_ROOT.startswith(uv.mount_path.rstrip("/") + "/")
        if holds and not uv.read_only:
            return C.JOB_LOG_ROOT, "on the profile volume %s" % uv.name
    if f.job.checkpoint.path in {v.mount_path for v in storage}:
        return "%s/%s" % (f.job.checkpoint.path.rstrip("/"), C.JOB_LOG_DIR_NAME), "on the checkpoint shared storage"
    return C.JOB_LOG_ROOT, "on no volume: a rescheduled pod loses them; give storage or a volume holding /job/code"


def _software(f: JobFacts) -> str:
    if not f.is_pytorch:
        return "MindSpore %s" % f.mindspore
    return "torch %s, FrameworkPTAdapter %s%s" % (f.torch, "" if f.adapter_info.exact else ">= ", f.adapter)


def release_notes(f: JobFacts) -> List[Note]:
    """What the job's MindCluster release changes for it that no setting shows."""
    notes: List[Note] = []
    if R.at_least(f.release, R.DEVICE_RESET_TIMEOUT_600):
        notes.append(
            Note(
                "the device plugin and NodeD wait up to %d s (-deviceResetTimeout default, %d s up to 26.0) for the "
                "driver to report every chip after a reset: a node whose chips were reset may rejoin that late"
                % (R.DEVICE_RESET_TIMEOUT_DEFAULT, R.DEVICE_RESET_TIMEOUT_BEFORE),
                R.DEVICE_RESET_TIMEOUT_600.source,
            )
        )
    if R.at_least(f.release, R.HANG_DETECTION):
        notes.append(
            Note(
                "the device plugin reports a hung training as fault %s after %d s (NotHandleFault by default; "
                "budget.hang_detection)" % (R.HANG_FAULT_CODE, R.HANG_CHECK_SECONDS * R.HANG_CHECK_HITS),
                R.HANG_DETECTION.source,
            )
        )
    if f.process_level and R.on_line(f.release, R.PROCESS_LEVEL_GLOO_SEGFAULT):
        notes.append(
            Note(
                "known issue of MindCluster 26.1.0: after repeated process-level reschedules PyTorch's gloo may "
                "end with a segmentation fault (about 0.00125); keep Pod or Job rescheduling as the fallback "
                "(this job falls back to %s rescheduling)" % ("Pod-level" if f.pod_level else "Job-level"),
                R.PROCESS_LEVEL_GLOO_SEGFAULT.source,
            )
        )
    return notes + process_level_limits(f)


def process_level_limits(f: JobFacts) -> List[Note]:
    """What the constraints of process-level recovery ask of the training script, which the profile cannot
    show: set every HCCL link up at initialisation (a fault while links are set up is not recovered; the
    documented avoidance, 配置HCCL主动触发建链, from 7.2.RC1), and the models it supports."""
    wanted = [s for s in f.strategies if s in ("recover", "recover-in-place", "retry")]
    if not wanted:
        return []
    notes: List[Note] = []
    if f.at_least(R.HCCL_LINK_SETUP):
        if f.is_pytorch:
            how = (
                "PyTorch sets a communication group's HCCL links up lazily, at its first collective, so dispatch one "
                "collective (e.g. an all_reduce of a one-element tensor) on every group right after creating it "
                "in the training script's initialisation"
            )
        else:
            how = (
                "the guide gives the procedure for PyTorch only; set the links up at initialisation where the "
                "framework allows"
            )
        notes.append(
            Note(
                "recommended: set every HCCL link up at initialisation. A fault while links are being set up makes "
                "process-level rescheduling and online recovery (%s) fail; %s (no setting does it: the training "
                "script must)" % (", ".join(wanted), how),
                R.HCCL_LINK_SETUP.source,
            )
        )
    if not f.is_pytorch and f.at_least(R.MINDSPORE_PROCESS_LEVEL_RISK):
        notes.append(
            Note(
                "on MindSpore the 26.x guide gives process-level rescheduling a very small chance of failing "
                "(框架机制限制); the fault then takes %s rescheduling" % ("Pod-level" if f.pod_level else "Job-level"),
                R.MINDSPORE_PROCESS_LEVEL_RISK.source,
            )
        )
    models = (
        "Megatron-based models in PyTorch single-operator mode, no multimodal model"
        if f.is_pytorch
        else "no multimodal model; MindSpore and MindIO installed in the same path"
    )
    notes.append(
        Note(
            "process-level recovery (%s) supports %s: the profile does not say which model the script trains, so no "
            "rule checks it" % (", ".join(wanted), models),
            "HA73-025 使用约束",
        )
    )
    return notes


def build_job(f: JobFacts, storage: List[SharedVolumePlan], profile_dir: Optional[str]) -> JobPlan:
    job = f.job
    split = container_env(f)
    env = job_env(f, split.template)
    notes: List[Note] = list(split.notes)
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
    root, where = log_root(f, storage)
    if f.job.kind == "ascendjob":
        notes.append(
            Note(
                "Volcano queue %s: the scheduling stack creates it; it must exist before the job, or the Ascend "
                "Operator refuses the job and does not look again (a workload stack checks it first)" % f.queue,
                "MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/ascendjob_validate.go:72-80, "
                "ascendjob_controller.go:148-151",
            )
        )
    plan_budget = budget(f, job, hang_timeout(f)[0])
    launcher = build_launcher(f, root, plan_budget.ladder, split.left_out)
    timeline = "%s/%s" % (launcher.log_dir, C.TIMELINE_FILE % "<host>")
    notes.append(Note("logs under %s, the recovery timeline %s (%s)" % (launcher.log_dir, timeline, where), LOG_SOURCE))
    notes += release_notes(f)
    return JobPlan(
        name=job.name,
        namespace=job.namespace,
        kind=C.ASCENDJOB_KIND if job.kind == "ascendjob" else C.VCJOB_KIND,
        framework=f.framework,
        levels=ladder(f),
        strategies=list(f.strategies),
        labels=job_labels(f),
        annotations=job_annotations(f),
        replicas=replicas(f, env, ports(f)),
        volumes=volumes(f, storage),
        image=build_image(f, profile_dir),
        launcher=launcher,
        budget=plan_budget,
        notes=notes,
        api_version=C.ASCENDJOB_API_VERSION if job.kind == "ascendjob" else C.VCJOB_API_VERSION,
        scheduler_name=C.SCHEDULER_NAME_VOLCANO,
        config_maps=config_maps(f),
        backoff_limit=job.recovery.backoff_limit,
        min_available=job.nodes,
        policies=policies(f),
        queue=f.queue,
        pod=build_pod(job.pod),
        operator_env=split.operator,
    )
