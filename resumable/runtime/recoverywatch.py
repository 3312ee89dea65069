"""The recovery watch: no recovery ends in silence (issue 27).

A fault whose recovery has not started a new training process plan.launcher.start_timeout after it is
a ``recovery-timeout`` (with the phase the recovery was in), and the supervisor stops the training so
that the Pod- or job-level rung takes over (issue 27: a restarted generation waited in the rendezvous
for 13 minutes without a word).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from . import events as E
from .hangwatch import RECORDED_DECIMALS
from .recovery import RecoveryState


@dataclasses.dataclass
class Expired:
    """A recovery over its bound: the event, what the launcher says, why it stops the training."""

    event: E.Event
    message: str
    reason: str


class RecoveryWatch:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    def look(self, state: RecoveryState, now: float) -> Optional[Expired]:
        """The recovery over its bound at Unix time ``now``, if there is one."""
        fault = state.fault
        if fault is None or self.timeout <= 0 or state.stopping:
            return None
        waited = now - fault.time
        if waited <= self.timeout:
            return None
        w = fault.worker
        phase = "workers stopped" if fault.detected else "fault not yet detected by the agent"
        event = E.new(
            E.RECOVERY_TIMEOUT,
            now,
            w.rank,
            restart_count=w.restart_count,
            seconds=round(waited, RECORDED_DECIMALS),
            start_timeout=self.timeout,
            phase=phase,
            generation=w.generation,
        )
        message = (
            "no new training process %.0f s after the fault of rank %s (start timeout %.0f s; %s): the training "
            "is stopped so that the Pod- or job-level rung takes over" % (waited, w.rank, self.timeout, phase)
        )
        return Expired(event, message, "no new training process %.0f s after the fault" % self.timeout)
