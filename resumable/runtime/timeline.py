"""The recovery timeline: what the launcher saw, one JSON line per event, and its summary.

``resumable launch`` appends to ``<job log dir>/timeline-<host>.jsonl``; every line has ``time``
(Unix seconds), ``event``, ``rank``, ``exit_code`` (negative = killed by that signal),
``restart_count`` (torchrun's TORCHELASTIC_RESTART_COUNT of the worker) and event details:

=============== ==============================================================================
launch          header: job, host, launcher pid, command, the plan's ladder and budget lines
manager-start   the TaskD Manager was started (pid); manager-exit: it ended (exit_code)
worker-start    a training process started (pid, local_rank, ``generation``), reported by the start-up hook
worker-fault    the first training process of a generation that ended abnormally (``inferred``: its
                status was gone, but the agent restarted it after it ended)
worker-stop     another process ended while that fault was being recovered, or a process of a faulted
                generation ended later (stopped by the agent, or at shutdown; its exit code is null
                when the agent reaped it before the launcher looked)
worker-hang     a training process sent no heartbeat for the plan's hang timeout (``silent_seconds``,
                ``hang_timeout``): the fault of its generation, its rank named; the launcher SIGKILLs it
                (``action``) so that the agent recovers it
worker-exit     a training process ended with 0
worker-end      a training process was gone before its status could be read
fault-detected  the agent reaped the failed process (its monitor saw the fault)
workers-stopped every process that ended since the fault was gone (``pids``): written at the restart
restart         the first process of the next generation started: ``seconds`` since the fault; ``kind``
                ``group`` (the agent restarted every process: TORCHELASTIC_RESTART_COUNT went up) or
                ``in-place`` (only the faulty ranks got new processes, the others ran on: TaskD's
                restart of the faulty ranks keeps the restart count); ``fault_ranks``
pg-init         a training process entered torch.distributed.init_process_group (start-up hook)
pg-ready        it returned (``seconds`` in it); pg-error: it raised (``error``)
first-collective  its first collective (or optimizer step) after that returned (``op``)
recovery-timeout  no new training process ``start_timeout`` after the fault: the training is stopped
warm            the warm-workers hook of the agent: ``state`` starting, ready, off, cold (``reason``)
drill           ``resumable drill`` injected a fault (``fault``, ``signal`` or ``code``, ``local_rank``)
signal          the launcher got SIGTERM/SIGINT; stop: it sent it to every process (``pids``) and
                gives them the grace period; kill: grace period over
manager-lost    the TaskD Manager exited while the training ran: the training is stopped
exit            the launcher's exit code and the agent's
=============== ==============================================================================

``worker-hang`` also says why (``cause``: ``heartbeat``, or ``start-timeout`` for a process that had
not initialised its process group ``start_timeout`` after it started) and the ``phase`` it was in.

``resumable timeline FILE`` pairs each fault with the restart that followed (in the container, or
the next launch on the same pod) and prints the measured duration next to the plan's budget for
that level: the detection and restart terms (what the launcher can see) and the whole recovery.
Then each recovery's phases: fault -> detected -> workers stopped -> new workers started -> process
group ready -> first collective, each against the budget term it corresponds to (:data:`PHASES`),
with their sums. No MindCluster component reports measured recovery against a budget; this does it
per pod.

Reading is strict about what it uses and keeps the rest: every line is parsed into an
:class:`Event` (``time`` a finite number of Unix seconds, ``event`` a string, ``rank``,
``exit_code`` and ``restart_count`` integers or null), and the kinds the summary reads have their
own class with their fields checked (:class:`LaunchEvent`: the ladder and the budget lines;
:class:`RestartEvent`: its ``kind`` and generation; :class:`WorkerEvent`: the pid and generation of a
training process's events; :class:`HangEvent`: why and in which phase); a new kind that needs fields
of its own gets a class and an entry in ``_KINDS``. Every other field stays in ``details`` as
written. A line that breaks this is a user error naming the line and the field (exit 2); only a torn
last line is skipped.
"""

from __future__ import annotations

import dataclasses
import time
from typing import IO, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .. import jsonio
from ..errors import ResumableError, escape_controls, shown
from ..fileio import open_append, read_bytes
from ..plan.budget import expected_level

#: a timeline larger than this is not read (one event is ~200 bytes)
MAX_TIMELINE_BYTES = 64 << 20
#: budget terms that cover "fault until the processes run again" (plan/budget.py)
RESTART_TERMS = ("detect", "T1 reschedule")
#: the end of year 9999 in Unix seconds: an event time is between 0 and this (so that any difference
#: of two times, and the sum of a budget's terms, is a finite number)
TIME_LIMIT = 253402300800.0
#: a budget line's seconds are at most this (about 30 years)
SECONDS_LIMIT = 1e9
#: ranks, exit codes and restart counts are C ints
INT_LIMIT = 2**31 - 1
FIX = "Name a timeline-<host>.jsonl that resumable launch wrote (in the job log directory)"


class TimelineWriter:
    """Appends events; each line is written and flushed at once (a crash loses at most the last).

    A write never raises: a full or failing log disk must not stop the supervisor from stopping
    the training (a launcher that dies on ENOSPC leaves its children running). Failed writes are
    counted in ``failures`` (the last error in ``last_error``) and the launcher reports them.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.failures = 0
        self.last_error: Optional[str] = None
        self._handle: Optional[IO[str]] = open(open_append(path), "a", encoding="utf-8")  # noqa: SIM115

    def write(
        self,
        event: str,
        rank: Optional[int] = None,
        exit_code: Optional[int] = None,
        restart_count: Optional[int] = None,
        when: Optional[float] = None,
        **details: Any,
    ) -> Dict[str, Any]:
        record: Dict[str, Any] = {
            "time": round(time.time() if when is None else when, 6),
            "event": event,
            "rank": rank,
            "exit_code": exit_code,
            "restart_count": restart_count,
        }
        record.update(details)
        if self._handle is not None:
            try:
                self._handle.write(jsonio.dumps(record, indent=None, default=str) + "\n")
                self._handle.flush()
            except (OSError, ValueError, TypeError) as exc:
                self.failures += 1
                self.last_error = str(exc)
        return record

    def close(self) -> None:
        if self._handle is not None:
            handle, self._handle = self._handle, None
            try:
                handle.close()
            except OSError as exc:  # the last buffered line could not be written
                self.failures += 1
                self.last_error = str(exc)


@dataclasses.dataclass(frozen=True)
class Event:
    """One line of the timeline: the fields every event has, and the others as written."""

    time: float
    kind: str
    rank: Optional[int]
    exit_code: Optional[int]
    restart_count: Optional[int]
    details: Dict[str, Any]


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


class _Fields:
    """The fields of one line, each read as the type it must have; a wrong one raises a
    :class:`ResumableError` naming the line and the field."""

    def __init__(self, item: Mapping[str, Any], line: int, source: str) -> None:
        self.item = item
        self.line = line
        self.source = source

    def wrong(self, field: str, value: Any, wanted: str) -> ResumableError:
        return ResumableError(
            "line %d: %s is %s, not %s" % (self.line, field, shown(value), wanted),
            self.source,
            FIX,
        )

    def integer(self, field: str, low: int = -INT_LIMIT, high: int = INT_LIMIT) -> Optional[int]:
        value = self.item.get(field)
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise self.wrong(field, value, "null or an integer from %d to %d" % (low, high))
        return value

    def optional_number(self, field: str, high: float = SECONDS_LIMIT) -> Optional[float]:
        value = self.item.get(field)
        return None if value is None else self.number(field, value, high)

    def number(self, field: str, value: Any, high: float) -> float:
        wanted = "a number from 0 to %g" % high
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise self.wrong(field, value, wanted)
        if not 0 <= value <= high:  # compared before float(): a 400-digit integer overflows a float
            raise self.wrong(field, value, wanted + " (it is outside that range)")
        return float(value)

    def text(self, field: str, value: Any, required: bool = False) -> Optional[str]:
        if value is None and not required:
            return None
        if not isinstance(value, str) or (required and not value):
            raise self.wrong(field, value, "a string" if not required else "a non-empty string")
        return value

    def texts(self, field: str) -> Tuple[str, ...]:
        value = self.item.get(field)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.wrong(field, value, "a list of strings")
        return tuple(value)

    def mapping(self, field: str, value: Any) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.wrong(field, value, "an object")
        return value

    def budget(self) -> Tuple[BudgetLine, ...]:
        value = self.item.get("budget")
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.wrong("budget", value, "a list of budget lines")
        lines = []
        for i, raw in enumerate(value):
            at = "budget[%d]" % i
            line = self.mapping(at, raw)
            terms = self.mapping(at + ".terms", line.get("terms", {}))
            lines.append(
                BudgetLine(
                    level=self.text(at + ".level", line.get("level"), required=True) or "",
                    total_seconds=self.number(at + ".total_seconds", line.get("total_seconds", 0), SECONDS_LIMIT),
                    terms={
                        name: self.number("%s.terms.%s" % (at, name), seconds, SECONDS_LIMIT)
                        for name, seconds in terms.items()
                    },
                )
            )
        return tuple(lines)


_COMMON = ("time", "event", "rank", "exit_code", "restart_count")


def _launch(f: _Fields, base: Dict[str, Any]) -> Event:
    return LaunchEvent(
        **base,
        job=f.text("job", f.item.get("job")),
        host=f.text("host", f.item.get("host")),
        levels=f.texts("levels"),
        budget=f.budget(),
    )


def _restart(f: _Fields, base: Dict[str, Any]) -> Event:
    return RestartEvent(
        **base, restart_kind=f.text("kind", f.item.get("kind")), generation=f.integer("generation", low=0)
    )


def _worker(f: _Fields, base: Dict[str, Any]) -> WorkerEvent:
    return WorkerEvent(**base, pid=f.integer("pid", low=0), generation=f.integer("generation", low=0))


def _hang(f: _Fields, base: Dict[str, Any]) -> Event:
    cause = f.text("cause", f.item.get("cause"))
    start = cause == "start-timeout"
    return HangEvent(
        **base,
        pid=f.integer("pid", low=0),
        generation=f.integer("generation", low=0),
        cause=cause,
        phase=f.text("phase", f.item.get("phase")),
        seconds=f.optional_number("seconds" if start else "silent_seconds"),
        timeout=f.optional_number("start_timeout" if start else "hang_timeout"),
    )


#: the events of training processes the summary reads (their pid and generation)
WORKER_KINDS = (
    "worker-start",
    "worker-fault",
    "worker-stop",
    "worker-exit",
    "worker-end",
    "fault-detected",
    "workers-stopped",
    "pg-init",
    "pg-ready",
    "pg-error",
    "first-collective",
)

#: the kinds with fields of their own, and how to read them
_KINDS: Dict[str, Callable[[_Fields, Dict[str, Any]], Event]] = {
    "launch": _launch,
    "restart": _restart,
    "worker-hang": _hang,
    **{kind: _worker for kind in WORKER_KINDS},
}


def parse_event(item: Any, number: int = 1, source: str = "<timeline>") -> Event:
    """The event of one JSON value (line ``number`` of ``source``, for messages)."""
    if not isinstance(item, dict) or "event" not in item or "time" not in item:
        raise ResumableError("line %d is not a timeline event" % number, source, "Is this a resumable timeline?")
    f = _Fields(item, number, source)
    base: Dict[str, Any] = {
        "time": f.number("time", item["time"], TIME_LIMIT),
        "kind": f.text("event", item["event"], required=True),
        "rank": f.integer("rank"),
        "exit_code": f.integer("exit_code"),
        "restart_count": f.integer("restart_count", low=0),
        "details": {k: v for k, v in item.items() if k not in _COMMON},
    }
    make = _KINDS.get(base["kind"])
    return make(f, base) if make is not None else Event(**base)


def parse_events(items: Iterable[Any], source: str = "<timeline>") -> List[Event]:
    """The events of JSON values (numbered from line 1)."""
    return [parse_event(item, number, source) for number, item in enumerate(items, 1)]


def read_events(path: str) -> List[Event]:
    """The events of a timeline file (a regular file of at most :data:`MAX_TIMELINE_BYTES`); a torn
    last line (the launcher was killed mid-write) is skipped."""
    data = read_bytes(path, what="timeline", limit=MAX_TIMELINE_BYTES, error=ResumableError, fix=FIX)
    lines = data.split(b"\n")
    while lines and not lines[-1].strip():
        lines.pop()
    events: List[Event] = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        last = number == len(lines)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if last:
                continue
            raise ResumableError(
                "line %d is not UTF-8 text (byte 0x%02x at offset %d of the line)"
                % (number, raw[exc.start], exc.start),
                path,
                FIX,
            ) from None
        try:
            item = jsonio.loads(text)
        except ValueError as exc:
            if last:
                continue
            raise ResumableError(
                "line %d is not JSON (%s)" % (number, exc), path, "Is this a resumable timeline?"
            ) from None
        events.append(parse_event(item, number, path))
    if not events:
        raise ResumableError("has no events", path, "The launcher writes them; was the job started?")
    return events


@dataclasses.dataclass(frozen=True)
class PhaseSpec:
    """One phase of a recovery: between two moments, compared with the budget terms it corresponds to."""

    name: str
    begins: str
    ends: str
    terms: Tuple[str, ...]


#: the moments of a recovery, in order (what :class:`Recovery` records of each)
MOMENTS = ("fault", "detected", "workers stopped", "new workers started", "process group ready", "first collective")
#: the phases and the budget terms each corresponds to (plan/budget.py: RT00's decomposition); the
#: process's stop and start together are the rescheduling (T1), the first step after the process group
#: is ready loads the checkpoint and (on NPUs) compiles
PHASES = (
    PhaseSpec("detect", "fault", "detected", ("detect",)),
    PhaseSpec("stop", "detected", "workers stopped", ()),
    PhaseSpec("start", "workers stopped", "new workers started", ()),
    PhaseSpec("comm init", "new workers started", "process group ready", ("T2 comm init",)),
    PhaseSpec("first step", "process group ready", "first collective", ("T3 ckpt load", "T4 compile")),
)
#: the sums shown: a name, the phases summed and the budget terms they compare with
SUMS = (
    ("reschedule", ("stop", "start"), ("T1 reschedule",)),
    ("to restart", ("detect", "stop", "start"), ("detect", "T1 reschedule")),
    ("whole", tuple(p.name for p in PHASES), ("detect", "T1 reschedule", "T2 comm init", "T3 ckpt load", "T4 compile")),
)


@dataclasses.dataclass
class Recovery:
    fault_time: float
    rank: Optional[int]
    exit_code: Optional[int]
    restart_count: Optional[int]
    #: "in place" (only the faulty ranks restarted), "group" (the agent restarted every process in the
    #: container) or "relaunch" (a new launch on this pod)
    how: str
    restart_time: Optional[float]
    level: Optional[str]
    budget_restart: Optional[float]
    budget_total: Optional[float]
    #: the fault was a hang (``worker-hang``: no heartbeat for the plan's hang timeout, or no process
    #: group ``start_timeout`` after the start), not an exit
    hang: bool = False
    #: why it was taken for hung (``heartbeat``, ``start-timeout``) and in which phase it was
    hang_cause: Optional[str] = None
    hang_phase: Optional[str] = None
    #: the generation the restart began (its processes' phases are this recovery's)
    generation: Optional[int] = None
    #: the moments after the fault: the agent saw it, the old processes were gone, the new processes'
    #: process group was ready, their first collective returned (the latest of the new processes)
    detected_time: Optional[float] = None
    stopped_time: Optional[float] = None
    ready_time: Optional[float] = None
    first_time: Optional[float] = None
    #: the budget terms of the level (from the launch header), for the phases
    terms: Dict[str, float] = dataclasses.field(default_factory=dict)
    #: the level the plan's ladder says a process fault on this pod should take (plan/budget.py
    #: expected_level: a fault on the rank-0 pod skips the levels that move its container)
    expected_level: Optional[str] = None

    @property
    def seconds(self) -> Optional[float]:
        return None if self.restart_time is None else self.restart_time - self.fault_time

    def moment(self, name: str) -> Optional[float]:
        return {
            "fault": self.fault_time,
            "detected": self.detected_time,
            "workers stopped": self.stopped_time,
            "new workers started": self.restart_time,
            "process group ready": self.ready_time,
            "first collective": self.first_time,
        }[name]

    def budget(self, terms: Sequence[str]) -> Optional[float]:
        """The sum of the level's ``terms`` (None without a budget, or with no term)."""
        if not self.terms or not terms:
            return None
        return round(sum(self.terms.get(t, 0.0) for t in terms), 3)

    def phase_seconds(self) -> Dict[str, Optional[float]]:
        out: Dict[str, Optional[float]] = {}
        for p in PHASES:
            begins, ends = self.moment(p.begins), self.moment(p.ends)
            out[p.name] = None if begins is None or ends is None else round(max(0.0, ends - begins), 6)
        return out

    def phases(self) -> List[Dict[str, Any]]:
        """Each phase and each sum: measured seconds, the budget terms and seconds, within or not."""
        measured = self.phase_seconds()
        rows: List[Dict[str, Any]] = []
        for p in PHASES:
            rows.append(self._row(p.name, p.begins, p.ends, measured[p.name], p.terms))
        for name, parts, terms in SUMS:
            values = [measured[n] for n in parts]
            total = None if any(v is None for v in values) else round(sum(v for v in values if v is not None), 6)
            row = self._row(name, "", "", total, terms)
            row["sum_of"] = list(parts)
            rows.append(row)
        return rows

    def _row(self, name: str, begins: str, ends: str, seconds: Optional[float], terms: Sequence[str]) -> Dict[str, Any]:
        budget = self.budget(terms)
        within = None if seconds is None or budget is None else seconds <= budget
        return {
            "phase": name,
            "from": begins,
            "to": ends,
            "seconds": seconds,
            "budget_terms": list(terms),
            "budget_seconds": budget,
            "within": within,
        }


def _level(levels: List[str], how: str) -> Optional[str]:
    """The ladder level whose budget a measured restart compares with: the agent restarting the
    processes in the container is process-level in-place recovery; a new launch on the same pod is
    the first level that replaces processes or pods."""
    wanted = ("recover-in-place", "recover") if how == "in place" else ("recover", "pod", "job")
    # a whole-group restart is not the in-place rung: it is graded as the next level that restarts
    # every process (or the pod/job level when the ladder has no process level)
    for level in wanted:
        if level in levels:
            return level
    return levels[0] if levels else None


def _latest(current: Optional[float], value: float) -> float:
    return value if current is None else max(current, value)


def recoveries(events: Sequence[Event]) -> List[Recovery]:
    out: List[Recovery] = []
    header: Optional[LaunchEvent] = None
    pending: Optional[Recovery] = None
    session = 0
    fault_session = 0
    #: (launch, generation) -> the recovery that began that generation (its phases come later)
    began: Dict[Tuple[int, int], Recovery] = {}
    rank0_pod = any(e.kind == "worker-start" and e.rank == 0 for e in events)  # this pod runs global rank 0
    for e in events:
        if isinstance(e, LaunchEvent):
            header = e
            session += 1
            continue
        waiting = pending is not None and pending.restart_time is None
        if e.kind in ("worker-fault", "worker-hang"):
            if pending is not None and pending.restart_time is None:
                out.append(pending)
            pending = Recovery(
                e.time, e.rank, e.exit_code, e.restart_count, "", None, None, None, None, hang=e.kind == "worker-hang"
            )
            if isinstance(e, HangEvent):
                pending.hang_cause, pending.hang_phase = e.cause, e.phase
            pending.expected_level = expected_level(header.levels if header else (), rank0_pod)
            fault_session = session
            continue
        if e.kind == "fault-detected" and pending is not None and waiting and pending.detected_time is None:
            pending.detected_time = e.time
            continue
        if e.kind == "workers-stopped" and pending is not None and waiting:
            pending.stopped_time = e.time
            continue
        if isinstance(e, WorkerEvent) and e.kind in ("pg-ready", "first-collective") and e.generation is not None:
            done = began.get((session, e.generation))
            if done is not None and e.kind == "pg-ready":
                done.ready_time = _latest(done.ready_time, e.time)
            elif done is not None:
                done.first_time = _latest(done.first_time, e.time)
            continue
        if isinstance(e, RestartEvent) and pending is not None and waiting and e.restart_kind:
            pending.how = "in place" if e.restart_kind == "in-place" else "group"
            pending.restart_time = e.time
            pending.generation = e.generation
        elif e.kind == "worker-start" and pending is not None and waiting:
            if session != fault_session:
                pending.how = "relaunch"
            elif (e.restart_count or 0) > (pending.restart_count or 0) or e.restart_count is None:
                pending.how = "group"  # a timeline from before restart kinds: the restart count went up
            else:
                continue
            pending.restart_time = e.time
            pending.generation = e.generation if isinstance(e, WorkerEvent) else None
        else:
            continue
        if pending is not None and pending.restart_time is not None and pending.level is None:
            pending.level = _level(list(header.levels) if header else [], pending.how)
            for line in header.budget if header else ():
                if line.level == pending.level:
                    pending.budget_restart = line.restart_seconds
                    pending.budget_total = line.total_seconds
                    pending.terms = dict(line.terms)
            if pending.generation is not None:
                began[(session, pending.generation)] = pending
            out.append(pending)
            pending = None
    if pending is not None:
        out.append(pending)
    return out


def _fmt(value: Optional[float], unit: str = " s") -> str:
    return "-" if value is None else "%.2f%s" % (value, unit)


def _cell(value: Optional[object]) -> str:
    """A value for the text table: ``-`` for none, control characters escaped."""
    return "-" if value is None else escape_controls(str(value))


#: how each phase and sum is labelled in the text output
PHASE_LABELS = {
    "reschedule": "  = reschedule (stop + start)",
    "to restart": "fault -> new workers started",
    "whole": "fault -> first collective",
}


#: the order of the text output: the reschedule right after its two phases, the sums last
PHASE_ORDER = ("detect", "stop", "start", "reschedule", "comm init", "first step", "to restart", "whole")


def _terms(names: Sequence[str]) -> str:
    """The budget terms of a row, shortened when they are the whole run from detect to T4."""
    return "detect + T1..T4" if len(names) > 3 else " + ".join(names)


def phase_lines(r: Recovery) -> List[str]:
    rows = {row["phase"]: row for row in r.phases()}
    out = []
    for name in PHASE_ORDER:
        row = rows[name]
        label = PHASE_LABELS.get(name) or "%s -> %s" % (row["from"], row["to"])
        budget = ""
        if row["budget_terms"]:
            budget = "%s %s" % (_terms(row["budget_terms"]), _fmt(row["budget_seconds"]))
            if row["within"] is not None:
                budget += " (within)" if row["within"] else " (OVER)"
        out.append(("    %-44s %-10s %s" % (label, _fmt(row["seconds"]), budget)).rstrip())
    return out


def render(path: str, events: Sequence[Event], show_events: bool = False) -> str:
    launches = [e for e in events if isinstance(e, LaunchEvent)]
    first = launches[0] if launches else None
    start = events[0].time
    items = recoveries(events)
    restarts = sum(1 for r in items if r.restart_time is not None)
    out = [
        "timeline %s: job %s on %s, %d launch%s, %d fault%s, %d restart%s"
        % (
            escape_controls(path),
            _cell(first.job if first and first.job is not None else "?"),
            _cell(first.host if first and first.host is not None else "?"),
            len(launches),
            "" if len(launches) == 1 else "es",
            len(items),
            "" if len(items) == 1 else "s",
            restarts,
            "" if restarts == 1 else "s",
        )
    ]
    if show_events:
        out.append("  %-10s %-16s %-5s %-5s %s" % ("at", "event", "rank", "exit", "restart"))
        for e in events:
            out.append(
                "  %-10s %-16s %-5s %-5s %s"
                % (
                    "%+.2fs" % (e.time - start),
                    _cell(e.kind),
                    _cell(e.rank),
                    _cell(e.exit_code),
                    _cell(e.restart_count),
                )
            )
    if not items:
        out.append("no worker fault recorded")
        return "\n".join(out) + "\n"
    out.append("fault -> restart of the training processes (measured by the launcher) against the plan's budget:")
    out.append(
        "  %-10s %-5s %-5s %-9s %-10s %-20s %-18s %s"
        % ("fault at", "rank", "exit", "restart", "measured", "budget to restart", "level", "budget whole recovery")
    )
    for r in items:
        verdict = ""
        if r.seconds is not None and r.budget_restart is not None:
            verdict = " (within)" if r.seconds <= r.budget_restart else " (OVER)"
        out.append(
            "  %-10s %-5s %-5s %-9s %-10s %-20s %-18s %s"
            % (
                "%+.2fs" % (r.fault_time - start),
                _cell(r.rank),
                "hang" if r.hang else _cell(r.exit_code),
                r.how or "none",
                _fmt(r.seconds),
                _fmt(r.budget_restart) + verdict,
                _cell(r.level),
                _fmt(r.budget_total),
            )
        )
    out.append(
        "budget to restart = the level's detect + T1 reschedule terms; the whole recovery adds rollback, comm "
        "init, checkpoint load and compilation, which happen inside the training script (their phases below). "
        "The ladder's level is where the plan sends a process fault on this pod: a pod that runs rank 0 skips "
        "the levels that move its container (HA73-025), so its faults take job-level rescheduling."
    )
    out.append("the phases of each recovery (measured by the launcher and in the new processes) against the budget:")
    for number, r in enumerate(items, 1):
        cause = ""
        if r.hang:
            cause = " (%s)" % ("no process group in time" if r.hang_cause == "start-timeout" else "no heartbeat")
        out.append(
            "  recovery %d: rank %s %s%s at %+.2fs, %s%s, level %s (the ladder's level for it: %s)"
            % (
                number,
                _cell(r.rank),
                "hang" if r.hang else "exit %s" % _cell(r.exit_code),
                cause,
                r.fault_time - start,
                "%s restart" % r.how if r.how else "not restarted",
                "" if r.generation is None else " (generation %d)" % r.generation,
                _cell(r.level),
                _cell(r.expected_level),
            )
        )
        out.extend(phase_lines(r))
    out.append(
        "a phase without a figure was not seen (not restarted yet, or processes that do not report: an old "
        "timeline, a script without torch.distributed); on a relaunch the detection and the stop happened "
        "before this launch."
    )
    return "\n".join(out) + "\n"


def to_json(path: str, events: Sequence[Event]) -> Dict[str, Any]:
    items = recoveries(events)
    return {
        "timeline": path,
        "events": len(events),
        "launches": sum(1 for e in events if isinstance(e, LaunchEvent)),
        "recoveries": [
            dict({k: v for k, v in dataclasses.asdict(r).items() if k != "terms"}, seconds=r.seconds, phases=r.phases())
            for r in items
        ],
    }
