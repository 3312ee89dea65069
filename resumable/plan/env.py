"""The training container's environment: the recovery settings the plan derives
(:func:`resumable.envderived.derived_env`) merged with the profile's ``env``.

Nothing the user wrote is dropped or overridden: a variable the plan also sets keeps the user's
spelling when the two agree (rule ``env-contradicts-profile`` rejects a profile where they do
not), and every other ``env`` entry is passed through.
"""

from __future__ import annotations

from typing import List

from ..envderived import derived_env
from ..envowners import OWNERS
from ..facts import JobFacts
from .model import EnvVar


def container_env(f: JobFacts) -> List[EnvVar]:
    user = f.declared.env
    env: List[EnvVar] = []
    for s in derived_env(f):
        if s.name in user:
            owner = OWNERS[s.name].field or "the plan"
            env.append(EnvVar(s.name, user[s.name], reason="profile env (checked against %s)" % owner))
        else:
            env.append(EnvVar(s.name, s.value, field_path=s.field_path, reason=s.reason))
    derived = {e.name for e in env}
    for name in sorted(user):
        if name in derived:
            continue
        known = OWNERS.get(name)
        reason = "profile env" if known is None or not known.field else "profile env (read as %s)" % known.field
        env.append(EnvVar(name, user[name], reason=reason))
    return env
