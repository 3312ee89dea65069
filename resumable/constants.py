"""Names MindCluster reads: labels, annotations, env vars, ports, paths, users.

Everything else in the project (Pulumi components, Ansible roles, the runtime image, tests)
imports these; none of them types a MindCluster name again. Sources are codes of
:mod:`resumable.sources` (docs/sources.md): YAMLCFG = job YAML field reference, RT04 = fault
handling policies, ENV = environment variable reference, INST01 = preparing for installation.
"""

from __future__ import annotations

# --- job labels (YAMLCFG; RT04) ---------------------------------------------------------------------
LABEL_FRAMEWORK = "framework"
LABEL_RING_CONTROLLER = "ring-controller.atlas"
LABEL_FAULT_SCHEDULING = "fault-scheduling"
LABEL_FAULT_RETRY_TIMES = "fault-retry-times"
LABEL_POD_RESCHEDULING = "pod-rescheduling"
LABEL_PROCESS_RECOVER_ENABLE = "process-recover-enable"
LABEL_SUB_HEALTHY_STRATEGY = "subHealthyStrategy"
#: switch-affinity scheduling (INST05; Volcano init-params nslb-version/shared-tor-num)
LABEL_TOR_AFFINITY = "tor-affinity"
#: the ConfigMaps a job carries: reset-config-<job> (label reset=true, synced by the device plugin)
#: and rings-config-<job> (RankTable of a Volcano Job) (RT01; RT06; YAMLCFG)
LABEL_RESET = "reset"

# --- job annotations ---------------------------------------------------------------------------------
ANNOTATION_RECOVER_STRATEGY = "recover-strategy"
ANNOTATION_WAIT_RESCHEDULE_TIMEOUT = "wait-reschedule-timeout"
#: wait-reschedule-timeout in seconds: "默认值为270。取值范围为30~270" (YAMLCFG)
WAIT_RESCHEDULE_TIMEOUT_DEFAULT = 270
RANGE_WAIT_RESCHEDULE_TIMEOUT = (30, WAIT_RESCHEDULE_TIMEOUT_DEFAULT)
ANNOTATION_SCHEDULE_POLICY = "huawei.com/schedule_policy"
#: logical SuperPoD size of an A3 job (YAMLCFG; the operator reads it, pkg/utils/superpod.go)
ANNOTATION_SP_BLOCK = "sp-block"

# --- node labels (INST01 Table 1; K8S Table 4) ----------------------------------------------------------
NODE_LABEL_MASTER = "masterselector"
NODE_LABEL_MASTER_VALUE = "dls-master-node"
NODE_LABEL_WORKER = "workerselector"
NODE_LABEL_WORKER_VALUE = "dls-worker-node"
NODE_LABEL_ROLE_WORKER = "node-role.kubernetes.io/worker"
NODE_LABEL_HOST_ARCH = "host-arch"
NODE_LABEL_ACCELERATOR = "accelerator"
NODE_LABEL_ACCELERATOR_TYPE = "accelerator-type"
NODE_LABEL_NODED_ENABLE = "nodeDEnable"
#: Inference servers carry server-usage=infer besides their accelerator-type (INST01 Table 1: Atlas
#: 800I A2 and 800I A3).
NODE_LABEL_SERVER_USAGE = "server-usage"
SERVER_USAGE_INFER = "infer"
#: Products (as the npu_facts Ansible module names them from the PCI subsystem ids) that are
#: inference servers and get server-usage=infer. The A200I A2 Box is one too, but its PCI ids are
#: not known here, so it cannot be detected.
INFERENCE_PRODUCTS = ("Atlas 800I A2", "Atlas 800I A3")

HOST_ARCH_VALUES = {"aarch64": "huawei-arm", "x86_64": "huawei-x86"}

# --- ports (RT04; RT05; YAMLCFG; clusterd.yaml) ---------------------------------------------------------
TASKD_MANAGER_PORT = 9601
TASKD_PORT_NAME = "taskd-port"
TASKD_PROXY_PORT = 9602
#: MindIO TTP controller port when recovery.ttp_port is not given (TTP_PORT; RT06)
TTP_PORT_DEFAULT = 8000
TTP_PORT_NAME = "ttp-port"
ASCENDJOB_PORT_DEFAULT = 2222
ASCENDJOB_PORT_NAME = "ascendjob-port"
CLUSTERD_GRPC_PORT = 8899
CLUSTERD_SERVICE = "clusterd-grpc-svc"

# --- namespaces (INST01 "Creating a Namespace") ---------------------------------------------------------
NAMESPACE_MINDX_DL = "mindx-dl"
NAMESPACE_CLUSTER_SYSTEM = "cluster-system"
NAMESPACE_VOLCANO = "volcano-system"
NAMESPACE_DEVICE_PLUGIN = "kube-system"
NAMESPACE_NPU_EXPORTER = "npu-exporter"

# --- training container (YAMLCFG) --------------------------------------------------------------------
CONTAINER_NAME = "ascend"
#: terminationGracePeriodSeconds when a pod does not set it (KUBE: Pod lifecycle, termination of Pods)
K8S_DEFAULT_GRACE_SECONDS = 30
ASCENDJOB_API_VERSION = "mindxdl.gitee.com/v1"
ASCENDJOB_KIND = "AscendJob"
VCJOB_API_VERSION = "batch.volcano.sh/v1alpha1"
VCJOB_KIND = "Job"
#: schedulerName of every training job (YAMLCFG)
SCHEDULER_NAME_VOLCANO = "volcano"
#: the queue Volcano creates and every MindCluster sample names (schedulingPolicy.queue / spec.queue)
VOLCANO_DEFAULT_QUEUE = "default"
#: master port of a Volcano Job's rendezvous, which no operator allocates (the vcjob sample passes 7123 to
#: train_start.sh: MCD:samples/train/resumable-training/fault-tolerance/ranktable/pytorch/gpt-3/train_start.sh)
VCJOB_MASTER_PORT = 7123
#: the single task of a Volcano Job (the MCD: vcjob sample, plan.job.VCJOB_SAMPLE, names it "default")
VCJOB_TASK = "default"

# --- environment variables (ENV; RT04; RT05; RTO; PLR) -------------------------------------------------------
ENV_HCCL_ASYNC_ERROR_HANDLING = "HCCL_ASYNC_ERROR_HANDLING"
ENV_RESUME_MODE_ENABLE = "RESUME_MODE_ENABLE"
ENV_TASKD_PROCESS_ENABLE = "TASKD_PROCESS_ENABLE"
ENV_LD_PRELOAD = "LD_PRELOAD"
ENV_MINDX_TASK_ID = "MINDX_TASK_ID"
ENV_POD_IP = "POD_IP"
ENV_XDL_IP = "XDL_IP"
ENV_HCCL_IF_IP = "HCCL_IF_IP"
ENV_TTP_PORT = "TTP_PORT"
ENV_PROCESS_RECOVER = "PROCESS_RECOVER"
ENV_ELASTIC_PROCESS_RECOVER_ENABLE = "ELASTIC_PROCESS_RECOVER_ENABLE"
ENV_ENABLE_RESTART_FAULT_PROCESS = "ENABLE_RESTART_FAULT_PROCESS"
ENV_HIGH_AVAILABILITY = "HIGH_AVAILABILITY"
ENV_MS_ENABLE_THM = "MS_ENABLE_THM"
ENV_MS_ENABLE_TFT = "MS_ENABLE_TFT"
ENV_MINDIO_FOR_MINDSPORE = "MINDIO_FOR_MINDSPORE"
ENV_MINDIO_WAIT_MINDX_TIME = "MINDIO_WAIT_MINDX_TIME"
ENV_ASCEND_CACHE_PATH = "ASCEND_CACHE_PATH"
ENV_ASCEND_MAX_OP_CACHE_SIZE = "ASCEND_MAX_OP_CACHE_SIZE"
ENV_MS_COMPILER_CACHE_ENABLE = "MS_COMPILER_CACHE_ENABLE"
ENV_MS_COMPILER_CACHE_PATH = "MS_COMPILER_CACHE_PATH"
ENV_HCCL_CONNECT_TIMEOUT = "HCCL_CONNECT_TIMEOUT"
ENV_HCCL_EXEC_TIMEOUT = "HCCL_EXEC_TIMEOUT"
ENV_RANK_TABLE_FILE = "RANK_TABLE_FILE"
ENV_TASKD_LOG_PATH = "TASKD_LOG_PATH"
ENV_MASTER_ADDR = "MASTER_ADDR"
ENV_MS_SCHED_HOST = "MS_SCHED_HOST"
ENV_RANK = "RANK"
# what the Ascend Operator injects besides the names above (ENV Table 2;
# MC:component/ascend-operator/pkg/controllers/v1/env.go)
ENV_MASTER_PORT = "MASTER_PORT"
ENV_WORLD_SIZE = "WORLD_SIZE"
ENV_LOCAL_WORLD_SIZE = "LOCAL_WORLD_SIZE"
ENV_MS_SCHED_PORT = "MS_SCHED_PORT"
ENV_MS_NODE_RANK = "MS_NODE_RANK"
ENV_MS_WORKER_NUM = "MS_WORKER_NUM"
ENV_MS_LOCAL_WORKER = "MS_LOCAL_WORKER"
# what the launchers give each training process (torch.distributed.run; MindSpore msrun)
ENV_LOCAL_RANK = "LOCAL_RANK"
ENV_TORCHELASTIC_RESTART_COUNT = "TORCHELASTIC_RESTART_COUNT"
ENV_RANK_ID = "RANK_ID"
ENV_MS_ROLE = "MS_ROLE"
MS_ROLE_SCHEDULER = "MS_SCHED"
MS_ROLE_WORKER = "MS_WORKER"
#: "true"/"false": whether this MindSpore replica requests NPUs (ascend-operator env.go setMindSporeEnv)
ENV_NPU_POD = "NPU_POD"
#: MindIO TTP controller address per rank (PyTorch: MindSpeed-LLM tft_train_initialize.py; MindSpore:
#: MS_TFT_IP / MS_TFT_PORT, mindspore utils.py TftHandle.init) (runtime.podenv)
ENV_TTP_ADDR = "TTP_ADDR"
ENV_MS_TFT_IP = "MS_TFT_IP"
ENV_MS_TFT_PORT = "MS_TFT_PORT"
#: NPUs the container sees; set from the pod annotation the device plugin writes (YAMLCFG). The
#: Ascend Operator adds it itself from 7.0.RC1; a Volcano Job never gets it (releases.py).
ENV_ASCEND_VISIBLE_DEVICES = "ASCEND_VISIBLE_DEVICES"

# --- paths --------------------------------------------------------------------------------------------
#: libtaskd.so inside the taskd wheel (PLR 适配训练脚本).
LIBTASKD_RELATIVE = "taskd/python/cython_api/libs/libtaskd.so"
#: RankTable: volume must be named "ranktable"; the operator writes hccl.json into the host dir.
RANKTABLE_VOLUME = "ranktable"
RANKTABLE_MOUNT = "/user/serverid/devindex/config"
RANKTABLE_HOST_ROOT = "/user/mindx-dl/ranktable"
LOG_ROOT = "/var/log/mindx-dl"
#: Job-scoped logs on shared storage: PLR's scripts and the samples write TaskD and training logs
#: under /job/code/alllogs/$MINDX_TASK_ID (RT04; MCD Qwen3 train_start.sh).
JOB_LOG_ROOT = "/job/code/alllogs"
#: the same directory name under the checkpoint path when the logs go to the checkpoint storage
JOB_LOG_DIR_NAME = "alllogs"
#: TaskD's log directory must have exactly this mode (taskd constants LOG_DIR_PRIVILEGE; utils/log/logger.py)
TASKD_LOG_DIR_MODE = 0o750
DRIVER_PATH = "/usr/local/Ascend/driver"
LOCALTIME_PATH = "/etc/localtime"
#: reset-config-<job> ConfigMap (RT01 "ConfigMap Description"); the device plugin copies its reset.json
#: to RESET_CONFIG_HOST_ROOT/<namespace>.reset-config-<job> on the node (device plugin
#: pkg/common/constants.go ResetInfoDir), which jobs with graceful fault tolerance, an in-container
#: agent or process-level recovery mount read-only here (elastic agent constants RESET_CONFIG_PATH =
#: /user/restore/reset/config/reset.json)
RESET_CONFIG_PREFIX = "reset-config-"
RESET_CONFIG_HOST_ROOT = "/user/restore/reset"
RESET_CONFIG_MOUNT = "/user/restore/reset/config"
RESET_CONFIG_VOLUME = "reset-config"
#: rings-config-<job> ConfigMap holding hccl.json for a Volcano Job (RT06; YAMLCFG)
RINGS_CONFIG_PREFIX = "rings-config-"
RANKTABLE_FILE = "hccl.json"
#: The device plugin mounts /etc/vnpu.cfg as hostPath type File: it must exist before the pod starts
#: (MC:component/ascend-device-plugin/build/ascendplugin-volcano.yaml; the driver installer creates it,
#: mode 0600).
VNPU_CFG = "/etc/vnpu.cfg"

# --- Ascend Docker Runtime (INST02; MC component/ascend-docker-runtime) -----------------------------------
#: Runtime name the installer registers in daemon.json / config.toml and makes the default.
ASCEND_RUNTIME_NAME = "ascend"
#: Default --install-path; the installer appends Ascend-Docker-Runtime/ to it.
ASCEND_RUNTIME_INSTALL_ROOT = "/usr/local/Ascend"
ASCEND_RUNTIME_DIR = "Ascend-Docker-Runtime"
ASCEND_RUNTIME_BINARY = "ascend-docker-runtime"
#: Pods of the device plugin DaemonSet carry name=<this> (device-plugin YAMLs); the roles restart the
#: plugin on a node after its container runtime changed (it detects the runtime at start, INST04).
DEVICE_PLUGIN_APP_LABEL = "ascend-device-plugin-ds"

# --- NFS client mounts on the nodes -----------------------------------------------------------------------
#: NFS5: "hard" (the default, spelled out) retries I/O until the server answers, so a server restart
#: does not turn into write errors in a checkpoint; "_netdev" orders the mount after the network at boot.
#: The NFS version is left to negotiation (NFS5: the client picks the highest the server offers).
NFS_MOUNT_OPTIONS = ("rw", "hard", "_netdev")

# --- scheduler-component flags the resilience settings drive (INST04 Table 3; INST09; INST05 Table 3) -------
FLAG_VOLCANO_TYPE = "-volcanoType"
FLAG_HOT_RESET = "-hotReset"
FLAG_LIST_WATCH_PERIOD = "-listWatchPeriod"
FLAG_REPORT_INTERVAL = "-reportInterval"
INIT_PARAM_GRACE_OVER_TIME = "grace-over-time"

# --- documented ranges of scheduler settings -------------------------------------------------------------
#: Volcano init-param grace-over-time, seconds (INST05 Table 3).
RANGE_GRACE_OVER_TIME = (2, 3600)
#: Device plugin -listWatchPeriod, seconds (INST04 Table 3).
RANGE_LIST_WATCH_PERIOD = (3, 1800)
#: NodeD -reportInterval, seconds (INST09).
RANGE_REPORT_INTERVAL = (1, 300)

# --- users (INST01 "Creating a User"; FAQ 337) --------------------------------------------------------------
USER_HWHIAI = "HwHiAiUser"
UID_HWHIAI = 1000
USER_HWMINDX = "hwMindX"
UID_HWMINDX = 9000

# --- run.py patches (RTO; PLR) --------------------------------------------------------------------------
#: TaskD from 7.3.0: `sed -i '/import os/i import taskd.python.adaptor.patch' .../torch/distributed/run.py`
#: (PLR 构建镜像)
RUNPY_IMPORT_TASKD = "import taskd.python.adaptor.patch"
RUNPY_ANCHOR_TASKD = "import os"
#: Elastic Agent up to 7.2: `sed -i '/import logging/i import mindx_elastic.api' ...` (RTO 表2)
RUNPY_IMPORT_MINDX_ELASTIC = "import mindx_elastic.api"
RUNPY_ANCHOR_MINDX_ELASTIC = "import logging"
#: Every import line a MindCluster release has put into run.py (patch-torchrun and doctor recognise them).
RUNPY_IMPORTS_KNOWN = (RUNPY_IMPORT_TASKD, RUNPY_IMPORT_MINDX_ELASTIC)

# --- torchrun under the in-container agent ------------------------------------------------------------
#: --max_restarts when the profile leaves it unset and TaskD or the Elastic Agent runs in the container:
#: "不配置该参数时默认为32767次" (RTO 表2); TaskD's patch turns 0 into 32767
#: (MC:component/taskd/taskd/python/adaptor/patch/torch_patch.py).
MAX_RESTARTS_UNDER_AGENT = 32767
#: The torchrun --monitor_interval RTO 表2 gives as the default, in seconds: "不配置该参数时默认为5秒".
#: A profile that leaves it unset does not get it: the plan does not pass the option, so torchrun's own
#: default applies (:data:`TORCH_MONITOR_INTERVAL`). RTO 表2 also calls the value an integer; torch reads
#: a float (TORCH torch/distributed/run.py ``--monitor-interval`` type=float in every release MindCluster
#: supports, 2.1.0 to 2.7.1, RT07 Table 1), so the profile takes a number (issue 31).
MONITOR_INTERVAL_DEFAULT = 5
#: torchrun's own --monitor_interval when the option is not passed: 0.1 s from torch 2.4 (pytorch/pytorch
#: pull 124692, "torchelastic: change monitor_interval default to 0.1"), 5 s in torch 2.1 to 2.3
#: (TORCH torch/distributed/run.py; :data:`resumable.releases.TORCH_FAST_MONITOR`).
TORCH_MONITOR_INTERVAL = 0.1
TORCH_MONITOR_INTERVAL_BEFORE = 5.0
#: From 7.3.0 TaskD's patch of torch elastic (``import taskd.python.adaptor.patch`` in run.py) replaces
#: SimpleElasticAgent._invoke_run with TaskD's own agent loop, which looks at the training processes every
#: MONITOR_INTERVAL = 1 s and never reads torchrun's --monitor_interval
#: (MC:@v7.3.0 component/taskd/taskd/python/adaptor/patch/torch_patch.py:282-303 (patch_invoke_run, patch_torch_method),
#: .../framework/agent/pt_agent/pt_agent.py:68-73 invoke_run, .../toolkit/constants/constants.py:153;
#: the same in MC:@v26.1.0, constants.py:154).
TASKD_MONITOR_SECONDS = 1.0
TASKD_MONITOR_SOURCE = (
    "MC:@v7.3.0 component/taskd/taskd/python/adaptor/patch/torch_patch.py:282-303 (patch_invoke_run); "
    "MC:@v7.3.0 component/taskd/taskd/python/framework/agent/pt_agent/pt_agent.py:68-73; "
    "MC:@v7.3.0 component/taskd/taskd/python/toolkit/constants/constants.py:153; "
    "MC:@v26.1.0 component/taskd/taskd/python/toolkit/constants/constants.py:154"
)
#: The agent looks at its workers once per monitor interval (TORCH torch/distributed/elastic/agent/server/api.py
#: SimpleElasticAgent._invoke_run: sleep(monitor_interval), then _monitor_workers); the derived hang timeout
#: is at least this many ticks (PROJECT), an unset monitor_interval (torchrun's own default) counted as 1 s
HANG_MONITOR_TICKS = 3

# --- the profile inside the training container (this project's convention) ----------------------------
#: `resumable launch` / `doctor` read the profile from $RESUMABLE_PROFILE (default below) and the job
#: name from $RESUMABLE_JOB; the job templates mount the profile from a ConfigMap and set both.
ENV_RESUMABLE_PROFILE = "RESUMABLE_PROFILE"
ENV_RESUMABLE_JOB = "RESUMABLE_JOB"
PROFILE_MOUNT_DIR = "/etc/resumable"
PROFILE_FILE_NAME = "profile.yaml"

# --- resumable launch inside the container (this project's convention) ----------------------------------
#: The launcher tells the start-up hook in the training processes where to report (a Unix datagram
#: socket), which process launched them, and the compile mode to apply when torch_npu is imported.
ENV_RESUMABLE_EVENTS = "RESUMABLE_EVENTS_SOCKET"
ENV_RESUMABLE_LAUNCHER_PID = "RESUMABLE_LAUNCHER_PID"
ENV_RESUMABLE_JIT_COMPILE = "RESUMABLE_JIT_COMPILE"
ENV_RESUMABLE_COMPILE_AFTER = "RESUMABLE_COMPILE_AFTER"
ENV_RESUMABLE_ATTEMPT_STORE = "RESUMABLE_ATTEMPT_STORE"
#: seconds between the heartbeats the start-up hook sends from each training process (0 or unset: none)
ENV_RESUMABLE_HEARTBEAT = "RESUMABLE_HEARTBEAT_SECONDS"
#: seconds between heartbeats (this project's choice: one tiny datagram, negligible next to a training step)
HEARTBEAT_SECONDS = 2.0
#: the least hang timeout the plan derives: a heavily loaded node (a 2-core CI machine running the test
#: suite, a node importing torch in every process at once) must not look hung (PROJECT)
HANG_FLOOR_SECONDS = 60
#: the least start timeout the plan derives (plan.launcher.start_timeout): a training process that has not
#: initialised its process group this long after it started, while its peers use one, is taken for hung,
#: and so is a recovery whose new processes do not start this long after the fault (PROJECT; issue 27:
#: a restarted generation waited in the rendezvous for 13 minutes without a word)
START_FLOOR_SECONDS = 300
#: the launcher asks the start-up hook in the agent to fork the workers from a warm process
#: (plan.launcher.warm_workers); the warm process itself carries the second variable
ENV_RESUMABLE_WARM = "RESUMABLE_WARM_WORKERS"
ENV_RESUMABLE_WARM_ZYGOTE = "RESUMABLE_WARM_ZYGOTE"
#: CANN's HCCL_EXEC_TIMEOUT when unset (A2; HA-CANN-EXEC)
HCCL_EXEC_TIMEOUT_DEFAULT = 1836
#: torch's agent-store flag and the per-attempt key prefix MindCluster uses for torch >= 2.6
#: (HA72-075 rendezvous.py edit; TaskD torch_patch.py)
ENV_TORCHELASTIC_USE_AGENT_STORE = "TORCHELASTIC_USE_AGENT_STORE"
ATTEMPT_STORE_PREFIX = "/worker/attempt_"
#: Where the image recipe keeps the profile it was built from (the job templates mount the live one there).
#: The nodes keep it there too (Ansible role resumable_install), so `resumable doctor` finds it by default.
PROFILE_PATH = PROFILE_MOUNT_DIR + "/" + PROFILE_FILE_NAME


# --- shared storage ------------------------------------------------------------------------------------
#: The uid and gid an NFS export with root_squash (the default) maps root to: anonuid/anongid default
#: 65534 (NFS exports(5)); the training runs as root, so that is who writes the job directories.
NFS_SQUASHED_ID = 65534
#: Largest uid/gid (Linux: 32-bit, 4294967295 is (uid_t)-1, never a user).
ID_MAX = 4294967294
#: The image of the Job that prepares the job directories on an NFS export (storage.nfs.prepare_image).
STORAGE_PREPARE_IMAGE = "busybox:1.36"
#: Where the Ansible role shared_storage mounts the whole export on management nodes to create the job
#: directories (PROJECT: a mount of this project's own, not a MindCluster path).
EXPORT_HOST_ROOT = "/mnt/ascend-resumable/export"

#: The names of the volumes the plan gives every training pod (plan.job.volumes), with what they hold;
#: a user volume may not take one (rule job-volumes).
VOLUME_SHM = "shm"
VOLUME_OP_CACHE = "op-cache"
VOLUME_CHECKPOINTS = "checkpoints"
VOLUME_DRIVER = "ascend-driver"
VOLUME_LOCALTIME = "localtime"
VOLUME_PROFILE = "resumable-profile"
PLANNED_VOLUMES = {
    VOLUME_SHM: "shared memory",
    VOLUME_OP_CACHE: "the compile cache",
    VOLUME_CHECKPOINTS: "checkpoints",
    RANKTABLE_VOLUME: "the RankTable",
    RESET_CONFIG_VOLUME: "the reset config",
    VOLUME_DRIVER: "the NPU driver",
    VOLUME_LOCALTIME: "the host's time zone",
    VOLUME_PROFILE: "the resumable profile",
}

#: The recovery timeline in the job's log directory (plan.launcher.log_dir), one file per host.
TIMELINE_FILE = "timeline-%s.jsonl"
