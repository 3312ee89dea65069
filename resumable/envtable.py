"""The training container's environment variables the plan owns, each with the profile field that
owns it: one table for the rules, the plan and docs/profile.md.

A recovery setting is checked the same whichever way the user writes it. ``jobs[].env`` may carry any
of these variables:

* where the owning field is left to the plan (``auto`` or null), the env value *is* the user's
  choice: it is read into the field (:func:`lift`) and every rule then checks it, naming the env
  entry (a watchdog switched on through ``HCCL_ASYNC_ERROR_HANDLING=1`` on a process-level job is
  the same error as ``recovery.watchdog: on``);
* where the field, or the plan's derivation from other fields, already fixes a value, the env value
  must agree (:func:`agrees`); a contradiction is an error naming both places (rule
  ``env-contradicts-profile``);
* an agreeing or lifted value is used as written; the plan never drops or overrides a variable the
  user set (:func:`derived_env` gives the plan's own values, :mod:`resumable.plan.env` merges).
"""

from __future__ import annotations

import copy
import posixpath
import re
from typing import TYPE_CHECKING, Callable, Dict, List, NamedTuple, Optional, Tuple

from . import constants as C
from . import releases as R
from .profile import Job

if TYPE_CHECKING:  # pragma: no cover
    from .facts import JobFacts


class EnvOwner(NamedTuple):
    """One variable the plan owns: the field that owns it, what the plan sets, the source."""

    name: str
    #: owning profile field(s), relative to the job ("recovery.watchdog"); "" for the downward API
    field: str
    #: what the plan sets and when (docs/profile.md)
    meaning: str
    source: str


#: Every variable the plan derives for the training container. Sources are codes of
#: :mod:`resumable.sources`.
ENV_OWNERS: Tuple[EnvOwner, ...] = (
    EnvOwner(
        C.ENV_HCCL_ASYNC_ERROR_HANDLING,
        "recovery.watchdog",
        "PyTorch watchdog: 0 when the watchdog is off (recovery.watchdog: off, or any process-level "
        "strategy), 1 with recovery.watchdog: on; unset otherwise (on by default where supported). "
        "In env: 0 = off, 1 or 2 = on",
        "RTO 表1; RT04 Table 3; ENV Table 5",
    ),
    EnvOwner(
        C.ENV_MS_ENABLE_THM,
        "recovery.watchdog",
        "MindSpore watchdog: {HCCL_WATCHDOG:0} when it is off (as for PyTorch)",
        "RT04 Table 3; RT05",
    ),
    EnvOwner(
        C.ENV_RESUME_MODE_ENABLE,
        "recovery.fault_scheduling, recovery.pod_rescheduling",
        "1 for PyTorch jobs with job- or Pod-level rescheduling",
        "RTO 表1",
    ),
    EnvOwner(
        C.ENV_TASKD_PROCESS_ENABLE,
        "recovery.taskd_process_enable",
        "on/off for TaskD jobs from 7.2.RC1: on with process-level strategies or hot switching, off "
        "for Pod-level-only jobs",
        "RT04; MC:@v7.3.0 component/taskd/taskd/python/framework/manager/manager.py",
    ),
    EnvOwner(
        C.ENV_PROCESS_RECOVER,
        "recovery.strategies",
        "on with any process-level strategy (set by the plan before 7.2.RC1, injected by the operator after)",
        "HA70-076; RT04 Table 3",
    ),
    EnvOwner(
        C.ENV_ELASTIC_PROCESS_RECOVER_ENABLE,
        "recovery.strategies",
        "1 with recover, recover-in-place or retry (set by the plan before 7.2.RC1)",
        "HA70-076; RT04 Table 3",
    ),
    EnvOwner(
        C.ENV_ENABLE_RESTART_FAULT_PROCESS,
        "recovery.strategies",
        "on with recover-in-place (set by the plan before 7.2.RC1)",
        "HA71-025; RT04 Table 3",
    ),
    EnvOwner(
        C.ENV_MINDIO_WAIT_MINDX_TIME,
        "recovery.strategies",
        "60 with elastic-training but not recover; a larger value in env agrees",
        "RT04",
    ),
    EnvOwner(
        C.ENV_TTP_PORT,
        "recovery.ttp_port",
        "the MindIO TTP controller port when MindIO TTP or dump is used",
        "RT05; RT06",
    ),
    EnvOwner(
        C.ENV_ASCEND_CACHE_PATH,
        "compile.mode, compile.cache_path",
        "compile.cache_path with compile.mode: cache (a shared volume is mounted there)",
        "RTO 表10",
    ),
    EnvOwner(
        C.ENV_ASCEND_MAX_OP_CACHE_SIZE,
        "compile.max_op_cache_size",
        "compile.max_op_cache_size, -1 when null, with compile.mode: cache",
        "RTO 表10",
    ),
    EnvOwner(
        C.ENV_MS_COMPILER_CACHE_ENABLE,
        "compile.mindspore_graph_cache",
        "1 with compile.mindspore_graph_cache on a MindSpore job",
        "RT05",
    ),
    EnvOwner(
        C.ENV_MS_COMPILER_CACHE_PATH,
        "compile.mindspore_graph_cache, compile.cache_path",
        "<compile.cache_path>/ms with compile.mindspore_graph_cache",
        "RT05",
    ),
    EnvOwner(C.ENV_HCCL_CONNECT_TIMEOUT, "hccl.connect_timeout", "hccl.connect_timeout when set", "HA-CANN-CONNECT"),
    EnvOwner(C.ENV_HCCL_EXEC_TIMEOUT, "hccl.exec_timeout", "hccl.exec_timeout when set", "HA-CANN-EXEC"),
    EnvOwner(
        C.ENV_RANK_TABLE_FILE,
        "ranktable",
        "%s/hccl.json with ranktable: true" % C.RANKTABLE_MOUNT,
        "RT05 Table 4; RT06",
    ),
    EnvOwner(C.ENV_HCCL_IF_IP, "host_network", "status.hostIP on the host network", "YAMLCFG"),
    EnvOwner(C.ENV_POD_IP, "", "status.podIP for TaskD and MindIO", "YAMLCFG; PLR 适配训练脚本"),
    EnvOwner(C.ENV_XDL_IP, "", "status.hostIP", "YAMLCFG"),
)

OWNERS: Dict[str, EnvOwner] = {o.name: o for o in ENV_OWNERS}


class Conflict(NamedTuple):
    """An env entry that contradicts the profile field owning its variable."""

    name: str
    #: profile paths relative to the job, besides the env entry ("recovery.watchdog")
    fields: Tuple[str, ...]
    message: str
    fix: str


class Setting(NamedTuple):
    """A value the plan derives for the training container."""

    name: str
    value: Optional[str] = None
    field_path: Optional[str] = None  # downward API instead of a literal
    reason: str = ""


class Lifted(NamedTuple):
    """A job with env values read into the fields the profile left to the plan."""

    job: Job
    #: field path relative to the job -> the env variable its value came from
    origins: Dict[str, str]
    conflicts: List[Conflict]


# --- reading env values ---------------------------------------------------------------------------


def _int(text: str) -> Optional[int]:
    text = text.strip()
    if re.fullmatch(r"-?[0-9]{1,12}", text):
        return int(text)
    return None


def _on_off(text: str) -> Optional[str]:
    t = text.strip().lower()
    return t if t in ("on", "off") else None


def watchdog_from_hccl(text: str) -> Optional[str]:
    """HCCL_ASYNC_ERROR_HANDLING: 0 turns the watchdog off, 1 (detect and exit) and 2 (detect
    only) leave it on (ENV Table 5); anything else is not a value torch_npu reads."""
    return {"0": "off", "1": "on", "2": "on"}.get(text.strip())


_MS_WATCHDOG = re.compile(r"HCCL_WATCHDOG\s*:\s*([0-9]+)")


def watchdog_from_thm(text: str) -> Optional[str]:
    """MS_ENABLE_THM: the HCCL_WATCHDOG key of the map; None when the map does not name it."""
    m = _MS_WATCHDOG.search(text)
    if m is None:
        return None
    return "off" if m.group(1) == "0" else "on"


def _path(text: str) -> str:
    return posixpath.normpath(text.strip()) if text.strip() else ""


# --- lifting env values into the fields they belong to ----------------------------------------------

LiftFn = Callable[[Job, str, str], Optional[Conflict]]


def _choice(env: str, field: str, parse: Callable[[str], Optional[str]], accepted: str, only: str = "") -> LiftFn:
    """A lifter for an auto/on/off field: ``parse`` reads the env value as on/off (None: not a
    value the consumer reads; ``accepted`` says what is); ``only``: the framework it applies to."""
    part, name = field.split(".")

    def lifter(job: Job, value: str, framework: str) -> Optional[Conflict]:
        if only and framework != only:
            return None
        wanted = parse(value)
        if wanted is None:
            return Conflict(
                env,
                (),
                "%s=%s is not a value it takes (%s)" % (env, value, accepted),
                "Remove it from env and set %s (auto, on or off)." % field,
            )
        return _lift_choice(job, part, name, wanted, env, value)

    return lifter


def _lift_watchdog_thm(job: Job, value: str, framework: str) -> Optional[Conflict]:
    if framework != "mindspore":
        return None
    wanted = watchdog_from_thm(value)
    if wanted is None:
        return None  # the map does not name the watchdog
    return _lift_choice(job, "recovery", "watchdog", wanted, C.ENV_MS_ENABLE_THM, value)


def _lift_choice(job: Job, part: str, name: str, wanted: str, env: str, value: str) -> Optional[Conflict]:
    """Read an auto/on/off choice from env: fills ``auto``, must equal anything else."""
    holder = getattr(job, part)
    current = getattr(holder, name)
    if current == "auto":
        setattr(holder, name, wanted)
        return None
    if current != wanted:
        return Conflict(
            env,
            ("%s.%s" % (part, name),),
            "env %s=%s means %s: %s, but %s.%s is %s" % (env, value, name, wanted, part, name, current),
            "Keep one of the two: remove %s from env, or set %s.%s: %s." % (env, part, name, wanted),
        )
    return None


def _lift_int(part: str, name: str, env: str) -> LiftFn:
    def lift(job: Job, value: str, framework: str) -> Optional[Conflict]:
        number = _int(value)
        where = "%s.%s" % (part, name)
        if number is None:
            return Conflict(
                env, (), "%s=%s is not an integer" % (env, value), "Set %s instead of env %s." % (where, env)
            )
        holder = getattr(job, part)
        current = getattr(holder, name)
        if current is None:
            setattr(holder, name, number)
            return None
        if current != number:
            return Conflict(
                env,
                (where,),
                "env %s=%s disagrees with %s %s" % (env, value, where, current),
                "Keep one of the two: remove %s from env, or set %s: %d." % (env, where, number),
            )
        return None

    return lift


def _lift_cache_path(job: Job, value: str, framework: str) -> Optional[Conflict]:
    c = job.compile
    env = C.ENV_ASCEND_CACHE_PATH
    if c.mode == "binaries":
        return None  # rule compile-exclusive reports it
    if c.mode == "default":
        return Conflict(
            env,
            ("compile.mode",),
            "env sets %s=%s but compile.mode is default, so no shared compile-cache volume is mounted there"
            % (env, value),
            "Remove %s from env and set compile.mode: cache with compile.cache_path: %s (the plan mounts a "
            "shared volume there)." % (env, value.strip()),
        )
    if _path(value) != _path(c.cache_path):
        return Conflict(
            env,
            ("compile.cache_path",),
            "env sets %s=%s but compile.cache_path is %s" % (env, value, c.cache_path),
            "Keep one of the two: remove %s from env, or set compile.cache_path: %s." % (env, value.strip()),
        )
    return None


def _lift_ttp_port(job: Job, value: str, framework: str) -> Optional[Conflict]:
    env = C.ENV_TTP_PORT
    number = _int(value)
    if number is None:
        return Conflict(env, (), "%s=%s is not a port number" % (env, value), "Set recovery.ttp_port instead.")
    current = job.recovery.ttp_port
    if current is None:
        job.recovery.ttp_port = number
        return None
    if current != number:
        return Conflict(
            env,
            ("recovery.ttp_port",),
            "env %s=%s disagrees with recovery.ttp_port %d (the port the pods declare as ttp-port)"
            % (env, value, current),
            "Keep one of the two: remove %s from env, or set recovery.ttp_port: %d." % (env, number),
        )
    return None


def _lift_graph_cache(job: Job, value: str, framework: str) -> Optional[Conflict]:
    env = C.ENV_MS_COMPILER_CACHE_ENABLE
    wanted = {"1": True, "0": False}.get(value.strip())
    if wanted is None:
        return Conflict(
            env, (), "%s=%s is neither 0 nor 1" % (env, value), "Set compile.mindspore_graph_cache instead."
        )
    if wanted != job.compile.mindspore_graph_cache:
        return Conflict(
            env,
            ("compile.mindspore_graph_cache",),
            "env %s=%s disagrees with compile.mindspore_graph_cache %s"
            % (env, value, str(job.compile.mindspore_graph_cache).lower()),
            "Remove %s from env and set compile.mindspore_graph_cache: %s (the plan then puts the cache on "
            "shared storage)." % (env, str(wanted).lower()),
        )
    return None


def _lift_graph_cache_path(job: Job, value: str, framework: str) -> Optional[Conflict]:
    env = C.ENV_MS_COMPILER_CACHE_PATH
    wanted = graph_cache_path(job)
    if not job.compile.mindspore_graph_cache:
        return Conflict(
            env,
            ("compile.mindspore_graph_cache",),
            "env sets %s=%s but compile.mindspore_graph_cache is false" % (env, value),
            "Remove %s from env and set compile.mindspore_graph_cache: true (the plan puts the cache at "
            "<compile.cache_path>/ms on shared storage)." % env,
        )
    if _path(value) != _path(wanted):
        return Conflict(
            env,
            ("compile.cache_path",),
            "env sets %s=%s but the graph cache lives at %s (<compile.cache_path>/ms)" % (env, value, wanted),
            "Remove %s from env, or set compile.cache_path so that <compile.cache_path>/ms is %s."
            % (env, value.strip()),
        )
    return None


def _lift_ranktable(job: Job, value: str, framework: str) -> Optional[Conflict]:
    env = C.ENV_RANK_TABLE_FILE
    wanted = C.RANKTABLE_MOUNT + "/hccl.json"
    if not job.ranktable:
        return Conflict(
            env,
            ("ranktable",),
            "env sets %s=%s but ranktable is false, so no ranktable volume is mounted" % (env, value),
            "Remove %s from env and set ranktable: true (the operator then writes hccl.json to the shared "
            "ranktable directory and the plan mounts it)." % env,
        )
    if _path(value) != wanted:
        return Conflict(
            env,
            ("ranktable",),
            "env sets %s=%s but the operator's hccl.json is mounted at %s" % (env, value, wanted),
            "Remove %s from env (the plan sets it)." % env,
        )
    return None


_LIFTS: Dict[str, LiftFn] = {
    C.ENV_HCCL_ASYNC_ERROR_HANDLING: _choice(
        C.ENV_HCCL_ASYNC_ERROR_HANDLING, "recovery.watchdog", watchdog_from_hccl, "0 off, 1 or 2 on", "pytorch"
    ),
    C.ENV_MS_ENABLE_THM: _lift_watchdog_thm,
    C.ENV_TASKD_PROCESS_ENABLE: _choice(
        C.ENV_TASKD_PROCESS_ENABLE, "recovery.taskd_process_enable", _on_off, "on or off"
    ),
    C.ENV_ASCEND_CACHE_PATH: _lift_cache_path,
    C.ENV_ASCEND_MAX_OP_CACHE_SIZE: _lift_int("compile", "max_op_cache_size", C.ENV_ASCEND_MAX_OP_CACHE_SIZE),
    C.ENV_HCCL_CONNECT_TIMEOUT: _lift_int("hccl", "connect_timeout", C.ENV_HCCL_CONNECT_TIMEOUT),
    C.ENV_HCCL_EXEC_TIMEOUT: _lift_int("hccl", "exec_timeout", C.ENV_HCCL_EXEC_TIMEOUT),
    C.ENV_TTP_PORT: _lift_ttp_port,
    C.ENV_MS_COMPILER_CACHE_ENABLE: _lift_graph_cache,
    C.ENV_MS_COMPILER_CACHE_PATH: _lift_graph_cache_path,
    C.ENV_RANK_TABLE_FILE: _lift_ranktable,
}

#: The field each lifted variable fills when the profile leaves it to the plan.
_LIFTED_FIELD: Dict[str, str] = {
    C.ENV_HCCL_ASYNC_ERROR_HANDLING: "recovery.watchdog",
    C.ENV_MS_ENABLE_THM: "recovery.watchdog",
    C.ENV_TASKD_PROCESS_ENABLE: "recovery.taskd_process_enable",
    C.ENV_ASCEND_MAX_OP_CACHE_SIZE: "compile.max_op_cache_size",
    C.ENV_HCCL_CONNECT_TIMEOUT: "hccl.connect_timeout",
    C.ENV_HCCL_EXEC_TIMEOUT: "hccl.exec_timeout",
    C.ENV_TTP_PORT: "recovery.ttp_port",
}


def _get(job: Job, dotted: str) -> object:
    obj: object = job
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def lift(job: Job) -> Lifted:
    """A copy of ``job`` with the env values read into the fields left to the plan, where each value
    came from, and the env entries that contradict a field."""
    effective = copy.deepcopy(job)
    origins: Dict[str, str] = {}
    conflicts: List[Conflict] = []
    framework = job.image.framework
    for name in sorted(job.env):
        fn = _LIFTS.get(name)
        if fn is None:
            continue
        field = _LIFTED_FIELD.get(name)
        before = _get(effective, field) if field else None
        conflict = fn(effective, job.env[name], framework)
        if conflict is not None:
            conflicts.append(conflict)
        elif field and _get(effective, field) != before:
            origins[field] = name
    return Lifted(effective, origins, conflicts)


def graph_cache_path(job: Job) -> str:
    """Where the MindSpore graph cache lives: a subdirectory of the shared compile-cache mount."""
    return job.compile.cache_path.rstrip("/") + "/ms"


# --- what the plan sets -----------------------------------------------------------------------------

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
    return f.wheel_versions.get("mindio_ttp") is not None and (f.process_level or f.hot_switch)


def derived_env(f: JobFacts) -> List[Setting]:
    """Every variable of :data:`ENV_OWNERS` the plan sets for job ``f``, with its value and why."""
    job = f.job
    env: List[Setting] = []
    mindio = uses_mindio_ttp(f)
    if f.uses_taskd or mindio:
        env.append(Setting(C.ENV_POD_IP, field_path="status.podIP", reason="TaskD/MindIO address (YAMLCFG)"))
    env.append(Setting(C.ENV_XDL_IP, field_path="status.hostIP", reason="host address (YAMLCFG)"))
    if f.host_network:
        env.append(Setting(C.ENV_HCCL_IF_IP, field_path="status.hostIP", reason="hostNetwork (YAMLCFG)"))
    if (mindio or "dump" in f.strategies) and job.recovery.ttp_port is not None:
        env.append(Setting(C.ENV_TTP_PORT, str(job.recovery.ttp_port), reason="MindIO TTP controller (RT06)"))
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
        number = _int(user)
        return number is not None and number >= MINDIO_WAIT_ELASTIC
    if name in (C.ENV_TASKD_PROCESS_ENABLE, C.ENV_PROCESS_RECOVER, C.ENV_ENABLE_RESTART_FAULT_PROCESS):
        return user.strip().lower() == plan.lower()
    if name in (C.ENV_ASCEND_CACHE_PATH, C.ENV_MS_COMPILER_CACHE_PATH, C.ENV_RANK_TABLE_FILE):
        return _path(user) == _path(plan)
    number = _int(user)
    if number is not None and _int(plan) is not None:
        return number == _int(plan)
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
