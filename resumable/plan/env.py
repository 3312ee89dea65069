"""The training container's environment: the recovery settings the plan derives
(:func:`resumable.envderived.derived_env`) merged with the profile's ``env``, less what the Ascend
Operator injects itself (:func:`resumable.operatorenv.operator_env`).

Nothing the user wrote is dropped or overridden: a variable the plan also sets keeps the user's
spelling when the two agree (rule ``env-contradicts-profile`` rejects a profile where they do
not), and every other ``env`` entry is passed through. The one exception is a variable the
operator appends to every pod of an AscendJob (addEnvValue never looks for an existing entry):
the pod template carries no second definition of it, whether the plan's or an ``env`` entry that
says the same (rule ``env-operator-injects`` rejects one that does not), and a note says so.
The launcher still sets the plan's value (:attr:`ContainerEnv.left_out`), so a pod no operator
made gets it too.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional

from .. import constants as C
from ..envderived import derived_env
from ..envowners import OWNERS
from ..facts import JobFacts
from ..operatorenv import TRIGGER_FIELDS, Injected, cite, env_entries, fields_of, operator_env, same_value
from .model import EnvVar, Note

#: why the template leaves an injected variable out
LEFT_OUT = "left out of the pod template, where it would be a second definition the operator's hides"
PROJECT_SOURCE = "PROJECT (one definition per variable: the operator's)"


class ContainerEnv(NamedTuple):
    """The job's container env, split by who writes it into the pod."""

    #: the pod template's env (the render and the Pulumi program write it)
    template: List[EnvVar]
    #: what the Ascend Operator injects into the ascend container of every pod (JobPlan.operator_env)
    operator: List[EnvVar]
    #: the plan's and the profile's variables the template leaves to the operator (they agree with
    #: its values, written here as it writes them): the launcher sets them, for a pod no operator made
    left_out: List[EnvVar]
    notes: List[Note]


def injected_var(i: Injected) -> EnvVar:
    return EnvVar(
        i.name, i.value, reason="the Ascend Operator injects it from %s (%s)" % (", ".join(fields_of(i)), i.source)
    )


def operator_note(f: JobFacts, injected: List[Injected]) -> Note:
    """What the operator injects into the job, named with its values."""
    sources: Dict[str, None] = {}
    for i in injected:
        for piece in i.source.split(";"):
            sources[piece.strip()] = None
    triggers = [t for t in TRIGGER_FIELDS if any(t in i.triggers for i in injected)]
    label = ""
    if C.ANNOTATION_RECOVER_STRATEGY in triggers:
        label = "labels the PodGroup process-recover-enable=on and "
        sources[cite(f.release, "podgroup")] = None
    return Note(
        "the Ascend Operator of MindCluster %s %sinjects into the ascend container of every pod, from %s: %s; the "
        "pod template leaves them out (the operator adds its own definitions)"
        % (
            f.release.text,
            label,
            ", ".join("%s (%s)" % (t, TRIGGER_FIELDS[t]) for t in triggers),
            ", ".join("%s=%s" % (i.name, i.value) for i in injected),
        ),
        "; ".join(sources),
    )


def container_env(f: JobFacts) -> ContainerEnv:
    user = f.declared.env
    injected: Dict[str, Injected] = {i.name: i for i in operator_env(f)}
    agreeing = {i.name for _, i in env_entries(f).agreeing}
    template: List[EnvVar] = []
    left_out: List[EnvVar] = []
    notes: List[Note] = []

    def operator_sets(var: EnvVar) -> Optional[Injected]:
        i = injected.get(var.name)
        if i is None or var.value is None or not same_value(i, var.value, f.release):
            return None
        return i

    for s in derived_env(f):
        if s.name in user:
            owner = OWNERS[s.name].field or "the plan"
            var = EnvVar(s.name, user[s.name], reason="profile env (checked against %s)" % owner)
        else:
            var = EnvVar(s.name, s.value, field_path=s.field_path, reason=s.reason)
        i = operator_sets(var)
        if i is None:
            template.append(var)
            continue
        left_out.append(EnvVar(s.name, i.value, reason=var.reason))  # the operator's spelling: the pod's
        if s.name not in user:
            notes.append(
                Note("%s=%s (%s) is set by the Ascend Operator: %s" % (s.name, s.value, s.reason, LEFT_OUT), i.source)
            )
    derived = {s.name for s in derived_env(f)}
    for name in sorted(user):
        if name in derived:
            continue
        known = OWNERS.get(name)
        reason = "profile env" if known is None or not known.field else "profile env (read as %s)" % known.field
        if name in agreeing:
            left_out.append(EnvVar(name, injected[name].value, reason=reason))
        else:
            template.append(EnvVar(name, user[name], reason=reason))
    for name in sorted(agreeing):
        i = injected[name]
        notes.append(
            Note(
                "env %s=%s says what the Ascend Operator injects (%s=%s, from %s): %s; the operator sets it"
                % (name, user[name], name, i.value, ", ".join(fields_of(i)), LEFT_OUT),
                "%s; %s" % (i.source, PROJECT_SOURCE),
            )
        )
    operator = list(injected.values())
    if operator:
        notes.insert(0, operator_note(f, operator))
    return ContainerEnv(template, [injected_var(i) for i in operator], left_out, notes)
