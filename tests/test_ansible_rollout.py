"""The collection's playbooks/compute.yml (ascend_resumable.npu.compute): its rollout around the
per-node window, run for real by ansible-playbook on local hosts, from a copy of the collection whose
driver and CANN roles are replaced by stubs (tests/ stubs below): only the play structure of
compute.yml is under test here, the roles have their molecule scenarios.

- The rollout knobs are play keywords, which Ansible templates without a host: a value in the
  inventory's group_vars used to be ignored (ascend_rollout_serial: 2 still ran 20% batches).
- With ``max_fail_percentage: 0`` ansible-core's linear strategy fails every other host of a batch
  after the task where one host failed (ansible-core lib/ansible/plugins/strategy/linear.py,
  "max_fail_percentage" check after each task): peers were left drained mid-window. Now a failure
  holds only its node, its peers finish, the batch summary names the held nodes with their reason
  and the run stops before the next batch (unless ascend_rollout_max_held allows them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
COLLECTION = ROOT / "ansible_collections" / "ascend_resumable" / "npu"
BIN = Path(sys.executable).parent
PLAYBOOK = shutil.which("ansible-playbook", path=str(BIN)) or shutil.which("ansible-playbook")

pytestmark = pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook is not installed (make test-venv)")

STUB_DRIVER_ASSESS = """
- name: Stub decision (every node needs a change)
  ansible.builtin.set_fact:
    ascend_driver_decision: {problems: [], needs_change: true}
"""
STUB_CANN_DECIDE = """
- name: Stub CANN decision
  ansible.builtin.set_fact:
    ascend_cann_decision: {problems: [], needs_change: false}
"""
# The window of the stub driver role: opened, then the node fails, is held waiting for a reboot
# or is released; each step is logged so the test sees which nodes got how far.
STUB_DRIVER_MAIN = """
- name: Stub window opened
  ansible.builtin.shell: echo "window {{ inventory_hostname }}" >> {log}
  changed_when: true
- name: Stub delegated kubectl call (its target refuses the connection for some nodes)
  ansible.builtin.command: "true"
  delegate_to: "{{ 'gone' if inventory_hostname in rollout_test_unreachable else inventory_hostname }}"
  changed_when: false
- name: Stub install fails on some nodes
  ansible.builtin.fail:
    msg: "driver installer exited 1 on {{ inventory_hostname }}"
  when: inventory_hostname in rollout_test_fail
- name: Stub node waits for a reboot
  ansible.builtin.set_fact:
    ascend_driver_window: {reason: "firmware upgrade"}
    ascend_driver_not_running: ["firmware 7.8.0.1.220 is installed but npu-smi reports 7.7.0.1.231"]
  when: inventory_hostname in rollout_test_hold
- name: Stub release
  ansible.builtin.shell: echo "released {{ inventory_hostname }}" >> {log}
  changed_when: true
  when: inventory_hostname not in rollout_test_hold
"""
STUB_CANN_MAIN = """
- name: Stub CANN
  ansible.builtin.shell: echo "cann {{ inventory_hostname }}" >> {log}
  changed_when: true
"""


def _rollout(
    tmp_path: Path,
    hosts: int,
    knobs: Dict[str, object],
    fail: Optional[List[str]] = None,
    hold: Optional[List[str]] = None,
    unreachable: Optional[List[str]] = None,
    extra: Optional[List[str]] = None,
) -> tuple[subprocess.CompletedProcess[str], List[str]]:
    log = tmp_path / "rollout.log"
    # the collection with its plugins and playbooks, and stub roles in place of its own
    stub = tmp_path / "ansible_collections" / "ascend_resumable" / "npu"
    for part in ("plugins", "playbooks"):
        shutil.copytree(COLLECTION / part, stub / part, ignore=shutil.ignore_patterns("__pycache__"))
    files = {
        "roles/ascend_driver/tasks/assess.yml": STUB_DRIVER_ASSESS,
        "roles/ascend_driver/tasks/main.yml": STUB_DRIVER_MAIN.replace("{log}", str(log)),
        "roles/ascend_cann/tasks/decide.yml": STUB_CANN_DECIDE,
        "roles/ascend_cann/tasks/main.yml": STUB_CANN_MAIN.replace("{log}", str(log)),
    }
    for name, text in files.items():
        (stub / name).parent.mkdir(parents=True, exist_ok=True)
        (stub / name).write_text("---" + text)
    names = ["n%d" % i for i in range(1, hosts + 1)]
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text(
        yaml.safe_dump(
            {
                "all": {
                    # a host whose sshd refuses the connection: a task delegated to it comes back UNREACHABLE
                    "hosts": {"gone": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9}},
                    "children": {"ascend_compute": {"hosts": {n: {} for n in names}}},
                }
            }
        )
    )
    group_vars = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "ansible_become": False,
        "ascend_plan_nodes": {"stub": True},
        "rollout_test_fail": fail or [],
        "rollout_test_hold": hold or [],
        "rollout_test_unreachable": unreachable or [],
    }
    (inventory / "group_vars" / "ascend_compute.yml").write_text(yaml.safe_dump(dict(group_vars, **knobs)))
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(tmp_path / "none.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(tmp_path),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORKS="10",
        ANSIBLE_RETRY_FILES_ENABLED="0",
    )
    run = subprocess.run(
        [str(PLAYBOOK), "-i", str(inventory / "hosts.yml"), str(stub / "playbooks" / "compute.yml"), *(extra or [])],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return run, log.read_text().splitlines() if log.exists() else []


def _batches(output: str) -> int:
    return output.count("PLAY [Ascend compute nodes that need a change")


def test_serial_comes_from_the_inventory(tmp_path: Path) -> None:
    run, log = _rollout(tmp_path, 5, {"ascend_rollout_serial": 2})
    assert run.returncode == 0, run.stdout + run.stderr
    assert _batches(run.stdout) == 3  # 2 + 2 + 1, not 20% = 1 node per batch
    assert sorted(line for line in log if line.startswith("released")) == ["released n%d" % i for i in range(1, 6)]
    assert log[:2] == ["window n1", "window n2"] or sorted(log[:2]) == ["window n1", "window n2"]


def test_a_failed_node_leaves_its_peers_released_and_stops_the_rollout(tmp_path: Path) -> None:
    run, log = _rollout(tmp_path, 4, {"ascend_rollout_serial": 2}, fail=["n1"])
    out = run.stdout
    assert run.returncode != 0, out
    # the peer of the failed node finished its window (released, CANN done)
    assert "released n2" in log and "cann n2" in log, log
    # the failed node is held with its reason, in the summary and in the stop message
    assert "released n2; held n1: driver installer exited 1 on n1 (task: Stub install fails on some nodes)" in out
    assert "n1 is held" in out and "The rollout stops before the next batch" in out
    # the next batch never started
    assert not [line for line in log if line.endswith(("n3", "n4"))], log
    assert _batches(out) == 1


def test_held_nodes_stop_the_rollout_unless_the_inventory_allows_them(tmp_path: Path) -> None:
    run, log = _rollout(tmp_path / "a", 4, {"ascend_rollout_serial": 2}, hold=["n2"])
    assert run.returncode != 0 and _batches(run.stdout) == 1, run.stdout
    assert "held n2: it stays in maintenance: firmware 7.8.0.1.220 is installed" in run.stdout
    assert "released n1" in log and not [line for line in log if line.endswith(("n3", "n4"))]

    run, log = _rollout(tmp_path / "b", 4, {"ascend_rollout_serial": 2, "ascend_rollout_max_held": 1}, hold=["n2"])
    assert run.returncode == 0 and _batches(run.stdout) == 2, run.stdout
    assert {"released n1", "released n3", "released n4"} <= set(log)


def test_an_unreachable_node_stops_the_rollout(tmp_path: Path) -> None:
    """UNREACHABLE is not rescued and not counted by max_fail_percentage: the run must still stop."""
    run, log = _rollout(tmp_path, 4, {"ascend_rollout_serial": 2}, unreachable=["n1"])
    assert run.returncode != 0 and _batches(run.stdout) == 1, run.stdout
    assert "n1 became unreachable during the rollout" in run.stdout
    assert "released n2" in log and not [line for line in log if line.endswith(("n3", "n4"))], log


def test_the_documented_tags_run_the_rollout(tmp_path: Path) -> None:
    """--tags ascend_driver used to skip the untagged read/decide pass, so no node entered a batch."""
    run, log = _rollout(tmp_path, 2, {"ascend_rollout_serial": 2}, extra=["--tags", "ascend_driver"])
    assert run.returncode == 0, run.stdout
    assert {"released n1", "released n2"} <= set(log) and not [line for line in log if line.startswith("cann")]
    assert "batch n1, n2: released n1, n2; held none" in run.stdout


def _tasks(node: object) -> List[Dict[str, object]]:
    """Every task dict in a task file, blocks and rescues included."""
    out: List[Dict[str, object]] = []
    for item in node if isinstance(node, list) else []:
        if isinstance(item, dict):
            out.append(item)
            for key in ("block", "rescue", "always"):
                out += _tasks(item.get(key))
    return out


def test_delegated_kubectl_calls_are_throttled() -> None:
    """With forks 50 every node's drain/label/uncordon goes to one kubectl host over one multiplexed SSH
    connection; sshd refuses sessions beyond MaxSessions (OpenSSH sshd_config(5), default 10) and Ansible
    reports those tasks UNREACHABLE. Every task delegated to a kubectl host is throttled."""
    delegated = []
    for path in sorted(COLLECTION.glob("roles/*/tasks/*.yml")) + sorted(COLLECTION.glob("roles/*/handlers/*.yml")):
        for task in _tasks(yaml.safe_load(path.read_text())):
            if "kubectl_host" in str(task.get("delegate_to", "")):
                delegated.append((path.relative_to(ROOT), task.get("name"), task.get("throttle")))
    assert len(delegated) >= 10
    assert [d for d in delegated if not str(d[2]).startswith("{{ ") or "kubectl_throttle" not in str(d[2])] == []
