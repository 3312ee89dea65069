"""``resumable timeline`` of a long job's log (issue 32): 50,000 events of a job with thousands of restarts
are a legitimate timeline. It is read whole (the reader's bound, 64 MiB, holds it many times over) and
summarised; and when the summary cannot be written where it goes (here a file larger than the process
may write, the file size limit: Python ignores SIGXFSZ, so the write fails with EFBIG) that is said in
one paragraph with exit 2, not as an internal error (exit 3: before, ``OSError: [Errno 27] File too
large``)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List, NamedTuple

import pytest

from resumable.runtime.timeline import MAX_TIMELINE_BYTES, TimelineWriter

from .conftest import GIB, clean_env, cli

EVENTS = 50_000
#: the file size limit of the runs that write the summary to a file: below the size of the summary
FILE_LIMIT = 2 << 20


def _write_long_job(path: Path) -> int:
    """A two-rank job that fails and recovers until the timeline has EVENTS lines: in place and whole-group
    restarts by turns, each recovery with its phases. Returns the number of recoveries."""
    writer = TimelineWriter(str(path))
    budget = [
        {"level": "recover-in-place", "total_seconds": 145.4, "terms": {"detect": 5.0, "T1 reschedule": 0.0}},
        {"level": "recover", "total_seconds": 305.5, "terms": {"detect": 5.0, "T1 reschedule": 150.1}},
    ]
    now, pid, rc, generation, written, recoveries = 1.7e9, 1000, 0, 0, 0, 0

    def write(event: str, /, **fields: object) -> None:
        nonlocal written
        writer.write(event, when=now, **fields)  # type: ignore[arg-type]
        written += 1

    write("launch", job="long", host="pod-0", pid=1, levels=["recover-in-place", "recover"], budget=budget)
    pids = {}
    for rank in (0, 1):
        pid += 1
        pids[rank] = pid
        write("worker-start", rank=rank, restart_count=rc, pid=pid, local_rank=rank, generation=generation)
    while written < EVENTS - 16:
        now += 60.0
        in_place = recoveries % 2 == 0
        write("worker-fault", rank=1, exit_code=-9, restart_count=rc, pid=pids[1], generation=generation)
        write("fault-detected", rank=1, restart_count=rc, pid=pids[1], generation=generation)
        if not in_place:
            write("worker-stop", rank=0, exit_code=-15, restart_count=rc, pid=pids[0], generation=generation)
        write("workers-stopped", pids=sorted(pids.values()), generation=generation)
        now += 2.0
        generation += 1
        rc += 0 if in_place else 1
        restarted = [1] if in_place else [0, 1]
        write(
            "restart",
            restart_count=rc,
            seconds=2.0,
            kind="in-place" if in_place else "group",
            generation=generation,
            fault_ranks=[1],
        )
        for rank in restarted:
            pid += 1
            pids[rank] = pid
            write("worker-start", rank=rank, restart_count=rc, pid=pid, local_rank=rank, generation=generation)
        for kind in ("pg-init", "pg-ready", "first-collective"):
            now += 1.0
            for rank in restarted:
                write(kind, rank=rank, restart_count=rc, pid=pids[rank], generation=generation)
        recoveries += 1
    while written < EVENTS:
        write("warm", pid=1, state="ready", reason="")
    writer.close()
    return recoveries


class LongJob(NamedTuple):
    path: Path
    recoveries: int


@pytest.fixture(scope="module")
def long_job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LongJob]:
    path = tmp_path_factory.mktemp("long") / "timeline-pod-0.jsonl"
    yield LongJob(path, _write_long_job(path))


def test_the_log_is_long_and_valid(long_job: LongJob) -> None:
    lines = long_job.path.read_bytes().splitlines()
    assert len(lines) == EVENTS and long_job.path.stat().st_size < MAX_TIMELINE_BYTES // 4
    assert long_job.recoveries > 3000
    assert all(json.loads(line)["event"] for line in lines[:100])


@pytest.mark.parametrize("extra", [[], ["--format", "json"]], ids=["text", "json"])
def test_a_long_jobs_timeline_is_summarised(long_job: LongJob, extra: List[str]) -> None:
    """Held whole, within the address space the tests give a reading command."""
    proc = cli(["timeline", str(long_job.path), *extra], memory=GIB, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    recoveries = long_job.recoveries
    if extra:
        data = json.loads(proc.stdout)
        assert data["events"] == EVENTS and len(data["recoveries"]) == recoveries
        hows = {r["how"] for r in data["recoveries"]}
        assert hows == {"in place", "group"} and all(r["seconds"] == 2.0 for r in data["recoveries"])
    else:
        head = proc.stdout.splitlines()[0]
        assert "1 launch, %d faults, %d restarts" % (recoveries, recoveries) in head, head


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


@pytest.mark.parametrize("extra", [[], ["--format", "json"]], ids=["text", "json"])
def test_a_summary_that_cannot_be_written_is_said_with_exit_2(
    long_job: LongJob, tmp_path: Path, extra: List[str]
) -> None:
    """The summary goes to a file, and the file size limit is below its size (the log itself is below
    it): exit 2, one paragraph on stderr naming standard output, the reason and the fix."""
    assert long_job.path.stat().st_size > FILE_LIMIT  # written without the limit; the summary is larger still
    out = tmp_path / "summary.out"
    with out.open("wb") as sink:
        proc = subprocess.run(
            [sys.executable, "-m", "resumable", "timeline", str(long_job.path), *extra],
            env=clean_env(),
            stdout=sink,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,
            preexec_fn=_limit_file_size,
        )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: standard output: cannot be written (File too large)"), lines[0]
    assert "ulimit -f" in lines[0] and "internal error" not in proc.stderr
