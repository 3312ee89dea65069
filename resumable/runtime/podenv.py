"""What ``resumable launch`` derives on a pod beyond what the job controller injects, per job kind.

- **AscendJob**: the Ascend Operator injects the rendezvous (MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE
  on PyTorch, MS_SCHED_HOST/MS_SCHED_PORT/MS_NODE_RANK/MS_WORKER_NUM/MS_ROLE/NPU_POD on MindSpore)
  and MINDX_TASK_ID (MC:component/ascend-operator/pkg/controllers/v1/env.go setCommonEnv,
  setPytorchEnv, setMindSporeEnv at 7.3.0 and 26.1.0). :func:`msrun_topology` refuses a layout where
  two pods would be the same msrun node or a pod without NPUs would start msrun workers.
- **Volcano Job**: nothing is injected. :func:`volcano_rendezvous` reads it from the RankTable the
  job mounts, as the upstream vcjob scripts do (MCD:samples/train/resumable-training/fault-tolerance/
  ranktable/pytorch/gpt-3/rank_table.sh and train_start.sh): wait for ``status: completed``, this pod
  is the server_list entry that names it, node rank = its index, the master is the first server,
  the world size the device count.
- **MindIO TTP**: each rank connects to the controller, which under TaskD runs on the rank-0 pod.
  :func:`ttp_address` exports TTP_ADDR (PyTorch: ``$POD_IP`` on rank 0, ``$MASTER_ADDR`` elsewhere;
  MCD:.../without-ranktable/pytorch/Qwen3/train_start.sh; read by Ascend/MindSpeed-LLM
  mindspeed_llm/core/high_availability/tft_train_initialize.py, default 127.0.0.1) or MS_TFT_IP and
  MS_TFT_PORT (MindSpore: ``$MS_SCHED_HOST`` and the TTP port; MCD:.../ranktable/mindspore/Qwen3/
  msrun_launcher.sh; read by MindSpore mindspore/python/mindspore/utils/utils.py TftHandle.init,
  which fails on an unset MS_TFT_PORT).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .. import constants as C
from .. import jsonio
from ..errors import ResumableError
from ..fileio import read_text
from ..plan.model import JobPlan

#: one export: name, value, reason
Export = Tuple[str, str, str]
#: the RankTable is a few KB per server; anything this large is not one
RANKTABLE_MAX_BYTES = 16 << 20
#: rank_table.sh check_hccl_status: the status the writer sets once every pod is in
RANKTABLE_COMPLETED = "completed"
#: rank_table.sh check_hccl_status waits 60 x 5 s for the writer
RANKTABLE_WAIT_SECONDS = 300.0
RANKTABLE_POLL_SECONDS = 5.0
VCJOB_SOURCE = "MCD:samples/train/resumable-training/fault-tolerance/ranktable/pytorch/gpt-3/rank_table.sh"
MSRUN_SOURCE = "ascend-operator pkg/controllers/v1/pod.go createPodSpec, utils.go checkNonWorkerRplMountChips"


def ttp_address(job: JobPlan, env: Mapping[str, str], rank: Optional[int]) -> Tuple[List[Export], List[str]]:
    """TTP_ADDR or MS_TFT_IP/MS_TFT_PORT for this rank (``rank``: RANK as podvars parsed it); a value
    the container already has (the profile's env) is kept."""
    port = job.launcher.ttp_port
    exports: List[Export] = []
    problems: List[str] = []
    if port is None:
        return exports, problems
    if job.framework == "pytorch":
        if env.get(C.ENV_TTP_ADDR):
            return exports, problems
        if rank is None and env.get(C.ENV_RANK) is not None:
            return exports, problems  # a malformed RANK: podvars names it
        name = C.ENV_POD_IP if rank == 0 else C.ENV_MASTER_ADDR
        value = env.get(name)
        if rank is None or not value:
            problems.append(
                "%s is not set, so TTP_ADDR has no value: MindIO connects every rank to the controller on the "
                "rank-0 pod (RANK=0: $POD_IP, others: $MASTER_ADDR)" % (C.ENV_RANK if rank is None else name)
            )
            return exports, problems
        why = "rank 0 hosts the MindIO controller" if rank == 0 else "the MindIO controller on the rank-0 pod"
        exports.append((C.ENV_TTP_ADDR, value, "%s: $%s (MCD Qwen3 train_start.sh; MindSpeed-LLM)" % (why, name)))
        return exports, problems
    if not env.get(C.ENV_MS_TFT_IP):
        host = env.get(C.ENV_MS_SCHED_HOST)
        if not host:
            problems.append("MS_SCHED_HOST is not set, so MS_TFT_IP (the MindIO controller) has no value")
        else:
            exports.append(
                (
                    C.ENV_MS_TFT_IP,
                    host,
                    "MindIO controller on the Scheduler pod: $MS_SCHED_HOST (MCD msrun_launcher.sh)",
                )
            )
    if not env.get(C.ENV_MS_TFT_PORT):
        exports.append((C.ENV_MS_TFT_PORT, str(port), "MindIO controller port = TTP_PORT (MCD msrun_launcher.sh)"))
    return exports, problems


def msrun_topology(job: JobPlan, env: Mapping[str, str], number: Optional[int]) -> List[str]:
    """msrun node ranks that cannot collide: the plan gives the Scheduler NPUs, so the Ascend Operator
    makes it node 0 and the Workers 1..n-1; MS_ROLE=MS_WORKER with MS_NODE_RANK=0 (the operator's
    layout when the Scheduler has no NPUs) or NPU_POD=false means a job YAML this plan did not render.
    ``number`` is MS_NODE_RANK as podvars parsed it (its form and range are checked there)."""
    if job.launcher.launcher != "msrun" or job.kind != C.ASCENDJOB_KIND:
        return []
    role, npu_pod = env.get(C.ENV_MS_ROLE), env.get(C.ENV_NPU_POD)
    fix = (
        "Render the job again from this profile (`resumable render`): its Scheduler requests the Workers' NPUs, "
        "so the operator makes it node 0 and numbers the Workers from 1 (%s)" % MSRUN_SOURCE
    )
    if npu_pod == "false":
        return [
            "NPU_POD=false: this pod (MS_ROLE=%s) has no NPUs, and msrun would start %s workers on it. %s"
            % (role, job.launcher.taskd_manager.proc_per_node, fix)
        ]
    if role == C.MS_ROLE_WORKER and number == 0:
        return [
            "MS_NODE_RANK=0 on a Worker pod: the Scheduler pod is msrun node 0 too, so two pods would be the same "
            "node. The Ascend Operator numbers Workers from 0 only when no non-Worker replica requests NPUs. %s" % fix
        ]
    return []


def read_ranktable(path: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """The RankTable as a dict, or why it cannot be used (regular file, capped size, JSON object)."""
    try:
        text = read_text(
            path,
            what="RankTable",
            limit=RANKTABLE_MAX_BYTES,
            error=ResumableError,
            fix="It is the RankTable of the job's rings-config ConfigMap",
        )
        data = jsonio.loads(text)
    except ResumableError as exc:
        return None, str(exc)
    except ValueError as exc:
        return None, "the RankTable %s is not JSON (%s)" % (path, exc)
    if not isinstance(data, dict):
        return None, "%s is not a JSON object" % path
    return data, None


def _servers(table: Dict[str, Any]) -> List[Dict[str, Any]]:
    servers = table.get("server_list")
    if not isinstance(servers, list):
        return []
    return [s for s in servers if isinstance(s, dict)]


def _devices(server: Dict[str, Any]) -> int:
    devices = server.get("device")
    return len(devices) if isinstance(devices, list) else 0


def _address(server: Dict[str, Any]) -> str:
    """The pod address of a server: container_ip (its pod IP), else host_ip (hostNetwork) (the
    operator's ranktable common/server.go Server)."""
    return str(server.get("container_ip") or server.get("host_ip") or "")


def wait_for_ranktable(
    job: JobPlan,
    env: Mapping[str, str],
    timeout: float = RANKTABLE_WAIT_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Before a real launch of a Volcano Job: wait (bounded, as rank_table.sh check_hccl_status does)
    until the RankTable says completed; its pods start before every pod is in it. True once it is,
    False on timeout or when there is nothing to wait for (build_spec then names the problem)."""
    path = env.get(C.ENV_RANK_TABLE_FILE) or C.RANKTABLE_MOUNT + "/" + C.RANKTABLE_FILE
    if job.kind != C.VCJOB_KIND:
        return False
    deadline = clock() + timeout
    while True:
        table, _ = read_ranktable(path)
        if table is not None and table.get("status") == RANKTABLE_COMPLETED:
            return True
        if clock() >= deadline:
            return False
        sleep(RANKTABLE_POLL_SECONDS)


#: what a Volcano Job's launcher exports per framework: master address and port, node rank, world size,
#: local size (the names the Ascend Operator injects into an AscendJob: env.go setPytorchEnv, setMindSporeEnv)
RENDEZVOUS_NAMES = {
    "pytorch": (C.ENV_MASTER_ADDR, C.ENV_MASTER_PORT, C.ENV_RANK, C.ENV_WORLD_SIZE, C.ENV_LOCAL_WORLD_SIZE),
    "mindspore": (
        C.ENV_MS_SCHED_HOST,
        C.ENV_MS_SCHED_PORT,
        C.ENV_MS_NODE_RANK,
        C.ENV_MS_WORKER_NUM,
        C.ENV_MS_LOCAL_WORKER,
    ),
}


def volcano_rendezvous(job: JobPlan, env: Mapping[str, str]) -> Tuple[List[Export], List[str]]:
    """The launcher's rendezvous on a Volcano Job pod, from the RankTable (RANK_TABLE_FILE)."""
    exports: List[Export] = []
    if job.kind != C.VCJOB_KIND:
        return exports, []
    path = env.get(C.ENV_RANK_TABLE_FILE)
    if not path:
        return exports, ["RANK_TABLE_FILE is not set: a Volcano Job's launcher reads its rank from the RankTable"]
    table, error = read_ranktable(path)
    if table is None:
        return exports, [error or path]
    status = table.get("status")
    if status != RANKTABLE_COMPLETED:
        return exports, [
            "the RankTable %s has status %r, not %r: the pods are not all scheduled yet (%s check_hccl_status)"
            % (path, status, RANKTABLE_COMPLETED, VCJOB_SOURCE)
        ]
    servers = _servers(table)
    pod_ip, host_ip = env.get(C.ENV_POD_IP), env.get(C.ENV_XDL_IP)
    mine = [i for i, s in enumerate(servers) if pod_ip and s.get("container_ip") == pod_ip]
    if not mine:  # rank_table.sh get_server_id: by the host address when the pod's own is not listed
        mine = [i for i, s in enumerate(servers) if host_ip and host_ip in (s.get("server_id"), s.get("host_ip"))]
    if len(mine) != 1:
        return exports, [
            "this pod (POD_IP=%s, XDL_IP=%s) is %s the server_list of the RankTable %s"
            % (pod_ip, host_ip, "not in" if not mine else "listed %d times in" % len(mine), path)
        ]
    index = mine[0]
    total = sum(_devices(s) for s in servers)
    local = _devices(servers[index])
    master = _address(servers[0])
    if not master or not local or len(servers) != job.launcher.nodes:
        return exports, [
            "the RankTable %s lists %d servers (%d NPUs here, master %r), the plan has %d nodes"
            % (path, len(servers), local, master, job.launcher.nodes)
        ]
    why = " from the RankTable (%s)" % VCJOB_SOURCE
    values = (
        (master, "the first server of the RankTable (msrun node 0 on MindSpore)"),
        (str(C.VCJOB_MASTER_PORT), "the vcjob sample's master port"),
        (str(index), "this pod's place in server_list"),
        (str(total), "NPUs in the RankTable"),
        (str(local), "NPUs of this server"),
    )
    names = RENDEZVOUS_NAMES["mindspore" if job.framework == "mindspore" else "pytorch"]
    exports += [(name, value, reason + why) for name, (value, reason) in zip(names, values)]
    return exports, []


def private_dir_problem(path: str, mode: int = C.TASKD_LOG_DIR_MODE) -> Optional[str]:
    """Why :func:`private_dir` would fail on ``path``, found without writing (the dry run's check)."""
    try:
        if os.path.islink(path):
            return "%s is a symlink, which TaskD's logger refuses" % path
        if not os.path.exists(path):
            return None
        if not os.path.isdir(path):
            return "%s is not a directory" % path
        actual = os.stat(path).st_mode & 0o777
    except OSError as exc:
        return "cannot examine %s (%s)" % (path, exc.strerror or exc)
    if actual != mode:
        return "%s has mode %04o, TaskD's logger needs exactly %04o: chmod %o %s" % (path, actual, mode, mode, path)
    return None


def private_dir(path: str, mode: int = C.TASKD_LOG_DIR_MODE) -> Optional[str]:
    """Create ``path`` with exactly ``mode`` (TaskD's logger raises at import unless its directory has
    mode 0750 and is no symlink: MC:component/taskd/taskd/python/utils/log/logger.py build_log_path,
    utils/validator/validators.py check_directory_permissions). An existing directory is left as it
    is; a wrong mode on it is reported, not changed. Returns the problem, or None."""
    problem = private_dir_problem(path, mode)
    if problem is not None or os.path.exists(path):
        return problem
    try:
        os.makedirs(path, exist_ok=True)
        os.chmod(path, mode)  # makedirs' mode is cut by the umask
    except OSError as exc:
        return "cannot create %s (%s)" % (path, exc)
    return None
