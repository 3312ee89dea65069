"""The rule registry: every constraint is a named rule with a source, evaluated on a profile."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional

from ..choices import Severity
from ..facts import JobFacts, all_job_facts
from ..hardware import release_base
from ..profile import Profile

ERROR: Severity = "error"
WARNING: Severity = "warning"


@dataclass
class Violation:
    """A breach of a named rule in one profile: severity, offending profile paths, fix, source."""

    rule: str
    severity: Severity
    paths: List[str]
    message: str
    fix: str
    source: str


@dataclass
class Finding:
    """One breach of a rule: where (profile paths), what is wrong, and what to change."""

    paths: List[str]
    message: str
    fix: str
    severity: Optional[Severity] = None  # None: the rule's own severity


ProfileCheck = Callable[[Profile, List[JobFacts]], Iterable[Finding]]
JobCheck = Callable[[Profile, JobFacts], Iterable[Finding]]


@dataclass
class Rule:
    id: str
    title: str
    severity: Severity
    source: str
    why: str
    module: str  # the topic: detection, rescheduling, process, ...
    check: ProfileCheck = field(repr=False)
    #: an error rule some of whose findings are warnings (Finding.severity); those can be acknowledged
    warns: bool = False

    @property
    def acknowledgeable(self) -> bool:
        """Whether ``acknowledge`` may name this rule: it reports warnings."""
        return self.severity == WARNING or self.warns


REGISTRY: Dict[str, Rule] = {}


def _why(fn: Callable[..., object]) -> str:
    return " ".join((fn.__doc__ or "").split())


def _topic(fn: Callable[..., object]) -> str:
    return fn.__module__.rsplit(".", 1)[-1]


def _register(rule_: Rule) -> None:
    if rule_.id in REGISTRY:
        raise RuntimeError("duplicate rule id %s" % rule_.id)
    REGISTRY[rule_.id] = rule_


def profile_rule(
    id: str, title: str, source: str, severity: Severity = ERROR, warns: bool = False
) -> Callable[[ProfileCheck], ProfileCheck]:
    """Register a check over the whole profile. The docstring of the check is the rule's "why".
    ``warns``: an error rule that also reports some findings as warnings."""

    def wrap(fn: ProfileCheck) -> ProfileCheck:
        _register(Rule(id, title, severity, source, _why(fn), _topic(fn), fn, warns))
        return fn

    return wrap


def job_rule(
    id: str, title: str, source: str, severity: Severity = ERROR, warns: bool = False
) -> Callable[[JobCheck], JobCheck]:
    """Register a check evaluated once per job."""

    def wrap(fn: JobCheck) -> JobCheck:
        def over_jobs(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
            for f in facts:
                yield from fn(profile, f)

        _register(Rule(id, title, severity, source, _why(fn), _topic(fn), over_jobs, warns))
        return fn

    return wrap


def evaluate(profile: Profile, facts: Optional[List[JobFacts]] = None) -> List[Violation]:
    """Every violation of every rule, errors first, in rule-registration order otherwise.
    ``facts``: the profile's job facts when the caller has them already (computed once per plan)."""
    if facts is None:
        facts = all_job_facts(profile)
    # A string that is no MindCluster release would be judged as whatever release it sorts next to
    # (7.3.RC1 as an Elastic Agent release); only rule mindcluster-release speaks about it then.
    not_a_release = bool(profile.cluster.mindcluster) and release_base(profile.cluster.mindcluster) is None
    out: List[Violation] = []
    for r in REGISTRY.values():
        for finding in r.check(profile, facts):
            if not_a_release and r.id != "mindcluster-release" and "cluster.mindcluster" in finding.paths:
                continue
            out.append(
                Violation(
                    rule=r.id,
                    severity=finding.severity or r.severity,
                    paths=list(finding.paths),
                    message=finding.message,
                    fix=finding.fix,
                    source=r.source,
                )
            )
    out.sort(key=lambda v: 0 if v.severity == ERROR else 1)
    return out


def errors(violations: Iterable[Violation]) -> List[Violation]:
    return [v for v in violations if v.severity == ERROR]


def format_violation(v: Violation) -> str:
    where = ", ".join(v.paths) if v.paths else "profile"
    return "%s [%s] %s: %s. Fix: %s (source: %s)" % (
        v.severity.upper(),
        v.rule,
        where,
        v.message.rstrip("."),
        v.fix,
        v.source,
    )
