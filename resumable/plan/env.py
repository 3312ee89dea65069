"""The training container's environment: recovery switches, compile cache, HCCL, addresses.

Shared by the job part (container env) and the launcher part (what ``resumable launch`` exports).
"""

from __future__ import annotations

from typing import List, Optional

from .. import constants as C
from .. import releases as R
from ..facts import JobFacts
from .model import EnvVar

#: MINDIO_WAIT_MINDX_TIME for elastic training without recover (RT04: 60 or more).
MINDIO_WAIT_ELASTIC = "60"


def taskd_process_enable(f: JobFacts) -> Optional[str]:
    """TASKD_PROCESS_ENABLE as the release reads it: 7.2.RC1 turns process features on only with
    `on`; 7.3.0 has them on by default and documents `off` for Pod-level-only jobs (RT04)."""
    if not f.uses_taskd or not f.at_least(R.OPERATOR_INJECTS_RECOVERY_ENV):
        return None
    chosen = f.job.recovery.taskd_process_enable
    if chosen != "auto":
        return chosen
    return "on" if (f.process_level or f.hot_switch) else "off"


def recovery_env(f: JobFacts) -> List[EnvVar]:
    """Recovery variables. From 7.2.RC1 the operator injects them from recover-strategy (RT04 Table
    3); before that the job must carry them itself. HCCL_ASYNC_ERROR_HANDLING is always explicit."""
    env: List[EnvVar] = []
    injected = f.at_least(R.OPERATOR_INJECTS_RECOVERY_ENV)
    if f.is_pytorch:
        if not f.watchdog_on:
            env.append(EnvVar(C.ENV_HCCL_ASYNC_ERROR_HANDLING, "0", reason="watchdog off (seed 表1; RT04 Table 3)"))
        elif f.job.recovery.watchdog == "on":
            env.append(EnvVar(C.ENV_HCCL_ASYNC_ERROR_HANDLING, "1", reason="watchdog on (seed 表1)"))
        if f.job_level or f.pod_level:
            env.append(EnvVar(C.ENV_RESUME_MODE_ENABLE, "1", reason="resume from checkpoint (seed 表1 script)"))
    elif not f.watchdog_on:
        env.append(EnvVar(C.ENV_MS_ENABLE_THM, "{HCCL_WATCHDOG:0}", reason="MindSpore watchdog off (RT04)"))
    if f.process_level and not injected:
        env.append(EnvVar(C.ENV_PROCESS_RECOVER, "on", reason="process-level recovery before 7.2 (HA70-076)"))
        if any(s in f.strategies for s in ("recover", "recover-in-place", "retry")):
            env.append(EnvVar(C.ENV_ELASTIC_PROCESS_RECOVER_ENABLE, "1", reason="before 7.2 (HA70-076)"))
        if "recover-in-place" in f.strategies:
            env.append(
                EnvVar(C.ENV_ENABLE_RESTART_FAULT_PROCESS, "on", reason="recover-in-place before 7.2 (HA71-025)")
            )
    value = taskd_process_enable(f)
    if value is not None:
        env.append(EnvVar(C.ENV_TASKD_PROCESS_ENABLE, value, reason="TaskD process features (RT04)"))
    if "elastic-training" in f.strategies and "recover" not in f.strategies:
        env.append(EnvVar(C.ENV_MINDIO_WAIT_MINDX_TIME, MINDIO_WAIT_ELASTIC, reason="elastic only (RT04)"))
    return env


def container_env(f: JobFacts) -> List[EnvVar]:
    job = f.job
    env: List[EnvVar] = []
    mindio = job.image.mindio_ttp is not None and (f.process_level or f.hot_switch)
    if f.uses_taskd or mindio:
        env.append(EnvVar(C.ENV_POD_IP, field_path="status.podIP", reason="TaskD/MindIO address (YAMLCFG)"))
    env.append(EnvVar(C.ENV_XDL_IP, field_path="status.hostIP", reason="host address (YAMLCFG)"))
    if f.host_network:
        env.append(EnvVar(C.ENV_HCCL_IF_IP, field_path="status.hostIP", reason="hostNetwork (YAMLCFG)"))
    if (mindio or "dump" in f.strategies) and job.recovery.ttp_port is not None:
        env.append(EnvVar(C.ENV_TTP_PORT, str(job.recovery.ttp_port), reason="MindIO TTP controller (RT06)"))
    env.extend(recovery_env(f))
    if job.compile.mode == "cache":
        env.append(EnvVar(C.ENV_ASCEND_CACHE_PATH, job.compile.cache_path, reason="shared compile cache (seed 表10)"))
        size = job.compile.max_op_cache_size if job.compile.max_op_cache_size is not None else -1
        env.append(EnvVar(C.ENV_ASCEND_MAX_OP_CACHE_SIZE, str(size), reason="shared storage (seed 表10)"))
    if job.compile.mindspore_graph_cache and not f.is_pytorch:
        env.append(EnvVar(C.ENV_MS_COMPILER_CACHE_ENABLE, "1", reason="MindSpore graph cache (RT05)"))
        env.append(EnvVar(C.ENV_MS_COMPILER_CACHE_PATH, job.compile.cache_path + "/ms", reason="RT05"))
    if job.hccl.connect_timeout is not None:
        env.append(EnvVar(C.ENV_HCCL_CONNECT_TIMEOUT, str(job.hccl.connect_timeout), reason="profile"))
    if job.hccl.exec_timeout is not None:
        env.append(EnvVar(C.ENV_HCCL_EXEC_TIMEOUT, str(job.hccl.exec_timeout), reason="profile"))
    if job.ranktable:
        env.append(
            EnvVar(
                C.ENV_RANK_TABLE_FILE,
                C.RANKTABLE_MOUNT + "/hccl.json",
                reason="RankTable mode (RT05 Table 4)",
            )
        )
    owned = {e.name for e in env}
    for name in sorted(job.env):
        if name not in owned:
            env.append(EnvVar(name, job.env[name], reason="profile env"))
    return env
