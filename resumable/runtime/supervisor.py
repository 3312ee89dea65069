"""Runs a :class:`~.launch.LaunchSpec`: the TaskD Manager and the launcher as supervised children.

The supervisor holds the processes, the signals and the event socket. What it sees goes to the
recovery state (:mod:`.recovery`: the processes, their generations, the fault being recovered, one
named phase), which returns the events to write (:mod:`.events`); three watchers read that state once
per loop and take what is late through it: :mod:`.hangwatch`, :mod:`.startwatch`, :mod:`.recoverywatch`.
The drill's requests are answered by :mod:`.drill_server`.

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
  the fault with its rank (marking every running generation: the generation rule of :mod:`.recovery`),
  and SIGKILLed, so the agent recovers it as a crash.
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
  ``drill`` (:mod:`.drill_server`).
- The exit code is the training's: 0 on success; otherwise the exit code of the worker whose
  failure ended the job (the last fault recorded since the last restart; 128 + N for a worker killed
  by signal N, as a shell reports it, so that restartPolicy ExitCode can tell a crash from a user
  error), else the agent's; 128 + N when the launcher itself was stopped by signal N.
"""

from __future__ import annotations

import contextlib
import ctypes
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
from typing import IO, Any, Dict, List, Optional, Tuple

from .. import constants as C
from .. import jsonio
from ..errors import ResumableError, escape_controls
from ..fileio import make_dirs, open_append, os_errors, remove_dirs
from . import events as E
from .drill_server import DrillServer
from .hangwatch import HangWatch
from .launch import RUNTIME_PREFIX, SOCKET_NAME, LaunchSpec, _host
from .podenv import private_dir
from .proctable import ProcStat, descendants, proc_stat, send
from .recovery import PHASE_EVENTS, PHASE_TEXT, SYSTEM_CLOCK, Clock, RecoveryState, Taken, Worker
from .recoverywatch import RecoveryWatch
from .startwatch import StartWatch
from .timeline import TimelineWriter
from .workerhook import COLLECTIVES, ERROR_CHARS, WORKER_SOCKET

#: seconds between looks at the children, the workers and the event socket
POLL_SECONDS = 0.02
#: the TaskD Manager gets this long to stop after the training has ended
MANAGER_STOP_SECONDS = 10.0
#: leftover descendants get this long after SIGTERM before SIGKILL
SWEEP_SECONDS = 2.0
PR_SET_CHILD_SUBREAPER = 36
#: what the agent's warm-workers hook reports
WARM_STATES = ("starting", "ready", "off", "cold")
#: a report's error text, as the timeline keeps it
ERROR_TEXT = E.Text(limit=ERROR_CHARS)


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


def _say(text: str) -> None:
    """One line on stderr; never raises (a closed or full stderr must not stop the supervisor)."""
    try:
        sys.stderr.write("resumable launch: %s\n" % escape_controls(text))
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Supervisor:
    def __init__(self, spec: LaunchSpec, clock: Clock = SYSTEM_CLOCK) -> None:
        self.spec = spec
        self.pid = os.getpid()
        self.clock = clock
        self.state = RecoveryState(clock)
        self.hangs = HangWatch(spec.hang_timeout)
        self.starts = StartWatch(spec.start_timeout)
        self.recovery = RecoveryWatch(spec.start_timeout)
        self.drill = DrillServer(spec, self.state, self.pid, self._command, self._write)
        self.agent: Optional[subprocess.Popen[bytes]] = None
        self.manager: Optional[subprocess.Popen[bytes]] = None
        self.agent_code: Optional[int] = None
        self.manager_code: Optional[int] = None
        self.signals: List[int] = []
        self.first_signal: Optional[int] = None
        self.deadline: Optional[float] = None
        self.killed = False
        self.stopping_manager = False
        self.manager_lost = False
        self.sock: Optional[socket.socket] = None
        self.timeline: Optional[TimelineWriter] = None
        self.runtime: Optional[str] = None

    @property
    def workers(self) -> Dict[int, Worker]:
        return self.state.workers

    # --- events --------------------------------------------------------------------------------------
    def _log(self, event: str, **fields: Any) -> None:
        if self.timeline is not None:
            self.timeline.write(event, **fields)

    def _write(self, event: E.Event) -> None:
        if self.timeline is not None:
            self.timeline.write_event(event)

    def _write_all(self, events: List[E.Event]) -> None:
        for event in events:
            self._write(event)

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
            if isinstance(message, dict):
                self._report(message, sender)

    def _report(self, message: Dict[str, Any], sender: Any) -> None:
        """One datagram: a training process's start, heartbeat or phase, the warm hook, a drill."""
        kind = message.get("event")
        if kind == E.WORKER_START:
            self._worker_started(message)
        elif kind == "heartbeat":
            pid = message.get("pid")
            if isinstance(pid, int):
                self.state.beat(pid)
        elif isinstance(kind, str) and kind in PHASE_EVENTS:
            self._worker_phase(kind, message)
        elif kind == E.WARM:
            self._warm(message)
        elif kind == E.DRILL and sender:
            self._answer(sender, self.drill.answer(message))

    def _when(self, m: Dict[str, Any]) -> float:
        """A report's time: the sender's when it is a plausible Unix time, else now."""
        when: Optional[float] = E.WHEN.take(m.get("time"))
        return when if when is not None and when > 0 else self.clock.time()

    def _worker_phase(self, kind: str, m: Dict[str, Any]) -> None:
        """A training process entered or finished its process group's initialisation, or its first
        collective returned (the start-up hook's reports)."""
        pid = E.COUNT.take(m.get("pid"))
        w = self.workers.get(pid) if pid else None
        if w is None or w.done:
            return
        fields: Dict[str, Any] = {}
        if kind in (E.PG_READY, E.PG_ERROR):
            fields["seconds"] = E.SECONDS.take(m.get("seconds"))
        if kind == E.PG_ERROR:
            fields["error"] = ERROR_TEXT.take(m.get("error"))
        if kind == E.FIRST_COLLECTIVE:
            op = m.get("op")
            fields["op"] = op if op in COLLECTIVES or op == "optimizer.step" else None
        self._write(self.state.reported(w, kind, self._when(m), **fields))

    def _warm(self, m: Dict[str, Any]) -> None:
        """What the agent's warm-workers hook reports: starting, ready, off (with why), cold (a worker
        started fresh, and why)."""
        state = m.get("state")
        if state not in WARM_STATES:
            return
        reason = ERROR_TEXT.take(m.get("reason")) or ""
        fields: Dict[str, Any] = {"state": state, "reason": reason}
        seconds = E.SECONDS.take(m.get("import_seconds"))
        if seconds is not None:
            fields["import_seconds"] = seconds
        self._log(E.WARM, when=self._when(m), pid=E.COUNT.take(m.get("pid")), **fields)
        if state == "off":
            _say("warning: warm workers are off, every worker starts fresh: %s" % reason)

    def _answer(self, to: Any, reply: Dict[str, Any]) -> None:
        """A reply to the drill (never blocking: a full queue drops it, the drill asks again)."""
        if self.sock is None:
            return
        with contextlib.suppress(OSError, ValueError, TypeError):
            self.sock.sendto(jsonio.dumps(reply, indent=None).encode("utf-8"), to)

    def _command(self, w: Worker, command: Dict[str, Any]) -> Optional[str]:
        """``command`` to ``w``'s command socket (the drill's exit); why it could not be sent, or None."""
        if self.sock is None or self.runtime is None:
            return "the launcher has no socket"
        try:
            self.sock.sendto(
                jsonio.dumps(command, indent=None).encode("utf-8"), os.path.join(self.runtime, WORKER_SOCKET % w.pid)
            )
        except OSError as exc:
            return "rank %s takes no command (%s)" % (w.rank, exc.strerror or exc)
        return None

    def _worker_started(self, m: Dict[str, Any]) -> None:
        # a report is a datagram: only the fields of the types the timeline holds are taken
        pid = E.COUNT.take(m.get("pid"))
        if pid is None or pid == 0:
            return
        rank, rc = E.COUNT.take(m.get("rank")), E.COUNT.take(m.get("restart_count"))
        st = proc_stat(pid)
        if self.state.restart_kind(rank, rc) is not None:
            self._poll_gone()  # the processes reaped just before this start
        self._write_all(
            self.state.started(
                pid,
                rank,
                E.COUNT.take(m.get("local_rank")),
                rc,
                st.starttime if st else None,
                self._when(m),
                warm=m.get("warm") is True,
            )
        )

    def _worker_ended(self, w: Worker, code: Optional[int], gone: bool = False) -> None:
        self._write_all(self.state.ended(w, code))
        if gone:
            self._worker_gone(w)

    def _worker_gone(self, w: Worker) -> None:
        """Its process is gone: the agent reaped it (so the agent's monitor has seen the failure), or
        it ended before the launcher looked. Its command socket goes with it."""
        if self.runtime is not None:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.runtime, WORKER_SOCKET % w.pid))
        self._write_all(self.state.gone(w))

    # --- the watchers --------------------------------------------------------------------------------
    def _watch(self) -> None:
        now = self.clock.monotonic()
        for taken in self.hangs.look(self.state, now) + self.starts.look(self.state, now):
            self._kill_hung(taken)
        expired = self.recovery.look(self.state, self.clock.time())
        if expired is not None:
            self._write(expired.event)
            _say(expired.message)
            self._stop_training(expired.reason, signal.SIGTERM)

    def _kill_hung(self, taken: Taken) -> None:
        """A process a watcher took for hung: logged, said, SIGKILLed so that the agent recovers it."""
        w = taken.worker
        self._write_all(taken.events)
        _say(
            "rank %s (pid %d, %s) %s: taken for hung and killed so that the agent recovers it"
            % (w.rank, w.pid, PHASE_TEXT.get(w.phase, w.phase), taken.why)
        )
        send(w.pid, signal.SIGKILL)

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
                self._log(E.MANAGER_EXIT, exit_code=code, pid=pid)
                if not self.stopping_manager and not self.state.stopping:
                    self.manager_lost = True
                    self._log(E.MANAGER_LOST, exit_code=code, pid=pid, grace_seconds=self.spec.grace_seconds)
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
        self.state.stop(reason)
        self.deadline = time.monotonic() + self.spec.grace_seconds
        pids = descendants(self.pid)
        for pid in pids:
            send(pid, signum)
        self._log(E.STOP, reason=reason, signal=signal.Signals(signum).name, pids=pids)

    def _forward(self) -> None:
        while self.signals:
            signum = self.signals.pop(0)
            self._log(E.SIGNAL, signal=signal.Signals(signum).name, grace_seconds=self.spec.grace_seconds)
            if self.first_signal is None:
                self.first_signal = signum
                if self.state.stop_reason is None:
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
        self._log(E.KILL, reason=reason, pids=pids)

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
                self._log(E.KILL, reason="grace period of %.0f s over" % self.spec.grace_seconds, pids=left)
        elif left:
            self._log(E.KILL, reason="left over after the training ended", pids=left)
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
        failed = self.state.failed_code()
        return shell_code(agent if failed is None else failed)

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
                E.LAUNCH,
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
                self._log(E.MANAGER_START, pid=self.manager.pid, log=spec.manager_log)
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
                self._watch()
                if self.deadline is not None and not self.killed and time.monotonic() >= self.deadline:
                    self.killed = True
                    self._kill_all("grace period of %.0f s over" % spec.grace_seconds)
            self._read_events(0)
            self._poll_workers()
            self.state.agent_ended()
            self._stop_manager()
            self._sweep()
            code = self.exit_code()
            self._log(E.EXIT, exit_code=code, agent_exit_code=self.agent_code, manager_exit_code=self.manager_code)
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
