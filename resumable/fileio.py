"""Reading the files a user names and writing the directories we own, without hangs or casualties.

Reading: only regular files, at most a stated size, strict UTF-8. The file is opened with
``O_NONBLOCK`` and checked with ``fstat`` before anything is read, so a FIFO, ``/dev/zero`` or a
terminal is refused at once instead of blocking or streaming forever. :func:`read_text` and
:func:`read_bytes` read a whole file under a size cap, :func:`read_head` the start of one (a
program's ``#!`` line, a file in /proc), :func:`copy_file` copies one (a wheel) under a cap;
:func:`open_append` opens a log for appending without blocking on a FIFO.

Writing an output directory (``render --out``): the files go to a staging directory beside the
target, which then replaces the target. A directory is only ever replaced when it is empty or
carries the marker file :data:`MARKER` that we write into every output directory; anything else
(a file, a symbolic link, a directory of someone else's files) is refused. A failure, Ctrl-C or
SIGTERM removes the staging directory and the parents we created; after a SIGKILL the next run
removes the leftovers, again only those that carry our marker.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import shutil
import signal
import stat
import threading
from pathlib import Path
from types import FrameType
from typing import Callable, Iterator, List, Optional, Sequence, Tuple, Type

from .errors import ResumableError, shown

KIB = 1024
MIB = 1024 * KIB

#: A profile is a few kilobytes; 256 KiB leaves room for comments and many jobs, and keeps the
#: ConfigMap that carries the profile into the pods far below Kubernetes' 1 MiB object limit.
PROFILE_MAX_BYTES = 256 * KIB
#: Release YAMLs with full CRD schemas are below 1 MB today.
MANIFEST_MAX_BYTES = 8 * MIB

#: The file that marks a directory as written by resumable (and so replaceable by the next run).
MARKER = ".resumable-output"
_MARKER_HEAD = "written by resumable"
_PID = re.compile(r"\(pid (\d+)\)")


def size_text(n: int) -> str:
    if n >= MIB and n % MIB == 0:
        return "%d MiB" % (n // MIB)
    if n >= KIB and n % KIB == 0:
        return "%d KiB" % (n // KIB)
    return "%d bytes" % n


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, for messages ("a FIFO (named pipe)")."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def _open_regular(path: str, what: str, limit: Optional[int], error: Type[ResumableError], fix: str) -> int:
    """A descriptor of the regular file ``path`` (of at most ``limit`` bytes when a limit is given).

    Opened with ``O_NONBLOCK`` and checked with ``fstat`` before anything is read: a FIFO, a device
    or a socket is refused without blocking, whatever name or symbolic link leads to it."""
    where = path if path else "''"
    if not path:
        raise error("is an empty path, not a %s file" % what, where, fix)
    if "\x00" in path:
        raise error("is not a file name (it contains a NUL character)", shown(path), fix)
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        dangling = os.path.islink(path)
        raise error("is a symbolic link to a missing file" if dangling else "no such file", where, fix) from None
    except IsADirectoryError:
        raise error("is a directory, not a %s file" % what, where, fix) from None
    except OSError as exc:
        raise error("cannot be read (%s)" % (exc.strerror or exc), where, fix) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error("is a directory, not a %s file" % what, where, fix)
        if not stat.S_ISREG(info.st_mode):
            raise error(
                "is %s; resumable reads a %s only from a regular file" % (kind_of(info.st_mode), what), where, fix
            )
        if limit is not None and info.st_size > limit:
            raise error("is %d bytes; a %s is at most %s" % (info.st_size, what, size_text(limit)), where, fix)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_fd(fd: int, most: int) -> bytes:
    """At most ``most`` bytes from ``fd`` (fewer at the end of the file)."""
    chunks: List[bytes] = []
    total = 0
    while total < most:
        chunk = os.read(fd, min(1 * MIB, most - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_bytes(path: str, *, what: str, limit: int, error: Type[ResumableError], fix: str) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``; one that grows beyond it while
    being read, as a file in /proc or a log being written can, is refused too).

    ``what`` names the file for messages ("profile", "CRD source"); every problem raises ``error``
    with ``path`` as the place and ``fix`` as the advice."""
    fd = _open_regular(path, what, limit, error, fix)
    try:
        data = _read_fd(fd, limit + 1)
    except OSError as exc:
        raise error("cannot be read (%s)" % (exc.strerror or exc), path, fix) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise error("grew beyond %s while being read" % size_text(limit), path, fix)
    return data


def decode_text(data: bytes, path: str, what: str, error: Type[ResumableError]) -> str:
    """``data`` as strict UTF-8; a decoding error names the byte and its offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            "cannot be read: it is not UTF-8 text (byte 0x%02x at offset %d)" % (data[exc.start], exc.start),
            path if path else "''",
            "Save the %s as UTF-8" % what,
        ) from None


def read_text(path: str, *, what: str, limit: int, error: Type[ResumableError], fix: str) -> str:
    """The UTF-8 text of the regular file ``path`` (at most ``limit`` bytes); see :func:`read_bytes`."""
    return decode_text(read_bytes(path, what=what, limit=limit, error=error, fix=fix), path, what, error)


def read_head(path: str, *, what: str, most: int, error: Type[ResumableError], fix: str) -> bytes:
    """The first ``most`` bytes of the regular file ``path``, whatever its size (the ``#!`` line of a
    program, the start of a file in /proc, whose size reads as 0)."""
    fd = _open_regular(path, what, None, error, fix)
    try:
        return _read_fd(fd, most)
    except OSError as exc:
        raise error("cannot be read (%s)" % (exc.strerror or exc), path, fix) from None
    finally:
        os.close(fd)


def _stream(
    fd: int, path: str, limit: int, error: Type[ResumableError], fix: str, sink: Callable[[bytes], object]
) -> str:
    """Pass the bytes of ``fd`` (at most ``limit``) to ``sink``; return their sha256."""
    digest = hashlib.sha256()
    total = 0
    while True:
        try:
            chunk = os.read(fd, 1 * MIB)
        except OSError as exc:
            raise error("cannot be read (%s)" % (exc.strerror or exc), path, fix) from None
        if not chunk:
            return digest.hexdigest()
        total += len(chunk)
        if total > limit:
            raise error("grew beyond %s while being read" % size_text(limit), path, fix)
        digest.update(chunk)
        sink(chunk)


def sha256_of(path: str, *, what: str, limit: int, error: Type[ResumableError], fix: str) -> str:
    """The sha256 of the regular file ``path`` (at most ``limit`` bytes), read without keeping it."""
    fd = _open_regular(path, what, limit, error, fix)
    try:
        return _stream(fd, path, limit, error, fix, lambda chunk: None)
    finally:
        os.close(fd)


def copy_file(src: str, dst: str, *, what: str, limit: int, error: Type[ResumableError], fix: str) -> str:
    """Copy the regular file ``src`` (at most ``limit`` bytes) to the new file ``dst``; return the
    sha256 of the bytes copied. ``dst`` must not exist (it is created, never overwritten)."""
    fd = _open_regular(src, what, limit, error, fix)
    try:
        with open(dst, "xb") as out:
            return _stream(fd, src, limit, error, fix, out.write)
    finally:
        os.close(fd)


def open_append(path: str) -> int:
    """A descriptor for appending to the regular file ``path`` (created when missing). A FIFO, a
    device or a socket raises :class:`OSError` at once instead of blocking until a reader comes or
    writing into the device."""
    import fcntl  # POSIX only: the launcher's logs; the rest of this module also runs elsewhere

    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), 0o644)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "%s, not a regular file" % kind_of(mode), path)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~getattr(os, "O_NONBLOCK", 0))
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def os_errors(
    what: str, where: Optional[str], fix: str, error: Type[ResumableError] = ResumableError
) -> Iterator[None]:
    """Within the block an :class:`OSError` (a permission, a full disk, a read-only file system)
    becomes ``error``: "``what`` (its reason)" at ``where``, with ``fix``."""
    try:
        yield
    except OSError as exc:
        raise error("%s (%s)" % (what, exc.strerror or exc), where, fix) from None


# --- signals ---------------------------------------------------------------------------------------


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived while we were writing (raised so that clean-up code runs)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` (once: a second signal during
    clean-up is ignored) instead of killing the process with the clean-up undone. Only in the main
    thread, and only where the default action was in place (a host program's handlers stay)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: List[int] = []

    def handler(signum: int, frame: Optional[FrameType]) -> None:
        if not caught:
            caught.append(signum)
            raise Terminated(signum)

    previous = []
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) == signal.SIG_DFL:
            previous.append((signum, signal.signal(signum, handler)))
    try:
        yield
    finally:
        for signum, old in previous:
            signal.signal(signum, old)


# --- output directories ----------------------------------------------------------------------------


class OutputError(ResumableError):
    """An output location we may not or cannot write."""


def _where(option: str, raw: str) -> str:
    return "%s %s" % (option, shown(raw))


def _marker_text(command: str) -> str:
    return (
        "%s `%s` (pid %d). This directory is replaced as a whole by the next run; a directory "
        "without this file is never replaced.\n" % (_MARKER_HEAD, command, os.getpid())
    )


def is_ours(directory: str) -> bool:
    """Whether ``directory`` carries the marker file (a regular file that we wrote)."""
    path = os.path.join(directory, MARKER)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(200).startswith(_MARKER_HEAD)
    except OSError:
        return False


def _has_marker(directory: str) -> bool:
    """Whether ``directory`` holds a regular file named :data:`MARKER`, written or not yet (a
    staging directory interrupted between creating the marker and writing it)."""
    try:
        return stat.S_ISREG(os.lstat(os.path.join(directory, MARKER)).st_mode)
    except OSError:
        return False


def _marker_pid(directory: str) -> Optional[int]:
    try:
        with open(os.path.join(directory, MARKER), encoding="utf-8", errors="replace") as handle:
            m = _PID.search(handle.read(400))
    except OSError:
        return None
    return int(m.group(1)) if m else None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def output_path(raw: str, option: str = "--out") -> str:
    """The absolute, lexically normalised path of an output directory (``a/../b`` is ``b``: the
    missing ``a`` is never created), refused when it cannot be a directory we replace."""
    where = _where(option, raw)
    if not raw:
        raise OutputError("is empty", where, "Name the directory to write, e.g. %s out/stack" % option)
    if "\x00" in raw:
        raise OutputError("contains a NUL character", where, "Name a directory")
    final = os.path.abspath(raw)
    cwd = os.path.abspath(os.getcwd())
    if final == os.path.dirname(final) or cwd == final or cwd.startswith(final.rstrip(os.sep) + os.sep):
        raise OutputError(
            "is the current directory or one of its parents, which is not replaced",
            where,
            "Name a new directory, e.g. %s out/stack" % option,
        )
    return final


def check_replaceable(final: str, raw: str, option: str = "--out") -> None:
    """Refuse a target that is a symbolic link, not a directory, or a directory of files that we
    did not write."""
    where = _where(option, raw)
    try:
        info = os.lstat(final)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(
            "cannot be examined (%s)" % (exc.strerror or exc), where, "Choose another directory"
        ) from None
    if stat.S_ISLNK(info.st_mode):
        raise OutputError(
            "is a symbolic link%s; the output directory is replaced as a whole, so resumable neither "
            "follows nor replaces a link" % ("" if os.path.exists(final) else " to a missing place"),
            where,
            "Give the real directory's path, or a new one",
        )
    if not stat.S_ISDIR(info.st_mode):
        raise OutputError("exists and is not a directory", where, "Choose a new directory name")
    try:
        entries = os.listdir(final)
    except OSError as exc:
        raise OutputError("cannot be listed (%s)" % (exc.strerror or exc), where, "Choose another directory") from None
    if entries and not is_ours(final):
        raise OutputError(
            "is a directory of %d entries that resumable did not write (it has no %s file), and it "
            "would be replaced as a whole" % (len(entries), MARKER),
            where,
            "Choose a new or empty directory, or remove this one yourself",
        )


def make_dirs(path: str) -> List[str]:
    """Create ``path`` and its missing parents; return the directories created, outermost first. On
    an :class:`OSError` the ones created so far are removed again (the error names the directory)."""
    missing: List[str] = []
    d = os.path.abspath(path)
    while not os.path.lexists(d):
        missing.append(d)
        d = os.path.dirname(d)
    created: List[str] = []
    try:
        for d in reversed(missing):
            os.mkdir(d)
            created.append(d)
    except OSError as exc:
        remove_dirs(created)
        raise OSError(exc.errno, "%s: %s" % (exc.strerror or exc, d)) from None
    return created


def remove_dirs(created: Sequence[str]) -> None:
    """Remove the directories :func:`make_dirs` created, innermost first, those that are still empty."""
    for d in reversed(created):
        with contextlib.suppress(OSError):
            os.rmdir(d)


def _make_parents(parent: str, where: str) -> List[str]:
    """Create the missing directories up to ``parent``; return them, outermost first."""
    try:
        return make_dirs(parent)
    except OSError as exc:
        raise OutputError(
            "cannot be created (%s)" % (exc.strerror or exc), where, "Choose a place you can write"
        ) from None


def _sweep(parent: str, name: str) -> None:
    """Remove what an earlier run killed with SIGKILL left beside the target: its staging
    directory (``.NAME.xxxxxxxx.tmp``) or the previous output it had moved aside (``...old``),
    when they carry our marker and the process that wrote them is gone."""
    pattern = re.compile(r"\.%s\.[A-Za-z0-9_]{8}\.(tmp|old)" % re.escape(name))
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        if not pattern.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        path = entry.path
        with contextlib.suppress(OSError):
            if not os.listdir(path):
                os.rmdir(path)  # an empty directory we had moved aside
                continue
        if _has_marker(path):
            pid = _marker_pid(path)
            if pid is None or not _alive(pid):
                shutil.rmtree(path, ignore_errors=True)


def _fresh_name(parent: str, name: str, kind: str) -> str:
    while True:
        path = os.path.join(parent, ".%s.%s.%s" % (name, secrets.token_hex(4), kind))
        if not os.path.lexists(path):
            return path


def _remove_staging(staging: str, final: str) -> None:
    """Remove ``staging`` if it is (still) ours: empty or marked, and not already renamed."""
    if not os.path.isdir(staging) or os.path.islink(staging):
        return
    try:
        empty = not os.listdir(staging)
    except OSError:
        return
    if empty or _has_marker(staging):
        shutil.rmtree(staging, ignore_errors=True)


def _plain_relative(name: str) -> bool:
    """``name`` is a relative path of plain parts (no empty, hidden, ``.`` or ``..`` part)."""
    return bool(name) and all(part and not part.startswith(".") for part in name.split("/"))


def replace_directory(
    raw: str, files: Sequence[Tuple[str, str]], option: str = "--out", command: str = "resumable render"
) -> List[Path]:
    """Make ``raw`` a directory holding exactly ``files`` (name, text) plus :data:`MARKER`; a name
    may be a relative path (``1-crds/Kustomization``), whose directories are created.

    Nothing is changed when anything fails: the previous directory stays, the staging directory and
    the parents we created are removed. Raises :class:`OutputError` for a target we may not replace
    or cannot write, :class:`Terminated` on SIGTERM/SIGHUP (after cleaning up).
    """
    where = _where(option, raw)
    final = output_path(raw, option)
    check_replaceable(final, raw, option)
    parent, name = os.path.split(final)
    names = [n for n, _ in files]
    if len(set(names)) != len(names) or not all(_plain_relative(n) for n in names):
        raise ValueError("output file names must be distinct relative paths without hidden parts: %r" % names)
    created = _make_parents(parent, where)
    _sweep(parent, name)
    # The names are chosen before the directories exist, so that a signal arriving at any point
    # finds them in the variables the clean-up reads; the clean-up only removes a staging
    # directory that is empty or carries our marker.
    staging = _fresh_name(parent, name, "tmp")
    old: Optional[str] = None
    try:
        with signals_raise():
            try:
                os.mkdir(staging, 0o700)
                with open(os.path.join(staging, MARKER), "x", encoding="utf-8") as handle:
                    handle.write(_marker_text(command))
                for file_name, text in files:
                    folder = os.path.dirname(file_name)
                    if folder:
                        os.makedirs(os.path.join(staging, folder), 0o755, exist_ok=True)
                    with open(os.path.join(staging, file_name), "x", encoding="utf-8") as handle:
                        handle.write(text)
                os.chmod(staging, 0o755)
                if os.path.lexists(final):
                    check_replaceable(final, raw, option)  # unchanged since we looked?
                    old = _fresh_name(parent, name, "old")
                    os.rename(final, old)
                os.rename(staging, final)
            except BaseException:
                _remove_staging(staging, final)
                if old is not None and not os.path.lexists(final) and os.path.lexists(old):
                    os.rename(old, final)
                    old = None
                remove_dirs(created)
                raise
    except OSError as exc:
        raise OutputError(
            "cannot be written (%s)" % (exc.strerror or exc),
            where,
            "Choose a place you can write (check permissions and free space)",
        ) from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return [Path(final) / n for n in names]


# --- single files in a directory we do not own (docs/) ------------------------------------------------


def ensure_directory(raw: str, option: str = "--out", create: bool = True) -> None:
    """Make sure ``raw`` is (or, with ``create``, becomes) a directory we can put files in.

    A symbolic link to a directory is followed (we only add files); a dangling link, a file or an
    empty name is refused."""
    where = _where(option, raw)
    if not raw:
        raise OutputError("is empty", where, "Name a directory, e.g. %s docs" % option)
    if os.path.isdir(raw):
        return
    if os.path.islink(raw):
        raise OutputError("is a symbolic link to a missing place", where, "Give an existing directory or a new name")
    if os.path.lexists(raw):
        raise OutputError("exists and is not a directory", where, "Name a directory")
    if not create:
        return
    try:
        os.makedirs(raw)
    except OSError as exc:
        raise OutputError(
            "cannot be created (%s)" % (exc.strerror or exc), where, "Choose a place you can write"
        ) from None


def write_file(directory: str, name: str, text: str, option: str = "--out") -> str:
    """Write ``directory/name`` atomically (a temporary file renamed over it); return its path."""
    path = os.path.join(directory, name)
    tmp = _fresh_name(directory, name, "tmp")
    try:
        with signals_raise():
            try:
                with open(tmp, "x", encoding="utf-8") as handle:
                    handle.write(text)
                os.replace(tmp, path)
            except FileExistsError:
                raise  # not ours to remove
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
    except OSError as exc:
        raise OutputError(
            "cannot be written (%s)" % (exc.strerror or exc), _where(option, directory), "Choose a place you can write"
        ) from None
    return path


def write_new_file(path: str, text: str, option: str = "--out") -> str:
    """Write ``text`` to ``path``, a file that must not exist yet (``resumable init`` never replaces a
    profile someone wrote); the directory must exist."""
    where = _where(option, path)
    if not path:
        raise OutputError("is empty", where, "Name the new file, e.g. %s profile.yaml" % option)
    if os.path.lexists(path):
        raise OutputError("exists already", where, "Name a new file, or remove or rename the old one yourself")
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise OutputError("is in a directory that does not exist", where, "Create the directory first")
    try:
        with open(path, "x", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise OutputError(
            "cannot be written (%s)" % (exc.strerror or exc), where, "Choose a place you can write"
        ) from None
    return path
