"""The collection's playbooks/compute.yml (ascend_resumable.npu.compute): its rollout around the
per-node window, run for real by ansible-playbook on local hosts, from a copy of the collection whose
driver and CANN roles are replaced by stubs (tests/ stubs below): only the play structure of
compute.yml is under test here, the roles have their molecule scenarios.

- Engine changes (Ascend Docker Runtime, the containerd/docker configuration and its restart) and CANN
  happen inside each node's drained window, before its release; playbooks/nodes.yml restarts nothing.
- The rollout knobs are play keywords, which Ansible templates without a host: a value in the
  inventory's group_vars used to be ignored (ascend_rollout_serial: 2 still ran 20% batches).
- With ``max_fail_percentage: 0`` ansible-core's linear strategy fails every other host of a batch
  after the task where one host failed (ansible-core lib/ansible/plugins/strategy/linear.py,
  "max_fail_percentage" check after each task): peers were left drained mid-window. Now a failure
  holds only its node, its peers finish, the batch summary names the held nodes with their reason
  and the run stops before the next batch (unless ascend_rollout_max_held allows them).
- Every tag docs/ansible.md documents, selected (--tags) or skipped (--skip-tags), runs a node's whole
  window (opened -> changed -> released) or leaves the node alone: a tag on include_tasks/include_role
  selects the include only, not the tasks it includes, and used to let CANN and the engine change on
  undrained nodes. The driver role's main.yml and prepare.yml run unchanged here for their tags.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

import pytest
import test_ansible_hardware as hardware_tests
import yaml
from conftest import ROOT
from role_code import PLAYBOOK, playbook_env, plugin

COLLECTION = ROOT / "ansible_collections" / "ascend_resumable" / "npu"

pytestmark = pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook is not installed (make test-venv)")

STUB_DRIVER_ASSESS = """
- name: Stub decision (every node in rollout_test_driver needs a driver change)
  ansible.builtin.set_fact:
    ascend_driver_decision:
      problems: []
      needs_change: "{{ inventory_hostname in rollout_test_driver or inventory_hostname in rollout_test_left_open }}"
      not_running: []
      missing_prerequisites: "{{ ['dkms'] if inventory_hostname in rollout_test_prerequisites else [] }}"
    ascend_driver_plan:
      changes: "{{ inventory_hostname in rollout_test_driver }}"
      order: "{{ ['driver'] if inventory_hostname in rollout_test_driver else [] }}"
      driver: {reason: "{{ 'driver upgrade' if inventory_hostname in rollout_test_driver else '' }}"}
    # a window an earlier run left open (waiting for a reboot that has happened since)
    ascend_driver_window: >-
      {{ {'reason': 'driver upgrade', 'opened': '2025-01-01T00:00:00+00:00'}
         if inventory_hostname in rollout_test_left_open else none }}
    ascend_driver_window_opened_now: false
"""
STUB_CANN_DECIDE = """
- name: Stub CANN decision
  ansible.builtin.set_fact:
    ascend_cann_decision: {problems: [], needs_change: "{{ inventory_hostname in rollout_test_cann }}"}
"""
# Ascend Docker Runtime: nodes in rollout_test_engine need an engine configuration change
STUB_RUNTIME_DECIDE = """
- name: Stub runtime decision
  ansible.builtin.set_fact:
    ascend_docker_runtime_engine: containerd
    ascend_docker_runtime_decision:
      problems: []
      action: none
      config_changes: "{{ inventory_hostname in rollout_test_engine }}"
      needs_change: "{{ inventory_hostname in rollout_test_engine }}"
"""
STUB_RUNTIME_MAIN = """
- name: Stub runtime decide
  ansible.builtin.import_tasks: decide.yml
- name: Stub engine configuration
  ansible.builtin.shell: echo "engine {{ inventory_hostname }}" >> {log}
  changed_when: true
  when: ascend_docker_runtime_decision.needs_change
  notify: stub restart engine
- name: Stub runtime applied
  ansible.builtin.set_fact:
    ascend_docker_runtime_decision: {problems: [], action: none, config_changes: false, needs_change: false}
"""
STUB_RUNTIME_HANDLERS = """
- name: Stub engine restart
  ansible.builtin.shell: echo "restart {{ inventory_hostname }}" >> {log}
  changed_when: true
  listen: stub restart engine
"""
# The driver role's window opened for CANN or the engine only (tasks_from open), and its release
STUB_DRIVER_OPEN = """
- name: Stub window opened for other changes
  ansible.builtin.shell: echo "open {{ inventory_hostname }}" >> {log}
  changed_when: true
- name: Stub window record
  ansible.builtin.set_fact:
    ascend_driver_window: {reason: "{{ ascend_driver_window_reason }}"}
    ascend_driver_window_opened_now: true
"""
STUB_DRIVER_RELEASE = """
- name: Stub release
  ansible.builtin.shell: echo "released {{ inventory_hostname }}" >> {log}
  changed_when: true
  when: inventory_hostname not in rollout_test_hold
- name: Stub window closed
  ansible.builtin.set_fact:
    ascend_driver_window: null
  when: inventory_hostname not in rollout_test_hold
"""
# The driver role's own main.yml and prepare.yml run as they are (their tags and includes are under test);
# its window (window.yml, included by main.yml for a driver change) is a stub: opened, then the node fails,
# is held waiting for a reboot or is released; each step is logged so the test sees which nodes got how far.
STUB_DRIVER_WINDOW = """
- name: Stub window opened
  ansible.builtin.shell: echo "window {{ inventory_hostname }}" >> {log}
  changed_when: true
- name: Stub window record
  ansible.builtin.set_fact:
    ascend_driver_window: {reason: "driver upgrade"}
    ascend_driver_window_opened_now: true
- name: Stub delegated kubectl call (its target refuses the connection for some nodes)
  ansible.builtin.command: "true"
  delegate_to: "{{ 'gone' if inventory_hostname in rollout_test_unreachable else inventory_hostname }}"
  changed_when: false
- name: Stub install fails on some nodes
  ansible.builtin.fail:
    msg: "driver installer exited 1 on {{ inventory_hostname }}"
  when: inventory_hostname in rollout_test_fail
- name: Stub driver installer
  ansible.builtin.shell: echo "install {{ inventory_hostname }}" >> {log}
  changed_when: true
- name: Stub node waits for a reboot
  ansible.builtin.set_fact:
    ascend_driver_window: {reason: "firmware upgrade"}
    ascend_driver_not_running: ["firmware 7.8.0.1.220 is installed but npu-smi reports 7.7.0.1.231"]
  when: inventory_hostname in rollout_test_hold
- name: Stub release by the role itself (compute.yml releases after CANN and the engine instead)
  ansible.builtin.shell: echo "released {{ inventory_hostname }}" >> {log}
  changed_when: true
  when: inventory_hostname not in rollout_test_hold and ascend_driver_release | default(true) | bool
"""
# prepare.yml's steps that need no window: the run user, the missing build prerequisites
STUB_DRIVER_USER = """
- name: Stub run user
  ansible.builtin.debug:
    msg: run user exists
"""
STUB_DRIVER_PREREQUISITES = """
- name: Stub prerequisites
  ansible.builtin.shell: echo "prerequisites {{ inventory_hostname }}" >> {log}
  changed_when: true
"""
STUB_CANN_MAIN = """
- name: Stub CANN
  ansible.builtin.shell: echo "cann {{ inventory_hostname }}" >> {log}
  changed_when: true
  when: ascend_cann_decision.needs_change
"""
# the driver role's own task files that run unchanged in the stub role
REAL_DRIVER_TASKS = ("main.yml", "prepare.yml")
# playbooks/nodes.yml's other roles: nothing to do here
STUB_EMPTY = """
- name: Stub role
  ansible.builtin.debug:
    msg: stub
"""


def _rollout(
    tmp_path: Path,
    hosts: int,
    knobs: Dict[str, object],
    fail: Optional[List[str]] = None,
    hold: Optional[List[str]] = None,
    unreachable: Optional[List[str]] = None,
    extra: Optional[List[str]] = None,
    driver: Optional[List[str]] = None,
    engine: Optional[List[str]] = None,
    cann: Optional[List[str]] = None,
    prerequisites: Optional[List[str]] = None,
    left_open: Optional[List[str]] = None,
    playbook: str = "compute.yml",
) -> tuple[subprocess.CompletedProcess[str], List[str]]:
    log = tmp_path / "rollout.log"
    # the collection with its plugins and playbooks, and stub roles in place of its own
    stub = tmp_path / "ansible_collections" / "ascend_resumable" / "npu"
    for part in ("plugins", "playbooks"):
        shutil.copytree(COLLECTION / part, stub / part, ignore=shutil.ignore_patterns("__pycache__"))
    stubs = {
        "ascend_driver/tasks/assess.yml": STUB_DRIVER_ASSESS,
        "ascend_driver/tasks/window.yml": STUB_DRIVER_WINDOW,
        "ascend_driver/tasks/user.yml": STUB_DRIVER_USER,
        "ascend_driver/tasks/prerequisites.yml": STUB_DRIVER_PREREQUISITES,
        "ascend_driver/tasks/open.yml": STUB_DRIVER_OPEN,
        "ascend_driver/tasks/release.yml": STUB_DRIVER_RELEASE,
        "ascend_cann/tasks/decide.yml": STUB_CANN_DECIDE,
        "ascend_cann/tasks/main.yml": STUB_CANN_MAIN,
        "ascend_docker_runtime/tasks/decide.yml": STUB_RUNTIME_DECIDE,
        "ascend_docker_runtime/tasks/main.yml": STUB_RUNTIME_MAIN,
        "ascend_docker_runtime/handlers/main.yml": STUB_RUNTIME_HANDLERS,
        # nodes.yml imports the three roles' converge.yml (their parameters are checked in the play)
        "mindcluster_node/tasks/converge.yml": STUB_EMPTY,
        "shared_storage/tasks/converge.yml": STUB_EMPTY,
        "resumable_install/tasks/converge.yml": STUB_EMPTY,
        "resumable_install/tasks/find.yml": STUB_EMPTY,
        # what nodes.yml's one read of the node asks for each role (nothing here), and their parameters right
        "mindcluster_node/vars/main.yml": "\nmindcluster_node_check: {}\nmindcluster_node_parameters_ok: true\n",
        "shared_storage/vars/main.yml": "\nshared_storage_check: {}\nshared_storage_parameters_ok: true\n",
        "resumable_install/vars/main.yml": "\nresumable_install_check: {}\nresumable_install_parameters_ok: true\n",
    }
    files = {"roles/" + name: text.replace("{log}", str(log)) for name, text in stubs.items()}
    for name, text in files.items():
        (stub / name).parent.mkdir(parents=True, exist_ok=True)
        (stub / name).write_text("---" + text)
    for name in REAL_DRIVER_TASKS:
        shutil.copy(COLLECTION / "roles/ascend_driver/tasks" / name, stub / "roles/ascend_driver/tasks" / name)
    # nodes.yml validates the variables of the four roles site.yml runs on every node against their real specs
    for role in ("npu_facts", "mindcluster_node", "shared_storage", "resumable_install"):
        (stub / "roles" / role / "meta").mkdir(parents=True, exist_ok=True)
        shutil.copy(COLLECTION / "roles" / role / "meta/argument_specs.yml", stub / "roles" / role / "meta")
    names = ["n%d" % i for i in range(1, hosts + 1)]
    driver = names if driver is None else driver
    # the CANN role changes something on the nodes whose driver changes, unless told otherwise
    cann = driver if cann is None else cann
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text(
        yaml.safe_dump(
            {
                "all": {
                    # a host whose sshd refuses the connection: a task delegated to it comes back UNREACHABLE
                    "hosts": {"gone": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9}},
                    "children": {"ascend_cluster": {"children": {"ascend_compute": {"hosts": {n: {} for n in names}}}}},
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
        "rollout_test_driver": driver,
        "rollout_test_engine": engine or [],
        "rollout_test_cann": cann,
        "rollout_test_prerequisites": prerequisites or [],
        "rollout_test_left_open": left_open or [],
    }
    (inventory / "group_vars" / "ascend_compute.yml").write_text(yaml.safe_dump(dict(group_vars, **knobs)))
    env = playbook_env(tmp_path, str(tmp_path), ANSIBLE_FORKS="10")
    run = subprocess.run(
        [str(PLAYBOOK), "-i", str(inventory / "hosts.yml"), str(stub / "playbooks" / playbook), *(extra or [])],
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
    # the batch summary names every node of the batch, the unreachable one held with its reason
    # (ansible_play_batch drops a node once it is unreachable: it used to say "batch n2: released n2; held none")
    assert "batch n1, n2: released n2; held n1: unreachable" in run.stdout, run.stdout


DOCS = ROOT / "docs" / "ansible.md"

# What each step of the stub rollout is (the log's first word), and the tags that select it. A tag not
# listed selects none of them: a newly documented tag that changes something must be added here.
OPENS = {"window", "open"}  # the driver role's window (window.yml), or open.yml for CANN/engine changes
CHANGES = {
    "install": {"ascend_driver", "ascend_driver_install"},
    "cann": {"ascend_cann"},
    "engine": {"ascend_docker_runtime"},
    "restart": {"ascend_docker_runtime"},
}
# needs no window (prepare.yml): the missing build prerequisites
OUTSIDE = {"prerequisites": {"ascend_driver", "ascend_driver_prepare"}}
# n1 driver, n2 CANN, n3 engine, n4 all three; n1 and n4 miss build prerequisites
TAG_NODES = {
    "n1": {"install", "prerequisites"},
    "n2": {"cann"},
    "n3": {"engine", "restart"},
    "n4": {"install", "prerequisites", "cann", "engine", "restart"},
}


def _documented_tags() -> List[str]:
    """The tags docs/ansible.md documents: the backquoted names in the first sentence of its "- Tags:" item."""
    text = DOCS.read_text(encoding="utf-8")
    item = re.search(r"^- Tags:(.*?)\.(?:\s|\Z)", text, re.M | re.S)
    assert item, "docs/ansible.md has no '- Tags:' item"
    return list(dict.fromkeys(re.findall(r"`([a-z0-9_]+)`", item.group(1))))


def _selected(step: str, tags: Optional[str], skip: Optional[str]) -> bool:
    selecting = {**CHANGES, **OUTSIDE}[step]
    return (tags is None or tags in selecting) and (skip is None or skip not in selecting)


def _check_windows(log: List[str], tags: Optional[str] = None, skip: Optional[str] = None) -> None:
    """Per node: each change step between its window's opening and its release, or nothing at all; and the
    steps the tag selection selects (nothing else) ran."""
    for node, steps in TAG_NODES.items():
        events = [line.split()[0] for line in log if line.split()[1] == node]
        window = [e for e in events if e not in OUTSIDE]
        changes = [e for e in window if e in CHANGES]
        if changes:
            assert window[0] in OPENS and window[-1] == "released", (node, events)
            assert len([e for e in window if e in OPENS]) == 1, (node, events)
            assert window[1:-1] == changes, (node, events)
        else:
            assert window == [], "%s drained or released with no change: %s" % (node, events)
        expected = {step for step in steps if _selected(step, tags, skip)}
        assert set(events) - OPENS - {"released"} == expected, (node, events)
    if "restart" in log:  # the engine restart right after its change, inside the window
        for node in TAG_NODES:
            events = [line.split()[0] for line in log if line.split()[1] == node]
            if "restart" in events:
                assert events[events.index("engine") + 1] == "restart", (node, events)


def test_the_documented_tags_are_parsed() -> None:
    tags = _documented_tags()
    assert {"ascend_driver", "ascend_driver_install", "ascend_cann", "ascend_docker_runtime"} <= set(tags), tags
    assert "always" not in tags, tags


# four nodes in one batch: n1 needs the driver (and its build prerequisites), n2 CANN, n3 an engine
# change, n4 all of them
EVERY_KIND_OF_CHANGE: Dict[str, Any] = dict(
    driver=["n1", "n4"], cann=["n2", "n4"], engine=["n3", "n4"], prerequisites=["n1", "n4"]
)


def test_the_whole_rollout_opens_changes_and_releases_every_node(tmp_path: Path) -> None:
    run, log = _rollout(
        tmp_path,
        4,
        {"ascend_rollout_serial": 4},
        **EVERY_KIND_OF_CHANGE,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    _check_windows(log)


@pytest.mark.parametrize("option", ["--tags", "--skip-tags"])
@pytest.mark.parametrize("tag", _documented_tags())
def test_no_documented_tag_changes_a_node_outside_its_window(tmp_path: Path, tag: str, option: str) -> None:
    """A tag on include_tasks/include_role selects the include only, not the tasks it includes (ansible-core
    2.19; apply: {tags: ...} passes tags on): --tags ascend_docker_runtime changed the engine configuration and
    restarted containerd + kubelet on an undrained node (open.yml's tasks skipped, the release with them),
    --tags ascend_cann installed CANN there, --tags ascend_driver_install ran nothing of window.yml. Each
    documented tag, selected or skipped, now runs a node's whole window (open -> change -> release) or
    leaves the node alone."""
    run, log = _rollout(
        tmp_path,
        4,
        {"ascend_rollout_serial": 4},
        **EVERY_KIND_OF_CHANGE,
        extra=[option, tag],
    )
    assert run.returncode == 0, run.stdout + run.stderr
    if option == "--tags":
        _check_windows(log, tags=tag)
    else:
        _check_windows(log, skip=tag)


@pytest.mark.parametrize(
    ("option", "released"),
    [([], True), (["--skip-tags", "ascend_driver"], True), (["--tags", "ascend_driver_prepare"], False)],
)
def test_a_window_an_earlier_run_left_open_is_released_when_the_run_selects_a_window_step(
    tmp_path: Path, option: List[str], released: bool
) -> None:
    """The release is tagged always (a window opened in the run is released whatever the tags); a window an
    earlier run left open is released only by a run that selects a step of a window, not by --tags
    ascend_driver_prepare, which reports the node held in its maintenance window."""
    run, log = _rollout(tmp_path, 2, {"ascend_rollout_serial": 2}, driver=[], cann=[], left_open=["n1"], extra=option)
    if released:
        assert run.returncode == 0 and log == ["released n1"], run.stdout + run.stderr
    else:
        assert run.returncode != 0 and log == [], run.stdout + run.stderr
        assert "held n1: it stays in maintenance: driver upgrade" in run.stdout


def test_the_documented_tags_run_the_rollout(tmp_path: Path) -> None:
    """--tags ascend_driver used to skip the untagged read/decide pass, so no node entered a batch."""
    run, log = _rollout(tmp_path, 2, {"ascend_rollout_serial": 2}, extra=["--tags", "ascend_driver"])
    assert run.returncode == 0, run.stdout
    assert {"released n1", "released n2"} <= set(log) and not [line for line in log if line.startswith("cann")]
    assert "batch n1, n2: released n1, n2; held none" in run.stdout


def test_engine_changes_happen_inside_the_serial_window(tmp_path: Path) -> None:
    """playbooks/nodes.yml used to restart containerd + kubelet (or docker) on every compute node at once
    when the engine configuration changed; the read/decide pass now decides it, and each node's change and
    engine restart happen in its drained window, one batch after the other, before its release."""
    run, log = _rollout(tmp_path, 4, {"ascend_rollout_serial": 1}, driver=[], engine=["n1", "n2"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert log == [
        *("open n1", "engine n1", "restart n1", "released n1"),
        *("open n2", "engine n2", "restart n2", "released n2"),
    ], log
    assert _batches(run.stdout) == 2  # converged n3, n4 never enter a batch


def test_cann_and_the_engine_change_before_the_node_is_released(tmp_path: Path) -> None:
    """CANN used to be installed after the driver role had uncordoned the node."""
    run, log = _rollout(tmp_path, 1, {"ascend_rollout_serial": 1}, driver=["n1"], engine=["n1"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert log == ["window n1", "install n1", "cann n1", "engine n1", "restart n1", "released n1"], log


def test_nodes_yml_restarts_no_engine(tmp_path: Path) -> None:
    """nodes.yml only checks what compute.yml's windows applied: a pending engine change fails it naming
    compute.yml, nothing is restarted; a converged node changes nothing there."""
    run, log = _rollout(tmp_path / "a", 2, {}, engine=["n1"], playbook="nodes.yml")
    assert run.returncode != 0, run.stdout
    assert "n1: Ascend Docker Runtime must be" in run.stdout and "that happens only in a drained window" in run.stdout
    assert log == [], log
    run, log = _rollout(tmp_path / "b", 2, {}, engine=[], playbook="nodes.yml")
    assert run.returncode == 0 and log == [], run.stdout
    assert "changed=0" in run.stdout and "changed=1" not in run.stdout, run.stdout


def _tasks(node: object) -> List[Dict[str, object]]:
    """Every task dict in a task file, blocks and rescues included."""
    out: List[Dict[str, object]] = []
    for item in node if isinstance(node, list) else []:
        if isinstance(item, dict):
            out.append(item)
            for key in ("block", "rescue", "always"):
                out += _tasks(item.get(key))
    return out


def test_tagged_includes_pass_their_tags_on() -> None:
    """The stubbed run above covers compute.yml and the driver role's main.yml; the roles' own includes
    (a CANN or runtime installer behind include_tasks, the shared storage mounts) are not run there. A tag
    on include_tasks/include_role selects the include only (ansible-core 2.19): each tagged include of
    every playbook and role repeats its tags in apply, or the tasks it includes are skipped whenever
    --tags selects that tag (`--tags shared_storage` mounted nothing)."""
    paths = sorted(COLLECTION.glob("playbooks/*.yml")) + sorted(COLLECTION.glob("roles/*/tasks/*.yml"))
    missing = []
    for path in paths:
        doc = yaml.safe_load(path.read_text())
        plays = doc if path.parent.name == "playbooks" else [{"tasks": doc}]
        for task in _tasks([t for play in plays for t in play.get("tasks", [])]):
            include = task.get("ansible.builtin.include_tasks", task.get("ansible.builtin.include_role"))
            listed: Any = task.get("tags") or []
            tags = set(listed) - {"always"}
            if include is None or not tags:
                continue
            applied: Set[str] = set()
            if isinstance(include, dict):
                applied = set((include.get("apply") or {}).get("tags") or [])
            if not tags <= applied and "always" not in applied:
                missing.append((path.relative_to(ROOT), task.get("name")))
    assert missing == []


def test_delegated_kubectl_calls_are_throttled() -> None:
    """With forks 50 every node's drain/label/uncordon goes to one kubectl host over one multiplexed SSH
    connection; sshd refuses sessions beyond MaxSessions (OpenSSH sshd_config(5), default 10) and Ansible
    reports those tasks UNREACHABLE. Every task delegated to a kubectl host per node is throttled; a task that
    serves the whole run (run_once, one call per kubectl host in turn: the node labels) opens one session."""
    delegated = []
    for path in sorted(COLLECTION.glob("roles/*/tasks/*.yml")) + sorted(COLLECTION.glob("roles/*/handlers/*.yml")):
        for task in _tasks(yaml.safe_load(path.read_text())):
            where = str(task.get("delegate_to", "")) + str(task.get("loop", ""))
            if "kubectl_host" in where:
                delegated.append((path.relative_to(ROOT), task.get("name"), task.get("throttle"), task.get("run_once")))
    assert len(delegated) >= 10
    per_node = [d for d in delegated if not d[3]]
    assert [d for d in per_node if not str(d[2]).startswith("{{ ") or "kubectl_throttle" not in str(d[2])] == []
    assert [d[1] for d in delegated if d[3]] == [
        "Apply the node labels of every node of the run with kubectl (on the kubectl host, once)"
    ]


# --- the driver role's pending reboot and the NPUs being up, decided from what the node reports ---------------


def _npu_node(
    driver: str = "25.2.0",
    firmware: Optional[str] = "7.7.0.1.231",
    running: Optional[Dict[str, Optional[str]]] = None,
    chips: int = 8,
    health: Optional[Dict[str, str]] = None,
    smi: bool = True,
) -> Dict[str, Any]:
    user = {"name": "HwHiAiUser", "uid": 1000, "gid": 1000, "home": "/home/HwHiAiUser", "shell": "/bin/bash"}
    group = {"name": "HwHiAiUser", "gid": 1000, "members": []}
    return {
        "arch": "x86_64",
        "present": True,
        "count": 8,
        "devices": [{"device_id": "d802", "chip": "910B3", "profile_chip": "ascend-910b"}] * 8,
        "chips": ["910B3"],
        "board_id": "0x33",
        "accelerator_types": ["module-910b-8"],
        "npu_smi_path": "/usr/local/sbin/npu-smi",
        "npu_smi": {
            "available": smi,
            "rc": 0 if smi else 1,
            "error": None if smi else "dcmi module initialize failed. ret is -8005",
            "chips": [{"npu": str(i)} for i in range(chips)] if smi else [],
            "health": (health or {str(i): "OK" for i in range(chips)}) if smi else {},
        },
        "driver": {"installed": True, "version": driver, "complete": True, "loaded": True},
        "firmware": {"installed": firmware is not None, "version": firmware},
        "running": running if running is not None else {"driver": driver, "firmware": firmware},
        "install_info": {"Driver_Install_For_All": "yes", "UserName": "HwHiAiUser", "UserGroup": "HwHiAiUser"},
        "accounts": {"users": {"HwHiAiUser": user, "1000": user}, "groups": {"HwHiAiUser": group, "1000": group}},
        "packages": {},
        "files": {},
    }


def _driver_params(firmware: str = "7.7.0.1.231") -> Dict[str, Any]:
    """The driver role's parameters (test_ansible_hardware's), for a node of _npu_node."""
    return hardware_tests._params(
        plan_nodes={"hdk": "25.2.0", "chip": "ascend-910b", "accelerator_type": "module-910b-8", "arch": "x86_64"},
        versions={"driver": "25.2.0", "firmware": firmware},
        packages={"driver": {"src": "/srv/Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run"}, "firmware": {}},
        prerequisites=False,
    )


def test_a_pending_reboot_is_read_from_the_node_not_only_from_this_run() -> None:
    """Item 4: the reboot came only from a handler notified in the same run. A node whose installed
    driver/firmware does not run (a run that stopped before its reboot, a deferred reboot, a removed window
    record) now needs a window, so a re-run drains it and release.yml reboots it."""
    decide = plugin("filter", "ascend_driver")
    converged = decide.ascend_driver_decide(_npu_node(), _driver_params())
    assert converged["problems"] == [] and not converged["needs_window"] and converged["not_running"] == []
    firmware = decide.ascend_driver_decide(
        _npu_node(running={"driver": "25.2.0", "firmware": "7.1.0.11.220"}), _driver_params()
    )
    assert firmware["plan"]["order"] == [] and firmware["window"] is None
    assert firmware["needs_window"] and firmware["needs_change"]
    assert firmware["not_running"] == ["firmware 7.7.0.1.231 is installed but npu-smi reports 7.1.0.11.220"]
    driver = decide.ascend_driver_decide(
        _npu_node(running={"driver": None, "firmware": "7.7.0.1.231"}, smi=False), _driver_params()
    )
    assert driver["needs_window"] and driver["not_running"] == [
        "driver 25.2.0 is installed but npu-smi reports none running"
    ]
    # firmware not managed by the inventory: its flash version is not the role's business
    unmanaged = decide.ascend_driver_decide(
        _npu_node(running={"driver": "25.2.0", "firmware": "7.1.0.11.220"}), _driver_params(firmware="")
    )
    assert not unmanaged["needs_window"] and unmanaged["not_running"] == []


def test_npus_are_up_when_the_hardware_says_so_not_when_the_count_of_before_is_back() -> None:
    """Item 5: after a reboot npu-smi was read once. The role now polls until npus_not_up is empty: npu-smi
    answers, lists every chip on the PCI bus, each NPU healthy; a node whose faulty NPU the change repaired is
    up (nothing compares with the count from before the window)."""
    npus_not_up = plugin("filter", "npus_not_up").npus_not_up
    assert npus_not_up(_npu_node()) == []
    assert npus_not_up(_npu_node(smi=False)) == [
        "/usr/local/sbin/npu-smi info does not answer (rc 1: dcmi module initialize failed. ret is -8005)"
    ]
    assert npus_not_up(_npu_node(chips=6)) == ["npu-smi lists 6 of the 8 NPU chips on the PCI bus"]
    alarm = dict({str(i): "OK" for i in range(8)}, **{"3": "Alarm"})
    assert npus_not_up(_npu_node(health=alarm)) == ["NPU 3 health Alarm"]
    assert npus_not_up(dict(_npu_node(smi=False), present=False)) == []


def test_release_waits_for_the_npus_repeatedly_and_judges_them_by_the_hardware() -> None:
    """The wait is a bounded poll (retries from ascend_driver_npu_wait_timeout), not one read, and runs after
    the change, after a pending reboot and before release.yml judges a node read earlier."""
    tasks = {p.name: yaml.safe_load(p.read_text()) for p in (COLLECTION / "roles/ascend_driver/tasks").glob("*.yml")}
    # the poll, and one plain read in its rescue (a failed read sets no facts)
    (wait,) = [
        t for t in _tasks(tasks["wait_npus.yml"]) if "ascend_resumable.npu.ascend_npu_facts" in t and "until" in t
    ]
    assert "npus_not_up" in str(wait["until"]) and "npu_wait_retries" in str(wait["retries"])
    for name in ("window.yml", "reboot_pending.yml", "release.yml"):
        assert [t for t in _tasks(tasks[name]) if t.get("ansible.builtin.include_tasks") == "wait_npus.yml"], name
    defaults = yaml.safe_load((COLLECTION / "roles/ascend_driver/defaults/main.yml").read_text())
    assert defaults["ascend_driver_npu_wait_timeout"] == 600
    release = str(tasks["release.yml"])
    assert "npus_not_up" in release and "all_healthy" not in release
