"""What is installed in this Python, found without importing it: package directories, distribution
versions, torch's launcher module file, libtaskd.so, the launcher commands.

Importing torch or TaskD takes seconds and may have side effects (TaskD's patch rewires torch's
elastic agent on import), so everything here reads the import system's specs and metadata only.
"""

from __future__ import annotations

import email.parser
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

from .. import constants as C
from ..errors import ResumableError
from ..fileio import read_head

try:  # Python 3.8 has importlib.metadata
    from importlib import metadata as _metadata
except ImportError:  # pragma: no cover
    _metadata = None  # type: ignore[assignment]

#: seconds an import check in a child interpreter may take (importing torch is slow on a cold disk)
IMPORT_CHECK_TIMEOUT = 300
#: the metadata headers (Name, Version) come first; the long description after them is not needed
METADATA_HEAD_BYTES = 64 << 10


def package_dir(name: str) -> Optional[str]:
    """The directory of top-level package ``name`` as this interpreter would import it, or None."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return os.path.abspath(next(iter(spec.submodule_search_locations)))
    if spec.origin and os.path.isfile(spec.origin):
        return os.path.dirname(os.path.abspath(spec.origin))
    return None


def dist_version(name: str) -> Optional[str]:
    """The installed version of distribution ``name`` (dashes and underscores alike), or None (also
    when its metadata cannot be read)."""
    if _metadata is None:  # pragma: no cover
        return None
    for candidate in (name, name.replace("_", "-"), name.replace("-", "_")):
        try:
            dist = _metadata.distribution(candidate)  # found on sys.path, nothing read yet
        except _metadata.PackageNotFoundError:
            continue
        return _version_of(dist)
    return None


def _version_of(dist: Any) -> Optional[str]:
    """The ``Version`` header of a distribution's metadata, read through the bounded reader when it
    lives in a directory (importlib's own read would block on a FIFO named METADATA)."""
    where = getattr(dist, "_path", None)  # PathDistribution: its .dist-info or .egg-info
    if not isinstance(where, pathlib.Path):
        version: Optional[str] = dist.version  # another kind of distribution (a zip): importlib reads it
        return version
    files = [where / "METADATA", where / "PKG-INFO"] if where.is_dir() else [where]
    for path in files:
        if not os.path.lexists(str(path)):
            continue
        try:
            head = read_head(str(path), what="package metadata", most=METADATA_HEAD_BYTES, error=ResumableError, fix="")
        except ResumableError:
            return None
        headers = email.parser.HeaderParser().parsestr(head.decode("utf-8", "replace"))
        value = headers.get("Version")
        return str(value).strip() if value else None
    return None


def torch_run_py() -> Optional[str]:
    """torch/distributed/run.py of the torch this interpreter imports (the file PLR's sed edits)."""
    torch = package_dir("torch")
    if torch is None:
        return None
    return os.path.join(torch, "distributed", "run.py")


def libtaskd_path() -> Optional[str]:
    """libtaskd.so inside the installed taskd package (PLR 适配训练脚本: ``pip show taskd`` Location +
    taskd/python/cython_api/libs/libtaskd.so), or None when taskd is not installed."""
    taskd = package_dir("taskd")
    if taskd is None:
        return None
    return os.path.join(os.path.dirname(taskd), *C.LIBTASKD_RELATIVE.split("/"))


def check_import(module: str, python: str = sys.executable, env: Optional[Dict[str, str]] = None) -> Tuple[bool, str]:
    """Import ``module`` in a fresh interpreter; (ok, last lines of its output when it failed)."""
    try:
        proc = subprocess.run(
            [python, "-c", "import %s" % module],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=IMPORT_CHECK_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return False, "importing %s took more than %d s" % (module, IMPORT_CHECK_TIMEOUT)
    except OSError as exc:
        return False, "cannot run %s: %s" % (python, exc)
    if proc.returncode == 0:
        return True, ""
    text = proc.stdout.decode("utf-8", "replace").strip().splitlines()
    return False, " | ".join(text[-3:]) if text else "exit code %d" % proc.returncode


def find_command(name: str) -> Optional[str]:
    """A console script such as torchrun as PLR's train_start.sh would run it: the first on PATH,
    else the one installed next to this interpreter (a virtualenv that is not activated)."""
    found = shutil.which(name)
    if found:
        return found
    here = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return None


def script_python(path: str) -> Optional[str]:
    """The interpreter a console script's ``#!`` line names, or None for a binary or plain shell script."""
    try:
        head = read_head(path, what="program", most=512, error=ResumableError, fix="")
    except ResumableError:
        return None  # not a regular file, or unreadable: whoever runs it finds out
    first = head.split(b"\n", 1)[0]
    if not first.startswith(b"#!"):
        return None
    words: List[str] = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env" and len(words) > 1:
        return shutil.which(words[1])
    return words[0] if "python" in os.path.basename(words[0]) else None


def same_version(wanted: str, found: str) -> bool:
    """Versions equal in the Ascend sense (``2.7.1`` == ``2.7.1+cpu``, ``6.0.RC3`` == ``6.0.rc3``)."""
    from ..versions import Version, VersionError

    try:
        return Version(wanted) == Version(found)
    except VersionError:
        return wanted.strip().lower() == found.strip().lower()
