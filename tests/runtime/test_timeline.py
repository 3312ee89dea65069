"""The recovery timeline: pairing faults with restarts, the budget of the matching level, bad files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest

from resumable.errors import ResumableError
from resumable.runtime.events import TIME_LIMIT, Event, parse_events
from resumable.runtime.timeline import (
    MAX_TIMELINE_BYTES,
    TimelineWriter,
    read_events,
    recoveries,
    render,
    to_json,
)

from .conftest import clean_env, cli

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


def parsed(items: List[Dict[str, Any]]) -> List[Event]:
    return parse_events(items, "t.jsonl")


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
    (r,) = recoveries(parsed(events))
    assert (r.rank, r.exit_code, r.how, r.level) == (1, -9, "in place", "recover-in-place")
    assert r.seconds == pytest.approx(1.5)
    assert r.budget_restart == 5.0 and r.budget_total == 145.4
    text = render("t.jsonl", parsed(events))
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
    (r,) = recoveries(parsed(events))
    assert (r.rank, r.how, r.level) == (1, "group", "recover")
    assert r.seconds == pytest.approx(1.5)
    # a timeline written before restart kinds: the restart count went up, so the group restarted
    old = [e for e in events if e["event"] != "restart"]
    (r,) = recoveries(parsed(old))
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
    (r,) = recoveries(parsed(events))
    assert r.how == "relaunch" and r.level == "recover" and r.seconds == pytest.approx(225)
    assert r.budget_restart == pytest.approx(155.1)
    assert "(OVER)" in render("t.jsonl", parsed(events))


def test_a_fault_without_restart_is_listed_as_such() -> None:
    events = [launch(0, ["job"]), ev(1, "worker-start", 0, rc=0), ev(3, "worker-fault", 0, 2, 0), ev(4, "exit", code=2)]
    (r,) = recoveries(parsed(events))
    assert r.restart_time is None and r.seconds is None
    data = to_json("t", parsed(events))
    assert data["recoveries"][0]["seconds"] is None and data["launches"] == 1


def test_two_faults_two_restarts() -> None:
    events = [launch(0, ["recover-in-place"])]
    for attempt in range(2):
        base = 10.0 * (attempt + 1)
        events += [ev(base, "worker-fault", 1, 1, attempt), ev(base + 2, "worker-start", 1, rc=attempt + 1)]
    assert [r.seconds for r in recoveries(parsed(events))] == [2.0, 2.0]


def test_writer_and_reader_round_trip_and_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "timeline-h.jsonl"
    writer = TimelineWriter(str(path))
    writer.write("launch", job="j", levels=["job"], budget=[])
    writer.write("worker-fault", rank=1, exit_code=-9, restart_count=0, pid=4)
    writer.close()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"time": 3, "event": "worker-st')  # the launcher was killed mid-write
    events = read_events(str(path))
    assert [e.kind for e in events] == ["launch", "worker-fault"]
    assert events[1].details["pid"] == 4 and events[1].exit_code == -9
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


HUGE = "9" * 400
DEEP = "[" * 100_000 + "]" * 100_000
FAULT_THEN_START = '{"time": %s, "event": "worker-fault"}\n{"time": %s, "event": "worker-start", "restart_count": 1}\n'
HEADER = (
    '{"time": 1, "event": "launch", %s}\n{"time": 2, "event": "worker-fault"}\n{"time": 3, "event": "worker-start"}\n'
)


@pytest.mark.parametrize(
    "content, fragments",
    [
        (FAULT_THEN_START % ('"12:00"', 2), ["line 1", "time", "'12:00'", "a number"]),
        (FAULT_THEN_START % (HUGE, 2), ["line 1", "not JSON", "an integer of 400 digits"]),
        (FAULT_THEN_START % ("9" * 30, 2), ["line 1: time is " + "9" * 30, "outside"]),
        (FAULT_THEN_START % ("1e308", "-1e308"), ["line 1", "time", "outside"]),
        (FAULT_THEN_START % ("NaN", 2), ["line 1", "NaN is not a JSON value"]),
        (FAULT_THEN_START % (1, "-Infinity") + "{}\n", ["line 2", "-Infinity is not a JSON value"]),
        (FAULT_THEN_START % ("true", 2), ["line 1", "time", "True", "a number"]),
        ('{"time": 1, "event": 7}\n{"time": 2, "event": "x"}\n', ["line 1: event is 7", "string"]),
        ('{"time": 1, "event": "worker-fault", "rank": "0"}\n{"time": 2, "event": "x"}\n', ["line 1", "rank", "'0'"]),
        ('{"time": 1, "event": "x", "restart_count": %s}\n{"time": 2, "event": "x"}\n' % ("9" * 30), ["restart_count"]),
        ('{"time": 1, "event": "x", "restart_count": -1}\n{"time": 2, "event": "x"}\n', ["restart_count is -1"]),
        ('{"time": 1, "event": "x", "exit_code": 1.5}\n{"time": 2, "event": "x"}\n', ["exit_code", "1.5"]),
        (HEADER % '"levels": "recover"', ["line 1", "levels", "a list of strings"]),
        (HEADER % '"levels": ["job"], "budget": [1]', ["line 1", "budget[0]", "an object"]),
        (HEADER % '"budget": {"level": "job"}', ["line 1", "budget", "a list"]),
        (HEADER % '"budget": [{"level": "job", "terms": [5]}]', ["line 1", "budget[0].terms", "an object"]),
        (HEADER % '"budget": [{"level": "job", "total_seconds": "soon"}]', ["budget[0].total_seconds", "'soon'"]),
        (HEADER % '"budget": [{"level": "job", "terms": {"detect": 1e300}}]', ["budget[0].terms.detect", "outside"]),
        (HEADER % '"job": {"name": "x"}', ["line 1", "job", "a string"]),
        (HEADER % '"deep": %s' % DEEP, ["line 1", "is not JSON", "nests deeper"]),
        (DEEP + '\n{"time": 1, "event": "x"}\n', ["line 1", "is not JSON", "nests deeper"]),
        (b'{"time": 1, "event": "caf\xe9"}\n{"time": 2, "event": "x"}\n', ["line 1", "not UTF-8", "0xe9"]),
    ],
    ids=[
        "time-string",
        "time-huge-integer",
        "time-large-integer",
        "time-overflows",
        "time-nan",
        "time-infinity",
        "time-bool",
        "event-number",
        "rank-string",
        "restart-count-huge",
        "restart-count-negative",
        "exit-code-float",
        "levels-string",
        "budget-line-number",
        "budget-object",
        "terms-list",
        "total-string",
        "term-huge",
        "job-object",
        "deep-header-field",
        "deep-line",
        "not-utf8",
    ],
)
def test_malformed_lines_are_user_errors(tmp_path: Path, content: Any, fragments: List[str]) -> None:
    """Fields of the wrong type or out of range, deep nesting, NaN: exit 2 naming the line and the
    field, never an internal error (issue 25: exit 3 for each of these)."""
    path = tmp_path / "t.jsonl"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    for extra in ([], ["--format", "json"], ["--events"]):
        proc = cli(["timeline", str(path), *extra])
        assert proc.returncode == 2, (extra, proc.stdout[-2000:], proc.stderr)
        assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        for fragment in [str(path), *fragments]:
            assert fragment in proc.stderr, (fragment, proc.stderr)


def test_a_torn_last_line_that_is_not_utf8_is_skipped(tmp_path: Path) -> None:
    """The launcher killed in the middle of a multi-byte character: the last line is cut, as any
    torn last line."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"time": 1, "event": "launch", "job": "j"}\n{"time": 2, "event": "signal", "x": "\xe4\xb8')
    events = read_events(str(path))
    assert [e.kind for e in events] == ["launch"]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dangling", "huge"])
def test_special_files_are_refused_at_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "t.jsonl"
    if kind == "fifo":
        os.mkfifo(str(path))
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "dangling":
        path.symlink_to(tmp_path / "gone.jsonl")
    else:
        with open(str(path), "wb") as handle:
            handle.truncate(MAX_TIMELINE_BYTES + 1)
    proc = cli(["timeline", str(path)], timeout=20)
    assert proc.returncode == 2 and str(path) in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_text_output_escapes_control_characters_and_undecodable_text(tmp_path: Path) -> None:
    """A job name with a terminal escape or a lone surrogate (valid JSON: ``\\udcff``) is shown
    escaped; with a UTF-8 stdout the surrogate was an internal error (UnicodeEncodeError)."""
    path = tmp_path / "t.jsonl"
    events = [dict(launch(0, ["job"]), job="a\x1b[2Jb\udcff", host="h\nx"), ev(1, "worker-fault", 0, 3, 0)]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    env = dict(clean_env(), PYTHONIOENCODING="utf-8")
    proc = cli(["timeline", str(path), "--events"], env)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "a\\x1b[2Jb\\udcff" in proc.stdout and "h\\nx" in proc.stdout
    proc = cli(["timeline", str(path), "--format", "json"], env)
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)


def test_json_output_is_strict_json(tmp_path: Path) -> None:
    """Times at the ends of their range still give finite durations (no NaN or Infinity printed)."""
    path = tmp_path / "t.jsonl"
    events = [launch(0, ["job"]), ev(0, "worker-fault", 0, 3, 0), ev(TIME_LIMIT, "worker-start", 0, rc=1)]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    proc = cli(["timeline", str(path), "--format", "json"])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout, parse_constant=lambda name: pytest.fail("not JSON: " + name))
    assert data["recoveries"][0]["seconds"] == TIME_LIMIT


# --- the phases of a recovery (issue 27) ------------------------------------------------------------------------

TERMS = {"detect": 1.0, "T1 reschedule": 150.0, "T2 comm init": 20.0, "T3 ckpt load": 0.0, "T4 compile": 2.0}


def phased(extra: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    header = {
        "time": 0,
        "event": "launch",
        "job": "j",
        "host": "h",
        "levels": ["recover", "job"],
        "budget": [{"level": "recover", "total_seconds": 300.0, "terms": TERMS}],
    }
    return [
        header,
        dict(ev(1, "worker-start", 0, rc=0), pid=10, generation=0),
        dict(ev(1, "worker-start", 1, rc=0), pid=11, generation=0),
        dict(ev(10, "worker-fault", 1, -9, 0), pid=11, generation=0),
        dict(ev(10.5, "fault-detected", 1, rc=0), pid=11, generation=0),
        dict(ev(10.75, "workers-stopped"), pids=[10, 11], generation=0),
        dict(ev(11, "restart", rc=1), kind="group", generation=1, fault_ranks=[1]),
        dict(ev(11, "worker-start", 0, rc=1), pid=12, generation=1),
        dict(ev(11.1, "worker-start", 1, rc=1), pid=13, generation=1),
        *extra,
    ]


READY = [
    dict(ev(14, "pg-ready", 0, rc=1), pid=12, generation=1, seconds=0.5),
    dict(ev(14.5, "pg-ready", 1, rc=1), pid=13, generation=1, seconds=0.5),
    dict(ev(14.9, "first-collective", 1, rc=1), pid=13, generation=1, op="all_reduce"),
    dict(ev(15.5, "first-collective", 0, rc=1), pid=12, generation=1, op="all_reduce"),
]


def test_each_phase_is_measured_and_compared_with_its_budget_term() -> None:
    (r,) = recoveries(parsed(phased(READY)))
    assert (r.detected_time, r.stopped_time, r.restart_time, r.ready_time, r.first_time) == (
        10.5,
        10.75,
        11,
        14.5,
        15.5,
    )
    rows = {row["phase"]: row for row in r.phases()}
    assert rows["detect"]["seconds"] == pytest.approx(0.5) and rows["detect"]["budget_terms"] == ["detect"]
    assert rows["stop"]["seconds"] == pytest.approx(0.25) and rows["stop"]["budget_seconds"] is None
    assert rows["start"]["seconds"] == pytest.approx(0.25)
    assert rows["reschedule"]["seconds"] == pytest.approx(0.5) and rows["reschedule"]["budget_seconds"] == 150.0
    # the group is ready when its last process is, and trains when the last first collective returned
    assert rows["comm init"]["seconds"] == pytest.approx(3.5) and rows["comm init"]["within"] is True
    first = rows["first step"]
    assert first["seconds"] == pytest.approx(1.0) and first["budget_terms"] == ["T3 ckpt load", "T4 compile"]
    assert first["budget_seconds"] == 2.0 and first["within"] is True
    assert rows["to restart"]["seconds"] == pytest.approx(1.0) and rows["to restart"]["budget_seconds"] == 151.0
    whole = rows["whole"]
    assert whole["seconds"] == pytest.approx(5.5) and whole["budget_seconds"] == 173.0 and whole["within"]
    text = render("t.jsonl", parsed(phased(READY)))
    assert "recovery 1: rank 1 exit -9 at +10.00s, group restart (generation 1), level recover" in text
    assert "new workers started -> process group ready   3.50 s     T2 comm init 20.00 s (within)" in text
    assert "fault -> first collective                    5.50 s     detect + T1..T4 173.00 s (within)" in text
    (data,) = to_json("t", parsed(phased(READY)))["recoveries"]
    assert [p["phase"] for p in data["phases"]][:5] == ["detect", "stop", "start", "comm init", "first step"]
    assert data["generation"] == 1 and "terms" not in data


def test_a_phase_that_was_not_seen_has_no_figure_and_no_verdict() -> None:
    """No process reported its process group (a script without torch.distributed, an old timeline)."""
    (r,) = recoveries(parsed(phased([])))
    rows = {row["phase"]: row for row in r.phases()}
    assert rows["comm init"]["seconds"] is None and rows["comm init"]["within"] is None
    assert rows["whole"]["seconds"] is None and rows["detect"]["seconds"] == pytest.approx(0.5)
    assert "fault -> first collective                    -" in render("t.jsonl", parsed(phased([])))


def test_phase_events_of_another_generation_or_launch_are_not_taken() -> None:
    late = [dict(e, generation=7) for e in READY]
    (r,) = recoveries(parsed(phased(late)))
    assert r.ready_time is None and r.first_time is None


def test_a_hang_names_its_cause_and_phase() -> None:
    hang = dict(ev(10, "worker-hang", 1, None, 0), pid=11, generation=0, cause="start-timeout", phase="started")
    hang.update(seconds=20.0, start_timeout=20)
    events = [e for e in phased(READY) if e["event"] != "worker-fault"]
    events.insert(3, hang)
    (r,) = recoveries(parsed(events))
    assert r.hang and (r.hang_cause, r.hang_phase) == ("start-timeout", "started")
    assert "rank 1 hang (no process group in time)" in render("t.jsonl", parsed(events))


@pytest.mark.parametrize(
    "line, fragments",
    [
        ('{"time": 1, "event": "pg-ready", "pid": "12"}', ["pid", "'12'"]),
        ('{"time": 1, "event": "first-collective", "generation": -1}', ["generation is -1"]),
        ('{"time": 1, "event": "worker-hang", "silent_seconds": "long"}', ["silent_seconds", "'long'"]),
        ('{"time": 1, "event": "worker-hang", "cause": 5}', ["cause is 5"]),
        ('{"time": 1, "event": "restart", "generation": 1.5}', ["generation is 1.5"]),
    ],
)
def test_the_phase_events_are_read_with_their_types(tmp_path: Path, line: str, fragments: List[str]) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(line + '\n{"time": 2, "event": "x"}\n', encoding="utf-8")
    with pytest.raises(ResumableError) as err:
        read_events(str(path))
    for fragment in ["line 1", *fragments]:
        assert fragment in str(err.value)


def test_each_recovery_names_the_level_the_ladder_sends_it_to() -> None:
    """issue 31: a fault on the pod that runs rank 0 skips the levels that move its container (HA73-025), so
    the ladder sends it to job-level rescheduling even where TaskD restarted it in place; a fault on another
    pod takes the first process-level rung."""
    rank0_pod = [
        launch(0, ["recover-in-place", "recover", "job"]),
        ev(1, "worker-start", 0, rc=0),
        ev(1, "worker-start", 1, rc=0),
        ev(10, "worker-fault", 1, -9, 0),
        dict(ev(11.5, "restart", rc=0), kind="in-place", fault_ranks=[1]),
        ev(11.5, "worker-start", 1, rc=0),
    ]
    (r,) = recoveries(parsed(rank0_pod))
    assert (r.level, r.expected_level) == ("recover-in-place", "job")
    assert "level recover-in-place (the ladder's level for it: job)" in render("t.jsonl", parsed(rank0_pod))
    assert to_json("t", parsed(rank0_pod))["recoveries"][0]["expected_level"] == "job"
    other_pod = [
        launch(0, ["recover-in-place", "recover", "job"]),
        ev(1, "worker-start", 8, rc=0),
        ev(1, "worker-start", 9, rc=0),
        ev(10, "worker-fault", 9, -9, 0),
    ]
    (r,) = recoveries(parsed(other_pod))
    assert r.restart_time is None and r.expected_level == "recover-in-place"
    # a ladder without process levels: Pod-level, and the rank-0 pod's faults job-level
    pod_level = [launch(0, ["pod", "job"]), ev(1, "worker-start", 8, rc=0), ev(3, "worker-fault", 8, 1, 0)]
    assert recoveries(parsed(pod_level))[0].expected_level == "pod"
    pod_level[1] = ev(1, "worker-start", 0, rc=0)
    pod_level[2] = ev(3, "worker-fault", 0, 1, 0)
    assert recoveries(parsed(pod_level))[0].expected_level == "job"
