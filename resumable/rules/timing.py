"""Timeouts, grace periods and value ranges."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, List

from ..facts import JobFacts
from ..profile import Profile
from .base import WARNING, Finding, job_rule, profile_rule


@job_rule(
    "grace-period-below-volcano",
    "terminationGracePeriodSeconds stays below Volcano's grace-over-time",
    "YAMLCFG (terminationGracePeriodSeconds < grace-over-time); INST05 Table 3",
)
def grace_period_below_volcano(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """With fault-scheduling grace Volcano force-deletes a pod after grace-over-time; a longer pod
    grace period is cut short, so the dying-gasp checkpoint or the graceful stop never finishes."""
    r = f.job.recovery
    if (
        r.fault_scheduling == "grace"
        and r.termination_grace_period is not None
        and r.termination_grace_period >= profile.scheduler.grace_over_time
    ):
        yield Finding(
            ["%s.recovery.termination_grace_period" % f.path, "scheduler.grace_over_time"],
            "termination_grace_period %ds is not below Volcano grace-over-time %ds"
            % (r.termination_grace_period, profile.scheduler.grace_over_time),
            "Lower recovery.termination_grace_period or raise scheduler.grace_over_time.",
        )


def _walk(obj: Any, path: str, where: Callable[[str], str]) -> Iterable[Finding]:
    for fl in dataclasses.fields(obj):
        value = getattr(obj, fl.name)
        rel = "%s.%s" % (path, fl.name) if path else fl.name
        if dataclasses.is_dataclass(value):
            yield from _walk(value, rel, where)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if dataclasses.is_dataclass(item):
                    yield from _walk(item, "%s[%d]" % (rel, i), where)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            lo, hi = fl.metadata.get("minimum"), fl.metadata.get("maximum")
            if (lo is not None and value < lo) or (hi is not None and value > hi):
                yield Finding(
                    [where(rel)],
                    "%s is outside the allowed range %s to %s (%s)"
                    % (
                        value,
                        "-inf" if lo is None else lo,
                        "inf" if hi is None else hi,
                        fl.metadata.get("doc", ""),
                    ),
                    "Use a value from %s to %s." % (lo, hi),
                )


@profile_rule(
    "value-range",
    "Numeric settings stay within their ranges",
    "YAMLCFG (wait-reschedule-timeout 30-270, npus per pod); K8S (fault-retry-times 0-100); "
    "HA-CANN-CONNECT (120-7200); INST04 Table 3; INST05 Table 3; INST08 (20000 replicas); INST09; "
    "PROJECT (the limits docs/profile.md marks as this project's)",
)
def value_range(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """Out-of-range values are rejected or clamped by the component that reads them, often without
    a log line. Each field's documentation in docs/profile.md names where its range comes from:
    a vendor document, or this project's own limit where the vendor gives none (RTO 表2 says only
    that max_restarts and monitor_interval are integers). Values read from env are checked too,
    and named by their env entry."""
    for name in ("cluster", "scheduler", "storage"):
        yield from _walk(getattr(profile, name), name, _same)
    for f in facts:
        yield from _walk(f.job, "", f.where)


def _same(path: str) -> str:
    return path


@job_rule(
    "hccl-exec-timeout-atlas800",
    "On Atlas 800 (ascend-910) HCCL_EXEC_TIMEOUT is at most 17340 and a multiple of 68",
    "HA-CANN-EXEC",
    severity=WARNING,
)
def hccl_exec_timeout_atlas800(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Atlas 800 training servers round HCCL_EXEC_TIMEOUT to a multiple of 68 seconds and cap it."""
    t = f.job.hccl.exec_timeout
    if profile.cluster.chip == "ascend-910" and t is not None and (t > 17340 or t % 68):
        yield Finding(
            ["%s.hccl.exec_timeout" % f.path],
            "exec_timeout %d is rounded on Atlas 800 (multiples of 68, at most 17340)" % t,
            "Use a multiple of 68 up to 17340, e.g. %d." % min(17340, max(68, (t // 68) * 68)),
        )
