"""Facts derived from a profile once, shared by the rules and the plan builder.

Both the rules ("is this allowed?") and the plan ("what must be set?") need the same derived
answers (which recovery levels are on, does the job need TaskD, is the watchdog effectively on);
computing them here keeps the two from disagreeing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from . import releases as R
from .choices import Framework, HotReset, TaskdManagerWhere
from .profile import STRATEGIES, Cluster, Job, Profile
from .versions import Version, VersionError

#: Strategies that make a job "process-level" in MindCluster's sense (the operator turns the
#: watchdog off for any of them: RT04 Table 3 "any strategy").
PROCESS_STRATEGIES = frozenset(STRATEGIES)


def version_or_none(text: Optional[str]) -> Optional[Version]:
    if text is None:
        return None
    try:
        return Version(text)
    except VersionError:
        return None


@dataclass
class JobFacts:
    index: int
    path: str  # "jobs[0]"
    job: Job
    cluster: Cluster
    release: Version
    framework: Framework
    strategies: List[str]  # known strategies, in profile order, deduplicated
    unknown_strategies: List[str]
    process_level: bool
    pod_level: bool
    job_level: bool
    graceful: bool
    hot_switch: bool
    adapter: Optional[Version]  # FrameworkPTAdapter release of torch_npu, when known
    torch: Optional[Version]
    cann: Optional[Version]
    mindspore: Optional[Version]
    uses_taskd: bool  # TaskD is the in-container agent (process-level, or pod-level from 7.3)
    uses_mindx_elastic: bool  # legacy Elastic Agent patches run.py (PyTorch up to 7.2)
    taskd_manager_where: TaskdManagerWhere
    watchdog_supported: bool
    watchdog_on: bool
    #: hostNetwork of the job's pods: jobs[].host_network, else cluster.host_network
    host_network: bool = False

    @property
    def is_pytorch(self) -> bool:
        return self.framework == "pytorch"

    def at_least(self, gate: R.Gate) -> bool:
        return R.at_least(self.release, gate)


def adapter_version(job: Job) -> Optional[Version]:
    """The FrameworkPTAdapter release of torch_npu: given directly, or read from a torch_npu
    version written in the adapter style (major 5 or more, e.g. 6.0.RC3)."""
    explicit = version_or_none(job.image.framework_pt_adapter)
    if explicit is not None:
        return explicit
    npu = version_or_none(job.image.torch_npu)
    if npu is not None and npu.release[0] >= 5:
        return npu
    return None


def watchdog_supported(job: Job) -> bool:
    """Seed 恢复时间优化 表1: PyTorch 2.1.0 or later and torch_npu newer than 6.0.RC1;
    MindSpore 2.4 or later (RT05)."""
    if job.image.framework == "mindspore":
        ms = version_or_none(job.image.mindspore)
        return ms is not None and ms >= Version(R.WATCHDOG_MINDSPORE)
    torch = version_or_none(job.image.torch)
    adapter = adapter_version(job)
    return (
        torch is not None
        and torch >= Version(R.WATCHDOG_TORCH)
        and adapter is not None
        and adapter > Version(R.WATCHDOG_ADAPTER_ABOVE)
    )


def job_facts(profile: Profile, index: int) -> JobFacts:
    job = profile.jobs[index]
    cluster = profile.cluster
    release = version_or_none(cluster.mindcluster) or Version("0")
    seen: List[str] = []
    unknown: List[str] = []
    for s in job.recovery.strategies:
        if s in PROCESS_STRATEGIES:
            if s not in seen:
                seen.append(s)
        elif s not in unknown:
            unknown.append(s)
    framework = job.image.framework
    rescheduling_on = job.recovery.fault_scheduling != "off"
    process_level = bool(seen)
    pod_level = job.recovery.pod_rescheduling
    hot_switch = job.recovery.sub_health == "hotSwitch"
    in_container_agent = process_level or pod_level or hot_switch or job.recovery.graceful
    taskd_era = R.at_least(release, R.TASKD_RUNPY_PATCH)
    uses_taskd = (process_level or hot_switch) and R.at_least(release, R.TASKD_MANAGER)
    if framework == "mindspore" and pod_level and R.at_least(release, R.TASKD_MANAGER):
        uses_taskd = True
    if framework == "pytorch" and in_container_agent and taskd_era:
        uses_taskd = True
    uses_mindx_elastic = framework == "pytorch" and in_container_agent and not taskd_era
    chosen = job.taskd_manager
    where: TaskdManagerWhere
    if chosen == "auto":
        where = ("rank0" if framework == "pytorch" else "scheduler") if uses_taskd else "none"
    elif chosen == "off":
        where = "none"
    else:
        where = chosen
    supported = watchdog_supported(job)
    if job.recovery.watchdog == "on":
        watchdog_on = True
    elif job.recovery.watchdog == "off":
        watchdog_on = False
    else:
        watchdog_on = supported and not process_level and not hot_switch
    return JobFacts(
        index=index,
        path="jobs[%d]" % index,
        job=job,
        cluster=cluster,
        release=release,
        framework=framework,
        strategies=seen,
        unknown_strategies=unknown,
        process_level=process_level,
        pod_level=pod_level,
        job_level=rescheduling_on,
        graceful=job.recovery.graceful,
        hot_switch=hot_switch,
        adapter=adapter_version(job),
        torch=version_or_none(job.image.torch),
        cann=version_or_none(job.image.cann),
        mindspore=version_or_none(job.image.mindspore),
        uses_taskd=uses_taskd,
        uses_mindx_elastic=uses_mindx_elastic,
        taskd_manager_where=where,
        watchdog_supported=supported,
        watchdog_on=watchdog_on,
        host_network=cluster.host_network if job.host_network is None else job.host_network,
    )


def all_job_facts(profile: Profile) -> List[JobFacts]:
    return [job_facts(profile, i) for i in range(len(profile.jobs))]


def hot_reset_for(profile: Profile, facts: List[JobFacts]) -> Optional[HotReset]:
    """Device plugin -hotReset the jobs need: 2 for process-level recovery (INST04 step 4), 1 for
    the deprecated graceful fault tolerance, otherwise unset (-1, the plugin default)."""
    if profile.scheduler.hot_reset is not None:
        return profile.scheduler.hot_reset
    if any(f.process_level or f.hot_switch for f in facts):
        return 2
    if any(f.graceful for f in facts):
        return 1
    return None
