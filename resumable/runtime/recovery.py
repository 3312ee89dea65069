"""The recovery state of one launch: the training processes, their generations, the fault being recovered.

Pure: no process, socket, file or signal here, and the clock is injected (:class:`Clock`). The
supervisor tells the state what it saw (a process started, ended, was reaped, reported a phase, went
silent) and writes the events each transition returns (:mod:`.events`); the watchers
(:mod:`.hangwatch`, :mod:`.startwatch`, :mod:`.recoverywatch`) read it and take what is late through
it. Modelled on torch elastic's ``WorkerState`` and its one ``_invoke_run`` loop: one named phase
(:class:`Phase`) and one place that records a fault (:meth:`RecoveryState._record_fault`).

Phases::

    RUNNING --a process fails (its exit code, a hang, or an end inferred at the restart)--> FAULTED
    FAULTED --the agent reaped the failed process (its monitor saw it)--> DETECTED
    FAULTED | DETECTED --the first process of the next generation starts (restart)--> RUNNING
    any --the launcher stops the training (a signal, the Manager lost, a recovery timeout) or the
          agent ended--> STOPPING (for good: whatever ends now was stopped)

A *generation* is the set of processes started between two restarts: it begins at 0 and one more
begins at each restart, whole-group (torchrun; TaskD's restart of the group: TORCHELASTIC_RESTART_COUNT
goes up) or in place (TaskD's restart of the faulty ranks, MC@v7.3.0 pt_agent.py:139-154: the other
ranks run on in their older generations, with the same restart count).

**The generation rule.** A fault marks *every generation that has a process running when it is
recorded, the failed process's own and the current one included* (:attr:`RecoveryState.faulted`), and
the start watch leaves a marked generation alone. The processes that run at one moment share one
process group whatever generation they started in: an in-place restart adds its new processes to the
group the older ones run in, and a whole-group restart stops every older process (a process of a
generation older than the last group restart that ends later is a ``worker-stop``). So a fault stops
all of them: each one that waits for the failed rank (in its process group's initialisation, in a
collective) waits because of the fault being recovered, not because it is late itself. Marking only the
failed process's generation (as a hang and an inferred fault did until issue 32) left a rank restarted in
place, waiting in its process group's initialisation for an older rank that hung, to be taken for a
second hang at its start timeout; marking only the current generation (as an exit code did) would leave
older ranks still starting to the same fate. The fault that ended the job (its exit code,
:meth:`RecoveryState.exit_code`) is likewise the last one recorded since the last restart, whichever
generation its process started in.
"""

from __future__ import annotations

import dataclasses
import enum
import signal
import time
from typing import Any, Dict, List, Optional, Protocol, Set, Tuple

from . import events as E
from .events import Event, new

#: how far a training process got in its start: the start-up hook reports each step
PHASES = ("started", "pg-init", "pg-ready", "training")
#: what each is called in a report
PHASE_TEXT = {
    "started": "before process group init",
    "pg-init": "in process group init",
    "pg-ready": "process group ready",
    "training": "training",
}
#: the events of the start-up hook that move a process's phase
PHASE_EVENTS = {E.PG_INIT: "pg-init", E.PG_READY: "pg-ready", E.FIRST_COLLECTIVE: "training", E.PG_ERROR: None}
#: the exit code a hung process is recorded with (the launcher SIGKILLs it)
HUNG_CODE = -int(signal.SIGKILL)


class Clock(Protocol):
    """The two clocks the state reads: Unix seconds (what the timeline records) and a monotonic one
    (the durations the watchers measure). Tests pass their own."""

    def time(self) -> float: ...

    def monotonic(self) -> float: ...


class SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


SYSTEM_CLOCK: Clock = SystemClock()


class Phase(enum.Enum):
    """Where the recovery is (see the module's diagram)."""

    RUNNING = "running"
    FAULTED = "faulted"
    DETECTED = "detected"
    STOPPING = "stopping"


@dataclasses.dataclass
class Worker:
    pid: int
    rank: Optional[int]
    local_rank: Optional[int]
    restart_count: Optional[int]
    starttime: Optional[int]
    #: the worker generation it belongs to (one more at each restart, in place or of the group)
    generation: int = 0
    done: bool = False
    #: monotonic time of its last heartbeat; None until the first (only a beating process is watched)
    last_beat: Optional[float] = None
    hung: bool = False
    #: how far it got (PHASES)
    phase: str = "started"
    #: monotonic time when its start was reported (the start timeout counts from there)
    began: float = 0.0
    #: Unix time when it was seen ended, and when its process was gone (reaped)
    ended_at: Optional[float] = None
    gone_at: Optional[float] = None


@dataclasses.dataclass
class Fault:
    """A fault being recovered (or the last one recorded)."""

    worker: Worker
    #: Unix time of the fault
    time: float
    #: the failed process's exit code (negative: the signal; None: not known, the fault was inferred)
    code: Optional[int]
    #: the ranks of the fault (a hang taken while it is recovered adds its rank)
    ranks: Set[Optional[int]]
    #: the generation current when it was recorded
    generation: int
    #: the agent reaped the failed process
    detected: bool = False


@dataclasses.dataclass
class Taken:
    """A process a watcher took for hung: the events to write and what the launcher says of it; the
    supervisor SIGKILLs it."""

    worker: Worker
    why: str
    events: List[Event]


def _rank_order(rank: Optional[int]) -> int:
    return -1 if rank is None else rank


class RecoveryState:
    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.phase = Phase.RUNNING
        #: the training processes reported so far, in start order
        self.workers: Dict[int, Worker] = {}
        #: TORCHELASTIC_RESTART_COUNT of the newest generation
        self.attempt: Optional[int] = None
        self.generation = 0
        #: the first generation of the last whole-group restart: older processes were stopped by it
        self.group_generation = 0
        #: generations in which a fault was recorded (the generation rule above)
        self.faulted: Set[int] = set()
        #: the fault being recovered (None while running)
        self.fault: Optional[Fault] = None
        #: the last fault recorded with an exit code (the job's exit code may be its)
        self.last_fault: Optional[Fault] = None
        #: the first process of this generation that ended with an unknown status, and when
        self.vanished: Optional[Tuple[Worker, float]] = None
        #: why the launcher stops the training (None while it does not, or when the agent ended)
        self.stop_reason: Optional[str] = None

    # --- the phase -------------------------------------------------------------------------------------
    @property
    def stopping(self) -> bool:
        return self.phase is Phase.STOPPING

    def _enter(self, phase: Phase) -> None:
        if not self.stopping:
            self.phase = phase

    def stop(self, reason: str) -> None:
        """The launcher stops the training (a signal, the Manager lost, a recovery timeout)."""
        self.stop_reason = reason
        self.phase = Phase.STOPPING

    def agent_ended(self) -> None:
        self.phase = Phase.STOPPING

    # --- the one place a fault is recorded -------------------------------------------------------------
    def _record_fault(self, w: Worker, when: float, code: Optional[int]) -> None:
        running = {x.generation for x in self.workers.values() if not x.done}
        self.faulted |= running | {w.generation, self.generation}
        self.fault = Fault(w, when, code, {w.rank}, self.generation)
        if code is not None:
            self.last_fault = self.fault
        self._enter(Phase.FAULTED)

    # --- what the supervisor sees ----------------------------------------------------------------------
    def restart_kind(self, rank: Optional[int], restart_count: Optional[int]) -> Optional[str]:
        """Whether a process starting now begins a new generation: ``group`` (its restart count went up, or
        a fault is being recovered and it has none), ``in-place`` (a new process of a rank whose process
        ended while the others of its generation run on, with the same restart count: MC@v7.3.0
        pt_agent.py:139-154, torch_patch.py:64-76), else None."""
        if self.attempt is None and self.fault is None and not self.workers:
            return None  # the first process of the launch
        rc = restart_count
        if (rc is not None and self.attempt is not None and rc > self.attempt) or (
            rc is None and self.fault is not None
        ):
            return "group"
        latest = None
        for w in self.workers.values():  # in start order: the rank's newest process
            if w.rank == rank:
                latest = w
        if (
            latest is not None
            and latest.done
            and latest.restart_count == rc
            and any(w.rank != rank and not w.done for w in self.workers.values())
        ):
            return "in-place"
        return None

    def started(
        self,
        pid: int,
        rank: Optional[int],
        local_rank: Optional[int],
        restart_count: Optional[int],
        starttime: Optional[int],
        when: float,
        warm: bool = False,
    ) -> List[Event]:
        """A training process reported its start (the supervisor has looked in /proc for the processes
        reaped just before, when :meth:`restart_kind` says this is a restart)."""
        out: List[Event] = []
        first = self.attempt is None and self.fault is None and not self.workers
        kind = self.restart_kind(rank, restart_count)
        if first:
            self.attempt = restart_count
        elif kind is not None:
            out += self._restart(kind, restart_count, when)
        w = Worker(
            pid, rank, local_rank, restart_count, starttime, generation=self.generation, began=self.clock.monotonic()
        )
        self.workers[pid] = w
        out.append(
            new(
                E.WORKER_START,
                when,
                rank,
                restart_count=restart_count,
                pid=pid,
                local_rank=local_rank,
                generation=self.generation,
                warm=warm,
            )
        )
        return out

    def _restart(self, kind: str, restart_count: Optional[int], when: float) -> List[Event]:
        out: List[Event] = []
        if self.fault is None and self.vanished is not None:
            # the agent reaped the failed process before its status could be read: it is the fault
            w, gone = self.vanished
            out.append(
                new(
                    E.WORKER_FAULT,
                    gone,
                    w.rank,
                    restart_count=w.restart_count,
                    pid=w.pid,
                    inferred=True,
                    generation=w.generation,
                )
            )
            self._record_fault(w, gone, None)
        out += self._stopped()
        fault = self.fault
        self.generation += 1
        if kind == "group":
            self.group_generation = self.generation
        out.append(
            new(
                E.RESTART,
                when,
                restart_count=restart_count,
                seconds=None if fault is None else round(when - fault.time, 6),
                kind=kind,
                generation=self.generation,
                fault_ranks=sorted(fault.ranks, key=_rank_order) if fault else [],
            )
        )
        self.attempt = restart_count
        self.fault = None
        self.vanished = None
        self._enter(Phase.RUNNING)
        return out

    def _stopped(self) -> List[Event]:
        """At a restart: the fault's detection (if its process was gone unseen) and the moment every
        process that ended since the fault was gone (``workers-stopped``)."""
        fault = self.fault
        if fault is None:
            return []
        out: List[Event] = []
        w = fault.worker
        detected = fault.time
        if not fault.detected:
            # gone before the launcher saw it go (or the status was read from a zombie it never saw
            # reaped): detected when it was seen gone, never before the fault
            detected = max(fault.time, w.gone_at or w.ended_at or self.clock.time())
            fault.detected = True
            out.append(self._process_event(E.FAULT_DETECTED, w, detected))
        ended = [x for x in self.workers.values() if x.done and x.ended_at is not None and x.ended_at >= fault.time]
        if w not in ended:
            ended.append(w)
        times = [t for t in (x.gone_at or x.ended_at for x in ended) if t is not None]
        out.append(
            new(
                E.WORKERS_STOPPED,
                max([detected, *times]),
                pids=sorted(x.pid for x in ended),
                generation=w.generation,
            )
        )
        return out

    def ended(self, w: Worker, code: Optional[int]) -> List[Event]:
        """``w`` ended with ``code`` (None: its status was gone before the launcher looked)."""
        now = self.clock.time()
        w.done = True
        w.ended_at = now
        if code == 0:
            kind = E.WORKER_EXIT
        elif self.stopping or self.fault is not None or w.generation < self.group_generation:
            # the agent (or we) stopped it, or it failed because of the fault being recovered; its
            # status is often reaped before we look
            kind = E.WORKER_STOP
        elif code is None:
            kind = E.WORKER_END  # gone before we saw its status
            if self.vanished is None:
                self.vanished = (w, now)
        else:
            kind = E.WORKER_FAULT
            self._record_fault(w, now, code)
        return [self._process_event(kind, w, now, exit_code=code)]

    def gone(self, w: Worker) -> List[Event]:
        """``w``'s process is gone: the agent reaped it (so the agent's monitor has seen the failure), or
        it ended before the launcher looked."""
        w.gone_at = self.clock.time()
        fault = self.fault
        if fault is None or w is not fault.worker or fault.detected:
            return []
        fault.detected = True
        self._enter(Phase.DETECTED)
        return [self._process_event(E.FAULT_DETECTED, w, w.gone_at)]

    def beat(self, pid: int) -> None:
        w = self.workers.get(pid)
        if w is not None:
            w.last_beat = self.clock.monotonic()

    def reported(self, w: Worker, kind: str, when: float, **fields: Any) -> Event:
        """``w`` reported a step of its start (:data:`PHASE_EVENTS`); a phase only moves forward."""
        phase = PHASE_EVENTS[kind]
        if phase is not None and PHASES.index(phase) > PHASES.index(w.phase):
            w.phase = phase
        return self._process_event(kind, w, when, **fields)

    def take_hung(self, w: Worker, cause: str, why: str, **fields: Any) -> Taken:
        """``w`` is hung (a watcher says why): the fault of the world it runs in, or one more rank of the
        fault being recovered. The supervisor SIGKILLs it, so that the agent recovers it as a crash."""
        w.hung = True
        now = self.clock.time()
        event = self._process_event(E.WORKER_HANG, w, now, cause=cause, phase=w.phase, action="SIGKILL", **fields)
        if self.fault is None:
            self._record_fault(w, now, HUNG_CODE)
        else:
            self.fault.ranks.add(w.rank)
        return Taken(w, why, [event])

    def _process_event(
        self, kind: str, w: Worker, when: float, exit_code: Optional[int] = None, **fields: Any
    ) -> Event:
        return new(kind, when, w.rank, exit_code, w.restart_count, pid=w.pid, generation=w.generation, **fields)

    # --- what it comes to ------------------------------------------------------------------------------
    def live(self) -> List[Worker]:
        return [w for w in self.workers.values() if not w.done]

    def failed_code(self) -> Optional[int]:
        """The exit code (as Python reports it: -N for signal N) of the process whose fault ended the job:
        the last fault recorded with an exit code since the last restart; None when there is none."""
        fault = self.last_fault
        if fault is not None and fault.code is not None and fault.generation == self.generation:
            return fault.code
        return None
