"""Runs a :class:`~.launch.LaunchSpec`: the TaskD Manager and the launcher as supervised children.

- Both children start in their own session; the launcher process becomes a child subreaper
  (``prctl(PR_SET_CHILD_SUBREAPER)``), so processes orphaned by a dying agent come back to it and
  are reaped or killed here, never left behind (in a container it is PID 1 and must reap anyway).
- SIGTERM/SIGINT go to *every* descendant at once, training processes included, whatever the agent
  does with it: TaskD's patched agent never sets torchrun's ``_pcontext``, so torchrun's own shutdown
  stops no worker (MC@v7.3.0 taskd/python/adaptor/patch/torch_patch.py:102-160, torch
  local_elastic_agent ``_shutdown``). They all get the grace period (the pod's
  terminationGracePeriodSeconds less a margin for the launcher's own exit, launch.grace_seconds),
  also after the agent has exited; SIGKILL only when it is over.
- A TaskD Manager that exits while the training runs (or fails to start) ends the pod's training the
  same way (``manager-lost``; exit 128 + SIGTERM), so the Pod- or job-level rung takes over: TaskD's
  agent would otherwise wait for the Manager's start command for ever (pt_agent.py:156-171, its
  timeout counter never moves) and the pod would sit Running and idle. Upstream has no way to
  restart a Manager into a running job.
- A timeline or log write never raises (timeline.TimelineWriter counts failures; they are reported
  at exit); an internal error kills every descendant before anything is logged.
- Training processes report their start through the start-up hook; their pids are watched in
  /proc every 20 ms. A process that ends shows as a zombie until the agent reaps it at its next
  monitor tick, and /proc/PID/stat then holds its wait status (field 52), so the timeline gets the
  exit code of the process that failed and the moment it failed, not when the agent noticed. (A
  launcher starved of CPU for a whole monitor interval can miss that window: the process then
  shows as ``worker-end``, and when the agent restarts the group it is logged as the fault with
  ``inferred: true`` and no exit code.)
- Each training process sends a heartbeat every plan.launcher.heartbeat_seconds (start-up hook); one
  silent for the plan's hang timeout (a SIGSTOPped or wedged process) is recorded as ``worker-hang``,
  the fault of its generation with its rank, and SIGKILLed, so the agent recovers it as a crash.
- The phases of each recovery go to the timeline (issue 27): ``fault-detected`` when the agent reaped
  the failed process (its monitor noticed), ``workers-stopped`` when every process that ended since the
  fault is gone, ``restart`` when the first new process reports, and from the start-up hook in each new
  process ``pg-init``, ``pg-ready`` (``pg-error``) and ``first-collective``.
- No restart ends in silence: a training process that has not initialised its process group
  plan.launcher.start_timeout after it started, while a peer of its generation has begun to, is
  recorded as ``worker-hang`` with its phase and SIGKILLed like a hung one (while a rank has not begun,
  only such ranks are taken: they are what the others wait for); a recovery whose new processes have not started
  that long after the fault is recorded as ``recovery-timeout`` and the training is stopped, so the
  Pod- or job-level rung takes over (issue 27: a restarted generation waited in the rendezvous for 13
  minutes without a word).
- ``resumable drill`` asks through the same socket: its status, and a fault injected into a local rank
  (a signal, a hang by SIGSTOP, an exit with a code through the process's command socket), logged as
  ``drill``.
- The exit code is the training's: 0 on success; otherwise the exit code of the worker whose
  failure ended the job (128 + N for a worker killed by signal N, as a shell reports it, so that
  restartPolicy ExitCode can tell a crash from a user error), else the agent's; 128 + N when the
  launcher itself was stopped by signal N.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from types import FrameType
from typing import IO, Any, Dict, List, Optional, Set, Tuple

from .. import constants as C
from .. import jsonio
from ..errors import ResumableError, escape_controls
from ..fileio import make_dirs, open_append, os_errors, remove_dirs
from .launch import RUNTIME_PREFIX, SOCKET_NAME, LaunchSpec, _host
from .podenv import private_dir
from .proctable import ProcStat, descendants, proc_stat, send
from .timeline import INT_LIMIT, SECONDS_LIMIT, TIME_LIMIT, TimelineWriter
from .workerhook import COLLECTIVES, ERROR_CHARS, WORKER_SOCKET

#: seconds between looks at the children, the workers and the event socket
POLL_SECONDS = 0.02
#: the TaskD Manager gets this long to stop after the training has ended
MANAGER_STOP_SECONDS = 10.0
#: leftover descendants get this long after SIGTERM before SIGKILL
SWEEP_SECONDS = 2.0
#: a launcher loop that did not run for this long restarts every hang watch (its own heartbeat view
#: is incomplete; the socket queue holds only a few datagrams)
HANG_GAP_SECONDS = 5.0
#: how many decimals the durations of a hang or a late start are recorded with (milliseconds): a
#: silence just over its timeout can read as the timeout itself
RECORDED_DECIMALS = 3
PR_SET_CHILD_SUBREAPER = 36
#: how far a training process got in its start: the start-up hook reports each step
PHASES = ("started", "pg-init", "pg-ready", "training")
#: what each phase is called in a report
PHASE_TEXT = {
    "started": "before process group init",
    "pg-init": "in process group init",
    "pg-ready": "process group ready",
    "training": "training",
}
#: the events of the start-up hook that move a process's phase
PHASE_EVENTS = {"pg-init": "pg-init", "pg-ready": "pg-ready", "first-collective": "training", "pg-error": None}
#: what the agent's warm-workers hook reports
WARM_STATES = ("starting", "ready", "off", "cold")
#: how many ranks that are not training yet a drill's refusal names (the rest are counted)
DRILL_NAMED = 8
#: the signals a drill may kill a training process with (each ends a process by default)
DRILL_SIGNALS = (
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGILL,
    signal.SIGABRT,
    signal.SIGBUS,
    signal.SIGFPE,
    signal.SIGKILL,
    signal.SIGUSR1,
    signal.SIGSEGV,
    signal.SIGUSR2,
    signal.SIGTERM,
)
DRILL_FAULTS = ("kill", "hang", "exit")


def decode_status(status: int) -> int:
    """A wait status as Python reports exit codes: the code, or -N for death by signal N."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return -1


def shell_code(code: int) -> int:
    return 128 - code if code < 0 else code


def set_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


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
    #: time.monotonic() of its last heartbeat; None until the first (only a beating process is watched)
    last_beat: Optional[float] = None
    hung: bool = False
    #: how far it got (PHASES)
    phase: str = "started"
    #: time.monotonic() when its start was reported (the start timeout counts from there)
    began: float = dataclasses.field(default_factory=time.monotonic)
    #: time.time() when it was seen ended, and when its process was gone (reaped)
    ended_at: Optional[float] = None
    gone_at: Optional[float] = None


def _count(value: Any) -> Optional[int]:
    """``value`` when it is an integer from 0 to the timeline's limit, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT_LIMIT:
        return value
    return None


def _number(value: Any, high: float = SECONDS_LIMIT) -> Optional[float]:
    """``value`` when it is a finite number from 0 to ``high``, else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= high:
        return float(value)
    return None


def _text(value: Any, limit: int = ERROR_CHARS) -> Optional[str]:
    """``value`` when it is a string (cut to ``limit`` characters), else None."""
    return value[:limit] if isinstance(value, str) else None


def _say(text: str) -> None:
    """One line on stderr; never raises (a closed or full stderr must not stop the supervisor)."""
    try:
        sys.stderr.write("resumable launch: %s\n" % escape_controls(text))
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Supervisor:
    def __init__(self, spec: LaunchSpec) -> None:
        self.spec = spec
        self.pid = os.getpid()
        self.agent: Optional[subprocess.Popen[bytes]] = None
        self.manager: Optional[subprocess.Popen[bytes]] = None
        self.agent_code: Optional[int] = None
        self.manager_code: Optional[int] = None
        self.workers: Dict[int, Worker] = {}
        self.attempt: Optional[int] = None
        #: generations in which a fault was recorded; processes of those that end later were stopped
        self.faulted: Set[int] = set()
        self.generation = 0
        #: the first generation of the last whole-group restart: older processes were stopped by it
        self.group_generation = 0
        #: ranks of the fault being recovered
        self.fault_ranks: Set[Optional[int]] = set()
        self.fault_time: Optional[float] = None
        self.last_fault: Optional[Worker] = None
        self.last_fault_code: Optional[int] = None
        #: the first process of this attempt that ended with an unknown status, and when
        self.vanished: Optional[Tuple[Worker, float]] = None
        self.signals: List[int] = []
        self.first_signal: Optional[int] = None
        self.deadline: Optional[float] = None
        self.killed = False
        #: the agent has ended: whatever else ends now was stopped by us
        self.ending = False
        self.stopping_manager = False
        #: why the launcher stopped the training itself (a signal, the Manager's death), or None
        self.stop_reason: Optional[str] = None
        self.manager_lost = False
        self.sock: Optional[socket.socket] = None
        #: when the hang check last ran (a launcher that was not running cannot have seen heartbeats)
        self.last_hang_check: Optional[float] = None
        self.timeline: Optional[TimelineWriter] = None
        #: the process whose fault is being recovered, and whether its detection was logged
        self.fault_worker: Optional[Worker] = None
        self.detected = False
        self.runtime: Optional[str] = None

    # --- events --------------------------------------------------------------------------------------
    def _log(self, event: str, **fields: Any) -> None:
        if self.timeline is not None:
            self.timeline.write(event, **fields)

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        self.signals.append(signum)

    def _read_events(self, timeout: float) -> None:
        if self.sock is None:
            time.sleep(timeout)
            return
        try:
            ready, _, _ = select.select([self.sock], [], [], timeout)
        except InterruptedError:  # pragma: no cover (PEP 475 retries)
            return
        if not ready:
            return
        while True:
            try:
                data, sender = self.sock.recvfrom(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            try:
                message = jsonio.loads(data.decode("utf-8"))
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            kind = message.get("event")
            if kind == "worker-start":
                self._worker_started(message)
            elif kind == "heartbeat":
                pid = message.get("pid")
                w = self.workers.get(pid) if isinstance(pid, int) else None
                if w is not None:
                    w.last_beat = time.monotonic()
            elif isinstance(kind, str) and kind in PHASE_EVENTS:
                self._worker_phase(kind, message)
            elif kind == "warm":
                self._warm(message)
            elif kind == "drill" and sender:
                self._answer(sender, self._drill(message))

    def _when(self, m: Dict[str, Any]) -> float:
        """A report's time: the sender's when it is a plausible Unix time, else now."""
        when = m.get("time")
        if not isinstance(when, (int, float)) or isinstance(when, bool) or not 0 < when <= TIME_LIMIT:
            return time.time()
        return float(when)

    def _worker_phase(self, kind: str, m: Dict[str, Any]) -> None:
        """A training process entered or finished its process group's initialisation, or its first
        collective returned (the start-up hook's reports)."""
        pid = _count(m.get("pid"))
        w = self.workers.get(pid) if pid else None
        if w is None or w.done:
            return
        fields: Dict[str, Any] = {}
        if kind in ("pg-ready", "pg-error"):
            fields["seconds"] = _number(m.get("seconds"))
        if kind == "pg-error":
            fields["error"] = _text(m.get("error"))
        if kind == "first-collective":
            op = m.get("op")
            fields["op"] = op if op in COLLECTIVES or op == "optimizer.step" else None
        phase = PHASE_EVENTS[kind]
        if phase is not None and PHASES.index(phase) > PHASES.index(w.phase):
            w.phase = phase
        self._log(
            kind,
            rank=w.rank,
            restart_count=w.restart_count,
            when=self._when(m),
            pid=w.pid,
            generation=w.generation,
            **fields,
        )

    def _warm(self, m: Dict[str, Any]) -> None:
        """What the agent's warm-workers hook reports: starting, ready, off (with why), cold (a worker
        started fresh, and why)."""
        state = m.get("state")
        if state not in WARM_STATES:
            return
        reason = _text(m.get("reason")) or ""
        fields: Dict[str, Any] = {"state": state, "reason": reason}
        seconds = _number(m.get("import_seconds"))
        if seconds is not None:
            fields["import_seconds"] = seconds
        self._log("warm", when=self._when(m), pid=_count(m.get("pid")), **fields)
        if state == "off":
            _say("warning: warm workers are off, every worker starts fresh: %s" % reason)

    def _answer(self, to: Any, reply: Dict[str, Any]) -> None:
        """A reply to the drill (never blocking: a full queue drops it, the drill asks again)."""
        if self.sock is None:
            return
        with contextlib.suppress(OSError, ValueError, TypeError):
            self.sock.sendto(jsonio.dumps(reply, indent=None).encode("utf-8"), to)

    def _worker_started(self, m: Dict[str, Any]) -> None:
        # a report is a datagram: only the fields of the types the timeline holds are taken
        pid = _count(m.get("pid"))
        if pid is None or pid == 0:
            return
        when = self._when(m)
        warm = m.get("warm") is True
        rc = _count(m.get("restart_count"))
        rank = _count(m.get("rank"))
        local_rank = _count(m.get("local_rank"))
        st = proc_stat(pid)
        group = (rc is not None and self.attempt is not None and rc > self.attempt) or (
            rc is None and self.fault_time is not None
        )
        # TaskD restarts the faulty ranks in place with the same TORCHELASTIC_RESTART_COUNT
        # (MC@v7.3.0 pt_agent.py:139-154, torch_patch.py:64-76): a new process of a rank whose
        # process ended while the others of its generation run on is a restart too
        latest = None
        for w in self.workers.values():  # in start order: the rank's newest process
            if w.rank == rank:
                latest = w
        in_place = (
            not group
            and latest is not None
            and latest.done
            and latest.restart_count == rc
            and any(w.rank != rank and not w.done for w in self.workers.values())
        )
        if self.attempt is None and self.fault_time is None and not self.workers:
            self.attempt = rc
        elif group or in_place:
            self._poll_gone()  # the processes reaped just before this start
            if self.fault_time is None and self.vanished is not None:
                # the agent reaped the failed process before its status could be read: it is the fault
                w, gone = self.vanished
                self._log(
                    "worker-fault",
                    rank=w.rank,
                    restart_count=w.restart_count,
                    when=gone,
                    pid=w.pid,
                    inferred=True,
                    generation=w.generation,
                )
                self.faulted.add(w.generation)
                self.fault_time = gone
                self.fault_ranks = {w.rank}
                self.fault_worker = w
            self._log_stopped()
            seconds = None if self.fault_time is None else round(when - self.fault_time, 6)
            self.generation += 1
            if group:
                self.group_generation = self.generation
            self._log(
                "restart",
                restart_count=rc,
                when=when,
                seconds=seconds,
                kind="in-place" if in_place else "group",
                generation=self.generation,
                fault_ranks=sorted(self.fault_ranks, key=lambda r: -1 if r is None else r),
            )
            self.attempt = rc
            self.fault_time = None
            self.fault_ranks = set()
            self.vanished = None
            self.fault_worker = None
            self.detected = False
        self.workers[pid] = Worker(pid, rank, local_rank, rc, st.starttime if st else None, generation=self.generation)
        self._log(
            "worker-start",
            rank=rank,
            restart_count=rc,
            when=when,
            pid=pid,
            local_rank=local_rank,
            generation=self.generation,
            warm=warm,
        )

    def _log_stopped(self) -> None:
        """At a restart: the fault's detection (if its process was gone unseen) and the moment every
        process that ended since the fault was gone (``workers-stopped``)."""
        if self.fault_time is None:
            return
        fault = self.fault_worker
        detected = self.fault_time
        if fault is not None and not self.detected:
            # gone before the launcher saw it go (or the status was read from a zombie it never saw
            # reaped): detected when it was seen gone, never before the fault
            detected = max(self.fault_time, fault.gone_at or fault.ended_at or time.time())
            self.detected = True
            self._log(
                "fault-detected",
                rank=fault.rank,
                restart_count=fault.restart_count,
                when=detected,
                pid=fault.pid,
                generation=fault.generation,
            )
        ended = [
            w for w in self.workers.values() if w.done and w.ended_at is not None and w.ended_at >= self.fault_time
        ]
        if fault is not None and fault not in ended:
            ended.append(fault)
        times = [t for t in (w.gone_at or w.ended_at for w in ended) if t is not None]
        self._log(
            "workers-stopped",
            when=max([detected, *times]),
            pids=sorted(w.pid for w in ended),
            generation=fault.generation if fault is not None else None,
        )

    def _worker_ended(self, w: Worker, code: Optional[int], gone: bool = False) -> None:
        w.done = True
        w.ended_at = time.time()
        if code == 0:
            kind = "worker-exit"
        elif (
            self.stop_reason is not None
            or self.ending
            or self.fault_time is not None
            or w.generation < self.group_generation
        ):
            # the agent (or we) stopped it, or it failed because of the fault being recovered; its
            # status is often reaped before we look
            kind = "worker-stop"
        elif code is None:
            kind = "worker-end"  # gone before we saw its status
            if self.vanished is None:
                self.vanished = (w, time.time())
        else:
            kind = "worker-fault"
            self.faulted.add(self.generation)
            self.fault_ranks = {w.rank}
            self.fault_time = w.ended_at
            self.last_fault, self.last_fault_code = w, code
            self.fault_worker, self.detected = w, False
        self._log(kind, rank=w.rank, exit_code=code, restart_count=w.restart_count, pid=w.pid, generation=w.generation)
        if gone:
            self._worker_gone(w)

    def _worker_gone(self, w: Worker) -> None:
        """Its process is gone: the agent reaped it (so the agent's monitor has seen the failure), or
        it ended before the launcher looked. Its command socket goes with it."""
        w.gone_at = time.time()
        if self.runtime is not None:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.runtime, WORKER_SOCKET % w.pid))
        if w is self.fault_worker and not self.detected and self.fault_time is not None:
            self.detected = True
            self._log(
                "fault-detected",
                rank=w.rank,
                restart_count=w.restart_count,
                when=w.gone_at,
                pid=w.pid,
                generation=w.generation,
            )

    # --- the drill ------------------------------------------------------------------------------------
    def status(self) -> Dict[str, Any]:
        """What ``resumable drill`` needs to know: the job, its restarts, whether it trains steadily."""
        live = [w for w in self.workers.values() if not w.done]
        why = None
        if self.stop_reason is not None or self.ending:
            why = "the launcher is stopping the training (%s)" % (self.stop_reason or "the agent ended")
        elif self.fault_time is not None:
            why = "a fault of rank %s is being recovered" % sorted(self.fault_ranks, key=str)
        elif not live:
            why = "no training process runs"
        else:
            behind = sorted((w for w in live if w.phase != "training"), key=lambda w: (w.rank is None, w.rank or 0))
            if behind:
                # every rank that is not there yet, in rank order (the order the processes reported in is chance)
                where = ["rank %s is %s" % (w.rank, PHASE_TEXT.get(w.phase, w.phase)) for w in behind[:DRILL_NAMED]]
                if len(behind) > DRILL_NAMED:
                    where.append("%d more" % (len(behind) - DRILL_NAMED))
                why = "%s (no first collective after the process group's start reported yet)" % ", ".join(where)
        return {
            "job": self.spec.job,
            "launcher_pid": self.pid,
            "launcher": self.spec.launcher,
            "timeline": self.spec.timeline_path,
            "max_restarts": self.spec.max_restarts,
            "restart_count": self.attempt,
            "generation": self.generation,
            "steady": why is None,
            "why_not": why,
            "hang_timeout": self.spec.hang_timeout,
            "start_timeout": self.spec.start_timeout,
            "workers": [
                {"rank": w.rank, "local_rank": w.local_rank, "pid": w.pid, "phase": w.phase, "generation": w.generation}
                for w in live
            ],
        }

    def _drill(self, m: Dict[str, Any]) -> Dict[str, Any]:
        """A drill's request: ``status``, or ``inject`` a fault into the live process of a local rank."""
        op = m.get("op")
        if op == "status":
            return {"ok": True, "status": self.status()}
        if op != "inject":
            return {"ok": False, "error": "unknown request"}
        fault, local_rank = m.get("fault"), _count(m.get("local_rank"))
        if fault not in DRILL_FAULTS or local_rank is None:
            return {"ok": False, "error": "a fault (kill, hang, exit) and a local rank are needed"}
        state = self.status()
        if not state["steady"]:
            return {"ok": False, "error": "not in steady training: %s" % state["why_not"]}
        w = next((w for w in self.workers.values() if not w.done and w.local_rank == local_rank), None)
        if w is None:
            return {"ok": False, "error": "no training process of local rank %d runs" % local_rank}
        details: Dict[str, Any] = {}
        if fault == "kill":
            signum = _count(m.get("signal"))
            if signum not in DRILL_SIGNALS:
                return {"ok": False, "error": "signal %s is not one a drill kills with" % m.get("signal")}
            details["signal"] = signal.Signals(signum).name
            send(w.pid, signum)
        elif fault == "hang":
            details["signal"] = "SIGSTOP"
            send(w.pid, signal.SIGSTOP)
        else:
            code = _count(m.get("code"))
            if code is None or not 1 <= code <= 255:
                return {"ok": False, "error": "an exit code from 1 to 255 is needed"}
            details["code"] = code
            if self.sock is None or self.runtime is None:
                return {"ok": False, "error": "the launcher has no socket"}
            try:
                command = jsonio.dumps({"command": "exit", "code": code}, indent=None).encode("utf-8")
                self.sock.sendto(command, os.path.join(self.runtime, WORKER_SOCKET % w.pid))
            except OSError as exc:
                return {"ok": False, "error": "rank %s takes no command (%s)" % (w.rank, exc.strerror or exc)}
        self._log(
            "drill",
            rank=w.rank,
            restart_count=w.restart_count,
            pid=w.pid,
            local_rank=w.local_rank,
            generation=w.generation,
            fault=fault,
            **details,
        )
        return {"ok": True, "rank": w.rank, "pid": w.pid, "generation": w.generation, "time": time.time()}

    def _check_hangs(self) -> None:
        """A training process silent for the plan's hang timeout is hung: recorded as the fault (its rank
        named, before a healthy peer's collective timeout blames that peer) and SIGKILLed, the signal a
        stopped process cannot ignore and the one TaskD's agent stops ranks with (MC@v7.3.0
        taskd/python/adaptor/patch/torch_patch.py:79-99), so the agent sees the rank fail and its
        recovery (in place or of the group) takes over, as for a crash."""
        timeout = self.spec.hang_timeout
        now = time.monotonic()
        last, self.last_hang_check = self.last_hang_check, now
        if timeout <= 0 or self.stop_reason is not None or self.ending:
            return
        if last is None or now - last > HANG_GAP_SECONDS:
            # the launcher itself did not run (starved of CPU, suspended): its socket queue may have
            # dropped beats, so silence is not evidence; every watch starts again from now
            for w in self.workers.values():
                if w.last_beat is not None:
                    w.last_beat = now
            return
        for w in list(self.workers.values()):
            if w.done or w.hung or w.last_beat is None or now - w.last_beat <= timeout:
                continue
            self._hung(
                w,
                "heartbeat",
                "sent no heartbeat for %.0f s (hang timeout %.0f s)" % (now - w.last_beat, timeout),
                silent_seconds=round(now - w.last_beat, RECORDED_DECIMALS),
                hang_timeout=timeout,
            )

    def _hung(self, w: Worker, cause: str, why: str, **fields: Any) -> None:
        """Record ``w`` as hung (the fault of its generation, or one more rank of the fault being
        recovered) and SIGKILL it, so that the agent recovers it as a crash."""
        w.hung = True
        self._log(
            "worker-hang",
            rank=w.rank,
            restart_count=w.restart_count,
            pid=w.pid,
            generation=w.generation,
            cause=cause,
            phase=w.phase,
            action="SIGKILL",
            **fields,
        )
        _say(
            "rank %s (pid %d, %s) %s: taken for hung and killed so that the agent recovers it"
            % (w.rank, w.pid, PHASE_TEXT.get(w.phase, w.phase), why)
        )
        if self.fault_time is None:
            self.faulted.add(w.generation)
            self.fault_ranks = {w.rank}
            self.fault_time = time.time()
            self.last_fault, self.last_fault_code = w, -signal.SIGKILL
            self.fault_worker, self.detected = w, False
        else:
            self.fault_ranks.add(w.rank)
        send(w.pid, signal.SIGKILL)

    def _check_starts(self) -> None:
        """No start ends in silence: in a generation where a process has begun to initialise its process
        group, one that has not finished it start_timeout after it started is hung. While a process of
        the generation has not begun, only such processes are taken, each start_timeout after its own
        start (the others wait for them: a waiting rank that started a little earlier is not blamed);
        when all began, every late one is (they wait for a peer on another pod). A generation with a
        fault is left to its recovery."""
        timeout = self.spec.start_timeout
        if timeout <= 0 or self.stop_reason is not None or self.ending:
            return
        now = time.monotonic()
        generations: Dict[int, List[Worker]] = {}
        for w in self.workers.values():
            generations.setdefault(w.generation, []).append(w)
        for generation, members in generations.items():
            if generation in self.faulted or not any(w.phase != "started" for w in members):
                continue  # being recovered already; or nothing here uses a process group (yet)
            live = [w for w in members if not w.done and not w.hung]
            waited_for = [w for w in live if w.phase == "started"] or [w for w in live if w.phase == "pg-init"]
            for w in [w for w in waited_for if now - w.began > timeout]:
                self._hung(
                    w,
                    "start-timeout",
                    "has not initialised its process group %.0f s after it started (start timeout %.0f s)"
                    % (now - w.began, timeout),
                    seconds=round(now - w.began, RECORDED_DECIMALS),
                    start_timeout=timeout,
                )

    def _check_recovery(self) -> None:
        """No recovery ends in silence: new processes start_timeout after the fault, or the training is
        stopped so that the Pod- or job-level rung takes over."""
        timeout = self.spec.start_timeout
        if self.fault_time is None or timeout <= 0 or self.stop_reason is not None or self.ending:
            return
        waited = time.time() - self.fault_time
        if waited <= timeout:
            return
        fault = self.fault_worker
        phase = "workers stopped" if self.detected else "fault not yet detected by the agent"
        self._log(
            "recovery-timeout",
            rank=fault.rank if fault else None,
            restart_count=fault.restart_count if fault else None,
            seconds=round(waited, RECORDED_DECIMALS),
            start_timeout=timeout,
            phase=phase,
            generation=fault.generation if fault else None,
        )
        _say(
            "no new training process %.0f s after the fault of rank %s (start timeout %.0f s; %s): the training "
            "is stopped so that the Pod- or job-level rung takes over"
            % (waited, fault.rank if fault else "?", timeout, phase)
        )
        self._stop_training("no new training process %.0f s after the fault" % timeout, signal.SIGTERM)

    def _poll_gone(self) -> None:
        """When the processes seen ended were reaped."""
        for w in list(self.workers.values()):
            if w.done and w.gone_at is None:
                st = proc_stat(w.pid)
                if st is None or (w.starttime is not None and st.starttime != w.starttime):
                    self._worker_gone(w)

    def _poll_workers(self) -> None:
        for w in list(self.workers.values()):
            if w.done and w.gone_at is not None:
                continue
            st = proc_stat(w.pid)
            gone = st is None or (w.starttime is not None and st.starttime != w.starttime)
            if w.done:
                if gone:
                    self._worker_gone(w)
            elif gone:
                self._worker_ended(w, None, gone=True)
            elif st is not None and st.state == "Z":
                self._worker_ended(w, None if st.wait_status is None else decode_status(st.wait_status))

    # --- children ------------------------------------------------------------------------------------
    def _spawn(self, argv: List[str], env: Dict[str, str], log: Optional[IO[bytes]] = None) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                argv,
                env=env,
                start_new_session=True,
                stdout=log,
                stderr=subprocess.STDOUT if log is not None else None,
            )
        except OSError as exc:
            raise ResumableError("cannot start %s (%s)" % (argv[0], exc), None, "Check the image.") from None

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            code = decode_status(status)
            if self.agent is not None and pid == self.agent.pid:
                self.agent.returncode = code
                self.agent_code = code
            elif self.manager is not None and pid == self.manager.pid:
                self.manager.returncode = code
                self.manager_code = code
                self._log("manager-exit", exit_code=code, pid=pid)
                if not self.stopping_manager and not self.ending and self.stop_reason is None:
                    self.manager_lost = True
                    self._log("manager-lost", exit_code=code, pid=pid, grace_seconds=self.spec.grace_seconds)
                    _say(
                        "the TaskD Manager exited with %d while the training runs (log: %s): without it TaskD "
                        "cannot start or recover workers, so the training is stopped (exit %d) for the Pod- or "
                        "job-level rung to take over" % (code, self.spec.manager_log, 128 + signal.SIGTERM)
                    )
                    self._stop_training("the TaskD Manager exited", signal.SIGTERM)
            elif pid in self.workers and not self.workers[pid].done:
                self._worker_ended(self.workers[pid], code, gone=True)
            elif pid in self.workers and self.workers[pid].gone_at is None:
                self._worker_gone(self.workers[pid])

    def _alive(self, proc: Optional[subprocess.Popen[bytes]]) -> bool:
        return proc is not None and proc.returncode is None

    def _stop_training(self, reason: str, signum: int) -> None:
        """Every descendant gets ``signum`` now and the grace period from now on."""
        self.stop_reason = reason
        self.deadline = time.monotonic() + self.spec.grace_seconds
        pids = descendants(self.pid)
        for pid in pids:
            send(pid, signum)
        self._log("stop", reason=reason, signal=signal.Signals(signum).name, pids=pids)

    def _forward(self) -> None:
        while self.signals:
            signum = self.signals.pop(0)
            self._log("signal", signal=signal.Signals(signum).name, grace_seconds=self.spec.grace_seconds)
            if self.first_signal is None:
                self.first_signal = signum
                if self.stop_reason is None:
                    self._stop_training("%s received" % signal.Signals(signum).name, signum)
                    continue
            for proc in (self.agent, self.manager):
                if proc is not None and self._alive(proc):
                    send(proc.pid, signum)

    def _kill_all(self, reason: str) -> None:
        """SIGKILL every descendant, then log (a failing log must not keep them alive)."""
        pids = descendants(self.pid)
        for pid in pids:
            send(pid, signal.SIGKILL)
        self._log("kill", reason=reason, pids=pids)

    def _wait_gone(self, pids: List[int], seconds: float) -> List[int]:
        end = time.monotonic() + seconds
        left = pids
        while True:
            self._reap()
            left = [p for p in left if (proc_stat(p) or ProcStat("Z", 0, 0, None)).state != "Z"]
            if not left or time.monotonic() >= end:
                return left
            time.sleep(POLL_SECONDS)

    def _stop_manager(self) -> None:
        if self.manager is None or not self._alive(self.manager):
            return
        self.stopping_manager = True
        send(self.manager.pid, signal.SIGTERM)
        wait = MANAGER_STOP_SECONDS
        if self.deadline is not None:
            wait = min(wait, max(0.0, self.deadline - time.monotonic()))
        if self._wait_gone([self.manager.pid], wait):
            send(self.manager.pid, signal.SIGKILL)
            self._wait_gone([self.manager.pid], 5.0)

    def _sweep(self) -> None:
        """Nothing the job started outlives the launcher."""
        left = [p for p in descendants(self.pid) if (proc_stat(p) or ProcStat("Z", 0, 0, None)).state != "Z"]
        if left and self.deadline is not None:
            # stopping: they already got the signal; they keep the rest of the grace period
            left = self._wait_gone(left, max(0.0, self.deadline - time.monotonic()))
            for pid in left:
                send(pid, signal.SIGKILL)
            if left:
                self._log("kill", reason="grace period of %.0f s over" % self.spec.grace_seconds, pids=left)
        elif left:
            self._log("kill", reason="left over after the training ended", pids=left)
            for pid in left:
                send(pid, signal.SIGTERM)
            for pid in self._wait_gone(left, SWEEP_SECONDS):
                send(pid, signal.SIGKILL)
        self._wait_gone(descendants(self.pid), 1.0)

    def exit_code(self) -> int:
        agent = self.agent_code if self.agent_code is not None else -signal.SIGKILL
        if agent == 0:
            return 0
        if self.first_signal is not None:
            return 128 + self.first_signal
        if self.manager_lost:
            return 128 + signal.SIGTERM
        w = self.last_fault
        if w is not None and self.last_fault_code is not None and w.generation == self.generation:
            return shell_code(self.last_fault_code)
        return shell_code(agent)

    # --- main ----------------------------------------------------------------------------------------
    def _prepare(self) -> Tuple[str, List[str]]:
        """Before anything starts: the runtime directory with the event socket, the log directory, TaskD's
        log directory and the timeline. On a failure nothing of it is left: the directories made
        here are removed again, the timeline too when this call created it (build_spec has checked
        what can be checked without writing, so this is a full disk, a permission or a race)."""
        spec = self.spec
        tmpdir = "Set TMPDIR to a short local directory this user can write."
        with os_errors("cannot make the launcher's runtime directory", spec.runtime_parent, tmpdir):
            runtime = tempfile.mkdtemp(prefix=RUNTIME_PREFIX, dir=spec.runtime_parent)
        created: List[str] = []
        new_timeline = not os.path.lexists(spec.timeline_path)
        try:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            address = os.path.join(runtime, SOCKET_NAME)
            with os_errors("cannot bind the launcher's event socket", address, tmpdir):
                self.sock.bind(address)
            self.sock.setblocking(False)
            logs = "Mount shared storage there or pass --log-dir."
            with os_errors("cannot write the job log directory", spec.log_dir, logs):
                created = make_dirs(spec.log_dir)
                for problem in filter(None, map(private_dir, spec.private_dirs)):
                    raise ResumableError(problem, spec.log_dir, "Fix the directory TaskD logs to (TASKD_LOG_PATH).")
                self.timeline = TimelineWriter(spec.timeline_path)
        except BaseException:
            if self.sock is not None:
                self.sock.close()
                self.sock = None
            shutil.rmtree(runtime, ignore_errors=True)
            if new_timeline and os.path.isfile(spec.timeline_path) and not os.path.getsize(spec.timeline_path):
                os.unlink(spec.timeline_path)
            for path in spec.private_dirs:
                if any(path == d or path.startswith(d + os.sep) for d in created):
                    with contextlib.suppress(OSError):
                        os.rmdir(path)
            remove_dirs(created)
            raise
        return runtime, created

    def run(self) -> int:
        spec = self.spec
        runtime, _ = self._prepare()
        self.runtime = runtime
        handlers = {}
        clean = False
        try:
            address = os.path.join(runtime, SOCKET_NAME)
            env = dict(spec.env)
            env[C.ENV_RESUMABLE_EVENTS] = address
            env[C.ENV_RESUMABLE_LAUNCHER_PID] = str(self.pid)
            subreaper = set_subreaper()
            for signum in (signal.SIGTERM, signal.SIGINT):
                handlers[signum] = signal.signal(signum, self._on_signal)
            self._log(
                "launch",
                job=spec.job,
                host=_host(),
                pid=self.pid,
                command=spec.command,
                manager=spec.manager,
                levels=spec.levels,
                budget=spec.budget,
                grace_seconds=spec.grace_seconds,
                subreaper=subreaper,
            )
            for text in spec.warnings:
                _say("warning: " + text)
            if spec.manager is not None:
                fix = "Remove what is there; the launch appends to a regular file."
                with os_errors("cannot write the TaskD Manager's log", spec.manager_log, fix):
                    log = open(open_append(spec.manager_log), "ab")  # noqa: SIM115
                with log:
                    self.manager = self._spawn(spec.manager, env, log)
                self._log("manager-start", pid=self.manager.pid, log=spec.manager_log)
            try:
                self.agent = self._spawn(spec.command, env)
            except ResumableError:
                self._stop_manager()
                raise
            while self.agent_code is None:
                self._read_events(POLL_SECONDS)
                self._forward()
                self._reap()
                self._poll_workers()
                self._check_hangs()
                self._check_starts()
                self._check_recovery()
                if self.deadline is not None and not self.killed and time.monotonic() >= self.deadline:
                    self.killed = True
                    self._kill_all("grace period of %.0f s over" % spec.grace_seconds)
            self._read_events(0)
            self._poll_workers()
            self.ending = True
            self._stop_manager()
            self._sweep()
            code = self.exit_code()
            self._log("exit", exit_code=code, agent_exit_code=self.agent_code, manager_exit_code=self.manager_code)
            clean = True
            return code
        finally:
            if not clean:  # an error of ours: leave nothing behind, killing before anything is logged
                self._kill_all("launcher error")
                self._wait_gone(descendants(self.pid), 5.0)
            for signum, old in handlers.items():
                signal.signal(signum, old)
            if self.sock is not None:
                self.sock.close()
            shutil.rmtree(runtime, ignore_errors=True)
            if self.timeline is not None:
                self.timeline.close()
                if self.timeline.failures:
                    _say(
                        "%d timeline write(s) to %s failed (last: %s); the events are incomplete"
                        % (self.timeline.failures, self.timeline.path, self.timeline.last_error)
                    )


def run(spec: LaunchSpec) -> int:
    return Supervisor(spec).run()
