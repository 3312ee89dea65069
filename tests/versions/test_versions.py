"""Parsing and ordering of every Ascend version style (resumable.versions)."""

from __future__ import annotations

import ast
import contextlib
import itertools
from typing import Dict, Iterator, List, Optional, Set, Tuple

import pytest
from conftest import ROOT

from resumable import releases as R
from resumable.versions import Version, VersionError, is_version, parse

# --- parsing: every style parses and keeps its text -------------------------------------------------------

STYLES = [
    # MindCluster
    "6.0.RC2",
    "6.0.0",
    "6.0.0.SPC1",
    "7.3.0",
    "26.0.0",
    # CANN
    "8.0.RC2",
    "8.0.RC3.alpha002",
    "8.5.0",
    # HDK
    "24.1.rc2",
    "25.0.rc1.1",
    # torch_npu pip version and FrameworkPTAdapter release
    "2.1.0.post8",
    "6.0.RC3",
    # plain numbers (torch, MindSpore, Kubernetes)
    "2.1.0",
    "1.28",
    "2.7.1+cpu",
]


@pytest.mark.parametrize("text", STYLES)
def test_every_style_parses(text: str) -> None:
    v = parse(text)
    assert isinstance(v, Version)
    assert str(v) == text
    assert repr(v) == "Version(%r)" % text
    assert is_version(text)


@pytest.mark.parametrize(
    "text, release, prerelease",
    [
        ("6.0.RC2", (6, 0, 0), True),
        ("6.0.0.SPC1", (6, 0, 0), False),
        ("26.0.0", (26, 0, 0), False),
        ("8.0.RC3.alpha002", (8, 0, 0), True),
        ("24.1.rc2", (24, 1, 0), True),
        ("25.0.rc1.1", (25, 0, 0), True),
        ("2.1.0.post8", (2, 1, 0), False),
        ("1.28", (1, 28, 0), False),
        ("7", (7, 0, 0), False),
        ("2.7.1+cpu", (2, 7, 1), False),
        ("v7.3.0", (7, 3, 0), False),
        ("8.0.alpha1", (8, 0, 0), True),
        ("8.0.beta1", (8, 0, 0), True),
    ],
)
def test_release_and_prerelease(text: str, release: Tuple[int, ...], prerelease: bool) -> None:
    v = Version(text)
    assert v.release == release
    assert v.major_minor == release[:2]
    assert v.is_prerelease is prerelease


def test_whitespace_is_stripped_and_numbers_accepted() -> None:
    assert Version("  7.3.0\n") == Version("7.3.0")
    assert Version("  7.3.0\n").text == "7.3.0"
    # YAML may hand the loader a number; the text is what str() gives
    assert Version(7) == Version("7.0.0")
    assert Version(1.28) == Version("1.28")


# --- ordering -----------------------------------------------------------------------------------------------

# Each chain is strictly increasing.
CHAINS: List[List[str]] = [
    # MindCluster: RC < final < SPC < next patch < next minor < next major (calendar numbering)
    ["6.0.RC1", "6.0.RC2", "6.0.RC3", "6.0.0", "6.0.0.SPC1", "6.0.0.SPC2", "6.0.1", "7.0.RC1", "7.3.0", "26.0.0"],
    # CANN: alpha builds come before their RC
    ["8.0.RC2", "8.0.RC3.alpha001", "8.0.RC3.alpha002", "8.0.RC3.beta1", "8.0.RC3", "8.0.0", "8.5.0"],
    # HDK: a trailing number after an RC is a patch of that RC
    ["24.1.rc1", "24.1.rc2", "24.1.0", "25.0.rc1", "25.0.rc1.1", "25.0.rc1.2", "25.0.rc2", "25.0.0"],
    # torch_npu pip versions: post after final
    ["2.1.0", "2.1.0.post1", "2.1.0.post8", "2.1.0.post10", "2.2.0"],
    # FrameworkPTAdapter releases
    ["5.0.RC3", "6.0.RC1", "6.0.RC3", "6.0.0", "7.0.0"],
    # Stage ranks on one release: alpha < beta < RC < final < post/SPC
    ["9.0.alpha1", "9.0.beta1", "9.0.RC1", "9.0.0", "9.0.0.post1"],
    # numbers compare as numbers, not strings
    ["1.9.0", "1.10.0", "1.12.0", "10.0.0"],
]


def _pairs() -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []
    for chain in CHAINS:
        out.extend(itertools.combinations(chain, 2))
    return out


@pytest.mark.parametrize("lower, higher", _pairs())
def test_chain_order(lower: str, higher: str) -> None:
    a, b = Version(lower), Version(higher)
    assert a < b
    assert b > a
    assert a <= b
    assert b >= a
    assert a != b
    assert (a == b) is False


@pytest.mark.parametrize("chain", CHAINS, ids=lambda c: c[0])
def test_sorting_a_shuffled_chain_restores_it(chain: List[str]) -> None:
    shuffled = list(reversed(chain))
    shuffled = shuffled[1::2] + shuffled[0::2]
    assert [str(v) for v in sorted(Version(t) for t in shuffled)] == chain


# --- equality and hashing -----------------------------------------------------------------------------------

EQUAL = [
    # case-insensitive stage words
    ("6.0.RC2", "6.0.rc2"),
    ("6.0.0.SPC1", "6.0.0.spc1"),
    ("8.0.RC3.alpha002", "8.0.rc3.ALPHA002"),
    ("24.1.RC2", "24.1.rc2"),
    # v prefix
    ("v7.3.0", "7.3.0"),
    ("V2.1.0", "2.1.0"),
    # local suffix ignored
    ("2.7.1+cpu", "2.7.1"),
    ("2.1.0.post8+git1234", "2.1.0.post8"),
    # releases are padded to three parts
    ("7.3", "7.3.0"),
    ("26", "26.0.0"),
    # RC of 6.0 is the RC of 6.0.0
    ("6.0.RC2", "6.0.0.RC2"),
    # leading zeros are numbers
    ("8.0.RC3.alpha002", "8.0.RC3.alpha2"),
    # -, _ separate like .
    ("1.2.3", "1-2_3"),
]


@pytest.mark.parametrize("a, b", EQUAL)
def test_equal_spellings_are_equal_and_hash_alike(a: str, b: str) -> None:
    va, vb = Version(a), Version(b)
    assert va == vb
    assert not va < vb
    assert not vb < va
    assert hash(va) == hash(vb)
    assert len({va, vb}) == 1


def test_equality_with_unrelated_objects() -> None:
    v = Version("7.3.0")
    assert v != 7.3
    assert v != None  # noqa: E711  (exercise __eq__ with None)
    assert v != "not a version"  # an unparseable string is simply unequal
    assert v != ["7.3.0"]


def test_versions_compare_only_with_versions() -> None:
    """Strings are parsed explicitly (Version(text)); equality with a str is False so hashing stays
    consistent with equality, and ordering against a str is a TypeError."""
    assert Version("7.3.0") != "7.3.0"
    with pytest.raises(TypeError):
        _ = Version("7.3.0") < "7.4.0"


# --- rejection ----------------------------------------------------------------------------------------------

BAD = [
    "",
    " ",
    "abc",
    "v",
    "vv7.3.0",
    "7.x",
    "x.7",
    "+cpu",
    "1.2 3",
    "1e3",
    "6.0.RC2.RC3",
    "6.0.0.SPC1.rc1",
    "1.2.3.post1.post2",
    "8.0.RC3.beta1.alpha2",
    "1.2.beta.rc1",
    "latest",
    "None",
    "True",
]


@pytest.mark.parametrize("text", BAD)
def test_bad_versions_raise_version_error(text: str) -> None:
    with pytest.raises(VersionError) as info:
        Version(text)
    assert isinstance(info.value, ValueError)
    assert str(info.value)
    assert not is_version(text)


# Inputs the parser accepts or mishandles today; each is a bug reported to the owner of resumable/versions.py.
# strict=True: when the parser is fixed these start passing and the marker must go.
KNOWN_BAD_ACCEPTED = [
    pytest.param("1..2", id="empty-part-in-the-middle"),
    pytest.param(".1.2", id="leading-dot"),
    pytest.param("1.2.3.", id="trailing-dot"),
    pytest.param("١٢.٣", id="arabic-indic-digits"),
    pytest.param("²", id="superscript-two"),
]


@pytest.mark.parametrize("text", KNOWN_BAD_ACCEPTED)
def test_malformed_versions_are_rejected(text: str) -> None:
    with pytest.raises(VersionError):
        Version(text)


def test_ordering_against_a_number_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        _ = Version("7.3.0") < 7


def test_hash_is_consistent_with_equality() -> None:
    v = Version("7.3.0")
    assert v != "7.3.0"
    assert Version("7.3") in {v}
    assert "7.3.0" not in {v}


# --- properties ---------------------------------------------------------------------------------------------

try:
    from hypothesis import example, given
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - Python 3.8 environments without hypothesis
    st = None  # type: ignore[assignment]

if st is None:

    def test_properties_need_hypothesis() -> None:
        pytest.skip("hypothesis is not installed")

else:
    _STAGES = {"alpha": -3, "beta": -2, "rc": -1, "": 0, "spc": 1, "post": 1}

    releases = st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=3)
    stages = st.sampled_from(sorted(_STAGES))
    stage_numbers = st.integers(min_value=0, max_value=30)

    @st.composite
    def spelled(draw: st.DrawFn) -> Tuple[str, Tuple[Tuple[int, ...], int, int]]:
        """A version string in a random Ascend spelling, with the key the docs say it orders by."""
        release = draw(releases)
        stage = draw(stages)
        num = draw(stage_numbers)
        text = ".".join(str(n) for n in release)
        if stage:
            word = "".join(c.upper() if draw(st.booleans()) else c for c in stage)
            text += ".%s%d" % (word, num)
        else:
            num = 0
        if draw(st.booleans()):
            text = draw(st.sampled_from(["v", "V"])) + text
        if draw(st.integers(0, 3)) == 0:
            text += "+" + draw(st.sampled_from(["cpu", "cu121", "git.abc123"]))
        padded = tuple(release + [0] * (3 - len(release)))
        return text, (padded, _STAGES[stage], num)

    @given(st.lists(spelled(), min_size=1, max_size=12))
    def test_sort_is_a_total_order_consistent_with_the_documented_key(
        items: List[Tuple[str, Tuple[Tuple[int, ...], int, int]]],
    ) -> None:
        parsed = [(Version(text), key) for text, key in items]
        for (a, ka), (b, kb) in itertools.product(parsed, repeat=2):
            # exactly one of <, ==, > and it agrees with the model key
            assert (a < b) == (ka < kb)
            assert (a == b) == (ka == kb)
            assert (a > b) == (ka > kb)
            assert sum([a < b, a == b, a > b]) == 1
            if a == b:
                assert hash(a) == hash(b)
        ordered = sorted(v for v, _ in parsed)
        assert all(x <= y for x, y in zip(ordered, ordered[1:]))
        assert [k for _, k in sorted(parsed, key=lambda p: p[0])] == sorted(k for _, k in parsed)

    @given(releases, st.integers(min_value=0, max_value=99), st.integers(min_value=0, max_value=99))
    def test_rc_before_final_before_service_pack(release: List[int], rc: int, spc: int) -> None:
        final = ".".join(str(n) for n in release)
        assert Version("%s.RC%d" % (final, rc)) < Version(final) < Version("%s.SPC%d" % (final, spc))
        assert Version("%s.alpha%d" % (final, rc)) < Version("%s.RC%d" % (final, rc))
        assert Version(final) < Version("%s.post%d" % (final, spc))
        assert Version("%s.RC%d.alpha%d" % (final, rc, spc)) < Version("%s.RC%d" % (final, rc))

    @given(releases, st.integers(min_value=0, max_value=99), st.integers(min_value=0, max_value=99))
    def test_rc_patch_orders_between_its_rc_and_the_next(release: List[int], rc: int, patch: int) -> None:
        base = ".".join(str(n) for n in release)
        this_rc = Version("%s.rc%d" % (base, rc))
        patched = Version("%s.rc%d.%d" % (base, rc, patch + 1))
        assert this_rc < patched < Version("%s.rc%d" % (base, rc + 1))

    @given(st.text(max_size=20))
    @example("²")
    def test_any_text_parses_or_raises_version_error(text: str) -> None:
        with contextlib.suppress(VersionError):
            Version(text)


# --- the torch_npu version table (resumable.releases, source PTA) -------------------------------------


@pytest.mark.parametrize(
    "package,release",
    [
        ("2.1.0.post8", "6.0.RC3"),  # branch v2.1.0-6.0.rc3
        ("2.1.0.post10", "6.0.0"),
        ("2.1.0.post4", "6.0.RC1"),
        ("2.7.1.post2", "7.3.0"),  # branch v2.7.1-7.3.0
        ("2.7.1", "7.2.0"),
        ("2.6.0.post5", "7.3.0"),
        ("2.7.1.post4", "26.0.0"),
        ("2.1.0.rc1", "5.0.RC3"),
        ("1.11.0.post14", "6.0.RC2"),
    ],
)
def test_published_packages_name_their_release(package: str, release: str) -> None:
    found = R.torch_npu_release(Version(package))
    assert found is not None and found.exact
    assert found.release == Version(release)
    assert found.torch.release[:3] == Version(package).release[:3]


def test_unlisted_packages_get_a_lower_bound_or_nothing() -> None:
    later = R.torch_npu_release(Version("2.7.1.post3"))
    assert later is not None and not later.exact and later.release == Version("7.3.0")
    between = R.torch_npu_release(Version("2.1.0.post9"))
    assert between is not None and not between.exact and between.release == Version("6.0.RC3")
    assert R.torch_npu_release(Version("2.13.0")) is None  # no package for torch 2.13 is listed
    assert R.torch_npu_release(Version("2.0.0")) is None


def test_within_one_torch_version_later_packages_are_later_releases() -> None:
    """The property the lower bound rests on, checked over the whole table."""
    by_torch: Dict[Tuple[int, ...], List[R.TorchNpuBuild]] = {}
    for b in R.TORCH_NPU_BUILDS:
        by_torch.setdefault(Version(b.package).release[:3], []).append(b)
    for builds in by_torch.values():
        ordered = sorted(builds, key=lambda b: Version(b.package))
        releases = [Version(b.release) for b in ordered]
        assert releases == sorted(releases), [b.package for b in ordered]
    packages = [b.package for b in R.TORCH_NPU_BUILDS]
    assert len(packages) == len(set(packages))


def test_adapter_style_is_told_from_pip_style() -> None:
    assert R.is_adapter_style(Version("6.0.RC3")) and R.is_adapter_style(Version("26.0.0"))
    assert not R.is_adapter_style(Version("2.1.0.post8"))


def test_the_release_an_upgrade_to_a_gate_comes_from() -> None:
    assert R.last_stack_release_without(R.MERGED_DEVICE_PLUGIN) == "26.0.1"
    assert R.last_stack_release_without(R.NODED_HOST_NETWORK) == "7.3.2"
    assert R.last_stack_release_without(R.FULL_FAULT_PATHS) == "6.0.0"
    with pytest.raises(ValueError):
        R.last_stack_release_without(R.TOR_AFFINITY)  # every deployable release has it


# --- one version-gate system ----------------------------------------------------------------------------

_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _is_version_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("Version", "parse")


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope`` outside the functions, classes and lambdas nested in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _is_since(node: ast.AST) -> bool:
    """``<gate>.since``: a release a :class:`resumable.releases.Gate` names."""
    return isinstance(node, ast.Attribute) and node.attr == "since"


def _unwrap(node: ast.AST) -> ast.AST:
    """The version an operand reads a part of (``Version("7.3").major_minor``, ``v.release[0]``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)) and not _is_since(node):
        node = node.value
    return node


def _is_fixed_version(node: ast.AST, names: Set[str]) -> bool:
    """A version fixed in the code, or a part of one: ``Version``/``parse`` of a literal or of a gate's
    ``.since``, a gate's ``.since`` itself, or a name in ``names`` (bound to one of those in its scope)."""
    node = _unwrap(node)
    if isinstance(node, ast.Call) and _is_version_call(node):
        return bool(node.args) and (isinstance(node.args[0], ast.Constant) or _is_since(node.args[0]))
    return _is_since(node) or (isinstance(node, ast.Name) and node.id in names)


def _fixed_names(scope: ast.AST, outer: Set[str]) -> Set[str]:
    """The names ``scope`` binds to a fixed version, and only to one (a name also bound to anything
    else there, a parameter, a loop or ``with`` target, an import, is left out), with those of
    ``outer`` it does not rebind."""
    bound: Dict[str, List[Optional[ast.expr]]] = {}  # None: bound to something not followed
    given: Set[int] = set()  # the Name nodes an assignment gives a value
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        for arg in ast.walk(scope.args):
            if isinstance(arg, ast.arg):
                bound.setdefault(arg.arg, []).append(None)
    nodes = list(_own_nodes(scope))
    for node in nodes:
        targets: List[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and isinstance(node, (ast.Assign, ast.AnnAssign)):
                bound.setdefault(target.id, []).append(node.value)
                given.add(id(target))
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and id(node) not in given:
            bound.setdefault(node.id, []).append(None)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.setdefault((alias.asname or alias.name).split(".")[0], []).append(None)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.setdefault(node.name, []).append(None)
    names = {n for n in outer if n not in bound}
    while True:  # a name bound to another fixed name is fixed too
        more = {n for n, values in bound.items() if all(v is not None and _is_fixed_version(v, names) for v in values)}
        if more <= names:
            return names
        names |= more


def inline_version_comparisons(source: str) -> List[int]:
    """Lines of ``source`` that compare against a version parsed on the spot or fixed in the code: an
    ordering (``<``, ``>=`` ...) with a ``Version(...)`` operand, or any comparison with a fixed version
    (``Version("literal")``, ``parse(GATE.since)``, ``GATE.since`` or a name bound only to one of those
    in its function, class or module). Comparisons of two parsed inputs by equality
    (``Version(wanted) == Version(found)``) or of names holding inputs (``declared < table.release``)
    are not gates; an attribute holding a fixed version (``self.floor``) is not followed."""
    tree = ast.parse(source)
    out: List[int] = []
    module_names = _fixed_names(tree, set())
    scopes: List[Tuple[ast.AST, Set[str]]] = [(tree, module_names)]
    scopes += [(s, _fixed_names(s, module_names)) for s in ast.walk(tree) if isinstance(s, _SCOPES)]
    for scope, names in scopes:
        for node in _own_nodes(scope):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            called = any(_is_version_call(_unwrap(o)) for o in operands)
            if any(_is_fixed_version(o, names) for o in operands) or (
                called and any(isinstance(op, _ORDERING) for op in node.ops)
            ):
                out.append(node.lineno)
    return sorted(out)


def test_the_finder_finds_inline_comparisons() -> None:
    assert inline_version_comparisons("ok = v >= Version('7.3.0')\n") == [1]
    assert inline_version_comparisons("ok = versions.Version(a) < b\n") == [1]
    assert inline_version_comparisons("ok = v == Version('26.0.0')\n") == [1]
    assert inline_version_comparisons("ok = Version(a) == Version(b)\nok = at_least(v, GATE)\n") == []


def test_the_finder_follows_names_bound_to_a_fixed_version() -> None:
    found = inline_version_comparisons
    assert found("FLOOR = Version('7.3.0')\ndef f(v):\n    return v >= FLOOR\n") == [3]
    assert found("def f(v):\n    floor = parse(R.TASKD_MANAGER.since)\n    return floor <= v\n") == [3]
    assert found("def f(v):\n    return v > R.TASKD_MANAGER.since\n") == [2]
    assert found("def f(v):\n    return v < Version(GATE.since)\n") == [2]
    assert found("a = Version('1.0')\nb = a\nok = v != b\n") == [3]
    assert found("ok = v.major_minor < Version('7.3').major_minor\nok = Version(x).release[0] >= 5\n") == [1, 2]
    assert found("ok = v == (lambda: Version('1.0'))()\n") == []  # not followed into calls
    # inputs, not gates: parsed or looked up at run time
    assert found("def f(a, table):\n    declared = parse(a)\n    return declared < table.release\n") == []
    assert found("def f(a, b):\n    v = parse(a)\n    w = parse(b)\n    return v == w\n") == []
    # a name fixed in one function is an input in another, or rebound: not followed
    assert found("def f():\n    v = Version('1.0')\ndef g(v, w):\n    return v < w\n") == []
    assert found("def f(x, w):\n    v = Version('1.0')\n    v = parse(x)\n    return v < w\n") == []
    assert found("def f(x, w):\n    v = parse('1.0')\n    for v in x:\n        pass\n    return v == w\n") == []
    assert found("FLOOR = Version('1.0')\ndef f(v, FLOOR):\n    return v < FLOOR\n") == []
    assert found("FLOOR = Version('1.0')\ndef f(v, x):\n    with x as FLOOR:\n        return v < FLOOR\n") == []


def test_no_inline_version_comparison_outside_releases_and_versions() -> None:
    """Every release comparison is a named, cited Gate of resumable/releases.py (issue 17)."""
    # nodeversions.py: the node side of versions.py (version.info ranges), generated into the collection with it
    allowed = {ROOT / "resumable/releases.py", ROOT / "resumable/versions.py", ROOT / "resumable/nodeversions.py"}
    files = sorted((ROOT / "resumable").rglob("*.py")) + sorted((ROOT / "resumable_pulumi").rglob("*.py"))
    files.append(ROOT / "__main__.py")
    assert len(files) > 50
    found = {
        str(p.relative_to(ROOT)): lines
        for p in files
        if p not in allowed
        for lines in [inline_version_comparisons(p.read_text(encoding="utf-8"))]
        if lines
    }
    assert found == {}
