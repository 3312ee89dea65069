"""Generated hostile input for the commands that run in the training container and on the nodes
(issue 25): ``timeline``, ``launch --dry-run``, ``launch``, ``doctor``, ``doctor --node``, ``image
context``, ``image patch-torchrun``, ``docs`` and ``drill`` (issue 27: special files and lying
processes where it looks for launchers), the way ``test_property.py`` drives ``validate``, ``plan``
and ``render`` with generated profiles.

Each example describes its inputs as plain data (so hypothesis can shrink it): the files the command
reads, each a regular file with generated text or bytes or a special one (a FIFO, a link to
/dev/zero or /dev/null, a dangling link, a directory, a sparse file beyond every cap, a link to a
file outside the sandbox); the pod's environment, a valid one with up to four variables replaced by
hostile values (control characters, undecodable bytes, ``..`` and ``/``, signs, leading zeros,
non-ASCII digits, overlong or empty values); and the command's own arguments. The example is then
laid out in a fresh sandbox next to a directory ``outside`` that holds a file and a directory of its
own, and the command runs in it: its working directory, HOME, TMPDIR, every path it is given and the
log root of every profile are in the sandbox.

Every run must:

- exit 0 or 2 (``doctor``: 1 too, a failed check; ``drill``: 1 too, a recovery that did not come
  back), never 3, and never print a traceback or "internal error"; a refused run (exit 2) prints one
  paragraph on stderr;
- end within :data:`TIME_LIMIT` (a hang is killed there and fails the example);
- change nothing outside the sandbox (``outside`` and the sandbox's parent are compared before and
  after), and a refused run changes nothing in the sandbox either (no file, no empty directory);
- print what it promises: strict JSON for ``--format json``, no raw control character in text
  output, a dry-run script whose every line is a comment, an export of one quoted word, or one of its
  commands.

The commands run as ``resumable.cli.main`` in a child forked from this process (its own session and
environment, PYTHONPATH emulated on ``sys.path``, stdout a strict UTF-8 stream as on a UTF-8 terminal,
at most 1 GiB of address space more than it inherits, so that an endless read fails instead of
filling memory): forking
skips the interpreter's start-up and imports, which makes hundreds of examples affordable. The
command-specific tests (test_timeline.py, test_launch_spec.py, test_doctor.py, test_context.py,
test_torchrun_patch.py, test_adversarial.py) run the same mistakes through ``python -m resumable``.

Example counts come from the hypothesis profiles of test_property.py: ``dev`` (the default) or ``ci``
(CI or HYPOTHESIS_PROFILE=ci), five times as many.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import hashlib
import importlib
import io
import json
import os
import resource
import shlex
import shutil
import signal
import stat
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Counter, Dict, Iterator, List, Optional, Sequence, Tuple

import pytest
from conftest import EXAMPLE_FILES, FIXTURES

from resumable import cli
from resumable import constants as C
from resumable.api import job_plan, load_plan
from resumable.errors import ResumableError
from resumable.image import context
from resumable.image.wheels import write_wheel
from resumable.runtime import commands, doctor, launch, node_doctor, supervisor, timeline  # noqa: F401

from .conftest import RUN_PY, assert_dry_run_script, executable, fake_torch_layout, profile_text, write

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, event, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import InvalidArgument  # noqa: E402

#: seconds one run may take on a loaded machine before it counts as hung (an honest run takes well
#: under one; a patch-torchrun that imports in child interpreters a few)
TIME_LIMIT = 30.0
#: address space the child may add to what it inherits (the test process may have imported torch):
#: an endless read (a link to /dev/zero read whole) fails fast instead of filling the machine's memory
ADDRESS_SPACE = 1 << 30
#: larger than every cap of the readers (timeline 64 MiB, pages 16 MiB, run.py 4 MiB, profile 256 KiB)
HUGE = 80 << 20
#: the plans' default log root; no run may create it
JOB_ROOT = "/job"
#: vendor packages a test process may have imported, forgotten in the child (the fakes must be found)
VENDOR_TOPS = {"torch", "torch_npu", "taskd", "mindio_ttp", "mindio_acp", "mindx_elastic", "mindspore"}

_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "")
if _PROFILE not in ("ci", "dev"):
    _PROFILE = "ci" if os.environ.get("CI") else "dev"
SCALE = 5 if _PROFILE == "ci" else 1


def examples(dev: int) -> settings:
    """Settings for one command: ``dev`` examples (five times as many in CI), deterministic."""
    return settings(
        max_examples=dev * SCALE,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


# --- what an example is made of ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FileSpec:
    """A file a command reads: ``text``/``bytes`` with content, or a special kind."""

    kind: str
    content: bytes = b""


SPECIAL = ["empty", "huge", "fifo", "dev-zero", "dev-null", "dangling", "directory", "missing", "link-outside"]

#: values a hostile pod, user or template writes (NUL is impossible in an environment value)
WEIRD = [
    "",
    " ",
    ".",
    "..",
    "/",
    "../../outside",
    "a/b",
    "00",
    "+0",
    "-1",
    " 0",
    "0x10",
    "1e3",
    "\u0660",
    "\uff11",
    "99999999999999999999",
    "65536",
    "0",
    "1",
    "3",
    "10.0.0.5",
    "::1",
    "host name",
    "10.0.0.5\ntouch x",
    "id\rx",
    "\x1b[2J",
    "\x7f",
    "\x85",
    "\udcff",
    "a\udcfeb",
    "$(RANK)",
    "${HOME}",
    "`id`",
    "'",
    '"',
    "\\",
    "*",
    "x" * 300,
    "\u4e2d\u6587",
]
values = st.one_of(
    st.sampled_from(WEIRD),
    st.text(st.characters(max_codepoint=0xD7FF, blacklist_characters="\x00"), max_size=12),
    st.tuples(st.sampled_from(WEIRD), st.sampled_from(WEIRD)).map("".join),
)


def file_specs(texts: st.SearchStrategy[str]) -> st.SearchStrategy[FileSpec]:
    return st.one_of(
        texts.map(lambda t: FileSpec("text", t.encode("utf-8"))),
        st.binary(max_size=40).map(lambda b: FileSpec("bytes", b)),
        st.sampled_from(SPECIAL).map(FileSpec),
    )


def materialise(spec: Optional[FileSpec], path: Path, outside: Path) -> None:
    """Lay ``spec`` out at ``path`` (None: leave what is there)."""
    if spec is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.is_file():
        path.unlink()
    kind = spec.kind
    if kind in ("text", "bytes"):
        path.write_bytes(spec.content)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "huge":
        with open(str(path), "wb") as handle:
            handle.truncate(HUGE)
    elif kind == "fifo":
        os.mkfifo(str(path))
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "dev-null":
        path.symlink_to("/dev/null")
    elif kind == "dangling":
        path.symlink_to(path.parent / "gone-away")
    elif kind == "directory":
        path.mkdir()
    elif kind == "link-outside":
        path.symlink_to(outside / "victim.txt")
    else:
        assert kind == "missing", kind


# --- the sandbox -------------------------------------------------------------------------------------


def snapshot(root: Path) -> Dict[str, Tuple[str, int, str]]:
    """Every entry under ``root`` (not following links, never opening a special file): its kind, and
    for a regular file its size and a digest of its bytes."""
    out: Dict[str, Tuple[str, int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(str(root)):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            key = os.path.relpath(path, str(root))
            if stat.S_ISREG(info.st_mode):
                digest = ""
                if info.st_size <= 1 << 20:
                    with open(path, "rb") as handle:
                        digest = hashlib.sha256(handle.read()).hexdigest()
                out[key] = ("file", info.st_size, digest)
            elif stat.S_ISLNK(info.st_mode):
                out[key] = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                out[key] = ("dir", 0, "")
            else:
                out[key] = ("special", stat.S_IFMT(info.st_mode), "")
    return out


@dataclasses.dataclass
class Box:
    root: Path
    sandbox: Path
    outside: Path

    @staticmethod
    def make(parent: Path) -> Box:
        root = Path(tempfile.mkdtemp(prefix="ex-", dir=str(parent)))
        sandbox, outside = root / "sandbox", root / "outside"
        (sandbox / "tmp").mkdir(parents=True)
        (sandbox / "home").mkdir()
        (outside / "dir").mkdir(parents=True)
        (outside / "victim.txt").write_text("not yours\n")
        (outside / "dir" / "keep.txt").write_text("not yours either\n")
        return Box(root, sandbox, outside)

    def env(self, **extra: str) -> Dict[str, str]:
        base = {
            "PATH": "%s:/usr/bin:/bin" % (self.sandbox / "bin"),
            "HOME": str(self.sandbox / "home"),
            "TMPDIR": str(self.sandbox / "tmp"),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "TASKD_LOG_PATH": str(self.sandbox / "taskd-log"),
        }
        base.update(extra)
        return base


@pytest.fixture()
def short() -> Iterator[Path]:
    """A directory for the examples with a short path: the launcher's event socket lives under TMPDIR
    and an AF_UNIX path has at most 107 bytes, which pytest's own temporary paths nearly fill."""
    path = Path(tempfile.mkdtemp(prefix="rh-"))
    yield path
    shutil.rmtree(str(path), ignore_errors=True)


# --- running a command in a forked child ---------------------------------------------------------------


@dataclasses.dataclass
class Result:
    code: int
    out: str
    err: str
    seconds: float


def _forget_vendor_modules() -> None:
    for name in list(sys.modules):
        if name.split(".")[0] in VENDOR_TOPS:
            del sys.modules[name]


def _mapped() -> int:
    """The address space this process has mapped (/proc/self/statm: its size in pages)."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _child(argv: Sequence[str], env: Dict[str, str], cwd: Path, path: Sequence[str], out: int, err: int) -> int:
    os.setsid()
    os.chdir(str(cwd))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    resource.setrlimit(resource.RLIMIT_AS, (_mapped() + ADDRESS_SPACE, resource.RLIM_INFINITY))
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(env)
    sys.path[:0] = list(path)
    sys.dont_write_bytecode = True
    importlib.invalidate_caches()
    _forget_vendor_modules()
    tempfile.tempdir = None  # read TMPDIR again, as a new process does
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="strict")
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True
    )
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # argparse: a usage error is exit 2
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:  # anything escaping main is the bug looked for
        sys.stderr.write("ESCAPED main: " + traceback.format_exc())
        code = 99
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            code = 98
    return code


def run(argv: Sequence[str], env: Dict[str, str], cwd: Path, path: Sequence[str] = ()) -> Result:
    """``resumable ARGV`` in a forked child; a run still going after TIME_LIMIT is killed and fails."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            code = 97
            try:
                code = _child(argv, env, cwd, path, out.fileno(), err.fileno())
            finally:
                os._exit(code)
        status = 0
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() - start > TIME_LIMIT:
                _kill_session(pid)
                pytest.fail("resumable %s hung: no exit within %.0f s" % (shlex.join(argv)[:300], TIME_LIMIT))
            time.sleep(0.005)
        seconds = time.monotonic() - start
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        out.seek(0)
        err.seek(0)
        return Result(code, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), seconds)


def _kill_session(pid: int) -> None:
    """Kill the hung child (not reaped yet, so ``pid`` is still ours) and what it started, then reap it."""
    from resumable.runtime.proctable import descendants

    for child in [pid, *descendants(pid)]:
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


# --- the contract ----------------------------------------------------------------------------------------


def check(
    res: Result,
    box: Box,
    before: Dict[str, Any],
    allowed: Sequence[int] = (0, 2),
    json_out: bool = False,
    text_out: bool = False,
    script_out: bool = False,
) -> None:
    with contextlib.suppress(InvalidArgument):  # outside a generated example (the harness's own test)
        event("exit %d" % res.code)
    what = "exit %d after %.1f s\nstdout: %s\nstderr: %s" % (res.code, res.seconds, res.out[-3000:], res.err[-3000:])
    assert res.code in allowed, what
    assert "Traceback" not in res.err and "internal error" not in res.err and "ESCAPED" not in res.err, what
    assert res.seconds < TIME_LIMIT, what
    if res.code == 2:
        assert len(res.err.strip().splitlines()) == 1, "not one paragraph: " + what
        assert snapshot(box.sandbox) == before["sandbox"], "a refused run changed the sandbox: " + what
    assert snapshot(box.outside) == before["outside"], "a write or delete outside the sandbox: " + what
    assert sorted(os.listdir(str(box.root))) == ["outside", "sandbox"], "a write beside the sandbox: " + what
    assert sorted(os.listdir(str(box.root.parent))) == before["parent"], "a write beside the example: " + what
    assert os.path.exists(JOB_ROOT) == before["job"], "%s was created: %s" % (JOB_ROOT, what)
    if res.code in (0, 1) and json_out:
        json.loads(res.out, parse_constant=lambda name: pytest.fail("%s in JSON output: %s" % (name, what)))
    if res.code in (0, 1) and text_out:
        assert not any(c in res.out for c in "\x1b\r\x00\x7f"), "a raw control character: " + what
    if script_out:
        assert_dry_run_script(res.out, what)


def state(box: Box) -> Dict[str, Any]:
    return {
        "sandbox": snapshot(box.sandbox),
        "outside": snapshot(box.outside),
        "parent": sorted(os.listdir(str(box.root.parent))),
        "job": os.path.exists(JOB_ROOT),
    }


# --- the pod: fake torch and vendor packages, launchers, environments --------------------------------------

PATCHED = RUN_PY.replace("import os\n", C.RUNPY_IMPORT_TASKD + "\nimport os\n")
#: what the Ascend Operator injects on a PyTorch and on a MindSpore pod (rank 0 / the Scheduler)
POD = {
    "RANK": "0",
    "MASTER_ADDR": "10.96.0.10",
    "MASTER_PORT": "2222",
    "WORLD_SIZE": "32",
    "LOCAL_WORLD_SIZE": "8",
    "POD_IP": "10.0.0.5",
    "MINDX_TASK_ID": "3f0c-uid",
    "MS_SCHED_HOST": "10.0.0.5",
    "MS_SCHED_PORT": "8118",
    "MS_NODE_RANK": "0",
    "MS_WORKER_NUM": "16",
    "MS_LOCAL_WORKER": "8",
    "MS_ROLE": "MS_SCHED",
    "NPU_POD": "true",
}
#: what a hostile example may replace (the launcher's inputs and what it extends or passes on)
HOSTILE_NAMES = [
    *sorted(POD),
    "XDL_IP",
    "TTP_ADDR",
    "MS_TFT_IP",
    "MS_TFT_PORT",
    "LD_PRELOAD",
    "PYTHONPATH",
    "TASKD_LOG_PATH",
    "RESUMABLE_JOB",
    "RANK_TABLE_FILE",
    "HCCL_ASYNC_ERROR_HANDLING",
    "ASCEND_TOOLKIT_HOME",
    "TMPDIR",
]
pod_changes = st.dictionaries(st.sampled_from(HOSTILE_NAMES), values, max_size=4)


def vendor_site(site: Path) -> Path:
    """taskd and mindio_ttp as the launcher and doctor find them (import system and metadata only)."""
    for package, files in {
        "taskd": ["__init__.py", "api.py", "python/__init__.py", "python/adaptor/__init__.py"],
        "mindio_ttp": ["__init__.py", "framework_ttp.py"],
    }.items():
        for name in files:
            write(site / package / name, "")
        write(site / ("%s-7.3.0.dist-info" % package) / "METADATA", "Name: %s\nVersion: 7.3.0\n" % package)
    write(site / "taskd" / "python" / "adaptor" / "patch.py", "")
    write(site / "taskd" / "python" / "cython_api" / "libs" / "libtaskd.so", "")
    return site


def pod_sandbox(box: Box, run_py: Optional[FileSpec], launcher: Optional[FileSpec], text: str = PATCHED) -> List[str]:
    """torch's layout (run.py holding ``text``, or as ``run_py`` says), the vendor site, the launchers
    on PATH (each ends at once with 0); returns the PYTHONPATH entries."""
    torch = fake_torch_layout(box.sandbox / "torch-site", text, version="2.7.1")
    materialise(run_py, torch / "torch" / "distributed" / "run.py", box.outside)
    vendor = vendor_site(box.sandbox / "vendor-site")
    for name in ("torchrun", "torch_npu_run", "msrun"):
        executable(box.sandbox / "bin" / name, "#!/bin/sh\nexit 0\n")
    if launcher is not None:
        materialise(launcher, box.sandbox / "bin" / "torchrun", box.outside)
        if launcher.kind in ("text", "bytes", "empty", "fifo"):
            os.chmod(str(box.sandbox / "bin" / "torchrun"), 0o755)
    return [str(torch), str(vendor)]


def pod_env(box: Box, path: List[str], changes: Dict[str, str]) -> Dict[str, str]:
    env = box.env(PYTHONPATH=os.pathsep.join(path), **POD)
    for name, value in changes.items():
        if name == "PYTHONPATH":
            env[name] += os.pathsep + value
        elif name == "TMPDIR":
            env[name] = str(box.sandbox / "tmp" / value.replace("/", "_").replace("\x00", "") or "t")
        else:
            env[name] = value
    return env


def sandbox_profile(box: Box, source: Path) -> Path:
    """``source`` copied into the sandbox with its checkpoint path (and so the job log root) there."""
    text = source.read_text(encoding="utf-8")
    ckpt = str(box.sandbox / "ckpt")
    for path in ("/job/ckpt", "/job/code"):
        text = text.replace(path, ckpt)
    return write(box.sandbox / source.name, text)


# --- timeline ------------------------------------------------------------------------------------------

KINDS = [
    "launch",
    "worker-start",
    "worker-fault",
    "worker-hang",
    "worker-stop",
    "restart",
    "exit",
    "signal",
    "fault-detected",
    "workers-stopped",
    "pg-init",
    "pg-ready",
    "pg-error",
    "first-collective",
    "recovery-timeout",
    "warm",
    "drill",
]
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(WEIRD),
)
json_values = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(WEIRD), c, max_size=3),
    max_leaves=6,
)
times = st.one_of(st.floats(min_value=0, max_value=2e9), json_values)
budget_lines = st.lists(
    st.fixed_dictionaries(
        {"level": st.sampled_from(["recover-in-place", "recover", "pod", "job"])},
        optional={"total_seconds": st.one_of(st.floats(0, 1e4), json_values), "terms": json_values},
    ),
    max_size=3,
)
events = st.fixed_dictionaries(
    {"time": times, "event": st.one_of(st.sampled_from(KINDS), json_values)},
    optional={
        "rank": st.one_of(st.integers(-2, 40), json_values),
        "exit_code": st.one_of(st.integers(-15, 255), json_values),
        "restart_count": st.one_of(st.integers(0, 5), json_values),
        "kind": st.one_of(st.sampled_from(["group", "in-place"]), json_values),
        "levels": st.one_of(st.lists(st.sampled_from(["recover-in-place", "recover", "job"]), max_size=3), json_values),
        "budget": st.one_of(budget_lines, json_values),
        "job": json_values,
        "host": json_values,
        "pid": st.one_of(st.integers(-2, 2**40), json_values),
        "generation": st.one_of(st.integers(-1, 5), json_values),
        "cause": st.one_of(st.sampled_from(["heartbeat", "start-timeout"]), json_values),
        "phase": json_values,
        "silent_seconds": st.one_of(st.floats(0, 100), json_values),
        "seconds": st.one_of(st.floats(0, 100), json_values),
        "start_timeout": st.one_of(st.integers(0, 100), json_values),
    },
)
RAW_LINES = [
    b"NaN",
    b'{"time": NaN, "event": "x"}',
    b'{"time": 1e999, "event": "worker-fault"}',
    b'{"time": -Infinity, "event": "x"}',
    b'{"time": 1, "event": "x", "rank": ' + b"9" * 5000 + b"}",
    b"[" * 5000 + b"]" * 5000,
    b'{"time": 1, "event": "x", "d": ' + b"[" * 3000 + b"]" * 3000 + b"}",
    b'{"time": 1, "event": "caf\xe9"}',
    b'{"time": 1, "event": "\\ud800"}',
    b'{"time": 1, "event": "x"',
    b"\x00\x01\x02",
    b"[]",
    b"",
]


def _line(item: Any) -> bytes:
    return json.dumps(item).encode("utf-8") if not isinstance(item, bytes) else item


timeline_files = st.one_of(
    st.lists(st.one_of(events, st.sampled_from(RAW_LINES)), min_size=0, max_size=8).map(
        lambda items: FileSpec("bytes", b"\n".join(_line(i) for i in items) + b"\n")
    ),
    st.sampled_from(SPECIAL).map(FileSpec),
)


@examples(dev=50)
@given(spec=timeline_files, extra=st.sampled_from([[], ["--events"], ["--format", "json"]]))
@example(spec=FileSpec("fifo"), extra=[])
@example(spec=FileSpec("dev-zero"), extra=["--format", "json"])
def test_timeline_under_hostile_files(short: Path, spec: FileSpec, extra: List[str]) -> None:
    box = Box.make(short)
    path = box.sandbox / "timeline-h.jsonl"
    materialise(spec, path, box.outside)
    before = state(box)
    res = run(["timeline", str(path), *extra], box.env(), box.sandbox)
    check(res, box, before, json_out="json" in extra, text_out="json" not in extra)


# --- drill -------------------------------------------------------------------------------------------------------

#: what a hostile drill is told: its options, and what sits where it looks for launchers (TMPDIR)
DRILL_OPTIONS = [
    ["--count", "0"],
    ["--count", "3"],
    ["--count", "99999999999"],
    ["--fault", "hang"],
    ["--fault", "exit", "--code", "0"],
    ["--fault", "exit", "--code", "300"],
    ["--fault", "exit", "--code", "3"],
    ["--signal", "SIGSTOP"],
    ["--signal", "\x1b[2J"],
    ["--signal", "term"],
    ["--local-rank", "-1"],
    ["--local-rank", "1"],
    ["--within", "-1"],
    ["--within", "nan"],
    ["--timeout", "0"],
    ["--launcher-pid", "1"],
    ["--format", "json"],
    ["--job", "\x1b[2J"],
]


def _status(job: str, timeline: str, **changes: Any) -> Dict[str, Any]:
    status: Dict[str, Any] = {
        "job": job,
        "launcher_pid": 4242,
        "launcher": "torchrun",
        "timeline": timeline,
        "max_restarts": 5,
        "restart_count": 0,
        "generation": 0,
        "steady": True,
        "why_not": None,
        "hang_timeout": 10,
        "start_timeout": 20,
        "workers": [{"rank": 0, "local_rank": 0, "pid": 4243, "phase": "training", "generation": 0}],
    }
    status.update(changes)
    return {"ok": True, "status": status}


#: what a process answering on an events.sock says: a launcher that lies in each way, or garbage
LIAR_ANSWERS: List[Callable[[str], Any]] = [
    lambda timeline: _status("cpu-job", timeline),
    lambda timeline: _status("cpu-job", timeline, steady=False, why_not="\x1b[2J\nrank 0"),
    lambda timeline: _status("cpu-job", timeline, max_restarts="5", generation=None),
    lambda timeline: _status("cpu-job", timeline, workers=[{"local_rank": "0"}, 7, None]),
    lambda timeline: _status("\x1b[2J", timeline),
    lambda timeline: _status("cpu-job", "/dev/zero"),
    lambda timeline: {"ok": True, "status": [1, 2]},
    lambda timeline: {"ok": "yes"},
    lambda timeline: "NaN",
    lambda timeline: "x" * 70000,
    lambda timeline: None,  # no answer at all
]
liar_answers = st.sampled_from(range(len(LIAR_ANSWERS)))


class Liar:
    """A datagram socket that answers every request with one (hostile) answer, from a thread of the
    test process (the drill runs in a forked child)."""

    def __init__(self, path: Path, answer: Any) -> None:
        import socket
        import threading

        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.answer = answer
        self.running = True
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        import socket

        while self.running:
            try:
                _, sender = self.sock.recvfrom(65536)
            except (socket.timeout, OSError):
                continue
            if self.answer is None or not sender:
                continue
            data = self.answer if isinstance(self.answer, str) else json.dumps(self.answer)
            with contextlib.suppress(OSError):
                self.sock.sendto(data.encode("utf-8"), sender)

    def close(self) -> None:
        self.running = False
        self.thread.join(5)
        self.sock.close()


@examples(dev=12)
@given(
    options=st.lists(st.sampled_from(DRILL_OPTIONS), max_size=3),
    sockets=st.lists(st.one_of(st.sampled_from(SPECIAL).map(FileSpec), liar_answers), max_size=2),
    timeline_spec=st.one_of(st.none(), timeline_files),
)
@example(options=[], sockets=[FileSpec("fifo")], timeline_spec=None)
@example(options=[["--fault", "hang"]], sockets=[0], timeline_spec=FileSpec("dev-zero"))
@example(options=[], sockets=[1, 9], timeline_spec=None)
def test_drill_under_hostile_pods(
    short: Path, options: List[List[str]], sockets: List[Any], timeline_spec: Optional[FileSpec]
) -> None:
    """No launcher, special files where launchers answer, processes there that answer as a lying
    launcher or with garbage, a timeline that is no timeline: the drill exits 0, 1 (a recovery that
    never came back) or 2, within the bound, writes nothing and signals nothing itself."""
    box = Box.make(short)
    profile = cpu_launch_profile(box)
    timeline_path = box.sandbox / "timeline-h.jsonl"
    materialise(timeline_spec or FileSpec("text", b'{"time": 1, "event": "launch"}\n'), timeline_path, box.outside)
    liars = []
    for number, item in enumerate(sockets):
        runtime = box.sandbox / "tmp" / ("%s%08d" % (launch.RUNTIME_PREFIX, number))
        runtime.mkdir()
        if isinstance(item, FileSpec):
            materialise(item, runtime / launch.SOCKET_NAME, box.outside)
        else:
            liars.append(Liar(runtime / launch.SOCKET_NAME, LIAR_ANSWERS[item](str(timeline_path))))
    argv = ["drill", "--profile", str(profile), "--timeout", "2", "--within", "0"]
    for option in options:
        argv += option
    before = state(box)
    try:
        res = run(argv, box.env(), box.sandbox)
    finally:
        for liar in liars:
            liar.close()
    check(res, box, before, allowed=(0, 1, 2), json_out="json" in argv, text_out="json" not in argv)


# --- launch --dry-run and launch ---------------------------------------------------------------------------

LOG_DIRS = ["none", "fresh", "a-file", "timeline-fifo", "timeline-dir", "dangling", "under-a-file"]


def log_dir(box: Box, kind: str) -> List[str]:
    """``--log-dir`` as ``kind`` says, laid out in the sandbox (none: the plan's, in the sandbox)."""
    logs = box.sandbox / "logs"
    if kind == "none":
        return []
    if kind == "a-file":
        logs.write_text("mine")
    elif kind in ("timeline-fifo", "timeline-dir"):
        logs.mkdir()
        timeline_path = logs / ("timeline-%s.jsonl" % launch._host())
        os.mkfifo(str(timeline_path)) if kind == "timeline-fifo" else timeline_path.mkdir()
    elif kind == "dangling":
        logs.symlink_to(box.sandbox / "gone-away")
    elif kind == "under-a-file":
        (box.sandbox / "notes").write_text("mine")
        logs = box.sandbox / "notes" / "logs"
    return ["--log-dir", str(logs)]


script_args = st.lists(values, max_size=3)


#: the share of dry runs that must get through (exit 0), or the generator only tests refusals
MIN_ACCEPTED = 0.2


@dataclasses.dataclass(frozen=True)
class PodSpec:
    """A pod as an example makes it: the environment's changes, run.py, the torchrun on PATH, the
    log directory and the training command's arguments."""

    changes: Dict[str, str]
    run_py: Optional[FileSpec]
    launcher: Optional[FileSpec]
    logs: str
    args: Tuple[str, ...]


#: what an example makes hostile: nothing, or one or two of these (so that a good share of the runs
#: gets through and exercises what a launch writes, not only what it refuses)
ASPECTS = ("env", "run.py", "launcher", "logs", "args")


@st.composite
def pods(draw: Any, aspects: Sequence[str] = ASPECTS, logs: str = "none", args: Tuple[str, ...] = ()) -> PodSpec:
    hostile = draw(st.sets(st.sampled_from(list(aspects)), max_size=2))
    return PodSpec(
        changes=draw(pod_changes) if "env" in hostile else {},
        run_py=draw(file_specs(st.sampled_from([PATCHED, RUN_PY, "import os\r\n"]))) if "run.py" in hostile else None,
        launcher=draw(st.sampled_from(SPECIAL).map(FileSpec)) if "launcher" in hostile else None,
        logs=draw(st.sampled_from(LOG_DIRS)) if "logs" in hostile else logs,
        args=tuple(draw(script_args)) if "args" in hostile else args,
    )


@functools.lru_cache(maxsize=None)
def run_py_of(example: Path) -> str:
    """torch's run.py as the image recipe leaves it for ``example`` (its plan's line once, or none)."""
    line = job_plan(load_plan(str(example))).image.runpy_patch
    return RUN_PY.replace("import os\n", line + "\nimport os\n") if line else RUN_PY


#: the share of runs that must get through (exit 0), or the generator would only test refusals
MIN_ACCEPTED = 0.2


def test_dry_run_under_hostile_pods(short: Path) -> None:
    outcomes: Counter[int] = collections.Counter()

    @examples(dev=40)
    @given(example=st.sampled_from(EXAMPLE_FILES), pod=pods())
    @example(example=EXAMPLE_FILES[-1], pod=PodSpec({}, FileSpec("fifo"), None, "none", ()))
    @example(example=EXAMPLE_FILES[-1], pod=PodSpec({}, FileSpec("dev-zero"), FileSpec("fifo"), "timeline-fifo", ()))
    @example(example=EXAMPLE_FILES[-1], pod=PodSpec({"RANK": "00", "MINDX_TASK_ID": ".."}, None, None, "none", ()))
    def one(example: Path, pod: PodSpec) -> None:
        box = Box.make(short)
        path = pod_sandbox(box, pod.run_py, pod.launcher, run_py_of(example))
        profile = sandbox_profile(box, example)
        env = pod_env(box, path, pod.changes)
        args = ["--", *pod.args] if pod.args else []
        argv = ["launch", "--profile", str(profile), "--dry-run", *log_dir(box, pod.logs), *args]
        before = state(box)
        res = run(argv, env, box.sandbox, path)
        check(res, box, before, script_out=True)
        outcomes[res.code] += 1

    one()
    assert outcomes[0] >= MIN_ACCEPTED * sum(outcomes.values()), outcomes


def cpu_launch_profile(box: Box) -> Path:
    """A two-process torchrun job without TaskD (no Manager to start), its log root in the sandbox."""
    text = profile_text(name="cpu-job", nodes=4).replace(
        "    script: train.py\n", "    script: train.py\n    checkpoint: {path: %s}\n" % (box.sandbox / "ckpt")
    )
    return write(box.sandbox / "profile.yaml", text)


def test_launch_under_hostile_pods(short: Path) -> None:
    """The real launch with a launcher that ends at once: it starts, or refuses what the dry run
    refuses, before anything is written."""
    outcomes: Counter[int] = collections.Counter()

    @examples(dev=15)
    @given(pod=pods(("env", "logs", "args"), logs="fresh", args=("train.py",)))
    @example(pod=PodSpec({}, None, None, "timeline-fifo", ("train.py",)))
    @example(pod=PodSpec({"TMPDIR": "t" * 120}, None, None, "fresh", ("train.py",)))
    def one(pod: PodSpec) -> None:
        box = Box.make(short)
        path = pod_sandbox(box, None, None, RUN_PY)
        env = pod_env(box, path, pod.changes)
        profile = cpu_launch_profile(box)
        argv = ["launch", "--profile", str(profile), *log_dir(box, pod.logs), "--", *(pod.args or ("train.py",))]
        before = state(box)
        res = run(argv, env, box.sandbox, path)
        check(res, box, before)
        outcomes[res.code] += 1

    one()
    assert outcomes[0] >= MIN_ACCEPTED * sum(outcomes.values()), outcomes


# --- doctor, doctor --node ---------------------------------------------------------------------------------

CANN_INFO = "package_name=Ascend-cann-toolkit\nversion=8.5.0\n"


@examples(dev=10)
@given(
    example=st.sampled_from(EXAMPLE_FILES),
    changes=pod_changes,
    run_py=st.one_of(st.none(), file_specs(st.sampled_from([PATCHED, RUN_PY]))),
    cann=file_specs(st.sampled_from([CANN_INFO, "version=\x1b[2J\n", "x"])),
    fmt=st.sampled_from([[], ["--format", "json"]]),
    metadata=st.one_of(st.none(), file_specs(st.sampled_from(["Name: torch\nVersion: \x1b[2J\n", "Version:"]))),
)
@example(
    example=EXAMPLE_FILES[-1],
    changes={},
    run_py=FileSpec("dev-zero"),
    cann=FileSpec("fifo"),
    fmt=[],
    metadata=FileSpec("fifo"),
)
@example(
    example=EXAMPLE_FILES[-1],
    changes={"HCCL_ASYNC_ERROR_HANDLING": "\udcff"},
    run_py=FileSpec("fifo"),
    cann=FileSpec("text", b"x"),
    fmt=[],
    metadata=None,
)
def test_doctor_under_hostile_containers(
    short: Path,
    example: Path,
    changes: Dict[str, str],
    run_py: Optional[FileSpec],
    cann: FileSpec,
    fmt: List[str],
    metadata: Optional[FileSpec],
) -> None:
    box = Box.make(short)
    path = pod_sandbox(box, run_py, None)
    materialise(metadata, Path(path[0]) / "torch-2.7.1.dist-info" / "METADATA", box.outside)
    home = box.sandbox / "cann"
    materialise(cann, home / "aarch64-linux" / "ascend_toolkit_install.info", box.outside)
    env = pod_env(box, path, dict({"ASCEND_TOOLKIT_HOME": str(home)}, **changes))
    profile = sandbox_profile(box, example)
    before = state(box)
    res = run(["doctor", "--profile", str(profile), *fmt], env, box.sandbox, path)
    check(res, box, before, allowed=(0, 1, 2), json_out=bool(fmt), text_out=not fmt)


@examples(dev=8)
@given(
    profile=st.one_of(st.none(), st.sampled_from(SPECIAL).map(FileSpec)),
    roles=st.lists(st.sampled_from(["compute", "management"]), min_size=1, max_size=2),
    fmt=st.sampled_from([[], ["--format", "json"]]),
)
def test_node_doctor_under_hostile_profiles(
    short: Path, profile: Optional[FileSpec], roles: List[str], fmt: List[str]
) -> None:
    box = Box.make(short)
    path = write(box.sandbox / "site.yaml", (FIXTURES / "profiles" / "site.yaml").read_text(encoding="utf-8"))
    materialise(profile, path, box.outside)
    argv = ["doctor", "--profile", str(path), *[a for r in roles for a in ("--node", r)], *fmt]
    before = state(box)
    res = run(argv, box.env(), box.sandbox)
    check(res, box, before, allowed=(0, 1, 2), json_out=bool(fmt), text_out=not fmt)


# --- image context ---------------------------------------------------------------------------------------

OUTS = ["fresh", "empty-arg", "a-file", "dangling", "under-a-file", "proc", "ours", "link-outside"]
MARKERS = [
    None,
    lambda files: dict(files, **{"../outside/victim.txt": "0" * 64}),
    lambda files: dict(files, **{"/etc/passwd": "0" * 64}),
    lambda files: list(files),
    lambda files: {name: "0" * 64 for name in files},
    lambda files: "wheels",
]


def image_profile(box: Box, wheel: Optional[FileSpec]) -> Path:
    """A profile with a base image and two vendor wheels (pure-Python stand-ins) with checksums."""
    wheels_dir = box.sandbox / "p" / "wheels"
    files = {
        name: Path(write_wheel(str(wheels_dir), name, "7.3.0", {"%s/__init__.py" % name: b""}))
        for name in ("taskd", "mindio_ttp")
    }
    text = profile_text(taskd=True).replace("    image:\n", "    image:\n      base: localhost/base:1\n")
    lines = "".join(
        "        %s: {file: wheels/%s, sha256: %s}\n" % (name, path.name, hashlib.sha256(path.read_bytes()).hexdigest())
        for name, path in files.items()
    )
    text = text.replace('      mindio_ttp: "7.3.0"\n', '      mindio_ttp: "7.3.0"\n      wheels:\n' + lines)
    text = text.replace("    script: train.py\n", "    script: train.py\n    checkpoint: {path: %s}\n" % box.sandbox)
    materialise(wheel, files["taskd"], box.outside)
    return write(box.sandbox / "p" / "profile.yaml", text)


def out_dir(box: Box, kind: str, profile: Path, marker: Any) -> str:
    out = box.sandbox / "ctx"
    if kind == "empty-arg":
        return ""
    if kind == "a-file":
        out.write_text("mine")
    elif kind == "dangling":
        out.symlink_to(box.sandbox / "gone-away")
    elif kind == "under-a-file":
        (box.sandbox / "notes").write_text("mine")
        return str(box.sandbox / "notes" / "ctx")
    elif kind == "proc":
        return "/proc/resumable-hostile-test/ctx"
    elif kind == "link-outside":
        (box.sandbox / "ctx").symlink_to(box.outside / "dir")
    elif kind == "ours":
        res = run(["image", "context", str(profile), "--out", str(out)], box.env(), box.sandbox)
        assert res.code == 0, res.err
        if marker is not None:
            path = out / context.MANIFEST
            data = json.loads(path.read_text())
            data["files"] = marker(data["files"])
            path.write_text(json.dumps(data))
    return str(out)


@examples(dev=8)
@given(
    wheel=st.one_of(st.none(), st.sampled_from(["fifo", "dev-zero", "dangling", "directory", "empty"]).map(FileSpec)),
    kind=st.sampled_from(OUTS),
    marker=st.sampled_from(MARKERS),
)
@example(wheel=FileSpec("fifo"), kind="fresh", marker=None)
@example(wheel=None, kind="ours", marker=MARKERS[1])
@example(wheel=None, kind="empty-arg", marker=None)
def test_image_context_under_hostile_places(
    short: Path, wheel: Optional[FileSpec], kind: str, marker: Optional[Callable[[Any], Any]]
) -> None:
    box = Box.make(short)
    profile = image_profile(box, None)
    out = out_dir(box, kind, profile, marker)
    materialise(wheel, next((box.sandbox / "p" / "wheels").glob("taskd-*.whl")), box.outside)
    before = state(box)
    res = run(["image", "context", str(profile), "--out", out], box.env(), box.sandbox)
    allowed = (0, 2) if kind != "link-outside" else (2,)  # never writes into the linked directory
    check(res, box, before, allowed=allowed)


# --- image patch-torchrun -----------------------------------------------------------------------------------

RUN_PY_TEXTS = [RUN_PY, PATCHED, PATCHED.replace("import os\n", C.RUNPY_IMPORT_TASKD + "\nimport os\n"), "import sys\n"]


@examples(dev=10)
@given(
    run_py=file_specs(st.sampled_from(RUN_PY_TEXTS)),
    taskd=st.booleans(),
    undo=st.sampled_from([[], ["--undo"]]),
)
@example(run_py=FileSpec("fifo"), taskd=True, undo=[])
@example(run_py=FileSpec("dev-zero"), taskd=True, undo=["--undo"])
def test_patch_torchrun_under_hostile_files(short: Path, run_py: FileSpec, taskd: bool, undo: List[str]) -> None:
    box = Box.make(short)
    torch = fake_torch_layout(box.sandbox / "torch-site", RUN_PY)
    materialise(run_py, torch / "torch" / "distributed" / "run.py", box.outside)
    path = [str(torch)] + ([str(vendor_site(box.sandbox / "vendor-site"))] if taskd else [])
    profile = write(box.sandbox / "profile.yaml", profile_text(taskd=True))
    env = box.env(PYTHONPATH=os.pathsep.join(path))
    before = state(box)
    res = run(["image", "patch-torchrun", "--profile", str(profile), *undo], env, box.sandbox, path)
    check(res, box, before)


# --- docs --check ------------------------------------------------------------------------------------------


@examples(dev=4)
@given(
    page=st.sampled_from(["rules.md", "profile.md", "sources.md"]),
    spec=file_specs(st.sampled_from(["", "# Rules\n", "\x1b[2J"])),
    write_mode=st.booleans(),
)
@example(page="rules.md", spec=FileSpec("fifo"), write_mode=False)
@example(page="profile.md", spec=FileSpec("dev-zero"), write_mode=True)
def test_docs_under_hostile_pages(short: Path, page: str, spec: FileSpec, write_mode: bool) -> None:
    box = Box.make(short)
    docs = box.sandbox / "docs"
    docs.mkdir()
    materialise(spec, docs / page, box.outside)
    before = state(box)
    res = run(["docs", "--out", str(docs), *([] if write_mode else ["--check"])], box.env(), box.sandbox)
    check(res, box, before)


def test_the_harness_sees_a_hang_an_internal_error_and_a_write_outside(
    short: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness itself: a command that blocks is killed at the bound and fails, an exception
    escaping main is not taken for a user error, a file written outside the sandbox is seen."""
    box = Box.make(short)
    fifo = box.sandbox / "fifo"
    os.mkfifo(str(fifo))
    monkeypatch.setattr(sys.modules[__name__], "TIME_LIMIT", 2.0)
    monkeypatch.setattr(timeline, "read_events", lambda path: open(path).read())  # noqa: SIM115 (a plain open blocks)
    with pytest.raises(pytest.fail.Exception, match="hung"):
        run(["timeline", str(fifo)], box.env(), box.sandbox)
    monkeypatch.setattr(timeline, "read_events", lambda path: 1 / 0)
    res = run(["timeline", str(fifo)], box.env(), box.sandbox)
    assert res.code == 3 and "internal error: ZeroDivisionError" in res.err
    before = state(box)

    def outside_write(path: str) -> Any:
        (box.outside / "victim.txt").write_text("changed")
        raise ResumableError("refused", path, "fix")

    monkeypatch.setattr(timeline, "read_events", outside_write)
    res = run(["timeline", str(fifo)], box.env(), box.sandbox)
    with pytest.raises(AssertionError, match="outside the sandbox"):
        check(res, box, before)
