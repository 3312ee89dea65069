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
from typing import Dict, List, Optional, Sequence, Tuple

from .. import constants as C
from .. import hardware as H
from .. import releases as R
from ..facts import JobFacts
from ..profile import Job
from ..versions import Version
from .model import BudgetLine, BudgetPlan, BudgetTerm, LevelShare, Note

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
    """Detection where the in-container agent watches the training processes: it looks at them once per
    monitor interval, so a failed process is seen between 0 and one interval after the fault; the term is
    the interval, the most it takes (:func:`resumable.facts.monitor_tick`): TaskD's own 1 s loop where its
    patch of torch elastic runs, else torchrun's loop at recovery.monitor_interval or, unset, at torchrun's
    own default for the image's torch (0.1 s from torch 2.4, 5 s before or when torch is not declared)."""
    if f.job.launcher == "msrun":
        return BudgetTerm("detect", AGENT_DETECT, what, source)
    tick = f.monitor
    return BudgetTerm(
        "detect",
        tick.seconds,
        "%s; the agent sees a failed process within one look of %s" % (what, tick.what),
        "%s; %s" % (source, tick.source),
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


# --- which level takes which fault ------------------------------------------------------------------
#: The share of the faults reaching retry or recover-in-place that are of the kinds the level handles:
#: retry takes HBM UCE and (A3) network faults, recover-in-place process faults and RestartRequest /
#: RestartBusiness chip faults (RT01; HA73-025); the others go on down the ladder. No published figure
#: gives the mix of fault kinds: an assumption (PROJECT), half.
TYPED_SHARE = 0.5
#: Levels that move the faulty pod's container: a fault on the rank-0 pod (annotation hccl/rankIndex 0)
#: skips them and goes straight to job-level rescheduling (HA73-025 and HA73-024 使用约束; the scheduler
#: deletes every pod of a job whose rank-0 pod is faulty, MC:@v7.3.0 component/ascend-for-volcano/internal/
#: rescheduling/job.go:187-190,239 isMasterFault; ClusterD never scales a faulty rank-0 pod in,
#: MC:@v7.3.0 component/clusterd/pkg/application/recover/controller.go:1095). recover-in-place restarts the
#: process in its container: up to 7.3 the page sends it to job level too, from the 26.x guide only faults
#: whose container must move (R.RANK0_MOVES_ONLY).
RANK0_SKIPS = ("recover", "elastic-training", "dump", "pod")
RANK0_SOURCE = (
    "HA73-025 使用约束; HA73-024; MC:@v7.3.0 component/ascend-for-volcano/internal/rescheduling/job.go:187-190,239; "
    "MC:@v7.3.0 component/clusterd/pkg/application/recover/controller.go:1095"
)
#: The levels that take a process fault (a training process that exits or hangs: what `resumable timeline`
#: records), in ladder order; retry handles faults that leave the processes running (HBM UCE, network).
PROCESS_FAULT_LEVELS = ("recover-in-place", "recover", "elastic-training", "dump", "pod", "job")


def rank0_skips(level: str, release: Optional[Version] = None) -> bool:
    """Whether a fault on the rank-0 pod skips ``level`` (:data:`RANK0_SKIPS`); ``release`` None: the rule
    as the 7.x pages state it (recover-in-place skipped too)."""
    if level in RANK0_SKIPS:
        return True
    if level == "recover-in-place":
        return release is None or not R.at_least(release, R.RANK0_MOVES_ONLY)
    return False


def expected_level(levels: Sequence[str], rank0_pod: bool, release: Optional[Version] = None) -> Optional[str]:
    """The level of ``levels`` (a recovery ladder, first tried first) a process fault on a pod should take:
    the first of :data:`PROCESS_FAULT_LEVELS` the ladder has, the ones a rank-0 pod's fault skips left out
    for the rank-0 pod (:func:`rank0_skips`). None when the ladder has no such level (the job ends)."""
    for level in PROCESS_FAULT_LEVELS:
        if level in levels and not (rank0_pod and rank0_skips(level, release)):
            return level
    return None


def _fallback(f: JobFacts, level: str) -> float:
    """The documented share of ``level``'s recoveries that fail and fall through to the next level."""
    if level in ("recover", "recover-in-place") and R.on_line(f.release, R.PROCESS_LEVEL_GLOO_SEGFAULT):
        return R.PROCESS_LEVEL_GLOO_SEGFAULT_SHARE
    return 0.0


def _coverage(f: JobFacts, level: str) -> Tuple[float, str, str]:
    """The share of the faults reaching ``level`` that it takes, why, and the source."""
    fallback = _fallback(f, level)
    failing = ""
    source = ""
    if fallback:
        failing = "; %.3g%% of its recoveries fail (known issue, a gloo segmentation fault)" % (100 * fallback)
        source = "; " + R.PROCESS_LEVEL_GLOO_SEGFAULT.source
    if level in ("retry", "recover-in-place"):
        kinds = (
            "HBM UCE and network faults"
            if level == "retry"
            else "process faults and RestartRequest/RestartBusiness chip faults"
        )
        return (
            TYPED_SHARE * (1.0 - fallback),
            "it takes only %s: assumed %d%% of what reaches it (no published share)%s"
            % (kinds, int(TYPED_SHARE * 100), failing),
            "RT01; HA73-025; PROJECT (assumption: the mix of fault kinds)" + source,
        )
    every = "it takes every fault that reaches it%s" % failing
    return 1.0 - fallback, every, "RT01 Fault Decision Description" + source


def fault_shares(f: JobFacts, lines: Sequence[BudgetLine]) -> Tuple[List[LevelShare], float]:
    """The share of faults each level of the ladder takes, and the share none takes (no job level).

    A fault falls on one pod; faults are assumed to spread evenly over the pods (PROJECT), so 1 in
    ``nodes`` is on the rank-0 pod, whose faults skip the levels that move its container
    (:func:`rank0_skips`). Down the ladder each level takes its share of what reaches it
    (:func:`_coverage`): typed levels (retry, recover-in-place) an assumed share, the others all of it
    but for a documented failure share; what remains goes to the next level."""
    pods = max(1, f.job.nodes)
    rank0 = 1.0 / pods
    skipped = [line.level for line in lines if rank0_skips(line.level, f.release)]
    # the rank-0 pod is set apart only where the ladder has a level it skips
    classes = ((True, rank0), (False, 1.0 - rank0)) if skipped else ((False, 1.0),)
    others = "the other pod's" if pods == 2 else "the other %d pods'" % (pods - 1)
    taken: Dict[str, List[Tuple[float, str, str]]] = {line.level: [] for line in lines}
    unrecovered = 0.0
    for on_rank0, mass in classes:
        for line in lines:
            if mass <= 0.0:
                break
            if on_rank0 and line.level in skipped:
                continue
            cover, why, source = _coverage(f, line.level)
            part = mass * cover
            if part <= 0.0:
                continue
            if on_rank0:
                who = "the rank-0 pod's faults, 1 in %d (%.1f%%; %s skip that pod)" % (
                    pods,
                    100 * part,
                    ", ".join(skipped),
                )
                source = "%s; %s; PROJECT (faults spread evenly over the pods)" % (source, RANK0_SOURCE)
            elif skipped:
                who = "%s faults (%.1f%%)" % (others, 100 * part)
                source += "; PROJECT (faults spread evenly over the pods)"
            else:
                who = "all faults (%.1f%%)" % (100 * part)
            taken[line.level].append((part, "%s: %s" % (who, why), source))
            mass -= part
        unrecovered += max(0.0, mass)
    shares: List[LevelShare] = []
    for line in lines:
        parts = taken[line.level]
        if not parts:
            continue
        share = sum(p for p, _, _ in parts)
        sources = list(dict.fromkeys(ref.strip() for _, _, src in parts for ref in src.split(";")))
        shares.append(
            LevelShare(
                line.level,
                round(share, 6),
                line.total_seconds,
                "; ".join(why for _, why, _ in parts),
                "; ".join(sources),
            )
        )
    return shares, round(unrecovered, 6)


def expected_seconds(shares: Sequence[LevelShare], unrecovered: float) -> Optional[float]:
    """The expected recovery time of a recovered fault: each level's time weighted by its share."""
    recovered = 1.0 - unrecovered
    if recovered <= 0.0:
        return None
    return round(sum(s.share * s.total_seconds for s in shares) / recovered, 1)


def unweighted_note(f: JobFacts) -> List[Note]:
    """The documented ways process-level rescheduling fails that the expectation cannot weigh (no share is
    published): each moves a fault down the ladder, so the expected time is a lower bound for such jobs."""
    if not any(s in f.strategies for s in ("recover", "recover-in-place", "retry")):
        return []
    cases = ["a fault while HCCL links are being set up (see the plan note on link pre-establishment)"]
    if f.cluster.accelerator_type in H.A3_TYPES:
        cases.append("an NPU card drop or OS disconnect on Atlas A3 (rule process-level-a3-faults)")
    if f.at_least(R.CONSTRAINTS_26):
        cases.append("a fault during a checkpoint save")
    return [
        Note(
            "the expected time per fault does not weigh the documented failures of process-level recovery that have "
            "no published share, each of which moves the fault down the ladder (the expectation is a lower "
            "bound): %s" % "; ".join(cases),
            "HA73-025 使用约束; %s" % R.CONSTRAINTS_26.source,
        )
    ]


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
    shares, unrecovered = fault_shares(f, lines)
    expected = expected_seconds(shares, unrecovered)
    return BudgetPlan(
        ladder=lines,
        baseline=baseline,
        best_saving_seconds=round(baseline.total_seconds - min(totals), 1),
        worst_saving_seconds=round(baseline.total_seconds - max(totals), 1),
        shares=shares,
        unrecovered_share=unrecovered,
        expected_seconds=expected,
        expected_saving_seconds=None if expected is None else round(baseline.total_seconds - expected, 1),
        notes=small_savings(lines) + warm_workers_note(f) + unweighted_note(f),
        hang_detection=hang_detection(f, hang_seconds),
    )
