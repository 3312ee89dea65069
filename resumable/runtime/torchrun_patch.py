"""``resumable image patch-torchrun``: PLR's run.py edit, made idempotent, verified and reversible.

MindCluster's guides patch torch's launcher with sed (PLR 构建镜像:
``sed -i '/import os/i import taskd.python.adaptor.patch' .../torch/distributed/run.py``; RTO
表2: ``import mindx_elastic.api`` before ``import logging``). That sed inserts once per matching line,
again on every rebuild on top of a patched image, and does nothing at all when torch's run.py has no
such line (torch 2.13's run.py has no ``import logging``). Here:

- the line and anchor come from the plan (by MindCluster release);
- the result always has the line exactly once; a second run changes nothing;
- the import line of the other known patch (TaskD vs the Elastic Agent, which reaches end of life in
  7.3.0: "delete the mindx_elastic.api line from run.py", upgrade guide) is removed and reported;
- the module to import must be installed, the anchor must be a top-level line of run.py, and after
  the edit ``import torch.distributed.run`` must succeed in a fresh interpreter, otherwise the file
  is put back as it was and the command fails;
- then a one-process job runs through the patched torchrun on the CPU (gloo: init, one all_reduce),
  with a TaskD Manager beside it when the patch is TaskD's (its agent starts workers only on the
  Manager's command, MC@v7.3.0 framework/agent/pt_agent/pt_agent.py:156-171), bounded by
  SMOKE_TIMEOUT; a failure restores the file and names both versions;
- ``--undo`` removes the line again, giving back the original bytes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from .. import constants as C
from .. import fileio
from ..errors import ResumableError
from ..plan.image import module_of_import
from . import installed
from .proctable import descendants, send

#: what ``python -m torch.distributed.run`` and torchrun import
RUN_MODULE = "torch.distributed.run"
#: torch's run.py is about 40 KB (torch 2.13); a file this large is not it
RUN_PY_MAX_BYTES = 4 << 20

#: Run in a fresh interpreter after the edit: does the (possibly replaced) ``launch_agent`` accept
#: every keyword torch's own ``elastic_launch.__call__`` passes it? TaskD 7.3.0 and 26.1.0 replace it
#: with ``patch_launch_agent(config, entrypoint, args)`` (MC@v7.3.0 taskd/python/adaptor/patch/
#: torch_patch.py:275-279), while torch >= 2.4 passes ``health_check_server=``: torchrun then dies
#: at launch although the module imports. Prints the missing keywords, torch's version and the
#: patch package's version.
LAUNCH_CHECK = r"""
import inspect, re, sys
import torch, torch.distributed.run
try:
    from torch.distributed.launcher import api
    api.elastic_launch, api.launch_agent
except (ImportError, AttributeError):
    sys.exit(0)  # a torch without the elastic launcher: nothing passes launch_agent anything
try:
    from importlib import metadata
    other = metadata.version(sys.argv[1])
except Exception:
    other = "unknown"
source = inspect.getsource(api.elastic_launch.__call__)
call = source[source.find("launch_agent("):]
passed = re.findall(r"\b(\w+)\s*=", call)
params = inspect.signature(api.launch_agent).parameters.values()
if any(p.kind == p.VAR_KEYWORD for p in params):
    missing = []
else:
    names = {p.name for p in params}
    missing = [k for k in passed if k not in names]
if missing:
    print("torch %s passes %s to launch_agent, which %s %s (%s) does not accept" % (
        getattr(torch, "__version__", "?"), ", ".join(k + "=" for k in missing), sys.argv[1], other,
        getattr(api.launch_agent, "__module__", "?")))
    sys.exit(1)
"""


#: the one-process job through the patched torchrun (torch import, rendezvous, TaskD's agent start-up,
#: one all_reduce) must end within this many seconds; a loaded build machine needs a margin
SMOKE_TIMEOUT = 240.0

#: the training process of the one-process job: gloo, one all_reduce, the result written to argv[1]
SMOKE_WORKER = """
import sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
dist.destroy_process_group()
with open(sys.argv[1], "w") as out:
    out.write("%g" % t.item())
"""


class PatchResult(NamedTuple):
    path: str
    changed: bool
    message: str


def count_line(text: str, line: str) -> int:
    """How many lines of ``text`` are exactly ``line`` (trailing blanks ignored), as top-level code."""
    return sum(1 for row in text.splitlines() if row.rstrip() == line)


def _eol(rows: Sequence[str]) -> str:
    for row in rows:
        if row.endswith("\r\n"):
            return "\r\n"
        if row.endswith("\n"):
            return "\n"
    return "\n"


def patched_text(text: str, line: str, anchor: str, others: Sequence[str] = ()) -> Tuple[str, List[str]]:
    """``text`` with ``line`` exactly once, before the first top-level ``anchor`` line when it has to
    be inserted, and without any of ``others``. Returns the new text and what was done."""
    rows = text.splitlines(keepends=True)
    done: List[str] = []
    kept: List[str] = []
    seen = 0
    for row in rows:
        bare = row.rstrip()
        if bare == line:
            seen += 1
            if seen > 1:
                continue
        elif bare in others:
            done.append("removed `%s`" % bare)
            continue
        kept.append(row)
    if seen > 1:
        done.append("removed %d extra copies of `%s`" % (seen - 1, line))
    if seen == 0:
        for i, row in enumerate(kept):
            if row.rstrip() == anchor:
                kept.insert(i, line + _eol(kept))
                done.append("inserted `%s` before `%s`" % (line, anchor))
                break
        else:
            raise ResumableError(
                "has no top-level `%s` line to insert `%s` before (PLR's and RTO's sed would silently do nothing "
                "here)" % (anchor, line),
                None,
                "This torch release does not match the MindCluster release in the profile: check "
                "jobs[].image.torch against the release's supported torch versions.",
            )
    return "".join(kept), done


def unpatched_text(text: str, line: str) -> Tuple[str, int]:
    rows = text.splitlines(keepends=True)
    kept = [row for row in rows if row.rstrip() != line]
    return "".join(kept), len(rows) - len(kept)


def read_run_py(path: str) -> str:
    """The text of torch's run.py (the bounded reader: a regular file of at most
    :data:`RUN_PY_MAX_BYTES`, UTF-8); line endings kept as they are."""
    return fileio.read_text(
        path,
        what="torch launcher module (torch/distributed/run.py)",
        limit=RUN_PY_MAX_BYTES,
        error=ResumableError,
        fix="Reinstall torch in this Python (the base image must carry it)",
    )


def _write(path: str, text: str) -> None:
    """Atomic replace keeping the mode; the old inode is left alone (hard links, layers)."""
    directory = os.path.dirname(path)
    try:
        mode = os.stat(path).st_mode & 0o7777
        fd, tmp = tempfile.mkstemp(prefix=".run.py.", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except PermissionError:
        raise ResumableError(
            "cannot be written (permission denied)",
            path,
            "Run it as the user that installed torch (root in an image build).",
        ) from None
    except OSError as exc:
        raise ResumableError("cannot be written (%s)" % exc, path, "Check the file system.") from None


def locate_run_py() -> str:
    path = installed.torch_run_py()
    if path is None:
        raise ResumableError(
            "torch is not installed",
            sys.executable,
            "patch-torchrun edits torch/distributed/run.py of the torch this Python imports; install torch "
            "first (the base image must carry torch and torch_npu).",
        )
    return path


def _check_launch(package: str) -> Tuple[bool, str]:
    try:
        proc = subprocess.run(
            [sys.executable, "-c", LAUNCH_CHECK, package],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=installed.IMPORT_CHECK_TIMEOUT,
        )
    except (subprocess.TimeoutExpired, OSError) as exc:
        return False, "the launch check did not run (%s)" % exc
    text = proc.stdout.decode("utf-8", "replace").strip().splitlines()
    return proc.returncode == 0, " | ".join(text[-2:]) if text else "exit code %d" % proc.returncode


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _end(proc: subprocess.Popen[bytes], seconds: float) -> None:
    """Stop ``proc`` and everything below it: SIGTERM, SIGKILL after ``seconds``."""
    if proc.poll() is None:
        send(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=seconds)
    for pid in [proc.pid, *descendants(proc.pid)]:
        send(pid, signal.SIGKILL)
    proc.wait()


def _tail(path: str, lines: int = 3) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - 4096))
            rows = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(rows[-lines:])


def smoke_job(package: str, run_py: str, timeout: Optional[float] = None) -> Tuple[bool, str]:
    """Run a one-process gloo job through the patched torchrun (``python -m torch.distributed.run``,
    a static rendezvous on 127.0.0.1 as ``resumable launch`` gives it), with the TaskD Manager and
    libtaskd.so preloaded when ``package`` is taskd. Nothing is left running; bounded by ``timeout``."""
    if not os.path.isfile(os.path.join(os.path.dirname(run_py), "launcher", "api.py")):
        return True, "no elastic launcher in this torch: no job to run"
    work = tempfile.mkdtemp(prefix="resumable-patch-check-")
    procs: List[subprocess.Popen[bytes]] = []
    try:
        env: Dict[str, str] = dict(os.environ)
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
        if package == "taskd":
            lib = installed.libtaskd_path()
            if lib is not None and os.path.isfile(lib):
                env[C.ENV_LD_PRELOAD] = ":".join([lib] + [p for p in env.get(C.ENV_LD_PRELOAD, "").split(":") if p])
            env[C.ENV_TASKD_LOG_PATH] = os.path.join(work, "taskd")
            os.mkdir(env[C.ENV_TASKD_LOG_PATH], 0o750)
            os.chmod(env[C.ENV_TASKD_LOG_PATH], 0o750)
            config = {"job_id": "resumable-patch-check", "node_nums": 1, "proc_per_node": 1}
            with open(os.path.join(work, "manager.log"), "wb") as log:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "resumable.runtime.taskd_manager", json.dumps(config)],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        worker = os.path.join(work, "worker.py")
        result = os.path.join(work, "result")
        with open(worker, "w", encoding="utf-8") as handle:
            handle.write(SMOKE_WORKER)
        argv = [sys.executable, "-m", RUN_MODULE, "--nnodes=1", "--node_rank=0", "--nproc_per_node=1"]
        argv += ["--master_addr=127.0.0.1", "--master_port=" + env["MASTER_PORT"], worker, result]
        with open(os.path.join(work, "torchrun.log"), "wb") as log:
            run = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(run)
        timeout = SMOKE_TIMEOUT if timeout is None else timeout
        end = time.monotonic() + timeout
        while run.poll() is None and time.monotonic() < end:
            time.sleep(0.1)
        code = run.poll()
        if code is None:
            why = "did not end within %.0f s" % timeout
        elif code != 0:
            why = "ended with exit code %d" % code
        elif not os.path.isfile(result):
            why = "ended without running its training process"
        else:
            return True, "a one-process gloo job ran through it"
        output = _tail(os.path.join(work, "torchrun.log"))
        if package == "taskd":
            manager = _tail(os.path.join(work, "manager.log"), 2)
            output += (" | TaskD Manager: " + manager) if manager else ""
        return False, "a one-process gloo job through it %s (%s)" % (why, output or "no output")
    except OSError as exc:
        return False, "the one-process job could not start (%s)" % exc
    finally:
        for proc in procs:
            _end(proc, 5.0)
        shutil.rmtree(work, ignore_errors=True)


def patch(line: str, anchor: str, path: Optional[str] = None) -> PatchResult:
    """Make run.py carry ``line`` exactly once and verify that torch's launcher still imports."""
    run_py = path or locate_run_py()
    module = module_of_import(line)
    top = module.split(".")[0]
    if installed.package_dir(top) is None:
        raise ResumableError(
            "%s is not installed, so `%s` in run.py would break torchrun" % (top, line),
            sys.executable,
            "Install the %s wheel first (the image recipe installs it from jobs[].image.wheels)." % top,
        )
    original = read_run_py(run_py)
    others = [known for known in C.RUNPY_IMPORTS_KNOWN if known != line]
    try:
        text, done = patched_text(original, line, anchor, others)
    except ResumableError as exc:
        exc.where = run_py
        raise
    if text == original:
        return PatchResult(run_py, False, "%s already has `%s` exactly once" % (run_py, line))
    _write(run_py, text)
    ok, output = installed.check_import(RUN_MODULE)
    if not ok:
        _write(run_py, original)
        raise ResumableError(
            "after adding `%s`, `import %s` fails (%s); the file was restored" % (line, RUN_MODULE, output),
            run_py,
            "Check that the installed %s matches this torch (jobs[].image in the profile)." % top,
        )
    ok, output = _check_launch(top)
    if not ok:
        _write(run_py, original)
        raise ResumableError(
            "after adding `%s`, torchrun cannot launch: %s; the file was restored" % (line, output),
            run_py,
            "Use a %s release that supports this torch, or the torch version it supports (jobs[].image.torch)." % top,
        )
    ok, ran = smoke_job(top, run_py)
    if not ok:
        _write(run_py, original)
        raise ResumableError(
            "after adding `%s`, torch %s with %s %s cannot run a job: %s; the file was restored"
            % (line, installed.dist_version("torch") or "?", top, installed.dist_version(top) or "?", ran),
            run_py,
            "Use a %s release that supports this torch, or the torch version it supports (jobs[].image.torch)." % top,
        )
    what = "`import %s` works, its launch_agent takes what torch passes, %s" % (RUN_MODULE, ran)
    return PatchResult(run_py, True, "%s: %s; %s" % (run_py, "; ".join(done), what))


def undo(line: str, path: Optional[str] = None) -> PatchResult:
    """Remove ``line`` from run.py (every copy), giving back torch's own file."""
    run_py = path or locate_run_py()
    original = read_run_py(run_py)
    text, removed = unpatched_text(original, line)
    if not removed:
        return PatchResult(run_py, False, "%s has no `%s`; nothing to undo" % (run_py, line))
    _write(run_py, text)
    return PatchResult(
        run_py, True, "%s: removed `%s` (%d line%s)" % (run_py, line, removed, "" if removed == 1 else "s")
    )
