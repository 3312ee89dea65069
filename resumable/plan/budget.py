"""Recovery-time budget: MindCluster's own decomposition of the time lost per fault.

RT00 "Performance Description": loss per fault T = T0 (rollback, about half the checkpoint
interval) + T1 (rescheduling) + T2 (collective-communication init) + T3 (checkpoint load) +
T4 (operator compilation). Fault detection comes first and is shown as its own term, since the
watchdog exists to shorten it. Each term carries the assumption behind its number and where the
number comes from; where no figure is published the term says so and names the profile field that
overrides it.
"""

from __future__ import annotations

import dataclasses
from typing import List

from .. import constants as C
from .. import releases as R
from ..facts import JobFacts
from ..profile import Job
from .model import BudgetLine, BudgetPlan, BudgetTerm, Note

#: The collective timeout a fault waits for without the watchdog (RTO 故障检测时间优化: 通常默认为30分钟).
COLLECTIVE_TIMEOUT = 1800.0
#: With watchdog and unconditional retry the job exits within 6 minutes (RT01).
WATCHDOG_EXIT = 360.0
#: Detection by device plugin / NodeD and ClusterD: under 5 s (RT00 recovery reference).
AGENT_DETECT = 5.0
#: Fault handling by ClusterD and the scheduler: under 30 s (RT00 recovery reference).
HANDLE = 30.0
#: Volcano schedules a 4000-5000 pod job in about 5 minutes once tuned (INST05).
SCHEDULE_PODS, SCHEDULE_SECONDS = 4500.0, 300.0
#: Checkpoint load of a 15B model from NFS at 4.8 GB/s read: about 90 s (RT00).
DEFAULT_CKPT_LOAD = 90.0
#: Share of the cold compile time left with a warm compile cache: no published figure (assumption).
CACHE_SHARE = 0.2
#: Comm-init estimate when no measurement is given (assumption, no published per-scale figure).
COMM_INIT_BASE, COMM_INIT_PER_NODE = 20.0, 0.1


def _schedule(pods: int) -> float:
    return SCHEDULE_SECONDS * pods / SCHEDULE_PODS


def _agent_detect(f: JobFacts, what: str, source: str) -> BudgetTerm:
    """Detection where the in-container agent watches the training processes. torchrun's agent looks at
    its workers once per monitor interval (TORCH elastic/agent/server/api.py _invoke_run), so a failed
    process is seen between 0 and one interval after the fault: the term is the interval, the most it
    takes: the profile's monitor_interval; unset, torchrun's own default (0.1 s in torch 2.13, 5 s in older
    torch), counted as its upper bound, the 5 s RTO 表2 gives (C.MONITOR_INTERVAL_DEFAULT)."""
    job = f.job
    if job.launcher == "msrun":
        return BudgetTerm("detect", AGENT_DETECT, what, source)
    interval = job.recovery.monitor_interval
    if interval is not None:
        return BudgetTerm(
            "detect",
            float(interval),
            "%s; the agent sees a failed process within recovery.monitor_interval (%d s)" % (what, interval),
            source + "; RTO 表2 (--monitor_interval); TORCH elastic agent monitor loop",
        )
    return BudgetTerm(
        "detect",
        float(C.MONITOR_INTERVAL_DEFAULT),
        "%s; the agent sees a failed process within torchrun's default monitor interval (at most %d s)"
        % (what, C.MONITOR_INTERVAL_DEFAULT),
        source + "; RTO 表2 (monitor_interval default 5 s); TORCH elastic agent monitor loop",
    )


def _detect(f: JobFacts, level: str) -> BudgetTerm:
    if level in ("retry", "recover-in-place", "recover", "elastic-training", "dump", "pod"):
        return _agent_detect(
            f,
            "the device plugin, NodeD and the in-container agent report the fault",
            "RT00 Training Recovery Duration Reference (detect < 5 s)",
        )
    if level == "job" and (f.process_level or f.pod_level):
        return _agent_detect(
            f,
            "a lower level already detected the fault and escalated it",
            "RT01 Fault Decision Description (fallback chain)",
        )
    if f.watchdog_on:
        return BudgetTerm("detect", WATCHDOG_EXIT, "the watchdog ends the processes", "RT01 (job exits within 6 min)")
    if f.watchdog_on is None:
        return BudgetTerm(
            "detect",
            COLLECTIVE_TIMEOUT,
            "whether the image has the watchdog is unknown (rule watchdog-unknown): the collective timeout is assumed",
            "RTO 故障检测时间优化 (30 min default)",
        )
    return BudgetTerm(
        "detect",
        COLLECTIVE_TIMEOUT,
        "a parameter-plane fault waits for the collective timeout",
        "RTO 故障检测时间优化 (30 min default)",
    )


def _rollback(f: JobFacts, level: str) -> BudgetTerm:
    job = f.job
    if level in ("retry", "recover-in-place", "recover", "elastic-training"):
        return BudgetTerm(
            "T0 rollback",
            job.budget.step_seconds,
            "the current step is redone; parameters come from optimizer replicas",
            "RT01 process-level rescheduling / online recovery",
        )
    if level == "dump":
        return BudgetTerm(
            "T0 rollback",
            job.budget.step_seconds,
            "the dying-gasp checkpoint loses less than one step",
            "RT01; TFT 02",
        )
    return BudgetTerm(
        "T0 rollback",
        job.checkpoint.interval_minutes * 60.0 / 2.0,
        "half of checkpoint.interval_minutes on average",
        "RT00 Performance Description (T0 = interval / 2)",
    )


def _reschedule(f: JobFacts, level: str) -> BudgetTerm:
    job = f.job
    start = job.budget.pod_start_seconds
    if level in ("retry", "recover-in-place"):
        return BudgetTerm("T1 reschedule", 0.0, "no pod is replaced", "RT01 (in-place / online recovery)")
    if level in ("recover", "pod", "dump"):
        return BudgetTerm(
            "T1 reschedule",
            HANDLE + _schedule(1) + start,
            "one pod is replaced: handling + scheduling + budget.pod_start_seconds",
            "RT00 (handle < 30 s); INST05 (scheduling); PROFILE budget.pod_start_seconds",
        )
    if level == "elastic-training":
        return BudgetTerm(
            "T1 reschedule",
            HANDLE,
            "no replacement: the job continues without the faulty replica",
            "RT01 elastic training",
        )
    return BudgetTerm(
        "T1 reschedule",
        HANDLE + _schedule(job.nodes) + start,
        "all %d pods are deleted, scheduled again (about 5 min per 4500 pods) and started" % job.nodes,
        "RT00; INST05 (4-5k pods in about 5 min); PROFILE budget.pod_start_seconds",
    )


def _comm_init(f: JobFacts, level: str) -> BudgetTerm:
    job = f.job
    if level == "retry":
        return BudgetTerm("T2 comm init", 0.0, "communicators stay up", "RT01 online recovery")
    measured = job.budget.comm_init_seconds
    value = measured if measured is not None else COMM_INIT_BASE + COMM_INIT_PER_NODE * job.nodes
    how = "budget.comm_init_seconds" if measured is not None else "estimate (no published per-scale figure)"
    what = (
        "communication groups are rebuilt"
        if level in ("recover-in-place", "recover", "elastic-training")
        else ("every rank initialises HCCL again")
    )
    source = "RT05 Tables 2-4 (what shortens it)" + (
        "; PROFILE budget.comm_init_seconds" if measured is not None else "; PROJECT (estimate)"
    )
    return BudgetTerm("T2 comm init", value, "%s; %s" % (what, how), source)


def _ckpt_load(f: JobFacts, level: str) -> BudgetTerm:
    job = f.job
    if level in ("retry", "recover-in-place", "recover", "elastic-training"):
        return BudgetTerm(
            "T3 ckpt load",
            0.0,
            "parameters are copied from replica ranks over HCCL, not read from storage (assumption: counted in T2)",
            "RT05 parameter-plane restore",
        )
    load = job.checkpoint.load_seconds
    value = load if load is not None else DEFAULT_CKPT_LOAD
    how = "checkpoint.load_seconds" if load is not None else "15B model from NFS, about 90 s"
    return BudgetTerm("T3 ckpt load", value, how, "RT00 Training Recovery Duration Reference")


def _compile(f: JobFacts, level: str, mode: str) -> BudgetTerm:
    job = f.job
    cold = job.budget.compile_seconds
    if level == "retry":
        return BudgetTerm("T4 compile", 0.0, "processes keep their compiled operators", "RT01 online recovery")
    if mode == "binaries":
        return BudgetTerm("T4 compile", 0.0, "pre-built operator binaries need no compilation", "RTO 表9")
    if mode == "cache":
        return BudgetTerm(
            "T4 compile",
            cold * CACHE_SHARE,
            "the shared compile cache is warm; %d%% of budget.compile_seconds (assumption, no published "
            "figure)" % int(CACHE_SHARE * 100),
            "RTO 表10; PROJECT (the share left with a warm cache)",
        )
    return BudgetTerm(
        "T4 compile", cold, "cold compilation (budget.compile_seconds)", "RT00; PROFILE budget.compile_seconds"
    )


def _line(f: JobFacts, level: str, mode: str) -> BudgetLine:
    terms = [
        _detect(f, level),
        _rollback(f, level),
        _reschedule(f, level),
        _comm_init(f, level),
        _ckpt_load(f, level),
        _compile(f, level, mode),
    ]
    return BudgetLine(level, terms, round(sum(t.seconds for t in terms), 1))


def ladder(f: JobFacts) -> List[str]:
    """The recovery levels in the order ClusterD tries them (RT01 Fault Decision Description;
    clusterd recover/controller.go firstChooseStrategy), restricted to what the job enables."""
    order = ["retry", "recover-in-place", "recover", "elastic-training", "dump", "exit"]
    levels = [s for s in order if s in f.strategies and s != "exit"]
    if f.pod_level:
        levels.append("pod")
    if f.job_level:
        levels.append("job")
    return levels


#: A rung saving less than this share of the next rung's time is worth a note (RT00: the loss per
#: fault is the sum of the terms; a level that leaves the largest term as it is changes little).
SMALL_SAVING = 0.05

#: What shortens each term, for the note (the sources of the terms themselves).
SHORTENS = {
    "detect": "turn the watchdog on (recovery.watchdog, RTO 表1) so a hung collective ends in minutes",
    "T0 rollback": "shorten checkpoint.interval_minutes (T0 is half of it, RT00), or enable a process-level "
    "strategy (recover, recover-in-place, retry), which redoes only the current step (RT01)",
    "T1 reschedule": "lower budget.pod_start_seconds (a smaller image, images pre-pulled on the nodes), or a "
    "level that replaces fewer pods",
    "T2 comm init": "shorten HCCL initialisation (RT05 Tables 2-4)",
    "T3 ckpt load": "load checkpoints from faster storage (checkpoint.load_seconds), or a process-level strategy "
    "that restores parameters from replica ranks (RT05)",
    "T4 compile": "set compile.mode: binaries or cache (RTO 表9/表10)",
}


def small_savings(lines: List[BudgetLine]) -> List[Note]:
    """A note for each rung that saves less than :data:`SMALL_SAVING` of the next rung's time:
    the term that dominates both, and what would shorten it."""
    notes: List[Note] = []
    for a, b in zip(lines, lines[1:]):
        saving = b.total_seconds - a.total_seconds
        if b.total_seconds <= 0 or saving >= SMALL_SAVING * b.total_seconds:
            continue
        top = max(a.terms, key=lambda t: t.seconds)
        notes.append(
            Note(
                "%s-level recovery (%.1f min) saves only %.0f s (%.1f%%) against %s-level (%.1f min): %s (%.1f min, "
                "%s) dominates both. To make the %s level worth it: %s"
                % (
                    a.level,
                    a.total_seconds / 60.0,
                    saving,
                    100.0 * saving / b.total_seconds,
                    b.level,
                    b.total_seconds / 60.0,
                    top.name,
                    top.seconds / 60.0,
                    top.assumption,
                    a.level,
                    SHORTENS.get(top.name, "shorten %s" % top.name),
                ),
                "RT00 Performance Description (T = T0 + T1 + T2 + T3 + T4); %s" % top.source,
            )
        )
    return notes


def hang_detection(f: JobFacts, hang_seconds: int) -> List[BudgetTerm]:
    """The paths that see a hung training (processes alive, no progress), fastest first: the heartbeat
    of ``resumable launch`` (plan.launcher.hang_timeout); from 26.1.0 the device plugin's hang detection
    (a check every 60 s, the fault after 5 hits in a row: 300 s, fault 200001002, NotHandleFault by
    default, so MindCluster acts on it only where faultCode.json gives it another level); the HCCL
    execution timeout when the collective itself hangs."""
    paths = [
        BudgetTerm(
            "detect-hang",
            float(hang_seconds),
            "resumable launch sees no heartbeat from a training process for recovery.hang_timeout and kills it; "
            "the agent's recovery takes over",
            "PROJECT (docs/runtime.md, hang detection)",
        )
    ]
    if R.at_least(f.release, R.HANG_DETECTION):
        paths.append(
            BudgetTerm(
                "detect-hang",
                float(R.HANG_CHECK_SECONDS * R.HANG_CHECK_HITS),
                "the device plugin's hang detection: a check every %d s, fault %s after %d hits in a row; it is "
                "NotHandleFault by default, so MindCluster reschedules on it only where faultCode.json "
                "(mindx-dl-fault-config) gives it another level"
                % (R.HANG_CHECK_SECONDS, R.HANG_FAULT_CODE, R.HANG_CHECK_HITS),
                R.HANG_DETECTION.source,
            )
        )
    exec_timeout = f.job.hccl.exec_timeout
    if exec_timeout:
        paths.append(
            BudgetTerm(
                "detect-hang",
                float(exec_timeout),
                "a hung collective ends at the HCCL execution timeout (hccl.exec_timeout)",
                "HA-CANN-EXEC",
            )
        )
    return sorted(paths, key=lambda t: t.seconds)


def warm_workers_note(f: JobFacts) -> List[Note]:
    """What warm workers change in the budget: no term of RT00's decomposition holds the new processes'
    start (a fresh interpreter importing the framework), so none shrinks; the note says where it shows."""
    if not f.job.recovery.warm_workers:
        return []
    return [
        Note(
            "warm workers (recovery.warm_workers): the processes of an in-container restart are forked from one "
            "that has imported the framework, so the import is not paid again; RT00's terms do not hold it, so "
            "the budget is unchanged; `resumable timeline` shows the import inside the phase 'new workers started "
            "-> process group ready' (on the CPU: benchmarks/recovery_cpu.py, docs/runtime.md)",
            "PROJECT (docs/runtime.md, warm workers)",
        )
    ]


def budget(f: JobFacts, job: Job, hang_seconds: int = C.HANG_FLOOR_SECONDS) -> BudgetPlan:
    levels = ladder(f) or ["job"]
    lines = [_line(f, level, job.compile.mode) for level in levels]
    # The baseline: job-level rescheduling with neither the watchdog nor compile help.
    base_facts = dataclasses.replace(f, watchdog_on=False, strategies=[], process_level=False, pod_level=False)
    baseline = _line(base_facts, "job", "default")
    totals = [line.total_seconds for line in lines]
    return BudgetPlan(
        ladder=lines,
        baseline=baseline,
        best_saving_seconds=round(baseline.total_seconds - min(totals), 1),
        worst_saving_seconds=round(baseline.total_seconds - max(totals), 1),
        notes=small_savings(lines) + warm_workers_note(f),
        hang_detection=hang_detection(f, hang_seconds),
    )
