"""Shared pieces of the runtime tests: fixture wheels and site directories, profiles, the CLI in a
child process (the launcher handles signals and children, so it is never run in the test process)."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import resource
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence

import pytest
from conftest import FIXTURES as TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "runtime"
sys.path.insert(0, str(FIXTURES))

import build_fixtures  # noqa: E402

#: variables of the test machine that would leak into what the launcher reads
POD_VARS = (
    "RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "LOCAL_RANK",
    "POD_IP",
    "MINDX_TASK_ID",
    "MS_SCHED_HOST",
    "MS_SCHED_PORT",
    "MS_NODE_RANK",
    "MS_WORKER_NUM",
    "MS_LOCAL_WORKER",
    "LD_PRELOAD",
    "PYTHONPATH",
    "RESUMABLE_PROFILE",
    "RESUMABLE_JOB",
    "TORCHELASTIC_RESTART_COUNT",
)

profile_text = build_fixtures.cpu_profile


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


#: where the TaskD double's logger writes unless a test says otherwise: TaskD builds its log directory
#: at import, relative to the working directory by default (./taskd_log/, mode 0o750)
TASKD_LOG_DEFAULT = os.path.join(tempfile.gettempdir(), "resumable-tests-taskd-log-%d" % os.getpid())
atexit.register(shutil.rmtree, TASKD_LOG_DEFAULT, True)  # written by the tests' TaskD double only


def clean_env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in POD_VARS}
    env.setdefault("TASKD_LOG_PATH", TASKD_LOG_DEFAULT)
    env.update(extra)
    return env


def cli(
    args: Sequence[str], env: Optional[Mapping[str, str]] = None, timeout: float = 120, memory: Optional[int] = None
) -> subprocess.CompletedProcess[str]:
    """``resumable ARGS`` with this interpreter, in a child process; with ``memory``, at most that many
    bytes of address space (an endless read, a link to /dev/zero read whole, fails fast instead of
    filling the machine's memory)."""

    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run(
        [sys.executable, "-m", "resumable", *args],
        env=dict(env) if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit if memory is not None else None,
    )


#: the address space a CLI run in a test may take where a file could be endless
GIB = 1 << 30


def assert_dry_run_script(out: str, what: str = "") -> None:
    """Every line a dry run prints is a comment, an export of one quoted word, or one of its two
    commands (the TaskD Manager under this Python, the launcher): a newline in a value never starts a
    line of its own (issue 25)."""
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        words = shlex.split(line, comments=True)
        assert words, what
        if words[0] == "export":
            assert len(words) == 2 and "=" in words[1], "an export of more than one word: %r\n%s" % (line, what)
            continue
        launchers = ("torchrun", "torch_npu_run", "msrun")
        assert words[0] == sys.executable or Path(words[0]).name in launchers, "not a command: %r\n%s" % (line, what)


def start_launch(
    profile: Path, log_dir: Path, env: Mapping[str, str], script: Sequence[str], stderr: Optional[int] = subprocess.PIPE
) -> subprocess.Popen[str]:
    """``resumable launch --profile P --log-dir D -- SCRIPT...`` in a child process (it handles signals
    and children, so it never runs in the test process)."""
    argv = [sys.executable, "-m", "resumable", "launch", "--profile", str(profile), "--log-dir", str(log_dir), "--"]
    return subprocess.Popen([*argv, *script], env=dict(env), stdout=subprocess.PIPE, stderr=stderr, text=True)


def read_jsonl(path: Path) -> List[Dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            with contextlib.suppress(ValueError):  # a line being written right now
                out.append(json.loads(line))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def have_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


def need_torch() -> None:
    if not have_torch():
        pytest.skip("torch is not installed in this Python (the Python 3.8 run has none); the 3.11 run covers it")


def executable(path: Path, text: str) -> Path:
    write(path, text)
    path.chmod(0o755)
    return path


def fake_torch_layout(site: Path, run_py: str, version: str = "2.13.0") -> Path:
    """torch's file layout (package, distributed/run.py, dist-info) without torch, for the tests of
    what reads it without importing it (dry run, doctor) on Pythons without torch."""
    write(site / "torch" / "__init__.py", "")
    write(site / "torch" / "distributed" / "__init__.py", "")
    write(site / "torch" / "distributed" / "run.py", run_py)
    write(
        site / ("torch-%s.dist-info" % version) / "METADATA",
        "Metadata-Version: 2.1\nName: torch\nVersion: %s\n" % version,
    )
    return site


RUN_PY = '''"""torch.distributed.run stand-in."""

import os
import sys
'''


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    if not build_fixtures.compiler():
        pytest.skip("no C compiler to build the fixture libtaskd.so (apt-get install gcc)")
    out = tmp_path_factory.mktemp("wheels")
    return {
        "taskd": Path(build_fixtures.build_taskd(str(out))),
        "mindio_ttp": Path(build_fixtures.build_mindio_ttp(str(out))),
    }


@pytest.fixture(scope="session")
def compat_taskd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The TaskD double whose patched launch_agent accepts torch 2.13's keyword arguments (no upstream
    release does: see build_fixtures.build_taskd); the e2e tests run the agent loop on it."""
    if not build_fixtures.compiler():
        pytest.skip("no C compiler to build the fixture libtaskd.so (apt-get install gcc)")
    return Path(build_fixtures.build_taskd(str(tmp_path_factory.mktemp("wheels-compat")), compat=True))


def _site(tmp_path_factory: pytest.TempPathFactory, name: str, wheels: Sequence[Path]) -> Path:
    site = tmp_path_factory.mktemp(name)
    for wheel in wheels:
        build_fixtures.install_into(str(wheel), str(site))
    return site


@pytest.fixture(scope="session")
def vendor_site(wheels: Dict[str, Path], compat_taskd: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TaskD (the compat double) and MindIO installed: the site the e2e tests run the launcher on."""
    return _site(tmp_path_factory, "vendor-site", [compat_taskd, wheels["mindio_ttp"]])


@pytest.fixture(scope="session")
def upstream_taskd_site(wheels: Dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TaskD 7.3.0 as upstream ships it (launch_agent takes three arguments) and MindIO."""
    return _site(tmp_path_factory, "upstream-site", [wheels["taskd"], wheels["mindio_ttp"]])


@pytest.fixture()
def torch_site(tmp_path: Path) -> Path:
    """The installed torch, hard-linked into a directory of this test: tests patch its run.py (the
    patch writes a new file and renames it, so the installed torch is never touched)."""
    need_torch()
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.submodule_search_locations
    src = Path(next(iter(spec.submodule_search_locations)))
    site = tmp_path / "torch-site"
    site.mkdir()

    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    shutil.copytree(str(src), str(site / "torch"), copy_function=link, ignore=shutil.ignore_patterns("__pycache__"))
    for info in src.parent.glob("torch-*.dist-info"):
        shutil.copytree(str(info), str(site / info.name))
    return site


@pytest.fixture()
def fixture_log(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "fixture-calls.jsonl"


def python_path(*dirs: Path) -> str:
    return os.pathsep.join(str(d) for d in dirs)


def process_tree(root: int) -> List[Any]:
    """Every live process below ``root`` with its /proc stat (to recognise it later)."""
    from resumable.runtime.proctable import descendants, proc_stat

    return [(pid, proc_stat(pid)) for pid in descendants(root)]


def left_behind(tree: List[Any]) -> List[int]:
    """The processes of ``tree`` (same pid, same start time) still alive and not zombies."""
    from resumable.runtime.proctable import proc_stat

    left = []
    for pid, st in tree:
        now = proc_stat(pid)
        if st is not None and now is not None and now.starttime == st.starttime and now.state != "Z":
            left.append(pid)
    return left


@contextlib.contextmanager
def full_log_disk(path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs mounted at ``path`` with an empty directory ``logs`` on it, the rest filled to
    the last block; yields ``logs`` and unmounts after. Skips where mounting is not permitted."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root and mount permission)")
    try:
        logs = path / "logs"
        logs.mkdir()
        fd = os.open(str(path / "filler"), os.O_WRONLY | os.O_CREAT)
        with contextlib.suppress(OSError):
            while os.write(fd, b"x" * 512):
                pass
        os.close(fd)
        yield logs
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
