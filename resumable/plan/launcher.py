"""The launcher part of the plan: what ``resumable launch`` runs inside the training container."""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

from .. import constants as C
from ..envderived import mindio_ttp_port, taskd_process_enable
from ..facts import JobFacts, torch_monitor_default
from .model import (
    BudgetLine,
    EnvVar,
    LauncherPlan,
    LaunchOptions,
    MsrunOptions,
    Note,
    TaskdManagerPlan,
    TorchrunOptions,
)

#: The shell test PLR's train_start.sh uses to start the TaskD Manager on one pod only
#: (PLR 适配训练脚本).
MANAGER_CONDITIONS: Dict[str, str] = {
    "rank0": '[[ "${RANK}" == 0 ]]',
    "scheduler": '[[ "${MS_SCHED_HOST}" == "${POD_IP}" ]]',
    "none": "false",
}


def job_log_dir(f: JobFacts, root: str) -> str:
    """The job-scoped log directory under ``root`` (Kubernetes ``$(VAR)`` syntax; ``resumable launch``
    expands it): one per job run by the job UID the Ascend Operator injects as MINDX_TASK_ID
    (ascend-operator env.go setCommonEnv); a Volcano Job gets no such id, so its directory is named
    after the job."""
    key = C.ENV_MINDX_TASK_ID if f.job.kind == "ascendjob" else C.ENV_RESUMABLE_JOB
    return "%s/$(%s)" % (root, key)


def hang_timeout(f: JobFacts) -> Tuple[int, Note]:
    """Seconds without a heartbeat before the launcher takes a training process for hung, and why.

    The profile's ``recovery.hang_timeout`` when set. Otherwise the larger of the floor
    (C.HANG_FLOOR_SECONDS: a healthy process on a loaded node, importing torch or starved of CPU, must
    never look hung) and three agent monitor intervals (the agent's own tick, :func:`resumable.facts.monitor_tick`),
    each counted as at least 1 s, so the floor decides for any interval up to 20 s.

    It should stay below the collective timeout (HCCL_EXEC_TIMEOUT, CANN's 1836 s when unset, 0 =
    never): the hung rank's peers wait in a collective, and when their timeout ends the job first the
    healthy peer is the one that fails; the floor is kept even then, and the note says so."""
    job = f.job
    r = job.recovery
    execute = job.hccl.exec_timeout if job.hccl.exec_timeout is not None else C.HCCL_EXEC_TIMEOUT_DEFAULT
    if r.hang_timeout is not None:
        seconds = r.hang_timeout
        why = "recovery.hang_timeout"
    else:
        tick = f.monitor.seconds if f.job.launcher != "msrun" else 1.0
        seconds = max(C.HANG_FLOOR_SECONDS, math.ceil(C.HANG_MONITOR_TICKS * max(1.0, tick)))
        why = "the larger of %d s and %d x the monitor interval (%g s, counted as at least 1 s)" % (
            C.HANG_FLOOR_SECONDS,
            C.HANG_MONITOR_TICKS,
            tick,
        )
    text = (
        "a training process without a heartbeat for %d s (%s; one every %g s from the start-up hook) is "
        "recorded as hung and killed, so the agent's recovery takes over" % (seconds, why, C.HEARTBEAT_SECONDS)
    )
    if 0 < execute <= seconds:
        text += (
            "; HCCL_EXEC_TIMEOUT %d s ends the peers' collective first, so a hang shows as their fault: set "
            "recovery.hang_timeout below it" % execute
        )
    return seconds, Note(text, "PROJECT; HA-CANN-EXEC; MC:component/taskd/taskd/python/adaptor/patch/torch_patch.py")


def monitor_note(f: JobFacts) -> Note:
    """How often the agent looks at the training processes, and why the plan leaves it there: where torchrun's
    loop runs, --monitor_interval unset (torchrun's own default, 0.1 s from torch 2.4: a plan-chosen value
    could only be slower, benchmarks/recovery_cpu.py); where TaskD's loop runs, its fixed 1 s (it reads no
    option). Rule monitor-interval warns where the profile sets a slower one or one that is not read."""
    tick = f.monitor
    r = f.job.recovery
    if not tick.reads_option:
        default, basis = torch_monitor_default(f.torch)
        text = (
            "the agent looks at the training processes every %g s: %s; torchrun's own loop would look every %g s "
            "(%s), but no setting changes TaskD's" % (tick.seconds, tick.what, default, basis)
        )
        if r.monitor_interval is not None:
            text += "; --monitor_interval=%g is passed as the profile asks but not read" % r.monitor_interval
        return Note(text, tick.source)
    if r.monitor_interval is None:
        return Note(
            "--monitor_interval left unset, so %s looks at the training processes (RTO 表2's %d s is older torch's "
            "default); the plan passes no value of its own, which could only make detection slower"
            % (tick.what, C.MONITOR_INTERVAL_DEFAULT),
            "%s; RTO 表2" % tick.source,
        )
    return Note("--monitor_interval=%g: %s" % (r.monitor_interval, tick.what), tick.source)


def start_timeout(f: JobFacts, ladder: Sequence[BudgetLine]) -> Tuple[int, Note]:
    """Seconds from a training process's start through its process group's initialisation, and from
    a fault to the new processes of its recovery, before the launcher takes them for hung, and why.

    The profile's ``recovery.start_timeout`` when set. Otherwise the larger of the floor
    (C.START_FLOOR_SECONDS) and the slowest rung's rescheduling and communication init in the budget
    (T1 + T2): a recovery that waits for a replaced pod (ClusterD, the scheduler, the pod's start) is
    within it, one that waits for a peer that never comes is not (issue 27)."""
    r = f.job.recovery
    if r.start_timeout is not None:
        seconds, why = r.start_timeout, "recovery.start_timeout"
    else:
        slowest = max(
            (sum(t.seconds for t in line.terms if t.name in ("T1 reschedule", "T2 comm init")) for line in ladder),
            default=0.0,
        )
        seconds = max(C.START_FLOOR_SECONDS, math.ceil(slowest))
        why = "the larger of %d s and the slowest rung's T1 reschedule + T2 comm init (%.0f s)" % (
            C.START_FLOOR_SECONDS,
            slowest,
        )
    text = (
        "a training process that has not initialised its process group %d s after it started (once a peer of "
        "its generation has begun to), and a recovery whose new processes have not started %d s after the "
        "fault, are taken for hung (%s): the process is killed so that the agent recovers it, the recovery "
        "stopped so that the next rung takes over" % (seconds, seconds, why)
    )
    return seconds, Note(text, "PROJECT (docs/runtime.md, no restart ends in silence)")


def warm_note(f: JobFacts) -> Optional[Note]:
    if not f.job.recovery.warm_workers:
        return None
    return Note(
        "warm workers: the start-up hook in torchrun's agent keeps a process that has imported torch%s and "
        "forks the training processes of each restart from it (the first start is a fresh interpreter); "
        "turned off with a warning where the import initialises a device"
        % (" and torch_npu" if f.job.image.torch_npu else ""),
        "PROJECT (docs/runtime.md, warm workers)",
    )


def build_launcher(
    f: JobFacts,
    log_root: str = C.JOB_LOG_ROOT,
    ladder: Sequence[BudgetLine] = (),
    operator_set: Sequence[EnvVar] = (),
) -> LauncherPlan:
    """``operator_set``: the container env the pod template leaves to the Ascend Operator (it
    injects the same values, plan.env); the launcher sets them, so a pod no operator made has them too."""
    job = f.job
    r = job.recovery
    notes: List[Note] = []
    log_dir = job_log_dir(f, log_root)
    env: List[EnvVar] = [
        EnvVar(e.name, e.value, e.field_path, "%s; the Ascend Operator injects the same into the pod" % e.reason)
        for e in operator_set
    ]
    preload: List[str] = []
    if f.uses_taskd:
        preload.append("<site-packages>/" + C.LIBTASKD_RELATIVE)
        notes.append(
            Note(
                "LD_PRELOAD gets libtaskd.so from the installed taskd package (pip show taskd Location)",
                "PLR 适配训练脚本",
            )
        )
        if C.ENV_TASKD_LOG_PATH not in job.env:  # the profile's own value wins (it is in the container env)
            env.append(
                EnvVar(
                    C.ENV_TASKD_LOG_PATH,
                    log_dir + "/taskd",
                    reason="ENV Table 5; created mode 0750 by resumable launch (taskd utils/log/logger.py)",
                )
            )
    config: LaunchOptions
    if job.launcher == "msrun":
        config = MsrunOptions(worker_num=job.nodes * job.npus_per_node, local_worker_num=job.npus_per_node)
    else:
        max_restarts = r.max_restarts
        if max_restarts is None and (f.uses_taskd or f.uses_mindx_elastic):
            max_restarts = C.MAX_RESTARTS_UNDER_AGENT
            notes.append(Note("--max_restarts=%d: the default under the in-container agent" % max_restarts, "RTO 表2"))
        notes.append(monitor_note(f))
        config = TorchrunOptions(
            nproc_per_node=job.npus_per_node,
            nnodes=job.nodes,
            max_restarts=max_restarts,
            monitor_interval=r.monitor_interval,
        )
    where = f.taskd_manager_where
    manager = TaskdManagerPlan(
        enabled=where != "none",
        where=where,
        condition=MANAGER_CONDITIONS[where],
        job_id_env=C.ENV_MINDX_TASK_ID,
        node_nums=job.nodes,
        proc_per_node=job.npus_per_node,
        process_enable=taskd_process_enable(f),
    )
    if where == "rank0":
        notes.append(
            Note("rank 0 exports MASTER_ADDR=$POD_IP before starting the TaskD Manager", "PLR 适配训练脚本; RT04")
        )
    # torch >= 2.6 keeps one TCPStore for all restarts of a static rendezvous ("We create a new TCPStore
    # for every retry so no need to add prefix", rendezvous.py), so restarted workers read the old
    # attempt's addresses and fail to connect; MindCluster 7.2 edits rendezvous.py, TaskD 7.3 patches it
    # (in the agent only). Whether the torch that runs needs it is decided where it runs (the start-up
    # hook reads its version): the profile's torch version is a declaration, and a wrong or missing one
    # made every restart a race against the previous attempt's keys (issue 27).
    attempt_store = job.launcher != "msrun"
    if attempt_store:
        notes.append(
            Note(
                "the workers of each restart use PrefixStore('%s<n>') on the agent's store where the torch that "
                "runs reuses that store across restarts (torch >= 2.6; older torch adds the prefix itself)"
                % C.ATTEMPT_STORE_PREFIX,
                "HA72-075; TORCH rendezvous.py _create_c10d_store, static_tcp_rendezvous.py next_rendezvous; "
                "MC:component/taskd/taskd/python/adaptor/patch/torch_patch.py",
            )
        )
    hang_seconds, hang_note = hang_timeout(f)
    notes.append(hang_note)
    start_seconds, start_note = start_timeout(f, ladder)
    notes.append(start_note)
    warm = warm_note(f)
    if warm is not None:
        notes.append(warm)
    jit: Optional[bool] = {"binaries": False, "cache": True}.get(job.compile.mode)
    call: Optional[str] = None
    if jit is not None:
        if f.is_pytorch:
            call = "torch.npu.set_compile_mode(jit_compile=%s)" % jit
            notes.append(Note(call, "RTO 表9/表10"))
        else:
            call = "mindspore.device_context.ascend.op_tuning.op_compile(%s)" % jit
            notes.append(Note("%s, MindSpore's equivalent of torch.npu.set_compile_mode" % call, "MS-OPCOMPILE"))
    return LauncherPlan(
        launcher=job.launcher,
        config=config,
        env=env,
        ld_preload=preload,
        taskd_manager=manager,
        compile_mode=job.compile.mode,
        jit_compile=jit,
        compile_call=call,
        notes=notes,
        script=job.script,
        script_args=list(job.script_args),
        log_dir=log_dir + "/resumable",
        attempt_store_prefix=attempt_store,
        ttp_port=mindio_ttp_port(f),
        nodes=job.nodes,
        hang_timeout=hang_seconds,
        heartbeat_seconds=C.HEARTBEAT_SECONDS,
        start_timeout=start_seconds,
        warm_workers=job.recovery.warm_workers,
    )
