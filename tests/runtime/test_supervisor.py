"""``resumable launch`` running children: faults and restarts in the timeline, exit codes, signals,
no orphans, the supervised TaskD Manager. The agent here is tests/fixtures/runtime/fake_torchrun.py
(torchrun's restart contract without torch), so this also runs on Python 3.8; test_e2e_torchrun.py
repeats the essentials with the real torchrun."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

from resumable import constants as C
from resumable.runtime.hangwatch import RECORDED_DECIMALS
from resumable.runtime.proctable import descendants, proc_stat
from resumable.runtime.supervisor import decode_status, shell_code

from .conftest import (
    FIXTURES,
    RUN_PY,
    clean_env,
    cli,
    executable,
    fake_torch_layout,
    free_port,
    full_log_disk,
    left_behind,
    process_tree,
    profile_text,
    python_path,
    read_jsonl,
    start_launch,
    write,
)

TOY = FIXTURES / "toy_worker.py"


def recorded_over(seconds: Any, bound: float) -> bool:
    """A duration the launcher measured to be over ``bound`` and recorded rounded to
    RECORDED_DECIMALS: what it wrote can be under the bound by half the last decimal, no more."""
    return float(seconds) >= bound - 0.5 * 10.0**-RECORDED_DECIMALS


class Pod:
    def __init__(self, tmp: Path, profile: str, extra_path: Optional[List[Path]] = None) -> None:
        self.tmp = tmp
        self.profile = write(tmp / "profile.yaml", profile)
        bin_dir = tmp / "bin"
        executable(
            bin_dir / "torchrun",
            "#!%s\nimport runpy\nrunpy.run_path(%r, run_name='__main__')\n"
            % (sys.executable, str(FIXTURES / "fake_torchrun.py")),
        )
        self.logs = tmp / "logs"
        self.progress = tmp / "progress.jsonl"
        self.env = clean_env(
            PATH="%s:%s" % (bin_dir, os.environ.get("PATH", "/usr/bin:/bin")),
            RANK="0",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(free_port()),
            PYTHONPATH=python_path(*(extra_path or [])),
            TASKD_LOG_PATH=str(tmp / "taskd-log"),
            TASKD_DOUBLE_MANAGER_PORT=str(free_port()),
        )

    def start(self, *worker_args: str) -> subprocess.Popen[str]:
        return start_launch(
            self.profile, self.logs, self.env, [str(TOY), "--progress", str(self.progress), *worker_args]
        )

    def run(self, *worker_args: str, timeout: float = 120) -> Tuple[int, str]:
        proc = self.start(*worker_args)
        _, err = proc.communicate(timeout=timeout)
        return proc.returncode, err

    @property
    def timeline(self) -> Path:
        (path,) = self.logs.glob("timeline-*.jsonl")
        return path

    def events(self, kind: Optional[str] = None) -> List[Dict[str, Any]]:
        """The timeline's events so far; none before the launcher has opened it (its log directory
        is made first, so a poll can see the directory without the file)."""
        if not list(self.logs.glob("timeline-*.jsonl")):
            return []
        items = read_jsonl(self.timeline)
        return [e for e in items if kind is None or e["event"] == kind]


def wait_for(predicate: Callable[[], object], timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def alive(pid: int, starttime: int) -> bool:
    st = proc_stat(pid)
    return st is not None and st.starttime == starttime and st.state != "Z"


def test_fault_restart_resume_and_timeline(tmp_path: Path) -> None:
    pod = Pod(tmp_path, profile_text(max_restarts=2, monitor=1, torch="2.1.0"))
    code, err = pod.run("--steps", "40", "--exit-code", "7", "--exit-rank", "1", "--exit-step", "3")
    assert code == 0, err
    kinds = [e["event"] for e in pod.events()]
    assert kinds[0] == "launch" and kinds[-1] == "exit"
    (fault,) = pod.events("worker-fault")
    assert (fault["rank"], fault["exit_code"], fault["restart_count"]) == (1, 7, 0)
    (stop,) = pod.events("worker-stop")
    # the agent reaps the workers it stops at once, so their status is often gone before we look
    assert stop["rank"] == 0 and stop["exit_code"] in (-signal.SIGTERM, None)
    (restart,) = pod.events("restart")
    assert restart["restart_count"] == 1 and 0 < float(restart["seconds"]) < 10
    assert float(restart["time"]) > float(fault["time"])
    starts = pod.events("worker-start")
    assert sorted((e["restart_count"], e["rank"]) for e in starts) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert sorted(e["rank"] for e in pod.events("worker-exit")) == [0, 1]
    assert pod.events("exit")[0]["exit_code"] == 0
    # every step of the second attempt ran
    steps = {(e["rank"], e["step"]) for e in read_jsonl(pod.progress) if e["attempt"] == 1}
    assert len(steps) == 80
    text = cli(["timeline", str(pod.timeline)])
    assert text.returncode == 0
    assert "1 launch, 1 fault, 1 restart" in text.stdout
    # torchrun restarts the whole group (the restart count goes up): not the in-place rung
    assert restart["kind"] == "group" and restart["fault_ranks"] == [1]
    assert "group" in text.stdout and "recover-in-place" not in text.stdout  # plain torchrun: level job
    data = json.loads(cli(["timeline", str(pod.timeline), "--format", "json"]).stdout)
    (rec,) = data["recoveries"]
    assert rec["rank"] == 1 and rec["exit_code"] == 7 and rec["how"] == "group" and rec["level"] == "job"
    assert abs(rec["seconds"] - float(restart["seconds"])) < 1e-3


def test_the_failing_workers_exit_code_propagates(tmp_path: Path) -> None:
    pod = Pod(tmp_path, profile_text(max_restarts=1, monitor=1, torch="2.1.0"))
    code, err = pod.run(
        "--steps", "50", "--exit-code", "3", "--exit-rank", "1", "--exit-step", "2", "--exit-attempt", "-1"
    )
    assert code == 3, err
    faults = pod.events("worker-fault")
    assert [(f["rank"], f["exit_code"], f["restart_count"]) for f in faults] == [(1, 3, 0), (1, 3, 1)]
    assert len(pod.events("restart")) == 1
    (last,) = pod.events("exit")
    assert last["exit_code"] == 3 and last["agent_exit_code"] == 1


def test_a_killed_worker_exits_as_the_shell_reports_it(tmp_path: Path) -> None:
    pod = Pod(tmp_path, profile_text(max_restarts=0, monitor=1, torch="2.1.0"))
    proc = pod.start("--steps", "400")
    wait_for(lambda: pod.logs.exists() and len(pod.events("worker-start")) == 2)
    victim = next(e for e in pod.events("worker-start") if e["rank"] == 1)
    os.kill(int(victim["pid"]), signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGKILL, err
    (fault,) = pod.events("worker-fault")
    assert fault["exit_code"] == -signal.SIGKILL and fault["pid"] == victim["pid"]


def test_sigterm_is_forwarded_and_nothing_outlives_the_grace_period(tmp_path: Path) -> None:
    # grace 4 s -> the launcher waits 3.6 s; the fake agent would wait 30 s for workers ignoring SIGTERM
    pod = Pod(tmp_path, profile_text(max_restarts=0, monitor=1, grace=4, torch="2.1.0"))
    proc = pod.start("--steps", "4000", "--ignore-sigterm")
    # both workers past their first step: each ignores SIGTERM by then (toy_worker sets it before its steps; a
    # worker-start event alone raced it on a loaded machine, and the workers died at once)
    wait_for(
        lambda: (
            len(pod.events("worker-start")) == 2
            and pod.progress.exists()
            and {e["rank"] for e in read_jsonl(pod.progress)} == {0, 1}
        )
    )
    tree = [(pid, proc_stat(pid)) for pid in descendants(proc.pid)]
    assert len(tree) >= 3, tree  # agent + 2 workers
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert 3.0 < took < 10.0, took
    left = [pid for pid, st in tree if st is not None and alive(pid, st.starttime)]
    assert left == [], "processes outlived the launcher: %s" % left
    kinds = [e["event"] for e in pod.events()]
    assert "signal" in kinds and "kill" in kinds
    assert pod.events("signal")[0]["signal"] == "SIGTERM"


def test_a_dying_agent_leaves_no_orphans(tmp_path: Path) -> None:
    pod = Pod(tmp_path, profile_text(max_restarts=0, monitor=1, torch="2.1.0"))
    proc = pod.start("--steps", "4000")
    wait_for(lambda: pod.logs.exists() and len(pod.events("worker-start")) == 2)
    workers = [int(e["pid"]) for e in pod.events("worker-start")]
    stats = {pid: proc_stat(pid) for pid in workers}
    children = [pid for pid in descendants(proc.pid) if getattr(proc_stat(pid), "ppid", None) == proc.pid]
    (agent,) = [pid for pid in children if pid not in workers]
    os.kill(agent, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGKILL, err
    assert [pid for pid, st in stats.items() if st is not None and alive(pid, st.starttime)] == []
    kill = [e for e in pod.events("kill") if e["reason"].startswith("left over")]
    assert kill and set(workers) <= set(kill[0]["pids"])


def test_supervised_taskd_manager_runs_once_with_the_plans_config(
    tmp_path: Path, vendor_site: Path, fixture_log: Path
) -> None:
    torch = fake_torch_layout(
        tmp_path / "torch-site", RUN_PY.replace("import os\n", C.RUNPY_IMPORT_TASKD + "\nimport os\n")
    )
    pod = Pod(tmp_path, profile_text(taskd=True, max_restarts=1, monitor=1), [torch, vendor_site])
    pod.env.update(POD_IP="127.0.0.1", MINDX_TASK_ID="job-uid-1", RESUMABLE_FIXTURE_LOG=str(fixture_log))
    code, err = pod.run("--steps", "10")
    assert code == 0, err
    calls = read_jsonl(fixture_log)
    inits = [c for c in calls if c["call"] == "init_taskd_manager"]
    assert len(inits) == 1
    config = inits[0]["config"]
    assert config == {"job_id": "job-uid-1", "node_nums": 1, "proc_per_node": 2, "taskd_enable": "on"}
    assert inits[0]["env"]["MASTER_ADDR"] == "127.0.0.1"
    assert [c["result"] for c in calls if c["call"] == "start_taskd_manager"] == [True]
    # libtaskd.so was preloaded into the agent and every worker (its constructor records each process)
    preloaded = {c["pid"] for c in calls if c["call"] == "preload"}
    workers = {e["pid"] for e in pod.events("worker-start")}
    assert workers and workers <= preloaded
    manager_pid = pod.events("manager-start")[0]["pid"]
    assert manager_pid in preloaded and inits[0]["pid"] == manager_pid
    (ended,) = pod.events("manager-exit")
    assert ended["exit_code"] == -signal.SIGTERM  # stopped by the launcher once training ended
    assert (pod.logs / ("taskd-manager-%s.log" % pod.timeline.stem.split("timeline-")[1])).exists()


def test_a_manager_that_cannot_start_is_reported(tmp_path: Path, vendor_site: Path, fixture_log: Path) -> None:
    torch = fake_torch_layout(
        tmp_path / "torch-site", RUN_PY.replace("import os\n", C.RUNPY_IMPORT_TASKD + "\nimport os\n")
    )
    pod = Pod(tmp_path, profile_text(taskd=True, max_restarts=0, monitor=1), [torch, vendor_site])
    # the Go core refuses a job_id that is not a string (manager.go Config): here an empty id is fine, so
    # break the library instead: TaskD then says "the libtaskd.so has not been loaded"
    broken = tmp_path / "broken-site"
    import shutil

    shutil.copytree(str(vendor_site), str(broken))
    (broken / "taskd" / "python" / "cython_api" / "libs" / "libtaskd.so").write_bytes(b"not an ELF file")
    pod.env.update(
        POD_IP="127.0.0.1",
        MINDX_TASK_ID="job-uid-2",
        RESUMABLE_FIXTURE_LOG=str(fixture_log),
        PYTHONPATH=python_path(torch, broken),
    )
    began = time.monotonic()
    code, err = pod.run("--steps", "2000", "--step-seconds", "0.05")
    # never an idle pod: the training is stopped and the exit code hands over to the Pod/job rung
    assert code == 128 + signal.SIGTERM, err
    assert time.monotonic() - began < 60
    assert "the TaskD Manager exited with 1" in err
    (ended,) = pod.events("manager-exit")
    assert ended["exit_code"] == 1
    (lost,) = pod.events("manager-lost")
    assert lost["exit_code"] == 1
    assert pod.events("exit")[0]["exit_code"] == 128 + signal.SIGTERM
    assert any(c.get("error") == "the libtaskd.so has not been loaded" for c in read_jsonl(fixture_log))


def test_a_manager_that_dies_mid_run_stops_the_training(tmp_path: Path, vendor_site: Path) -> None:
    torch = fake_torch_layout(
        tmp_path / "torch-site", RUN_PY.replace("import os\n", C.RUNPY_IMPORT_TASKD + "\nimport os\n")
    )
    pod = Pod(tmp_path, profile_text(taskd=True, max_restarts=3, monitor=1, grace=5), [torch, vendor_site])
    pod.env.update(POD_IP="127.0.0.1", MINDX_TASK_ID="job-uid-3")
    proc = pod.start("--steps", "4000", "--step-seconds", "0.05", "--ignore-sigterm")
    wait_for(lambda: pod.logs.exists() and len(pod.events("worker-start")) == 2)
    tree = process_tree(proc.pid)
    manager = pod.events("manager-start")[0]["pid"]
    began = time.monotonic()
    os.kill(manager, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert time.monotonic() - began < 5 + 5  # the grace period (less its margin) and the launcher's exit
    (lost,) = pod.events("manager-lost")
    assert lost["exit_code"] == -signal.SIGKILL
    (stop,) = pod.events("stop")
    assert set(e["pid"] for e in pod.events("worker-start")) <= set(stop["pids"])
    assert left_behind(tree) == []


def test_a_full_log_disk_leaves_no_process_behind(tmp_path: Path) -> None:
    with full_log_disk(tmp_path / "disk") as logs:
        pod = Pod(tmp_path, profile_text(npus=2, max_restarts=1, monitor=1))
        pod.logs = logs
        proc = pod.start("--steps", "30", "--step-seconds", "0.05", "--exit-code", "3", "--exit-step", "5")
        wait_for(lambda: len(descendants(proc.pid)) >= 3, 30)
        tree = process_tree(proc.pid)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err  # the restarted training succeeded: not exit 3 ("our bug")
        assert "Traceback" not in err, err
        assert "timeline write(s)" in err and "No space left on device" in err
        assert left_behind(tree) == []


def test_a_fault_reaped_before_it_was_seen_is_inferred_from_the_restart(tmp_path: Path) -> None:
    from conftest import EXAMPLES

    from resumable.api import job_plan, load_plan
    from resumable.runtime.launch import build_spec
    from resumable.runtime.supervisor import Supervisor
    from resumable.runtime.timeline import TimelineWriter

    job = job_plan(load_plan(str(EXAMPLES / "job-level-minimal.yaml")))
    sup = Supervisor(build_spec(job, {"RANK": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, ["x.py"], str(tmp_path)))
    sup.timeline = TimelineWriter(str(tmp_path / "t.jsonl"))
    for rank in (0, 1):
        sup._worker_started({"pid": 1000 + rank, "rank": rank, "restart_count": 0, "time": 1.0})
    sup._worker_ended(sup.workers[1001], None, gone=True)  # reaped by the agent before the launcher looked
    sup._worker_ended(sup.workers[1000], None, gone=True)
    gone = time.time()
    sup._worker_started({"pid": 1002, "rank": 0, "restart_count": 1, "time": gone + 2.0})
    sup.timeline.close()
    events = read_jsonl(tmp_path / "t.jsonl")
    kinds = [e["event"] for e in events]
    assert kinds == [
        "worker-start",
        "worker-start",
        "worker-end",
        "worker-end",
        "worker-fault",
        "fault-detected",
        "workers-stopped",
        "restart",
        "worker-start",
    ]
    fault, detected, stopped, restart = events[4:8]
    assert fault["rank"] == 1 and fault["exit_code"] is None and fault["inferred"] is True
    # the phases: gone unseen, so detected when it was seen gone; stopped when the last process was
    assert detected["rank"] == 1 and detected["pid"] == 1001 and detected["time"] <= stopped["time"] <= gone
    assert sorted(stopped["pids"]) == [1000, 1001] and stopped["generation"] == 0
    assert 1.9 < restart["seconds"] < 2.5


def test_worker_reports_of_the_wrong_shape_still_give_a_timeline_the_reader_takes(tmp_path: Path) -> None:
    """A start-up report is a datagram anyone in the pod could send: a rank that is no integer, a time
    that is not finite or a pid that is no pid never makes the launcher write a line ``resumable
    timeline`` refuses (issue 25: a string rank was written as it came, and refused on reading)."""
    from conftest import EXAMPLES

    from resumable.api import job_plan, load_plan
    from resumable.runtime.launch import build_spec
    from resumable.runtime.supervisor import Supervisor
    from resumable.runtime.timeline import TimelineWriter, read_events

    job = job_plan(load_plan(str(EXAMPLES / "job-level-minimal.yaml")))
    sup = Supervisor(build_spec(job, {"RANK": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, ["x.py"], str(tmp_path)))
    sup.timeline = TimelineWriter(str(tmp_path / "t.jsonl"))
    sup.timeline.write("launch", job="j", levels=["job"], budget=[])
    sup._worker_started({"pid": 1000, "rank": "0", "local_rank": [1], "restart_count": 0, "time": float("nan")})
    sup._worker_started({"pid": 1001, "rank": 10**30, "restart_count": -3, "time": 1e300})
    sup._worker_started({"pid": 1002, "rank": 1, "restart_count": True, "time": "soon"})
    for pid in (True, 1.5, -4, 0, "1003"):
        sup._worker_started({"pid": pid, "rank": 2, "restart_count": 0})
    sup.timeline.close()
    events = read_events(str(tmp_path / "t.jsonl"))
    starts = [e for e in events if e.kind == "worker-start"]
    assert [(e.details["pid"], e.rank, e.restart_count) for e in starts] == [
        (1000, None, 0),
        (1001, None, None),
        (1002, 1, None),
    ]
    assert starts[0].details["local_rank"] is None
    assert all(abs(e.time - time.time()) < 600 for e in starts)
    assert sorted(sup.workers) == [1000, 1001, 1002]


def test_a_start_that_fails_leaves_no_directory_it_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A launch that fails before anything starts (here: the timeline cannot be created, as on a full
    disk) removes the log directories and the runtime directory it made, and says why (exit 2)."""
    from conftest import EXAMPLES

    from resumable.api import job_plan, load_plan
    from resumable.errors import ResumableError
    from resumable.runtime import timeline
    from resumable.runtime.launch import build_spec
    from resumable.runtime.supervisor import Supervisor

    job = job_plan(load_plan(str(EXAMPLES / "job-level-minimal.yaml")))
    spec = build_spec(job, {"RANK": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, ["x.py"], str(tmp_path / "a" / "b"))
    spec.private_dirs = [str(tmp_path / "a" / "taskd")]
    spec.runtime_parent = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()

    def full(path: str) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(timeline, "open_append", full)
    with pytest.raises(ResumableError, match="No space left on device"):
        Supervisor(spec).run()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"] and list((tmp_path / "tmp").iterdir()) == []


def test_status_helpers() -> None:
    assert decode_status(3 << 8) == 3
    assert decode_status(signal.SIGKILL) == -signal.SIGKILL
    assert shell_code(-9) == 137 and shell_code(2) == 2
    me = proc_stat(os.getpid())
    assert me is not None and me.ppid == os.getppid() and me.state in "RS"


def test_in_place_restarts_are_seen_by_process_not_by_restart_count(tmp_path: Path) -> None:
    """TaskD restarts the faulty rank with the same TORCHELASTIC_RESTART_COUNT (MC@v7.3.0
    pt_agent.py:139-154): each new process of that rank is a restart, a repeat fault is a fault."""
    from conftest import EXAMPLES

    from resumable.api import job_plan, load_plan
    from resumable.runtime.events import parse_events
    from resumable.runtime.launch import build_spec
    from resumable.runtime.supervisor import Supervisor
    from resumable.runtime.timeline import TimelineWriter, recoveries

    job = job_plan(load_plan(str(EXAMPLES / "job-level-minimal.yaml")))
    sup = Supervisor(build_spec(job, {"RANK": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, ["x.py"], str(tmp_path)))
    sup.timeline = TimelineWriter(str(tmp_path / "t.jsonl"))
    now = time.time()
    for rank in (0, 1):
        sup._worker_started({"pid": 2000 + rank, "rank": rank, "restart_count": 0, "time": now})
    sup._worker_ended(sup.workers[2001], -9)
    sup._worker_started({"pid": 2002, "rank": 1, "restart_count": 0, "time": now + 1})
    sup._worker_ended(sup.workers[2002], -9)  # the same rank fails again, same restart count
    sup._worker_started({"pid": 2003, "rank": 1, "restart_count": 0, "time": now + 2})
    sup._worker_ended(sup.workers[2000], 1)  # then rank 0: a new fault, not a stop
    sup._worker_ended(sup.workers[2003], None)
    for rank in (0, 1):  # the whole group restarts
        sup._worker_started({"pid": 2004 + rank, "rank": rank, "restart_count": 1, "time": now + 3})
    sup.timeline.close()
    events = read_jsonl(tmp_path / "t.jsonl")
    faults = [(e["rank"], e["generation"]) for e in events if e["event"] == "worker-fault"]
    assert faults == [(1, 0), (1, 1), (0, 0)]
    restarts = [(e["kind"], e["fault_ranks"], e["restart_count"]) for e in events if e["event"] == "restart"]
    assert restarts == [("in-place", [1], 0), ("in-place", [1], 0), ("group", [0], 1)]
    assert [e["generation"] for e in events if e["event"] == "worker-start"] == [0, 0, 1, 2, 3, 3]
    assert [r.how for r in recoveries(parse_events(events))] == ["in place", "in place", "group"]
    assert sup.exit_code() != 0


def _watched(state: Any, pid: int, rank: int, silent: float) -> Any:
    from resumable.runtime.recovery import Worker

    w = Worker(pid, rank, rank, 0, None, last_beat=time.monotonic() - silent)
    state.workers[pid] = w
    return w


def test_hang_detection_logic() -> None:
    """The hang watch over the recovery state (no supervisor, no process: the supervisor kills what it takes)."""
    from resumable.runtime.hangwatch import GAP_SECONDS, HangWatch
    from resumable.runtime.recovery import HUNG_CODE, RecoveryState

    state = RecoveryState()
    watch = HangWatch(5.0)
    hung = _watched(state, 4242, 1, silent=6.0)
    healthy = _watched(state, 999999, 0, silent=1.0)
    quiet = _watched(state, 999998, 2, silent=60.0)
    quiet.last_beat = None  # never sent a heartbeat (a hook that could not start its thread): not watched
    # the first look, and a look after the launcher itself did not run: silence is no evidence
    assert watch.look(state, time.monotonic()) == []
    assert not hung.hung and hung.last_beat is not None and time.monotonic() - hung.last_beat < 1
    hung.last_beat = time.monotonic() - 6.0
    watch.last_look = time.monotonic() - GAP_SECONDS - 1
    assert watch.look(state, time.monotonic()) == []
    assert not hung.hung
    hung.last_beat = time.monotonic() - 6.0
    (taken,) = watch.look(state, time.monotonic())
    assert taken.worker is hung and hung.hung and not healthy.hung and not quiet.hung
    assert state.fault is not None and state.fault.ranks == {1} and state.fault.worker is hung
    assert state.failed_code() == HUNG_CODE == -signal.SIGKILL
    (event,) = taken.events
    assert (event.kind, event.details["cause"], event.details["hang_timeout"]) == ("worker-hang", "heartbeat", 5.0)
    # recorded once; a second silent rank during that recovery joins the fault's ranks
    healthy.last_beat = time.monotonic() - 6.0
    assert [t.worker for t in watch.look(state, time.monotonic())] == [healthy]
    assert healthy.hung and state.fault.ranks == {0, 1} and state.fault.worker is hung
    # while the launcher stops the training, nothing is taken for hung
    late = _watched(state, 999997, 3, silent=60.0)
    state.stop("SIGTERM received")
    assert watch.look(state, time.monotonic()) == [] and not late.hung


def test_a_stopped_worker_is_recorded_as_hung_and_killed_so_the_agent_restarts_it(tmp_path: Path) -> None:
    pod = Pod(tmp_path, profile_text(max_restarts=2, monitor=1, torch="2.1.0", hang_timeout=12))
    proc = pod.start("--steps", "4000")
    try:
        wait_for(lambda: pod.logs.exists() and len(pod.events("worker-start")) == 2)
        victim = next(e for e in pod.events("worker-start") if e["rank"] == 1)
        time.sleep(3)  # a few heartbeats first
        stopped = time.time()
        os.kill(int(victim["pid"]), signal.SIGSTOP)
        wait_for(lambda: pod.events("restart"), timeout=180)
        (hang,) = pod.events("worker-hang")
        assert (hang["rank"], hang["pid"], hang["restart_count"]) == (1, victim["pid"], 0)
        # silent for more than the configured timeout, as recorded (to the millisecond)
        assert hang["hang_timeout"] == 12 and recorded_over(hang["silent_seconds"], hang["hang_timeout"])
        # not before the timeout: the last beat came at most one beat interval (and a scheduling slice) before the stop
        assert float(hang["time"]) - stopped >= hang["hang_timeout"] - C.HEARTBEAT_SECONDS - 0.5
        assert pod.events("worker-fault") == []  # the healthy peer is not blamed
        (restart,) = pod.events("restart")
        assert restart["fault_ranks"] == [1] and restart["kind"] == "group"
        text = cli(["timeline", str(pod.timeline), "--format", "json"]).stdout
        (rec,) = json.loads(text)["recoveries"]
        assert rec["rank"] == 1 and rec["hang"] is True and rec["how"] == "group"
        assert "hang" in cli(["timeline", str(pod.timeline)]).stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM


def _sup(tmp_path: Path, start_timeout: float = 20.0) -> Any:
    from conftest import EXAMPLES

    from resumable.api import job_plan, load_plan
    from resumable.runtime.launch import build_spec
    from resumable.runtime.supervisor import Supervisor
    from resumable.runtime.timeline import TimelineWriter

    job = job_plan(load_plan(str(EXAMPLES / "job-level-minimal.yaml")))
    spec = build_spec(job, {"RANK": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, ["x.py"], str(tmp_path))
    spec.start_timeout = start_timeout
    sup = Supervisor(spec)
    sup.timeline = TimelineWriter(str(tmp_path / "t.jsonl"))
    return sup


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])


def test_a_start_without_process_group_in_time_is_a_hang_of_the_rank_that_never_began(tmp_path: Path) -> None:
    """Issue 27: rank 0 waits in its rendezvous for rank 1, which never began: start_timeout after
    their start rank 1 is the hang (phase started) and killed; rank 0, waiting, is not blamed, and once
    the generation has its fault nothing more of it is taken. A generation in which no process began
    a process group (a script without torch.distributed) is never taken."""
    sup = _sup(tmp_path)
    stalled, waiting = _sleeper(), _sleeper()
    try:
        for rank, proc in ((0, waiting), (1, stalled)):
            sup._worker_started({"pid": proc.pid, "rank": rank, "local_rank": rank, "restart_count": 0})
        sup._watch()
        assert not any(w.hung for w in sup.workers.values())  # no process group begun: not watched
        for w in sup.workers.values():
            w.began -= 60
        sup._watch()
        assert not any(w.hung for w in sup.workers.values())  # still none begun
        sup._worker_phase("pg-init", {"event": "pg-init", "pid": waiting.pid})
        sup._watch()
        assert sup.workers[stalled.pid].hung and not sup.workers[waiting.pid].hung
        assert stalled.wait(timeout=30) == -signal.SIGKILL
        sup._watch()  # the generation has its fault: the waiting rank is left to the recovery
        assert not sup.workers[waiting.pid].hung
    finally:
        for proc in (stalled, waiting):
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()
    sup.timeline.close()
    (hang,) = [e for e in read_jsonl(tmp_path / "t.jsonl") if e["event"] == "worker-hang"]
    assert (hang["rank"], hang["cause"], hang["phase"], hang["start_timeout"]) == (1, "start-timeout", "started", 20)
    assert recorded_over(hang["seconds"], 60)  # it started 60 s before (began -= 60)


def test_a_waiting_rank_that_started_earlier_is_not_taken_for_the_one_that_never_began(tmp_path: Path) -> None:
    """Rank 0 started first and waits in its process group's init for rank 1, which never began: when
    rank 0's start_timeout is up and rank 1's is not yet, nobody is taken; then rank 1 alone."""
    sup = _sup(tmp_path)
    waiting, stalled = _sleeper(), _sleeper()
    try:
        for rank, proc in ((0, waiting), (1, stalled)):
            sup._worker_started({"pid": proc.pid, "rank": rank, "local_rank": rank, "restart_count": 0})
        sup._worker_phase("pg-init", {"event": "pg-init", "pid": waiting.pid})
        sup.workers[waiting.pid].began -= 21  # over the 20 s start_timeout
        sup.workers[stalled.pid].began -= 15  # started 6 s later: not yet
        sup._watch()
        assert not any(w.hung for w in sup.workers.values())
        sup.workers[stalled.pid].began -= 6
        sup._watch()
        assert sup.workers[stalled.pid].hung and not sup.workers[waiting.pid].hung
    finally:
        for proc in (waiting, stalled):
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()


def test_all_ranks_waiting_for_a_remote_peer_are_taken_together(tmp_path: Path) -> None:
    sup = _sup(tmp_path)
    procs = [_sleeper(), _sleeper()]
    try:
        for rank, proc in enumerate(procs):
            sup._worker_started({"pid": proc.pid, "rank": rank, "local_rank": rank, "restart_count": 0})
            sup._worker_phase("pg-init", {"event": "pg-init", "pid": proc.pid})
            sup.workers[proc.pid].began -= 60
        sup._watch()
        assert all(w.hung for w in sup.workers.values()) and sup.state.fault.ranks == {0, 1}
    finally:
        for proc in procs:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()


def test_a_recovery_without_new_processes_in_time_stops_the_training(tmp_path: Path) -> None:
    sup = _sup(tmp_path, start_timeout=30.0)
    sup._worker_started({"pid": 999990, "rank": 1, "local_rank": 1, "restart_count": 0})
    sup._worker_ended(sup.workers[999990], -9, gone=True)
    sup._watch()
    assert sup.state.stop_reason is None
    sup.state.fault.time -= 31
    sup._watch()
    assert sup.state.stop_reason is not None and "no new training process" in sup.state.stop_reason
    sup.timeline.close()
    events = read_jsonl(tmp_path / "t.jsonl")
    (timeout,) = [e for e in events if e["event"] == "recovery-timeout"]
    assert timeout["rank"] == 1 and timeout["start_timeout"] == 30 and recorded_over(timeout["seconds"], 31)
    assert next(e for e in events if e["event"] == "fault-detected")["pid"] == 999990
    assert sup.exit_code() == 128 + signal.SIGKILL  # the fault's own code, for the next rung


def test_phase_reports_of_the_wrong_shape_are_taken_without_their_bad_fields(tmp_path: Path) -> None:
    from resumable.runtime.timeline import read_events

    sup = _sup(tmp_path)
    sup.timeline.write("launch", job="j", levels=["job"], budget=[])
    sup._worker_started({"pid": 4242, "rank": 0, "local_rank": 0, "restart_count": 0})
    sup._worker_phase("pg-ready", {"pid": 4242, "seconds": "soon", "time": float("inf")})
    sup._worker_phase("pg-error", {"pid": 4242, "error": ["x"] * 3, "seconds": -1})
    sup._worker_phase("first-collective", {"pid": 4242, "op": "\x1b[2J"})
    sup._worker_phase("first-collective", {"pid": 777, "op": "all_reduce"})  # not a process of this launch
    sup._warm({"state": "off", "reason": 5, "import_seconds": 1e400})
    sup._warm({"state": "bogus"})
    sup.timeline.close()
    events = read_events(str(tmp_path / "t.jsonl"))
    kinds = [e.kind for e in events]
    assert kinds == ["launch", "worker-start", "pg-ready", "pg-error", "first-collective", "warm"]
    assert events[2].details["seconds"] is None and events[3].details["error"] is None
    assert events[4].details["op"] is None and sup.workers[4242].phase == "training"


def test_the_drill_is_answered_and_injects_only_into_a_process_of_this_launch(tmp_path: Path) -> None:
    sup = _sup(tmp_path)
    sup.spec.max_restarts = 3
    proc = _sleeper()
    try:
        sup._worker_started({"pid": proc.pid, "rank": 4, "local_rank": 1, "restart_count": 0})
        status = sup.drill.answer({"op": "status"})["status"]
        assert (status["steady"], status["max_restarts"], status["restart_count"]) == (False, 3, 0)
        assert "rank 4 is before process group init" in status["why_not"]
        # every rank behind is named, in rank order whatever order they reported in
        sup._worker_started({"pid": 999991, "rank": 2, "local_rank": 0, "restart_count": 0})
        sup._worker_phase("pg-init", {"pid": 999991})
        why = sup.drill.answer({"op": "status"})["status"]["why_not"]
        assert why.startswith("rank 2 is in process group init, rank 4 is before process group init"), why
        del sup.workers[999991]
        refused = sup.drill.answer({"op": "inject", "fault": "kill", "local_rank": 1, "signal": 9})
        assert not refused["ok"] and "not in steady training" in refused["error"]
        sup.workers[proc.pid].phase = "training"
        assert sup.drill.answer({"op": "status"})["status"]["steady"]
        assert (
            "no training process of local rank 0"
            in sup.drill.answer({"op": "inject", "fault": "hang", "local_rank": 0})["error"]
        )
        assert not sup.drill.answer({"op": "inject", "fault": "kill", "local_rank": 1, "signal": 19})["ok"]  # SIGSTOP
        assert not sup.drill.answer({"op": "inject", "fault": "exit", "local_rank": 1, "code": 0})["ok"]
        assert not sup.drill.answer({"op": "inject", "fault": "reboot", "local_rank": 1})["ok"]
        done = sup.drill.answer({"op": "inject", "fault": "kill", "local_rank": 1, "signal": int(signal.SIGTERM)})
        assert done["ok"] and done["pid"] == proc.pid and done["rank"] == 4
        assert proc.wait(timeout=30) == -signal.SIGTERM
    finally:
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait()
    sup.timeline.close()
    (injected,) = [e for e in read_jsonl(tmp_path / "t.jsonl") if e["event"] == "drill"]
    assert (injected["fault"], injected["signal"], injected["local_rank"]) == ("kill", "SIGTERM", 1)
