"""The container environment: env entries that contradict the profile fields owning them."""

from __future__ import annotations

from typing import Dict, Iterable

from ..envderived import Setting, agrees, derived_env, unset_conflicts
from ..envowners import OWNERS
from ..facts import JobFacts
from ..operatorenv import env_entries, operator_env
from ..profile import Profile
from .base import Finding, job_rule


@job_rule(
    "env-contradicts-profile",
    "An env entry for a variable the plan owns agrees with the profile field that owns it",
    "RTO 表1; RTO 表10; RT04 Table 3; PROJECT (one table: env variable -> owning field, docs/profile.md)",
)
def env_contradicts_profile(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """A recovery setting is checked the same whether it is written as a profile field or in env: where
    the field is left to the plan (auto, null) the env value is read as the field and every rule
    checks it; where the field, or what the plan derives from other fields, fixes a value, env
    must say the same. Otherwise one of the two would silently win: the plan never drops or
    overrides what the user wrote."""
    for c in f.env_conflicts:
        yield Finding(
            ["%s.env.%s" % (f.path, c.name), *("%s.%s" % (f.path, x) for x in c.fields)],
            c.message,
            c.fix,
        )
    derived: Dict[str, Setting] = {s.name: s for s in derived_env(f)}
    user = f.declared.env
    lifted = set(f.origins.values())
    for name, setting in derived.items():
        if name not in user or name in lifted or agrees(name, user[name], setting):
            continue
        owner = OWNERS[name]
        if setting.field_path is not None:
            yield Finding(
                ["%s.env.%s" % (f.path, name)],
                "env sets %s=%s but each pod needs its own %s (%s)"
                % (name, user[name], setting.field_path, setting.reason),
                "Remove %s from env; the plan sets it from the downward API." % name,
            )
            continue
        yield Finding(
            ["%s.env.%s" % (f.path, name), *("%s.%s" % (f.path, x) for x in owner.fields)],
            "env %s=%s contradicts what %s gives: %s (%s)"
            % (name, user[name], owner.field, setting.value, setting.reason),
            "Remove %s from env, or change %s so that the plan sets what you need." % (name, owner.field),
        )
    injected = {i.name for i in operator_env(f)}  # set by the operator, not left unset: env-operator-injects
    for c in unset_conflicts(f, derived):
        if c.name in injected:
            continue
        yield Finding(
            ["%s.env.%s" % (f.path, c.name), *("%s.%s" % (f.path, x) for x in c.fields)],
            c.message,
            c.fix,
        )


@job_rule(
    "env-operator-injects",
    "An env entry for a variable the Ascend Operator injects into an AscendJob says what the operator injects",
    "MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/env.go:33-38 addEnvValue, :348-378 "
    "doAddProcessRecoverEnv, :318-346 addMSPodScheduleEnv and addSubHealthyEnv; "
    "MC:@v26.0.0 component/ascend-operator/pkg/controllers/v1/env.go:337-398; "
    "PROJECT (never silently override what the user asked for)",
)
def env_operator_injects(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """From 7.2.RC1 the Ascend Operator puts the recovery switches into every pod of an AscendJob
    (from recover-strategy, pod-rescheduling, subHealthyStrategy; resumable.operatorenv), appending
    its own definition whatever the pod template holds: Kubernetes keeps the later one, so an env
    entry for such a variable with another value would be silently overridden (a hot-switch entry is
    rewritten in place). An entry that says the same is left out of the pod template with a note."""
    for c in env_entries(f).conflicts:
        yield Finding(
            ["%s.env.%s" % (f.path, c.name), *("%s.%s" % (f.path, x) for x in c.fields)],
            c.message,
            c.fix,
        )
