"""All rules, registered on import. ``evaluate(profile)`` returns every violation."""

from __future__ import annotations

from . import (
    cluster,
    compile,
    detection,
    env,
    hardware,
    limits,
    network,
    pod,
    process,
    rescheduling,
    software,
    timing,
    workload,
)
from .base import ERROR, REGISTRY, WARNING, Finding, Rule, errors, evaluate, format_violation

__all__ = [
    "ERROR",
    "REGISTRY",
    "WARNING",
    "Finding",
    "Rule",
    "cluster",
    "compile",
    "detection",
    "env",
    "errors",
    "evaluate",
    "format_violation",
    "hardware",
    "limits",
    "network",
    "pod",
    "process",
    "rescheduling",
    "software",
    "timing",
    "workload",
]
