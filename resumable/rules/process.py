"""Process-level recovery: recover, recover-in-place, retry, elastic-training, dump, exit."""

from __future__ import annotations

import difflib
from typing import Iterable

from .. import constants as C
from .. import releases as R
from ..facts import JobFacts
from ..profile import STRATEGIES, Profile
from .base import WARNING, Finding, job_rule


@job_rule(
    "unknown-strategy",
    "recover-strategy accepts only retry, recover, recover-in-place, elastic-training, dump, exit",
    "PLR 准备任务YAML (recover-strategy comment); RT04",
)
def unknown_strategy(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """ClusterD ignores names it does not know, so a typo silently drops a recovery level."""
    for name in f.unknown_strategies:
        close = difflib.get_close_matches(name, list(STRATEGIES), n=1)
        hint = ("Did you mean %r? " % close[0]) if close else ""
        yield Finding(
            ["%s.recovery.strategies" % f.path],
            "unknown strategy %r" % name,
            "%sAllowed: %s." % (hint, ", ".join(STRATEGIES)),
        )


@job_rule(
    "process-level-wheels",
    "Process-level strategies need the TaskD and MindIO TTP wheels in the image",
    "PLR 构建镜像; RT04; TFT 01",
)
def process_level_wheels(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """TaskD (Manager/Proxy/Agent) drives process-level recovery from 7.1.RC1 and MindIO TTP repairs
    and restores the training state; without either the strategy is never reported as supported
    and ClusterD falls back to rescheduling."""
    if not (f.process_level or f.hot_switch):
        return
    versions = f.wheel_versions
    if versions.get("mindio_ttp") is None:
        yield Finding(
            ["%s.image.mindio_ttp" % f.path],
            "process-level recovery needs the MindIO TTP wheel, the image has none",
            "Declare image.mindio_ttp (the mindio_ttp wheel matching the cluster release).",
        )
    if f.at_least(R.TASKD_MANAGER) and versions.get("taskd") is None:
        yield Finding(
            ["%s.image.taskd" % f.path],
            "process-level recovery needs the TaskD wheel, the image has none",
            "Declare image.taskd (the TaskD wheel matching the cluster release).",
        )


@job_rule(
    "process-level-grace",
    "Process-level strategies need fault-scheduling grace",
    "PLR 准备任务YAML; RT04; YAMLCFG; MCD:samples/train/resumable-training/fault-tolerance/without-ranktable/"
    "pytorch/Qwen3/yamls/pytorch_multinodes_acjob_910b.yaml",
    severity=WARNING,
)
def process_level_grace(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """The docs require grace so healthy pods get time to pause and the faulty one to dump. The
    official Qwen3 sample (MCD master) uses force with the same strategies; that discrepancy is
    reported as a warning, not an error."""
    if (f.process_level or f.hot_switch) and f.job.recovery.fault_scheduling == "force":
        yield Finding(
            ["%s.recovery.fault_scheduling" % f.path],
            "process-level recovery is documented with fault-scheduling grace; force is what the official "
            "Qwen3 sample uses, a documented discrepancy",
            "Prefer recovery.fault_scheduling: grace.",
        )


@job_rule(
    "process-level-ascendjob",
    "Process-level recovery, elastic training and hot switching need an AscendJob",
    "RT01 constraints (acjob only); YAMLCFG",
)
def process_level_ascendjob(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Only the Ascend Operator injects the recovery environment and labels the PodGroup; a Volcano
    Job gets neither."""
    if (f.process_level or f.hot_switch) and f.job.kind != "ascendjob":
        yield Finding(
            ["%s.kind" % f.path, "%s.recovery.strategies" % f.path],
            "process-level recovery is supported for AscendJob only, the job is a %s" % f.job.kind,
            "Set kind: ascendjob.",
        )


@job_rule(
    "process-level-hot-reset",
    "Process-level recovery needs the device plugin's -hotReset=2",
    "INST04 step 4 / Table 3; RT07",
)
def process_level_hot_reset(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """-hotReset=2 (offline reset) lets the device plugin reset a faulty NPU while the job's other
    processes pause; -hotReset=1 belongs to the deprecated graceful fault tolerance."""
    chosen = profile.scheduler.hot_reset
    if chosen is None:
        return
    if (f.process_level or f.hot_switch) and chosen != 2:
        yield Finding(
            ["scheduler.hot_reset", "%s.recovery.strategies" % f.path],
            "process-level recovery needs device plugin -hotReset=2, the profile sets %d" % chosen,
            "Remove scheduler.hot_reset (the plan chooses 2) or set it to 2.",
        )
    elif f.graceful and chosen != 1:
        yield Finding(
            ["scheduler.hot_reset", "%s.recovery.graceful" % f.path],
            "graceful fault tolerance needs device plugin -hotReset=1, the profile sets %d" % chosen,
            "Remove scheduler.hot_reset (the plan chooses 1) or set it to 1.",
        )


@job_rule(
    "taskd-manager-placement",
    "The TaskD Manager runs on rank 0 (PyTorch) or on the MindSpore scheduler pod",
    "PLR 适配训练脚本; RT04; TASKDAPI 04",
    warns=True,
)
def taskd_manager_placement(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Workers' proxies connect to the Manager at MASTER_ADDR:9601, so exactly one Manager must run,
    on the PyTorch RANK 0 pod (after MASTER_ADDR=$POD_IP) or where MS_SCHED_HOST equals POD_IP."""
    chosen = f.job.taskd_manager
    where = "%s.taskd_manager" % f.path
    if f.uses_taskd and chosen == "off":
        yield Finding([where], "this job uses TaskD but taskd_manager is off", "Set taskd_manager: auto.")
    if chosen == "scheduler" and f.is_pytorch:
        yield Finding(
            [where, "%s.image.framework" % f.path],
            "PyTorch jobs start the TaskD Manager on rank 0, not on a scheduler pod",
            "Set taskd_manager: auto (or rank0).",
        )
    if chosen == "rank0" and not f.is_pytorch:
        yield Finding(
            [where, "%s.image.framework" % f.path],
            "MindSpore jobs start the TaskD Manager on the scheduler pod (MS_SCHED_HOST == POD_IP)",
            "Set taskd_manager: auto (or scheduler).",
        )
    if chosen in ("rank0", "scheduler") and not f.uses_taskd:
        yield Finding(
            [where],
            "taskd_manager is %s but no recovery setting of this job uses TaskD" % chosen,
            "Set taskd_manager: auto, or enable the recovery level that needs it.",
            severity=WARNING,
        )


@job_rule(
    "taskd-process-enable",
    "TASKD_PROCESS_ENABLE as each release reads it",
    "RT04; MC:@v7.3.0 component/taskd/taskd/python/framework/manager/manager.py; RT01",
    warns=True,
)
def taskd_process_enable(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """7.2.RC1 enables TaskD's process features only with TASKD_PROCESS_ENABLE=on; 7.3.0 enables them
    by default and documents off for Pod-level-only jobs (no recover-strategy, no hot switch)."""
    value = f.job.recovery.taskd_process_enable
    where = f.where("recovery.taskd_process_enable")
    needs_on = f.uses_taskd and (f.process_level or f.hot_switch)
    if value == "off" and needs_on:
        yield Finding(
            [where, "%s.recovery.strategies" % f.path],
            "TASKD_PROCESS_ENABLE=off disables the process-level recovery this job asks for",
            "Set recovery.taskd_process_enable: auto.",
        )
    if value == "on" and f.uses_taskd and not needs_on and f.at_least(R.TASKD_PROCESS_DEFAULT_ON):
        yield Finding(
            [where],
            "TASKD_PROCESS_ENABLE=on on a Pod-level-only job; from 7.3.0 the docs set it off there",
            "Set recovery.taskd_process_enable: auto.",
            severity=WARNING,
        )


@job_rule(
    "recover-in-place-release",
    "recover-in-place needs MindCluster 7.1.RC1 or later",
    R.RECOVER_IN_PLACE.source,
)
def recover_in_place_release(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """The in-place strategy appeared in 7.1.RC1; before 7.2.RC1 ENABLE_RESTART_FAULT_PROCESS=on must
    be set by hand (the plan does it), from 7.2.RC1 the operator injects it."""
    if "recover-in-place" in f.strategies and not f.at_least(R.RECOVER_IN_PLACE):
        yield Finding(
            ["%s.recovery.strategies" % f.path, "cluster.mindcluster"],
            "recover-in-place needs MindCluster %s or later, the cluster runs %s"
            % (R.RECOVER_IN_PLACE.since, f.release),
            "Upgrade MindCluster or remove recover-in-place.",
        )


@job_rule(
    "elastic-training",
    "elastic-training needs MindCluster 7.2.RC1 or later and PyTorch",
    R.ELASTIC_TRAINING.source + "; RT01",
)
def elastic_training(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Elastic training (dropping whole data-parallel replicas) exists from 7.2.RC1 and only for
    PyTorch with MindSpeed-LLM."""
    if "elastic-training" not in f.strategies:
        return
    paths = ["%s.recovery.strategies" % f.path]
    if not f.at_least(R.ELASTIC_TRAINING):
        yield Finding(
            [*paths, "cluster.mindcluster"],
            "elastic-training needs MindCluster %s or later, the cluster runs %s"
            % (R.ELASTIC_TRAINING.since, f.release),
            "Upgrade MindCluster or remove elastic-training.",
        )
    if not f.is_pytorch:
        yield Finding(
            [*paths, "%s.image.framework" % f.path],
            "elastic-training is supported for PyTorch only",
            "Remove elastic-training from this MindSpore job.",
        )


@job_rule(
    "graceful-exclusive",
    "Graceful fault tolerance excludes every process-level feature and is sunset",
    "RT01; RT04; YAMLCFG (graceful fault tolerance)",
)
def graceful_exclusive(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Graceful fault tolerance (hotReset=1) and process-level recovery both restart processes; a job
    with both falls back to job-level rescheduling. It is not supported after PyTorch 7.2.RC1 /
    MindSpore 7.1.RC1."""
    if not f.graceful:
        return
    where = "%s.recovery.graceful" % f.path
    if f.process_level or f.hot_switch:
        yield Finding(
            [where, "%s.recovery.strategies" % f.path],
            "graceful fault tolerance cannot be combined with process-level recovery",
            "Drop recovery.graceful (it is deprecated) and keep the strategies.",
        )
    last = R.GRACEFUL_PYTORCH_LAST if f.is_pytorch else R.GRACEFUL_MINDSPORE_LAST
    if R.above(f.release, last):
        yield Finding(
            [where, "cluster.mindcluster"],
            "graceful fault tolerance is not supported after %s for %s (cluster: %s)"
            % (last.since, f.framework, f.release),
            "Use process-level recovery (recovery.strategies) instead.",
        )


@job_rule("graceexit-needs-dump", "subHealthyStrategy graceExit needs the dump strategy", "RT05; VCAPI")
def graceexit_needs_dump(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """graceExit saves a dying-gasp checkpoint before moving off a sub-healthy node; without dump
    there is nothing to save it with."""
    if f.job.recovery.sub_health == "graceExit" and "dump" not in f.strategies:
        yield Finding(
            ["%s.recovery.sub_health" % f.path, "%s.recovery.strategies" % f.path],
            "sub_health graceExit needs the dump strategy",
            "Add dump to recovery.strategies.",
        )


@job_rule(
    "dump-ttp-port",
    "dump needs the MindIO TTP port, distinct from the TaskD and job ports",
    "RT05; RT06; TFT 02",
)
def dump_ttp_port(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """The dying-gasp checkpoint is coordinated by the MindIO TTP controller on TTP_PORT (8000 unless
    set, port ttp-port); it must not collide with 9601/9602 (TaskD) or 2222 (ascendjob-port)."""
    wants = "dump" in f.strategies or f.job.checkpoint.dump
    port = f.job.recovery.ttp_port
    where = f.where("recovery.ttp_port")
    if wants and port is None:
        yield Finding(
            [where], "dump needs a MindIO TTP port, ttp_port is null", "Set recovery.ttp_port: %d." % C.TTP_PORT_DEFAULT
        )
    taken = {
        C.TASKD_MANAGER_PORT: "TaskD Manager",
        C.TASKD_PROXY_PORT: "TaskD Proxy",
        C.ASCENDJOB_PORT_DEFAULT: "ascendjob-port",
    }
    if port is not None and port in taken and (wants or f.process_level):
        yield Finding([where], "ttp_port %d is the %s port" % (port, taken[port]), "Use %d." % C.TTP_PORT_DEFAULT)


@job_rule("checkpoint-dump-strategy", "checkpoint.dump needs the dump strategy", "RT05; RT04")
def checkpoint_dump_strategy(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """The dying-gasp checkpoint is written by the dump strategy; asking for it without listing dump
    in recover-strategy gets no checkpoint."""
    if f.job.checkpoint.dump and "dump" not in f.strategies:
        yield Finding(
            ["%s.checkpoint.dump" % f.path, "%s.recovery.strategies" % f.path],
            "checkpoint.dump is on but dump is not among the strategies",
            "Add dump to recovery.strategies (and keep MindIO TTP in the image).",
        )


@job_rule(
    "process-level-retry-times",
    "Process-level recovery is documented together with fault-retry-times",
    "RT04 Table 1 (fault-retry-times for recover and elastic); YAMLCFG",
    severity=WARNING,
)
def process_level_retry_times(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """A parameter-plane fault triggers nothing until the training process dies; unconditional retry
    (fault-retry-times) is what turns that death into a recovery."""
    if f.process_level and f.job.recovery.fault_retry_times is None:
        yield Finding(
            ["%s.recovery.fault_retry_times" % f.path],
            "process-level recovery without fault_retry_times: service-plane faults end the job",
            "Set recovery.fault_retry_times (e.g. 10).",
        )
