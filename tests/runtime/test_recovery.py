"""The recovery state (resumable/runtime/recovery.py) and its watchers, driven directly: no process,
socket or file, a clock the test moves. Each table row is one story of a launch; the rows say what the
state and the watchers make of it (the events written, the phase, the generations marked, what is taken
for hung, the exit code)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import pytest

from resumable.runtime import events as E
from resumable.runtime.hangwatch import HangWatch
from resumable.runtime.recovery import HUNG_CODE, Phase, RecoveryState, Worker
from resumable.runtime.recoverywatch import RecoveryWatch
from resumable.runtime.startwatch import StartWatch

START_TIMEOUT = 20.0
HANG_TIMEOUT = 10.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self.mono = 1000.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.mono += seconds


class Story:
    """A launch told to the state: processes by name (``r0`` for rank 0's first process, ``r1b`` its
    second), every event the state returned kept in order."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.state = RecoveryState(self.clock)
        self.pids: Dict[str, int] = {}
        self.events: List[E.Event] = []
        self.hangs = HangWatch(HANG_TIMEOUT)
        self.starts = StartWatch(START_TIMEOUT)

    def w(self, name: str) -> Worker:
        return self.state.workers[self.pids[name]]

    def start(self, name: str, rank: int, rc: int = 0) -> None:
        pid = 1000 + len(self.pids)
        self.pids[name] = pid
        self.events += self.state.started(pid, rank, rank, rc, None, self.clock.time())

    def phase(self, name: str, kind: str) -> None:
        self.events.append(self.state.reported(self.w(name), kind, self.clock.time()))

    def training(self, *names: str) -> None:
        for name in names:
            for kind in (E.PG_INIT, E.PG_READY, E.FIRST_COLLECTIVE):
                self.phase(name, kind)

    def end(self, name: str, code: Optional[int], gone: bool = True) -> None:
        self.events += self.state.ended(self.w(name), code)
        if gone:
            self.events += self.state.gone(self.w(name))

    def hang(self, name: str) -> None:
        """``name`` stops beating while the others beat: the hang watch, looking every second, takes it just
        after the hang timeout."""
        victim = self.w(name)
        victim.last_beat = self.clock.monotonic()
        silent = 0
        while True:
            for w in self.state.workers.values():
                if w is not victim and not w.done:
                    w.last_beat = self.clock.monotonic()
            taken = self.hangs.look(self.state, self.clock.monotonic())
            if taken:
                break
            self.clock.advance(1)
            silent += 1
        assert [t.worker for t in taken] == [victim] and silent == HANG_TIMEOUT + 1
        self.events += taken[0].events

    def look_starts(self) -> List[str]:
        """What the start watch takes now, by name."""
        names = {pid: name for name, pid in self.pids.items()}
        taken = self.starts.look(self.state, self.clock.monotonic())
        for t in taken:
            self.events += t.events
        return [names[t.worker.pid] for t in taken]

    def kinds(self) -> List[str]:
        return [e.kind for e in self.events]

    def of(self, kind: str) -> List[E.Event]:
        return [e for e in self.events if e.kind == kind]


def in_place_then(fault: Callable[[Story], None]) -> Story:
    """Ranks 0 and 1 train; rank 1 fails and is restarted in place (generation 1: rank 0 runs on in
    generation 0); the new rank 1 waits in its process group's initialisation for rank 0; then ``fault``
    happens to rank 0, the older generation's process."""
    s = Story()
    s.start("r0", 0)
    s.start("r1", 1)
    s.training("r0", "r1")
    s.end("r1", -9)
    s.clock.advance(2)
    s.start("r1b", 1)  # same restart count, rank 0 runs on: in place
    assert s.state.generation == 1 and s.of(E.RESTART)[-1].details["kind"] == "in-place"
    s.phase("r1b", E.PG_INIT)
    fault(s)
    return s


def crash(s: Story) -> None:
    s.end("r0", 1)


def hang(s: Story) -> None:
    s.hang("r0")


def vanish(s: Story) -> None:
    """rank 0's status is gone before the launcher looks; the agent then restarts the group: the fault
    is inferred at that restart."""
    s.end("r0", None)
    s.clock.advance(1)
    s.start("r0b", 0, rc=1)


@pytest.mark.parametrize(
    "fault, faulted",
    [(crash, {0, 1}), (hang, {0, 1}), (vanish, {0, 1})],
    ids=["old-rank-crashes", "old-rank-hangs", "old-rank-vanishes"],
)
def test_the_generation_rule_a_fault_marks_every_running_generation(
    fault: Callable[[Story], None], faulted: Set[int]
) -> None:
    """Issue 32: after an in-place restart the older rank's fault, whichever way it is seen, marks the
    generation it started in and the one the restarted rank runs in, so the rank restarted in place,
    waiting in its process group's initialisation for the failed one, is left to the recovery and never
    taken for a hang of its own. (Before, a crash marked the current generation and a hang or an inferred
    fault the failed process's: the hang left the restarted rank to be killed at its start timeout, named
    as a second faulty rank.)"""
    s = in_place_then(fault)
    assert s.state.faulted >= faulted
    s.clock.advance(START_TIMEOUT + 5)
    assert s.look_starts() == []
    assert not s.w("r1b").hung
    if fault is not vanish:  # the fault is being recovered: its ranks are rank 0's alone
        assert s.state.fault is not None and s.state.fault.ranks == {0}


def test_a_fault_in_the_newest_generation_marks_only_what_runs() -> None:
    """A whole-group restart stops every older process: a later fault marks the new generation, not the
    stopped ones again (they have no process left), and a late starter of a generation without a fault is
    still taken."""
    s = Story()
    s.start("r0", 0)
    s.start("r1", 1)
    s.training("r0", "r1")
    s.end("r1", 3)
    s.end("r0", None)  # stopped by the agent
    s.start("r0b", 0, rc=1)
    s.start("r1b", 1, rc=1)
    assert s.state.faulted == {0} and s.state.generation == 1 and s.state.group_generation == 1
    s.phase("r0b", E.PG_INIT)  # rank 1 never begins
    s.clock.advance(START_TIMEOUT + 1)
    assert s.look_starts() == ["r1b"]  # the rank that never began, not the one waiting for it
    assert s.state.faulted == {0, 1} and s.state.fault is not None and s.state.fault.code == HUNG_CODE
    assert s.look_starts() == []  # its generation has its fault now


@pytest.mark.parametrize(
    "code, before, kind",
    [
        (0, None, E.WORKER_EXIT),
        (7, None, E.WORKER_FAULT),
        (None, None, E.WORKER_END),
        (7, "fault", E.WORKER_STOP),
        (None, "fault", E.WORKER_STOP),
        (7, "stopping", E.WORKER_STOP),
        (0, "stopping", E.WORKER_EXIT),
        (7, "older than the group restart", E.WORKER_STOP),
    ],
)
def test_how_an_end_is_recorded(code: Optional[int], before: Optional[str], kind: str) -> None:
    s = Story()
    s.start("r0", 0)
    s.start("r1", 1)
    s.start("r2", 2)
    if before == "fault":
        s.end("r2", -9)
    elif before == "stopping":
        s.state.stop("SIGTERM received")
    elif before == "older than the group restart":
        s.end("r2", -9)
        s.start("r2b", 2, rc=1)  # the group restarts: r0 and r1 are of an older generation
        assert s.state.fault is None and s.state.group_generation == 1
    s.end("r0", code, gone=False)
    assert s.events[-1].kind == kind
    assert (s.events[-1].exit_code, s.events[-1].details["pid"]) == (code, s.pids["r0"])


@pytest.mark.parametrize(
    "steps, phases",
    [
        # a crash: recorded, seen reaped, restarted
        (["start", "crash", "reap", "restart"], ["running", "faulted", "detected", "running"]),
        # reaped before the launcher saw the status: nothing until the restart infers the fault
        (["start", "vanish", "restart"], ["running", "running", "running"]),
        # a hang: recorded when taken; SIGKILLed by the supervisor, reaped by the agent
        (["start", "hang", "reap", "restart"], ["running", "faulted", "detected", "running"]),
        # stopping is for good: a restart while stopping does not make it run again
        (["start", "crash", "stop", "restart"], ["running", "faulted", "stopping", "stopping"]),
        (["start", "agent ended", "crash"], ["running", "stopping", "stopping"]),
    ],
)
def test_the_phase_moves_one_way(steps: List[str], phases: List[str]) -> None:
    s = Story()
    seen = []
    for step in steps:
        if step == "start":
            s.start("r0", 0)
            s.start("r1", 1)
        elif step == "crash":
            s.end("r1", -9, gone=False)
        elif step == "vanish":
            s.end("r1", None, gone=False)
        elif step == "hang":
            s.hang("r1")
        elif step == "reap":
            s.events += s.state.gone(s.w("r1"))
        elif step == "restart":
            s.start("r1b", 1, rc=1)
        elif step == "stop":
            s.state.stop("SIGTERM received")
        elif step == "agent ended":
            s.state.agent_ended()
        seen.append(s.state.phase.value)
    assert seen == phases
    assert all(p in {x.value for x in Phase} for p in phases)


@pytest.mark.parametrize(
    "story, kinds",
    [
        (
            "crash, reaped, group restart",
            ["worker-fault", "fault-detected", "workers-stopped", "restart", "worker-start"],
        ),
        (
            "gone unseen, group restart",
            ["worker-end", "worker-fault", "fault-detected", "workers-stopped", "restart", "worker-start"],
        ),
    ],
)
def test_the_phases_of_a_recovery_are_written_in_order(story: str, kinds: List[str]) -> None:
    s = Story()
    s.start("r0", 0)
    s.start("r1", 1)
    del s.events[:]
    s.end("r1", -9 if story.startswith("crash") else None)
    s.clock.advance(3)
    s.start("r1b", 1, rc=1)
    assert s.kinds() == kinds
    restart = s.of(E.RESTART)[0]
    assert restart.details["seconds"] == 3.0 and restart.details["fault_ranks"] == [1]
    assert restart.details["kind"] == "group" and restart.details["generation"] == 1
    inferred = s.of(E.WORKER_FAULT)[0].details.get("inferred", False)
    assert inferred is (not story.startswith("crash"))


@pytest.mark.parametrize(
    "story, failed",
    [
        ("crash", 7),
        ("crash then group restart", None),  # the fault was recovered: the agent's code counts
        ("hang", HUNG_CODE),
        ("in place, then the older rank crashes", 5),  # the last fault since the restart, whatever its generation
        ("vanish", None),  # no exit code known
    ],
)
def test_the_fault_that_ended_the_job(story: str, failed: Optional[int]) -> None:
    s = Story()
    s.start("r0", 0)
    s.start("r1", 1)
    if story.startswith("crash"):
        s.end("r1", 7)
        if "restart" in story:
            s.start("r1b", 1, rc=1)
    elif story == "hang":
        s.hang("r1")
    elif story.startswith("in place"):
        s.end("r1", 7)
        s.start("r1b", 1)
        s.end("r0", 5)
    else:
        s.end("r1", None)
    assert s.state.failed_code() == failed


@pytest.mark.parametrize(
    "rank, rc, kind",
    [(1, 0, "in-place"), (1, 1, "group"), (0, 0, None), (2, 0, None), (1, None, None)],
)
def test_what_begins_a_generation(rank: int, rc: Optional[int], kind: Optional[str]) -> None:
    """After rank 1's process ended while rank 0 runs on: a new process of rank 1 with the same restart
    count is an in-place restart, one with a higher count a group restart; a second process of a rank
    that runs, or of a new rank, begins nothing."""
    s = Story()
    s.start("r0", 0)
    s.start("r1", 1)
    s.end("r1", 0)
    assert s.state.restart_kind(rank, rc) == kind


def test_the_recovery_watch_bounds_a_recovery_and_says_its_phase() -> None:
    s = Story()
    watch = RecoveryWatch(START_TIMEOUT)
    s.start("r0", 0)
    s.end("r0", -9, gone=False)
    s.clock.advance(START_TIMEOUT)
    assert watch.look(s.state, s.clock.time()) is None
    s.clock.advance(1)
    expired = watch.look(s.state, s.clock.time())
    assert expired is not None and expired.event.details["phase"] == "fault not yet detected by the agent"
    s.events += s.state.gone(s.w("r0"))
    expired = watch.look(s.state, s.clock.time())
    assert expired is not None and expired.event.details["phase"] == "workers stopped"
    assert expired.event.details["seconds"] == START_TIMEOUT + 1
    s.state.stop(expired.reason)
    assert watch.look(s.state, s.clock.time()) is None


def test_every_event_the_state_writes_is_in_the_schema() -> None:
    """What the state returns, serialised, is what the timeline reads back: declared kinds, declared fields,
    each of its declared type (events.problems), and the typed reader takes every line."""
    stories: List[Tuple[Callable[[Story], None], Story]] = [(f, in_place_then(f)) for f in (crash, hang, vanish)]
    records: List[Dict[str, Any]] = []
    for _, s in stories:
        s.clock.advance(START_TIMEOUT + 5)
        s.look_starts()
        records += [e.record() for e in s.events]
    assert {r["event"] for r in records} >= {
        "worker-start",
        "worker-fault",
        "worker-hang",
        "fault-detected",
        "workers-stopped",
        "restart",
        "pg-init",
        "pg-ready",
        "first-collective",
    }
    assert [p for r in records for p in E.problems(r)] == []
    parsed = E.parse_events(records)
    assert [e.record() for e in parsed] == records
