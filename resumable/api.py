"""The one gate: load a profile, validate it and plan it.

Every consumer (the CLI, the Pulumi program and its components, ``resumable launch`` and
``doctor`` inside the training image, the Ansible preflight through ``resumable plan``) calls
:func:`load_plan` and reads the :class:`~resumable.plan.model.Plan` it returns; none of them
validates or decides again. A profile that cannot be read or bound raises
:class:`~resumable.errors.ProfileError`; one that breaks rules raises :class:`PlanError` carrying
every violation; one with a value the API server would refuse where the plan puts it raises
:class:`~resumable.errors.ProfileErrors` naming the field. All are user mistakes (exit 2) and print
as one paragraph.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from .errors import ResumableError
from .manifests import accepted
from .plan import build_plan
from .plan.model import JobPlan, Plan
from .profile import Profile, load_profile, parse_profile
from .rules.base import ERROR, WARNING, Violation, format_violation


def failing(violations: Sequence[Violation], strict: bool = False) -> List[Violation]:
    """The violations that make a profile invalid: errors, and with ``strict`` warnings too."""
    return [v for v in violations if v.severity == ERROR or (strict and v.severity == WARNING)]


def counts(violations: Sequence[Violation]) -> str:
    e = sum(1 for v in violations if v.severity == ERROR)
    w = sum(1 for v in violations if v.severity == WARNING)
    return "%d error%s, %d warning%s" % (e, "" if e == 1 else "s", w, "" if w == 1 else "s")


class PlanError(ResumableError):
    """The profile breaks rules (errors, or warnings under ``strict``); ``violations`` has them all."""

    def __init__(self, source: str, violations: Sequence[Violation], strict: bool = False) -> None:
        self.violations = list(violations)
        self.failing = failing(self.violations, strict)
        shown = "; ".join(format_violation(v) for v in self.failing)
        what = "the profile is invalid (%s%s): %s" % (counts(self.violations), ", strict" if strict else "", shown)
        super().__init__(what, source, "Fix the fields named above (`resumable validate %s` lists them)." % source)


def plan_profile(profile: Profile, source: str = "<profile>", strict: bool = False) -> Plan:
    """Validate and plan an already bound profile; raise :class:`PlanError` when it breaks rules,
    and :class:`~resumable.errors.ProfileErrors` when the API server would refuse one of its values
    where the plan puts it (:mod:`resumable.manifests.accepted`: the objects of a plan without rule
    errors are built and checked as the API server checks them)."""
    plan = build_plan(profile, source)
    if failing(plan.violations, strict):
        raise PlanError(source, plan.violations, strict)
    accepted.check(plan, profile, source)
    return plan


def load_plan(path: str, strict: bool = False) -> Plan:
    """Read ``path``, validate it and return its plan (see the module docstring for errors)."""
    return plan_profile(load_profile(path), path, strict)


def load_plan_text(text: str, source: str = "<profile>", strict: bool = False) -> Plan:
    """As :func:`load_plan`, for profile text already in memory (tests, ConfigMaps)."""
    return plan_profile(parse_profile(text, source), source, strict)


def job_path(plan: Plan, job: JobPlan) -> str:
    """Where ``job`` is in the profile, as every message names a profile place: ``jobs[<index>]``."""
    for i, j in enumerate(plan.jobs):
        if j is job or j.name == job.name:
            return "jobs[%d]" % i
    return "jobs[?]"


def job_plan(plan: Plan, name: Optional[str] = None) -> JobPlan:
    """The plan of job ``name``; without a name, the profile's only job."""
    if name is None:
        if len(plan.jobs) == 1:
            return plan.jobs[0]
        raise ResumableError(
            "the profile has %d jobs (%s)" % (len(plan.jobs), ", ".join(j.name for j in plan.jobs)),
            plan.profile,
            "Name one with --job.",
        )
    for job in plan.jobs:
        if job.name == name:
            return job
    raise ResumableError(
        "has no job named %r (jobs: %s)" % (name, ", ".join(j.name for j in plan.jobs)),
        plan.profile,
        "Use one of those names with --job.",
    )
