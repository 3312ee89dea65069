"""The recovery timeline's events: their kinds, their fields and the type of each field, for the writer
and the reader alike.

``resumable launch`` writes one JSON line per event (:class:`Event`, :meth:`Event.record`) and
``resumable timeline`` reads them back (:func:`parse_event`) through this one schema, as torch
elastic's ``events/api.py`` ``Event`` serialises and deserialises itself:

- :data:`KINDS` is the vocabulary: every kind the launcher writes, what it means and the fields it
  carries beyond the five every line has (:data:`COMMON`: ``time``, ``event``, ``rank``, ``exit_code``,
  ``restart_count``), each with its :class:`Value` type;
- a :class:`Value` checks a value once for both sides: leniently where the launcher takes a field from a
  datagram anyone in the pod could send (:meth:`Value.take`: a value of the wrong type is written as
  null, never a line the reader refuses, issue 25), strictly where the timeline reads it
  (:class:`Fields`: a value of the wrong type is a user error naming the line and the field);
- the kinds the summary reads have a class with their typed fields (:class:`LaunchEvent`: the ladder
  and the budget lines; :class:`RestartEvent`: its ``kind`` and generation; :class:`WorkerEvent`: the
  pid and generation of a training process's events; :class:`HangEvent`: why and in which phase). A new
  kind that needs fields of its own gets an entry in :data:`KINDS` and, when the summary reads it, a
  class and a reader in ``_TYPED``. Every other field stays in ``details`` as written.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from ..errors import ResumableError, shown

#: the end of year 9999 in Unix seconds: an event time is between 0 and this (so that any difference
#: of two times, and the sum of a budget's terms, is a finite number)
TIME_LIMIT = 253402300800.0
#: a budget line's seconds are at most this (about 30 years)
SECONDS_LIMIT = 1e9
#: ranks, exit codes and restart counts are C ints
INT_LIMIT = 2**31 - 1
#: budget terms that cover "fault until the processes run again" (plan/budget.py)
RESTART_TERMS = ("detect", "T1 reschedule")
FIX = "Name a timeline-<host>.jsonl that resumable launch wrote (in the job log directory)"


# --- the value types: one check for the writer and the reader ------------------------------------------


class _Wrong(Exception):
    """A field of the wrong type inside a budget line (what it is, what it should be)."""

    def __init__(self, field: str, value: Any, wanted: str) -> None:
        super().__init__(field)
        self.field, self.value, self.wanted = field, value, wanted


class Value:
    """The type of one field. :meth:`accepts` is the one check; the writer :meth:`take`\\ s a value
    (None when it is not accepted), the reader refuses it naming :meth:`wanted`."""

    def accepts(self, value: Any) -> bool:
        raise NotImplementedError

    def wanted(self, value: Any) -> str:
        raise NotImplementedError

    def cast(self, value: Any) -> Any:
        return value

    def take(self, value: Any) -> Any:
        """``value`` as the writer records it: itself (in this type's form) when accepted, else None."""
        return self.cast(value) if self.accepts(value) else None

    def read(self, field: str, value: Any) -> Any:
        """``value`` as the reader takes it; :class:`_Wrong` when it is not of this type."""
        if not self.accepts(value):
            raise _Wrong(field, value, self.wanted(value))
        return self.cast(value)


@dataclasses.dataclass(frozen=True)
class Int(Value):
    low: int = -INT_LIMIT
    high: int = INT_LIMIT

    def accepts(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high

    def wanted(self, value: Any) -> str:
        return "null or an integer from %d to %d" % (self.low, self.high)


@dataclasses.dataclass(frozen=True)
class Number(Value):
    """A finite number from 0 to ``high`` (read as a float)."""

    high: float = SECONDS_LIMIT

    def accepts(self, value: Any) -> bool:
        # compared before float(): a 400-digit integer overflows a float
        return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= self.high

    def wanted(self, value: Any) -> str:
        text = "a number from 0 to %g" % self.high
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            text += " (it is outside that range)"
        return text

    def cast(self, value: Any) -> float:
        return float(value)


@dataclasses.dataclass(frozen=True)
class Text(Value):
    """A string; the writer cuts one from a report to ``limit`` characters."""

    limit: Optional[int] = None
    required: bool = False

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and (bool(value) or not self.required)

    def wanted(self, value: Any) -> str:
        return "a non-empty string" if self.required else "a string"

    def cast(self, value: Any) -> str:
        text = str(value)
        return text if self.limit is None else text[: self.limit]


@dataclasses.dataclass(frozen=True)
class Texts(Value):
    def accepts(self, value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)

    def wanted(self, value: Any) -> str:
        return "a list of strings"


@dataclasses.dataclass(frozen=True)
class Flag(Value):
    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)

    def wanted(self, value: Any) -> str:
        return "true or false"


@dataclasses.dataclass(frozen=True)
class Ints(Value):
    """A list of integers (``null`` items allowed: a rank the launcher did not know)."""

    item: Int = Int()
    nulls: bool = False

    def accepts(self, value: Any) -> bool:
        return isinstance(value, list) and all((v is None and self.nulls) or self.item.accepts(v) for v in value)

    def wanted(self, value: Any) -> str:
        return "a list of integers from %d to %d" % (self.item.low, self.item.high)


def _budget_lines(value: Any) -> Tuple[BudgetLine, ...]:
    """The budget lines of a launch header (:class:`_Wrong` names the first field that is not)."""
    if not isinstance(value, list):
        raise _Wrong("budget", value, "a list of budget lines")
    lines = []
    for i, raw in enumerate(value):
        at = "budget[%d]" % i
        if not isinstance(raw, dict):
            raise _Wrong(at, raw, "an object")
        terms = raw.get("terms", {})
        if not isinstance(terms, dict):
            raise _Wrong(at + ".terms", terms, "an object")
        lines.append(
            BudgetLine(
                level=Text(required=True).read(at + ".level", raw.get("level")),
                total_seconds=SECONDS.read(at + ".total_seconds", raw.get("total_seconds", 0)),
                terms={name: SECONDS.read("%s.terms.%s" % (at, name), v) for name, v in terms.items()},
            )
        )
    return tuple(lines)


@dataclasses.dataclass(frozen=True)
class Budget(Value):
    """The plan's budget lines: ``level``, ``total_seconds`` and ``terms`` (name -> seconds) each."""

    def accepts(self, value: Any) -> bool:
        try:
            _budget_lines(value)
        except _Wrong:
            return False
        return True

    def wanted(self, value: Any) -> str:
        return "a list of budget lines"

    def cast(self, value: Any) -> Tuple[BudgetLine, ...]:
        return _budget_lines(value)

    def read(self, field: str, value: Any) -> Tuple[BudgetLine, ...]:
        return _budget_lines(value)  # the error names the line's field


#: the types fields share
COUNT = Int(low=0)
SECONDS = Number()
WHEN = Number(TIME_LIMIT)
TEXT = Text()
PIDS = Ints(COUNT)

#: the fields every line has
COMMON: Dict[str, Value] = {
    "time": WHEN,
    "event": Text(required=True),
    "rank": Int(),
    "exit_code": Int(),
    "restart_count": COUNT,
}


# --- the vocabulary --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of event: what it says and the fields it has beyond :data:`COMMON`."""

    name: str
    means: str
    fields: Mapping[str, Value]


def _kinds(*items: Kind) -> Dict[str, Kind]:
    return {k.name: k for k in items}


_PROCESS = {"pid": COUNT, "generation": COUNT}
_HANG = {
    **_PROCESS,
    "cause": TEXT,
    "phase": TEXT,
    "action": TEXT,
    "silent_seconds": SECONDS,
    "hang_timeout": SECONDS,
    "seconds": SECONDS,
    "start_timeout": SECONDS,
}

LAUNCH = "launch"
MANAGER_START, MANAGER_EXIT, MANAGER_LOST = "manager-start", "manager-exit", "manager-lost"
WORKER_START, WORKER_FAULT, WORKER_HANG = "worker-start", "worker-fault", "worker-hang"
WORKER_STOP, WORKER_EXIT, WORKER_END = "worker-stop", "worker-exit", "worker-end"
FAULT_DETECTED, WORKERS_STOPPED, RESTART = "fault-detected", "workers-stopped", "restart"
PG_INIT, PG_READY, PG_ERROR, FIRST_COLLECTIVE = "pg-init", "pg-ready", "pg-error", "first-collective"
RECOVERY_TIMEOUT, WARM, DRILL = "recovery-timeout", "warm", "drill"
SIGNAL, STOP, KILL, EXIT = "signal", "stop", "kill", "exit"

#: every kind the launcher writes, in the order of a launch
KINDS: Dict[str, Kind] = _kinds(
    Kind(
        LAUNCH,
        "header: job, host, launcher pid, command, the plan's ladder (``levels``) and budget lines",
        {
            "job": TEXT,
            "host": TEXT,
            "pid": COUNT,
            "command": Texts(),
            "manager": Texts(),
            "levels": Texts(),
            "budget": Budget(),
            "grace_seconds": SECONDS,
            "subreaper": Flag(),
        },
    ),
    Kind(MANAGER_START, "the TaskD Manager was started (``pid``, ``log``)", {"pid": COUNT, "log": TEXT}),
    Kind(MANAGER_EXIT, "the TaskD Manager ended (``exit_code``)", {"pid": COUNT}),
    Kind(
        MANAGER_LOST,
        "the TaskD Manager exited while the training ran: the training is stopped",
        {"pid": COUNT, "grace_seconds": SECONDS},
    ),
    Kind(
        WORKER_START,
        "a training process started (``pid``, ``local_rank``, ``generation``, ``warm``), reported by the start-up hook",
        {**_PROCESS, "local_rank": COUNT, "warm": Flag()},
    ),
    Kind(
        WORKER_FAULT,
        "the first training process that ended abnormally while no fault was being recovered (``inferred``: "
        "its status was gone, but the agent restarted it after it ended)",
        {**_PROCESS, "inferred": Flag()},
    ),
    Kind(
        WORKER_HANG,
        "a training process sent no heartbeat for the plan's hang timeout (``cause`` ``heartbeat``: "
        "``silent_seconds``, ``hang_timeout``) or had not initialised its process group ``start_timeout`` after "
        "it started (``cause`` ``start-timeout``: ``seconds``, ``start_timeout``), in ``phase``: the fault, its "
        "rank named (or one more rank of the fault being recovered); the launcher SIGKILLs it (``action``) so "
        "that the agent recovers it",
        _HANG,
    ),
    Kind(
        WORKER_STOP,
        "another process ended while a fault was being recovered, or a process of a generation stopped by a "
        "whole-group restart ended later (stopped by the agent, or at shutdown; its exit code is null when the "
        "agent reaped it before the launcher looked)",
        _PROCESS,
    ),
    Kind(WORKER_EXIT, "a training process ended with 0", _PROCESS),
    Kind(WORKER_END, "a training process was gone before its status could be read", _PROCESS),
    Kind(FAULT_DETECTED, "the agent reaped the failed process (its monitor saw the fault)", _PROCESS),
    Kind(
        WORKERS_STOPPED,
        "every process that ended since the fault was gone (``pids``; ``generation``: the fault's): written at "
        "the restart",
        {"pids": PIDS, "generation": COUNT},
    ),
    Kind(
        RESTART,
        "the first process of the next generation started: ``seconds`` since the fault; ``kind`` ``group`` (the "
        "agent restarted every process: TORCHELASTIC_RESTART_COUNT went up) or ``in-place`` (only the faulty "
        "ranks got new processes, the others ran on: TaskD's restart of the faulty ranks keeps the restart "
        "count); ``fault_ranks``",
        {"seconds": SECONDS, "kind": TEXT, "generation": COUNT, "fault_ranks": Ints(nulls=True)},
    ),
    Kind(PG_INIT, "a training process entered torch.distributed.init_process_group (start-up hook)", _PROCESS),
    Kind(PG_READY, "it returned (``seconds`` in it)", {**_PROCESS, "seconds": SECONDS}),
    Kind(PG_ERROR, "it raised (``seconds``, ``error``)", {**_PROCESS, "seconds": SECONDS, "error": TEXT}),
    Kind(
        FIRST_COLLECTIVE,
        "its first collective (or optimizer step) after that returned (``op``)",
        {**_PROCESS, "op": TEXT},
    ),
    Kind(
        RECOVERY_TIMEOUT,
        "no new training process ``start_timeout`` after the fault (``seconds``, the ``phase`` the recovery was "
        "in): the training is stopped",
        {"seconds": SECONDS, "start_timeout": SECONDS, "phase": TEXT, "generation": COUNT},
    ),
    Kind(
        WARM,
        "the warm-workers hook of the agent: ``state`` starting, ready, off, cold (``reason``, ``import_seconds``)",
        {"pid": COUNT, "state": TEXT, "reason": TEXT, "import_seconds": SECONDS},
    ),
    Kind(
        DRILL,
        "``resumable drill`` injected a fault (``fault``, ``signal`` or ``code``, ``local_rank``)",
        {**_PROCESS, "local_rank": COUNT, "fault": TEXT, "signal": TEXT, "code": Int(low=1, high=255)},
    ),
    Kind(
        SIGNAL,
        "the launcher got SIGTERM/SIGINT (``signal``, ``grace_seconds``)",
        {"signal": TEXT, "grace_seconds": SECONDS},
    ),
    Kind(
        STOP,
        "the launcher stopped the training (``reason``): it sent ``signal`` to every process (``pids``) and "
        "gives them the grace period",
        {"reason": TEXT, "signal": TEXT, "pids": PIDS},
    ),
    Kind(
        KILL, "SIGKILL for what was left (``reason``: the grace period over, left over)", {"reason": TEXT, "pids": PIDS}
    ),
    Kind(
        EXIT,
        "the launcher's exit code (``exit_code``) and the agent's and the Manager's",
        {"agent_exit_code": Int(), "manager_exit_code": Int()},
    ),
)


# --- one event, both ways ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Event:
    """One line of the timeline: the fields every event has, and the others as written."""

    time: float
    kind: str
    rank: Optional[int]
    exit_code: Optional[int]
    restart_count: Optional[int]
    details: Dict[str, Any]

    def record(self) -> Dict[str, Any]:
        """The line's JSON object (times to the microsecond)."""
        out: Dict[str, Any] = {
            "time": round(self.time, 6),
            "event": self.kind,
            "rank": self.rank,
            "exit_code": self.exit_code,
            "restart_count": self.restart_count,
        }
        out.update(self.details)
        return out


def new(
    kind: str,
    when: float,
    /,
    rank: Optional[int] = None,
    exit_code: Optional[int] = None,
    restart_count: Optional[int] = None,
    **details: Any,
) -> Event:
    """An event to write (its fields as the launcher decided them)."""
    return Event(when, kind, rank, exit_code, restart_count, details)


@dataclasses.dataclass(frozen=True)
class BudgetLine:
    """One level of the plan's recovery budget, as the launch header carries it."""

    level: str
    total_seconds: float
    terms: Dict[str, float]

    @property
    def restart_seconds(self) -> float:
        """The terms that cover the fault until the processes run again."""
        return round(sum(self.terms.get(t, 0.0) for t in RESTART_TERMS), 3)


@dataclasses.dataclass(frozen=True)
class LaunchEvent(Event):
    """``launch``: the header of one launch, with the plan's ladder and budget."""

    job: Optional[str]
    host: Optional[str]
    levels: Tuple[str, ...]
    budget: Tuple[BudgetLine, ...]


@dataclasses.dataclass(frozen=True)
class RestartEvent(Event):
    """``restart``: the first process of the next generation; ``restart_kind`` is ``group``,
    ``in-place`` or None (a timeline from before restart kinds)."""

    restart_kind: Optional[str]
    generation: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class WorkerEvent(Event):
    """An event of training processes: ``pid`` and ``generation`` (null in a timeline from before
    generations, and for ``workers-stopped`` the generation of the fault)."""

    pid: Optional[int]
    generation: Optional[int]


@dataclasses.dataclass(frozen=True)
class HangEvent(WorkerEvent):
    """``worker-hang``: ``cause`` (``heartbeat``, ``start-timeout``; null before causes), the ``phase``
    the process was in, and how long it was silent or starting against which timeout."""

    cause: Optional[str]
    phase: Optional[str]
    seconds: Optional[float]
    timeout: Optional[float]


class Fields:
    """The fields of one line, each read as the type :data:`KINDS` gives it; a wrong one raises a
    :class:`ResumableError` naming the line and the field."""

    def __init__(self, item: Mapping[str, Any], line: int, source: str) -> None:
        self.item = item
        self.line = line
        self.source = source
        kind = item.get("event")
        self.types: Mapping[str, Value] = KINDS[kind].fields if isinstance(kind, str) and kind in KINDS else {}

    def wrong(self, field: str, value: Any, wanted: str) -> ResumableError:
        return ResumableError("line %d: %s is %s, not %s" % (self.line, field, shown(value), wanted), self.source, FIX)

    def checked(self, field: str, value: Any, kind: Value) -> Any:
        """``value`` (not None) as ``kind`` reads it, or the error naming the field."""
        try:
            return kind.read(field, value)
        except _Wrong as exc:
            raise self.wrong(exc.field, exc.value, exc.wanted) from None

    def get(self, field: str, kind: Optional[Value] = None) -> Any:
        """The field (None when it is null or missing), as its declared type (or ``kind``) reads it."""
        value = self.item.get(field)
        if value is None:
            return None
        return self.checked(field, value, kind or COMMON.get(field) or self.types[field])

    def texts(self, field: str) -> Tuple[str, ...]:
        return tuple(self.get(field) or ())

    def budget(self) -> Tuple[BudgetLine, ...]:
        return self.get("budget") or ()


def _launch(f: Fields, base: Dict[str, Any]) -> Event:
    return LaunchEvent(**base, job=f.get("job"), host=f.get("host"), levels=f.texts("levels"), budget=f.budget())


def _restart(f: Fields, base: Dict[str, Any]) -> Event:
    return RestartEvent(**base, restart_kind=f.get("kind"), generation=f.get("generation"))


def _worker(f: Fields, base: Dict[str, Any]) -> Event:
    # workers-stopped has no pid of its own: read as every process event's pid, should one be there
    return WorkerEvent(**base, pid=f.get("pid", _PROCESS["pid"]), generation=f.get("generation"))


def _hang(f: Fields, base: Dict[str, Any]) -> Event:
    cause = f.get("cause")
    start = cause == "start-timeout"
    return HangEvent(
        **base,
        pid=f.get("pid"),
        generation=f.get("generation"),
        cause=cause,
        phase=f.get("phase"),
        seconds=f.get("seconds" if start else "silent_seconds"),
        timeout=f.get("start_timeout" if start else "hang_timeout"),
    )


#: the events of training processes the summary reads (their pid and generation)
WORKER_KINDS = (
    WORKER_START,
    WORKER_FAULT,
    WORKER_STOP,
    WORKER_EXIT,
    WORKER_END,
    FAULT_DETECTED,
    WORKERS_STOPPED,
    PG_INIT,
    PG_READY,
    PG_ERROR,
    FIRST_COLLECTIVE,
)

#: the kinds the summary reads with typed fields, and how to read them
_TYPED: Dict[str, Callable[[Fields, Dict[str, Any]], Event]] = {
    LAUNCH: _launch,
    RESTART: _restart,
    WORKER_HANG: _hang,
    **{kind: _worker for kind in WORKER_KINDS},
}


def parse_event(item: Any, number: int = 1, source: str = "<timeline>") -> Event:
    """The event of one JSON value (line ``number`` of ``source``, for messages)."""
    if not isinstance(item, dict) or "event" not in item or "time" not in item:
        raise ResumableError("line %d is not a timeline event" % number, source, "Is this a resumable timeline?")
    f = Fields(item, number, source)
    base: Dict[str, Any] = {
        "time": f.checked("time", item["time"], WHEN),
        "kind": f.checked("event", item["event"], COMMON["event"]),
        "rank": f.get("rank"),
        "exit_code": f.get("exit_code"),
        "restart_count": f.get("restart_count"),
        "details": {k: v for k, v in item.items() if k not in COMMON},
    }
    make = _TYPED.get(base["kind"])
    return make(f, base) if make is not None else Event(**base)


def parse_events(items: Iterable[Any], source: str = "<timeline>") -> List[Event]:
    """The events of JSON values (numbered from line 1)."""
    return [parse_event(item, number, source) for number, item in enumerate(items, 1)]


def problems(record: Mapping[str, Any]) -> List[str]:
    """What in a written line breaks the schema: a kind not in :data:`KINDS`, a field it does not declare,
    a value not of its declared type (the writer's own check: the launcher's tests run every line they
    make through it)."""
    kind = record.get("event")
    if not isinstance(kind, str) or kind not in KINDS:
        return ["%s is not a kind of event" % shown(kind)]
    declared = {**COMMON, **KINDS[kind].fields}
    out = []
    for field, value in record.items():
        if field not in declared:
            out.append("%s: %s is not one of its fields" % (kind, field))
        elif value is not None and not declared[field].accepts(value):
            out.append("%s: %s is %s, not %s" % (kind, field, shown(value), declared[field].wanted(value)))
    return out
