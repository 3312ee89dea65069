"""A SchedulerPlan factory for the stack tests (independent of the profile loader)."""

from __future__ import annotations

from typing import Any, Dict

from resumable.plan.model import SchedulerPlan
from resumable.plan.scheduler import volcano_plugin_name

#: What the resilience settings below render to (an independent expectation for the builders).
RESILIENCE_DEVICE_PLUGIN_ARGS = {"-volcanoType": "true", "-hotReset": "2", "-listWatchPeriod": "5"}
RESILIENCE_NODED_ARGS = {"-reportInterval": "5"}


def scheduler_plan(
    release: str = "7.3.0", volcano: str = "1.9.0", arch: str = "aarch64", **overrides: Any
) -> SchedulerPlan:
    values: Dict[str, Any] = dict(
        release=release,
        stack_release=release,
        arch=arch,
        kubernetes="1.28",
        container_runtime="containerd",
        volcano_version=volcano,
        volcano_plugin_name=volcano_plugin_name(release, arch),
        image_registry="",
        image_pull_policy=None,
        image_pull_secrets=[],
        grace_over_time=900,
        hot_reset=2,
        list_watch_period=5,
        report_interval=5,
        resources={},
        notes=[],
        queues=["default"],
    )
    values.update(overrides)
    return SchedulerPlan(**values)
