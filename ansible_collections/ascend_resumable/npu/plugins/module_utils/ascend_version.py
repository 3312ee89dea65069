"""Ascend version ordering for the Ansible side: the one implementation that the facts module
(on the node) and the filters (on the controller) use.

It orders exactly like ``resumable.versions`` (the profile side, which cannot be shipped to a
node by AnsiballZ): tests/test_ansible_versions.py runs the test tables of
tests/test_versions.py through this file and compares both implementations on random input.

Styles: HDK ``25.0.rc1.1`` / ``25.2.0``, firmware ``7.7.0.1.231``, CANN ``8.3.RC1`` /
``8.0.RC3.alpha002`` / ``8.5.0``, MindCluster ``6.0.0.SPC1``, pip ``2.1.0.post8`` / ``2.7.1+cpu``.
An RC is a pre-release of its final (``6.0.RC2`` < ``6.0.0``), SPC and post come after it,
alpha/beta builds before their RC, a number after an RC is a patch of that RC, releases are
padded to three parts (``25.2`` == ``25.2.0``), case does not matter, ``+local`` is ignored.
"""

from __future__ import annotations

import functools
import re

_ALPHA, _BETA, _RC, _FINAL, _POST = -3, -2, -1, 0, 1
_DIGITS = re.compile(r"^[0-9]+$")
_STAGE = re.compile(r"^(rc|spc|post|alpha|beta)([0-9]*)$", re.IGNORECASE)
_GLUED = re.compile(r"^([0-9]+)(rc|post|a|b|alpha|beta|spc)([0-9]*)$", re.IGNORECASE)
_BUILD = re.compile(r"^b[0-9]+$", re.IGNORECASE)
_WORDS = {"rc": _RC, "spc": _POST, "post": _POST, "alpha": _ALPHA, "a": _ALPHA, "beta": _BETA, "b": _BETA}
# version.info compatibility ranges: "[lo,hi],[lo,hi.]" (HDK-FILES)
_RANGE = re.compile(r"\[([^,\]]+),([^\]]+)\]")


class VersionError(ValueError):
    """A string that is not a version in any of the Ascend styles."""


def _key(text):
    raw = text.split("+", 1)[0].strip()
    if "+" in text and not text.split("+", 1)[1].strip():
        raise VersionError("%r: empty local suffix after '+'" % text)
    if raw[:1] in ("v", "V") and raw[1:2].isdigit():
        raw = raw[1:]
    if not raw:
        raise VersionError("empty version")
    parts = re.split(r"[.\-_]", raw)
    if any(p == "" for p in parts):
        raise VersionError("%r has an empty part (two separators in a row, or one at an end)" % text)
    numbers = []
    i = 0
    while i < len(parts) and _DIGITS.match(parts[i]):
        numbers.append(int(parts[i]))
        i += 1
    rest = parts[i:]
    glued = _GLUED.match(rest[0]) if rest else None
    if glued is not None:
        numbers.append(int(glued.group(1)))
        rest = rest[1:]
    if not numbers:
        raise VersionError("%r does not start with a number" % text)
    while len(numbers) < 3:
        numbers.append(0)
    stage, stage_num, sub_stage, first = _FINAL, 0, 0, 0
    if glued is not None:
        stage, stage_num, first = _WORDS[glued.group(2).lower()], int(glued.group(3) or 0), 1
    tail = []
    for j, token in enumerate(rest, start=first):
        m = _STAGE.match(token)
        if m and j == 0:
            stage, stage_num = _WORDS[m.group(1).lower()], int(m.group(2) or 0)
        elif m and j == 1 and stage == _RC and m.group(1).lower() in ("alpha", "beta"):
            sub_stage = -2 if m.group(1).lower() == "alpha" else -1
            tail.append(int(m.group(2) or 0))
        elif _DIGITS.match(token):
            tail.append(int(token))
        elif _BUILD.match(token):
            tail.append(int(token[1:]))
        else:
            raise VersionError("%r: %r is not a version part" % (text, token))
    return (tuple(numbers), stage, stage_num, sub_stage, tuple(tail))


@functools.total_ordering
class Version:
    """A comparable Ascend version: ``Version("6.0.RC2") < Version("6.0.0")``."""

    __slots__ = ("_k", "text")

    def __init__(self, text):
        self.text = str(text).strip()
        self._k = _key(self.text)

    def __eq__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._k == other._k

    def __lt__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._k < other._k

    def __hash__(self):
        return hash(self._k)

    def __repr__(self):
        return "Version(%r)" % self.text

    def __str__(self):
        return self.text


def is_version(text):
    try:
        Version(text)
    except VersionError:
        return False
    return True


def compare(left, right):
    """-1, 0 or 1, like cmp(left, right). Raises VersionError for a non-version."""
    a, b = Version(left), Version(right)
    return (a > b) - (a < b)


def in_ranges(version, ranges):
    """Is ``version`` inside one of the ``compatible_version_*`` ranges of a version.info?

    ``"[7.0.0,7.7.99],[25.2.0,25.2.0.]"``: a trailing dot on the upper bound means "that version
    or any version spelled with it as a prefix" (``25.2.0.1``). None when either side is empty,
    so callers can tell "unknown" from "no" (HDK-FILES; ADEPLOY downloader/software).
    """
    if not version or not ranges:
        return None
    wanted = Version(version)
    text = str(version).strip().lower()
    for low, high in _RANGE.findall(str(ranges)):
        low, high = low.strip(), high.strip()
        if wanted < Version(low):
            continue
        if high.endswith("."):
            if wanted <= Version(high[:-1]) or text.startswith(high.lower()):
                return True
        elif wanted <= Version(high):
            return True
    return False
