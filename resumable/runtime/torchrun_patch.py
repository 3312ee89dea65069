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
- ``--undo`` removes the line again, giving back the original bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import List, NamedTuple, Optional, Sequence, Tuple

from .. import constants as C
from ..errors import ResumableError
from . import installed

#: what ``python -m torch.distributed.run`` and torchrun import
RUN_MODULE = "torch.distributed.run"

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


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        raise ResumableError(
            "does not exist", path, "Install torch in this Python (the base image must carry it)."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResumableError("cannot be read (%s)" % exc, path, "Check the file.") from None


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


def patch(line: str, anchor: str, path: Optional[str] = None) -> PatchResult:
    """Make run.py carry ``line`` exactly once and verify that torch's launcher still imports."""
    run_py = path or locate_run_py()
    module = installed.module_of_import(line)
    top = module.split(".")[0]
    if installed.package_dir(top) is None:
        raise ResumableError(
            "%s is not installed, so `%s` in run.py would break torchrun" % (top, line),
            sys.executable,
            "Install the %s wheel first (the image recipe installs it from jobs[].image.wheels)." % top,
        )
    original = _read(run_py)
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
    what = "`import %s` works and its launch_agent takes what torch passes" % RUN_MODULE
    return PatchResult(run_py, True, "%s: %s; %s" % (run_py, "; ".join(done), what))


def undo(line: str, path: Optional[str] = None) -> PatchResult:
    """Remove ``line`` from run.py (every copy), giving back torch's own file."""
    run_py = path or locate_run_py()
    original = _read(run_py)
    text, removed = unpatched_text(original, line)
    if not removed:
        return PatchResult(run_py, False, "%s has no `%s`; nothing to undo" % (run_py, line))
    _write(run_py, text)
    return PatchResult(
        run_py, True, "%s: removed `%s` (%d line%s)" % (run_py, line, removed, "" if removed == 1 else "s")
    )
