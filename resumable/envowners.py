"""The training container's environment variables the plan owns, each with the profile field(s)
that own it (:data:`ENV_OWNERS`: one table for the rules, the plan and docs/profile.md), and the
first floor of reading them: env values lifted into those fields before the facts are derived.

A recovery setting is checked the same whichever way the user writes it. ``jobs[].env`` may carry any
of these variables:

* where the owning field is left to the plan (``auto`` or null), the env value *is* the user's
  choice: it is read into the field (:func:`lift`, here) and every rule then checks it, naming the
  env entry (a watchdog switched on through ``HCCL_ASYNC_ERROR_HANDLING=1`` on a process-level job
  is the same error as ``recovery.watchdog: on``);
* where the field, or the plan's derivation from other fields, already fixes a value, the env value
  must agree (:func:`resumable.envderived.agrees`, after the facts); a contradiction is an error
  naming both places (rule ``env-contradicts-profile``);
* an agreeing or lifted value is used as written; the plan never drops or overrides a variable the
  user set (:func:`resumable.envderived.derived_env` gives the plan's own values,
  :mod:`resumable.plan.env` merges).

This module needs only the profile: :mod:`resumable.facts` reads the lifted job from it, and
:mod:`resumable.envderived` (which needs the facts) reads the table.
"""

from __future__ import annotations

import copy
import posixpath
import re
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

from . import constants as C
from .profile import Job


class EnvOwner(NamedTuple):
    """One variable the plan owns: the field(s) that own it, what the plan sets, the source."""

    name: str
    #: owning profile fields, relative to the job ("recovery.watchdog"); the first is the one an env
    #: value is lifted into where the variable lifts; () for the downward API
    fields: Tuple[str, ...]
    #: what the plan sets and when (docs/profile.md)
    meaning: str
    source: str

    @property
    def field(self) -> str:
        """The owning fields as one text ("compile.mode, compile.cache_path"); "" for none."""
        return ", ".join(self.fields)


#: Every variable the plan derives for the training container. Sources are codes of
#: :mod:`resumable.sources`.
ENV_OWNERS: Tuple[EnvOwner, ...] = (
    EnvOwner(
        C.ENV_HCCL_ASYNC_ERROR_HANDLING,
        ("recovery.watchdog",),
        "PyTorch watchdog: 0 when the watchdog is off (recovery.watchdog: off, or any process-level "
        "strategy), 1 with recovery.watchdog: on; unset otherwise (on by default where supported). "
        "In env: 0 = off, 1 or 2 = on. An AscendJob with a strategy from 7.2.RC1 gets 0 from the Ascend "
        "Operator instead of the pod template (below)",
        "RTO 表1; RT04 Table 3; ENV Table 5",
    ),
    EnvOwner(
        C.ENV_MS_ENABLE_THM,
        ("recovery.watchdog",),
        "MindSpore watchdog: {HCCL_WATCHDOG:0} when it is off (as for PyTorch; from the Ascend Operator on an "
        "AscendJob with a strategy from 7.2.RC1, below)",
        "RT04 Table 3; RT05",
    ),
    EnvOwner(
        C.ENV_RESUME_MODE_ENABLE,
        ("recovery.fault_scheduling", "recovery.pod_rescheduling"),
        "1 for PyTorch jobs with job- or Pod-level rescheduling",
        "RTO 表1",
    ),
    EnvOwner(
        C.ENV_TASKD_PROCESS_ENABLE,
        ("recovery.taskd_process_enable",),
        "on/off for TaskD jobs from 7.2.RC1: on with process-level strategies or hot switching, off "
        "for Pod-level-only jobs",
        "RT04; MC:@v7.3.0 component/taskd/taskd/python/framework/manager/manager.py",
    ),
    EnvOwner(
        C.ENV_PROCESS_RECOVER,
        ("recovery.strategies",),
        "on with any process-level strategy (set by the plan before 7.2.RC1, injected by the operator after)",
        "HA70-076; RT04 Table 3",
    ),
    EnvOwner(
        C.ENV_ELASTIC_PROCESS_RECOVER_ENABLE,
        ("recovery.strategies",),
        "1 with recover, recover-in-place or retry (set by the plan before 7.2.RC1)",
        "HA70-076; RT04 Table 3",
    ),
    EnvOwner(
        C.ENV_ENABLE_RESTART_FAULT_PROCESS,
        ("recovery.strategies",),
        "on with recover-in-place (set by the plan before 7.2.RC1)",
        "HA71-025; RT04 Table 3",
    ),
    EnvOwner(
        C.ENV_MINDIO_WAIT_MINDX_TIME,
        ("recovery.strategies",),
        "60 with elastic-training but not recover; a larger value in env agrees",
        "RT04",
    ),
    EnvOwner(
        C.ENV_TTP_PORT,
        ("recovery.ttp_port",),
        "the MindIO TTP controller port when MindIO TTP or dump is used",
        "RT05; RT06",
    ),
    EnvOwner(
        C.ENV_ASCEND_CACHE_PATH,
        ("compile.mode", "compile.cache_path"),
        "compile.cache_path with compile.mode: cache (a shared volume is mounted there)",
        "RTO 表10",
    ),
    EnvOwner(
        C.ENV_ASCEND_MAX_OP_CACHE_SIZE,
        ("compile.max_op_cache_size",),
        "compile.max_op_cache_size, -1 when null, with compile.mode: cache",
        "RTO 表10",
    ),
    EnvOwner(
        C.ENV_MS_COMPILER_CACHE_ENABLE,
        ("compile.mindspore_graph_cache",),
        "1 with compile.mindspore_graph_cache on a MindSpore job",
        "RT05",
    ),
    EnvOwner(
        C.ENV_MS_COMPILER_CACHE_PATH,
        ("compile.mindspore_graph_cache", "compile.cache_path"),
        "<compile.cache_path>/ms with compile.mindspore_graph_cache",
        "RT05",
    ),
    EnvOwner(C.ENV_HCCL_CONNECT_TIMEOUT, ("hccl.connect_timeout",), "hccl.connect_timeout when set", "HA-CANN-CONNECT"),
    EnvOwner(C.ENV_HCCL_EXEC_TIMEOUT, ("hccl.exec_timeout",), "hccl.exec_timeout when set", "HA-CANN-EXEC"),
    EnvOwner(
        C.ENV_RANK_TABLE_FILE,
        ("ranktable",),
        "%s/hccl.json with ranktable: true" % C.RANKTABLE_MOUNT,
        "RT05 Table 4; RT06",
    ),
    EnvOwner(C.ENV_HCCL_IF_IP, ("host_network",), "status.hostIP on the host network", "YAMLCFG"),
    EnvOwner(C.ENV_POD_IP, (), "status.podIP for TaskD and MindIO", "YAMLCFG; PLR 适配训练脚本"),
    EnvOwner(C.ENV_XDL_IP, (), "status.hostIP", "YAMLCFG"),
)

OWNERS: Dict[str, EnvOwner] = {o.name: o for o in ENV_OWNERS}


class Conflict(NamedTuple):
    """An env entry that contradicts the profile field owning its variable."""

    name: str
    #: profile paths relative to the job, besides the env entry ("recovery.watchdog")
    fields: Tuple[str, ...]
    message: str
    fix: str


class Lifted(NamedTuple):
    """A job with env values read into the fields the profile left to the plan."""

    job: Job
    #: field path relative to the job -> the env variable its value came from
    origins: Dict[str, str]
    conflicts: List[Conflict]


# --- reading env values ---------------------------------------------------------------------------


def env_int(text: str) -> Optional[int]:
    """An integer as an env value writes it (up to 12 digits), None otherwise."""
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


def env_path(text: str) -> str:
    """A path as an env value writes it, normalised for comparison ("" when empty)."""
    return posixpath.normpath(text.strip()) if text.strip() else ""


def graph_cache_path(job: Job) -> str:
    """Where the MindSpore graph cache lives: a subdirectory of the shared compile-cache mount."""
    return job.compile.cache_path.rstrip("/") + "/ms"


def _get(job: Job, dotted: str) -> object:
    obj: object = job
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _set(job: Job, dotted: str, value: object) -> None:
    holder, _, name = dotted.rpartition(".")
    setattr(_get(job, holder), name, value)


# --- lifting env values into the fields they belong to ----------------------------------------------

#: (the job being lifted, the variable's row of the table, the env value, the framework)
LiftFn = Callable[[Job, EnvOwner, str, str], Optional[Conflict]]


class Lifter(NamedTuple):
    """How one variable's env value is read: ``fills``: the value fills the owning field (its first
    in :data:`ENV_OWNERS`) when the profile leaves it to the plan; otherwise it is only compared."""

    read: LiftFn
    fills: bool


def _choice(parse: Callable[[str], Optional[str]], accepted: str, only: str = "") -> LiftFn:
    """A lifter for an auto/on/off field: ``parse`` reads the env value as on/off (None: not a
    value the consumer reads; ``accepted`` says what is); ``only``: the framework it applies to."""

    def lifter(job: Job, owner: EnvOwner, value: str, framework: str) -> Optional[Conflict]:
        if only and framework != only:
            return None
        wanted = parse(value)
        if wanted is None:
            return Conflict(
                owner.name,
                (),
                "%s=%s is not a value it takes (%s)" % (owner.name, value, accepted),
                "Remove it from env and set %s (auto, on or off)." % owner.fields[0],
            )
        return _lift_choice(job, owner, wanted, value)

    return lifter


def _lift_watchdog_thm(job: Job, owner: EnvOwner, value: str, framework: str) -> Optional[Conflict]:
    if framework != "mindspore":
        return None
    wanted = watchdog_from_thm(value)
    if wanted is None:
        return None  # the map does not name the watchdog
    return _lift_choice(job, owner, wanted, value)


def _lift_choice(job: Job, owner: EnvOwner, wanted: str, value: str) -> Optional[Conflict]:
    """Read an auto/on/off choice from env: fills ``auto``, must equal anything else."""
    env = owner.name
    where = owner.fields[0]
    name = where.rpartition(".")[2]
    current = _get(job, where)
    if current == "auto":
        _set(job, where, wanted)
        return None
    if current != wanted:
        return Conflict(
            env,
            (where,),
            "env %s=%s means %s: %s, but %s is %s" % (env, value, name, wanted, where, current),
            "Keep one of the two: remove %s from env, or set %s: %s." % (env, where, wanted),
        )
    return None


def _integer(kind: str = "an integer", instead: str = " instead of env %(env)s", note: str = "") -> LiftFn:
    """A lifter for an integer field: fills null, must equal anything else. ``kind`` names what the
    value must be, ``instead`` ends the fix of an unreadable value, ``note`` explains the field."""

    def lifter(job: Job, owner: EnvOwner, value: str, framework: str) -> Optional[Conflict]:
        env = owner.name
        where = owner.fields[0]
        number = env_int(value)
        if number is None:
            fix = "Set %s%s." % (where, instead % {"env": env})
            return Conflict(env, (), "%s=%s is not %s" % (env, value, kind), fix)
        current = _get(job, where)
        if current is None:
            _set(job, where, number)
            return None
        if current != number:
            return Conflict(
                env,
                (where,),
                "env %s=%s disagrees with %s %s%s" % (env, value, where, current, note),
                "Keep one of the two: remove %s from env, or set %s: %d." % (env, where, number),
            )
        return None

    return lifter


def _lift_cache_path(job: Job, owner: EnvOwner, value: str, framework: str) -> Optional[Conflict]:
    c = job.compile
    env = owner.name
    mode, path = owner.fields
    if c.mode == "binaries":
        return None  # rule compile-exclusive reports it
    if c.mode == "default":
        return Conflict(
            env,
            (mode,),
            "env sets %s=%s but %s is default, so no shared compile-cache volume is mounted there" % (env, value, mode),
            "Remove %s from env and set %s: cache with %s: %s (the plan mounts a shared volume there)."
            % (env, mode, path, value.strip()),
        )
    if env_path(value) != env_path(c.cache_path):
        return Conflict(
            env,
            (path,),
            "env sets %s=%s but %s is %s" % (env, value, path, c.cache_path),
            "Keep one of the two: remove %s from env, or set %s: %s." % (env, path, value.strip()),
        )
    return None


def _lift_graph_cache(job: Job, owner: EnvOwner, value: str, framework: str) -> Optional[Conflict]:
    env = owner.name
    where = owner.fields[0]
    wanted = {"1": True, "0": False}.get(value.strip())
    if wanted is None:
        return Conflict(env, (), "%s=%s is neither 0 nor 1" % (env, value), "Set %s instead." % where)
    current = _get(job, where)
    if wanted != current:
        return Conflict(
            env,
            (where,),
            "env %s=%s disagrees with %s %s" % (env, value, where, str(current).lower()),
            "Remove %s from env and set %s: %s (the plan then puts the cache on shared storage)."
            % (env, where, str(wanted).lower()),
        )
    return None


def _lift_graph_cache_path(job: Job, owner: EnvOwner, value: str, framework: str) -> Optional[Conflict]:
    env = owner.name
    switch, path = owner.fields
    wanted = graph_cache_path(job)
    if not _get(job, switch):
        return Conflict(
            env,
            (switch,),
            "env sets %s=%s but %s is false" % (env, value, switch),
            "Remove %s from env and set %s: true (the plan puts the cache at <%s>/ms on shared storage)."
            % (env, switch, path),
        )
    if env_path(value) != env_path(wanted):
        return Conflict(
            env,
            (path,),
            "env sets %s=%s but the graph cache lives at %s (<%s>/ms)" % (env, value, wanted, path),
            "Remove %s from env, or set %s so that <%s>/ms is %s." % (env, path, path, value.strip()),
        )
    return None


def _lift_ranktable(job: Job, owner: EnvOwner, value: str, framework: str) -> Optional[Conflict]:
    env = owner.name
    where = owner.fields[0]
    wanted = C.RANKTABLE_MOUNT + "/hccl.json"
    if not _get(job, where):
        return Conflict(
            env,
            (where,),
            "env sets %s=%s but %s is false, so no ranktable volume is mounted" % (env, value, where),
            "Remove %s from env and set %s: true (the operator then writes hccl.json to the shared "
            "ranktable directory and the plan mounts it)." % (env, where),
        )
    if env_path(value) != wanted:
        return Conflict(
            env,
            (where,),
            "env sets %s=%s but the operator's hccl.json is mounted at %s" % (env, value, wanted),
            "Remove %s from env (the plan sets it)." % env,
        )
    return None


#: How each variable that may be written in env is read; the fields come from :data:`ENV_OWNERS`.
LIFTERS: Dict[str, Lifter] = {
    C.ENV_HCCL_ASYNC_ERROR_HANDLING: Lifter(_choice(watchdog_from_hccl, "0 off, 1 or 2 on", "pytorch"), True),
    C.ENV_MS_ENABLE_THM: Lifter(_lift_watchdog_thm, True),
    C.ENV_TASKD_PROCESS_ENABLE: Lifter(_choice(_on_off, "on or off"), True),
    C.ENV_ASCEND_CACHE_PATH: Lifter(_lift_cache_path, False),
    C.ENV_ASCEND_MAX_OP_CACHE_SIZE: Lifter(_integer(), True),
    C.ENV_HCCL_CONNECT_TIMEOUT: Lifter(_integer(), True),
    C.ENV_HCCL_EXEC_TIMEOUT: Lifter(_integer(), True),
    C.ENV_TTP_PORT: Lifter(
        _integer("a port number", " instead", " (the port the pods declare as %s)" % C.TTP_PORT_NAME), True
    ),
    C.ENV_MS_COMPILER_CACHE_ENABLE: Lifter(_lift_graph_cache, False),
    C.ENV_MS_COMPILER_CACHE_PATH: Lifter(_lift_graph_cache_path, False),
    C.ENV_RANK_TABLE_FILE: Lifter(_lift_ranktable, False),
}


def lift(job: Job) -> Lifted:
    """A copy of ``job`` with the env values read into the fields left to the plan, where each value
    came from, and the env entries that contradict a field."""
    effective = copy.deepcopy(job)
    origins: Dict[str, str] = {}
    conflicts: List[Conflict] = []
    framework = job.image.framework
    for name in sorted(job.env):
        lifter = LIFTERS.get(name)
        if lifter is None:
            continue
        owner = OWNERS[name]
        field = owner.fields[0] if lifter.fills else None
        before = _get(effective, field) if field else None
        conflict = lifter.read(effective, owner, job.env[name], framework)
        if conflict is not None:
            conflicts.append(conflict)
        elif field and _get(effective, field) != before:
            origins[field] = name
    return Lifted(effective, origins, conflicts)
