"""The start watch: no start ends in silence (issue 27).

In a generation where a process has begun to initialise its process group (``pg-init``: the job uses
one), a process that has not finished it (``pg-ready``) plan.launcher.start_timeout after it started is
hung, taken through :meth:`.recovery.RecoveryState.take_hung` with ``cause: start-timeout`` and its
phase, and SIGKILLed like a hung one. While a process of the generation has not begun, only such
processes are taken, each start_timeout after its own start (the others wait for them: a waiting rank
that started a little earlier is not blamed); when all began, every late one is (they wait for a peer on
another pod). A generation with a fault (:attr:`.recovery.RecoveryState.faulted`, the generation rule) is
left to its recovery; a script that never initialises a process group is never taken.
"""

from __future__ import annotations

from typing import Dict, List

from .hangwatch import RECORDED_DECIMALS
from .recovery import RecoveryState, Taken, Worker


class StartWatch:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    def look(self, state: RecoveryState, now: float) -> List[Taken]:
        """The processes taken for hung at monotonic time ``now``. The generations are looked at in
        turn: a process taken in one records the fault that marks the others it runs with."""
        if self.timeout <= 0 or state.stopping:
            return []
        generations: Dict[int, List[Worker]] = {}
        for w in state.workers.values():
            generations.setdefault(w.generation, []).append(w)
        taken: List[Taken] = []
        for generation, members in generations.items():
            if generation in state.faulted or not any(w.phase != "started" for w in members):
                continue  # being recovered already; or nothing here uses a process group (yet)
            live = [w for w in members if not w.done and not w.hung]
            waited_for = [w for w in live if w.phase == "started"] or [w for w in live if w.phase == "pg-init"]
            for w in [w for w in waited_for if now - w.began > self.timeout]:
                taken.append(
                    state.take_hung(
                        w,
                        "start-timeout",
                        "has not initialised its process group %.0f s after it started (start timeout %.0f s)"
                        % (now - w.began, self.timeout),
                        seconds=round(now - w.began, RECORDED_DECIMALS),
                        start_timeout=self.timeout,
                    )
                )
        return taken
