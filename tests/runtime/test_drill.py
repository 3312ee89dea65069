"""``resumable drill`` against a real launch (torchrun on the CPU, gloo, train_ckpt.py): its three faults
(a kill with a signal, a hang by SIGSTOP, an exit with a code), each measured against the plan's
budget, and each refusal (no launcher of the job here, more faults than restarts left, a job not in
steady training)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from .conftest import cli, profile_text
from .test_e2e_torchrun import Job, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture()
def tmpdir_short() -> Iterator[Path]:
    """TMPDIR for the launcher and the drill: the launcher's sockets live under it (at most 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="rd-"))
    yield path
    shutil.rmtree(str(path), ignore_errors=True)


def drill(job: Job, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return cli(["drill", "--profile", str(job.profile), *args], job.env, timeout=timeout)


def steady(job: Job) -> bool:
    """Both processes of the newest generation ran their first collective."""
    starts = job.timeline("worker-start")
    if not starts:
        return False
    generation = max(e["generation"] for e in starts)
    return len([e for e in job.timeline("first-collective") if e["generation"] == generation]) == 2


def phases(round_: Dict[str, Any]) -> Dict[str, Any]:
    return {p["phase"]: p for p in round_["phases"]}


def test_the_three_faults_against_a_real_launch(tmp_path: Path, tmpdir_short: Path) -> None:
    job = Job(tmp_path, profile_text(npus=2, max_restarts=5, monitor=1, hang_timeout=10))
    job.env["TMPDIR"] = str(tmpdir_short)
    proc = job.start("--steps", "100000", "--every", "5", "--step-seconds", "0.05")
    try:
        wait_for(lambda: steady(job), proc)
        # a kill with a signal, twice, JSON: each round's phases against the budget, then the spread
        done = drill(job, "--fault", "kill", "--signal", "SIGKILL", "--local-rank", "1", "--count", "2")
        assert done.returncode == 0, done.stderr + done.stdout
        # (the JSON form of the same rounds, from the timeline the drill names)
        out = drill(job, "--fault", "exit", "--code", "7", "--local-rank", "0", "--format", "json", "--seed", "3")
        assert out.returncode == 0, out.stderr + out.stdout
        report = json.loads(out.stdout)
        (round_,) = report["rounds"]
        assert round_["recovered"] and round_["local_rank"] == 0 and round_["rank"] == 0
        assert report["fault"] == {"fault": "exit", "code": 7}
        measured = phases(round_)
        for name in ("detect", "stop", "start", "comm init", "first step", "whole"):
            assert measured[name]["seconds"] is not None, measured[name]
        assert measured["comm init"]["budget_terms"] == ["T2 comm init"]
        assert {s["phase"] for s in report["spread"]} >= {"detect", "reschedule", "whole"}
        # a hang: SIGSTOP, found by the heartbeat after the hang timeout (10 s), killed, restarted
        hung = drill(job, "--fault", "hang", "--local-rank", "1", "--timeout", "200")
        assert hung.returncode == 0, hung.stderr + hung.stdout
        assert "hang, 1 round" in hung.stdout and "fault -> first collective" in hung.stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    # the timeline: each injected fault named as the drill's, with the process it hit
    injected = job.timeline("drill")
    assert [(e["fault"], e["local_rank"]) for e in injected] == [("kill", 1), ("kill", 1), ("exit", 0), ("hang", 1)]
    assert [e.get("signal") for e in injected] == ["SIGKILL", "SIGKILL", None, "SIGSTOP"]
    assert injected[2]["code"] == 7
    faults = job.timeline("worker-fault")
    assert [f["exit_code"] for f in faults[:3]] == [-signal.SIGKILL, -signal.SIGKILL, 7]
    (hang,) = job.timeline("worker-hang")
    assert hang["pid"] == injected[3]["pid"] and hang["cause"] == "heartbeat"
    text = done.stdout
    assert "kill SIGKILL, 2 rounds" in text and "round 2: local rank 1" in text
    assert "spread over the rounds (min / median / max)" in text and "T2 comm init" in text


def test_the_refusals(tmp_path: Path, tmpdir_short: Path) -> None:
    """Exit 2, one paragraph naming why: no launcher of the job here (an empty TMPDIR), more faults than
    restarts left, a job not in steady training (rank 0 never starts its process group)."""
    job = Job(tmp_path, profile_text(npus=2, max_restarts=2, monitor=1))
    job.env["TMPDIR"] = str(tmpdir_short)
    nobody = drill(job)
    assert nobody.returncode == 2 and "no launcher of job cpu-job runs here" in nobody.stderr, nobody.stderr
    assert len(nobody.stderr.strip().splitlines()) == 1
    proc = job.start("--steps", "100000", "--stall-rank", "0", "--stall-restart", "0")
    try:
        wait_for(lambda: len(job.timeline("pg-init")) == 1, proc)
        busy = drill(job, "--count", "1")
        assert busy.returncode == 2 and "not in steady training" in busy.stderr, busy.stderr
        assert "rank 0 is before process group init" in busy.stderr
        many = drill(job, "--count", "3")
        assert many.returncode == 2 and "3 faults would exceed the job's max restarts: 2" in many.stderr, many.stderr
        wrong: List[str] = ["--fault", "exit", "--code", "0"]
        assert drill(job, *wrong).returncode == 2
        assert drill(job, "--signal", "SIGSTOP").returncode == 2
        other = drill(job, "--launcher-pid", "1")
        assert other.returncode == 2 and "with pid 1" in other.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    assert job.timeline("drill") == []  # nothing was injected
