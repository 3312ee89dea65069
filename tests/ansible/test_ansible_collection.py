"""The collection ascend_resumable.npu as users get it: `ansible-galaxy collection build` of
ansible_collections/ascend_resumable/npu, then `ansible-galaxy collection install` of the tarball
into an empty directory, gives the roles, the playbooks and the plugins (and none of the
repository's test fixtures, molecule scenarios or caches); the installed playbooks pass
`--syntax-check` by their collection names, with nothing but the installed collection on the path."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path
from typing import List

import pytest
import yaml
from conftest import ROOT as REPO
from role_code import COLLECTION, PLAYBOOK, ansible_tool

GALAXY = ansible_tool("ansible-galaxy")

pytestmark = pytest.mark.skipif(GALAXY is None, reason="ansible-galaxy is not installed (make test-venv)")


def _run(argv: List[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, ANSIBLE_NOCOLOR="1", **env)
    environ.pop("ANSIBLE_CONFIG", None)
    run = subprocess.run(argv, cwd=str(cwd), env=environ, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return run


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("galaxy")
    version = yaml.safe_load((COLLECTION / "galaxy.yml").read_text())["version"]
    # a stray cache in the source tree must not go into the tarball (galaxy.yml build_ignore)
    cache = COLLECTION / "plugins" / "module_utils" / "__pycache__"
    cache.mkdir(exist_ok=True)
    _run([str(GALAXY), "collection", "build", str(COLLECTION), "--output-path", str(tmp / "dist")], tmp)
    tarball = tmp / "dist" / ("ascend_resumable-npu-%s.tar.gz" % version)
    with tarfile.open(tarball) as tar:
        members = tar.getnames()
    assert "MANIFEST.json" in members
    assert [m for m in members if "molecule" in m.split("/") or "__pycache__" in m or m.endswith(".pyc")] == []
    # only the target on the collections path: a copy elsewhere (molecule's prerun installs the collection
    # into ~/.ansible/collections) would make the install answer "already installed" and write nothing
    _run(
        [str(GALAXY), "collection", "install", "--offline", "--force", str(tarball), "-p", str(tmp / "collections")],
        tmp,
        ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"),
    )
    return tmp / "collections" / "ansible_collections" / "ascend_resumable" / "npu"


def test_the_installed_collection_has_roles_playbooks_and_plugins(installed: Path) -> None:
    source_roles = sorted(p.name for p in (COLLECTION / "roles").iterdir() if p.is_dir())
    assert source_roles == sorted(p.name for p in (installed / "roles").iterdir())
    assert {"ascend_driver", "npu_facts", "mindcluster_node", "resumable_install"} <= set(source_roles)
    for role in source_roles:
        assert (installed / "roles" / role / "meta" / "argument_specs.yml").is_file(), role
        assert not (installed / "roles" / role / "molecule").exists(), role
    assert (installed / "roles" / "resumable_install" / "files" / "bundle.py").is_file()
    for part, pattern in [("playbooks", "**/*.yml"), ("plugins", "*/*.py"), ("plugins", "*/*.yml")]:
        source = sorted(str(p.relative_to(COLLECTION / part)) for p in (COLLECTION / part).glob(pattern))
        assert source, (part, pattern)
        assert sorted(str(p.relative_to(installed / part)) for p in (installed / part).glob(pattern)) == source
    assert (installed / "playbooks" / "site.yml").is_file()
    manifest = json.loads((installed / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["namespace"] == "ascend_resumable"
    assert manifest["collection_info"]["name"] == "npu"


@pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook is not installed (make test-venv)")
def test_the_installed_playbooks_run_by_their_collection_names(installed: Path, tmp_path: Path) -> None:
    collections = installed.parents[2]
    for playbook in ("site", "preflight", "facts", "compute", "nodes"):
        _run(
            [
                str(PLAYBOOK),
                "--syntax-check",
                "-i",
                str(REPO / "inventory/example/hosts.yml"),
                "ascend_resumable.npu." + playbook,
            ],
            tmp_path,
            ANSIBLE_COLLECTIONS_PATH=str(collections),
        )


BUILD = REPO / "scripts" / "build-collection.sh"


@pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook is not installed (make test-venv)")
def test_the_built_tarball_ships_the_resumable_wheel_and_preflight_plans_with_it(tmp_path: Path) -> None:
    """scripts/build-collection.sh puts the resumable wheel (with its sha256) into the tarball, so that
    `ansible-galaxy collection install` + `ansible-playbook ascend_resumable.npu.preflight` plans the profile with
    no `resumable` on PATH and nothing of this checkout on the collections path (molecule/site converges nodes
    from such a tarball)."""
    import hashlib
    import sys

    build = subprocess.run(
        [str(BUILD), str(tmp_path / "dist"), sys.executable], capture_output=True, text=True, timeout=600, check=False
    )
    assert build.returncode == 0, build.stdout + build.stderr
    tarball = Path(build.stdout.splitlines()[-1])
    with tarfile.open(tarball) as tar:
        wheels = [m for m in tar.getnames() if m.startswith("roles/resumable_install/files/wheel/")]
    assert sorted(Path(m).suffix for m in wheels) == [".sha256", ".whl"], wheels
    collections = tmp_path / "collections"
    _run([str(GALAXY), "collection", "install", "--offline", "--force", str(tarball), "-p", str(collections)], tmp_path,
         ANSIBLE_COLLECTIONS_PATH=str(collections))  # fmt: skip
    shipped = collections / "ansible_collections/ascend_resumable/npu/roles/resumable_install/files/wheel"
    (wheel,) = shipped.glob("*.whl")
    digest = (shipped / (wheel.name + ".sha256")).read_text().split()[0]
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() == digest
    assert (tarball.parent / wheel.name).read_bytes() == wheel.read_bytes()  # and beside the tarball
    inventory = tmp_path / "hosts.yml"
    profile = REPO / "tests" / "fixtures" / "profiles" / "site.yaml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "vars": {"ascend_preflight_profile": str(profile)},
                    "children": {"ascend_cluster": {"children": {"ascend_compute": {"hosts": {"n1": {}}}}}},
                }
            }
        )
    )
    # no `resumable` anywhere on PATH: the controller plans with the shipped wheel
    path = ":".join(p for p in os.environ.get("PATH", "").split(":") if p and not (Path(p) / "resumable").exists())
    plan = _run(
        [str(PLAYBOOK), "-i", str(inventory), "ascend_resumable.npu.preflight"],
        tmp_path,
        ANSIBLE_COLLECTIONS_PATH=str(collections),
        PATH=path,
    )
    assert "profile %s: ascend-910b" % profile in " ".join(plan.stdout.split()), plan.stdout
