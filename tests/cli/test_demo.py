"""`make demo` installs only what the demo runs, where a person can watch it.

Read from `make -n` (what make would run, nothing run) with a virtualenv that does not exist, as
on a fresh clone; the timing of a real run on a fresh clone is in the README."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Set

import pytest
from conftest import ROOT

#: the demo's own scripts and the test helpers they import (upstream.py takes its path from conftest)
CHECKER = [ROOT / "tests" / "manifests" / n for n in ("check_rendered.py", "crdschema.py", "upstream.py")]
CHECKER.append(ROOT / "tests" / "conftest.py")
#: import name -> distribution name, for what the checker imports
DISTRIBUTIONS = {"yaml": "pyyaml", "jsonschema": "jsonschema", "kubernetes_validate": "kubernetes-validate"}


def dry_run(tmp_path: Path) -> List[str]:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(
        ["make", "-n", "demo", "DEMO_VENV=%s" % (tmp_path / "fresh-venv"), "PYTHON=python3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def demo_requirements() -> Set[str]:
    names = set()
    for line in (ROOT / "requirements-demo.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            names.add(re.split(r"[=<>!~;\[ ]", line)[0].lower())
    return names


def imported_top_modules(path: Path) -> Set[str]:
    """Modules imported when the file is loaded (an import inside a function runs only when called)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_the_demo_installs_its_own_venv_visibly(tmp_path: Path) -> None:
    lines = dry_run(tmp_path)
    installs = [line for line in lines if " -m pip install " in line]
    assert len(installs) == 1, lines
    (install,) = installs
    assert str(tmp_path / "fresh-venv" / "bin" / "python") in install
    assert "requirements-demo.txt" in install
    assert "requirements-test.txt" not in install and "requirements.txt" not in install.replace("-demo.txt", "")
    assert not re.search(r"(^|\s)(-q|--quiet)(\s|$)", install), "pip's progress is what a person watches"
    # the commands of the demo run from that venv, never from the test venv
    commands = [line for line in lines if "resumable " in line and "echo" not in line]
    assert commands and all(line.startswith(str(tmp_path / "fresh-venv" / "bin")) for line in commands)
    assert not any(".venv/bin" in line for line in lines)
    assert any("check_rendered.py" in line for line in lines)


def test_the_demo_venv_has_what_the_checker_imports_and_no_more() -> None:
    needed = set()
    for path in CHECKER:
        for module in (
            imported_top_modules(path) - set(sys.stdlib_module_names) - {"__future__", "manifests", "conftest"}
        ):
            assert module in DISTRIBUTIONS, "%s imports %s, which the demo's venv does not install" % (path, module)
            needed.add(DISTRIBUTIONS[module])
    assert demo_requirements() == needed | {"pyyaml"}
    heavy = {"torch", "ansible-core", "molecule", "pulumi", "mypy", "pytest"}
    assert not demo_requirements() & heavy


def test_the_test_toolchain_pins_the_checker_once() -> None:
    test_reqs = (ROOT / "requirements-test.txt").read_text()
    assert "-r requirements-demo.txt" in test_reqs.splitlines()
    for name in demo_requirements():
        assert not re.search(r"(?im)^%s\s*[=<>~]" % re.escape(name), test_reqs), name
