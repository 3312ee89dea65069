"""The one home of the paths every test module shares, and the loaders of the examples.

Test modules import it by name (``from conftest import ROOT``: pytest puts tests/ on sys.path for
this file, and the standalone checkers under tests/manifests put it there themselves). Those
checkers run outside pytest in the demo's virtualenv, so this module imports only the standard
library and PyYAML at its top; nothing here is a fixture.

- ROOT: the repository; EXAMPLES its example profiles, EXAMPLE_FILES their files (examples/*.yaml,
  sorted); FIXTURES the test doubles (tests/fixtures).
- SHARED: the ``shared`` folder beside the repository (``../shared``): research notes, seeds and the
  upstream release manifests (UPSTREAM), which are test data only and never copied into the project;
  tests that read them skip with a message when the folder is absent.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Tuple

import yaml

if TYPE_CHECKING:  # pragma: no cover
    from resumable.plan.model import Plan

#: the cluster fixtures (start_plane, kube_cluster) for every test directory; a name, not an import,
#: so the standalone checkers that import this module need no pytest
pytest_plugins = ["cluster.fixtures"]

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
EXAMPLES = ROOT / "examples"
EXAMPLE_FILES: Tuple[Path, ...] = tuple(sorted(EXAMPLES.glob("*.yaml")))
SHARED = ROOT.parent / "shared"
UPSTREAM = SHARED / "upstream"


def example_doc(name: str) -> Dict[str, Any]:
    """The example profile ``name`` (``pytorch-process-recovery.yaml``) as a YAML document to edit."""
    doc: Dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text(encoding="utf-8"))
    return doc


def plan_of_doc(doc: Dict[str, Any], name: str = "<test>") -> Plan:
    """The plan of a profile document (findings included, nothing refused)."""
    from resumable.plan import build_plan
    from resumable.profile import parse_profile

    return build_plan(parse_profile(yaml.safe_dump(doc), name), name)


def example_profile(name: str, tmp_path: Path) -> Path:
    """examples/<name>.yaml as a user deploys it: copied with the vendor wheel files it names
    created beside it (files the test writes, not vendor artefacts) and each ``sha256`` replaced
    by the sum of that file, as the example's comment asks."""
    doc = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8"))
    target = tmp_path / "profiles" / f"{name}.yaml"
    for job in doc.get("jobs") or []:
        for entry in ((job.get("image") or {}).get("wheels") or {}).values():
            if "file" not in entry:
                continue
            path = target.parent / entry["file"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f"test wheel {path.name}\n".encode())  # one content per file name: profiles share files
            entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return target


#: what a test needs beyond the test virtualenv, by marker; ``make check`` deselects them all and
#: ``make test`` runs everything. A module marks itself with ``pytestmark``, or is listed here by name.
NEEDS: Dict[str, str] = {
    "cluster": "the Go tools (make tools): a control plane, the Pulumi engine, the Ascend Operator, Volcano",
    "container": "podman or a fresh virtualenv: molecule scenarios, image builds, wheel and demo installs",
    "torch": "real torchrun or torch on the CPU (gloo): the launcher's end-to-end runs, the import hook",
    "playbook": "ansible-playbook runs on localhost against the fixtures (tens of seconds each)",
}
#: the fixtures that start a control plane (tests/cluster/fixtures.py)
CLUSTER_FIXTURES = frozenset({"start_plane", "kube_cluster", "cluster", "a2", "project"})
#: modules that need a marker's tools without naming a fixture of it
MODULES_NEEDING: Dict[str, str] = {
    "test_strings_apiserver": "cluster",
    "test_render_apiserver": "cluster",
    "test_go_tools": "cluster",
    "test_taskd_build": "cluster",
    "test_demo": "container",
    "test_wheel": "container",
    "test_pulumi_venv": "container",
    "test_image": "container",
    "test_context": "container",
    "test_ansible_site": "container",
    "test_ansible_node_roles": "container",
    "test_ansible_rollout": "container",
    "test_ansible_drain_window": "container",
    "test_ansible_collection": "container",
    "test_e2e_torchrun": "torch",
    "test_benchmark_smoke": "torch",
    "test_drill": "torch",
    "test_warm": "torch",
    "test_supervisor": "torch",
    "test_hostile_inputs": "torch",
    "test_torchrun_patch": "torch",
    "test_hook": "torch",
    "test_ansible_node_check": "playbook",
    "test_ansible_installers": "playbook",
    "test_ansible_fixtures": "playbook",
    "test_ansible_preflight": "playbook",
    "test_ansible_npu_wait": "playbook",
    "test_ansible_module_runs": "playbook",
}


def pytest_configure(config: Any) -> None:
    for name, why in NEEDS.items():
        config.addinivalue_line("markers", f"{name}: needs {why}")


def pytest_collection_modifyitems(config: Any, items: Any) -> None:
    """Mark every test with what it needs (NEEDS): by its directory (tests/cluster/), the fixtures
    it uses, or its module (MODULES_NEEDING)."""
    import pytest

    for item in items:
        path = Path(str(item.fspath))
        needs = set()
        if path.parent.name == "cluster" or CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
            needs.add("cluster")
        if path.stem in MODULES_NEEDING:
            needs.add(MODULES_NEEDING[path.stem])
        for name in sorted(needs):
            item.add_marker(getattr(pytest.mark, name))
