"""The recovery timeline: pairing faults with restarts, the budget of the matching level, bad files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from resumable.errors import ResumableError
from resumable.runtime.timeline import TimelineWriter, read_events, recoveries, render, to_json

from .conftest import cli

BUDGET = [
    {
        "level": "recover-in-place",
        "total_seconds": 145.4,
        "terms": {"detect": 5.0, "T1 reschedule": 0.0, "T2 comm init": 20.0},
    },
    {"level": "recover", "total_seconds": 305.5, "terms": {"detect": 5.0, "T1 reschedule": 150.1}},
    {"level": "job", "total_seconds": 1950.0, "terms": {"detect": 5.0, "T1 reschedule": 450.0}},
]


def launch(t: float, levels: List[str]) -> Dict[str, Any]:
    return {"time": t, "event": "launch", "job": "j", "host": "h", "levels": levels, "budget": BUDGET}


def ev(t: float, event: str, rank: Any = None, code: Any = None, rc: Any = None) -> Dict[str, Any]:
    return {"time": t, "event": event, "rank": rank, "exit_code": code, "restart_count": rc}


def test_fault_in_place_is_compared_with_recover_in_place() -> None:
    """TaskD restarts only the faulty rank, same restart count: the in-place rung."""
    events = [
        launch(0, ["recover-in-place", "recover", "job"]),
        ev(1, "worker-start", 0, rc=0),
        ev(1, "worker-start", 1, rc=0),
        ev(10, "worker-fault", 1, -9, 0),
        dict(ev(11.5, "restart", rc=0), kind="in-place", fault_ranks=[1]),
        ev(11.5, "worker-start", 1, rc=0),
    ]
    (r,) = recoveries(events)
    assert (r.rank, r.exit_code, r.how, r.level) == (1, -9, "in place", "recover-in-place")
    assert r.seconds == pytest.approx(1.5)
    assert r.budget_restart == 5.0 and r.budget_total == 145.4
    text = render("t.jsonl", events)
    assert "1 launch, 1 fault, 1 restart" in text and "5.00 s (within)" in text


def test_a_whole_group_restart_is_graded_as_the_process_level_not_in_place() -> None:
    events = [
        launch(0, ["recover-in-place", "recover", "job"]),
        ev(1, "worker-start", 0, rc=0),
        ev(1, "worker-start", 1, rc=0),
        ev(10, "worker-fault", 1, -9, 0),
        ev(10.5, "worker-stop", 0, -15, 0),
        dict(ev(11.5, "restart", rc=1), kind="group", fault_ranks=[1]),
        ev(11.5, "worker-start", 0, rc=1),
        ev(11.6, "worker-start", 1, rc=1),
    ]
    (r,) = recoveries(events)
    assert (r.rank, r.how, r.level) == (1, "group", "recover")
    assert r.seconds == pytest.approx(1.5)
    # a timeline written before restart kinds: the restart count went up, so the group restarted
    old = [e for e in events if e["event"] != "restart"]
    (r,) = recoveries(old)
    assert (r.how, r.level) == ("group", "recover")


def test_a_new_launch_after_a_fault_is_a_relaunch() -> None:
    events = [
        launch(0, ["recover", "job"]),
        ev(1, "worker-start", 0, rc=0),
        ev(5, "worker-fault", 0, 1, 0),
        ev(6, "exit", code=1),
        launch(100, ["recover", "job"]),
        ev(230, "worker-start", 0, rc=0),
    ]
    (r,) = recoveries(events)
    assert r.how == "relaunch" and r.level == "recover" and r.seconds == pytest.approx(225)
    assert r.budget_restart == pytest.approx(155.1)
    assert "(OVER)" in render("t.jsonl", events)


def test_a_fault_without_restart_is_listed_as_such() -> None:
    events = [launch(0, ["job"]), ev(1, "worker-start", 0, rc=0), ev(3, "worker-fault", 0, 2, 0), ev(4, "exit", code=2)]
    (r,) = recoveries(events)
    assert r.restart_time is None and r.seconds is None
    data = to_json("t", events)
    assert data["recoveries"][0]["seconds"] is None and data["launches"] == 1


def test_two_faults_two_restarts() -> None:
    events = [launch(0, ["recover-in-place"])]
    for attempt in range(2):
        base = 10.0 * (attempt + 1)
        events += [ev(base, "worker-fault", 1, 1, attempt), ev(base + 2, "worker-start", 1, rc=attempt + 1)]
    assert [r.seconds for r in recoveries(events)] == [2.0, 2.0]


def test_writer_and_reader_round_trip_and_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "timeline-h.jsonl"
    writer = TimelineWriter(str(path))
    writer.write("launch", job="j", levels=["job"], budget=[])
    writer.write("worker-fault", rank=1, exit_code=-9, restart_count=0, pid=4)
    writer.close()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"time": 3, "event": "worker-st')  # the launcher was killed mid-write
    events = read_events(str(path))
    assert [e["event"] for e in events] == ["launch", "worker-fault"]
    assert events[1]["pid"] == 4 and events[1]["exit_code"] == -9
    proc = cli(["timeline", str(path), "--events"])
    assert proc.returncode == 0 and "worker-fault" in proc.stdout and "no restart" not in proc.stdout


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "has no events"),
        ("not json\n{}\n", "line 1 is not JSON"),
        ('[1]\n{"time": 1, "event": "x"}\n', "line 1 is not a timeline event"),
    ],
)
def test_bad_files_are_user_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ResumableError, match=message):
        read_events(str(path))
    proc = cli(["timeline", str(path)])
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_directory_or_missing_file(tmp_path: Path) -> None:
    assert cli(["timeline", str(tmp_path)]).returncode == 2
    proc = cli(["timeline", str(tmp_path / "nope.jsonl")])
    assert proc.returncode == 2 and "timeline" in proc.stderr


def test_json_output(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    events = [launch(0, ["job"]), ev(1, "worker-fault", 0, 3, 0), ev(2.5, "worker-start", 0, rc=1)]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    data = json.loads(cli(["timeline", str(path), "--format", "json"]).stdout)
    assert data["recoveries"][0]["seconds"] == pytest.approx(1.5) and data["recoveries"][0]["level"] == "job"
