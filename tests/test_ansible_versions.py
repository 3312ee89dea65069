"""Parity of the Ansible side's Ascend version module with resumable.versions.

ansible_collections/ascend_resumable/npu/plugins/module_utils/ascend_version.py is the one version
implementation of the Ansible side (facts module, filters, emulated installers): AnsiballZ ships it
to the nodes, which do not have resumable installed. These tests run the tables of
tests/test_versions.py through it and compare it with resumable.versions on generated input.
"""

from __future__ import annotations

import importlib
import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any, List, Tuple

import pytest
from conftest import ROOT as REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import test_versions as tables  # the resumable.versions test tables, same directory

# the collection is not typed for mypy: load it as a plain module
av = importlib.import_module("ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_version")
from resumable import versions as rv  # noqa: E402

MODULE_UTILS = REPO / "ansible_collections/ascend_resumable/npu/plugins/module_utils/ascend_version.py"


def _pairs() -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []
    for chain in tables.CHAINS:
        out.extend(itertools.combinations(chain, 2))
    return out


@pytest.mark.parametrize("text", tables.STYLES)
def test_every_style_parses(text: str) -> None:
    assert av.is_version(text)
    assert str(av.Version(text)) == text


@pytest.mark.parametrize(("lower", "higher"), _pairs())
def test_chain_order(lower: str, higher: str) -> None:
    assert av.compare(lower, higher) == -1
    assert av.compare(higher, lower) == 1
    assert av.Version(lower) < av.Version(higher)


@pytest.mark.parametrize(("a", "b"), tables.EQUAL)
def test_equal_spellings(a: str, b: str) -> None:
    assert av.compare(a, b) == 0
    assert hash(av.Version(a)) == hash(av.Version(b))


@pytest.mark.parametrize("text", tables.BAD + [p.values[0] for p in tables.KNOWN_BAD_ACCEPTED])
def test_bad_versions_are_rejected(text: str) -> None:
    assert not av.is_version(text)
    with pytest.raises(av.VersionError):
        av.compare(text, "1.0.0")


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        # where the role filter, the facts module and the fixture used to disagree with resumable
        ("8.0.RC3.alpha002", "8.0.RC3", -1),
        ("25.2", "25.2.0", 0),
        ("25.0.rc1", "25.0.RC1", 0),
        ("25.0.rc1.1", "25.0.0", -1),
        ("8.3.RC1", "8.5.0", -1),
        ("7.7.0.1.231", "7.7.0.1.231", 0),
    ],
)
def test_known_disagreements_are_gone(left: str, right: str, expected: int) -> None:
    assert av.compare(left, right) == expected
    assert (rv.Version(left) > rv.Version(right)) - (rv.Version(left) < rv.Version(right)) == expected


def test_compatibility_ranges() -> None:
    ranges = "[25.2.0,25.2.0.],[25.3.0,25.3.0.]"
    assert av.in_ranges("25.2.0", ranges)
    assert av.in_ranges("25.3.0.1", ranges)
    assert av.in_ranges("25.2", ranges)
    assert not av.in_ranges("25.5.0", ranges)
    assert av.in_ranges("7.7.0.1.231", "[7.0.0,7.7.99]")
    assert not av.in_ranges("7.8.0.1.220", "[7.0.0,7.7.99]")
    assert av.in_ranges("7.8.0.1.220", "[6.4.0,6.4.99],[7.7.0,7.8.99]")
    assert av.in_ranges("23.0.rc3.1", "[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]")
    assert av.in_ranges("", "[7.0.0,7.7.99]") is None
    assert av.in_ranges("7.7.0", "") is None


def test_the_fixture_packages_embed_this_module(tmp_path: Path) -> None:
    out = tmp_path / "drv.run"
    subprocess.run(
        [str(REPO / "tests/fixtures/ascend/make-run.sh"), "driver", "25.2.0", str(out)],
        check=True,
    )
    assert MODULE_UTILS.read_text() in out.read_text()


try:
    from hypothesis import given
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - Python 3.8 environments without hypothesis
    st = None  # type: ignore[assignment]

if st is not None:
    _token = st.sampled_from(["rc", "RC", "spc", "post", "alpha", "beta", "a", "b", "b080", "B12", "x", "", "+cpu"])
    _number = st.integers(min_value=0, max_value=120).map(str)
    _part = st.one_of(_number, _token, st.tuples(_number, _token).map("".join), st.tuples(_token, _number).map("".join))

    @st.composite
    def _texts(draw: Any) -> str:
        parts = draw(st.lists(_part, min_size=1, max_size=6))
        seps = draw(st.lists(st.sampled_from([".", ".", ".", "-", "_"]), min_size=len(parts), max_size=len(parts)))
        text = "".join(p + s for p, s in zip(parts, seps))[:-1]
        prefix: str = draw(st.sampled_from(["", "v", "V"]))
        return prefix + text

    def _parse(module: Any, text: str) -> Any:
        try:
            return module.Version(text)
        except module.VersionError:
            return None

    @given(st.lists(st.one_of(_texts(), st.text(max_size=12)), min_size=2, max_size=6))
    def test_same_answers_as_resumable_versions(texts: List[str]) -> None:
        ours = [_parse(av, t) for t in texts]
        theirs = [_parse(rv, t) for t in texts]
        assert [v is None for v in ours] == [v is None for v in theirs], texts
        parsed = [(a, b) for a, b in zip(ours, theirs) if a is not None]
        for (a1, b1), (a2, b2) in itertools.product(parsed, repeat=2):
            assert (a1 < a2) == (b1 < b2)
            assert (a1 == a2) == (b1 == b2)
