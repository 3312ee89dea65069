"""Every Ansible module's DOCUMENTATION, EXAMPLES and RETURN is valid YAML (ansible-doc and
ansible-test's validate-modules load them with a YAML parser; an invalid block makes ansible-doc fail)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List

import pytest
import yaml
from conftest import ROOT

MODULES = sorted(ROOT.glob("roles/*/library/*.py")) + sorted(
    ROOT.glob("ansible_collections/ascend_resumable/npu/plugins/modules/*.py")
)


def _blocks(path: Path) -> List[str]:
    found = []
    for node in ast.parse(path.read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id in ("DOCUMENTATION", "EXAMPLES", "RETURN"):
            assert isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            found.append(target.id)
            yaml.safe_load(str(node.value.value))
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_docs_are_yaml(path: Path) -> None:
    assert _blocks(path) == ["DOCUMENTATION", "EXAMPLES", "RETURN"]
