"""Start-up hook ``resumable launch`` puts on the PYTHONPATH of the processes it starts.

Python imports ``sitecustomize`` at start-up, before the training script runs. This one:

1. runs ``resumable.runtime.workerhook.start()``, which in a training process (a grandchild of the
   launcher: launcher -> torchrun/msrun agent -> worker) reports its start to the launcher, sends its
   heartbeat, takes the launcher's commands and reports the phases of a recovery (process group
   ready, first collective); in every process it starts:
2. when the plan asks for it (torch >= 2.6 running), gives each restart attempt's workers their own
   key prefix on the agent's TCPStore once ``torch.distributed.rendezvous`` is imported (the edit
   MindCluster's 7.2 guide makes to rendezvous.py, HA72-075);
3. when the plan sets a compile mode, makes the plan's call right after the training script imports
   the framework's module: ``torch.npu.set_compile_mode(jit_compile=...)`` after ``torch_npu``
   (RTO 表9/表10), ``mindspore.device_context.ascend.op_tuning.op_compile(...)`` after ``mindspore``
   (MS-OPCOMPILE); user code is not edited and nothing is imported earlier than the script would;
4. in torchrun's agent with warm workers on, forks the workers of a restart from a warm process
   (``resumable.runtime.warm``);
5. then runs the ``sitecustomize`` it shadows, if any (Debian and conda Pythons ship one).

Nothing else lives in this directory: everything on it is importable by name in the training
processes. It never raises: a broken hook must not stop training. Without the launcher's variables
it does nothing but step 5 (and the store and compile steps, where their variables are set).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _chain() -> None:
    """Run the sitecustomize this file shadows (the next one on sys.path)."""
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _main() -> None:
    from resumable.runtime import workerhook

    workerhook.start()
    if workerhook.warm_workers_wanted():
        from resumable.runtime import warm

        warm.install()


with contextlib.suppress(Exception):  # never stop a training process
    _main()
try:
    _chain()
except Exception as exc:
    sys.stderr.write("resumable: the shadowed sitecustomize failed: %s: %s\n" % (type(exc).__name__, exc))
