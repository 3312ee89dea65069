"""The README's Python floor of each part follows from what that part installs.

The floor of a part is the highest ``Requires-Python`` lower bound among the distributions pinned
in its requirements file (read from the installed metadata of the test venv), and for the package
itself what pyproject.toml and its classifiers say."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import ROOT

tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11's; the test venv has it")

Version = Tuple[int, int]


def readme_floors() -> Dict[str, str]:
    """The "| part | Python |" table of the README: first cell -> second cell."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| part | Python |") :].split("\n\n")[0].splitlines()[2:]
    return {row.split("|")[1].strip(): row.split("|")[2].strip() for row in table}


def row(floors: Dict[str, str], start: str) -> str:
    (cell,) = (v for k, v in floors.items() if k.startswith(start))
    return cell


def stated_floor(cell: str) -> Version:
    found = re.match(r"(\d+)\.(\d+) (or later|to )", cell)
    assert found, cell
    return int(found.group(1)), int(found.group(2))


def pins(path: Path) -> List[str]:
    names = []
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            names += pins(path.parent / line[3:].strip())
        elif "==" in line:
            names.append(re.split(r"[\[=]", line)[0])
    return names


def requires_floor(dist: str) -> Version:
    spec = metadata.metadata(dist)["Requires-Python"] or ""
    found = re.search(r">=\s*(\d+)\.(\d+)", spec)
    return (int(found.group(1)), int(found.group(2))) if found else (3, 0)


def floor_of(requirements: str) -> Version:
    names = pins(ROOT / requirements)
    assert names
    return max(requires_floor(n) for n in names)


def test_the_package_floor_is_pyprojects() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    cell = row(readme_floors(), "`resumable`")
    assert project["requires-python"] == ">=%d.%d" % stated_floor(cell)
    versions = [c.rsplit(" ", 1)[1] for c in project["classifiers"] if re.match(r".*Python :: 3\.\d+$", c)]
    low, high = versions[0], versions[-1]
    assert cell.startswith("%s to %s" % (low, high))


def test_the_pulumi_program_floor() -> None:
    assert stated_floor(row(readme_floors(), "the Pulumi program")) == floor_of("requirements.txt")


def test_the_ansible_controller_floor() -> None:
    assert stated_floor(row(readme_floors(), "the Ansible controller")) == requires_floor("ansible-core")


def test_the_demo_and_test_floors() -> None:
    floors = readme_floors()
    assert stated_floor(row(floors, "`make demo`")) == floor_of("requirements-demo.txt")
    assert stated_floor(row(floors, "`make test`")) == floor_of("requirements-test.txt")
