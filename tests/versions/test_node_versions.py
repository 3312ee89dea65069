"""resumable/nodeversions.py, the node-side helpers the collection's ascend_version.py is generated
with, is a module of its own (ruff and mypy check it): it answers as the generated copy does on the
tables of tests/versions/test_versions.py and the version.info ranges of tests/versions/test_ansible_versions.py."""

from __future__ import annotations

import itertools
from typing import List, Tuple

import pytest
import test_versions as tables
from role_code import plugin

from resumable import nodeversions as nv

av = plugin("module_utils", "ascend_version")

RANGES = [
    ("25.2.0", "[7.0.0,7.7.99],[25.2.0,25.2.0.]"),
    ("25.3.0.1", "[7.0.0,7.7.99],[25.2.0,25.3.0.]"),
    ("25.5.0", "[7.0.0,7.7.99],[25.2.0,25.3.0.]"),
    ("7.7.0.1.231", "[7.0.0,7.7.99]"),
    ("7.8.0.1.220", "[7.0.0,7.7.99]"),
    ("7.8.0.1.220", "[6.4.0,6.4.99],[7.7.0,7.8.99]"),
    ("23.0.rc3.1", "[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]"),
    ("", "[7.0.0,7.7.99]"),
    ("7.7.0", ""),
]


def _pairs() -> List[Tuple[str, str]]:
    return [pair for chain in tables.CHAINS for pair in itertools.combinations(chain, 2)]


def test_compare_answers_as_the_node_copy() -> None:
    for a, b in _pairs():
        assert nv.compare(a, b) == av.compare(a, b) == -1, (a, b)
        assert nv.compare(b, a) == av.compare(b, a) == 1, (a, b)


@pytest.mark.parametrize(("version", "ranges"), RANGES)
def test_in_ranges_answers_as_the_node_copy(version: str, ranges: str) -> None:
    assert nv.in_ranges(version, ranges) == av.in_ranges(version, ranges)


def test_the_node_copy_carries_the_helpers_verbatim() -> None:
    """The generator appends nodeversions.py from its marker line on: the helpers' source is in the copy."""
    from conftest import ROOT

    helpers = (ROOT / "resumable" / "nodeversions.py").read_text(encoding="utf-8")
    tail = helpers[helpers.index("\n" + nv.MARKER) + 1 :]
    copy = (ROOT / "ansible_collections/ascend_resumable/npu/plugins/module_utils/ascend_version.py").read_text(
        encoding="utf-8"
    )
    assert copy.endswith(tail) and tail.startswith(nv.MARKER) and "def in_ranges(" in tail
