"""Ansible callback: every task result of every host, one JSON line each, so a run's module runs and task
evaluations per node are counted (not timed).

A line is a task evaluation for its host (ok, failed, skipped or unreachable); it is a module run ("module": true)
when it was not skipped and its action does work on a host: every action but the ones Ansible evaluates on the
controller (set_fact, assert, debug, meta, the includes, group_by, fail, ...). Each line names the task, its
action and where it ran (the node, or the host it was delegated to), so a run on a converged node can be checked
against its budget (benchmarks/ansible_converge.py, tests/ansible/test_ansible_module_runs.py).

Enable with ANSIBLE_CALLBACK_PLUGINS=<this directory>, ANSIBLE_CALLBACKS_ENABLED=module_runs and
ASCEND_MODULE_RUNS_LOG=<file> (appended to).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: module_runs
type: aggregate
short_description: one JSON line per module run on a host (ASCEND_MODULE_RUNS_LOG)
description: Counts module runs per host; controller-side actions and skipped tasks are not module runs.
requirements: [ASCEND_MODULE_RUNS_LOG set to a file]
"""

#: actions Ansible evaluates on the controller: no module goes to a host
CONTROLLER_ACTIONS = {
    "add_host",
    "assert",
    "debug",
    "fail",
    "group_by",
    "import_role",
    "import_tasks",
    "include_role",
    "include_tasks",
    "include_vars",
    "meta",
    "pause",
    "set_fact",
    "set_stats",
    "validate_argument_spec",
}


def module_run(action: str) -> bool:
    """Whether a task of ``action`` (short or FQCN) runs a module on a host."""
    short = action.rsplit(".", 1)[-1]
    builtin = action == short or action.startswith("ansible.builtin.") or action.startswith("ansible.legacy.")
    return not (builtin and short in CONTROLLER_ACTIONS)


class CallbackModule(CallbackBase):  # type: ignore[misc]
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "module_runs"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._log = os.environ.get("ASCEND_MODULE_RUNS_LOG")
        self._play = ""

    def v2_playbook_on_play_start(self, play: Any) -> None:
        self._play = play.get_name()

    def _record(self, result: Any, status: str) -> None:
        action = result._task.action
        if not self._log:
            return
        host = result._host.get_name()
        # a delegated task's result keeps only the connection vars of its target (ansible-core task_result.py
        # _SUB_PRESERVE): the task's delegate_to names it, else (a template) the target's address does
        delegated = result._result.get("_ansible_delegated_vars")
        target = str(result._task.delegate_to or "")
        if delegated is not None and ("{" in target or not target):
            target = "delegated to %s" % delegated.get("ansible_host", "?")
        line = {
            "host": host,
            "ran_on": target if delegated is not None else host,
            "play": self._play,
            "task": result._task.get_name(),
            "action": action,
            "status": status,
            "module": status != "skipped" and module_run(action),
            # a run_once task is a cost of the run (the labels of every node: one call per kubectl host), not per node
            "run_once": bool(result._task.run_once),
        }
        with open(self._log, "a") as handle:
            handle.write(json.dumps(line) + "\n")

    def v2_runner_on_ok(self, result: Any) -> None:
        self._record(result, "ok")

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._record(result, "failed")

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._record(result, "unreachable")

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._record(result, "skipped")
