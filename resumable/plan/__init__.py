"""The plan a profile implies (see :mod:`resumable.plan.model`), built part by part.

Consumers do not call :func:`build_plan` directly: :func:`resumable.api.load_plan` is the one gate
that loads, validates and plans.
"""

from __future__ import annotations

import os
from typing import List, Optional

from ..facts import all_job_facts
from ..profile import Profile
from ..rules import REGISTRY, WARNING, evaluate
from .job import build_job
from .model import Note, Plan
from .nodes import build_nodes
from .scheduler import build_scheduler
from .storage import build_storage


def build_plan(profile: Profile, source: str = "<profile>") -> Plan:
    """Everything the profile implies. The job facts are computed once and shared by the rules and
    every part. Warnings the profile acknowledges become plan notes."""
    facts = all_job_facts(profile)
    storage = build_storage(profile, facts)
    profile_dir: Optional[str] = None
    if source and not source.startswith("<"):
        profile_dir = os.path.dirname(os.path.abspath(source))
    violations = evaluate(profile, facts)
    acknowledged = set(profile.acknowledge)
    kept = [v for v in violations if not (v.severity == WARNING and v.rule in acknowledged)]
    notes: List[Note] = [
        Note("acknowledged warning [%s] %s: %s" % (v.rule, ", ".join(v.paths), v.message), REGISTRY[v.rule].source)
        for v in violations
        if v.severity == WARNING and v.rule in acknowledged
    ]
    jobs = [build_job(f, storage, profile_dir) for f in facts]
    return Plan(
        profile=source,
        cluster_name=profile.cluster.name,
        scheduler=build_scheduler(profile, facts),
        nodes=build_nodes(profile, facts, storage),
        storage=storage,
        jobs=jobs,
        violations=kept,
        notes=notes,
    )


__all__ = ["build_plan"]
