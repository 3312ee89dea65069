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
from typing import Tuple, Union

_RELEASE = re.compile(r"^\d+(\.\d+)*")

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
        self._key = _parse(self.text)

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
        if isinstance(other, str):
            try:
                other = Version(other)
            except VersionError:
                return NotImplemented
        if not isinstance(other, Version):
            return NotImplemented
        return self._key == other._key

    def __lt__(self, other: Union[Version, str]) -> bool:
        if isinstance(other, str):
            other = Version(other)
        return self._key < other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return "Version(%r)" % self.text

    def __str__(self) -> str:
        return self.text


Key = Tuple[Tuple[int, ...], int, int, int, Tuple[int, ...]]


def _parse(text: str) -> Key:
    raw = text.split("+", 1)[0].strip()
    if raw[:1] in ("v", "V") and raw[1:2].isdigit():
        raw = raw[1:]
    if not raw:
        raise VersionError("empty version")
    parts = [p for p in re.split(r"[.\-_]", raw) if p != ""]
    numbers = []
    i = 0
    while i < len(parts) and parts[i].isdigit():
        numbers.append(int(parts[i]))
        i += 1
    if not numbers:
        raise VersionError("%r does not start with a number" % text)
    # "6.0.RC2" names the RC of release 6.0.0: pad to three parts before the stage.
    while len(numbers) < 3:
        numbers.append(0)
    stage, stage_num, sub_stage = _FINAL, 0, 0
    tail = []
    rest = parts[i:]
    for j, token in enumerate(rest):
        m = re.match(r"^(rc|spc|post|alpha|beta)(\d*)$", token, re.IGNORECASE)
        if m and j == 0:
            word, num = m.group(1).lower(), int(m.group(2) or 0)
            if word == "rc":
                stage, stage_num = _RC, num
            elif word in ("spc", "post"):
                stage, stage_num = _POST, num
            else:
                stage, stage_num = (_ALPHA if word == "alpha" else _BETA), num
        elif m and j == 1 and stage == _RC and m.group(1).lower() in ("alpha", "beta"):
            # 8.0.RC3.alpha002: a pre-release build of the RC.
            sub_stage = -2 if m.group(1).lower() == "alpha" else -1
            tail.append(int(m.group(2) or 0))
        elif token.isdigit():
            tail.append(int(token))
        elif re.match(r"^b\d+$", token, re.IGNORECASE):
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
