"""Turn a validated profile into the plan every layer consumes."""

from __future__ import annotations

from typing import Dict, List, Optional

from .. import constants as C
from .. import releases as R
from ..facts import JobFacts, all_job_facts, hot_reset_for, version_or_none
from ..profile import Job, Profile
from ..rules import evaluate
from ..versions import Version
from .budget import budget, ladder
from .model import (
    EnvVar,
    ImagePlan,
    JobPlan,
    LauncherPlan,
    NodePlan,
    Note,
    Plan,
    Port,
    ReplicaPlan,
    SchedulerPlan,
    SharedVolumePlan,
    TaskdManagerPlan,
    Volume,
)

#: Size of /dev/shm the samples give training pods (RT06 step 5).
SHM_SIZE = "16Gi"
#: ulimit -n advised for Pod-level rescheduling at scale (RT01 Pod-level constraints).
NOFILE_POD_LEVEL = 100000
#: MINDIO_WAIT_MINDX_TIME for elastic training without recover (RT04: 60 or more).
MINDIO_WAIT_ELASTIC = "60"


def build_plan(profile: Profile, source: str = "<profile>") -> Plan:
    facts = all_job_facts(profile)
    storage = _storage(profile, facts)
    return Plan(
        profile=source,
        cluster_name=profile.cluster.name,
        scheduler=_scheduler(profile, facts),
        nodes=_nodes(profile, facts),
        storage=storage,
        jobs=[_job(profile, f, storage) for f in facts],
        violations=evaluate(profile),
    )


# --- scheduler ---------------------------------------------------------------------------------------


def volcano_plugin_name(release: str, arch: str) -> str:
    """The Ascend plugin's name in the Volcano scheduler config, as the release build writes it
    (build.sh rewrites it to volcano-npu_<version>_linux-<arch>; INST05 step 6 example
    volcano-npu_v26.0.0_linux-aarch64)."""
    return "volcano-npu_v%s_linux-%s" % (release, arch)


def _scheduler(profile: Profile, facts: List[JobFacts]) -> SchedulerPlan:
    s = profile.scheduler
    cluster = profile.cluster
    release = version_or_none(cluster.mindcluster) or Version("0")
    stack = R.stack_release(release)
    volcano = s.volcano or (stack.default_volcano if stack is not None else "1.9.0")
    hot_reset = hot_reset_for(profile)
    notes: List[Note] = []
    device_args: Dict[str, str] = {C.FLAG_VOLCANO_TYPE: "true", C.FLAG_LIST_WATCH_PERIOD: str(s.list_watch_period)}
    if hot_reset is not None:
        device_args[C.FLAG_HOT_RESET] = str(hot_reset)
        notes.append(
            Note(
                "device plugin -hotReset=%d (%s)"
                % (hot_reset, "process-level recovery" if hot_reset == 2 else "as configured"),
                "INST04 step 4 / Table 3",
            )
        )
    init_params = {C.INIT_PARAM_GRACE_OVER_TIME: str(s.grace_over_time)}
    longest = max((f.job.recovery.termination_grace_period for f in facts), default=0)
    notes.append(
        Note(
            "Volcano grace-over-time %ds; longest pod grace period %ds" % (s.grace_over_time, longest),
            "INST05 Table 3; YAMLCFG",
        )
    )
    stack_version = stack.version if stack is not None else None
    return SchedulerPlan(
        release=cluster.mindcluster,
        stack_release=stack_version,
        arch=cluster.arch,
        kubernetes=cluster.kubernetes,
        container_runtime=cluster.container_runtime,
        volcano_version=volcano,
        volcano_plugin_name=volcano_plugin_name(stack_version or cluster.mindcluster, cluster.arch),
        image_registry=s.image_registry,
        image_pull_policy=s.image_pull_policy,
        image_pull_secrets=list(s.image_pull_secrets),
        device_plugin_args=device_args,
        noded_args={C.FLAG_REPORT_INTERVAL: str(s.report_interval)},
        volcano_init_params=init_params,
        grace_over_time=s.grace_over_time,
        hot_reset=hot_reset,
        list_watch_period=s.list_watch_period,
        report_interval=s.report_interval,
        node_selector_master={C.NODE_LABEL_MASTER: C.NODE_LABEL_MASTER_VALUE},
        node_selector_worker={C.NODE_LABEL_WORKER: C.NODE_LABEL_WORKER_VALUE},
        resources={k: dict(v) for k, v in s.resources.items()},
        notes=notes,
    )


# --- nodes -------------------------------------------------------------------------------------------


def accelerator_label(chip: str) -> str:
    """Node label accelerator: huawei-Ascend910 for Atlas training, A2 and A3; huawei-npu for
    Atlas 350/850/950 (INST01 Table 1)."""
    return "huawei-npu" if chip == "ascend-npu" else "huawei-Ascend910"


def npu_resource(chip: str) -> str:
    """Extended resource name the pods request (YAMLCFG)."""
    return "huawei.com/npu" if chip == "ascend-npu" else "huawei.com/Ascend910"


def reserved_ports(profile: Profile, facts: List[JobFacts]) -> List[int]:
    choice = profile.cluster.reserve_taskd_ports
    wanted = choice if choice is not None else (profile.cluster.host_network and any(f.uses_taskd for f in facts))
    return [C.TASKD_MANAGER_PORT, C.TASKD_PROXY_PORT] if wanted else []


def _nodes(profile: Profile, facts: List[JobFacts]) -> NodePlan:
    cluster = profile.cluster
    labels = {
        C.NODE_LABEL_ROLE_WORKER: "worker",
        C.NODE_LABEL_WORKER: C.NODE_LABEL_WORKER_VALUE,
        C.NODE_LABEL_HOST_ARCH: C.HOST_ARCH_VALUES[cluster.arch],
        C.NODE_LABEL_ACCELERATOR: accelerator_label(cluster.chip),
        C.NODE_LABEL_ACCELERATOR_TYPE: cluster.accelerator_type,
        C.NODE_LABEL_NODED_ENABLE: "on",
    }
    users = [
        {
            "name": C.USER_HWHIAI,
            "uid": C.UID_HWHIAI,
            "gid": C.UID_HWHIAI,
            "where": "all",
            "source": "FAQ 337",
        },
        {
            "name": C.USER_HWMINDX,
            "uid": C.UID_HWMINDX,
            "gid": C.UID_HWMINDX,
            "where": "all",
            "groups": [C.USER_HWHIAI],
            "source": "INST01 Creating a User",
        },
    ]
    root = C.LOG_ROOT
    log_dirs = [{"path": root, "mode": "0755", "owner": "root", "where": "all"}]
    for name in ("devicePlugin", "npu-exporter", "noded"):
        log_dirs.append({"path": "%s/%s" % (root, name), "mode": "0750", "owner": "root", "where": "compute"})
    for name in ("ascend-operator", "clusterd", "volcano-controller", "volcano-scheduler"):
        log_dirs.append(
            {"path": "%s/%s" % (root, name), "mode": "0750", "owner": C.USER_HWMINDX, "where": "management"}
        )
    mounts = []
    if profile.storage.nfs is not None:
        mounts.append(
            {
                "src": "%s:%s" % (profile.storage.nfs.server, profile.storage.nfs.path),
                "path": C.RANKTABLE_HOST_ROOT,
                "subdir": "ranktable",
                "fstype": "nfs",
                "where": "all",
                "reason": "the operator writes hccl.json under %s; training nodes read it" % C.RANKTABLE_HOST_ROOT,
            }
        )
    ranktable_dirs = [
        "%s/%s.%s" % (C.RANKTABLE_HOST_ROOT, f.job.namespace, f.job.name) for f in facts if f.job.ranktable
    ]
    notes = [Note("HwHiAiUser must have uid/gid 1000 on every host and in every image", "FAQ 337")]
    if any(f.pod_level for f in facts):
        notes.append(Note("raise ulimit -n to %d for Pod-level rescheduling" % NOFILE_POD_LEVEL, "RT01"))
    if any(f.process_level or f.graceful for f in facts):
        notes.append(Note("keep master and worker clocks in sync", "RT07 Adaptation Example note"))
    return NodePlan(
        labels=labels,
        master_labels={C.NODE_LABEL_MASTER: C.NODE_LABEL_MASTER_VALUE},
        users=users,
        log_dirs=log_dirs,
        reserved_ports=reserved_ports(profile, facts),
        shared_mounts=mounts,
        ranktable_dirs=ranktable_dirs,
        nofile_limit=NOFILE_POD_LEVEL if any(f.pod_level for f in facts) else None,
        notes=notes,
        hdk=cluster.hdk,
        chip=cluster.chip,
        accelerator_type=cluster.accelerator_type,
        arch=cluster.arch,
    )


# --- shared storage ------------------------------------------------------------------------------------


def _storage(profile: Profile, facts: List[JobFacts]) -> List[SharedVolumePlan]:
    s = profile.storage
    if s.nfs is None and s.storage_class is None:
        return []
    kind = "nfs" if s.nfs is not None else "storage_class"
    base = profile.cluster.name

    def vol(purpose: str, sub: str, mount: str, size: str) -> SharedVolumePlan:
        return SharedVolumePlan(
            name="%s-%s" % (base, sub),
            purpose=purpose,
            mount_path=mount,
            storage=kind,
            server=s.nfs.server if s.nfs is not None else None,
            path=("%s/%s" % (s.nfs.path.rstrip("/"), sub)) if s.nfs is not None else None,
            storage_class=s.storage_class,
            size=size,
        )

    out: List[SharedVolumePlan] = []
    cache_paths = sorted({f.job.compile.cache_path for f in facts if f.job.compile.mode == "cache"})
    for i, path in enumerate(cache_paths):
        out.append(
            vol(
                "operator compile cache (ASCEND_CACHE_PATH)",
                "op-cache" + ("-%d" % i if i else ""),
                path,
                s.cache_size,
            )
        )
    ckpt_paths = sorted({f.job.checkpoint.path for f in facts})
    for i, path in enumerate(ckpt_paths):
        out.append(vol("checkpoints", "checkpoints" + ("-%d" % i if i else ""), path, s.checkpoint_size))
    return out


# --- jobs ---------------------------------------------------------------------------------------------


def _job_labels(f: JobFacts) -> Dict[str, str]:
    job = f.job
    r = job.recovery
    labels = {C.LABEL_FRAMEWORK: f.framework, C.LABEL_RING_CONTROLLER: f.cluster.chip}
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


def _job_annotations(f: JobFacts) -> Dict[str, str]:
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


def taskd_process_enable(f: JobFacts) -> Optional[str]:
    """TASKD_PROCESS_ENABLE as the release reads it: 7.2.RC1 turns process features on only with
    `on`; 7.3.0 has them on by default and documents `off` for Pod-level-only jobs (RT04)."""
    if not f.uses_taskd or not f.at_least(R.OPERATOR_INJECTS_RECOVERY_ENV):
        return None
    chosen = f.job.recovery.taskd_process_enable
    if chosen != "auto":
        return chosen
    return "on" if (f.process_level or f.hot_switch) else "off"


def _recovery_env(f: JobFacts) -> List[EnvVar]:
    """Recovery variables. From 7.2.RC1 the operator injects them from recover-strategy (RT04 Table
    3); before that the job must carry them itself. HCCL_ASYNC_ERROR_HANDLING is always explicit."""
    env: List[EnvVar] = []
    injected = f.at_least(R.OPERATOR_INJECTS_RECOVERY_ENV)
    if f.is_pytorch:
        if not f.watchdog_on:
            env.append(EnvVar(C.ENV_HCCL_ASYNC_ERROR_HANDLING, "0", reason="watchdog off (seed 表1; RT04 Table 3)"))
        elif f.job.recovery.watchdog == "on":
            env.append(EnvVar(C.ENV_HCCL_ASYNC_ERROR_HANDLING, "1", reason="watchdog on (seed 表1)"))
        if f.job_level or f.pod_level:
            env.append(EnvVar(C.ENV_RESUME_MODE_ENABLE, "1", reason="resume from checkpoint (seed 表1 script)"))
    elif not f.watchdog_on:
        env.append(EnvVar(C.ENV_MS_ENABLE_THM, "{HCCL_WATCHDOG:0}", reason="MindSpore watchdog off (RT04)"))
    if f.process_level and not injected:
        env.append(EnvVar(C.ENV_PROCESS_RECOVER, "on", reason="process-level recovery before 7.2 (HA70-076)"))
        if any(s in f.strategies for s in ("recover", "recover-in-place", "retry")):
            env.append(EnvVar(C.ENV_ELASTIC_PROCESS_RECOVER_ENABLE, "1", reason="before 7.2 (HA70-076)"))
        if "recover-in-place" in f.strategies:
            env.append(
                EnvVar(C.ENV_ENABLE_RESTART_FAULT_PROCESS, "on", reason="recover-in-place before 7.2 (HA71-025)")
            )
    value = taskd_process_enable(f)
    if value is not None:
        env.append(EnvVar(C.ENV_TASKD_PROCESS_ENABLE, value, reason="TaskD process features (RT04)"))
    if "elastic-training" in f.strategies and "recover" not in f.strategies:
        env.append(EnvVar(C.ENV_MINDIO_WAIT_MINDX_TIME, MINDIO_WAIT_ELASTIC, reason="elastic only (RT04)"))
    return env


def _container_env(f: JobFacts) -> List[EnvVar]:
    job = f.job
    env: List[EnvVar] = []
    mindio = job.image.mindio_ttp is not None and (f.process_level or f.hot_switch)
    if f.uses_taskd or mindio:
        env.append(EnvVar(C.ENV_POD_IP, field_path="status.podIP", reason="TaskD/MindIO address (YAMLCFG)"))
    env.append(EnvVar(C.ENV_XDL_IP, field_path="status.hostIP", reason="host address (YAMLCFG)"))
    if f.cluster.host_network:
        env.append(EnvVar(C.ENV_HCCL_IF_IP, field_path="status.hostIP", reason="hostNetwork (YAMLCFG)"))
    if (mindio or "dump" in f.strategies) and job.recovery.ttp_port is not None:
        env.append(EnvVar(C.ENV_TTP_PORT, str(job.recovery.ttp_port), reason="MindIO TTP controller (RT06)"))
    env.extend(_recovery_env(f))
    if job.compile.mode == "cache":
        env.append(EnvVar(C.ENV_ASCEND_CACHE_PATH, job.compile.cache_path, reason="shared compile cache (seed 表10)"))
        size = job.compile.max_op_cache_size if job.compile.max_op_cache_size is not None else -1
        env.append(EnvVar(C.ENV_ASCEND_MAX_OP_CACHE_SIZE, str(size), reason="shared storage (seed 表10)"))
    if job.compile.mindspore_graph_cache and not f.is_pytorch:
        env.append(EnvVar(C.ENV_MS_COMPILER_CACHE_ENABLE, "1", reason="MindSpore graph cache (RT05)"))
        env.append(EnvVar(C.ENV_MS_COMPILER_CACHE_PATH, job.compile.cache_path + "/ms", reason="RT05"))
    if job.hccl.connect_timeout is not None:
        env.append(EnvVar(C.ENV_HCCL_CONNECT_TIMEOUT, str(job.hccl.connect_timeout), reason="profile"))
    if job.hccl.exec_timeout is not None:
        env.append(EnvVar(C.ENV_HCCL_EXEC_TIMEOUT, str(job.hccl.exec_timeout), reason="profile"))
    if job.ranktable:
        env.append(
            EnvVar(
                C.ENV_RANK_TABLE_FILE,
                C.RANKTABLE_MOUNT + "/hccl.json",
                reason="RankTable mode (RT05 Table 4)",
            )
        )
    owned = {e.name for e in env}
    for name in sorted(job.env):
        if name not in owned:
            env.append(EnvVar(name, job.env[name], reason="profile env"))
    return env


def _ports(f: JobFacts) -> List[Port]:
    job = f.job
    ports = [Port(C.ASCENDJOB_PORT_NAME, C.ASCENDJOB_PORT_DEFAULT, reason="MASTER_PORT / MS_SCHED_PORT (YAMLCFG)")]
    if f.uses_taskd:
        ports.append(Port(C.TASKD_PORT_NAME, C.TASKD_MANAGER_PORT, reason="TaskD Manager, on every pod (RT04)"))
    if ("dump" in f.strategies or f.process_level) and job.recovery.ttp_port is not None:
        ports.append(Port(C.TTP_PORT_NAME, job.recovery.ttp_port, reason="MindIO TTP controller (RT05)"))
    return ports


def _replicas(f: JobFacts, env: List[EnvVar], ports: List[Port]) -> List[ReplicaPlan]:
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
            ports=list(ports),
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


def _volumes(f: JobFacts, storage: List[SharedVolumePlan]) -> List[Volume]:
    job = f.job
    vols = [Volume("shm", "/dev/shm", "empty_dir_memory", size_limit=SHM_SIZE, reason="RT06 step 5")]
    by_path = {v.mount_path: v for v in storage}
    if job.compile.mode == "cache" and job.compile.cache_path in by_path:
        v = by_path[job.compile.cache_path]
        vols.append(Volume("op-cache", v.mount_path, "pvc", claim_name=v.name, reason="ASCEND_CACHE_PATH (seed 表10)"))
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


def _image(f: JobFacts) -> ImagePlan:
    job = f.job
    img = job.image
    wheels: List[str] = []
    lines: List[str] = []
    notes: List[Note] = []
    if img.taskd is not None and f.uses_taskd:
        wheels.append("taskd==%s" % img.taskd)
    if img.mindx_elastic is not None and f.uses_mindx_elastic:
        wheels.append("mindx-elastic==%s" % img.mindx_elastic)
    if img.mindio_ttp is not None and (f.process_level or f.hot_switch or f.uses_mindx_elastic):
        wheels.append("mindio_ttp==%s" % img.mindio_ttp)
    if img.mindio_acp is not None and job.checkpoint.mindio_acp:
        wheels.append("mindio_acp==%s" % img.mindio_acp)
    for w in wheels:
        lines.append("RUN pip3 install %s" % w)
    patch: Optional[str] = None
    anchor: Optional[str] = None
    if f.is_pytorch and f.uses_mindx_elastic:
        patch, anchor = C.RUNPY_IMPORT_MINDX_ELASTIC, "import logging"
    elif f.is_pytorch and f.uses_taskd and f.at_least(R.TASKD_RUNPY_PATCH):
        patch, anchor = C.RUNPY_IMPORT_TASKD, "import os"
    if patch is not None and anchor is not None:
        lines.append(
            "RUN sed -i '/%s/i %s' $(pip3 show torch | grep Location | awk '{print $2}')/torch/distributed/run.py"
            % (anchor, patch)
        )
    if patch == C.RUNPY_IMPORT_MINDX_ELASTIC:
        notes.append(Note("run.py is patched by the Elastic Agent up to 7.2", "seed 恢复时间优化 表2 Dockerfile"))
    elif patch == C.RUNPY_IMPORT_TASKD:
        notes.append(Note("run.py is patched by TaskD from 7.3.0", "seed 配置进程级别重调度 构建镜像"))
    torch = f.torch
    if (
        f.is_pytorch
        and torch is not None
        and torch >= Version(R.PREFIX_STORE_TORCH)
        and f.release.major_minor == (7, 2)
    ):
        notes.append(
            Note(
                "torch %s on 7.2: wrap the c10d rendezvous store in PrefixStore('/worker/attempt_<restart>') "
                "(patch torch/distributed/elastic/rendezvous as the 7.2 guide shows); 7.3 TaskD does it itself" % torch,
                "HA72-075; taskd torch_patch.py",
            )
        )
    return ImagePlan(
        base=img.base,
        framework=f.framework,
        wheels=wheels,
        runpy_patch=patch,
        runpy_anchor=anchor,
        dockerfile=lines,
        notes=notes,
    )


def _launcher(f: JobFacts) -> LauncherPlan:
    job = f.job
    r = job.recovery
    notes: List[Note] = []
    env: List[EnvVar] = []
    preload: List[str] = []
    if f.uses_taskd:
        preload.append("<site-packages>/" + C.LIBTASKD_RELATIVE)
        notes.append(
            Note(
                "LD_PRELOAD gets libtaskd.so from the installed taskd package (pip show taskd Location)",
                "seed 配置进程级别重调度 适配训练脚本",
            )
        )
        env.append(EnvVar(C.ENV_TASKD_LOG_PATH, "/job/code/alllogs/$(MINDX_TASK_ID)/taskd", reason="ENV Table 5"))
    if job.launcher == "msrun":
        args = [
            "--worker_num=%d" % (job.nodes * job.npus_per_node),
            "--local_worker_num=%d" % job.npus_per_node,
            "--master_addr=$MS_SCHED_HOST",
            "--master_port=$MS_SCHED_PORT",
            "--node_rank=$MS_NODE_RANK",
            "--join=True",
        ]
    else:
        args = [
            "--nproc_per_node=%d" % job.npus_per_node,
            "--nnodes=%d" % job.nodes,
            "--node_rank=$RANK",
            "--master_addr=$MASTER_ADDR",
            "--master_port=$MASTER_PORT",
        ]
        if r.max_restarts is not None:
            args.append("--max_restarts=%d" % r.max_restarts)
        if r.monitor_interval is not None:
            args.append("--monitor_interval=%d" % r.monitor_interval)
    args.append(job.script)
    args.extend(job.script_args)
    where = f.taskd_manager_where
    condition = {
        "rank0": '[[ "${RANK}" == 0 ]]',
        "scheduler": '[[ "${MS_SCHED_HOST}" == "${POD_IP}" ]]',
        "none": "false",
    }[where]
    manager = TaskdManagerPlan(
        enabled=where != "none",
        where=where,
        condition=condition,
        job_id_env=C.ENV_MINDX_TASK_ID,
        node_nums=job.nodes,
        proc_per_node=job.npus_per_node,
        process_enable=taskd_process_enable(f),
    )
    if where == "rank0":
        notes.append(Note("rank 0 exports MASTER_ADDR=$POD_IP before starting the TaskD Manager", "seed; RT04"))
    jit: Optional[bool] = {"binaries": False, "cache": True}.get(job.compile.mode)
    if jit is not None:
        notes.append(Note("torch.npu.set_compile_mode(jit_compile=%s)" % jit, "seed 恢复时间优化 表9/表10"))
    return LauncherPlan(
        launcher=job.launcher,
        args=args,
        env=env,
        ld_preload=preload,
        taskd_manager=manager,
        compile_mode=job.compile.mode,
        jit_compile=jit,
        notes=notes,
    )


def _job(profile: Profile, f: JobFacts, storage: List[SharedVolumePlan]) -> JobPlan:
    job: Job = f.job
    env = _container_env(f)
    ports = _ports(f)
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
    if job.recovery.watchdog == "auto" and not f.watchdog_on:
        reason = (
            "a process-level strategy is used"
            if (f.process_level or f.hot_switch)
            else ("the image's software does not support it")
        )
        notes.append(Note("watchdog off because %s" % reason, "seed 恢复时间优化 表1; RT04 Table 3"))
    if f.process_level or f.pod_level:
        notes.append(Note("a fault on the rank-0 pod escalates to job-level rescheduling", "K8S Table 6; RT01"))
    return JobPlan(
        name=job.name,
        namespace=job.namespace,
        kind="AscendJob" if job.kind == "ascendjob" else "Job",
        framework=f.framework,
        levels=ladder(f),
        strategies=list(f.strategies),
        labels=_job_labels(f),
        annotations=_job_annotations(f),
        replicas=_replicas(f, env, ports),
        volumes=_volumes(f, storage),
        image=_image(f),
        launcher=_launcher(f),
        budget=budget(f, job),
        notes=notes,
    )
