"""The launcher's side of ``resumable drill`` (:mod:`.drill` is the client): the protocol and the injection.

The drill asks the launcher through its event socket (a JSON datagram, :data:`STATUS` or
:data:`INJECT`) and the launcher answers on the same socket: its status (the job, its restarts, whether
it trains steadily and why not) or the fault it injected into the live training process of a local
rank: :data:`FAULTS` ``kill`` (one of :data:`SIGNALS`), ``hang`` (SIGSTOP: the hang watch finds it
after the plan's hang timeout and kills it) or ``exit`` (a code from 1 to 255, sent to the process's
command socket, where its start-up hook exits with it). The launcher injects, so the drill signals no
process itself and can name none by mistake (a reused pid, a process of another job); an injection is
refused unless the job trains steadily. Each injection is logged as ``drill``.
"""

from __future__ import annotations

import signal
from typing import Any, Callable, Dict, Optional

from . import events as E
from .launch import LaunchSpec
from .proctable import send
from .recovery import PHASE_TEXT, RecoveryState, Worker

#: the requests
STATUS, INJECT = "status", "inject"
#: the faults a drill injects
FAULTS = ("kill", "hang", "exit")
#: the signals a drill may kill a training process with (each ends a process by default)
SIGNALS = (
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
#: how many ranks that are not training yet a refusal names (the rest are counted)
NAMED = 8

#: sends a command to a training process's command socket; the error text when it cannot
Command = Callable[[Worker, Dict[str, Any]], Optional[str]]


def _refused(error: str) -> Dict[str, Any]:
    return {"ok": False, "error": error}


class DrillServer:
    def __init__(
        self,
        spec: LaunchSpec,
        state: RecoveryState,
        launcher_pid: int,
        command: Command,
        log: Callable[[E.Event], None],
    ) -> None:
        self.spec = spec
        self.state = state
        self.launcher_pid = launcher_pid
        self.command = command
        self.log = log

    def why_not_steady(self) -> Optional[str]:
        state = self.state
        live = state.live()
        if state.stopping:
            return "the launcher is stopping the training (%s)" % (state.stop_reason or "the agent ended")
        if state.fault is not None:
            return "a fault of rank %s is being recovered" % sorted(state.fault.ranks, key=str)
        if not live:
            return "no training process runs"
        behind = sorted((w for w in live if w.phase != "training"), key=lambda w: (w.rank is None, w.rank or 0))
        if not behind:
            return None
        # every rank that is not there yet, in rank order (the order the processes reported in is chance)
        where = ["rank %s is %s" % (w.rank, PHASE_TEXT.get(w.phase, w.phase)) for w in behind[:NAMED]]
        if len(behind) > NAMED:
            where.append("%d more" % (len(behind) - NAMED))
        return "%s (no first collective after the process group's start reported yet)" % ", ".join(where)

    def status(self) -> Dict[str, Any]:
        """What ``resumable drill`` needs to know: the job, its restarts, whether it trains steadily."""
        why = self.why_not_steady()
        spec = self.spec
        return {
            "job": spec.job,
            "launcher_pid": self.launcher_pid,
            "launcher": spec.launcher,
            "timeline": spec.timeline_path,
            "max_restarts": spec.max_restarts,
            "restart_count": self.state.attempt,
            "generation": self.state.generation,
            "steady": why is None,
            "why_not": why,
            "hang_timeout": spec.hang_timeout,
            "start_timeout": spec.start_timeout,
            "workers": [
                {"rank": w.rank, "local_rank": w.local_rank, "pid": w.pid, "phase": w.phase, "generation": w.generation}
                for w in self.state.live()
            ],
        }

    def answer(self, m: Dict[str, Any]) -> Dict[str, Any]:
        """A drill's request: ``status``, or ``inject`` a fault into the live process of a local rank."""
        op = m.get("op")
        if op == STATUS:
            return {"ok": True, "status": self.status()}
        if op != INJECT:
            return _refused("unknown request")
        fault, local_rank = m.get("fault"), E.COUNT.take(m.get("local_rank"))
        if fault not in FAULTS or local_rank is None:
            return _refused("a fault (kill, hang, exit) and a local rank are needed")
        why = self.why_not_steady()
        if why is not None:
            return _refused("not in steady training: %s" % why)
        w = next((w for w in self.state.live() if w.local_rank == local_rank), None)
        if w is None:
            return _refused("no training process of local rank %d runs" % local_rank)
        details: Dict[str, Any] = {}
        error = self._inject(w, fault, m, details)
        if error is not None:
            return _refused(error)
        when = self.state.clock.time()
        self.log(
            E.new(
                E.DRILL,
                when,
                w.rank,
                restart_count=w.restart_count,
                pid=w.pid,
                local_rank=w.local_rank,
                generation=w.generation,
                fault=fault,
                **details,
            )
        )
        return {"ok": True, "rank": w.rank, "pid": w.pid, "generation": w.generation, "time": when}

    def _inject(self, w: Worker, fault: str, m: Dict[str, Any], details: Dict[str, Any]) -> Optional[str]:
        """Inject ``fault`` into ``w``; the reason it cannot be, or None."""
        if fault == "kill":
            signum = E.COUNT.take(m.get("signal"))
            if signum not in SIGNALS:
                return "signal %s is not one a drill kills with" % m.get("signal")
            details["signal"] = signal.Signals(signum).name
            send(w.pid, signum)
        elif fault == "hang":
            details["signal"] = "SIGSTOP"
            send(w.pid, signal.SIGSTOP)
        else:
            code = E.COUNT.take(m.get("code"))
            if code is None or not 1 <= code <= 255:
                return "an exit code from 1 to 255 is needed"
            details["code"] = code
            return self.command(w, {"command": "exit", "code": code})
        return None
