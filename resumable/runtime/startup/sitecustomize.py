"""Start-up hook ``resumable launch`` puts on the PYTHONPATH of the processes it starts.

Python imports ``sitecustomize`` at start-up, before the training script runs. This one:

1. in a training process (a grandchild of the launcher: launcher -> torchrun/msrun agent -> worker),
   sends one datagram to the launcher: pid, rank, local rank, TORCHELASTIC_RESTART_COUNT. The
   launcher writes it to the recovery timeline and watches the pid to see when it ends; then a daemon
   thread sends a heartbeat datagram every ``$RESUMABLE_HEARTBEAT_SECONDS``, so the launcher sees a
   process that stops running (SIGSTOP, a wedged interpreter) as hung;
2. when the plan asks for it (torch >= 2.6), gives each restart attempt's workers their own key
   prefix on the agent's TCPStore once ``torch.distributed.rendezvous`` is imported (the edit
   MindCluster's 7.2 guide makes to rendezvous.py, HA72-075);
3. when the plan sets a compile mode, makes the plan's call right after the training script imports
   the framework's module: ``torch.npu.set_compile_mode(jit_compile=...)`` after ``torch_npu``
   (RTO 表9/表10), ``mindspore.device_context.ascend.op_tuning.op_compile(...)`` after ``mindspore``
   (MS-OPCOMPILE); user code is not edited and nothing is imported earlier than the script would;
4. then runs the ``sitecustomize`` it shadows, if any (Debian and conda Pythons ship one).

It never raises: a broken hook must not stop training. Without the launcher's variables it does
nothing but step 4.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import socket
import sys
import time
from types import ModuleType
from typing import Any, Callable, Optional, Sequence

_HERE = os.path.dirname(os.path.abspath(__file__))


def _parent_of(pid: int) -> Optional[int]:
    """The parent pid of ``pid`` from /proc (Linux), or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            data = handle.read().decode("ascii", "replace")
        return int(data[data.rindex(")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _int(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _report(C: Any, address: str) -> None:
    env = os.environ
    if env.get(C.ENV_MS_ROLE) == C.MS_ROLE_SCHEDULER:  # MindSpore's scheduler process trains nothing
        return
    rank = env.get(C.ENV_RANK)
    if rank is None:
        rank = env.get(C.ENV_RANK_ID)
    message = {
        "event": "worker-start",
        "pid": os.getpid(),
        "rank": _int(rank),
        "local_rank": _int(env.get(C.ENV_LOCAL_RANK)),
        "restart_count": _int(env.get(C.ENV_TORCHELASTIC_RESTART_COUNT)),
        "time": time.time(),
    }
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.sendto(json.dumps(message).encode("utf-8"), address)
    finally:
        sock.close()


def _beat(address: str, period: float) -> None:
    """The heartbeat thread's loop: one small datagram every ``period`` seconds, never blocking (a full
    queue drops the beat) and never raising. A SIGSTOPped or wedged process (the GIL held for good)
    sends none, which is how the launcher sees it hang."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)
    data = json.dumps({"event": "heartbeat", "pid": os.getpid()}).encode("utf-8")
    while True:
        with contextlib.suppress(OSError):
            sock.sendto(data, address)
        time.sleep(period)


def _start_heartbeat(address: str, period: Optional[float]) -> None:
    if period is None or not period > 0:
        return
    import threading

    threading.Thread(target=_beat, args=(address, period), name="resumable-heartbeat", daemon=True).start()


def _float(value: Optional[str]) -> Optional[float]:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


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


class _AfterImport(importlib.abc.MetaPathFinder):
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


def _prefix_store_per_attempt(C: Any) -> None:
    """torch >= 2.6 reuses the agent's TCPStore across the restarts of a static rendezvous; the keys
    of the previous attempt (peer addresses) are still there, so restarted workers connect to dead
    peers. Each attempt gets its own prefix, as MindCluster's rendezvous.py edit (HA72-075) does."""
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


def _chain() -> None:
    """Run the sitecustomize this file shadows (the next one on sys.path)."""
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _main() -> None:
    try:
        from resumable import constants as C
    except Exception:
        return
    env = os.environ
    address = env.get(C.ENV_RESUMABLE_EVENTS)
    launcher = _int(env.get(C.ENV_RESUMABLE_LAUNCHER_PID))
    worker = launcher is not None and _parent_of(os.getppid()) == launcher
    if address and worker:
        with contextlib.suppress(OSError):
            _report(C, address)
        with contextlib.suppress(Exception):
            _start_heartbeat(address, _float(env.get(C.ENV_RESUMABLE_HEARTBEAT)))
    if env.get(C.ENV_RESUMABLE_ATTEMPT_STORE) == "1" and env.get(C.ENV_TORCHELASTIC_RESTART_COUNT) is not None:
        sys.meta_path.insert(
            0,
            _AfterImport(
                "torch.distributed.rendezvous",
                lambda: _prefix_store_per_attempt(C),
                "give the restart its own store keys",
            ),
        )
    jit = env.get(C.ENV_RESUMABLE_JIT_COMPILE)
    after = env.get(C.ENV_RESUMABLE_COMPILE_AFTER, "torch_npu")
    call = _COMPILE_CALLS.get(after)
    if jit in ("0", "1") and call is not None and after not in sys.modules:
        sys.meta_path.insert(0, _AfterImport(after, lambda: call(jit == "1"), "apply the compile mode"))


with contextlib.suppress(Exception):  # never stop a training process
    _main()
try:
    _chain()
except Exception as exc:
    sys.stderr.write("resumable: the shadowed sitecustomize failed: %s: %s\n" % (type(exc).__name__, exc))
