# -*- coding: utf-8 -*-
"""The node roles' argument specs checked inside a task each host runs anyway.

Ansible validates a role's meta/argument_specs.yml when the role starts: one task per role and host, which a
re-run of site.yml on converged nodes paid for every node and every role (issue 33: 30-70 ms of controller CPU
each, a worker process per task and host). The roles that site.yml runs on every node (npu_facts, mindcluster_node,
shared_storage, resumable_install) are imported there without that task (rolespec_validate: false, or an entry
point without a spec) and their specs are checked here instead, with the validator Ansible's own
validate_argument_spec action uses, against the host's values of the variables the specs name, in an assertion
the host runs anyway (facts.yml's profile check, nodes.yml's check of the three roles' parameters): the same
refusal, no task of its own. A role run on its own (molecule, a user's playbook) still validates itself.
(A run_once check of every host through hostvars was tried first: building each host's variables there cost
the controller more per node than the tasks it replaced.)
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml
from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

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
        raise AnsibleFilterError("argument_spec_problems: no entry point %r in %s: %s" % (entry, path, exc)) from exc
    _SPECS[role, entry] = options
    return options


#: the plan's parts (playbooks/tasks/plan.yml sets them for every host of the play from `resumable plan`, which
#: validated the profile): in the specs for a role run on its own, left out here, where templating them for every
#: host cost the controller as much as the task evaluation this check replaces
PLAN_PREFIX = "ascend_plan_"


def _user_options(role, entry):
    return dict((name, spec) for name, spec in _options(role, entry).items() if not name.startswith(PLAN_PREFIX))


def argument_spec_names(roles, entry="main"):
    """The variables the ``entry`` specs of ``roles`` name, but the plan's (the values to hand to
    argument_spec_problems)."""
    names = []
    for role in roles:
        names.extend(name for name in _user_options(role, entry) if name not in names)
    return names


#: the value the playbooks' ``query('ansible.builtin.vars', *names, default=UNSET)`` gives an unset variable
UNSET = "__ascend_argument_spec_unset__"


def argument_spec_problems(values, roles, entry="main"):
    """ "role: message" for each refusal of the ``entry`` spec of a role, for one host's ``values`` (name -> value;
    UNSET for a variable the host does not have, which takes the spec's default as role validation does)."""
    items = (values or {}).items()
    provided = dict((name, value) for name, value in items if not (isinstance(value, str) and value == UNSET))
    problems = []
    for role in roles:
        options = _user_options(role, entry)
        mine = dict((name, value) for name, value in provided.items() if name in options)
        for message in ArgumentSpecValidator(options).validate(mine).error_messages:
            problems.append("%s: %s" % (role, message))
    return problems


class FilterModule(object):
    def filters(self):
        return {"argument_spec_problems": argument_spec_problems, "argument_spec_names": argument_spec_names}
