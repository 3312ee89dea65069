"""The plan: everything a profile implies, as plain data for Pulumi, Ansible and the launcher.

Every consumer reads these dataclasses (or their ``to_dict()`` form, which is what
``resumable plan --format json|yaml`` prints); none of them recomputes a decision.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Dict, List, Optional, Tuple, Union

from .. import constants as C
from ..choices import (
    Arch,
    Chip,
    CompileMode,
    ContainerRuntime,
    Framework,
    HotReset,
    Launcher,
    PullPolicy,
    TaskdManagerWhere,
    WheelName,
)
from ..rules.base import Violation


def _plain(value: Any) -> Any:
    if isinstance(value, PlanPart) and dataclasses.is_dataclass(value):
        return {key: _plain(item) for key, item in value.json_items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class PlanPart:
    #: values the plan derives from its fields but shows in its JSON form, each after the field named
    #: with it (``resumable plan --format json`` keeps its documented keys when a held value becomes derived)
    JSON_DERIVED: ClassVar[Tuple[Tuple[str, str], ...]] = ()
    #: fields the JSON form shows only through what is derived from them
    JSON_HIDDEN: ClassVar[Tuple[str, ...]] = ()

    def json_items(self) -> List[Tuple[str, Any]]:
        """The keys and values of the JSON form, in order: the fields, the derived values after theirs."""
        out: List[Tuple[str, Any]] = []
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name not in self.JSON_HIDDEN:
                out.append((f.name, getattr(self, f.name)))
            out.extend((key, getattr(self, key)) for key, after in self.JSON_DERIVED if after == f.name)
        return out

    def to_dict(self) -> Dict[str, Any]:
        result = _plain(self)
        assert isinstance(result, dict)
        return result


@dataclasses.dataclass
class Note(PlanPart):
    """A fact the plan applied or a decision a person must know about, with its source."""

    text: str
    source: str


@dataclasses.dataclass
class SchedulerPlan(PlanPart):
    """Settings of the MindCluster scheduling stack (consumed by ``resumable.manifests``).

    Each setting is held once, typed; the builders render it into the component's flag or
    ``init-params`` entry (``-hotReset``, ``-listWatchPeriod``, ``-reportInterval``,
    ``grace-over-time``).
    """

    release: str
    stack_release: Optional[str]  # the release whose manifests are deployed; None: not deployable
    arch: Arch
    kubernetes: str
    container_runtime: ContainerRuntime
    volcano_version: str
    volcano_plugin_name: str
    image_registry: str
    image_pull_policy: Optional[PullPolicy]
    image_pull_secrets: List[str]
    #: Volcano init-param grace-over-time, seconds
    grace_over_time: int
    #: device plugin -hotReset; None: the plugin default (off)
    hot_reset: Optional[HotReset]
    #: device plugin -listWatchPeriod, seconds
    list_watch_period: int
    #: NodeD -reportInterval, seconds
    report_interval: int
    resources: Dict[str, Dict[str, str]]  # component -> {"cpu": "...", "memory": "..."}
    notes: List[Note]
    #: OS flavour of the registry's image tags from 26.1.0 (scheduler.image_os)
    image_os: str = "openeuler24.03"
    #: the Volcano queues the profile's jobs name, sorted: the scheduling stack creates each, so none
    #: of its jobs reaches the Ascend Operator before its queue exists (the operator refuses such a
    #: job and does not look again: ascendjob_validate.go validateBasicInfo)
    queues: List[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class EnvVar(PlanPart):
    name: str
    value: Optional[str] = None
    #: downward-API field path (e.g. "status.podIP") instead of a literal value
    field_path: Optional[str] = None
    #: who needs it and why (printed by the text plan, not rendered into YAML)
    reason: str = ""


@dataclasses.dataclass
class Port(PlanPart):
    name: str
    container_port: int
    protocol: str = "TCP"
    reason: str = ""


@dataclasses.dataclass
class Volume(PlanPart):
    """A pod volume and where the training container mounts it."""

    name: str
    mount_path: str
    #: one of: nfs, pvc, host_path, empty_dir_memory, config_map
    source: str
    server: Optional[str] = None
    path: Optional[str] = None
    claim_name: Optional[str] = None
    read_only: bool = False
    size_limit: Optional[str] = None
    reason: str = ""
    #: the ConfigMap of a config_map volume
    config_map: Optional[str] = None
    #: hostPath type (Directory, DirectoryOrCreate, File, ...); None: unchecked
    host_path_type: Optional[str] = None
    #: the Secret of a secret volume
    secret: Optional[str] = None


@dataclasses.dataclass
class PodSettingsPlan(PlanPart):
    """The training pods' settings beside the recovery plan (jobs[].pod), in Kubernetes form; what they
    may not override is checked by rule pod-settings. Labels, annotations and node selection are merged
    into each replica's."""

    requests: Dict[str, str] = dataclasses.field(default_factory=dict)
    limits: Dict[str, str] = dataclasses.field(default_factory=dict)
    tolerations: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    priority_class: Optional[str] = None
    #: pod-level securityContext fields (runAsUser, fsGroup, seccompProfile, ...)
    pod_security: Dict[str, Any] = dataclasses.field(default_factory=dict)
    #: container-level securityContext fields (privileged, capabilities, ...)
    container_security: Dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class ConfigMapPlan(PlanPart):
    """A ConfigMap the job's pods mount (reset-config, rings-config, the profile)."""

    name: str
    labels: Dict[str, str]
    data: Dict[str, str]
    #: filled by the deployment with the profile holding this job alone (the plan does not hold it;
    #: manifests.deployment.job_profile_texts)
    holds_profile: bool = False
    reason: str = ""


@dataclasses.dataclass
class VolcanoPolicy(PlanPart):
    """A lifecycle policy of a Volcano Job (event -> action)."""

    event: str
    action: str
    reason: str = ""


@dataclasses.dataclass
class ReplicaPlan(PlanPart):
    """One AscendJob replica spec (Master/Worker for PyTorch, Scheduler/Worker for MindSpore)."""

    type: str
    replicas: int
    npus: int
    restart_policy: str
    host_network: bool
    #: None: not set in the pod (the Kubernetes default)
    termination_grace_period_seconds: Optional[int]
    ports: List[Port]
    env: List[EnvVar]
    runs_taskd_manager: bool
    labels: Dict[str, str]
    annotations: Dict[str, str]
    #: extended resources, requests equal to limits (YAMLCFG), e.g. {"huawei.com/Ascend910": "8"}
    resources: Dict[str, str] = dataclasses.field(default_factory=dict)
    node_selector: Dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class SharedVolumePlan(PlanPart):
    """A volume on shared storage that Pulumi provisions (PV/PVC) and every pod mounts."""

    name: str
    purpose: str
    mount_path: str
    storage: str  # nfs | storage_class
    server: Optional[str]
    path: Optional[str]
    storage_class: Optional[str]
    size: str
    #: namespaces of the jobs that mount it (one claim in each)
    namespaces: List[str] = dataclasses.field(default_factory=list)
    reclaim_policy: str = "Retain"
    #: the job the volume belongs to
    job: str = ""
    #: NFS: the export (storage.nfs.path) and the volume's directory under it,
    #: ``<namespace>/<job>/<purpose>`` (``path`` is the two joined)
    export: Optional[str] = None
    directory: Optional[str] = None
    #: NFS: uid, gid and mode the directory is given before a pod mounts it, and the image of the
    #: Job that creates it (storage.nfs)
    owner: Optional[int] = None
    group: Optional[int] = None
    mode: Optional[str] = None
    prepare_image: Optional[str] = None


@dataclasses.dataclass
class WheelPlan(PlanPart):
    """A vendor wheel the image installs: from a file or URL, checked against sha256 when given,
    never from a package index by name."""

    name: WheelName
    version: Optional[str]
    #: absolute path on the machine that builds the image (resolved against the profile's directory)
    file: Optional[str]
    url: Optional[str]
    sha256: Optional[str]
    reason: str


@dataclasses.dataclass
class ImagePlan(PlanPart):
    """How the training image must be built for the chosen recovery features."""

    #: the image reference the jobs run (image.name), None: built and named by the deployment
    name: Optional[str]
    base: Optional[str]
    framework: Framework
    wheels: List[WheelPlan]
    runpy_patch: Optional[str]  # the import line inserted before the anchor in torch/distributed/run.py
    runpy_anchor: Optional[str]  # "import os" (TaskD) or "import logging" (mindx_elastic)
    #: the run user every image and host shares (name, uid = gid)
    user: str
    uid: int
    notes: List[Note]
    #: the software the profile says the image has (``resumable doctor`` compares what is installed)
    torch: Optional[str] = None
    torch_npu: Optional[str] = None
    cann: Optional[str] = None
    mindspore: Optional[str] = None
    #: the reference the job's pods run (``render``, the build line of ``image context``): image.name, else
    #: ``<image.registry>/<job>:<release>``, else the local ``ascend-resumable/<job>:<release>``
    reference: str = ""
    #: True when ``reference`` names a registry the nodes pull from (False: a local name nodes must have)
    pullable: bool = False
    #: image pull Secrets of the training pods (image.pull_secrets)
    pull_secrets: List[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class TaskdManagerPlan(PlanPart):
    """Where the TaskD Manager runs and the config it is started with (TASKDAPI 04)."""

    enabled: bool
    where: TaskdManagerWhere
    condition: str  # the shell test the launcher uses
    job_id_env: str
    node_nums: int
    proc_per_node: int
    process_enable: Optional[str]  # value of TASKD_PROCESS_ENABLE, None = unset


def env_reference(flag: str, name: str) -> str:
    """How the plan shows a value the pod supplies: ``$NAME`` (``resumable launch`` puts in its value)."""
    return "$" + name


#: a launcher option's value from the pod's environment: (the option, the variable) -> its text
PodValue = Callable[[str, str], str]


@dataclasses.dataclass(frozen=True)
class TorchrunOptions(PlanPart):
    """torchrun's options (also torch_npu_run's, which wraps torch.distributed.run), settled once and
    typed, as torch's own LaunchConfig holds them (TORCH torch/distributed/launcher/api.py). The
    rendezvous values the Ascend Operator injects are named by their variable (ENV Table 2) and
    read in the pod."""

    nproc_per_node: int
    nnodes: int
    node_rank_env: str = C.ENV_RANK
    master_addr_env: str = C.ENV_MASTER_ADDR
    master_port_env: str = C.ENV_MASTER_PORT
    #: None: not passed, torchrun's own default applies
    max_restarts: Optional[int] = None
    #: seconds between the agent's looks at its workers; None: not passed (torchrun's default)
    monitor_interval: Optional[float] = None

    def argv(self, pod: PodValue = env_reference) -> List[str]:
        """The options on torchrun's command line (torch/distributed/run.py spellings)."""
        out = [
            "--nproc_per_node=%d" % self.nproc_per_node,
            "--nnodes=%d" % self.nnodes,
            "--node_rank=%s" % pod("--node_rank", self.node_rank_env),
            "--master_addr=%s" % pod("--master_addr", self.master_addr_env),
            "--master_port=%s" % pod("--master_port", self.master_port_env),
        ]
        if self.max_restarts is not None:
            out.append("--max_restarts=%d" % self.max_restarts)
        if self.monitor_interval is not None:
            out.append("--monitor_interval=%g" % self.monitor_interval)
        return out


@dataclasses.dataclass(frozen=True)
class MsrunOptions(PlanPart):
    """msrun's options (MS-MSRUN), typed; the scheduler address, port and node rank come from what the
    Ascend Operator injects (ENV Table 2)."""

    worker_num: int
    local_worker_num: int
    master_addr_env: str = C.ENV_MS_SCHED_HOST
    master_port_env: str = C.ENV_MS_SCHED_PORT
    node_rank_env: str = C.ENV_MS_NODE_RANK
    #: msrun --join: the launcher waits for its workers instead of returning
    join: bool = True

    def argv(self, pod: PodValue = env_reference) -> List[str]:
        """The options on msrun's command line."""
        return [
            "--worker_num=%d" % self.worker_num,
            "--local_worker_num=%d" % self.local_worker_num,
            "--master_addr=%s" % pod("--master_addr", self.master_addr_env),
            "--master_port=%s" % pod("--master_port", self.master_port_env),
            "--node_rank=%s" % pod("--node_rank", self.node_rank_env),
            "--join=%s" % self.join,
        ]


#: the options of one launcher (torchrun and torch_npu_run share torchrun's)
LaunchOptions = Union[TorchrunOptions, MsrunOptions]


@dataclasses.dataclass
class LauncherPlan(PlanPart):
    """What the in-image launcher (``resumable launch``) does.

    The launcher's options are held once, typed (``config``); the JSON form shows the command line
    they give (``options``, and ``args`` with the training script and its arguments), which is what
    ``resumable launch`` runs with each ``$VAR`` replaced by the pod's value."""

    JSON_DERIVED = (("args", "launcher"), ("options", "notes"))
    JSON_HIDDEN = ("config",)

    launcher: Launcher
    config: LaunchOptions
    env: List[EnvVar]
    ld_preload: List[str]
    taskd_manager: TaskdManagerPlan
    compile_mode: CompileMode
    #: False = operator binaries, True = online compilation (with the cache), None = framework default
    jit_compile: Optional[bool]
    #: the call the launcher makes in each training process for jit_compile: torch.npu.set_compile_mode
    #: on PyTorch (RTO 表9/表10), mindspore...op_tuning.op_compile on MindSpore (MS-OPCOMPILE)
    compile_call: Optional[str]
    notes: List[Note]
    #: the training script and its arguments (``resumable launch -- SCRIPT ARGS`` replaces those two)
    script: str = ""
    script_args: List[str] = dataclasses.field(default_factory=list)
    #: job-scoped log directory (``$(VAR)`` expanded in the container): recovery timeline, manager log
    log_dir: str = ""
    #: each restart attempt's workers use their own key prefix on the agent's TCPStore (torch >= 2.6)
    attempt_store_prefix: bool = False
    #: MindIO TTP controller port when the job uses it: the launcher points each rank at the controller
    #: (TTP_ADDR on PyTorch, MS_TFT_IP/MS_TFT_PORT on MindSpore; runtime.podenv)
    ttp_port: Optional[int] = None
    #: pods of the job (one node each): the msrun node ranks the launcher accepts are 0..nodes-1
    nodes: int = 1
    #: seconds without a heartbeat before the launcher records a training process as hung and kills it
    #: (plan.launcher.hang_timeout), and the heartbeat period of the start-up hook
    hang_timeout: int = C.HANG_FLOOR_SECONDS
    heartbeat_seconds: float = C.HEARTBEAT_SECONDS
    #: seconds a training process may take from its start through its process group's initialisation
    #: (once a peer has begun it), and a recovery from the fault to its new processes
    #: (plan.launcher.start_timeout)
    start_timeout: int = C.START_FLOOR_SECONDS
    #: the workers of a restart are forked from a process that has imported the framework
    warm_workers: bool = False

    @property
    def options(self) -> List[str]:
        """The launcher's own options, ``$VAR`` for what the pod supplies."""
        return self.config.argv()

    @property
    def args(self) -> List[str]:
        """The launcher's command line after its name: its options, the training script, its arguments."""
        return [*self.options, self.script, *self.script_args]


@dataclasses.dataclass
class BudgetTerm(PlanPart):
    name: str  # T0..T4 and detection
    seconds: float
    assumption: str
    source: str


@dataclasses.dataclass
class BudgetLine(PlanPart):
    level: str
    terms: List[BudgetTerm]
    total_seconds: float


@dataclasses.dataclass
class LevelShare(PlanPart):
    """The share of faults one level of the ladder takes, and why (plan/budget.py fault_shares)."""

    level: str
    share: float  # of all faults, 0 to 1
    total_seconds: float  # the level's recovery time (its budget line)
    why: str
    source: str


@dataclasses.dataclass
class BudgetPlan(PlanPart):
    """Recovery time per fault for each level of the ladder, against plain job-level rescheduling, and
    the expected time per fault: each level weighted by the share of faults it takes."""

    ladder: List[BudgetLine]  # first tried first
    baseline: BudgetLine  # job-level rescheduling, collective timeout, no compile help
    best_saving_seconds: float
    worst_saving_seconds: float
    #: the share of faults each level takes (levels that take none are left out), first tried first
    shares: List[LevelShare] = dataclasses.field(default_factory=list)
    #: the faults no level takes (a ladder without job-level rescheduling): the job ends
    unrecovered_share: float = 0.0
    #: sum of share x total over the levels, divided by the recovered share; None when nothing is recovered
    expected_seconds: Optional[float] = None
    #: the baseline's total minus the expected time
    expected_saving_seconds: Optional[float] = None
    #: a rung that saves next to nothing against the next one: what dominates, what to change
    notes: List[Note] = dataclasses.field(default_factory=list)
    #: how a hung (not crashed) training is detected, each path with the time it takes, fastest first
    hang_detection: List[BudgetTerm] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class JobPlan(PlanPart):
    JSON_DERIVED = (("command", "scheduler_name"),)

    name: str
    namespace: str
    kind: str  # AscendJob | Job (Volcano)
    framework: Framework
    levels: List[str]  # the recovery ladder, first tried first
    strategies: List[str]
    labels: Dict[str, str]
    annotations: Dict[str, str]
    replicas: List[ReplicaPlan]
    volumes: List[Volume]
    image: ImagePlan
    launcher: LauncherPlan
    budget: BudgetPlan
    notes: List[Note]
    api_version: str = ""
    scheduler_name: str = ""
    config_maps: List[ConfigMapPlan] = dataclasses.field(default_factory=list)
    #: AscendJob runPolicy.backoffLimit / Volcano Job maxRetry; None: not set
    backoff_limit: Optional[int] = None
    #: pods that must be schedulable together (gang scheduling)
    min_available: int = 0
    #: Volcano Job policies (empty for an AscendJob)
    policies: List[VolcanoPolicy] = dataclasses.field(default_factory=list)
    #: Volcano queue: AscendJob runPolicy.schedulingPolicy.queue / Volcano Job spec.queue
    queue: str = ""
    #: the pods' settings beside the recovery plan (jobs[].pod)
    pod: PodSettingsPlan = dataclasses.field(default_factory=PodSettingsPlan)
    #: what the Ascend Operator injects for recovery into the ascend container of every pod
    #: (resumable.operatorenv); none of it is in the replicas' env (the pod template)
    operator_env: List[EnvVar] = dataclasses.field(default_factory=list)

    @property
    def command(self) -> List[str]:
        """The training container's command: ``resumable launch -- SCRIPT ARGS``; the launcher reads
        the rest from the plan of the mounted profile."""
        return ["resumable", "launch", "--", self.launcher.script, *self.launcher.script_args]


@dataclasses.dataclass
class NodePlan(PlanPart):
    """What every compute node needs (consumed by the Ansible roles)."""

    #: NPU driver/firmware (HDK) version the nodes must run (cluster.hdk), None: not pinned
    hdk: Optional[str]
    chip: Chip
    accelerator_type: str
    arch: Arch
    labels: Dict[str, str]
    master_labels: Dict[str, str]
    #: node selector of the NPU DaemonSets (device plugin, NodeD, NPU Exporter; INST01): without it
    #: their pods leave the node (the driver role pauses them with it, node labels hold it back)
    worker_selector: Dict[str, str]
    #: every label an NPU DaemonSet selects (worker_selector, plus accelerator=huawei-Ascend910 for the device
    #: plugin before 26.1): the driver role removes them for its maintenance window, node labels hold them back
    npu_daemonset_selector: Dict[str, str]
    users: List[Dict[str, Any]]
    log_dirs: List[Dict[str, Any]]
    reserved_ports: List[int]
    shared_mounts: List[Dict[str, Any]]
    ranktable_dirs: List[str]
    nofile_limit: Optional[int]
    notes: List[Note]
    #: container runtime of the nodes; Ascend Docker Runtime becomes its default runtime (INST02)
    container_runtime: ContainerRuntime
    #: Ascend Docker Runtime: version (the MindCluster release, same as the device plugin, INST04), the
    #: runtime name it registers, its --install-path and the binary the engine config points at
    docker_runtime: Dict[str, str]
    #: where the device plugin pods run, for restarting one after its node's runtime changed
    device_plugin: Dict[str, str]
    #: labels of inference servers and the products (npu_facts names) that get them (INST01 Table 1)
    server_usage_labels: Dict[str, str]
    inference_products: List[str]
    #: files the DaemonSets mount with hostPath type File (must exist before the pods start)
    host_files: List[Dict[str, Any]]
    #: owner, group and mode of the ranktable root and the per-job ranktable directories
    ranktable_access: Dict[str, str]
    #: where the nodes keep the profile for `resumable` (path) and the variable naming it (env)
    node_profile: Dict[str, str]
    #: the extended resource the device plugin advertises on a compute node (YAMLCFG) and how many
    #: NPUs a compute node has (the accelerator type's count, INST01 Table 1)
    npu_resource: str
    npus_per_node: int
    #: the job directories on the NFS export (path under the management nodes' mount of the export,
    #: owner, group, mode): created before a pod mounts them (plan.nodes.job_dirs)
    job_dirs: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    #: the whole NFS export as the management nodes mount it to create ``job_dirs`` (empty: none to create)
    export_mount: Dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Plan(PlanPart):
    profile: str
    cluster_name: str
    scheduler: SchedulerPlan
    nodes: NodePlan
    storage: List[SharedVolumePlan]
    jobs: List[JobPlan]
    #: every violation the profile has left: errors (a plan is only handed out without them, see
    #: :func:`resumable.api.load_plan`) and the warnings not acknowledged in the profile
    violations: List[Violation]
    #: plan-wide notes, among them the warnings the profile acknowledges
    notes: List[Note]
