"""Facts derived from a profile once, shared by the rules and the plan builder.

Both the rules ("is this allowed?") and the plan ("what must be set?") need the same derived
answers (which recovery levels are on, does the job need TaskD, is the watchdog effectively on);
computing them here keeps the two from disagreeing.

Each job is first read together with its ``env``: where the profile leaves a setting to the plan
(``auto``, null) and ``env`` states it, the env value becomes the setting
(:func:`resumable.envowners.lift`), so rules check a recovery setting the same whichever way it is
written and name the env entry when that is where it came from (:meth:`JobFacts.where`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Optional, Tuple

from . import constants as C
from . import releases as R
from . import wheelfiles
from .choices import Framework, HotReset, TaskdManagerWhere, WheelName, values
from .envowners import Conflict, lift
from .profile import STRATEGIES, Cluster, Image, Job, Profile
from .versions import Version, VersionError

#: Strategies that make a job "process-level" in MindCluster's sense (the operator turns the
#: watchdog off for any of them: RT04 Table 3 "any strategy").
PROCESS_STRATEGIES = frozenset(STRATEGIES)

WHEELS: Tuple[WheelName, ...] = values(WheelName)


def version_or_none(text: Optional[str]) -> Optional[Version]:
    if text is None:
        return None
    try:
        return Version(text)
    except VersionError:
        return None


@dataclass
class Adapter:
    """The FrameworkPTAdapter (torch_npu product) release of a job's image, as far as it is known."""

    #: the release, or a lower bound of it when ``exact`` is false; None: unknown
    release: Optional[Version]
    exact: bool
    #: how it was found (for messages): "image.framework_pt_adapter", "the PTA version table", ...
    how: str
    #: the torch version the torch_npu package is built for, when the table says
    torch: Optional[Version] = None

    def above(self, floor: R.Gate) -> Optional[bool]:
        """Whether the release is newer than ``floor``: True/False when known, None when only a
        lower bound at or below ``floor`` is known (or nothing)."""
        if self.release is None:
            return None
        if R.above(self.release, floor):
            return True
        return False if self.exact else None


def agent_in_container(process_level: bool, pod_level: bool, hot_switch: bool, graceful: bool) -> bool:
    """Whether an in-container agent restarts processes: graceful fault tolerance, Pod- or process-level
    rescheduling, hot switching (RTO 表2; PLR 构建镜像)."""
    return process_level or pod_level or hot_switch or graceful


@dataclass
class JobFacts:
    index: int
    path: str  # "jobs[0]"
    #: the job with env values read into the fields the profile left to the plan
    job: Job
    #: the job as the profile wrote it
    declared: Job
    #: field path relative to the job -> the env variable it was read from
    origins: Dict[str, str]
    env_conflicts: List[Conflict]
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
    adapter_info: Adapter
    torch: Optional[Version]  # image.torch, or the torch the torch_npu package is built for
    cann: Optional[Version]
    mindspore: Optional[Version]
    #: version of each vendor wheel: image.<name>, or the version in image.wheels.<name>'s file name
    wheel_versions: Dict[WheelName, Optional[str]]
    uses_taskd: bool  # TaskD is the in-container agent (process-level, or pod-level from 7.3)
    uses_mindx_elastic: bool  # legacy Elastic Agent patches run.py (PyTorch up to 7.2)
    taskd_manager_where: TaskdManagerWhere
    #: True/False when known, None when the image's versions do not tell
    watchdog_supported: Optional[bool]
    #: True on, False off, None: left at the vendor default without knowing whether it exists
    watchdog_on: Optional[bool]
    #: hostNetwork of the job's pods: jobs[].host_network, else cluster.host_network
    host_network: bool = False
    #: Volcano queue of the job: jobs[].queue, else scheduler.queue
    queue: str = C.VOLCANO_DEFAULT_QUEUE

    @property
    def is_pytorch(self) -> bool:
        return self.framework == "pytorch"

    @property
    def adapter(self) -> Optional[Version]:
        return self.adapter_info.release

    @property
    def in_container_agent(self) -> bool:
        """An in-container agent restarts processes (see :func:`agent_in_container`)."""
        return agent_in_container(self.process_level, self.pod_level, self.hot_switch, self.graceful)

    @property
    def taskd_agent_loop(self) -> bool:
        """TaskD's patch of torch elastic runs the agent loop: from 7.3.0 ``import taskd.python.adaptor.patch``
        in run.py replaces SimpleElasticAgent._invoke_run for PyTorch jobs with an in-container agent, and
        its loop never reads --monitor_interval (C.TASKD_MONITOR_SOURCE)."""
        torchrun = self.is_pytorch and self.job.launcher != "msrun"
        return self.uses_taskd and torchrun and self.at_least(R.TASKD_RUNPY_PATCH)

    @property
    def monitor(self) -> MonitorTick:
        """How often the in-container agent looks at the training processes (see :func:`monitor_tick`)."""
        return monitor_tick(self)

    def at_least(self, gate: R.Gate) -> bool:
        return R.at_least(self.release, gate)

    def where(self, field: str) -> str:
        """The profile path a setting came from: the env entry it was read from, or the field."""
        name = self.origins.get(field)
        if name is not None:
            return "%s.env.%s" % (self.path, name)
        return "%s.%s" % (self.path, field)


class MonitorTick(NamedTuple):
    """The interval at which the process that watches the training processes looks at them: a process
    that fails waits up to one interval before it is seen."""

    seconds: float
    #: who looks, and where the figure comes from (for messages)
    what: str
    source: str
    #: torchrun's loop reads recovery.monitor_interval (False under TaskD's loop and for msrun)
    reads_option: bool
    #: torchrun's own default for the image's torch where its loop runs (None where another loop runs)
    torch_default: Optional[float] = None
    #: the torch version that default is for, or why it is assumed
    torch_basis: str = ""


def torch_monitor_default(torch: Optional[Version]) -> Tuple[float, str]:
    """torchrun's --monitor_interval when the option is not passed, for ``torch`` (C.TORCH_MONITOR_INTERVAL:
    0.1 s from torch 2.4, 5 s before), and the basis of the figure. An undeclared torch counts as the older
    default, 5 s: the most a fault can wait on any torch MindCluster supports (2.1.0 to 2.7.1, RT07 Table 1)."""
    if torch is None:
        return C.TORCH_MONITOR_INTERVAL_BEFORE, "image.torch not declared: the older default, the most it can be"
    if R.at_least(torch, R.TORCH_FAST_MONITOR):
        return C.TORCH_MONITOR_INTERVAL, "torch %s" % torch
    return C.TORCH_MONITOR_INTERVAL_BEFORE, "torch %s, before %s" % (torch, R.TORCH_FAST_MONITOR.since)


def monitor_tick(f: JobFacts) -> MonitorTick:
    """The agent's monitor interval for ``f``: TaskD's own 1 s loop where its patch runs (it ignores
    --monitor_interval); otherwise torchrun's loop at recovery.monitor_interval, or torchrun's own default
    for the image's torch when the profile leaves it unset. msrun has no such option (MS-MSRUN): None."""
    if f.taskd_agent_loop:
        return MonitorTick(
            C.TASKD_MONITOR_SECONDS,
            "TaskD's agent loop (its patch of torch elastic replaces torchrun's monitor loop and never reads "
            "--monitor_interval)",
            C.TASKD_MONITOR_SOURCE,
            reads_option=False,
        )
    default, basis = torch_monitor_default(f.torch)
    interval = f.job.recovery.monitor_interval
    if interval is not None:
        return MonitorTick(
            float(interval),
            "torchrun's monitor loop at %s (%g s)" % (f.where("recovery.monitor_interval"), interval),
            "TORCH elastic agent _invoke_run; RTO 表2 (--monitor_interval)",
            reads_option=True,
            torch_default=default,
            torch_basis=basis,
        )
    return MonitorTick(
        default,
        "torchrun's monitor loop at its own default (%g s, %s)" % (default, basis),
        R.TORCH_FAST_MONITOR.source,
        reads_option=True,
        torch_default=default,
        torch_basis=basis,
    )


def adapter_of(image: Image) -> Adapter:
    """The FrameworkPTAdapter release of torch_npu: declared (image.framework_pt_adapter), written
    as a product release in image.torch_npu (6.0.RC3, 7.3.0), or looked up from its pip version in
    the published version table (PTA; :data:`resumable.releases.TORCH_NPU_BUILDS`)."""
    explicit = version_or_none(image.framework_pt_adapter)
    npu = version_or_none(image.torch_npu)
    table = R.torch_npu_release(npu) if npu is not None and not R.is_adapter_style(npu) else None
    torch = table.torch if table is not None else None
    if explicit is not None:
        return Adapter(explicit, True, "image.framework_pt_adapter", torch)
    if npu is not None and R.is_adapter_style(npu):
        return Adapter(npu, True, "image.torch_npu", None)
    if table is not None:
        how = "the PTA version table (torch_npu %s is %s %s)" % (
            npu,
            "release" if table.exact else "at least release",
            table.release,
        )
        return Adapter(table.release, table.exact, how, torch)
    return Adapter(None, False, "not declared", None)


def watchdog_support(
    framework: str, torch: Optional[Version], adapter: Adapter, mindspore: Optional[Version]
) -> Optional[bool]:
    """RTO 表1: PyTorch 2.1.0 or later and torch_npu newer than 6.0.RC1 (on by default there);
    MindSpore 2.4 or later (RT05). None when the image's versions do not tell."""
    if framework == "mindspore":
        if mindspore is None:
            return None
        return R.at_least(mindspore, R.WATCHDOG_MINDSPORE)
    if torch is not None and not R.at_least(torch, R.WATCHDOG_TORCH):
        return False
    newer = adapter.above(R.WATCHDOG_ADAPTER_ABOVE)
    if newer is False:
        return False
    if torch is None or newer is None:
        return None
    return True


def wheel_versions(image: Image) -> Dict[WheelName, Optional[str]]:
    out: Dict[WheelName, Optional[str]] = {}
    for name in WHEELS:
        declared: Optional[str] = getattr(image, name)
        spec = image.wheels.get(name)
        if declared is None and spec is not None:
            location = spec.file or spec.url
            parsed = wheelfiles.parse(location) if location else None
            declared = parsed.version if parsed is not None else None
        out[name] = declared
    return out


def job_facts(profile: Profile, index: int) -> JobFacts:
    declared = profile.jobs[index]
    lifted = lift(declared)
    job = lifted.job
    cluster = profile.cluster
    release = version_or_none(cluster.mindcluster) or Version("0")
    # dicts keep profile order and make the deduplication linear in the list's length
    seen = list(dict.fromkeys(s for s in job.recovery.strategies if s in PROCESS_STRATEGIES))
    unknown = list(dict.fromkeys(s for s in job.recovery.strategies if s not in PROCESS_STRATEGIES))
    framework = job.image.framework
    rescheduling_on = job.recovery.fault_scheduling != "off"
    process_level = bool(seen)
    pod_level = job.recovery.pod_rescheduling
    hot_switch = job.recovery.sub_health == "hotSwitch"
    in_container_agent = agent_in_container(process_level, pod_level, hot_switch, job.recovery.graceful)
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
    adapter = adapter_of(job.image)
    torch = version_or_none(job.image.torch) or adapter.torch
    mindspore = version_or_none(job.image.mindspore)
    supported = watchdog_support(framework, torch, adapter, mindspore)
    watchdog_on: Optional[bool]
    if job.recovery.watchdog == "on":
        watchdog_on = True
    elif job.recovery.watchdog == "off" or process_level or hot_switch:
        watchdog_on = False
    else:
        watchdog_on = supported
    return JobFacts(
        index=index,
        path="jobs[%d]" % index,
        job=job,
        declared=declared,
        origins=lifted.origins,
        env_conflicts=lifted.conflicts,
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
        adapter_info=adapter,
        torch=torch,
        cann=version_or_none(job.image.cann),
        mindspore=mindspore,
        wheel_versions=wheel_versions(job.image),
        uses_taskd=uses_taskd,
        uses_mindx_elastic=uses_mindx_elastic,
        taskd_manager_where=where,
        watchdog_supported=supported,
        watchdog_on=watchdog_on,
        host_network=cluster.host_network if job.host_network is None else job.host_network,
        queue=profile.scheduler.queue if job.queue is None else job.queue,
    )


def all_job_facts(profile: Profile) -> List[JobFacts]:
    return [job_facts(profile, i) for i in range(len(profile.jobs))]


def needed_wheels(f: JobFacts) -> List[Tuple[WheelName, str]]:
    """The vendor wheels the job's recovery settings need in the image, with the reason.

    PyTorch with graceful fault tolerance, Pod- or process-level rescheduling installs the
    in-container agent (TaskD from 7.3.0, mindx_elastic before) and MindIO TTP, and patches torch's
    run.py (RTO 表2 Dockerfile; PLR 构建镜像). MindSpore process-level rescheduling installs MindIO
    TTP and TaskD (PLR 构建镜像); MindSpore Pod-level rescheduling uses TaskD (RT04). MindIO ACP
    comes with asynchronous checkpoints (RT05).
    """
    out: List[Tuple[WheelName, str]] = []
    if f.uses_taskd:
        out.append(("taskd", "TaskD agent (PLR 构建镜像)"))
    if f.uses_mindx_elastic:
        out.append(("mindx_elastic", "Elastic Agent up to 7.2 (RTO 表2 Dockerfile)"))
    if (f.is_pytorch and f.in_container_agent) or f.process_level or f.hot_switch:
        out.append(("mindio_ttp", "MindIO TTP (RTO 表2 Dockerfile; PLR 构建镜像)"))
    if f.job.checkpoint.mindio_acp:
        out.append(("mindio_acp", "MindIO ACP asynchronous checkpoints (RT05 Tables 5-6)"))
    return out


def uses_compile_cache(f: JobFacts) -> bool:
    """The job keeps a compile cache on shared storage: the operator compile cache (compile.mode:
    cache, RTO 表10) or the MindSpore graph cache (under <cache_path>/ms, RT05)."""
    c = f.job.compile
    return c.mode == "cache" or (c.mindspore_graph_cache and not f.is_pytorch)


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
