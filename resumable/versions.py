"""Parsing and ordering of the version styles used across the Ascend stack.

Huawei numbers its releases in several styles at once:

* MindCluster: ``6.0.RC2``, ``6.0.0``, ``6.0.0.SPC1``, ``7.3.0``, ``26.0.0``
* CANN: ``8.0.RC2``, ``8.0.RC3.alpha002``, ``8.5.0``
* HDK (driver/firmware): ``24.1.rc2``, ``25.0.rc1.1``
* torch_npu / FrameworkPTAdapter: ``2.1.0.post8``, ``6.0.RC3``
* plain PEP 440-ish numbers for torch and MindSpore: ``2.1.0``, ``2.7.1+cpu``

An ``RC`` is a pre-release of the final it belongs to (``6.0.RC2`` < ``6.0.0``), ``SPC`` (service
pack) and ``post`` are after the final (``6.0.0`` < ``6.0.0.SPC1``), alpha/beta builds come
before their RC, and a trailing number after an RC (``25.0.rc1.1``) is a patch of that RC.
Comparison is case-insensitive. Local suffixes (``+cpu``) are ignored for ordering.
"""

from __future__ import annotations

import functools
import re
from typing import Dict, List, Tuple, Union

# Stage ranks: pre-release builds < RC < final < SPC/post.
_ALPHA, _BETA, _RC, _FINAL, _POST = -3, -2, -1, 0, 1


class VersionError(ValueError):
    """A string that is not a version in any of the Ascend styles."""


@functools.total_ordering
class Version:
    """A comparable version. ``Version("6.0.RC2") < Version("6.0.0")`` is true."""

    __slots__ = ("_key", "text")

    def __init__(self, text: Union[str, int, float]) -> None:
        self.text = str(text).strip()
        key = _KEYS.get(self.text)
        if key is None:
            key = _parse(self.text)
            if len(_KEYS) < 4096:  # a plan parses the same few dozen versions for every job
                _KEYS[self.text] = key
        self._key = key

    @property
    def release(self) -> Tuple[int, ...]:
        """The numeric release, padded to three parts: ``6.0.RC2`` -> ``(6, 0, 0)``."""
        return self._key[0]

    @property
    def major_minor(self) -> Tuple[int, int]:
        return self._key[0][0], self._key[0][1]

    @property
    def is_prerelease(self) -> bool:
        return self._key[1] < _FINAL

    def __eq__(self, other: object) -> bool:
        # Only versions compare equal to versions: equality with strings would break the hash contract.
        if not isinstance(other, Version):
            return NotImplemented
        return self._key == other._key

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key < other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return "Version(%r)" % self.text

    def __str__(self) -> str:
        return self.text


Key = Tuple[Tuple[int, ...], int, int, int, Tuple[int, ...]]
#: Parsed keys by text (bounded; only versions that parsed are kept).
_KEYS: Dict[str, Key] = {}


_DIGITS = re.compile(r"^[0-9]+\Z")
_STAGE = re.compile(r"^(rc|spc|post|alpha|beta)([0-9]*)\Z", re.IGNORECASE)
# PEP 440 style glued to the last number: 2.3.0rc1, 2.7.1post2, 1.0a1
_GLUED = re.compile(r"^([0-9]+)(rc|post|a|b|alpha|beta|spc)([0-9]*)\Z", re.IGNORECASE)
_BUILD = re.compile(r"^b[0-9]+\Z", re.IGNORECASE)
_WORDS = {"rc": _RC, "spc": _POST, "post": _POST, "alpha": _ALPHA, "a": _ALPHA, "beta": _BETA, "b": _BETA}
#: Longer text is no version of any style (and a number of more than 4300 digits would make int()
#: raise a plain ValueError from Python 3.11 on, not a VersionError).
_MAX_LENGTH = 256


def _parse(text: str) -> Key:
    if len(text) > _MAX_LENGTH:
        raise VersionError("a version of %d characters (at most %d)" % (len(text), _MAX_LENGTH))
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
    numbers: List[int] = []
    i = 0
    while i < len(parts) and _DIGITS.match(parts[i]):
        numbers.append(int(parts[i]))
        i += 1
    rest = parts[i:]
    glued = _GLUED.match(rest[0]) if rest else None
    if glued is not None:
        # "2.3.0rc1": the number and the stage share one part
        numbers.append(int(glued.group(1)))
        rest = rest[1:]
    if not numbers:
        raise VersionError("%r does not start with a number" % text)
    # "6.0.RC2" names the RC of release 6.0.0: pad to three parts before the stage.
    while len(numbers) < 3:
        numbers.append(0)
    stage, stage_num, sub_stage = _FINAL, 0, 0
    first = 0
    if glued is not None:
        stage, stage_num = _WORDS[glued.group(2).lower()], int(glued.group(3) or 0)
        first = 1
    tail: List[int] = []
    for j, token in enumerate(rest, start=first):
        m = _STAGE.match(token)
        if m and j == 0:
            stage, stage_num = _WORDS[m.group(1).lower()], int(m.group(2) or 0)
        elif m and j == 1 and stage == _RC and m.group(1).lower() in ("alpha", "beta"):
            # 8.0.RC3.alpha002: a pre-release build of the RC.
            sub_stage = -2 if m.group(1).lower() == "alpha" else -1
            tail.append(int(m.group(2) or 0))
        elif _DIGITS.match(token):
            tail.append(int(token))
        elif _BUILD.match(token):
            # Build numbers such as "B080" order after the bare version.
            tail.append(int(token[1:]))
        else:
            raise VersionError("%r: %r is not a version part" % (text, token))
    return (tuple(numbers), stage, stage_num, sub_stage, tuple(tail))


def parse(text: Union[str, int, float]) -> Version:
    """Parse ``text`` or raise :class:`VersionError` naming what is wrong."""
    return Version(text)


def is_version(text: object) -> bool:
    try:
        Version(str(text))
    except VersionError:
        return False
    return True
