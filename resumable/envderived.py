"""The second floor of the container env, after the facts: what the plan sets for each variable of
:data:`resumable.envowners.ENV_OWNERS` (:func:`derived_env`), whether a value the user wrote in env
says the same (:func:`agrees`), and env entries for variables the plan leaves unset on purpose
(:func:`unset_conflicts`). The first floor, reading env values into the profile fields that own them
before the facts are derived, is :mod:`resumable.envowners`.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional

from . import constants as C
from . import releases as R
from .envowners import Conflict, env_int, env_path, graph_cache_path, watchdog_from_hccl, watchdog_from_thm
from .facts import JobFacts


class Setting(NamedTuple):
    """A value the plan derives for the training container."""

    name: str
    value: Optional[str] = None
    field_path: Optional[str] = None  # downward API instead of a literal
    reason: str = ""


#: MINDIO_WAIT_MINDX_TIME for elastic training without recover (RT04: 60 or more).
MINDIO_WAIT_ELASTIC = 60


def taskd_process_enable(f: JobFacts) -> Optional[str]:
    """TASKD_PROCESS_ENABLE as the release reads it: 7.2.RC1 turns process features on only with
    `on`; 7.3.0 has them on by default and documents `off` for Pod-level-only jobs (RT04)."""
    if not f.uses_taskd or not f.at_least(R.OPERATOR_INJECTS_RECOVERY_ENV):
        return None
    chosen = f.job.recovery.taskd_process_enable
    if chosen != "auto":
        return chosen
    return "on" if (f.process_level or f.hot_switch) else "off"


def uses_mindio_ttp(f: JobFacts) -> bool:
    """The image has MindIO TTP and the job runs its controller: any process-level strategy, or hot
    switching (the operator gives a hot-switch job PROCESS_RECOVER=on and the recover strategy,
    MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/env.go addSubHealthyEnv; the TaskD Manager
    then starts the MindIO controller, component/taskd/taskd/python/framework/manager/manager.py
    start_taskd_manager and controller.py init_controller)."""
    return f.wheel_versions.get("mindio_ttp") is not None and (f.process_level or f.hot_switch)


def mindio_ttp_port(f: JobFacts) -> Optional[int]:
    """The MindIO TTP controller port when the job runs the controller, else None: the one answer
    to "is TTP in play" behind TTP_PORT (:func:`derived_env`), the pods' ``ttp-port`` and the
    launcher's TTP_ADDR. The controller binds POD_IP:TTP_PORT (MC:@v7.3.0
    component/taskd/taskd/python/framework/manager/controller.py init_controller; RT06); dump always
    needs it (RT05)."""
    if (uses_mindio_ttp(f) or "dump" in f.strategies) and f.job.recovery.ttp_port is not None:
        return f.job.recovery.ttp_port
    return None


def derived_env(f: JobFacts) -> List[Setting]:
    """Every variable of :data:`~resumable.envowners.ENV_OWNERS` the plan sets for job ``f``, with
    its value and why."""
    job = f.job
    env: List[Setting] = []
    mindio = uses_mindio_ttp(f)
    if f.uses_taskd or mindio:
        env.append(Setting(C.ENV_POD_IP, field_path="status.podIP", reason="TaskD/MindIO address (YAMLCFG)"))
    env.append(Setting(C.ENV_XDL_IP, field_path="status.hostIP", reason="host address (YAMLCFG)"))
    if f.host_network:
        env.append(Setting(C.ENV_HCCL_IF_IP, field_path="status.hostIP", reason="hostNetwork (YAMLCFG)"))
    ttp_port = mindio_ttp_port(f)
    if ttp_port is not None:
        env.append(Setting(C.ENV_TTP_PORT, str(ttp_port), reason="MindIO TTP controller (RT06)"))
    injected = f.at_least(R.OPERATOR_INJECTS_RECOVERY_ENV)
    if f.is_pytorch:
        if f.watchdog_on is False and (f.process_level or f.hot_switch or job.recovery.watchdog == "off"):
            env.append(Setting(C.ENV_HCCL_ASYNC_ERROR_HANDLING, "0", reason="watchdog off (RTO 表1; RT04 Table 3)"))
        elif job.recovery.watchdog == "on":
            env.append(Setting(C.ENV_HCCL_ASYNC_ERROR_HANDLING, "1", reason="watchdog on (RTO 表1)"))
        if f.job_level or f.pod_level:
            env.append(Setting(C.ENV_RESUME_MODE_ENABLE, "1", reason="resume from checkpoint (RTO 表1 script)"))
    elif f.watchdog_on is False and (f.process_level or f.hot_switch or job.recovery.watchdog == "off"):
        env.append(Setting(C.ENV_MS_ENABLE_THM, "{HCCL_WATCHDOG:0}", reason="MindSpore watchdog off (RT04 Table 3)"))
    if f.process_level and not injected:
        env.append(Setting(C.ENV_PROCESS_RECOVER, "on", reason="process-level recovery before 7.2 (HA70-076)"))
        if any(s in f.strategies for s in ("recover", "recover-in-place", "retry")):
            env.append(Setting(C.ENV_ELASTIC_PROCESS_RECOVER_ENABLE, "1", reason="before 7.2 (HA70-076)"))
        if "recover-in-place" in f.strategies:
            env.append(
                Setting(C.ENV_ENABLE_RESTART_FAULT_PROCESS, "on", reason="recover-in-place before 7.2 (HA71-025)")
            )
    value = taskd_process_enable(f)
    if value is not None:
        env.append(Setting(C.ENV_TASKD_PROCESS_ENABLE, value, reason="TaskD process features (RT04)"))
    if "elastic-training" in f.strategies and "recover" not in f.strategies:
        env.append(Setting(C.ENV_MINDIO_WAIT_MINDX_TIME, str(MINDIO_WAIT_ELASTIC), reason="elastic only (RT04)"))
    if job.compile.mode == "cache":
        env.append(Setting(C.ENV_ASCEND_CACHE_PATH, job.compile.cache_path, reason="shared compile cache (RTO 表10)"))
        size = job.compile.max_op_cache_size if job.compile.max_op_cache_size is not None else -1
        env.append(Setting(C.ENV_ASCEND_MAX_OP_CACHE_SIZE, str(size), reason="shared storage (RTO 表10)"))
    if job.compile.mindspore_graph_cache and not f.is_pytorch:
        env.append(Setting(C.ENV_MS_COMPILER_CACHE_ENABLE, "1", reason="MindSpore graph cache (RT05)"))
        env.append(Setting(C.ENV_MS_COMPILER_CACHE_PATH, graph_cache_path(job), reason="shared storage (RT05)"))
    if job.hccl.connect_timeout is not None:
        env.append(Setting(C.ENV_HCCL_CONNECT_TIMEOUT, str(job.hccl.connect_timeout), reason="HA-CANN-CONNECT"))
    if job.hccl.exec_timeout is not None:
        env.append(Setting(C.ENV_HCCL_EXEC_TIMEOUT, str(job.hccl.exec_timeout), reason="HA-CANN-EXEC"))
    if job.ranktable:
        env.append(
            Setting(C.ENV_RANK_TABLE_FILE, C.RANKTABLE_MOUNT + "/hccl.json", reason="RankTable mode (RT05 Table 4)")
        )
    return env


def agrees(name: str, user: str, setting: Setting) -> bool:
    """Whether the user's env value says what the plan's setting says."""
    if setting.field_path is not None:
        return False  # a literal never equals the downward-API value of each pod
    plan = setting.value or ""
    if name == C.ENV_HCCL_ASYNC_ERROR_HANDLING:
        return watchdog_from_hccl(user) == watchdog_from_hccl(plan)
    if name == C.ENV_MS_ENABLE_THM:
        return watchdog_from_thm(user) == watchdog_from_thm(plan)
    if name == C.ENV_MINDIO_WAIT_MINDX_TIME:
        number = env_int(user)
        return number is not None and number >= MINDIO_WAIT_ELASTIC
    if name in (C.ENV_TASKD_PROCESS_ENABLE, C.ENV_PROCESS_RECOVER, C.ENV_ENABLE_RESTART_FAULT_PROCESS):
        return user.strip().lower() == plan.lower()
    if name in (C.ENV_ASCEND_CACHE_PATH, C.ENV_MS_COMPILER_CACHE_PATH, C.ENV_RANK_TABLE_FILE):
        return env_path(user) == env_path(plan)
    number = env_int(user)
    if number is not None and env_int(plan) is not None:
        return number == env_int(plan)
    return user.strip() == plan


def unset_conflicts(f: JobFacts, derived: Dict[str, Setting]) -> List[Conflict]:
    """Env entries for variables the plan leaves unset on purpose, where setting them changes the
    job's recovery behaviour: process-recovery switches without a process-level strategy."""
    out: List[Conflict] = []
    env = f.job.env
    for name in (C.ENV_PROCESS_RECOVER, C.ENV_ELASTIC_PROCESS_RECOVER_ENABLE, C.ENV_ENABLE_RESTART_FAULT_PROCESS):
        if name not in env or name in derived:
            continue
        value = env[name].strip().lower()
        switched_on = value in ("on", "1", "true")
        if name == C.ENV_ENABLE_RESTART_FAULT_PROCESS and switched_on and "recover-in-place" not in f.strategies:
            out.append(
                Conflict(
                    name,
                    ("recovery.strategies",),
                    "env %s=%s asks for in-place process restarts, but recover-in-place is not among the strategies"
                    % (name, env[name]),
                    "Remove %s from env and add recover-in-place to recovery.strategies." % name,
                )
            )
        elif switched_on and not f.process_level:
            out.append(
                Conflict(
                    name,
                    ("recovery.strategies",),
                    "env %s=%s turns process-level recovery on, but recovery.strategies is empty, so ClusterD "
                    "has no recover-strategy to act on" % (name, env[name]),
                    "Remove %s from env and list the strategies in recovery.strategies." % name,
                )
            )
        elif not switched_on and f.process_level:
            out.append(
                Conflict(
                    name,
                    ("recovery.strategies",),
                    "env %s=%s turns off the process-level recovery recovery.strategies asks for" % (name, env[name]),
                    "Remove %s from env." % name,
                )
            )
    return out
