"""The profile: the one declaration a user writes (cluster facts + recovery intent).

A profile has one cluster and one or more jobs. These dataclasses are its schema: the loader,
``resumable schema`` and docs/profile.md are generated from them (see :mod:`resumable.binding`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, Optional, Tuple

from . import constants as C
from . import formats as F
from . import hardware as H
from . import releases as R
from . import safeyaml
from .binding import bind, spec
from .choices import (
    Arch,
    AutoOnOff,
    Chip,
    CompileMode,
    Component,
    ContainerRuntime,
    FaultScheduling,
    Framework,
    HotReset,
    ImageOs,
    JobKind,
    Launcher,
    PodResourceName,
    PullPolicy,
    ResourceName,
    RestartPolicy,
    SeccompType,
    Strategy,
    SubHealth,
    TaintEffect,
    TaskdManagerChoice,
    TolerationOperator,
    TorAffinity,
    WheelName,
    values,
)
from .errors import ProfileError, ProfileErrors
from .fileio import PROFILE_MAX_BYTES, read_text, size_text

STRATEGIES = values(Strategy)
#: Upper bound of the budget's durations: a day (larger figures are typing mistakes and would
#: overflow the budget's sums).
DAY = 86400


@dataclass
class Nfs:
    """An NFS export that holds the compile cache, checkpoints and ranktable directories.

    The ranktable needs no volume of its own: every node mounts <path>/ranktable at
    /user/mindx-dl/ranktable (plan.nodes.shared_mounts), where the Ascend Operator writes hccl.json
    and the training pods read it through a hostPath volume (INST08; RT06)."""

    server: str = field(
        default="", metadata=spec("NFS server address.", required=True, example="10.0.0.10", format=F.HOST)
    )
    path: str = field(default="", metadata=spec("Exported path on the server.", required=True, format=F.SERVER_PATH))
    owner: int = field(
        default=C.NFS_SQUASHED_ID,
        metadata=spec(
            "uid that owns each job's directories on the export (<path>/<namespace>/<job>/op-cache and "
            "checkpoints, created before the job's pods mount them). The training runs as root, which an export "
            "with root_squash (the NFS default) maps to 65534 (nobody): keep 65534 there; with all_squash and "
            "anonuid=N write N; with no_root_squash any owner works (NFS exports(5)).",
            minimum=0,
            maximum=C.ID_MAX,
        ),
    )
    group: int = field(
        default=C.NFS_SQUASHED_ID,
        metadata=spec(
            "gid of the job directories (65534, nogroup, is what root_squash maps root's group to; anongid=N "
            "with all_squash).",
            minimum=0,
            maximum=C.ID_MAX,
        ),
    )
    mode: str = field(
        default="0775",
        metadata=spec("Mode of the job directories (octal).", format=F.MODE),
    )
    prepare_image: str = field(
        default=C.STORAGE_PREPARE_IMAGE,
        metadata=spec(
            "Image of the Kubernetes Job that creates the job directories on the export as owner:group "
            "(`resumable render` and `pulumi up`; it needs sh, mkdir, chmod and stat); on a cluster without "
            "internet access name a copy in your registry.",
            format=F.IMAGE,
        ),
    )


@dataclass
class Storage:
    """Shared storage for the compile caches and checkpoints (give nfs or storage_class); RankTable
    mode needs nfs (the nodes mount its ranktable directory)."""

    nfs: Optional[Nfs] = field(default=None, metadata=spec("An NFS export mounted by every pod."))
    storage_class: Optional[str] = field(
        default=None,
        metadata=spec(
            "A ReadWriteMany storage class to provision volumes from instead of NFS.", format=F.DNS_SUBDOMAIN
        ),
    )
    cache_size: str = field(
        default="200Gi",
        metadata=spec(
            "Size of the compile-cache volume (a storage-class claim's request; informational for NFS, "
            "where Kubernetes does not enforce capacity, KUBE PersistentVolumes).",
            format=F.SIZE,
        ),
    )
    checkpoint_size: str = field(default="2Ti", metadata=spec("Size of the checkpoint volume.", format=F.SIZE))


@dataclass
class Scheduler:
    """MindCluster scheduling-stack settings (Volcano, device plugin, NodeD)."""

    volcano: Optional[str] = field(
        default=None,
        metadata=spec("Volcano build (1.7.0, 1.9.0, 1.12.0); default: the release's newest.", version=True),
    )
    queue: str = field(
        default=C.VOLCANO_DEFAULT_QUEUE,
        metadata=spec(
            "Volcano queue of every training job (AscendJob runPolicy.schedulingPolicy.queue, Volcano Job "
            "spec.queue); jobs[].queue overrides it. The queue must exist: Volcano creates 'default', and "
            "the Ascend Operator with gang scheduling refuses a job whose queue it cannot get "
            "(MC:component/ascend-operator/pkg/controllers/v1/ascendjob_validate.go).",
            format=F.DNS_SUBDOMAIN,
        ),
    )
    grace_over_time: int = field(
        default=900,
        metadata=spec(
            "Volcano init-param grace-over-time: seconds a faulty pod may take to stop gracefully "
            "before it is force-deleted (INST05 Table 3, range 2 to 3600).",
            minimum=C.RANGE_GRACE_OVER_TIME[0],
            maximum=C.RANGE_GRACE_OVER_TIME[1],
        ),
    )
    hot_reset: Optional[HotReset] = field(
        default=None,
        metadata=spec(
            "Device plugin -hotReset; null = chosen from the recovery strategies (2 for process-level "
            "recovery, 1 for graceful fault tolerance, otherwise off) (INST04 Table 3).",
        ),
    )
    list_watch_period: int = field(
        default=5,
        metadata=spec(
            "Device plugin -listWatchPeriod in seconds (INST04 Table 3, range 3 to 1800; RT07).",
            minimum=C.RANGE_LIST_WATCH_PERIOD[0],
            maximum=C.RANGE_LIST_WATCH_PERIOD[1],
        ),
    )
    report_interval: int = field(
        default=5,
        metadata=spec(
            "NodeD -reportInterval in seconds (INST09, range 1 to 300; RT07).",
            minimum=C.RANGE_REPORT_INTERVAL[0],
            maximum=C.RANGE_REPORT_INTERVAL[1],
        ),
    )
    image_registry: str = field(
        default="",
        metadata=spec(
            "Registry prefix for MindCluster images; empty = the local names the release YAMLs use.",
            format=F.REGISTRY,
        ),
    )
    image_os: ImageOs = field(
        default="openeuler24.03",
        metadata=spec(
            "OS flavour of the stack images on Huawei's registry from MindCluster 26.1.0, whose tags are "
            "<version>-<os> (v26.1.0-openeuler24.03, v26.1.0-ubuntu22.04; Volcano v1.12.0-v26.1.0-openeuler24.03 "
            "or, for ubuntu22.04, -alpinelatest); used with image_registry only (MC:@branch_v26.1.0 "
            "docker/*/OVERVIEW.md).",
        ),
    )
    image_pull_policy: Optional[PullPolicy] = field(
        default=None,
        metadata=spec(
            "Pull policy for all stack images; null = IfNotPresent when image_registry is set (the images are "
            "pulled from it), else upstream's (Never for MindCluster images, loaded on every node; IfNotPresent "
            "for Volcano).",
        ),
    )
    image_pull_secrets: List[str] = field(
        default_factory=list, metadata=spec("Names of existing image pull secrets.", format=F.DNS_SUBDOMAIN)
    )
    resources: Dict[Component, Dict[ResourceName, str]] = field(
        default_factory=dict,
        metadata=spec(
            "Per-component resource overrides, e.g. volcano-scheduler: {cpu: '8', memory: 8Gi}.",
            format=F.QUANTITY,
        ),
    )


@dataclass
class Cluster:
    """Facts about the cluster the jobs run on."""

    name: str = field(default="ascend", metadata=spec("A name for the cluster (used in outputs).", dns_name=True))
    mindcluster: str = field(
        default="",
        metadata=spec(
            "MindCluster release of every component: one of %s, or a service pack of one (7.3.0.SPC1); "
            "`render` and `pulumi up` deploy %s." % (", ".join(H.MINDCLUSTER_RELEASES), ", ".join(R.STACK_RELEASES)),
            version=True,
            required=True,
            example="7.3.0",
        ),
    )
    chip: Chip = field(
        default="ascend-910b",
        metadata=spec(
            "Chip family, as the ring-controller.atlas label writes it (YAMLCFG): %s."
            % "; ".join("%s = %s" % kv for kv in H.CHIP_PRODUCTS.items()),
            hints=H.CHIP_HINTS,
            choices_doc=H.CHIP_PRODUCTS,
        ),
    )
    accelerator_type: str = field(
        default="module-910b-8",
        metadata=spec(
            "Node label accelerator-type of the compute nodes (INST01 Table 1): %s; chip ascend-npu "
            "(Atlas 350/850/950) takes its own labels."
            % "; ".join(
                "%s = %s (%s, %d NPUs a node%s)"
                % (a.label, a.products, a.chip, a.node_npus, ", SuperPoD" if a.super_pod else "")
                for a in H.ACCELERATOR_TYPES.values()
            ),
            format=F.LABEL_VALUE,
        ),
    )
    arch: Arch = field(default="aarch64", metadata=spec("CPU architecture."))
    kubernetes: str = field(default="1.28", metadata=spec("Kubernetes version.", version=True))
    container_runtime: ContainerRuntime = field(
        default="containerd",
        metadata=spec("Container runtime on the nodes."),
    )
    host_network: bool = field(
        default=False,
        metadata=spec("Training pods use the host network (recommended above about 1000 nodes, YAMLCFG)."),
    )
    hdk: Optional[str] = field(
        default=None,
        metadata=spec(
            "NPU driver/firmware (HDK) version the nodes must run, e.g. 25.0.rc1.1; the node roles read "
            "it from plan.nodes.hdk; null = not pinned.",
            version=True,
        ),
    )
    reserve_taskd_ports: Optional[bool] = field(
        default=None,
        metadata=spec(
            "Reserve TaskD ports 9601/9602 in net.ipv4.ip_local_reserved_ports on the nodes; "
            "null = when host_network is on and TaskD is used (RT07 notes)."
        ),
    )


@dataclass
class Wheel:
    """A vendor wheel file for the training image: a local file or an https URL, with its sha256.

    TaskD, MindIO and mindx_elastic are never installed from a package index by name: public
    projects with those names exist (PLR 构建镜像 installs "TaskD whl安装包的路径"). `validate` and
    `plan` check what the declaration says (an https URL, a 64-digit sha256, a file name whose
    distribution and version match); they do not look for the file, since a profile is often
    validated on a machine without the wheels: `resumable image context` checks that the file
    exists and matches its sha256 when it builds the image.
    """

    file: Optional[str] = field(
        default=None,
        metadata=spec(
            "Path of the .whl file on the machine that builds the image (relative to the profile's "
            "directory); its name must carry the wheel's distribution and version (PEP427).",
            example="wheels/taskd-7.3.0-py3-none-linux_aarch64.whl",
            format=F.FILE_PATH,
        ),
    )
    url: Optional[str] = field(
        default=None, metadata=spec("https URL of the .whl file (instead of file); give sha256 with it.")
    )
    sha256: Optional[str] = field(
        default=None, metadata=spec("sha256 of the .whl file (64 hex digits); checked before it is installed.")
    )


@dataclass
class Image:
    """The training image's software."""

    name: Optional[str] = field(
        default=None,
        metadata=spec(
            "Training image reference (registry/name:tag) the job templates run (plan.jobs[].image.name); "
            "null = the deployment builds and names it.",
            format=F.IMAGE,
        ),
    )
    registry: Optional[str] = field(
        default=None,
        metadata=spec(
            "Registry prefix the training image is pushed to and pulled from when image.name is not given: the "
            "job runs <registry>/<job>:<release>, the reference `resumable image context` tags and pushes; null "
            "with no image.name = a local name (ascend-resumable/<job>:<release>) only nodes that loaded it can run.",
            format=F.REGISTRY,
        ),
    )
    pull_secrets: List[str] = field(
        default_factory=list,
        metadata=spec(
            "Existing image pull Secrets in the job's namespace the training pods name (imagePullSecrets); a "
            "Pulumi stack with a registry login adds its own <job>-registry.",
            format=F.DNS_SUBDOMAIN,
        ),
    )
    base: Optional[str] = field(
        default=None, metadata=spec("Base image the training image is built from.", format=F.IMAGE)
    )
    framework: Framework = field(default="pytorch", metadata=spec("Framework."))
    torch: Optional[str] = field(default=None, metadata=spec("PyTorch version.", version=True))
    torch_npu: Optional[str] = field(
        default=None,
        metadata=spec(
            "torch_npu version: the pip version (2.1.0.post8) or the FrameworkPTAdapter release (6.0.RC3); "
            "a pip version is looked up in the published version table (PTA, docs/rules.md).",
            version=True,
        ),
    )
    framework_pt_adapter: Optional[str] = field(
        default=None,
        metadata=spec(
            "FrameworkPTAdapter release of torch_npu (6.0.RC3, 7.3.0); needed for the watchdog, "
            "Parallel Store and RankTable gates only when torch_npu is a pip version the published "
            "table does not list; must agree with the table otherwise (PTA).",
            version=True,
        ),
    )
    cann: Optional[str] = field(default=None, metadata=spec("CANN toolkit version.", version=True))
    mindspore: Optional[str] = field(default=None, metadata=spec("MindSpore version.", version=True))
    mindspeed_llm: Optional[str] = field(default=None, metadata=spec("MindSpeed-LLM version.", version=True))
    taskd: Optional[str] = field(
        default=None, metadata=spec("TaskD wheel version (null: not installed).", version=True)
    )
    mindio_ttp: Optional[str] = field(
        default=None, metadata=spec("MindIO TTP (TFT) wheel version (null: not installed).", version=True)
    )
    mindio_acp: Optional[str] = field(
        default=None, metadata=spec("MindIO ACP wheel version (null: not installed).", version=True)
    )
    mindx_elastic: Optional[str] = field(
        default=None,
        metadata=spec("Legacy Elastic Agent (mindx_elastic) wheel version (null: not installed).", version=True),
    )
    wheels: Dict[WheelName, Wheel] = field(
        default_factory=dict,
        metadata=spec(
            "The vendor wheel files the image recipe installs, by name (taskd, mindio_ttp, mindio_acp, "
            "mindx_elastic); each a file or an https URL with an optional sha256. Every declared wheel "
            "is installed; the ones the recovery settings need must be declared (PLR 构建镜像)."
        ),
    )


@dataclass
class Hccl:
    """HCCL timeouts (CANN environment variables)."""

    connect_timeout: Optional[int] = field(
        default=None,
        metadata=spec(
            "HCCL_CONNECT_TIMEOUT in seconds; null = CANN default 120 (HA-CANN-CONNECT).",
            minimum=120,
            maximum=7200,
        ),
    )
    exec_timeout: Optional[int] = field(
        default=None,
        metadata=spec(
            "HCCL_EXEC_TIMEOUT in seconds, 0 = never; null = CANN default (1836 on A2) (HA-CANN-EXEC). "
            "The upper bound 2147483647 is this project's limit (PROJECT).",
            minimum=0,
            maximum=2147483647,
        ),
    )


@dataclass
class Recovery:
    """Recovery intent: what MindCluster may do when a fault hits."""

    fault_scheduling: FaultScheduling = field(
        default="grace",
        metadata=spec(
            "Label fault-scheduling: grace (graceful delete, then force after grace-over-time), force "
            "(immediate delete; not with the host network), or off (no resumable training) (YAMLCFG; RT04).",
        ),
    )
    fault_retry_times: Optional[int] = field(
        default=None,
        metadata=spec(
            "Label fault-retry-times: unconditional retries on service-plane faults; null = unset "
            "(K8S Pod labels table, range 0 to 100).",
            minimum=0,
            maximum=100,
        ),
    )
    pod_rescheduling: bool = field(
        default=False, metadata=spec("Label pod-rescheduling=on: Pod-level rescheduling (RT04).")
    )
    strategies: List[str] = field(
        default_factory=list,
        metadata=spec(
            "Annotation recover-strategy: process-level strategies, any of retry, recover, "
            "recover-in-place, elastic-training, dump, exit (PLR 准备任务YAML).",
            format=F.TOKEN,
        ),
    )
    watchdog: AutoOnOff = field(
        default="auto",
        metadata=spec(
            "Watchdog fault detection: auto (on where the image supports it and no process-level "
            "strategy forbids it; left at the vendor default when support is unknown), on, off (RTO 表1).",
        ),
    )
    max_restarts: Optional[int] = field(
        default=None,
        metadata=spec(
            "torchrun --max_restarts: faults tolerated inside the container, an integer; null = the TaskD "
            "default %d (RTO 表2). The range 0 to %d is this project's limit (PROJECT). torchrun "
            "only: msrun has no such option (MS-MSRUN)." % (C.MAX_RESTARTS_UNDER_AGENT, C.MAX_RESTARTS_UNDER_AGENT),
            minimum=0,
            maximum=C.MAX_RESTARTS_UNDER_AGENT,
        ),
    )
    monitor_interval: Optional[float] = field(
        default=None,
        metadata=spec(
            "torchrun --monitor_interval in seconds, a number (torch reads a float; RTO 表2 calls it an integer, "
            "which torch never required); null = not passed, so torchrun's own default applies: 0.1 s from torch "
            "2.4, 5 s before (TORCH; RTO 表2 gives %d s). Not read where TaskD's patch of torch elastic runs the "
            "agent loop (PyTorch Pod- or process-level recovery from MindCluster 7.3.0): that loop looks every "
            "1 s (docs/runtime.md). The range 0.01 to 3600 is this project's limit (PROJECT). torchrun only: "
            "msrun has no such option (MS-MSRUN)." % C.MONITOR_INTERVAL_DEFAULT,
            minimum=0.01,
            maximum=3600,
        ),
    )
    hang_timeout: Optional[int] = field(
        default=None,
        metadata=spec(
            "Seconds without a heartbeat from a training process before resumable launch records it as hung "
            "and kills it, so the agent's recovery takes over; null = derived by the plan (at least 60, "
            "below the HCCL execution timeout where it can be; docs/runtime.md). The range 10 to 86400 is "
            "this project's limit (PROJECT).",
            minimum=10,
            maximum=86400,
        ),
    )
    start_timeout: Optional[int] = field(
        default=None,
        metadata=spec(
            "Seconds a training process may take from its start through the initialisation of its process "
            "group (once a peer of its generation has begun that), and a recovery from the fault to its new "
            "processes, before resumable launch takes it for hung; null = derived by the plan (at least 300, "
            "above the budget's rescheduling and communication init; docs/runtime.md). The range 10 to 86400 "
            "is this project's limit (PROJECT). torchrun only.",
            minimum=10,
            maximum=86400,
        ),
    )
    warm_workers: bool = field(
        default=False,
        metadata=spec(
            "Start the training processes of a restart by forking them from a process that has already "
            "imported torch (and torch_npu), instead of new interpreters; off by default. Turned off with a "
            "warning where the import initialises a device (docs/runtime.md, warm workers). torchrun only "
            "(PROJECT).",
        ),
    )
    sub_health: SubHealth = field(
        default="ignore",
        metadata=spec(
            "Label subHealthyStrategy (VCAPI; RT05).",
        ),
    )
    wait_reschedule_timeout: Optional[int] = field(
        default=None,
        metadata=spec(
            "Annotation wait-reschedule-timeout in seconds; null = %d (YAMLCFG, range %d to %d)."
            % (C.WAIT_RESCHEDULE_TIMEOUT_DEFAULT, *C.RANGE_WAIT_RESCHEDULE_TIMEOUT),
            minimum=C.RANGE_WAIT_RESCHEDULE_TIMEOUT[0],
            maximum=C.RANGE_WAIT_RESCHEDULE_TIMEOUT[1],
        ),
    )
    graceful: bool = field(
        default=False,
        metadata=spec("Deprecated graceful fault tolerance (device plugin -hotReset=1) (RT01)."),
    )
    taskd_process_enable: AutoOnOff = field(
        default="auto",
        metadata=spec(
            "TASKD_PROCESS_ENABLE: auto (as the release needs), on, off (RT04).",
        ),
    )
    termination_grace_period: Optional[int] = field(
        default=None,
        metadata=spec(
            "Pod terminationGracePeriodSeconds; must stay below Volcano grace-over-time (YAMLCFG); null = not "
            "set (the Kubernetes default, 30 s). The range 0 to 86400 is this project's limit (PROJECT).",
            minimum=0,
            maximum=86400,
        ),
    )
    backoff_limit: Optional[int] = field(
        default=None,
        metadata=spec(
            "Most job reschedules: AscendJob runPolicy.backoffLimit, Volcano Job maxRetry; null = not set "
            "(unlimited for an AscendJob, 3 for a Volcano Job) (YAMLCFG).",
            minimum=1,
            maximum=100000,
        ),
    )
    restart_policy: RestartPolicy = field(
        default="Never",
        metadata=spec("Replica restartPolicy."),
    )
    ttp_port: Optional[int] = field(
        default=C.TTP_PORT_DEFAULT,
        metadata=spec("MindIO TTP controller port (TTP_PORT, port ttp-port; RT06).", minimum=1, maximum=65535),
    )


@dataclass
class Compile:
    """Operator compilation: binaries, a compile cache on shared storage, or the framework default."""

    mode: CompileMode = field(
        default="default",
        metadata=spec(
            "binaries (jit_compile=False), cache (jit_compile=True + ASCEND_CACHE_PATH on shared storage), "
            "or default (RTO 表9/表10). On MindSpore (2.5.0+) the launcher calls op_compile(False/True) "
            "instead of torch.npu.set_compile_mode (MS-OPCOMPILE).",
        ),
    )
    cache_path: str = field(
        default="/job/op_cache",
        metadata=spec(
            "ASCEND_CACHE_PATH: where the shared compile cache is mounted (RTO 表10).", format=F.CONTAINER_PATH
        ),
    )
    max_op_cache_size: Optional[int] = field(
        default=None,
        metadata=spec(
            "ASCEND_MAX_OP_CACHE_SIZE; null = -1 on shared storage (RTO 表10).", minimum=-1, maximum=2**31 - 1
        ),
    )
    mindspore_graph_cache: bool = field(
        default=False,
        metadata=spec(
            "MindSpore graph cache (MS_COMPILER_CACHE_ENABLE, MS_COMPILER_CACHE_PATH=<cache_path>/ms) on "
            "the shared compile-cache volume (RT05)."
        ),
    )


@dataclass
class Checkpoint:
    """Checkpoints: where, how often, dying-gasp dump and MindIO ACP."""

    path: str = field(
        default="/job/ckpt",
        metadata=spec("Checkpoint directory inside the pods (shared storage).", format=F.CONTAINER_PATH),
    )
    interval_minutes: float = field(
        default=60.0,
        metadata=spec(
            "Minutes between periodic checkpoints (range: this project's limit, PROJECT).",
            minimum=0.1,
            maximum=100000,
        ),
    )
    dump: bool = field(
        default=False,
        metadata=spec("Dying-gasp checkpoint on a fault (needs the dump strategy and MindIO TTP) (RT05)."),
    )
    mindio_acp: bool = field(default=False, metadata=spec("MindIO ACP asynchronous checkpointing (RT05)."))
    load_seconds: Optional[float] = field(
        default=None,
        metadata=spec("Measured checkpoint load time for the budget; null = estimate.", minimum=0, maximum=DAY),
    )


@dataclass
class Budget:
    """Estimates the recovery-time budget starts from; measured values beat defaults."""

    step_seconds: float = field(default=10.0, metadata=spec("Seconds per training step.", minimum=0.001, maximum=DAY))
    compile_seconds: float = field(
        default=600.0,
        metadata=spec("Cold operator compile time after a restart, in seconds.", minimum=0, maximum=DAY),
    )
    comm_init_seconds: Optional[float] = field(
        default=None,
        metadata=spec("Collective-communication init time; null = estimate from scale.", minimum=0, maximum=DAY),
    )
    pod_start_seconds: float = field(
        default=120.0, metadata=spec("Seconds to pull/start one training pod on a node.", minimum=0, maximum=DAY)
    )


@dataclass
class JobVolume:
    """A volume of the user's own (code, data, output) mounted into every pod of the job."""

    name: str = field(default="", metadata=spec("Volume name.", required=True, dns_name=True))
    mount_path: str = field(
        default="", metadata=spec("Absolute path inside the container.", required=True, example="/job/code")
    )
    host_path: Optional[str] = field(
        default=None, metadata=spec("A directory on every node (e.g. an NFS mount the nodes share).")
    )
    claim: Optional[str] = field(
        default=None,
        metadata=spec(
            "An existing PersistentVolumeClaim in the job's namespace (instead of host_path).",
            format=F.DNS_SUBDOMAIN,
        ),
    )
    config_map: Optional[str] = field(
        default=None, metadata=spec("An existing ConfigMap in the job's namespace.", format=F.DNS_SUBDOMAIN)
    )
    secret: Optional[str] = field(
        default=None, metadata=spec("An existing Secret in the job's namespace.", format=F.DNS_SUBDOMAIN)
    )
    empty_dir: Optional[str] = field(
        default=None,
        metadata=spec(
            "An emptyDir of at most this size (e.g. 100Gi; '0' for no limit): scratch space on the node.",
            format=F.QUANTITY,
        ),
    )
    read_only: bool = field(default=False, metadata=spec("Mount read-only."))


@dataclass
class Toleration:
    """A toleration of the training pods (tainted NPU nodes; KUBE core/v1 Toleration)."""

    key: Optional[str] = field(
        default=None, metadata=spec("Taint key; null with operator Exists tolerates every taint.", format=F.LABEL_KEY)
    )
    operator: TolerationOperator = field(default="Equal", metadata=spec("Equal or Exists."))
    value: Optional[str] = field(
        default=None, metadata=spec("Taint value (with operator Equal).", format=F.LABEL_VALUE)
    )
    effect: Optional[TaintEffect] = field(default=None, metadata=spec("Taint effect; null matches every effect."))
    toleration_seconds: Optional[int] = field(
        default=None,
        metadata=spec("With effect NoExecute: seconds the pod stays after the taint appears.", minimum=0, maximum=DAY),
    )


@dataclass
class SecurityContext:
    """The training pods' security settings (Pod Security admission, site policy). NPU containers run
    as root by default (the driver's device files); set only what the site needs."""

    run_as_user: Optional[int] = field(default=None, metadata=spec("runAsUser.", minimum=0, maximum=C.ID_MAX))
    run_as_group: Optional[int] = field(default=None, metadata=spec("runAsGroup.", minimum=0, maximum=C.ID_MAX))
    run_as_non_root: Optional[bool] = field(default=None, metadata=spec("runAsNonRoot."))
    fs_group: Optional[int] = field(
        default=None, metadata=spec("Pod fsGroup (group of the mounted volumes).", minimum=0, maximum=C.ID_MAX)
    )
    supplemental_groups: List[int] = field(
        default_factory=list, metadata=spec("Pod supplementalGroups.", minimum=0, maximum=C.ID_MAX)
    )
    privileged: Optional[bool] = field(default=None, metadata=spec("Container privileged."))
    allow_privilege_escalation: Optional[bool] = field(
        default=None, metadata=spec("Container allowPrivilegeEscalation.")
    )
    read_only_root_filesystem: Optional[bool] = field(default=None, metadata=spec("Container readOnlyRootFilesystem."))
    capabilities_add: List[str] = field(
        default_factory=list, metadata=spec("Capabilities to add (e.g. IPC_LOCK).", format=F.TOKEN)
    )
    capabilities_drop: List[str] = field(
        default_factory=list, metadata=spec("Capabilities to drop (e.g. ALL).", format=F.TOKEN)
    )
    seccomp_profile: Optional[SeccompType] = field(
        default=None, metadata=spec("Pod seccompProfile type (RuntimeDefault for Pod Security restricted).")
    )


@dataclass
class Pod:
    """What the training pods get besides the recovery plan: resources beside the NPUs, tolerations,
    more node selection, priority, labels, annotations, security. Nothing here may override what the
    plan sets (a label, annotation, node label or resource it owns: rule pod-settings); anything
    else goes into a kustomize overlay (docs/deploy.md)."""

    requests: Dict[PodResourceName, str] = field(
        default_factory=dict,
        metadata=spec("Container requests beside the NPUs, e.g. {cpu: '64', memory: 512Gi}.", format=F.QUANTITY),
    )
    limits: Dict[PodResourceName, str] = field(
        default_factory=dict,
        metadata=spec("Container limits beside the NPUs (at least the requests).", format=F.QUANTITY),
    )
    tolerations: List[Toleration] = field(
        default_factory=list, metadata=spec("Tolerations, e.g. of the taint on the NPU nodes.")
    )
    node_selector: Dict[str, str] = field(
        default_factory=dict,
        metadata=spec(
            "Node labels added to the plan's selection (host-arch, accelerator-type).",
            key_format=F.LABEL_KEY,
            format=F.LABEL_VALUE,
        ),
    )
    priority_class: Optional[str] = field(
        default=None, metadata=spec("priorityClassName of the training pods.", format=F.DNS_SUBDOMAIN)
    )
    labels: Dict[str, str] = field(
        default_factory=dict,
        metadata=spec(
            "Labels of the training pods (quotas, cost centres).", key_format=F.LABEL_KEY, format=F.LABEL_VALUE
        ),
    )
    annotations: Dict[str, str] = field(
        default_factory=dict,
        metadata=spec("Annotations of the training pods.", key_format=F.ANNOTATION_KEY, multiline=True),
    )
    security_context: SecurityContext = field(
        default_factory=SecurityContext, metadata=spec("Security context (pod and container fields).")
    )


@dataclass
class Job:
    """One training job template."""

    #: fields that were removed, and what a profile that still sets one must do (binding refuses it)
    REMOVED_KEYS: ClassVar[Dict[str, str]] = {
        "taskd_port": "TaskD's Manager always listens on %d (a constant in TaskD: MC:component/taskd/taskd/go/common/"
        "constant/const.go MgrPort), so the field could only be %d and the plan declares that port on every pod "
        "itself. Remove taskd_port from the job." % (C.TASKD_MANAGER_PORT, C.TASKD_MANAGER_PORT),
    }

    name: str = field(
        default="",
        metadata=spec(
            "Job name. `validate` also checks the names built from it where they land: an AscendJob's name "
            "starts with a letter and leaves room for -scheduler-0 (the Service the Ascend Operator creates is a "
            "DNS-1035 label), and <name>-checkpoints is a label value of its volumes, so 51 characters at most.",
            required=True,
            dns_name=True,
        ),
    )
    namespace: str = field(default="default", metadata=spec("Namespace.", dns_name=True))
    kind: JobKind = field(
        default="ascendjob",
        metadata=spec("ascendjob (Ascend Operator) or vcjob (Volcano Job)."),
    )
    image: Image = field(default_factory=Image, metadata=spec("The training image's software."))
    nodes: int = field(
        default=1,
        metadata=spec("Number of nodes (one pod per node; at most 20000 replicas, INST08).", minimum=1, maximum=20000),
    )
    npus_per_node: int = field(default=8, metadata=spec("NPUs per node (YAMLCFG: 1 to 16).", minimum=1, maximum=16))
    launcher: Launcher = field(
        default="torchrun",
        metadata=spec("Launcher."),
    )
    script: str = field(
        default="train.py",
        metadata=spec(
            "Training entry script the launcher starts (torchrun, msrun: a path, relative to the container's "
            "working directory or absolute).",
            format=F.SCRIPT,
        ),
    )
    script_args: List[str] = field(default_factory=list, metadata=spec("Arguments of the training script."))
    ranktable: bool = field(
        default=False,
        metadata=spec("RankTable mode: the operator writes hccl.json to shared storage (RT05 Table 4)."),
    )
    hccl: Hccl = field(default_factory=Hccl, metadata=spec("HCCL timeouts."))
    recovery: Recovery = field(default_factory=Recovery, metadata=spec("Recovery intent."))
    compile: Compile = field(default_factory=Compile, metadata=spec("Operator compilation."))
    checkpoint: Checkpoint = field(default_factory=Checkpoint, metadata=spec("Checkpoints."))
    budget: Budget = field(default_factory=Budget, metadata=spec("Recovery-time budget estimates."))
    taskd_manager: TaskdManagerChoice = field(
        default="auto",
        metadata=spec(
            "Where the TaskD Manager runs: auto, rank0 (PyTorch), scheduler (MindSpore scheduler pod), off.",
        ),
    )
    env: Dict[str, str] = field(
        default_factory=dict,
        metadata=spec(
            'Extra container environment. A variable the plan owns (docs/profile.md, "Environment the plan '
            'owns") is read as its profile field where that is auto or null, and must agree with it '
            "otherwise; nothing here is dropped or overridden. A variable the Ascend Operator injects into an "
            'AscendJob (docs/profile.md, "Environment the Ascend Operator injects") must say what it injects, '
            "and is then left out of the pod template (the operator sets it). Each value is one line without "
            "tabs: `resumable launch` exports every variable in a shell script of one line each (a multi-line "
            "configuration goes into a ConfigMap volume).",
            key_format=F.ENV_NAME,
        ),
    )
    queue: Optional[str] = field(
        default=None,
        metadata=spec("Volcano queue of this job; null = scheduler.queue.", format=F.DNS_SUBDOMAIN),
    )
    schedule_policy: Optional[str] = field(
        default=None,
        metadata=spec(
            "Annotation huawei.com/schedule_policy, e.g. chip8-node8 (VCAPI Table 3); the Atlas 950 SuperPoD "
            "samples write chip8-node8-ra64-sp under the same key (MCD:samples/train/basic-training/ranktable/"
            "yaml/950/a950_superpod_pytorch_acjob.yaml:10, master 7d97fe3 of 2026-05-30). One of the policies "
            "the release's Volcano plugin knows (rule schedule-policy).",
            format=F.TOKEN,
        ),
    )
    host_network: Optional[bool] = field(
        default=None,
        metadata=spec("hostNetwork of this job's pods; null = cluster.host_network (YAMLCFG)."),
    )
    volumes: List[JobVolume] = field(
        default_factory=list,
        metadata=spec(
            "The user's volumes (code, data, output, credentials): a host path, an existing claim, a ConfigMap, "
            "a Secret or an emptyDir each (RT06)."
        ),
    )
    pod: Pod = field(
        default_factory=Pod,
        metadata=spec("Training pod settings beside the recovery plan's (resources, tolerations, security, ...)."),
    )
    tor_affinity: Optional[TorAffinity] = field(
        default=None,
        metadata=spec("Label tor-affinity: switch-affinity scheduling (INST05); null = not set."),
    )
    sp_block: Optional[int] = field(
        default=None,
        metadata=spec(
            "Annotation sp-block: logical SuperPoD size in NPUs for Atlas A3 SuperPoD jobs (YAMLCFG); null = not set.",
            minimum=1,
            maximum=100000,
        ),
    )


@dataclass
class Profile:
    """A resumable profile: one cluster and the job templates that run on it."""

    cluster: Cluster = field(default_factory=Cluster, metadata=spec("Cluster facts.", required=True))
    scheduler: Scheduler = field(default_factory=Scheduler, metadata=spec("Scheduling-stack settings."))
    storage: Storage = field(default_factory=Storage, metadata=spec("Shared storage."))
    jobs: List[Job] = field(default_factory=list, metadata=spec("Job templates.", required=True, min_items=1))
    acknowledge: List[str] = field(
        default_factory=list,
        metadata=spec(
            "Ids of warning rules you have read and accept for this profile; an acknowledged warning is "
            "listed as a plan note and no longer fails `validate --strict`. An unknown id, or the id of "
            "a rule that only reports errors, is an error.",
            format=F.TOKEN,
        ),
    )


def load_profile(path: str) -> Profile:
    """Read and bind a profile file; every failure is a :class:`ProfileError` naming the file.

    Only a regular file of at most :data:`~resumable.fileio.PROFILE_MAX_BYTES` is read (a FIFO or
    a device is refused at once, never waited on)."""
    text = read_text(
        path,
        what="profile",
        limit=PROFILE_MAX_BYTES,
        error=ProfileError,
        fix="Name a profile .yaml file (`resumable init --out profile.yaml` writes a new one)",
    )
    return parse_profile(text, path)


#: The last profile text parsed and its data: a render parses the profile once for the plan and
#: reads the same data again for each job's profile ConfigMap (manifests.deployment.job_profile_texts).
_LAST: List[Tuple[str, Any]] = []


def profile_data(text: str, source: str = "<profile>") -> Any:
    """The YAML data of profile ``text`` through the bounded loader (:mod:`resumable.safeyaml`),
    parsed once for the same text; callers read it and never change it."""
    if _LAST and _LAST[0][0] == text:
        return _LAST[0][1]
    data: Any = safeyaml.load(text, source, safeyaml.PROFILE, ProfileError, "Fix the YAML there")
    _LAST[:] = [(text, data)]
    return data


def parse_profile(text: str, source: str = "<profile>") -> Profile:
    """Bind profile text (YAML) read from ``source``; see :mod:`resumable.safeyaml` for the limits."""
    if len(text) > PROFILE_MAX_BYTES:
        raise ProfileError(
            "is %d characters; a profile is at most %s" % (len(text), size_text(PROFILE_MAX_BYTES)),
            source,
            "Split it or remove what is not a profile",
        )
    data = profile_data(text, source)
    if data is None:
        raise ProfileError("is empty", source, "Write a profile there; `resumable init --out FILE` writes a new one.")
    try:
        return bind(Profile, data, "")
    except ProfileErrors as exc:
        exc.prefix(source)
        raise
    except ProfileError as exc:
        exc.where = "%s: %s" % (source, exc.where) if exc.where else source
        raise
