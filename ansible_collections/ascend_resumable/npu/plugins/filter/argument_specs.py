# -*- coding: utf-8 -*-
"""The node roles' argument specs checked once for every host, on the controller (preflight).

Ansible validates a role's meta/argument_specs.yml when the role starts: one task per role and host, which a
re-run of site.yml on converged nodes paid for every node and every role (issue 33: about 30 ms of controller CPU
each). The roles that site.yml runs on every node (npu_facts, mindcluster_node, shared_storage, resumable_install)
are imported there without that per-host task (rolespec_validate: false) and their specs are checked here instead,
with the validator Ansible's own validate_argument_spec action uses, against each host's variables: what a user
sets in the inventory is checked the same way, once per run, before any node is touched. A role run on its own
(molecule, a user's playbook) still validates itself at its start.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml
from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


def _options(role, entry):
    path = os.path.join(ROLES, role, "meta", "argument_specs.yml")
    try:
        with open(path) as stream:
            return yaml.safe_load(stream)["argument_specs"][entry]["options"]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise AnsibleFilterError("argument_spec_problems: no entry point %r in %s: %s" % (entry, path, exc)) from exc


def argument_spec_problems(hostvars, hosts, roles, entry="main"):
    """ "host: role: message" for every host of ``hosts`` whose variables the ``entry`` spec of a role refuses.

    Only the variables a spec names are read (as role validation does: an absent one takes the spec's default).
    """
    problems = []
    for role in roles:
        options = _options(role, entry)
        validator = ArgumentSpecValidator(options)
        for host in hosts:
            host_vars = hostvars[host]
            provided = dict((name, host_vars[name]) for name in options if name in host_vars)
            for message in validator.validate(provided).error_messages:
                problems.append("%s: %s: %s" % (host, role, message))
    return problems


class FilterModule(object):
    def filters(self):
        return {"argument_spec_problems": argument_spec_problems}
