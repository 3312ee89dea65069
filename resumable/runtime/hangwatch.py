"""The hang watch: a training process silent for the plan's hang timeout is hung.

Each training process sends a heartbeat every plan.launcher.heartbeat_seconds (the start-up hook); one
silent for ``hang_timeout`` (a SIGSTOPped or wedged process) is taken through
:meth:`.recovery.RecoveryState.take_hung`: recorded as the fault (its rank named, before a healthy
peer's collective timeout blames that peer) and SIGKILLed by the supervisor, the signal a stopped
process cannot ignore and the one TaskD's agent stops ranks with (MC@v7.3.0
taskd/python/adaptor/patch/torch_patch.py:79-99), so the agent sees the rank fail and its recovery (in
place or of the group) takes over, as for a crash.

Not taken: a process that never sent a beat (a hook whose thread could not start), anything while the
launcher stops the training, and nothing at the first look after the launcher itself did not run for
:data:`GAP_SECONDS` (its socket queue holds only a few datagrams, so silence is no evidence then:
every watch starts again from that look).
"""

from __future__ import annotations

from typing import List, Optional

from .recovery import RecoveryState, Taken

#: a launcher loop that did not run for this long restarts every hang watch
GAP_SECONDS = 5.0
#: how many decimals the durations of a hang or a late start are recorded with (milliseconds): a
#: silence just over its timeout can read as the timeout itself
RECORDED_DECIMALS = 3


class HangWatch:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        #: when the watch last looked (a launcher that was not running cannot have seen heartbeats)
        self.last_look: Optional[float] = None

    def look(self, state: RecoveryState, now: float) -> List[Taken]:
        """The processes taken for hung at monotonic time ``now``."""
        last, self.last_look = self.last_look, now
        if self.timeout <= 0 or state.stopping:
            return []
        if last is None or now - last > GAP_SECONDS:
            for w in state.workers.values():
                if w.last_beat is not None:
                    w.last_beat = now
            return []
        taken = []
        for w in list(state.workers.values()):
            if w.done or w.hung or w.last_beat is None or now - w.last_beat <= self.timeout:
                continue
            silent = now - w.last_beat
            taken.append(
                state.take_hung(
                    w,
                    "heartbeat",
                    "sent no heartbeat for %.0f s (hang timeout %.0f s)" % (silent, self.timeout),
                    silent_seconds=round(silent, RECORDED_DECIMALS),
                    hang_timeout=self.timeout,
                )
            )
        return taken
