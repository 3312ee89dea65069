"""A converged node is read, not worked on: the module runs per node of a re-run, counted (not timed) by the
callback the benchmark uses (benchmarks/callbacks/module_runs.py), with the real playbooks and roles and the
collection's read modules replaced by stubs that report a converged node (copies of the collection in tmp_path).

- playbooks/nodes.yml: one ascend_node_check for mindcluster_node, shared_storage and resumable_install
  together (they used to read the node once each: 3 module runs).
- playbooks/compute.yml's read/decide pass: Ascend Docker Runtime is decided from the engine configuration's dry
  run that the read of the node (ascend_npu.runtime_config) already holds; the module runs again only when that
  read has none.
Together with the one read of facts.yml (NPUs, driver, firmware, CANN, run user, the engine dry run), a converged
compute node runs 2 modules over site.yml (issue 33); benchmarks/ansible_converge.py counts it on emulated nodes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import FIXTURES, ROOT
from role_code import PLAYBOOK, playbook_env, plugin
from test_ansible_node_check import _nodes
from test_ansible_node_roles import npu_of

COLLECTION = ROOT / "ansible_collections" / "ascend_resumable" / "npu"
CALLBACKS = ROOT / "benchmarks" / "callbacks"
PROFILE = FIXTURES / "ascend" / "profile-910b-x86_64.yaml"

pytestmark = pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook is not installed (make test-venv)")

#: every read module of the collection, answering "converged"
STUB_NODE_CHECK = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule

module = AnsibleModule(argument_spec=dict(parts=dict(type="dict", default={})), supports_check_mode=True)
parts = dict((name, {"differences": [], "os_family": "Debian"}) for name in module.params["parts"])
module.exit_json(changed=False, differences=[], parts=parts, os_family="Debian")
"""
STUB_LABELS = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule

module = AnsibleModule(
    argument_spec=dict(nodes=dict(type="dict"), kubectl=dict(), kubeconfig=dict()), supports_check_mode=True
)
module.exit_json(changed=False)
"""
STUB_RUNTIME_CONFIG = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule

names = ("engine", "runtime_name", "runtime_path", "config_path", "containerd", "dropin", "dropin_path", "backup")
spec = dict((name, dict(type="raw")) for name in names + ("info_file",))
module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
module.exit_json(changed=False, config_changes=False, installed={"binary": True, "version": "7.3.0"})
"""


def _collection(tmp_path: Path) -> Path:
    root = tmp_path / "collections"
    copy = root / "ansible_collections" / "ascend_resumable" / "npu"
    for part in ("plugins", "playbooks", "roles", "meta"):
        shutil.copytree(COLLECTION / part, copy / part, ignore=shutil.ignore_patterns("__pycache__", "molecule"))
    modules = copy / "plugins" / "modules"
    (modules / "ascend_node_check.py").write_text(STUB_NODE_CHECK)
    (modules / "ascend_node_labels.py").write_text(STUB_LABELS)
    (modules / "ascend_runtime_config.py").write_text(STUB_RUNTIME_CONFIG)
    return root


def _module_runs(
    tmp_path: Path, collections: Path, playbook: str, host_vars: Dict[str, Any], extra: List[str]
) -> Dict[str, Any]:
    """Run the collection's ``playbook`` on one local compute node n1; its module runs (task names), its task
    evaluations, the changed count and the output."""
    compute: Dict[str, Any] = {"ascend_compute": {"hosts": {"n1": {}}}}
    if playbook == "nodes":
        # what compute.yml's read/decide pass leaves in a site.yml run: the node decided (group_by), converged
        compute["ascend_compute_converged"] = {"hosts": {"n1": {}}}
    inventory = {"all": {"children": {"ascend_cluster": {"children": compute}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    group_vars = tmp_path / "group_vars"
    group_vars.mkdir()
    nodes = _nodes(PROFILE)
    common = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "ansible_become": False,
        "ascend_plan_profile": str(PROFILE),
        "ascend_plan_nodes": nodes,
        "ascend_plan_worker_selector": nodes["worker_selector"],
        "ascend_plan_npu_daemonset_selector": nodes["npu_daemonset_selector"],
        "resumable_install_cache": str(tmp_path / "cache"),
        "mindcluster_node_kubectl_host": "n1",
        "resumable_install_source": str(ROOT),
    }
    (group_vars / "all.yml").write_text(yaml.safe_dump(dict(common, **host_vars)))
    log = tmp_path / "module-runs.jsonl"
    env = playbook_env(
        tmp_path,
        "%s:%s" % (collections, ROOT / "collections"),
        ANSIBLE_CALLBACK_PLUGINS=str(CALLBACKS),
        ANSIBLE_CALLBACKS_ENABLED="module_runs",
        ASCEND_MODULE_RUNS_LOG=str(log),
        ANSIBLE_INVENTORY=str(tmp_path / "hosts.yml"),
    )
    run = subprocess.run(
        [str(PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), "ascend_resumable.npu." + playbook, *extra],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    recap = [line for line in run.stdout.splitlines() if line.startswith("n1 ")][-1]
    return {
        "modules": [x["task"] for x in lines if x["host"] == "n1" and x["ran_on"] == "n1" and x["module"]],
        "evaluations": len([x for x in lines if x["host"] == "n1"]),
        # a run_once task is a cost of the run, not of the node
        "per_node": [x["task"] for x in lines if x["host"] == "n1" and not x.get("run_once")],
        "changed": int(recap.split("changed=")[1].split()[0]),
        "output": run.stdout,
    }


def _npu(tmp_path: Path, **more: Any) -> Dict[str, Any]:
    npu = npu_of(tmp_path / "sys", "0xd802", "0x19e5", "0x3000", "0x33")
    npu.update(more)
    return npu


@pytest.mark.parametrize("check", [False, True], ids=["run", "check mode"])
def test_nodes_yml_reads_a_converged_node_once(tmp_path: Path, check: bool) -> None:
    npu = _npu(tmp_path)
    converged = {"problems": [], "action": "none", "config_changes": False, "needs_change": False}
    out = _module_runs(
        tmp_path,
        _collection(tmp_path),
        "nodes",
        # what facts.yml and compute.yml leave for nodes.yml in a site.yml run on a converged node
        {"ascend_npu": npu, "ascend_docker_runtime_decision": converged},
        ["--check"] if check else [],
    )
    # the one read of the three roles; the labels of the run are one call on the kubectl host (here n1 too)
    labels = [t for t in out["modules"] if "node labels" in t]
    reads = [t for t in out["modules"] if t not in labels]
    assert reads == ["Read the node once for mindcluster_node, shared_storage and resumable_install"], out["modules"]
    assert len(labels) == 1
    assert out["changed"] == 0
    # nothing of the roles' apply/verify steps was reached
    assert "apply.yml" not in out["output"] and "verify.yml" not in out["output"]
    # issue 33: the task evaluations on a converged compute node (no runtime read: compute.yml decided it; the read,
    # one validation of the roles' argument specs, one assertion for the three roles' parameters and the engine, then
    # mindcluster_node 4, shared_storage and resumable_install one skipped include each)
    assert len(out["per_node"]) <= 9, out["per_node"]
    assert not [t for t in out["per_node"] if "Validating arguments" in t or "Check the role parameters" in t]


def _runtime_decided(tmp_path: Path, npu: Dict[str, Any]) -> Dict[str, Any]:
    """compute.yml's read/decide pass with the driver read and CANN decision stubbed (their own molecule scenarios
    count those), the Ascend Docker Runtime decision real."""
    collections = _collection(tmp_path / "c")
    roles = collections / "ansible_collections/ascend_resumable/npu/roles"
    (roles / "ascend_driver/tasks/assess.yml").write_text(
        "---\n- name: Stub driver decision\n  ansible.builtin.set_fact:\n"
        "    ascend_driver_decision: {problems: [], needs_change: false, not_running: []}\n"
    )
    (roles / "ascend_cann/tasks/decide.yml").write_text(
        "---\n- name: Stub CANN decision\n  ansible.builtin.set_fact:\n"
        "    ascend_cann_decision: {problems: [], needs_change: false}\n"
    )
    return _module_runs(tmp_path, collections, "compute", {"ascend_npu": npu}, [])


def test_the_runtime_is_decided_from_the_read_of_the_node(tmp_path: Path) -> None:
    dry_run = {"changed": False, "config_changes": False, "installed": {"binary": True, "version": "7.3.0"}}
    out = _runtime_decided(tmp_path, _npu(tmp_path, runtime_config=dry_run))
    assert out["modules"] == [], out["modules"]
    # decided converged: no batch (the batch play matches no host)
    assert out["changed"] == 0 and "skipping: no hosts matched" in out["output"], out["output"]


def test_without_the_dry_run_in_the_read_the_runtime_module_runs(tmp_path: Path) -> None:
    # a read without it (an older fact, or the dry run failed there): the module runs and fails where it always did
    failed = {"failed": True, "msg": "containerd (containerd) is not installed on this node"}
    for name, npu in (("none", _npu(tmp_path / "a")), ("failed", _npu(tmp_path / "b", runtime_config=failed))):
        out = _runtime_decided(tmp_path / name, npu)
        assert out["modules"] == [
            "ascend_resumable.npu.ascend_docker_runtime : Read the installed runtime and whether the engine "
            "configuration would change (read-only)"
        ], (name, out["modules"])


def test_the_node_roles_argument_specs_are_validated_in_one_task_per_host() -> None:
    """The per-host validation task of each node role is gone from site.yml (rolespec_validate: false, or an entry
    point without a spec); nodes.yml validates the four roles' specs merged, in one task per host."""
    filters = plugin("filter", "argument_specs")
    roles = ["npu_facts", "mindcluster_node", "shared_storage", "resumable_install"]
    merged = filters.argument_spec_options(roles)
    for role in roles:
        spec = yaml.safe_load((COLLECTION / "roles" / role / "meta" / "argument_specs.yml").read_text())
        options = spec["argument_specs"]["main"]["options"]
        # every option but the plan's parts (set by tasks/plan.yml from `resumable plan`, not by the inventory)
        assert {n for n in options if not n.startswith("ascend_plan_")} <= set(merged), role
    assert not [n for n in merged if n.startswith("ascend_plan_")]
    playbooks = COLLECTION / "playbooks"
    nodes = (playbooks / "nodes.yml").read_text()
    assert nodes.count("rolespec_validate: false") == 3 and "ascend_resumable.npu.argument_spec_options" in nodes


@pytest.mark.parametrize("where", ["inventory", "none"])
def test_nodes_yml_refuses_a_role_variable_its_spec_refuses(tmp_path: Path, where: str) -> None:
    """The refusal the role's own validation gave, now from nodes.yml's one validation: the variable and its type."""
    npu = _npu(tmp_path)
    converged = {"problems": [], "action": "none", "config_changes": False, "needs_change": False}
    host_vars: Dict[str, Any] = {"ascend_npu": npu, "ascend_docker_runtime_decision": converged}
    if where == "inventory":
        host_vars["shared_storage_mount"] = "sometimes"
    try:
        out = _module_runs(tmp_path, _collection(tmp_path), "nodes", host_vars, [])
    except AssertionError as exc:  # the run failed
        assert where == "inventory", exc
        assert "Validation of arguments failed" in str(exc) and "shared_storage_mount" in str(exc), exc
        return
    assert where == "none" and out["changed"] == 0
