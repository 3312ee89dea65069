"""``resumable image patch-torchrun``: idempotent, verified and reversible, on torch's file layout
and against the real installed torch (copied by hard links, so the installed one is never edited)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest
from conftest import EXAMPLES

from resumable import constants as C
from resumable.errors import ResumableError
from resumable.runtime import installed
from resumable.runtime import torchrun_patch as tp
from resumable.runtime.proctable import proc_stat

from .conftest import GIB, RUN_PY, clean_env, cli, fake_torch_layout, profile_text, python_path, read_jsonl, write

TASKD, ANCHOR = C.RUNPY_IMPORT_TASKD, C.RUNPY_ANCHOR_TASKD


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the text transformation ---------------------------------------------------------------------


def test_inserts_once_before_the_first_top_level_anchor() -> None:
    text = '"""doc: import os is mentioned here"""\nimport os\nimport sys\nimport os\n'
    new, done = tp.patched_text(text, TASKD, ANCHOR)
    assert new == '"""doc: import os is mentioned here"""\n%s\nimport os\nimport sys\nimport os\n' % TASKD
    assert done == ["inserted `%s` before `import os`" % TASKD]
    again, done_again = tp.patched_text(new, TASKD, ANCHOR)
    assert again == new and done_again == []


def test_collapses_copies_the_seed_sed_leaves_after_two_builds() -> None:
    text = "%s\n%s\nimport os\n" % (TASKD, TASKD)
    new, done = tp.patched_text(text, TASKD, ANCHOR)
    assert new == "%s\nimport os\n" % TASKD
    assert tp.count_line(new, TASKD) == 1
    assert "removed 1 extra copies" in done[0]


def test_replaces_the_elastic_agent_line_on_upgrade_to_taskd() -> None:
    text = "import logging\n%s\nimport os\n" % C.RUNPY_IMPORT_MINDX_ELASTIC
    new, done = tp.patched_text(text, TASKD, ANCHOR, [C.RUNPY_IMPORT_MINDX_ELASTIC])
    assert C.RUNPY_IMPORT_MINDX_ELASTIC not in new
    assert new == "import logging\n%s\nimport os\n" % TASKD
    assert any("removed `import mindx_elastic.api`" in d for d in done)


def test_refuses_when_the_anchor_is_missing() -> None:
    # torch 2.13's run.py has no `import logging`: PLR's and RTO's sed would silently do nothing
    with pytest.raises(ResumableError, match=r"has no top-level `import logging` line"):
        tp.patched_text("import os\n", C.RUNPY_IMPORT_MINDX_ELASTIC, C.RUNPY_ANCHOR_MINDX_ELASTIC)
    with pytest.raises(ResumableError):
        tp.patched_text("    import os\n", TASKD, ANCHOR)  # indented: not top level


def test_keeps_crlf_line_ends() -> None:
    new, _ = tp.patched_text("import os\r\nimport sys\r\n", TASKD, ANCHOR)
    assert new == "%s\r\nimport os\r\nimport sys\r\n" % TASKD


def test_undo_gives_back_the_original_text() -> None:
    original = RUN_PY
    new, _ = tp.patched_text(original, TASKD, ANCHOR)
    back, removed = tp.unpatched_text(new, TASKD)
    assert back == original and removed == 1


# --- files, on torch's layout ----------------------------------------------------------------------


def _vendor(site: Path, module: str = "vendorpatch", body: str = "") -> str:
    write(site / module / "__init__.py", "")
    write(site / module / "patch.py", body)
    return "import %s.patch" % module


def test_patch_verify_and_undo_on_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = fake_torch_layout(tmp_path / "site", RUN_PY)
    line = _vendor(site)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))
    run_py = site / "torch" / "distributed" / "run.py"
    run_py.chmod(0o640)
    before = sha(run_py)
    result = tp.patch(line, ANCHOR, str(run_py))
    assert result.changed and "works" in result.message
    assert tp.count_line(run_py.read_text(), line) == 1
    assert run_py.stat().st_mode & 0o777 == 0o640
    assert not tp.patch(line, ANCHOR, str(run_py)).changed
    assert tp.undo(line, str(run_py)).changed
    assert sha(run_py) == before
    assert not tp.undo(line, str(run_py)).changed


def test_a_patch_that_breaks_the_import_is_rolled_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = fake_torch_layout(tmp_path / "site", RUN_PY)
    line = _vendor(site, "brokenvendor", "raise ImportError('wrong torch for this TaskD')\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))
    run_py = site / "torch" / "distributed" / "run.py"
    before = sha(run_py)
    with pytest.raises(ResumableError, match=r"wrong torch for this TaskD.*the file was restored"):
        tp.patch(line, ANCHOR, str(run_py))
    assert sha(run_py) == before


def test_refuses_when_the_module_to_import_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = fake_torch_layout(tmp_path / "site", RUN_PY)
    monkeypatch.syspath_prepend(str(site))
    run_py = site / "torch" / "distributed" / "run.py"
    with pytest.raises(ResumableError, match=r"notinstalled is not installed, so `import notinstalled.patch`"):
        tp.patch("import notinstalled.patch", ANCHOR, str(run_py))
    assert tp.count_line(run_py.read_text(), "import notinstalled.patch") == 0


def test_refuses_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(installed, "package_dir", lambda name: None)
    with pytest.raises(ResumableError, match=r"torch is not installed") as info:
        tp.patch(TASKD, ANCHOR)
    assert "install torch first" in str(info.value)


def test_cli_job_without_patch_changes_nothing(tmp_path: Path) -> None:
    proc = cli(["image", "patch-torchrun", "--profile", str(EXAMPLES / "job-level-minimal.yaml")])
    assert proc.returncode == 0, proc.stderr
    assert "needs no run.py patch" in proc.stdout


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "not-utf8", "huge"])
def test_a_run_py_that_is_no_text_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    """run.py through the bounded reader, for patching and for --undo: a FIFO hung the command and a
    link to /dev/zero was read for ever (here under an address-space limit: MemoryError, exit 3)."""
    torch = fake_torch_layout(tmp_path / "torch-site", RUN_PY)
    write(tmp_path / "taskd-site" / "taskd" / "__init__.py", "")
    run_py = torch / "torch" / "distributed" / "run.py"
    run_py.unlink()
    says = {"fifo": "FIFO", "dev-zero": "character device", "not-utf8": "not UTF-8", "huge": "at most 4 MiB"}[kind]
    if kind == "fifo":
        os.mkfifo(str(run_py))
    elif kind == "dev-zero":
        run_py.symlink_to("/dev/zero")
    elif kind == "not-utf8":
        run_py.write_bytes(b"import os\n# caf\xe9\n")
    else:
        with open(str(run_py), "wb") as handle:
            handle.truncate(tp.RUN_PY_MAX_BYTES + 1)
    env = clean_env(PYTHONPATH=python_path(torch, tmp_path / "taskd-site"))
    profile = write(tmp_path / "profile.yaml", profile_text(taskd=True))
    for extra in ([], ["--undo"]):
        proc = cli(["image", "patch-torchrun", "--profile", str(profile), *extra], env, timeout=30, memory=GIB)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert str(run_py) in proc.stderr and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# --- against the real installed torch --------------------------------------------------------------


def test_real_torch_patch_is_idempotent_verified_and_reversible(
    tmp_path: Path, torch_site: Path, vendor_site: Path, wheels: Dict[str, Path], fixture_log: Path
) -> None:
    profile = write(tmp_path / "p.yaml", profile_text(taskd=True))
    env = clean_env(PYTHONPATH=python_path(torch_site, vendor_site), RESUMABLE_FIXTURE_LOG=str(fixture_log))
    run_py = torch_site / "torch" / "distributed" / "run.py"
    original = sha(run_py)
    inode = run_py.stat().st_ino

    first = cli(["image", "patch-torchrun", "--profile", str(profile)], env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "inserted `%s` before `import os`" % TASKD in first.stdout and "works" in first.stdout
    text = run_py.read_text()
    assert tp.count_line(text, TASKD) == 1
    assert text.index(TASKD) < text.index("\nimport os\n")
    assert run_py.stat().st_ino != inode, "the installed torch's file (same inode) must not be edited in place"
    # the verification imported torch.distributed.run (import check, launch check, the one-process job)
    calls = read_jsonl(fixture_log)
    assert [c["call"] for c in calls].count("patch") == 3
    # the job ran through TaskD's agent: a Manager beside it (libtaskd.so preloaded), which started it
    assert "a one-process gloo job ran through it" in first.stdout
    (init,) = [c for c in calls if c["call"] == "init_taskd_manager"]
    assert init["result"] is True and init["config"]["node_nums"] == 1 and init["config"]["proc_per_node"] == 1
    assert any(c["call"] == "agent-recv" for c in calls) and any(c["call"] == "launch_agent" for c in calls)
    # nothing of it is left running: the Manager, the agent and the worker are gone
    pids = {int(c["pid"]) for c in calls if c["call"] in ("init_taskd_manager", "launch_agent", "preload")}
    stats = [proc_stat(p) for p in pids]
    assert pids and [st for st in stats if st is not None and st.state != "Z"] == []

    patched = sha(run_py)
    second = cli(["image", "patch-torchrun", "--profile", str(profile)], env, timeout=300)
    assert second.returncode == 0 and "already has" in second.stdout
    assert sha(run_py) == patched

    # torchrun itself runs with the patch and imports the adaptor
    help_run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--help"], env=env, stdout=subprocess.PIPE, timeout=300
    )
    assert help_run.returncode == 0
    assert [c["call"] for c in read_jsonl(fixture_log)].count("patch") == 4

    undone = cli(["image", "patch-torchrun", "--profile", str(profile), "--undo"], env)
    assert undone.returncode == 0 and "removed" in undone.stdout
    assert sha(run_py) == original


def test_taskd_whose_launch_agent_refuses_torchs_arguments_is_refused(
    tmp_path: Path, torch_site: Path, upstream_taskd_site: Path
) -> None:
    """TaskD 7.3.0's patch_launch_agent takes three arguments; torch 2.13 passes health_check_server=
    (MC@v7.3.0 torch_patch.py:275-279): the module imports, torchrun dies at launch. Refused, naming
    both versions, run.py restored."""
    profile = write(tmp_path / "p.yaml", profile_text(taskd=True))
    env = clean_env(PYTHONPATH=python_path(torch_site, upstream_taskd_site))
    run_py = torch_site / "torch" / "distributed" / "run.py"
    original = sha(run_py)
    done = cli(["image", "patch-torchrun", "--profile", str(profile)], env, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "torch 2.13.0" in done.stderr and "taskd 7.3.0" in done.stderr, done.stderr
    assert "health_check_server=" in done.stderr
    assert sha(run_py) == original


def test_real_torch_refuses_without_taskd(tmp_path: Path, torch_site: Path) -> None:
    profile = write(tmp_path / "p.yaml", profile_text(taskd=True))
    proc = cli(["image", "patch-torchrun", "--profile", str(profile)], clean_env(PYTHONPATH=str(torch_site)))
    assert proc.returncode == 2
    assert (
        "taskd is not installed, so `import taskd.python.adaptor.patch` in run.py would break torchrun" in proc.stderr
    )
    assert len(proc.stderr.strip().splitlines()) == 1
    assert tp.count_line((torch_site / "torch" / "distributed" / "run.py").read_text(), TASKD) == 0


def test_real_torch_refuses_the_elastic_agent_anchor(tmp_path: Path, torch_site: Path) -> None:
    # the legacy example (Elastic Agent, `import logging` anchor) against torch 2.13: no anchor line
    site = tmp_path / "elastic"
    write(site / "mindx_elastic" / "__init__.py", "")
    write(site / "mindx_elastic" / "api.py", "")
    env = clean_env(PYTHONPATH=python_path(torch_site, site))
    proc = cli(["image", "patch-torchrun", "--profile", str(EXAMPLES / "legacy-6.0-pod-rescheduling.yaml")], env)
    assert proc.returncode == 2, proc.stdout
    assert "has no top-level `import logging` line" in proc.stderr
    assert "jobs[].image.torch" in proc.stderr


def _launch_breaking_vendor(site: Path, body: str) -> str:
    """A package (not a vendor double: made up here) whose run.py patch imports and takes every keyword
    torch passes launch_agent, but whose launch_agent then does ``body``: what only running a job shows."""
    write(
        site / "launchvendor" / "patch.py",
        "import os, sys, time\nimport torch.distributed.launcher.api as api\n"
        "def launch_agent(config, entrypoint, args, **kwargs):\n"
        "    open(os.environ['LAUNCHVENDOR_PIDS'], 'a').write('%%d\\n' %% os.getpid())\n"
        "%s\napi.launch_agent = launch_agent\n" % body,
    )
    write(site / "launchvendor" / "__init__.py", "")
    write(
        site / "launchvendor-1.2.3.dist-info" / "METADATA",
        "Metadata-Version: 2.1\nName: launchvendor\nVersion: 1.2.3\n",
    )
    return "import launchvendor.patch"


# The smoke limit: the product's 240 s where the job fails by itself (a lower limit would turn a
# slow torch import on a loaded machine into a hang), 30 s where it hangs (the limit must pass).
@pytest.mark.parametrize(
    "body, limit, why",
    [
        (
            "    raise RuntimeError('no workers on this torch')",
            tp.SMOKE_TIMEOUT,
            r"ended with exit code 1 \(.*no workers on this torch",
        ),
        ("    time.sleep(3600)", 30.0, r"did not end within 30 s"),
    ],
)
def test_a_patch_that_cannot_run_a_job_is_rolled_back_naming_both_versions(
    tmp_path: Path, torch_site: Path, monkeypatch: pytest.MonkeyPatch, body: str, limit: float, why: str
) -> None:
    site = tmp_path / "vendor"
    line = _launch_breaking_vendor(site, body)
    pids = tmp_path / "agent-pids"
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(torch_site))
    monkeypatch.setenv("PYTHONPATH", python_path(torch_site, site))
    monkeypatch.setenv("LAUNCHVENDOR_PIDS", str(pids))
    monkeypatch.setattr(tp, "SMOKE_TIMEOUT", limit)
    run_py = torch_site / "torch" / "distributed" / "run.py"
    before = sha(run_py)
    with pytest.raises(ResumableError) as info:
        tp.patch(line, "import os", str(run_py))
    text = str(info.value)
    assert re.search(r"torch 2\.13\.0\S* with launchvendor 1\.2\.3 cannot run a job", text), text
    assert re.search(why, text) and "the file was restored" in text, text
    assert sha(run_py) == before
    (agent,) = [int(p) for p in pids.read_text().split()]
    st = proc_stat(agent)
    assert st is None or st.state == "Z", "the job's agent was left running"
