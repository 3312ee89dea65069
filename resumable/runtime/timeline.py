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
restart         the first process of the next generation started: ``seconds`` since the fault; ``kind``
                ``group`` (the agent restarted every process: TORCHELASTIC_RESTART_COUNT went up) or
                ``in-place`` (only the faulty ranks got new processes, the others ran on: TaskD's
                restart of the faulty ranks keeps the restart count); ``fault_ranks``
signal          the launcher got SIGTERM/SIGINT; stop: it sent it to every process (``pids``) and
                gives them the grace period; kill: grace period over
manager-lost    the TaskD Manager exited while the training ran: the training is stopped
exit            the launcher's exit code and the agent's
=============== ==============================================================================

``resumable timeline FILE`` pairs each fault with the restart that followed (in the container, or
the next launch on the same pod) and prints the measured duration next to the plan's budget for
that level: the detection and restart terms (what the launcher can see) and the whole recovery.
No MindCluster component reports measured recovery against a budget; this does it per pod.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import IO, Any, Dict, List, Optional

from ..errors import ResumableError

#: a timeline larger than this is not read (one event is ~200 bytes)
MAX_TIMELINE_BYTES = 64 << 20
#: budget terms that cover "fault until the processes run again" (plan/budget.py)
RESTART_TERMS = ("detect", "T1 reschedule")


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
        self._handle: Optional[IO[str]] = open(path, "a", encoding="utf-8")  # noqa: SIM115

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
                self._handle.write(json.dumps(record, sort_keys=False, default=str) + "\n")
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


def read_events(path: str) -> List[Dict[str, Any]]:
    """The events of a timeline file; a torn last line (the launcher was killed mid-write) is skipped."""
    try:
        if not os.path.isfile(path):
            raise ResumableError("is not a timeline file", path, "Name a timeline-<host>.jsonl of the job log dir.")
        if os.path.getsize(path) > MAX_TIMELINE_BYTES:
            raise ResumableError("is larger than %d bytes" % MAX_TIMELINE_BYTES, path, "Split or trim it.")
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        raise ResumableError(
            "does not exist", path, "Check the path (the job log dir has timeline-<host>.jsonl)."
        ) from None
    except OSError as exc:
        raise ResumableError("cannot be read (%s)" % exc, path, "Check its permissions.") from None
    events: List[Dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            if number == len(lines):
                continue
            raise ResumableError("line %d is not JSON" % number, path, "Is this a resumable timeline?") from None
        if not isinstance(item, dict) or "event" not in item or "time" not in item:
            raise ResumableError("line %d is not a timeline event" % number, path, "Is this a resumable timeline?")
        events.append(item)
    if not events:
        raise ResumableError("has no events", path, "The launcher writes them; was the job started?")
    return events


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
    #: the fault was a hang (``worker-hang``: no heartbeat for the plan's hang timeout), not an exit
    hang: bool = False

    @property
    def seconds(self) -> Optional[float]:
        return None if self.restart_time is None else self.restart_time - self.fault_time


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


def recoveries(events: List[Dict[str, Any]]) -> List[Recovery]:
    out: List[Recovery] = []
    header: Dict[str, Any] = {}
    pending: Optional[Recovery] = None
    session = 0
    fault_session = 0
    for e in events:
        kind = e.get("event")
        if kind == "launch":
            header = e
            session += 1
        elif kind in ("worker-fault", "worker-hang"):
            if pending is not None and pending.restart_time is None:
                out.append(pending)
            pending = Recovery(
                float(e["time"]),
                e.get("rank"),
                e.get("exit_code"),
                e.get("restart_count"),
                "",
                None,
                None,
                None,
                None,
                hang=kind == "worker-hang",
            )
            fault_session = session
        elif kind == "restart" and pending is not None and pending.restart_time is None and e.get("kind"):
            pending.how = "in place" if e.get("kind") == "in-place" else "group"
            pending.restart_time = float(e["time"])
        elif kind == "worker-start" and pending is not None and pending.restart_time is None:
            if session != fault_session:
                pending.how = "relaunch"
            elif (e.get("restart_count") or 0) > (pending.restart_count or 0) or e.get("restart_count") is None:
                pending.how = "group"  # a timeline from before restart kinds: the restart count went up
            else:
                continue
            pending.restart_time = float(e["time"])
        else:
            continue
        if pending is not None and pending.restart_time is not None and pending.level is None:
            levels = list(header.get("levels") or [])
            pending.level = _level(levels, pending.how)
            for line in header.get("budget") or []:
                if line.get("level") == pending.level:
                    terms = line.get("terms") or {}
                    pending.budget_restart = round(sum(float(terms.get(t, 0.0)) for t in RESTART_TERMS), 3)
                    pending.budget_total = float(line.get("total_seconds", 0.0))
            out.append(pending)
            pending = None
    if pending is not None:
        out.append(pending)
    return out


def _fmt(value: Optional[float], unit: str = " s") -> str:
    return "-" if value is None else "%.2f%s" % (value, unit)


def render(path: str, events: List[Dict[str, Any]], show_events: bool = False) -> str:
    launches = [e for e in events if e.get("event") == "launch"]
    first = launches[0] if launches else events[0]
    start = float(events[0]["time"])
    items = recoveries(events)
    restarts = sum(1 for r in items if r.restart_time is not None)
    out = [
        "timeline %s: job %s on %s, %d launch%s, %d fault%s, %d restart%s"
        % (
            path,
            first.get("job", "?"),
            first.get("host", "?"),
            len(launches),
            "" if len(launches) == 1 else "es",
            len(items),
            "" if len(items) == 1 else "s",
            restarts,
            "" if restarts == 1 else "s",
        )
    ]
    if show_events:
        out.append("  %-10s %-14s %-5s %-5s %s" % ("at", "event", "rank", "exit", "restart"))
        for e in events:
            out.append(
                "  %-10s %-14s %-5s %-5s %s"
                % (
                    "+%.2fs" % (float(e["time"]) - start),
                    e.get("event"),
                    "-" if e.get("rank") is None else e.get("rank"),
                    "-" if e.get("exit_code") is None else e.get("exit_code"),
                    "-" if e.get("restart_count") is None else e.get("restart_count"),
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
                "+%.2fs" % (r.fault_time - start),
                "-" if r.rank is None else r.rank,
                "hang" if r.hang else "-" if r.exit_code is None else r.exit_code,
                r.how or "none",
                _fmt(r.seconds),
                _fmt(r.budget_restart) + verdict,
                r.level or "-",
                _fmt(r.budget_total),
            )
        )
    out.append(
        "budget to restart = the level's detect + T1 reschedule terms; the whole recovery adds rollback, comm "
        "init, checkpoint load and compilation, which happen inside the training script."
    )
    return "\n".join(out) + "\n"


def to_json(path: str, events: List[Dict[str, Any]]) -> Dict[str, Any]:
    items = recoveries(events)
    return {
        "timeline": path,
        "events": len(events),
        "launches": sum(1 for e in events if e.get("event") == "launch"),
        "recoveries": [dict(dataclasses.asdict(r), seconds=r.seconds) for r in items],
    }
