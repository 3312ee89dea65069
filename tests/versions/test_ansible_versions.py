"""Parity of the Ansible side's Ascend version module with resumable.versions.

ansible_collections/ascend_resumable/npu/plugins/module_utils/ascend_version.py is the one version
implementation of the Ansible side (facts module, filters, emulated installers): AnsiballZ ships it
to the nodes, which do not have resumable installed. scripts/gen-node-versions.py writes it from
resumable/versions.py; these tests check that it is what the script writes, that it runs on the
nodes' Python, run the tables of tests/versions/test_versions.py through it and compare it with
resumable.versions on adversarial input (and, where hypothesis is installed, on generated input).
"""

from __future__ import annotations

import ast
import itertools
import runpy
import subprocess
from pathlib import Path
from typing import Any, List, Set, Tuple

import pytest
import test_versions as tables  # the resumable.versions test tables, same directory
from conftest import FIXTURES
from conftest import ROOT as REPO
from role_code import PLUGINS, plugin

from resumable import versions as rv

# the collection is not typed for mypy: a plain module
av = plugin("module_utils", "ascend_version")

MODULE_UTILS = PLUGINS / "module_utils" / "ascend_version.py"


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
        [str(FIXTURES / "ascend" / "make-run.sh"), "driver", "25.2.0", str(out)],
        check=True,
    )
    assert MODULE_UTILS.read_text() in out.read_text()


# --- the copy is generated, and runs on the nodes ------------------------------------------------------


def test_node_copy_is_what_the_generator_writes() -> None:
    """Edit resumable/versions.py and run scripts/gen-node-versions.py; never edit the copy."""
    gen = runpy.run_path(str(REPO / "scripts/gen-node-versions.py"))
    assert MODULE_UTILS.read_text(encoding="utf-8") == gen["render"](), "run scripts/gen-node-versions.py"
    assert gen["main"](["gen-node-versions.py", "--check"]) == 0


def test_node_copy_needs_only_the_standard_library_of_python_37() -> None:
    """Managed nodes run the module with their own Python (Debian 12: 3.11; the collection keeps
    3.7, the oldest Python its ``from __future__ import annotations`` allows)."""
    text = MODULE_UTILS.read_text(encoding="utf-8")
    tree = ast.parse(text, feature_version=(3, 7))
    imported: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a relative import cannot travel with AnsiballZ"
            imported.add((node.module or "").split(".")[0])
    assert imported <= {"__future__", "functools", "re", "typing"}, imported


# --- parity on adversarial strings (runs everywhere, no hypothesis needed) ---------------------------

#: Characters that look like separators, spaces or digits to a lax pattern: line ends (``$`` in a
#: pattern also matches before a final newline), Unicode spaces (``str.strip`` removes them) and
#: Unicode digits (``str.isdigit`` and ``\d`` accept them, ``[0-9]`` does not).
_ODD = ["\n", "\r", "\r\n", "\t", "\x0b", "\x0c", " ", "\u00a0", "\u2003", "\u3000", "\x00", "\u200b"]
_UNICODE_DIGITS = ["\uff17", "\u0663", "\u00b2", "\u2460", "\u0e53", "\U0001d7d9"]  # ７ ٣ ² ① ๓ 𝟙


def _adversarial() -> List[str]:
    bases = [*tables.STYLES, "7.3.0", "6.0.RC2", "2.3.0rc1", "1.0a1", "8.0.RC3.alpha002", "v7.3.0", "7.3.0.B080"]
    out = ["", " ", "\n", "+", "v", "V", ".", "-", "_", "+cpu", "v+", "7.3.0+", "7.3.0+ ", "7.3.0+\n"]
    for base in bases:
        for odd in _ODD:
            out += [base + odd, odd + base, base.replace(".", odd + ".", 1), base.replace(".", "." + odd, 1)]
            # inside a number: "7.3\n.0", "7\n.3.0"
            out += [base[:i] + odd + base[i:] for i in range(1, len(base)) if base[i - 1].isdigit()]
        for digit in _UNICODE_DIGITS:
            out += [digit + base, base + digit, base.replace("3", digit), "v" + digit, base.replace(".", digit, 1)]
    out += ["7.3\n.0", "7.3.0\n", "\n7.3.0", "7.3.0\n\n", "7.3.0\nrc1", "6.0.RC2\n.1", "６.0.0", "٧.٣.٠"]
    # huge: many parts, a long stage number, a long junk tail, a number beyond int()'s 4300 digits
    out += ["1." * 2000 + "1", "7.3.RC" + "9" * 1000, "7.3.0." + "x" * 5000, "9" * 5000, "7" + "." * 3000]
    out += ["1." * 127 + "1", "1." * 128 + "1", "7.3.0" + " " * 300, "7" * 256, "7" * 257]
    return out


ADVERSARIAL = _adversarial()


def _outcome(module: Any, text: str) -> Any:
    try:
        return ("ok", module.Version(text)._key, str(module.Version(text)))
    except module.VersionError as e:
        return ("refused", str(e))


def test_adversarial_strings_get_the_same_answers() -> None:
    assert len(ADVERSARIAL) > 1000
    mismatched = [t for t in ADVERSARIAL if _outcome(av, t) != _outcome(rv, t)]
    assert mismatched == []
    assert [av.is_version(t) for t in ADVERSARIAL] == [rv.is_version(t) for t in ADVERSARIAL]


def test_adversarial_strings_order_alike() -> None:
    ok = [t for t in ADVERSARIAL if rv.is_version(t)]
    assert len(ok) > 100
    sample = ok[:: max(1, len(ok) // 150)]
    for a, b in itertools.product(sample, repeat=2):
        assert av.compare(a, b) == (rv.Version(a) > rv.Version(b)) - (rv.Version(a) < rv.Version(b)), (a, b)


@pytest.mark.parametrize(
    "text",
    ["7.3\n.0", "7\n.3.0", "6.0.RC2\n.1", "7.3.0.B080\n.1", "\uff17.3.0", "7.\u0663.0", "v\u00b2", "7.3.0\u2003.1"],
)
def test_line_ends_and_unicode_digits_inside_a_version_are_refused(text: str) -> None:
    """``$`` matches before a final newline, ``\\d`` and ``str.isdigit`` accept non-ASCII digits:
    the copy once accepted ``"7.3\\n.0"`` that resumable refuses."""
    assert not rv.is_version(text)
    assert not av.is_version(text)


@pytest.mark.parametrize("text", ["9" * 5000, "1." * 3000 + "1", "7" * 257])
def test_huge_text_is_refused_as_a_version_error(text: str) -> None:
    """Not a plain ValueError (int() refuses more than 4300 digits from Python 3.11 on)."""
    for module in (rv, av):
        assert not module.is_version(text)
        with pytest.raises(module.VersionError, match="characters"):
            module.Version(text)


@pytest.mark.parametrize("text", ["7.3.0\n", " 7.3.0\t", "\u30007.3.0\u00a0", "7.3.0\r\n"])
def test_surrounding_whitespace_is_stripped_alike(text: str) -> None:
    assert av.compare(text, "7.3.0") == 0
    assert rv.Version(text) == rv.Version("7.3.0")


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
