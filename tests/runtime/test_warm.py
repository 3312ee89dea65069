"""Warm workers (recovery.warm_workers) with the real torchrun on the CPU (torch 2.13, gloo): the workers
of a restart are forked from a process that imported torch, and nothing tells them from fresh ones;
the launcher's guarantees (SIGTERM within the grace period, no orphans, a full log disk) hold with it
on; a framework whose import initialises a device turns it off with a warning."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from resumable.runtime.proctable import descendants, proc_stat

from .conftest import FIXTURES, full_log_disk, left_behind, process_tree, profile_text, read_jsonl, start_launch
from .test_e2e_torchrun import Job, wait_for

pytestmark = pytest.mark.slow
PROBE = FIXTURES / "probe_worker.py"
TOY = FIXTURES / "toy_worker.py"
#: what differs between the restarts of one job, warm or not: torchrun gives each restart its count and
#: its own error file (local_elastic_agent.py _start_workers, multiprocessing/api.py)
PER_RESTART = {"TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_ERROR_FILE"}


def warm_events(job: Job, state: str) -> List[Dict[str, Any]]:
    return [e for e in job.timeline("warm") if e["state"] == state]


def warm_workers(job: Job) -> List[Dict[str, Any]]:
    return [e for e in job.timeline("worker-start") if e.get("warm")]


def is_warm_process(pid: int) -> bool:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return b"zygote_main" in handle.read()
    except OSError:
        return False


def test_a_worker_forked_warm_sees_what_a_fresh_one_sees(tmp_path: Path) -> None:
    """Generation 0 starts fresh (the warm process imports meanwhile); rank 1 exits with 3, the agent
    restarts the group, and generation 1 is forked warm once the warm process is ready. Each worker
    writes what it sees after ``import torch``: every field but the restart's own two variables is
    the same for the fresh and the warm process of a rank."""
    job = Job(tmp_path, profile_text(npus=2, max_restarts=1, monitor=1, warm=True))
    views = tmp_path / "views"
    views.mkdir()
    hold = tmp_path / "fail-now"
    # the fault only once the warm process is ready: rank 1 of restart 0 waits for the file the test writes
    script = [str(PROBE), "--out", str(views), "--hold", str(hold)]
    proc = start_launch(job.profile, job.logs, job.env, script, stderr=subprocess.STDOUT)
    wait_for(lambda: warm_events(job, "ready"), proc, timeout=300)
    hold.write_text("")
    out, _ = proc.communicate(timeout=400)
    (tmp_path / "launcher.out").write_text(out)
    assert proc.returncode == 0, out[-3000:]
    starts = job.timeline("worker-start")
    assert [(e["restart_count"], e["warm"]) for e in starts] == [(0, False)] * 2 + [(1, True)] * 2
    for rank in (0, 1):
        fresh = json.loads((views / ("view-0-%d.json" % rank)).read_text())
        warm = json.loads((views / ("view-1-%d.json" % rank)).read_text())
        for seen in (fresh, warm):  # fd 3: each process's own heartbeat socket (a new socket each)
            seen["fds"] = {fd: re.sub(r"socket:\[\d+\]", "socket", target) for fd, target in seen["fds"].items()}
        differ = {k for k in set(fresh["env"]) | set(warm["env"]) if fresh["env"].get(k) != warm["env"].get(k)}
        assert differ <= PER_RESTART and "TORCHELASTIC_RESTART_COUNT" in differ, differ
        for key in fresh:
            if key != "env":
                assert warm[key] == fresh[key], "%s differs for rank %d:\nfresh %s\nwarm  %s" % (
                    key,
                    rank,
                    fresh[key],
                    warm[key],
                )
    # the fds: stdin, stdout, stderr (torchrun gives the workers the agent's) and the hook's socket; the
    # signals: Python's own
    assert fresh["fds"]["3"] == "socket" and sorted(fresh["fds"]) == ["0", "1", "2", "3"]
    assert fresh["session"] == [True, True]
    assert fresh["signals"][str(int(signal.SIGINT))] == "default_int_handler"


def _warm_job(tmp_path: Path, grace: int = 10) -> Job:
    return Job(tmp_path, profile_text(npus=2, max_restarts=3, monitor=1, grace=grace, warm=True))


def _restart_warm(job: Job, proc: subprocess.Popen[str]) -> None:
    """Wait for the warm process, kill rank 1, wait for the warm restart and its training."""
    wait_for(lambda: warm_events(job, "ready") and len(job.steps()) >= 3, proc, timeout=300)
    victim = next(e for e in job.timeline("worker-start") if e["rank"] == 1)
    os.kill(victim["pid"], signal.SIGKILL)
    wait_for(lambda: len(warm_workers(job)) == 2 and job.timeline("first-collective")[-1]["generation"] >= 1, proc)


def test_sigterm_with_warm_workers_ends_every_process_within_the_grace_period(tmp_path: Path) -> None:
    job = _warm_job(tmp_path, grace=4)
    proc = job.start("--steps", "100000", "--step-seconds", "0.1", "--ignore-sigterm")
    _restart_warm(job, proc)
    tree = process_tree(proc.pid)
    assert any(is_warm_process(pid) for pid, _ in tree), "the warm process runs"
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, out[-3000:]
    assert time.monotonic() - began < 15
    assert left_behind(tree) == []
    assert [e["signal"] for e in job.timeline("signal")] == ["SIGTERM"]


def test_a_dying_agent_with_warm_workers_leaves_no_orphans(tmp_path: Path) -> None:
    job = _warm_job(tmp_path)
    proc = job.start("--steps", "100000", "--step-seconds", "0.1")
    _restart_warm(job, proc)
    tree = process_tree(proc.pid)
    workers = [e["pid"] for e in warm_workers(job)]
    (agent,) = [pid for pid, st in tree if st is not None and st.ppid == proc.pid]
    # the warm workers are the agent's own children (clone CLONE_PARENT), as fresh ones are
    assert all(getattr(proc_stat(pid), "ppid", None) == agent for pid in workers)
    os.kill(agent, signal.SIGKILL)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGKILL, out[-3000:]
    assert left_behind(tree) == []
    kill = [e for e in job.timeline("kill") if e["reason"].startswith("left over")]
    assert kill and set(workers) <= set(kill[0]["pids"])


def test_a_hung_warm_worker_is_killed_and_its_exit_code_ends_the_job(tmp_path: Path) -> None:
    """The heartbeat of a worker forked warm: SIGSTOPped, it is taken for hung after the hang timeout
    and killed; with no restart left the job ends with the hung worker's code (128 + SIGKILL)."""
    job = Job(tmp_path, profile_text(npus=2, max_restarts=1, monitor=1, hang_timeout=10, warm=True))
    proc = job.start("--steps", "100000", "--step-seconds", "0.1")
    _restart_warm(job, proc)
    victim = warm_workers(job)[-1]
    os.kill(victim["pid"], signal.SIGSTOP)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGKILL, out[-3000:]
    (hang,) = job.timeline("worker-hang")
    assert (hang["pid"], hang["cause"], hang["phase"]) == (victim["pid"], "heartbeat", "training")
    assert job.timeline("exit")[-1]["exit_code"] == 128 + signal.SIGKILL


@pytest.mark.parametrize("then, code", [("exit", 5), ("raise", 1)])
def test_a_warm_worker_ends_as_a_fresh_one_and_its_code_ends_the_job(tmp_path: Path, then: str, code: int) -> None:
    """With no restart left, a worker forked warm that calls ``sys.exit(5)`` ends the job with 5; one
    whose script raises prints the traceback from the script's own frames (none of the warm process's)
    and exits 1, as ``python -u SCRIPT`` does; the launcher reads that code from the process itself."""
    job = Job(tmp_path, profile_text(npus=2, max_restarts=1, monitor=1, warm=True))
    views, hold = tmp_path / "views", tmp_path / "fail-now"
    views.mkdir()
    script = [str(PROBE), "--out", str(views), "--hold", str(hold), "--then", then]
    proc = start_launch(job.profile, job.logs, job.env, script, stderr=subprocess.STDOUT)
    wait_for(lambda: warm_events(job, "ready"), proc, timeout=300)
    hold.write_text("")
    out, _ = proc.communicate(timeout=400)
    (tmp_path / "launcher.out").write_text(out)
    assert proc.returncode == code, out[-3000:]
    (failed,) = [e for e in warm_workers(job) if e["rank"] == 1]
    fault = job.timeline("worker-fault")[-1]
    assert (fault["pid"], fault["exit_code"]) == (failed["pid"], code)
    if then == "raise":
        trace = out[out.index("Traceback (most recent call last):") :].split("ProbeFailure: ")[0]
        frames = re.findall(r'File "([^"]+)"', trace)
        assert frames and all(Path(f).name == "probe_worker.py" for f in frames), trace
        assert "ProbeFailure: rank 1 of restart 1 fails on purpose" in out


def test_a_full_log_disk_with_warm_workers_leaves_no_process_behind(tmp_path: Path) -> None:
    with full_log_disk(tmp_path / "disk") as logs:
        job = _warm_job(tmp_path)
        job.logs = logs
        # the toy worker fails once, late enough for the warm process to be ready on a loaded machine
        script = [str(TOY), "--progress", str(tmp_path / "toy.jsonl"), "--steps", "400", "--step-seconds", "0.05"]
        proc = start_launch(job.profile, job.logs, job.env, [*script, "--exit-code", "3", "--exit-step", "300"])
        wait_for(lambda: any(is_warm_process(pid) for pid in descendants(proc.pid)), proc, timeout=120)
        tree = process_tree(proc.pid)
        warm = [pid for pid, _ in tree if is_warm_process(pid)]
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]  # the restarted training succeeded: not exit 3 ("our bug")
        assert "Traceback" not in err, err[-3000:]
        assert "timeline write(s)" in err and "No space left on device" in err
        assert warm and left_behind(tree) == []  # the warm process too
        attempts = {e["attempt"] for e in read_jsonl(tmp_path / "toy.jsonl")}
        assert attempts == {0, 1}


def test_an_import_that_initialises_a_device_turns_warm_workers_off(tmp_path: Path) -> None:
    """torch_npu (the fixture) whose import initialises the NPU: the warm process finds
    torch.npu.is_initialized() true after the import and the feature turns off, with a warning on
    stderr and in the timeline; the restart starts fresh and the training goes on. The compile mode is
    applied in every training process, fresh ones included (the fixture records the call)."""
    calls = tmp_path / "calls.jsonl"
    job = Job(
        tmp_path,
        profile_text(npus=2, max_restarts=2, monitor=1, warm=True),
        site=[FIXTURES / "torch_npu"],
    )
    job.env.update(RESUMABLE_FIXTURE_NPU_INIT_ON_IMPORT="1", RESUMABLE_FIXTURE_LOG=str(calls))
    proc = job.start("--steps", "100000", "--step-seconds", "0.1")
    wait_for(lambda: warm_events(job, "off") and len(job.steps()) >= 3, proc, timeout=300)
    (off,) = warm_events(job, "off")
    assert "initialised torch.npu" in off["reason"]
    victim = next(e for e in job.timeline("worker-start") if e["rank"] == 1)
    os.kill(victim["pid"], signal.SIGKILL)
    wait_for(lambda: len(job.timeline("worker-start")) == 4, proc)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert "warm workers are off" in out and "initialised torch.npu" in out
    assert not warm_workers(job)


def test_the_compile_mode_is_applied_in_a_worker_forked_warm(tmp_path: Path) -> None:
    """The plan's compile call is made in each training process after torch_npu is imported: in a
    fresh one after the script's import, in a warm one before its script (torch_npu is imported), never
    in the warm process itself."""
    calls = tmp_path / "calls.jsonl"
    profile = profile_text(npus=2, max_restarts=2, monitor=1, warm=True).replace(
        "    recovery:\n", "    compile:\n      mode: binaries\n    recovery:\n"
    )
    job = Job(tmp_path, profile, site=[FIXTURES / "torch_npu"])
    job.env.update(RESUMABLE_FIXTURE_LOG=str(calls))
    script = tmp_path / "train_npu.py"
    script.write_text(
        "import runpy, sys\nimport torch_npu  # noqa: F401\nsys.argv = sys.argv[1:]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    args = [str(script), str(FIXTURES / "train_ckpt.py"), "--ckpt", str(job.ckpt), "--progress", str(job.progress)]
    proc = start_launch(job.profile, job.logs, job.env, [*args, "--steps", "100000", "--step-seconds", "0.1"])
    _restart_warm(job, proc)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    compiled = {c["pid"] for c in read_jsonl(calls) if c["call"] == "set_compile_mode"}
    starts = {e["pid"] for e in job.timeline("worker-start")}
    warm_pids = {e["pid"] for e in warm_workers(job)}
    zygote = {e["pid"] for e in warm_events(job, "starting")}
    assert starts <= compiled and warm_pids and not compiled & zygote
