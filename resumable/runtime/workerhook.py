"""What the start-up hook does inside the processes ``resumable launch`` starts (``startup/sitecustomize.py``
only loads this module and calls :func:`start`).

In a training process (a grandchild of the launcher: launcher -> agent -> worker):

- one ``worker-start`` datagram to the launcher (pid, rank, local rank, TORCHELASTIC_RESTART_COUNT,
  ``warm`` when it was forked warm);
- a daemon thread that sends a heartbeat every ``$RESUMABLE_HEARTBEAT_SECONDS`` and listens on its own
  socket ``<launcher runtime dir>/w<pid>.sock`` for the launcher's one command, ``exit`` with a code
  (``resumable drill``'s exit fault: ``os._exit`` from that thread, so a main thread blocked in C code
  exits at once);
- the phases of its recovery, without a change to the script: ``pg-init`` when it enters
  ``torch.distributed.init_process_group``, ``pg-ready`` when that returns (``pg-error`` with the
  message when it raises), ``first-collective`` when its first collective (or optimizer step) after
  that returns. ``init_process_group`` and the collectives of ``torch.distributed`` are wrapped once
  torch.distributed is imported; the collectives only until the first one returns, then the original
  functions are put back.

In every process it starts: the per-attempt store keys and the compile mode (see the sitecustomize
docstring). In torchrun's agent (a child of the launcher) with warm workers on, the start-up hook
installs :mod:`.warm` (``warm_workers_wanted``), which builds on this module.

Nothing here raises into the process it runs in; a report that cannot be sent is dropped. The
module is imported in every training process, so it imports only the standard library and
``resumable.constants`` at start; torch is touched only once the script has imported it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import socket
import sys
import threading
import time
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Sequence

from .. import constants as C

#: ``<runtime dir>/w<pid>.sock``: where a training process takes the launcher's commands
WORKER_SOCKET = "w%d.sock"
#: a reported error message is cut to this many characters
ERROR_CHARS = 300
#: what counts as the first communication after the process group is ready (torch.distributed names)
COLLECTIVES = (
    "all_reduce",
    "broadcast",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "reduce",
    "gather",
    "scatter",
    "all_gather_object",
    "broadcast_object_list",
    "gather_object",
    "scatter_object_list",
    "send",
    "recv",
    "isend",
    "irecv",
    "batch_isend_irecv",
)


def parent_of(pid: int) -> Optional[int]:
    """The parent pid of ``pid`` from /proc (Linux), or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            data = handle.read(4096).decode("ascii", "replace")
        return int(data[data.rindex(")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _int(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _float(value: Optional[str]) -> Optional[float]:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class Reporter:
    """Sends this process's datagrams to the launcher's event socket; never raises, never blocks."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.pid = os.getpid()

    def send(self, event: str, **fields: Any) -> None:
        message: Dict[str, Any] = {"event": event, "pid": self.pid, "time": time.time()}
        message.update({k: v for k, v in fields.items() if v is not None or k not in message})
        with contextlib.suppress(Exception):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                sock.sendto(json.dumps(message).encode("utf-8"), socket.MSG_DONTWAIT, self.address)
            finally:
                sock.close()


#: this process's reporter: set in a training process only (None in the agent, the warm process, tools)
_reporter: Optional[Reporter] = None


def send(event: str, **fields: Any) -> None:
    if _reporter is not None and _reporter.pid == os.getpid():
        _reporter.send(event, **fields)


# --- heartbeat and the launcher's command ---------------------------------------------------------------


def _command(data: bytes) -> None:
    """One command datagram from the launcher: ``{"command": "exit", "code": 1..255}``."""
    try:
        message = json.loads(data.decode("utf-8"))
    except ValueError:
        return
    if not isinstance(message, dict) or message.get("command") != "exit":
        return
    code = message.get("code")
    if isinstance(code, int) and not isinstance(code, bool) and 1 <= code <= 255:
        os._exit(code)


def _beat(sock: socket.socket, address: str, period: float, listen: bool) -> None:
    """The heartbeat thread: one small datagram every ``period`` seconds (never blocking: a full queue
    drops the beat), and between beats the launcher's commands when ``sock`` is bound (``listen``). A
    SIGSTOPped or wedged process (the GIL held for good) sends none, which is how the launcher sees it
    hang."""
    data = json.dumps({"event": "heartbeat", "pid": os.getpid()}).encode("utf-8")
    while True:
        with contextlib.suppress(OSError):
            sock.sendto(data, socket.MSG_DONTWAIT, address)
        end = time.monotonic() + period
        while listen:
            left = end - time.monotonic()
            if left <= 0:
                break
            sock.settimeout(left)
            try:
                _command(sock.recv(4096))
            except socket.timeout:
                break
            except OSError:
                time.sleep(max(0.0, end - time.monotonic()))
                break
        if not listen:
            time.sleep(period)


def _start_heartbeat(address: str, period: Optional[float]) -> None:
    """The socket is made here, before the script runs (its descriptor number is the same in every
    process, fresh or forked warm); the thread then beats and listens on it."""
    if period is None or not period > 0:
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(os.path.join(os.path.dirname(address), WORKER_SOCKET % os.getpid()))
        listen = True
    except OSError:
        listen = False
    thread = threading.Thread(target=_beat, args=(sock, address, period, listen), name="resumable-heartbeat")
    thread.daemon = True
    thread.start()


# --- the phases: process group and first collective -------------------------------------------------------

_lock = threading.Lock()
#: name -> (original function, wrapper) of the collectives wrapped until the first one returns
_armed: Dict[str, Any] = {}
_step_hook: List[Any] = []


def _modules() -> List[ModuleType]:
    names = ("torch.distributed", "torch.distributed.distributed_c10d")
    return [sys.modules[n] for n in names if n in sys.modules]


def _first(op: str) -> None:
    """The first collective (or optimizer step) after the process group became ready has returned:
    report it once and put the original functions back."""
    with _lock:
        if not _armed and not _step_hook:
            return
        for name, (original, wrapper) in list(_armed.items()):
            for module in _modules():
                if getattr(module, name, None) is wrapper:
                    setattr(module, name, original)
        _armed.clear()
        for handle in _step_hook:
            with contextlib.suppress(Exception):
                handle.remove()
        del _step_hook[:]
    send("first-collective", op=op)


def _wrap_collective(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def collective(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        with contextlib.suppress(Exception):
            _first(name)
        return result

    return collective


def _arm() -> None:
    """Wrap the collectives (and add a global optimizer step hook) until the first one returns."""
    with _lock:
        if _armed or _step_hook:
            return
        modules = _modules()
        for name in COLLECTIVES:
            original = next((getattr(m, name) for m in modules if callable(getattr(m, name, None))), None)
            if original is None:
                continue
            wrapper = _wrap_collective(name, original)
            _armed[name] = (original, wrapper)
            for module in modules:
                if getattr(module, name, None) is original:
                    setattr(module, name, wrapper)
        optimizer = sys.modules.get("torch.optim.optimizer")
        register = getattr(optimizer, "register_optimizer_step_post_hook", None)
        if callable(register):
            with contextlib.suppress(Exception):
                _step_hook.append(register(lambda *a, **k: _first("optimizer.step")))


def _message(exc: BaseException) -> str:
    text = "%s: %s" % (type(exc).__name__, exc)
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3] + "..."


def _wrap_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        send("pg-init")
        began = time.time()
        try:
            result = original(*args, **kwargs)
        except BaseException as exc:
            send("pg-error", seconds=round(time.time() - began, 6), error=_message(exc))
            raise
        send("pg-ready", seconds=round(time.time() - began, 6))
        with contextlib.suppress(Exception):
            _arm()
        return result

    return init_process_group


#: the init_process_group wrappers this process installed (inherited by a warm fork)
_init_wrappers: List[Any] = []


def patch_distributed() -> None:
    """Wrap ``init_process_group`` of torch.distributed (both names of it), once."""
    if _init_wrappers:
        return
    modules = _modules()
    original = next((m.init_process_group for m in modules if hasattr(m, "init_process_group")), None)
    if not callable(original):
        return
    wrapper = _wrap_init(original)
    _init_wrappers.append(wrapper)
    for module in modules:
        if getattr(module, "init_process_group", None) is original:
            setattr(module, "init_process_group", wrapper)  # noqa: B010


# --- running an action right after a module's import ---------------------------------------------------------


class _Wrapped(importlib.abc.Loader):
    """A loader that runs ``action`` once the module it loads has executed."""

    def __init__(self, loader: importlib.abc.Loader, action: Callable[[], None], what: str) -> None:
        self._loader = loader
        self._action = action
        self._what = what

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        try:
            self._action()
        except Exception as exc:
            sys.stderr.write("resumable: could not %s: %s: %s\n" % (self._what, type(exc).__name__, exc))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class AfterImport(importlib.abc.MetaPathFinder):
    """Wraps the loader of one module so that ``action`` runs right after its import."""

    def __init__(self, name: str, action: Callable[[], None], what: str) -> None:
        self._name = name
        self._action = action
        self._what = what

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != self._name:
            return None
        sys.meta_path.remove(self)
        if "." in fullname:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        else:
            spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _Wrapped(spec.loader, self._action, self._what)
        return spec


def after_import(name: str, action: Callable[[], None], what: str) -> None:
    """Run ``action`` right after ``name`` is imported, or now when it already is (a warm fork)."""
    if name in sys.modules:
        try:
            action()
        except Exception as exc:
            sys.stderr.write("resumable: could not %s: %s: %s\n" % (what, type(exc).__name__, exc))
        return
    sys.meta_path.insert(0, AfterImport(name, action, what))


# --- per-attempt store keys and the compile mode ------------------------------------------------------------


def _torch_reuses_agent_store() -> bool:
    """torch >= 2.6 gives every restart of a static rendezvous the same TCPStore with no key prefix
    (rendezvous.py ``_create_c10d_store``: "We create a new TCPStore for every retry so no need to add
    prefix", while static_tcp_rendezvous.py keeps the store it made first); torch < 2.6 adds
    ``/worker/attempt_<n>`` itself. Decided by the torch that runs, not the profile's version."""
    torch = sys.modules.get("torch")
    version = str(getattr(torch, "__version__", ""))
    digits = []
    for part in version.split("+")[0].split(".")[:2]:
        number = "".join(c for c in part if c.isdigit()) if part[:1].isdigit() else ""
        digits.append(int(number) if number else 0)
    return tuple(digits) >= (2, 6)


def _prefix_store_per_attempt() -> None:
    """The workers of restart n use ``PrefixStore('/worker/attempt_<n>')`` on the agent's store, as
    MindCluster's rendezvous.py edit (HA72-075) and TaskD 7.3's patch do, where the running torch needs
    it: otherwise restarted workers read the previous attempt's peer addresses and fail to connect
    (issue 27: three generations failed in Gloo connectFullMesh, ``Connection refused``)."""
    if not _torch_reuses_agent_store():
        return
    from torch.distributed.distributed_c10d import PrefixStore

    # not `import torch.distributed.rendezvous as ...`: torch.distributed.rendezvous is also a function
    rendezvous: Any = sys.modules["torch.distributed.rendezvous"]

    original = rendezvous._create_c10d_store

    def create(*args: Any, **kwargs: Any) -> Any:
        store = original(*args, **kwargs)
        if os.environ.get(C.ENV_TORCHELASTIC_USE_AGENT_STORE) == "True":
            attempt = os.environ.get(C.ENV_TORCHELASTIC_RESTART_COUNT, "0")
            store = PrefixStore(C.ATTEMPT_STORE_PREFIX + attempt, store)
        return store

    rendezvous._create_c10d_store = create


def _set_compile_mode(jit_compile: bool) -> None:
    import torch

    npu: Any = getattr(torch, "npu")  # noqa: B009 (torch_npu adds it; torch's stubs do not know it)
    npu.set_compile_mode(jit_compile=jit_compile)


def _op_compile(jit_compile: bool) -> None:
    importlib.import_module("mindspore.device_context.ascend.op_tuning").op_compile(jit_compile)


#: the module whose import triggers the compile-mode call, and the call (plan.launcher.compile_call)
_COMPILE_CALLS = {"torch_npu": _set_compile_mode, "mindspore": _op_compile}


# --- start ----------------------------------------------------------------------------------------------------


def role() -> str:
    """``worker`` (a grandchild of the launcher), ``agent`` (its child), ``warm`` (the warm process
    of warm workers) or ``other``."""
    env = os.environ
    if env.get(C.ENV_RESUMABLE_WARM_ZYGOTE) == "1":
        return "warm"
    launcher = _int(env.get(C.ENV_RESUMABLE_LAUNCHER_PID))
    if launcher is None:
        return "other"
    parent = os.getppid()
    if parent == launcher:
        return "agent"
    if parent_of(parent) == launcher:
        return "worker"
    return "other"


def start(warm: bool = False) -> None:
    """What the hook does in a process that starts now: at interpreter start, or in a worker forked
    warm once its environment is in place (``warm``). Never raises."""
    global _reporter
    env = os.environ
    kind = role()
    address = env.get(C.ENV_RESUMABLE_EVENTS)
    scheduler = env.get(C.ENV_MS_ROLE) == C.MS_ROLE_SCHEDULER  # MindSpore's scheduler trains nothing
    if kind == "worker" and address and not scheduler:
        _reporter = Reporter(address)
        rank = env.get(C.ENV_RANK)
        _reporter.send(
            "worker-start",
            rank=_int(rank if rank is not None else env.get(C.ENV_RANK_ID)),
            local_rank=_int(env.get(C.ENV_LOCAL_RANK)),
            restart_count=_int(env.get(C.ENV_TORCHELASTIC_RESTART_COUNT)),
            warm=warm,
        )
        with contextlib.suppress(Exception):
            _start_heartbeat(address, _float(env.get(C.ENV_RESUMABLE_HEARTBEAT)))
    if kind in ("worker", "warm") and not warm:
        after_import("torch.distributed", patch_distributed, "watch the process group's start")
    attempt_store = env.get(C.ENV_RESUMABLE_ATTEMPT_STORE) == "1"
    # a warm fork inherits the patched function, which reads its own environment
    if attempt_store and env.get(C.ENV_TORCHELASTIC_RESTART_COUNT) is not None and not warm:
        after_import("torch.distributed.rendezvous", _prefix_store_per_attempt, "give the restart its own store keys")
    jit = env.get(C.ENV_RESUMABLE_JIT_COMPILE)
    after = env.get(C.ENV_RESUMABLE_COMPILE_AFTER, "torch_npu")
    call = _COMPILE_CALLS.get(after)
    # a fresh process makes the call right after the script imports the module; a warm fork has it
    # imported already (the warm process does not make the call: the worker does, now)
    if jit in ("0", "1") and call is not None and kind != "warm" and (after not in sys.modules or warm):
        after_import(after, lambda: call(jit == "1"), "apply the compile mode")


def warm_workers_wanted() -> bool:
    """This process is torchrun's agent of a launch with warm workers on: the start-up hook then
    installs ``resumable.runtime.warm`` (which builds on this module, so it is not imported here)."""
    return role() == "agent" and os.environ.get(C.ENV_RESUMABLE_WARM) == "1"
