"""Every plugin of the collection ascend_resumable.npu is documented the way ansible-doc reads it:
each module's DOCUMENTATION, EXAMPLES and RETURN are valid YAML (ansible-doc and ansible-test's
validate-modules load them with a YAML parser; an invalid block makes ansible-doc fail), every filter
and test a plugin file defines has its doc file (plugins/filter/<name>.yml, plugins/test/<name>.yml),
and ansible-doc itself renders every module, filter and test."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import ROOT as REPO
from role_code import PLUGINS, ansible_tool, plugin

ANSIBLE_DOC = ansible_tool("ansible-doc")
MODULES = sorted(PLUGINS.glob("modules/*.py"))
FILTER_FILES = sorted(p.stem for p in PLUGINS.glob("filter/*.py"))
TEST_FILES = sorted(p.stem for p in PLUGINS.glob("test/*.py"))


def _blocks(path: Path) -> List[str]:
    found = []
    for node in ast.parse(path.read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id in ("DOCUMENTATION", "EXAMPLES", "RETURN"):
            assert isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            found.append(target.id)
            yaml.safe_load(str(node.value.value))
    return found


def _names(kind: str) -> List[str]:
    """The Jinja names the collection's filter (or test) plugin files define."""
    names: List[str] = []
    for stem in FILTER_FILES if kind == "filter" else TEST_FILES:
        module = plugin(kind, stem)
        names += module.FilterModule().filters() if kind == "filter" else module.TestModule().tests()
    return sorted(names)


def _ansible_doc(kind: str, names: List[str]) -> Dict[str, Any]:
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    run = subprocess.run(
        [str(ANSIBLE_DOC), "-t", kind, "--json", *["ascend_resumable.npu." + n for n in names]],
        cwd=str(REPO),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "WARNING" not in run.stderr, run.stderr
    docs: Dict[str, Any] = json.loads(run.stdout)
    return docs


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_docs_are_yaml(path: Path) -> None:
    assert _blocks(path) == ["DOCUMENTATION", "EXAMPLES", "RETURN"]


@pytest.mark.parametrize("kind", ["filter", "test"])
def test_every_filter_and_test_has_a_yaml_doc_file(kind: str) -> None:
    names = _names(kind)
    assert len(names) >= (17 if kind == "filter" else 1)
    docs = sorted(p.stem for p in PLUGINS.glob("%s/*.yml" % kind))
    assert docs == names
    for name in names:
        data = yaml.safe_load((PLUGINS / kind / (name + ".yml")).read_text())
        assert sorted(data) == ["DOCUMENTATION", "EXAMPLES", "RETURN"]
        assert data["DOCUMENTATION"]["name"] == name
        assert "_input" in data["DOCUMENTATION"]["options"] and "_value" in data["RETURN"]
        assert "ascend_resumable.npu." + name in data["EXAMPLES"]
        yaml.safe_load(data["EXAMPLES"])


@pytest.mark.skipif(ANSIBLE_DOC is None, reason="ansible-doc is not installed (make test-venv)")
@pytest.mark.parametrize("kind", ["module", "filter", "test"])
def test_ansible_doc_renders_every_plugin(kind: str) -> None:
    names = [p.stem for p in MODULES] if kind == "module" else _names(kind)
    docs = _ansible_doc(kind, names)
    assert sorted(docs) == sorted("ascend_resumable.npu." + n for n in names)
    for fqcn, doc in docs.items():
        assert doc["doc"]["short_description"], fqcn
        assert doc["examples"] and doc["return"], fqcn
        yaml.safe_load(doc["examples"])
