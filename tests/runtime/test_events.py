"""The timeline's one schema (resumable/runtime/events.py): what the launcher writes is what
``resumable timeline`` reads, kind by kind and field by field, with the same checks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import ROOT

from resumable.errors import ResumableError
from resumable.runtime import events as E

from .conftest import profile_text, read_jsonl
from .test_supervisor import Pod

#: a valid value of each type, for the round trip
VALID: Dict[type, Any] = {
    E.Int: 3,
    E.Number: 1.5,
    E.Text: "x",
    E.Texts: ["a", "b"],
    E.Flag: True,
    E.Ints: [1, 2],
    E.Budget: [{"level": "job", "total_seconds": 10.5, "terms": {"detect": 5.0}}],
}


def test_every_kind_round_trips_with_every_field() -> None:
    for kind in E.KINDS.values():
        details = {name: VALID[type(value)] for name, value in kind.fields.items()}
        event = E.new(kind.name, 12.5, 1, -9, 0, **details)
        record = event.record()
        assert E.problems(record) == [], kind.name
        back = E.parse_event(record)
        assert back.record() == record and back.kind == kind.name


@pytest.mark.parametrize(
    "value, given, taken",
    [
        (E.COUNT, 5, 5),
        (E.COUNT, -1, None),
        (E.COUNT, True, None),
        (E.COUNT, 2**40, None),
        (E.COUNT, "5", None),
        (E.SECONDS, 0, 0.0),
        (E.SECONDS, 1.5, 1.5),
        (E.SECONDS, -0.1, None),
        (E.SECONDS, float("inf"), None),
        (E.SECONDS, False, None),
        (E.Text(limit=3), "abcdef", "abc"),
        (E.Text(limit=3), 5, None),
    ],
)
def test_the_writer_takes_a_reports_value_or_null(value: E.Value, given: Any, taken: Any) -> None:
    """A report is a datagram anyone in the pod could send: a value of the wrong type is written as
    null, never as a line the reader refuses (issue 25)."""
    assert value.take(given) == taken and type(value.take(given)) is type(taken)


@pytest.mark.parametrize("given", [-1, True, 2**40, "5", 1.5])
def test_the_reader_refuses_what_the_writer_would_not_take(given: Any) -> None:
    """The same check, strictly: a pid the writer would not take is a user error naming the line and the
    field."""
    assert E.COUNT.take(given) is None
    with pytest.raises(ResumableError, match=r"line 1: pid is .*, not null or an integer from 0 to"):
        E.parse_event({"time": 1, "event": "worker-start", "pid": given})


def test_problems_names_an_unknown_kind_an_undeclared_field_and_a_wrong_type() -> None:
    assert E.problems({"time": 1, "event": "worker-sleep"}) == ["'worker-sleep' is not a kind of event"]
    assert E.problems({"time": 1, "event": "restart", "color": "red"}) == ["restart: color is not one of its fields"]
    assert E.problems({"time": 1, "event": "restart", "generation": -1}) == [
        "restart: generation is -1, not null or an integer from 0 to 2147483647"
    ]


def test_the_vocabulary_is_the_documented_one() -> None:
    """docs/runtime.md names every kind the launcher writes, and names no other."""
    text = (ROOT / "docs" / "runtime.md").read_text(encoding="utf-8")
    section = text[text.index("### The recovery timeline") : text.index("`resumable timeline FILE` pairs")]
    named = set(re.findall(r"`([a-z]+(?:-[a-z]+)*)`", section))
    kinds = set(E.KINDS)
    assert kinds - named == set()
    assert {n for n in named if n not in kinds and ("-" in n or n in {"launch", "exit", "stop", "kill"})} <= {
        "in-place"
    }


def test_every_line_a_launch_writes_is_in_the_schema(tmp_path: Path) -> None:
    """A launch with a fault, a restart and an exit (the fake torchrun): each line it wrote is of a kind
    the schema declares, with declared fields of their declared types."""
    pod = Pod(tmp_path, profile_text(max_restarts=1, monitor=1, torch="2.1.0"))
    code, err = pod.run("--steps", "12", "--exit-code", "7", "--exit-rank", "1", "--exit-step", "3")
    assert code == 0, err
    records: List[Dict[str, Any]] = read_jsonl(pod.timeline)
    kinds = {r["event"] for r in records}
    assert {"launch", "worker-start", "worker-fault", "restart", "worker-exit", "exit"} <= kinds
    assert [p for r in records for p in E.problems(r)] == []
