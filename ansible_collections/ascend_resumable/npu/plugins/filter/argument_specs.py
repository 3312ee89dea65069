# -*- coding: utf-8 -*-
"""The node roles' argument specs, merged for one validation task per host.

Ansible validates a role's meta/argument_specs.yml when the role starts: one task per role and host, which a
re-run of site.yml on converged nodes paid for every node and every role (issue 33: 30-70 ms of controller CPU
each, a worker process per task and host). playbooks/nodes.yml imports its roles without that task
(rolespec_validate: false; facts.yml uses entry points without a spec) and validates the specs of the four roles
site.yml runs on every node in one ansible.builtin.validate_argument_spec task per host, with this merged spec.
Two cheaper-looking designs cost more, measured by benchmarks/ansible_converge.py: one run_once check of every host
through hostvars (building each host's variables: 1.4 s of controller CPU per node), and the check folded into
existing assertions through the vars lookup (several seconds per node). A role run on its own (molecule, a user's
playbook) still validates itself.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml
from ansible.errors import AnsibleFilterError

ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: (role, entry) -> options, read once per process
_SPECS = {}


def _options(role, entry):
    if (role, entry) in _SPECS:
        return _SPECS[role, entry]
    path = os.path.join(ROLES, role, "meta", "argument_specs.yml")
    try:
        with open(path) as stream:
            options = yaml.load(stream, Loader=LOADER)["argument_specs"][entry]["options"]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise AnsibleFilterError("argument_spec_options: no entry point %r in %s: %s" % (entry, path, exc)) from exc
    _SPECS[role, entry] = options
    return options


#: the plan's parts: playbooks/tasks/plan.yml sets them for every host of the play from `resumable plan`, which
#: validated the profile, so they are not inventory values; they stay in the specs for a role run on its own
PLAN_PREFIX = "ascend_plan_"


def _user_options(role, entry):
    return dict((name, spec) for name, spec in _options(role, entry).items() if not name.startswith(PLAN_PREFIX))


def argument_spec_options(roles, entry="main"):
    """The options of the ``entry`` specs of ``roles`` in one spec (an option two roles name keeps the first
    role's entry), but the plan's parts."""
    merged = {}
    for role in roles:
        for name, spec in _user_options(role, entry).items():
            merged.setdefault(name, spec)
    return merged


class FilterModule(object):
    def filters(self):
        return {"argument_spec_options": argument_spec_options}
