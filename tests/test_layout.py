"""The tests are grouped by what they test, and README's list of the groups is the one a reader can trust:
every test module sits in a directory README names (or is one of the few whole-house checks at the top),
and README names no test directory that is not there."""

from __future__ import annotations

import re
from typing import Set

from conftest import ROOT, TESTS

#: the modules that check the house as a whole, at the top of tests/
HOUSE = {"test_import_graph.py", "test_sources.py", "test_layout.py"}


def _readme_groups() -> Set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("The tests are grouped by what they test")
    paragraph = text[start : text.index("\n\n", start)]
    return set(re.findall(r"`tests/([a-z_]+)`", paragraph))


def test_every_test_module_is_in_a_group_readme_names() -> None:
    groups = _readme_groups()
    stray = sorted(
        str(path.relative_to(TESTS))
        for path in TESTS.rglob("test_*.py")
        if "fixtures" not in path.relative_to(TESTS).parts
        and (path.parent.name not in groups if path.parent != TESTS else path.name not in HOUSE)
    )
    assert stray == [], f"test modules outside the groups README lists: {stray}"


def test_readme_names_only_groups_that_exist() -> None:
    groups = _readme_groups()
    assert {"plan", "ansible", "stacks", "cluster", "fixtures"} <= groups
    missing = sorted(g for g in groups if not (TESTS / g).is_dir())
    assert missing == [], f"README names test directories that do not exist: {missing}"
