"""site.yml as a whole: its stages in order, every node role reached, and one profile for the
example inventory and the Pulumi stack."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import yaml
from conftest import ROOT as REPO

COLLECTION = REPO / "ansible_collections" / "ascend_resumable" / "npu"


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _playbook(name: str) -> Path:
    """The file of an imported playbook: ascend_resumable.npu.<name> is the collection's playbooks/<name>.yml."""
    assert name.startswith("ascend_resumable.npu."), name
    return COLLECTION / "playbooks" / (name.split(".")[-1] + ".yml")


def _no_tasks(role: str, tasks_from: Any) -> bool:
    """An import of a role's task file without tasks, for its variables only (facts.yml: ascend_docker_runtime's
    options for the read of the node) runs nothing of the role."""
    path = COLLECTION / "roles" / role.split(".")[-1] / "tasks" / ("%s.yml" % tasks_from)
    return bool(tasks_from) and path.is_file() and not _load(path)


def _roles_of(playbook: Path) -> List[str]:
    """Roles a playbook runs (plays' roles, include_role/import_role tasks), following import_playbook;
    every role is called by its FQCN ascend_resumable.npu.<role>."""
    out: List[str] = []
    for play in _load(playbook):
        if "ansible.builtin.import_playbook" in play:
            out += _roles_of(_playbook(play["ansible.builtin.import_playbook"]))
            continue
        out += [r["role"] if isinstance(r, dict) else r for r in play.get("roles", [])]
        for task in play.get("tasks", []):
            include = task.get("ansible.builtin.include_role") or task.get("ansible.builtin.import_role") or {}
            if include.get("name") and not _no_tasks(include["name"], include.get("tasks_from")):
                out.append(include["name"])
    return out


def test_site_runs_every_stage_in_order() -> None:
    assert [p["ansible.builtin.import_playbook"] for p in _load(REPO / "site.yml")] == ["ascend_resumable.npu.site"]
    stages = [p["ansible.builtin.import_playbook"] for p in _load(COLLECTION / "playbooks" / "site.yml")]
    assert stages == ["ascend_resumable.npu." + s for s in ("preflight", "facts", "compute", "nodes")]
    roles = _roles_of(REPO / "site.yml")
    # facts.yml reads a compute node through ascend_driver's read (once for the run), then reports with npu_facts
    order = ["ascend_driver", "npu_facts", "ascend_cann", "ascend_docker_runtime", "mindcluster_node"]
    order = ["ascend_resumable.npu." + r for r in [*order, "shared_storage", "resumable_install"]]
    assert [r for r in order if r in roles] == order
    assert [roles.index(r) for r in order] == sorted(roles.index(r) for r in order)
    # every role with tasks of its own is reached (ascend_package is included by the driver/CANN roles)
    with_tasks = {"ascend_resumable.npu." + p.parent.parent.name for p in COLLECTION.glob("roles/*/tasks/main.yml")}
    with_tasks -= {"ascend_resumable.npu.ascend_package"}
    assert with_tasks <= set(roles)


def test_example_inventory_and_a_pulumi_stack_read_one_profile() -> None:
    inventory = REPO / "inventory" / "example"
    setting = _load(inventory / "group_vars" / "all.yml")["ascend_preflight_profile"]
    profile = Path(setting.replace("{{ inventory_dir }}", str(inventory))).resolve()
    assert profile.is_file()
    stacks = {
        (REPO / _load(p)["config"]["ascend-resumable:profile"]).resolve(): p.name for p in REPO.glob("Pulumi.*.yaml")
    }
    assert profile in stacks, "no Pulumi stack reads %s" % profile
    hosts = _load(inventory / "hosts.yml")["all"]["children"]["ascend_cluster"]["children"]
    assert hosts["ascend_management"]["hosts"] and len(hosts["ascend_compute"]["hosts"]) >= 2


def test_site_scenario_is_a_management_node_and_two_compute_nodes() -> None:
    scenario = _load(REPO / "molecule" / "site" / "molecule.yml")
    groups = {p["name"]: set(p["groups"]) for p in scenario["platforms"]}
    assert sorted(n for n, g in groups.items() if "ascend_management" in g) == ["site-mgmt"]
    assert sorted(n for n, g in groups.items() if "ascend_compute" in g) == ["site-npu1", "site-npu2"]
    # site.yml as users run it from the Galaxy tarball prepare.yml builds and installs into an empty path
    assert _load(REPO / "molecule" / "site" / "converge.yml") == [
        {
            "name": "The whole site.yml, from the collection installed from its tarball",
            "ansible.builtin.import_playbook": "ascend_resumable.npu.site",
        }
    ]
    prepare = (REPO / "molecule" / "site" / "prepare.yml").read_text()
    assert "scripts/build-collection.sh" in prepare and "collection, install" in prepare
    paths = scenario["provisioner"]["env"]["ANSIBLE_COLLECTIONS_PATH"].split(":")
    assert paths == [
        "${MOLECULE_PROJECT_DIRECTORY}/.cache/molecule-site/collections",
        "${MOLECULE_PROJECT_DIRECTORY}/collections",
    ]
    sequence = scenario["scenario"]["test_sequence"]
    assert sequence.index("prepare") < sequence.index("syntax") < sequence.index("converge")
    assert sequence.index("converge") < sequence.index("idempotence") < sequence.index("side_effect")
    assert scenario["provisioner"]["playbooks"]["side_effect"].endswith("molecule-check-mode.yml")
    assert "site" in (REPO / "scripts" / "test-ansible.sh").read_text()
