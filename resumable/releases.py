"""What each release supports: MindCluster feature gates, Volcano builds, Kubernetes ranges, and
the torch_npu (FrameworkPTAdapter) version table.

Every gate cites the document it comes from by its code in :mod:`resumable.sources`
(docs/sources.md): RT0n = resumable-training user guide chapters, INSTnn = manual installation
chapters, HAxx = hiascend.com pages for 7.x wording, RTO/PLR = the two chapters the project was
built from, PTA = the Ascend/pytorch version tables.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Tuple

from .versions import Version


class Gate(NamedTuple):
    since: str
    source: str


# --- feature gates (first MindCluster release that has the feature) -----------------------------
#: Pod-level rescheduling needs cluster components 6.0.RC2 or later (RTO 表2).
POD_RESCHEDULING = Gate("6.0.RC2", "RTO 表2; RT01")
#: TaskD Manager API (init_taskd_manager/start_taskd_manager) exists from 7.1.RC1.
TASKD_MANAGER = Gate("7.1.RC1", "MC:@v7.1.RC1 component/taskd/taskd/api/; HA71-025")
#: recover-in-place strategy added in 7.1.RC1.
RECOVER_IN_PLACE = Gate("7.1.RC1", "HA71-025; RT04 Table 3")
#: elastic-training strategy added in 7.2.RC1 (PyTorch only).
ELASTIC_TRAINING = Gate("7.2.RC1", "MC:@v7.2.RC1 ascend-operator env.go; RT04")
#: From 7.2.RC1 the Ascend Operator labels the PodGroup process-recover-enable=on and injects the
#: recovery switches into the ascend container from recover-strategy, pod-rescheduling and
#: subHealthyStrategy: PROCESS_RECOVER, ELASTIC_PROCESS_RECOVER_ENABLE, ENABLE_RESTART_FAULT_PROCESS,
#: and per framework HCCL_ASYNC_ERROR_HANDLING=0 + HIGH_AVAILABILITY (PyTorch) or MS_ENABLE_TFT,
#: MINDIO_FOR_MINDSPORE and MS_ENABLE_THM (MindSpore); exactly what: :mod:`resumable.operatorenv`.
OPERATOR_INJECTS_RECOVERY_ENV = Gate(
    "7.2.RC1", "MC:@v7.2.RC1 component/ascend-operator/pkg/controllers/v1/{job.go,env.go}; HA73-078"
)
#: The operator writes MS_ENABLE_TFT as ``{ARF:1,...}``; up to 7.3.x the single quotes were part of
#: the value (``'{ARF:1,...}'``).
MS_ENABLE_TFT_UNQUOTED = Gate(
    "26.0.0",
    "MC:@v26.0.0 component/ascend-operator/pkg/controllers/v1/env.go:346,357,390; MC:@v7.3.0 env.go:327,338,370",
)
#: PyTorch run.py is patched with TaskD (import taskd.python.adaptor.patch) from 7.3.0; up to 7.2
#: the Elastic Agent (import mindx_elastic.api) does it. mindx_elastic reaches end of life in 7.3.0.
TASKD_RUNPY_PATCH = Gate("7.3.0", "PLR 构建镜像; INST00 note; HA73-025")
#: TaskD process features default on from 7.3.0 (TASKD_PROCESS_ENABLE=off disables); on 7.2.RC1
#: they are on only when TASKD_PROCESS_ENABLE=on.
TASKD_PROCESS_DEFAULT_ON = Gate(
    "7.3.0", "MC:@v7.2.RC1/@v7.3.0 component/taskd/taskd/python/framework/manager/manager.py; RT04"
)
#: The Ascend Operator sets ASCEND_VISIBLE_DEVICES itself from 7.0.RC1.
OPERATOR_SETS_VISIBLE_DEVICES = Gate("7.0.RC1", "MC:@v7.0.RC1 ascend-operator env.go setAscendVisibleDevicesEnv")
#: Switch-affinity scheduling (job label tor-affinity): the Volcano plugin's nslb-version and
#: shared-tor-num init-params are in the scheduler config of every release this project deploys,
#: the oldest being 6.0.0 (MC:@v6.0.0 component/ascend-for-volcano/build/volcano-v1.9.0.yaml; INST05).
TOR_AFFINITY = Gate("6.0.0", "MC:@v6.0.0 component/ascend-for-volcano/build/volcano-v1.9.0.yaml (nslb-version); INST05")
#: Logical SuperPoD scheduling (job annotation sp-block): init-param super-pod-size is in the same
#: 6.0.0 scheduler config (ibid.; YAMLCFG sp-block).
SP_BLOCK = Gate("6.0.0", "MC:@v6.0.0 component/ascend-for-volcano/build/volcano-v1.9.0.yaml (super-pod-size); YAMLCFG")
#: MindIO ACP asynchronous checkpointing needs 6.0.RC2 or later (RT05 Tables 5-6).
MINDIO_ACP = Gate("6.0.RC2", "RT05 Tables 5-6")
#: Volcano's prefer-previous-node init-param exists from 26.1.0 (INST05).
PREFER_PREVIOUS_NODE = Gate("26.1.0", "INST05 (DZ 05_volcano.md)")
#: Graceful fault tolerance (hotReset=1) is not supported after PyTorch 7.2.RC1 / MindSpore 7.1.RC1.
GRACEFUL_PYTORCH_LAST = Gate("7.2.RC1", "RT01; RT04 (graceful fault tolerance sunset)")
GRACEFUL_MINDSPORE_LAST = Gate("7.1.RC1", "RT01; RT04 (graceful fault tolerance sunset)")

# --- stack gates: what the scheduling-stack manifests of a release change ----------------------------
# Read off the release manifests (MC:@<tag> component/*/build/*.yaml); the flags of
# resumable.traits are named after these and set from them.
#: NodeD and the device plugin read driver, pingmesh and profiling paths; ClusterD mounts its
#: customisation and slow-node dirs and watches AscendJobs; the operator may use statefulsets.
FULL_FAULT_PATHS = Gate(
    "7.3.0", "MC:@v7.3.0 component/{noded,ascend-device-plugin,clusterd,ascend-operator}/build/*.yaml"
)
#: Volcano's NPU plugin maintains the available cards itself (init-param
#: self-maintain-available-card); the same manifests add the init-param forceEnqueue, the bindings
#: rule of the 1.9.0 scheduler and its --percentage-nodes-to-find=100 (all absent from 6.0.0's 1.9.0
#: manifest).
VOLCANO_SELF_MAINTAINED_CARDS = Gate(
    "7.3.0", "MC:@v7.3.0 component/ascend-for-volcano/build/volcano-v1.9.0.yaml; INST05"
)
#: NodeD runs on the host network and reads (get, list, patch) nodes.
NODED_HOST_NETWORK = Gate("26.0.0", "MC:@v26.0.0 component/noded/build/noded.yaml")
#: The Ascend Operator may patch pods.
OPERATOR_PATCHES_PODS = Gate("26.0.0", "MC:@v26.0.0 component/ascend-operator/build/ascend-operator.yaml")
#: ClusterD reads ``clusterd-config-cm`` (manual separation policy).
CLUSTERD_CONFIG_CM = Gate("26.0.0", "MC:@v26.0.0 component/clusterd/build/clusterd.yaml")
#: vc-scheduler and vc-controller-manager log at -v=3 (-v=2 before).
VOLCANO_VERBOSE_LOG = Gate("26.0.0", "MC:@v26.0.0 component/ascend-for-volcano/build/volcano-v1.9.0.yaml")
#: The device plugin mounts the container runtime's sockets and the DPU config dir itself (until
#: :data:`MERGED_DEVICE_PLUGIN`, which leaves that to Ascend Docker Runtime).
DEVICE_PLUGIN_RUNTIME_MOUNTS = Gate("26.0.0", "MC:@v26.0.0 component/ascend-device-plugin/build/*.yaml")
#: Healthz ports and liveness probes on every component.
HEALTHZ = Gate("26.1.0", "MC:@branch_v26.1.0 component/*/build/*.yaml")
#: ``init-log-setup`` initContainers own ``/var/log/mindx-dl/<component>`` (host path ``/var/log``
#: + subPath).
LOG_INIT_CONTAINERS = Gate("26.1.0", "MC:@branch_v26.1.0 component/*/build/*.yaml")
#: One chip-agnostic device plugin (``workerselector``, no ``-910`` suffix, no -useAscendDocker,
#: MOUNT_BY_RUNTIME_FOR_DP, all chip taints).
MERGED_DEVICE_PLUGIN = Gate("26.1.0", "MC:@branch_v26.1.0 component/ascend-device-plugin/build/*.yaml")
#: NodeD watches and patches pods, reads daemonsets, and runs without a read-only root filesystem.
NODED_WATCHES_PODS = Gate("26.1.0", "MC:@branch_v26.1.0 component/noded/build/noded.yaml")
#: NPU Exporter drops its -updateTime flag.
EXPORTER_NO_UPDATE_TIME = Gate("26.1.0", "MC:@branch_v26.1.0 component/npu-exporter/build/*.yaml")
#: Volcano image tags embed the MindCluster release (``v1.9.0-v26.1.0``; INST05; HELM values 26.1).
VOLCANO_RELEASE_TAGS = Gate("26.1.0", "INST05; HELM values 26.1")

#: The release build names the Volcano NPU plugin ``volcano-npu_v<release>`` without the
#: ``_linux-<arch>`` suffix (fix "volcano 插件找不到动态库的问题", commits 50a62bed on the 7.3 line and
#: ef8b0e13 on 26.0; @v7.3.0 and @v7.3.0.SPC1 build.sh:54 still append the arch).
VOLCANO_PLUGIN_WITHOUT_ARCH = Gate(
    "7.3.1",
    "MC:@v7.3.1 component/ascend-for-volcano/build/build.sh:54; MC:@v26.0.0 build.sh:54; MC:@v26.1.0 build.sh:61",
)
#: Huawei's registry (SWR ascendhub) tags images ``<version>-<os>`` (``v26.1.0-openeuler24.03``,
#: ``v1.12.0-v26.1.0-alpinelatest``); up to 26.0 the tag is the version alone. The 26.1.0 Helm chart
#: named ``v26.1.0`` (fixed after the tag: commit 6b15c7c2 on branch_v26.1.0).
REGISTRY_OS_TAGS = Gate(
    "26.1.0",
    "MC:@branch_v26.1.0 docker/ascend-operator/OVERVIEW.md:40-69, docker/ascend-for-volcano/OVERVIEW.md:62-78, "
    "helm-deploy-tool/app/values.yaml:5",
)
#: The device plugin detects hung training: every 60 s it compares AI Core use, HBM, traffic and process CPU
#: time with thresholds, and after 5 hits in a row reports fault 200001002 (NotHandleFault by default).
HANG_DETECTION = Gate(
    "26.1.0",
    "MC:@v26.1.0 component/ascend-device-plugin/pkg/device/hangdetection/hang_detector.go:46,101,330; "
    "MC:@v26.1.0 component/ascend-device-plugin/pkg/common/hang_config.go:47-64; "
    "MC:@v26.1.0 component/ascend-device-plugin/build/faultCode.json:15; MC:@v26.1.0 docs/zh/scheduling/04_usage/"
    "04_resumable_training/03_configuration/01_configuring_fault_detection_levels.md:1723-1790",
)
#: Device plugin and NodeD -deviceResetTimeout default 600 s (60 s up to 26.0): after a reset they wait up to this
#: long for the driver to report every chip.
DEVICE_RESET_TIMEOUT_600 = Gate(
    "26.1.0", "MC:@v26.1.0 component/ascend-common/api/consts.go:207-212; MC:@v26.0.0 consts.go:206"
)
#: Known issue of 26.1.0: process-level rescheduling may hit a gloo segmentation fault after repeated
#: reschedules (about 0.00125); keep Job/Pod rescheduling as the fallback.
PROCESS_LEVEL_GLOO_SEGFAULT = Gate("26.1", "MC:@v26.1.0 docs/zh/release_notes.md:285")
#: the share of process-level reschedules that end that way on the 26.1 line, as the release notes give it
PROCESS_LEVEL_GLOO_SEGFAULT_SHARE = 0.00125
#: The constraints page of process-level rescheduling names the faults during HCCL link setup (建链) as one it
#: cannot recover and points to 配置HCCL主动触发建链 (set the links up at initialisation) from 7.2.RC1; the
#: 7.0.RC1 page does not have it.
HCCL_LINK_SETUP = Gate(
    "7.2.RC1",
    "HA72-025 使用约束; HA73-025 使用约束; HA73-120; DZ:04_usage/04_fault_recovery/01_resumable_training/"
    "03_configuration/02_configuring_training_recovery.md (配置HCCL主动触发建链)",
)
#: The constraints of process-level rescheduling in the 26.x user guide (the repository's docs, master).
GUIDE_26_CONSTRAINTS = (
    "DZ:04_usage/04_fault_recovery/01_resumable_training/01_solutions_principles/01_fault_handling.md "
    "(进程级别重调度 使用约束)"
)
#: What the 26.x guide adds to the constraints: a fault during a checkpoint save is not recovered
#: ("不支持在保存Checkpoint期间触发进程级别重调度"), no IPv6.
CONSTRAINTS_26 = Gate("26.0.0", GUIDE_26_CONSTRAINTS)
#: From the 26.x user guide a fault on the rank-0 pod (annotation hccl/rankIndex 0) goes to job-level
#: rescheduling only "且需迁移容器时" (when its container must move): recover-in-place, which restarts the
#: process in its container, then takes it. Up to 7.3 the page sends every rank-0 pod fault to job level.
RANK0_MOVES_ONLY = Gate("26.0.0", GUIDE_26_CONSTRAINTS + "; HA73-025 使用约束")
#: For MindSpore the 26.x guide adds "受框架机制限制，进程级重调度存在极小概率失败风险" (a small chance that
#: process-level rescheduling fails) to the constraints.
MINDSPORE_PROCESS_LEVEL_RISK = Gate("26.0.0", GUIDE_26_CONSTRAINTS)
#: seconds between two hang checks and hits before the report (hang_detector.go:46; hang_config.go:52)
HANG_CHECK_SECONDS = 60
HANG_CHECK_HITS = 5
#: the fault code of a hang (ascend-common/devmanager/common/constants.go:98)
HANG_FAULT_CODE = "200001002"
#: -deviceResetTimeout defaults (consts.go)
DEVICE_RESET_TIMEOUT_DEFAULT, DEVICE_RESET_TIMEOUT_BEFORE = 600, 60

# --- Volcano builds (Volcano versions, not MindCluster releases) -------------------------------------
#: The 1.9.0 scheduler and controllers layout (RBAC, flags) as opposed to 1.7.0's.
VOLCANO_19 = Gate("1.9.0", "MC:@v6.0.0 component/ascend-for-volcano/build/volcano-v1.9.0.yaml")
#: The 1.12.0 layout: healthz/metrics flags, split pod and pod-status rules, volumeattachments.
VOLCANO_112 = Gate("1.12.0", "MC:@branch_v26.1.0 component/ascend-for-volcano/build/volcano-v1.12.0.yaml")

# --- software gates (not MindCluster releases) -----------------------------------------------------
#: Watchdog: PyTorch 2.1.0 or later and torch_npu (FrameworkPTAdapter) newer than 6.0.RC1; on by
#: default there (RTO 表1).
WATCHDOG_TORCH = Gate("2.1.0", "RTO 表1")
WATCHDOG_ADAPTER_ABOVE = Gate("6.0.RC1", "RTO 表1")
#: MindSpore watchdog exists from 2.4 and is on by default (RT05, MindSpore).
WATCHDOG_MINDSPORE = Gate("2.4.0", "RT05")
#: Operator binaries and the operator compile cache need CANN 8.0.RC2 or later (RTO 表9/表10).
COMPILE_CANN = Gate("8.0.RC2", "RTO 表9/表10")
#: torch_npu_run (Parallel Store) with torch >= 2.1 needs torch_npu newer than 6.0.RC3 (RT05 Table 2).
PARALLEL_STORE_ADAPTER_ABOVE = Gate("6.0.RC3", "RT05 Table 2")
#: RankTable mode needs torch_npu newer than 6.0.RC3 (RT05 Table 4).
RANKTABLE_ADAPTER_ABOVE = Gate("6.0.RC3", "RT05 Table 4")
#: MindIO ACP with MindSpore needs MindSpore 2.7.0 or later (RT05 Tables 5-6).
ACP_MINDSPORE = Gate("2.7.0", "RT05 Tables 5-6")
#: torch 2.6 changed the c10d rendezvous store; on 7.2 the docs patch rendezvous.py with a
#: PrefixStore, from 7.3 the TaskD patch wraps it itself (HA72-075; torch_patch.py).
PREFIX_STORE_TORCH = Gate("2.6.0", "HA72-075; TORCH rendezvous.py _create_c10d_store")
#: The release line (major.minor) whose guide edits rendezvous.py in the image for that store
#: (HA72-075); later lines leave it to the TaskD patch (:data:`TASKD_RUNPY_PATCH`).
RENDEZVOUS_EDIT_LINE = Gate("7.2", "HA72-075")

#: torchrun's own --monitor_interval default is 0.1 s from torch 2.4 (5 s before): TORCH run.py, pytorch/pytorch
#: pull 124692 (merged April 2024, in torch 2.4.0).
TORCH_FAST_MONITOR = Gate("2.4.0", "TORCH torch/distributed/run.py --monitor-interval (pull 124692, torch 2.4)")
#: the first torch whose launcher passes ``health_check_server`` to ``launch_agent`` (torch v2.13.0
#: torch/distributed/launcher/api.py:187-198, 241-245), which TaskD's ``patch_launch_agent(config,
#: entrypoint, args)`` does not take (MC:@v7.3.0 component/taskd/taskd/python/adaptor/patch/torch_patch.py:275-279,
#: @v26.1.0 :271-275): rule taskd-torch-patch.
TORCH_HEALTH_CHECK_SERVER = Gate(
    "2.13.0", "TORCH torch/distributed/launcher/api.py:187-198,241-245 at v2.13.0 (launch_agent health_check_server)"
)


class DocumentedVersions(NamedTuple):
    """The versions the constraints page of process-level rescheduling (进程级重调度支持的版本配套关系)
    names for PyTorch jobs from a release on; None where the page names no version (7.2.RC1: MindSpeed-LLM
    "master"; 26.x: torch, MindSpeed-LLM "2.3.0" by its own version table)."""

    since: str
    torch: Optional[str]
    mindspeed_llm: Optional[str]
    source: str


#: newest last; a release takes the last row at or below it
PROCESS_LEVEL_VERSIONS: Tuple[DocumentedVersions, ...] = (
    DocumentedVersions("7.1.RC1", "2.1.0", None, "HA71-025 使用约束"),
    DocumentedVersions("7.2.RC1", "2.7.1", None, "HA72-025 使用约束"),
    DocumentedVersions("7.3.0", "2.7.1", "2.3.0", "HA73-025 使用约束"),
    DocumentedVersions("26.0.0", None, "2.3.0", GUIDE_26_CONSTRAINTS),
)


def process_level_versions(release: Version) -> Optional[DocumentedVersions]:
    """The versions process-level rescheduling is documented with on ``release`` (None before 7.1.RC1)."""
    found: Optional[DocumentedVersions] = None
    for row in PROCESS_LEVEL_VERSIONS:
        if release >= Version(row.since):
            found = row
    return found


#: MindSpore op_compile (the framework's equivalent of torch.npu.set_compile_mode) exists from
#: MindSpore 2.5.0 (MS-OPCOMPILE).
OP_COMPILE_MINDSPORE = Gate("2.5.0", "MS-OPCOMPILE")

# --- torch_npu (Ascend Extension for PyTorch, "FrameworkPTAdapter") versions ------------------------


class TorchNpuBuild(NamedTuple):
    """One published torch_npu package: its pip version, the product release it belongs to (the
    FrameworkPTAdapter / TorchNPU release the MindCluster docs gate on), the torch it is built for
    and the CANN it was released with."""

    package: str
    release: str
    torch: str
    cann: str


#: Where :data:`TORCH_NPU_BUILDS` comes from (codes of :mod:`resumable.sources`).
TORCH_NPU_SOURCE = "PTA README Ascend Auxiliary Software; PTA related_product_version_compatibility_notes 表1"


def _builds(release: str, cann: str, *packages: str) -> List[TorchNpuBuild]:
    return [TorchNpuBuild(p, release, ".".join(p.split(".")[:3]).split("rc")[0], cann) for p in packages]


#: The published torch_npu packages (PTA): the README's "Ascend Auxiliary Software" table names
#: each package version with its branch ``v<torch>-<release>`` (``2.1.0.post8`` is branch
#: ``v2.1.0-6.0.rc3``, release 6.0.RC3); the 7.3.0 release notes (表1) and the TorchNPU version
#: mapping table carry the same rows for 7.3.0 to 26.1.1. Within one torch version a later
#: package (higher ``.postN``) always belongs to a later release. Releases before 5.0.RC1
#: (torch 1.5/1.8, adapter 2.x/3.x) are left out: no MindCluster recovery feature supports them.
TORCH_NPU_BUILDS: Tuple[TorchNpuBuild, ...] = tuple(
    _builds("26.1.1", "9.1.X", "2.12.0.post2", "2.11.0.post2", "2.10.0.post6", "2.9.0.post8", "2.7.1.post10")
    + _builds("26.1.0", "9.1.0", "2.12.0", "2.11.0", "2.10.0.post4", "2.9.0.post6", "2.7.1.post8")
    + _builds("26.0.0", "9.0.0", "2.10.0", "2.9.0.post2", "2.8.0.post4", "2.7.1.post4")
    + _builds("7.3.0", "8.5.0", "2.9.0", "2.8.0.post2", "2.7.1.post2", "2.6.0.post5")
    + _builds("7.2.0", "8.3.RC1", "2.8.0", "2.7.1", "2.6.0.post3", "2.1.0.post17")
    + _builds("7.1.0", "8.2.RC1", "2.6.0", "2.5.1.post1", "2.1.0.post13")
    + _builds("7.0.0", "8.1.RC1", "2.5.1", "2.4.0.post4", "2.3.1.post6", "2.1.0.post12")
    + _builds("6.0.0", "8.0.0", "2.4.0.post2", "2.3.1.post4", "2.1.0.post10")
    + _builds("6.0.RC3", "8.0.RC3", "2.4.0", "2.3.1.post2", "2.1.0.post8")
    + _builds("6.0.RC2", "8.0.RC2", "2.3.1", "2.2.0.post2", "2.1.0.post6", "1.11.0.post14")
    + _builds("6.0.RC1", "8.0.RC1", "2.2.0", "2.1.0.post4", "1.11.0.post11")
    + _builds("5.0.0", "7.0.0", "2.1.0", "2.0.1.post1", "1.11.0.post8")
    + _builds("5.0.RC3", "7.0.RC1", "2.1.0.rc1", "2.0.1", "1.11.0.post4")
    + _builds("5.0.RC2.2", "6.3.RC3.1", "1.11.0.post3")
    + _builds("5.0.RC2.1", "6.3.RC3", "1.11.0.post2")
    + _builds("5.0.RC2", "6.3.RC2", "2.0.1.rc1", "1.11.0.post1")
    + _builds("5.0.RC1", "6.3.RC1", "1.11.0")
)


class AdapterRelease(NamedTuple):
    """What the version table says about a torch_npu pip version."""

    #: the release of the matching row, or of the newest earlier package of the same torch version
    release: Version
    #: True: the package is a row of the table; False: ``release`` is only a lower bound
    exact: bool
    #: the torch version the package is built for
    torch: Version
    #: the table row the answer comes from
    build: TorchNpuBuild


def is_adapter_style(version: Version) -> bool:
    """torch_npu written as a product release (``6.0.RC3``, ``7.3.0``, ``26.0.0``) rather than as a
    pip version (``2.1.0.post8``): pip versions follow torch (1.x, 2.x), product releases start at 5."""
    return version.release[0] >= 5


def torch_npu_release(package: Version) -> Optional[AdapterRelease]:
    """The product release of the torch_npu pip version ``package`` (PTA), exact when it is a
    published package, else the release of the newest earlier package built for the same torch
    (a lower bound); None when no earlier package of that torch version is published."""
    base = package.release[:3]
    same_torch = [(v, b) for v, b in _parsed_builds() if v.release[:3] == base]
    for v, b in same_torch:
        if v == package:
            return AdapterRelease(Version(b.release), True, Version(b.torch), b)
    earlier = [(v, b) for v, b in same_torch if v < package]
    if not earlier:
        return None
    newest = max(earlier, key=lambda vb: vb[0])[1]
    return AdapterRelease(Version(newest.release), False, Version(newest.torch), newest)


def builds_of_newest_release_up_to(release: Version) -> List[TorchNpuBuild]:
    """The torch_npu packages of the newest product release at most ``release`` (what a profile for that
    MindCluster release is written with, ``resumable init``)."""
    rows = [b for b in TORCH_NPU_BUILDS if Version(b.release) <= release]
    newest = max(Version(b.release) for b in rows)
    return [b for b in rows if Version(b.release) == newest]


_PARSED_BUILDS: List[Tuple[Version, TorchNpuBuild]] = []


def _parsed_builds() -> List[Tuple[Version, TorchNpuBuild]]:
    """:data:`TORCH_NPU_BUILDS` with their package versions parsed once (a plan of hundreds of
    jobs asks for each job)."""
    if not _PARSED_BUILDS:
        _PARSED_BUILDS.extend((Version(b.package), b) for b in TORCH_NPU_BUILDS)
    return _PARSED_BUILDS


# --- Volcano and Kubernetes -------------------------------------------------------------------------


class SchedulePolicies(NamedTuple):
    """The values of the job annotation huawei.com/schedule_policy the Volcano plugin of a release
    knows: the keys of its policy table. The plugin looks the annotation up there and, for a value
    it does not know, places the job as if the annotation were absent (by sp-block or the node's
    accelerator-type), without a word."""

    release: str
    values: Tuple[str, ...]
    source: str


#: The schedule policies by release, read in the Volcano plugin's source at each tag (the release's
#: own table where its source was read; later releases only added values, 7.3.0's table is a subset
#: of 26.1.0's). :func:`schedule_policies` picks the table of a release.
SCHEDULE_POLICIES: Tuple[SchedulePolicies, ...] = (
    SchedulePolicies(
        "7.3.0",
        (
            "module-a3-16",
            "chip4-node8",
            "chip1-node2",
            "chip4-node4",
            "chip8-node8",
            "chip8-node16",
            "chip2-node16",
            "chip2-node16-sp",
        ),
        "MC:@v7.3.0 component/ascend-for-volcano/internal/npu/factory.go:43-52 (policy910HandlerMap), "
        "common/util/constants.go:74-82, 96-105",
    ),
    SchedulePolicies(
        "26.1.0",
        (
            "module-a3-16",
            "chip1-node2",
            "chip4-node4",
            "chip8-node8",
            "chip8-node16",
            "chip2-node16",
            "chip2-node16-sp",
            "chip2-node8",
            "chip2-node8-sp",
            "chip4-node8",
            "chip4-node16",
            "chip1-node8",
            "chip1-node16",
            "chip8-node8-sp",
            "chip8-node8-ra64-sp",
            "chip1-softShareDev",
            "multilevel",
        ),
        "MC:@v26.1.0 component/ascend-for-volcano/internal/npu/factory.go:49-67 (policy910HandlerMap), "
        "common/util/constants.go:84-89, 112-130",
    ),
)


def schedule_policies(release: Version) -> SchedulePolicies:
    """The schedule-policy table for ``release``: the table of its release line (7.3.1 and
    7.3.0.SPC1 take 7.3.0's), else the first table read after it (an upper bound for a release
    between two read ones: a value that table lacks is unknown to the release for sure), the newest
    for a later release."""
    for table in SCHEDULE_POLICIES:
        if release <= Version(table.release) or release.major_minor == Version(table.release).major_minor:
            return table
    return SCHEDULE_POLICIES[-1]


class VolcanoBuild(NamedTuple):
    version: str
    kubernetes_min: str
    kubernetes_max: str


#: Kubernetes ranges of the MindCluster Volcano builds (build.sh; INST00; Helm values 26.1).
VOLCANO_BUILDS: Dict[str, VolcanoBuild] = {
    "1.7.0": VolcanoBuild("1.7.0", "1.19", "1.28"),
    "1.9.0": VolcanoBuild("1.9.0", "1.21", "1.29"),
    "1.12.0": VolcanoBuild("1.12.0", "1.21", "1.34"),
}


class StackRelease(NamedTuple):
    """A MindCluster release whose scheduling stack this project can deploy."""

    version: str
    volcano: Tuple[str, ...]
    default_volcano: str


#: Releases whose scheduling-stack manifests this project reproduces (checked by the parity tests
#: against the release YAMLs of each tag, MC:@v<release> component/*/build/*.yaml).
STACK_RELEASES: Dict[str, StackRelease] = {
    "6.0.0": StackRelease("6.0.0", ("1.7.0", "1.9.0"), "1.9.0"),
    "7.3.0": StackRelease("7.3.0", ("1.7.0", "1.9.0"), "1.9.0"),
    "7.3.1": StackRelease("7.3.1", ("1.7.0", "1.9.0"), "1.9.0"),
    "7.3.2": StackRelease("7.3.2", ("1.7.0", "1.9.0"), "1.9.0"),
    "26.0.0": StackRelease("26.0.0", ("1.7.0", "1.9.0"), "1.9.0"),
    "26.0.1": StackRelease("26.0.1", ("1.7.0", "1.9.0"), "1.9.0"),
    "26.1.0": StackRelease("26.1.0", ("1.7.0", "1.9.0", "1.12.0"), "1.12.0"),
}

#: Patch releases and the release whose manifests they keep, compared at the tags: ``git diff <base>
#: <patch> -- component/*/build/*.yaml`` is empty for each; the only build difference is the Volcano
#: plugin name (:data:`VOLCANO_PLUGIN_WITHOUT_ARCH`, from 7.3.1). Commits: v7.3.1 f02090ec, v7.3.2 c0e7a19d,
#: v26.0.1 34e51e08 against v7.3.0 012fa8e3 and v26.0.0 2fa1c4f0.
PATCH_RELEASES: Dict[str, str] = {"7.3.1": "7.3.0", "7.3.2": "7.3.0", "26.0.1": "26.0.0"}
PATCH_RELEASES_SOURCE = "MC:@v7.3.1, @v7.3.2, @v26.0.1 component/*/build/*.yaml (identical to their base release's)"

#: Kubernetes range MindCluster documents for its components (APPX "Preparing the Installation
#: Environment": 1.17 to 1.34).
KUBERNETES_MIN = "1.17"
KUBERNETES_MAX = "1.34"


def at_least(version: Version, gate: Gate) -> bool:
    """``version`` has what ``gate`` guards: it is ``gate.since`` or later."""
    return version >= Version(gate.since)


def above(version: Version, gate: Gate) -> bool:
    """``version`` is newer than ``gate.since`` (gates the documents write as "newer than X", and
    "X is the last release that supports it")."""
    return version > Version(gate.since)


def on_line(version: Version, gate: Gate) -> bool:
    """``version`` is of the release line (major.minor) ``gate.since`` names (``7.2.RC1``, ``7.2.0``
    and ``7.2.0.SPC1`` are all of line ``7.2``)."""
    return version.major_minor == Version(gate.since).major_minor


def stack_release(release: Version) -> Optional[StackRelease]:
    """The deployable stack for ``release``: same major.minor.patch (service packs map to their
    base release, ``6.0.0.SPC1`` -> ``6.0.0``); ``None`` when the project has no manifests for it."""
    if release.is_prerelease:
        return None
    key = "%d.%d.%d" % release.release[:3]
    return STACK_RELEASES.get(key)


def last_stack_release_without(gate: Gate) -> str:
    """The newest release of :data:`STACK_RELEASES` that ``gate`` does not cover: the one an upgrade
    to ``gate.since`` comes from (``26.0.0`` for :data:`MERGED_DEVICE_PLUGIN`)."""
    older = [r for r in STACK_RELEASES if not at_least(Version(r), gate)]
    if not older:
        raise ValueError("every stack release has %s" % gate.since)
    return max(older, key=Version)


def kubernetes_in_range(kubernetes: Version, build: VolcanoBuild) -> bool:
    mm = kubernetes.major_minor
    return Version(build.kubernetes_min).major_minor <= mm <= Version(build.kubernetes_max).major_minor


def default_volcano(release: Version) -> str:
    """The Volcano build a release deploys when the profile does not choose one."""
    stack = stack_release(release)
    return stack.default_volcano if stack is not None else "1.9.0"


class DeployProblem(NamedTuple):
    """Why a release x Volcano x Kubernetes combination cannot be deployed."""

    kind: str  # "release" | "volcano" | "kubernetes-volcano" | "kubernetes"
    message: str
    fix: str


def deployability(release: Version, volcano: Optional[str], kubernetes: Optional[Version]) -> List[DeployProblem]:
    """Every reason this project cannot deploy the scheduling stack of ``release`` with Volcano
    ``volcano`` (None: the release's default) on Kubernetes ``kubernetes`` (None: unknown). The
    profile rules and the manifest builders both ask this one function."""
    out: List[DeployProblem] = []
    stack = stack_release(release)
    if stack is None:
        out.append(
            DeployProblem(
                "release",
                "the scheduling stack of MindCluster %s cannot be deployed by this project (supported: %s and "
                "their service packs)" % (release, ", ".join(STACK_RELEASES)),
                "Use one of those releases; for another one, install the scheduling stack from MindCluster's own "
                "release packages (`resumable validate` and `plan` still check the profile, `render` and `pulumi "
                "up` refuse it)",
            )
        )
    key = default_volcano(release)
    if volcano is not None:
        key = "%d.%d.%d" % Version(volcano).release[:3]
        allowed = stack.volcano if stack is not None else tuple(VOLCANO_BUILDS)
        if key not in allowed:
            out.append(
                DeployProblem(
                    "volcano",
                    "Volcano %s is not shipped with MindCluster %s (available: %s)"
                    % (volcano, release, ", ".join(allowed)),
                    "Choose one of %s (1.12.0 needs MindCluster 26.1.0), or leave the choice to the release"
                    % ", ".join(allowed),
                )
            )
            return out
    if kubernetes is None:
        return out
    build = VOLCANO_BUILDS.get(key)
    if build is not None and not kubernetes_in_range(kubernetes, build):
        out.append(
            DeployProblem(
                "kubernetes-volcano",
                "Kubernetes %s is outside Volcano %s's range %s to %s"
                % (kubernetes, key, build.kubernetes_min, build.kubernetes_max),
                "Choose a Volcano build whose range includes the cluster's Kubernetes, or upgrade Kubernetes",
            )
        )
    if not Version(KUBERNETES_MIN).major_minor <= kubernetes.major_minor <= Version(KUBERNETES_MAX).major_minor:
        out.append(
            DeployProblem(
                "kubernetes",
                "Kubernetes %s is outside MindCluster's range %s to %s" % (kubernetes, KUBERNETES_MIN, KUBERNETES_MAX),
                "Use a Kubernetes version MindCluster supports",
            )
        )
    return out
