"""Warm workers (plan.launcher.warm_workers): the training processes of a restart are forked from a
process that has already imported the framework, instead of started as new interpreters.

Every restart of the group pays for a new Python importing torch (seconds on a CPU, many more with
torch_npu) before the script does anything (docs/runtime.md, benchmark). With warm workers:

- the start-up hook in torchrun's agent (a child of the launcher) replaces
  ``SubprocessHandler._popen``, where torch's elastic multiprocessing starts each worker
  (torch/distributed/elastic/multiprocessing/subprocess_handler/subprocess_handler.py); TaskD's
  patched agent starts its workers through the same class;
- at the first start it starts the *warm process* (``python -u -c ... zygote_main``, the first
  worker's environment), which imports torch and, where installed, torch_npu without touching a
  device, checks that the import opened no device and no file and started no thread (else the
  feature turns itself off with a warning), and waits; the first generation starts fresh;
- each later worker is forked from it with ``clone(CLONE_PARENT)``, so it is the agent's own child
  exactly as a fresh one (the agent waits for it, signals its process group, reaps it), and before
  the script runs it gets what a fresh ``Popen`` child of the agent would have: the agent's
  environment for it, argv, working directory, umask, resource limits, stdin/stdout/stderr, no other
  file descriptor, a new session, the signal mask of the calling thread, the dispositions a new
  Python sets up (SIGPIPE and SIGXFSZ ignored, SIGINT raising KeyboardInterrupt, the signals the
  agent ignores ignored, every other at its default), ``sys.argv``, ``sys.path[0]`` and a
  ``__main__`` as for ``python -u SCRIPT``; ``random`` (by Python's fork handlers), numpy's global
  generator and multiprocessing's authentication key are seeded afresh;
- a worker the warm process cannot start exactly like that (another interpreter or options, an
  environment that differs in a variable read at import, a resource limit above its own, a clone
  the kernel refuses) is started fresh, and the launcher's timeline says why (``warm`` events).

What is not the same, and cannot be: the framework's modules are already imported (that is the
point; they were found without the script's directory on sys.path), the interpreter's hash seed is
the warm process's, and ``/proc/PID/cmdline`` shows the warm process's command line.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import importlib
import importlib.machinery
import importlib.util
import json
import os
import platform
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from .. import constants as C
from . import workerhook

#: what the agent gives each worker and may differ between workers and restarts: torch 2.13
#: torch/distributed/elastic/agent/server/local_elastic_agent.py:415-436 (_start_workers) and :477-500
#: (_set_local_rank_env, CUDA_VISIBLE_DEVICES), multiprocessing/api.py:351,390
#: (TORCHELASTIC_ERROR_FILE), :237-270 (the file-timer watchdog); RESTART_FAULT_PROCESS_TYPE is set
#: by TaskD's agent for an in-place restart (MC@v7.3.0 pt_agent.py:139-154) and read by TaskD's worker
#: code, which the warm process does not import. The warm process imports torch and torch_npu with the
#: first worker's values of these; every other variable must be the same, or the worker starts fresh.
PER_WORKER = frozenset(
    {
        "LOCAL_RANK",
        "RANK",
        "GROUP_RANK",
        "ROLE_RANK",
        "ROLE_NAME",
        "LOCAL_WORLD_SIZE",
        "WORLD_SIZE",
        "GROUP_WORLD_SIZE",
        "ROLE_WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "TORCHELASTIC_RESTART_COUNT",
        "TORCHELASTIC_MAX_RESTARTS",
        "TORCHELASTIC_RUN_ID",
        "TORCHELASTIC_USE_AGENT_STORE",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING",
        "TORCHELASTIC_ERROR_FILE",
        "TORCHELASTIC_TIMER_FILE",
        "TORCHELASTIC_ENABLE_FILE_TIMER",
        "CUDA_VISIBLE_DEVICES",
        "RESTART_FAULT_PROCESS_TYPE",
        C.ENV_RESUMABLE_WARM_ZYGOTE,
    }
)
#: the module and class where torch's elastic agent starts a worker process
HANDLER_MODULE = "torch.distributed.elastic.multiprocessing.subprocess_handler.subprocess_handler"
#: the frameworks the warm process imports (each where installed)
FRAMEWORKS = ("torch", "torch_npu")
#: device files: one open after the import means the import initialised a device
DEVICE_PREFIXES = ("/dev/davinci", "/dev/devmm", "/dev/hisi", "/dev/nvidia", "/dev/dri", "/dev/accel", "/dev/kfd")
#: clone(2): the child's parent is the caller's parent
CLONE_PARENT = 0x00008000
#: the clone system call's number (asm/unistd.h); its arguments are all 0 but the flags, so their order
#: (which differs between the two) does not matter
SYS_CLONE = {"x86_64": 56, "aarch64": 220}
#: seconds the agent waits for the warm process's answer, and the warm process for a forked worker
ANSWER_SECONDS = 30.0
SETUP_SECONDS = 10.0
#: the largest request (the environment travels in it); a larger one starts fresh
MESSAGE_BYTES = 1 << 20
CODE = "from resumable.runtime.warm import zygote_main; zygote_main()"


# --- messages with file descriptors -------------------------------------------------------------------------


def send_message(sock: socket.socket, item: Dict[str, Any], fds: Sequence[int] = ()) -> None:
    data = json.dumps(item).encode("utf-8")
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    sock.sendmsg([data], ancillary)


def receive_message(sock: socket.socket, max_fds: int = 3) -> Tuple[Optional[Dict[str, Any]], List[int]]:
    """One message and the descriptors that came with it; (None, []) at the end of the stream."""
    fds = array.array("i")
    data, ancillary, _, _ = sock.recvmsg(MESSAGE_BYTES, socket.CMSG_LEN(max_fds * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    if not data:
        return None, list(fds)
    item = json.loads(data.decode("utf-8"))
    return (item if isinstance(item, dict) else None), list(fds)


# --- the process state a fresh Popen child of the agent would get ----------------------------------------------


def _status(name: str) -> Optional[str]:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith(name + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def _signal_set(field: str) -> List[int]:
    mask = int(_status(field) or "0", 16)
    return [n for n in range(1, 65) if mask >> (n - 1) & 1]


def ignored_signals() -> List[int]:
    """The signals this process ignores (the kernel's view: /proc/self/status SigIgn)."""
    return _signal_set("SigIgn")


def handled_signals() -> Dict[int, str]:
    """Each signal's disposition as the kernel sees it: ``ignored``, ``caught`` or absent (default)."""
    out = {n: "ignored" for n in _signal_set("SigIgn")}
    out.update({n: "caught" for n in _signal_set("SigCgt")})
    return out


def rlimits() -> Dict[str, List[int]]:
    out: Dict[str, List[int]] = {}
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            with contextlib.suppress(OSError, ValueError):
                soft, hard = resource.getrlimit(getattr(resource, name))
                out[name] = [soft, hard]
    return out


def umask() -> int:
    value = _status("Umask")
    if value is not None:
        return int(value, 8)
    old = os.umask(0o022)  # pragma: no cover (kernels before 4.7 have no Umask line)
    os.umask(old)
    return old


def dispositions(ignored: Sequence[int], imported: Sequence[int] = ()) -> Dict[int, Any]:
    """What a new Python started by ``Popen`` (restore_signals) sets up: SIGPIPE and SIGXFSZ ignored,
    SIGINT -> KeyboardInterrupt unless it was ignored, what the parent ignores still ignored (an
    ignored signal stays ignored across exec), the rest at the default. The signals in ``imported``
    are left as they are: the framework's import set them, as it does in a fresh worker."""
    out: Dict[int, Any] = {}
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP) or signum in imported:
            continue
        if signum in (signal.SIGPIPE, signal.SIGXFSZ) or signum in ignored:
            out[signum] = signal.SIG_IGN
        elif signum == signal.SIGINT:
            out[signum] = signal.default_int_handler
        else:
            out[signum] = signal.SIG_DFL
    return out


# --- fork with the caller's parent --------------------------------------------------------------------------


def clone_parent() -> int:
    """``os.fork()``, but the child's parent is this process's parent (clone(2) CLONE_PARENT), with
    Python's own fork handling around it (PyOS_BeforeFork, PyOS_AfterFork_Child/_Parent). Only for
    a process with one thread. 0 in the child, its pid in the parent."""
    number = SYS_CLONE.get(platform.machine())
    if number is None:
        raise OSError(38, "the clone system call's number is not known on %s" % platform.machine())
    libc = ctypes.PyDLL(None, use_errno=True)  # PyDLL: the GIL stays held across the call, as in os.fork
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    syscall.argtypes = [ctypes.c_long, ctypes.c_ulong] + [ctypes.c_void_p] * 4
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = int(syscall(number, CLONE_PARENT | int(signal.SIGCHLD), None, None, None, None))
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    error = ctypes.get_errno()
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(error, os.strerror(error))
    return pid


# --- the agent's side ---------------------------------------------------------------------------------------------


class WarmProcess:
    """A worker forked warm, as the agent uses it: what torch's elastic multiprocessing uses of
    ``subprocess.Popen`` (pid, args, returncode, poll, wait, send_signal, terminate, kill), with
    Popen's behaviour. It is the agent's own child (CLONE_PARENT), so waitpid works on it."""

    def __init__(self, pid: int, args: Sequence[str]) -> None:
        self.pid = pid
        self.args = list(args)
        self.returncode: Optional[int] = None
        self.stdin = self.stdout = self.stderr = None
        self._lock = threading.Lock()

    def _collect(self, flags: int) -> Optional[int]:
        with self._lock:
            if self.returncode is not None:
                return self.returncode
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:
                self.returncode = 0  # as Popen: the status is gone (SIGCHLD ignored)
                return self.returncode
            if pid == self.pid:
                self.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            return self.returncode

    def poll(self) -> Optional[int]:
        return self._collect(os.WNOHANG)

    def wait(self, timeout: Optional[float] = None) -> int:
        if timeout is None:
            while True:
                code = self._collect(0)
                if code is not None:
                    return code
        end = time.monotonic() + timeout
        delay = 0.0005
        while True:
            code = self.poll()
            if code is not None:
                return code
            left = end - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(min(delay, left, 0.05))
            delay *= 2

    def send_signal(self, sig: int) -> None:
        self.poll()
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Warm:
    """The agent's warm process: started at the first worker start, asked for every later one."""

    def __init__(self, reporter: Optional[workerhook.Reporter]) -> None:
        self.reporter = reporter
        self.sock: Optional[socket.socket] = None
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.ready = False
        self.off: Optional[str] = None
        self.told: Set[Tuple[str, str]] = set()
        #: the restart count of the first start (fresh by design: not worth a report)
        self.first: Optional[str] = None
        self.lock = threading.Lock()

    def report(self, state: str, reason: str = "", **fields: Any) -> None:
        key = (state, reason)
        if key in self.told or self.reporter is None:
            return
        self.told.add(key)
        self.reporter.send("warm", state=state, reason=reason, **fields)

    def turn_off(self, reason: str) -> None:
        self.off = reason
        self.report("off", reason)
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
                self.proc.wait(5)
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def start(self, env: Dict[str, str]) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        zenv = dict(env)
        zenv[C.ENV_RESUMABLE_WARM_ZYGOTE] = "1"
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-u", "-c", CODE, str(child.fileno())],
                env=zenv,
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except OSError as exc:
            parent.close()
            self.turn_off("the warm process could not start (%s)" % exc)
            return
        finally:
            child.close()
        self.sock = parent
        self.report("starting", pid=self.proc.pid)
        threading.Thread(target=self._await_ready, name="resumable-warm", daemon=True).start()

    def _await_ready(self) -> None:
        """The warm process's first message (ready, or why not), reported when it comes."""
        sock = self.sock
        try:
            item, _ = receive_message(sock, 0) if sock is not None else (None, [])
        except (OSError, ValueError):
            item = None
        with self.lock:
            if self.off is not None:
                return
            if item is None or not item.get("ready"):
                self.turn_off(str(item.get("reason")) if item else "the warm process ended before it was ready")
                return
            self.ready = True
            self.report(
                "ready",
                import_seconds=item.get("import_seconds"),
                pid=self.proc.pid if self.proc else None,
                time=item.get("time"),
            )

    def spawn(
        self, args: Sequence[str], env: Dict[str, str], stdout: Optional[Any], stderr: Optional[Any]
    ) -> Optional[WarmProcess]:
        """A worker forked warm, or None: the caller starts it fresh."""
        with self.lock:
            if self.off is not None:
                return None
            if self.proc is None:
                self.first = env.get(C.ENV_TORCHELASTIC_RESTART_COUNT)
                self.start(env)  # the first generation starts fresh while the warm process imports
                return None
            if self.proc.poll() is not None:
                self.turn_off("the warm process exited with %s" % self.proc.returncode)
                return None
            if not self.ready:
                if env.get(C.ENV_TORCHELASTIC_RESTART_COUNT) != self.first:
                    self.report("cold", "the warm process has not finished importing yet")
                return None
            fds = [0, stdout.fileno() if stdout is not None else 1, stderr.fileno() if stderr is not None else 2]
            blocked = sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))
            request = {
                "argv": [str(a) for a in args],
                "env": env,
                "cwd": os.getcwd(),
                "umask": umask(),
                "rlimits": rlimits(),
                "ignored": ignored_signals(),
                "blocked": blocked,
            }
            assert self.sock is not None
            try:
                send_message(self.sock, request, fds)
                readable, _, _ = select.select([self.sock], [], [], ANSWER_SECONDS)
                if not readable:
                    self.turn_off("the warm process did not answer within %.0f s" % ANSWER_SECONDS)
                    return None
                answer, _ = receive_message(self.sock, 0)
            except (OSError, ValueError) as exc:
                self.turn_off("the warm process cannot be asked (%s)" % exc)
                return None
            if answer is None:
                self.turn_off("the warm process ended")
                return None
            reap = answer.get("reap")
            if isinstance(reap, int) and reap > 0:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(reap, 0)
            pid = answer.get("pid")
            if isinstance(pid, int) and pid > 0:
                return WarmProcess(pid, args)
            self.report("cold", str(answer.get("cold") or "no answer"))
            return None


_warm: Optional[Warm] = None


def _patch_handler() -> None:
    module = sys.modules[HANDLER_MODULE]
    handler: Any = getattr(module, "SubprocessHandler", None)
    original = getattr(handler, "_popen", None)
    if original is None or _warm is None:
        if _warm is not None:
            _warm.turn_off("this torch has no SubprocessHandler._popen to start workers through")
        return

    def _popen(self: Any, args: Sequence[str], env: Dict[str, str]) -> Any:
        proc: Optional[WarmProcess] = None
        if _warm is not None:
            try:
                proc = _warm.spawn(args, env, getattr(self, "_stdout", None), getattr(self, "_stderr", None))
            except Exception as exc:  # never keep a worker from starting
                _warm.turn_off("%s: %s" % (type(exc).__name__, exc))
        return proc if proc is not None else original(self, args, env)

    handler._popen = _popen


def install() -> None:
    """In torchrun's agent: start the workers of restarts warm (called by the start-up hook)."""
    global _warm
    address = os.environ.get(C.ENV_RESUMABLE_EVENTS)
    _warm = Warm(workerhook.Reporter(address) if address else None)
    workerhook.after_import(HANDLER_MODULE, _patch_handler, "start the workers warm")


# --- the warm process ---------------------------------------------------------------------------------------------


def _open_fds(keep: Sequence[int]) -> List[str]:
    out = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd in keep:
            continue
        try:
            out.append(os.readlink("/proc/self/fd/%d" % fd))
        except OSError:
            continue  # the directory listing's own descriptor, closed by now
    return out


def _import_problem(keep: Sequence[int]) -> Optional[str]:
    """Why forking from this process would not give fresh-looking workers, after the import."""
    opened = _open_fds(keep)
    devices = [p for p in opened if p.startswith(DEVICE_PREFIXES)]
    if devices:
        return "importing the framework opened a device (%s): forked workers would share it" % ", ".join(devices)
    torch: Any = sys.modules.get("torch")
    for name in ("cuda", "npu"):
        initialised = getattr(getattr(torch, name, None), "is_initialized", None)
        with contextlib.suppress(Exception):
            if callable(initialised) and initialised():
                return "importing the framework initialised torch.%s: forked workers would share the device" % name
    if opened:
        return "importing the framework left files open (%s): a fresh worker has none" % ", ".join(opened)
    threads = _status("Threads")
    if threads is not None and threads != "1":
        return "importing the framework started %s threads: a process with threads cannot be forked safely" % threads
    return None


def _warm_up(keep: Sequence[int]) -> Dict[str, Any]:
    began = time.time()
    imported = []
    for name in FRAMEWORKS:
        if name != "torch" and importlib.util.find_spec(name) is None:
            continue
        try:
            importlib.import_module(name)
        except BaseException as exc:  # a broken framework: workers start fresh and say it themselves
            return {"ready": False, "reason": "importing %s failed (%s: %s)" % (name, type(exc).__name__, exc)}
        imported.append(name)
    problem = _import_problem(keep)
    if problem is not None:
        return {"ready": False, "reason": problem}
    return {"ready": True, "import_seconds": round(time.time() - began, 3), "imported": imported, "time": time.time()}


def _refusal(request: Dict[str, Any], start_env: Dict[str, str]) -> Optional[str]:
    """Why this worker cannot be forked exactly as a fresh one would start, or None."""
    argv = request.get("argv")
    if not isinstance(argv, list) or len(argv) < 3 or not all(isinstance(a, str) for a in argv):
        return "an unexpected command line"
    if argv[0] != sys.executable or argv[1] != "-u" or argv[2].startswith("-"):
        return "the command is not `%s -u SCRIPT` (%s)" % (sys.executable, " ".join(argv[:3]))
    cwd = request.get("cwd")
    if not isinstance(cwd, str) or not os.path.isdir(cwd):
        return "the working directory %r is not a directory" % (cwd,)
    if not os.path.isfile(os.path.join(cwd, argv[2])):
        return "the script %s is not a file" % argv[2]
    env = request.get("env")
    if not isinstance(env, dict):
        return "an unexpected environment"
    names = set(env) | set(start_env)
    differ = sorted(n for n in names - PER_WORKER if env.get(n) != start_env.get(n))
    if differ:
        return "the environment differs from the warm process's in %s" % ", ".join(differ[:8])
    for name, (_, hard) in (request.get("rlimits") or {}).items():
        limit = getattr(resource, name, None)
        if limit is None:
            continue
        _, own = resource.getrlimit(limit)
        if own != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > own):
            return "%s %s is above the warm process's %s" % (name, hard, own)
    if _status("Threads") != "1":
        return "the warm process has more than one thread"
    return None


def _become(request: Dict[str, Any], fds: Sequence[int], setup: int, imported: Sequence[int] = ()) -> None:
    """In the forked child: the state a fresh ``Popen`` child of the agent would have. What can fail
    comes first; a failure writes to ``setup`` and exits at once (the agent reaps the process); the
    last step closes every descriptor but 0, 1 and 2, ``setup`` too, which tells the warm process
    that the worker runs (it answers the agent only then: the process group exists by then)."""
    try:
        os.setsid()
        os.chdir(request["cwd"])
        os.umask(int(request["umask"]))
        for name, (soft, hard) in request["rlimits"].items():
            limit = getattr(resource, name, None)
            if limit is not None:
                with contextlib.suppress(ValueError, OSError):
                    resource.setrlimit(limit, (soft, hard))
        for signum, handler in dispositions(request.get("ignored") or [], imported).items():
            with contextlib.suppress(OSError, ValueError):
                signal.signal(signum, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, [s for s in request.get("blocked") or [] if 0 < s < 65])
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.write(setup, b"0")
        os._exit(127)
    os.closerange(3, os.sysconf("SC_OPEN_MAX") if os.sysconf("SC_OPEN_MAX") > 0 else 1 << 16)


def _reseed() -> None:
    """What a fresh interpreter has and a fork shares: numpy's global generator and multiprocessing's
    authentication key get fresh values (``random`` is reseeded by Python's own fork handlers)."""
    numpy_random: Any = sys.modules.get("numpy.random")
    with contextlib.suppress(Exception):
        if numpy_random is not None:
            numpy_random.seed()
    process: Any = sys.modules.get("multiprocessing.process")
    with contextlib.suppress(Exception):
        if process is not None:
            process.current_process().authkey = os.urandom(32)


def _silent_hook(*args: Any) -> None:
    return None


def _run_script(argv: List[str]) -> None:
    """Run ``argv[2]`` as ``python -u SCRIPT ARGS`` runs it: in ``__main__``, with ``__file__``,
    ``sys.argv`` and ``sys.path[0]`` as CPython sets them (3.9+: ``__file__`` absolute), an uncaught
    exception printed from the script's own frames and exit status 1 (SIGINT for KeyboardInterrupt)."""
    import builtins

    script = argv[2]
    path = os.path.abspath(script) if sys.version_info >= (3, 9) else script
    sys.argv = argv[2:]
    if hasattr(sys, "orig_argv"):
        sys.orig_argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.realpath(script)))
    main = sys.modules["__main__"]
    scope = main.__dict__
    scope.clear()
    scope.update(
        {
            "__name__": "__main__",
            "__doc__": None,
            "__package__": None,
            "__spec__": None,
            "__annotations__": {},
            "__builtins__": builtins,
            "__file__": path,
            "__cached__": None,
            "__loader__": importlib.machinery.SourceFileLoader("__main__", path),
        }
    )
    with open(script, "rb") as handle:
        code = compile(handle.read(), path, "exec", dont_inherit=True)
    try:
        exec(code, scope)
    except SystemExit:
        raise
    except BaseException:
        kind, value, trace = sys.exc_info()
        while trace is not None and trace.tb_frame.f_globals is not scope:
            trace = trace.tb_next
        if value is not None:
            value.__traceback__ = trace  # a hook that formats the exception itself sees the script's frames too
        sys.excepthook(kind, value, trace)  # type: ignore[arg-type]
        sys.excepthook = _silent_hook  # Python's own end: exit status 1, or SIGINT for KeyboardInterrupt
        raise


def _serve(sock: socket.socket, start_env: Dict[str, str]) -> Tuple[Dict[str, Any], List[int], int]:
    """Answer requests until one forks: returns in the forked child only."""
    while True:
        try:
            request, fds = receive_message(sock)
        except (OSError, ValueError):
            request, fds = {}, []
        if request is None:
            os._exit(0)  # the agent is gone
        why = _refusal(request, start_env) if request else "an unreadable request"
        if why is not None or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            send_message(sock, {"cold": why or "the request carried no stdin, stdout and stderr"})
            continue
        read, write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = clone_parent()
        except OSError as exc:
            os.close(read)
            os.close(write)
            for fd in fds:
                os.close(fd)
            send_message(sock, {"cold": "clone(CLONE_PARENT) failed: %s" % exc})
            continue
        if pid == 0:
            os.close(read)
            with contextlib.suppress(OSError):
                os.close(sock.detach())
            return request, fds, write
        os.close(write)
        for fd in fds:
            os.close(fd)
        ready, _, _ = select.select([read], [], [], SETUP_SECONDS)
        failed = os.read(read, 1) if ready else b"?"
        os.close(read)
        if failed:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            send_message(sock, {"cold": "the forked worker could not take the agent's state", "reap": pid})
        else:
            send_message(sock, {"pid": pid})


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG


def zygote_main() -> None:
    """The warm process: ``python -u -c CODE FD`` started by the agent with the first worker's
    environment; FD is its end of the agent's socket pair."""
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # -c put the working directory first; a worker gets its script's directory there
    _die_with_parent()
    fd = int(sys.argv[1])
    sock = socket.socket(fileno=fd)
    start_env = dict(os.environ)
    before = handled_signals()
    state = _warm_up((0, 1, 2, fd))
    after = handled_signals()
    imported = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
    send_message(sock, state)
    if not state.get("ready"):
        return
    request, fds, setup = _serve(sock, start_env)
    _become(request, fds, setup, imported)
    os.environ.clear()
    os.environ.update(request["env"])
    _reseed()
    workerhook.start(warm=True)
    _run_script(request["argv"])
