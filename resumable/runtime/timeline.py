"""The recovery timeline: what the launcher saw, one JSON line per event, and its summary.

``resumable launch`` appends to ``<job log dir>/timeline-<host>.jsonl`` (:class:`TimelineWriter`); every
line has ``time`` (Unix seconds), ``event``, ``rank``, ``exit_code`` (negative = killed by that signal),
``restart_count`` (torchrun's TORCHELASTIC_RESTART_COUNT of the worker) and the fields of its kind. The
kinds, what each means and the type of each field are one schema, :data:`.events.KINDS`, which the
launcher writes through and this module reads through (:func:`.events.parse_event`).

``resumable timeline FILE`` pairs each fault with the restart that followed (in the container, or
the next launch on the same pod) and prints the measured duration next to the plan's budget for
that level: the detection and restart terms (what the launcher can see) and the whole recovery.
Then each recovery's phases: fault -> detected -> workers stopped -> new workers started -> process
group ready -> first collective, each against the budget term it corresponds to (:data:`PHASES`),
with their sums. No MindCluster component reports measured recovery against a budget; this does it
per pod.

Reading is strict about what it uses and keeps the rest: every line is parsed into an
:class:`~.events.Event` (``time`` a finite number of Unix seconds, ``event`` a string, ``rank``,
``exit_code`` and ``restart_count`` integers or null), and the kinds the summary reads have their
own class with their fields checked as :data:`.events.KINDS` types them. Every other field stays in
``details`` as written. A line that breaks this is a user error naming the line and the field (exit
2); only a torn last line is skipped. A long job's log is read whole: 50,000 events of thousands of
restarts are about 7 MB, a tenth of :data:`MAX_TIMELINE_BYTES` (tests/runtime/test_timeline_long.py).
"""

from __future__ import annotations

import dataclasses
import time
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple

from .. import jsonio
from ..errors import ResumableError, escape_controls
from ..fileio import open_append, read_bytes
from ..plan.budget import expected_level
from .events import (
    FAULT_DETECTED,
    FIRST_COLLECTIVE,
    FIX,
    PG_READY,
    WORKER_FAULT,
    WORKER_HANG,
    WORKER_START,
    WORKERS_STOPPED,
    Event,
    HangEvent,
    LaunchEvent,
    RestartEvent,
    WorkerEvent,
    new,
    parse_event,
)

#: a timeline larger than this is not read (one event is ~200 bytes)
MAX_TIMELINE_BYTES = 64 << 20


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
        return self.write_event(
            new(event, time.time() if when is None else when, rank, exit_code, restart_count, **details)
        )

    def write_event(self, event: Event) -> Dict[str, Any]:
        record = event.record()
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
        if e.kind in (WORKER_FAULT, WORKER_HANG):
            if pending is not None and pending.restart_time is None:
                out.append(pending)
            pending = Recovery(
                e.time, e.rank, e.exit_code, e.restart_count, "", None, None, None, None, hang=e.kind == WORKER_HANG
            )
            if isinstance(e, HangEvent):
                pending.hang_cause, pending.hang_phase = e.cause, e.phase
            pending.expected_level = expected_level(header.levels if header else (), rank0_pod)
            fault_session = session
            continue
        if e.kind == FAULT_DETECTED and pending is not None and waiting and pending.detected_time is None:
            pending.detected_time = e.time
            continue
        if e.kind == WORKERS_STOPPED and pending is not None and waiting:
            pending.stopped_time = e.time
            continue
        if isinstance(e, WorkerEvent) and e.kind in (PG_READY, FIRST_COLLECTIVE) and e.generation is not None:
            done = began.get((session, e.generation))
            if done is not None and e.kind == PG_READY:
                done.ready_time = _latest(done.ready_time, e.time)
            elif done is not None:
                done.first_time = _latest(done.first_time, e.time)
            continue
        if isinstance(e, RestartEvent) and pending is not None and waiting and e.restart_kind:
            pending.how = "in place" if e.restart_kind == "in-place" else "group"
            pending.restart_time = e.time
            pending.generation = e.generation
        elif e.kind == WORKER_START and pending is not None and waiting:
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
