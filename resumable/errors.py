"""Errors that reach the user as one paragraph (what, where, how to fix), never a traceback."""

from __future__ import annotations

import re
from typing import Any, List, Optional, TextIO

#: Longest rendering of a user's value inside a message (longer ones are cut with an ellipsis).
SHOWN_LIMIT = 80

# C0 and C1 control characters and DEL: a message (and a plan printed for people) shows them escaped;
# so are lone surrogates (the bytes of an environment value or file name that is not UTF-8), which no
# output encoding can hold, the Unicode line and paragraph separators, and the bidirectional
# embeddings, overrides and isolates, which would reorder the text around them on a terminal
# (Unicode Standard Annex #9; CVE-2021-42574).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """``text`` with control characters written as escapes (``\\n``, ``\\t``, ``\\x1b``, ``\\udcff``)."""

    def one(m: re.Match[str]) -> str:
        char = m.group(0)
        if ord(char) > 0xFF:
            return "\\u%04x" % ord(char)
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, "\\x%02x" % ord(char))

    return _CONTROL.sub(one, text)


#: what cannot be passed on as text: C0/C1 control characters, DEL and the Unicode line separators,
#: and lone surrogates (bytes that are not UTF-8)
_C0_C1 = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: the bidirectional embeddings, overrides and isolates the profile refuses too (resumable.binding)
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def text_problem(value: str) -> Optional[str]:
    """Why ``value`` cannot be passed on as text (and printed as one shell word), or None."""
    if _SURROGATE.search(value):
        return "has bytes that are not UTF-8"
    if _C0_C1.search(value):
        return "contains a control character"
    if _BIDI.search(value):
        return "contains a bidirectional-text control character (it shows the text in another order than it runs)"
    return None


def unicode_ok(stream: TextIO) -> bool:
    """Whether ``stream``'s encoding can hold any character (UTF-8 and friends); with ``ascii`` or
    ``latin-1`` JSON and YAML output escape what the encoding cannot hold."""
    try:
        "\u4e2d\u2014".encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def shown(value: Any, limit: int = SHOWN_LIMIT) -> str:
    """A user's value for a message: ``repr``-like, control characters escaped, at most about
    ``limit`` characters (a 5 MB string or a 5,000-digit number is cut, and says how long it was)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        digits = len(str(abs(value))) if value.bit_length() < 4000 else int(value.bit_length() * 0.30103) + 1
        if digits <= limit:
            return str(value)
        return "an integer of %d digits" % digits
    text = repr(value)
    text = escape_controls(text)
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, (str, bytes, list, dict)) else len(text)
    return "%s... (%d characters)" % (text[: limit - 3], size)


#: A run of 200 characters without white space in a message is a value, not prose; it is cut.
_LONG_RUN = re.compile(r"\S{200,}")


def for_people(text: str) -> str:
    """``text`` fit for a terminal: control characters escaped, and any run of 200 or more
    characters without a space (a value someone pasted, not a file name) cut to its
    first 100 characters, so a 5 MB value cannot flood the screen."""

    def cut(m: re.Match[str]) -> str:
        return "%s... (%d characters)" % (m.group(0)[:100], len(m.group(0)))

    return _LONG_RUN.sub(cut, escape_controls(text))


class ResumableError(Exception):
    """Base class: every subclass renders to a single readable paragraph."""

    exit_code = 2

    def __init__(self, what: str, where: Optional[str] = None, fix: Optional[str] = None) -> None:
        super().__init__(what)
        self.what = what
        self.where = where
        self.fix = fix

    def __str__(self) -> str:
        text = self.what
        if self.where:
            text = "%s: %s" % (self.where, text)
        if self.fix:
            text = "%s. %s" % (text.rstrip("."), self.fix)
        # One paragraph, of readable length, whatever a file name or a value contains.
        return for_people(text)


class ProfileError(ResumableError):
    """The profile cannot be read or does not match the schema (file, YAML, type, unknown key)."""


class ProfileErrors(ProfileError):
    """Several schema problems of one profile, found in one run; each prints as its own paragraph."""

    def __init__(self, errors: List[ProfileError], limit: int = 50) -> None:
        self.errors = list(errors)
        self.limit = limit
        super().__init__("the profile has %d problems" % len(self.errors))

    def prefix(self, source: str) -> None:
        """Name the file in front of every problem's place."""
        for e in self.errors:
            e.where = "%s: %s" % (source, e.where) if e.where else source

    def _shown(self) -> List[str]:
        items = [str(e) for e in self.errors[: self.limit]]
        if len(self.errors) > self.limit:
            items.append("... and %d more" % (len(self.errors) - self.limit))
        return items

    def lines(self) -> List[str]:
        """For a terminal: a count, then one line per problem."""
        count = "1 problem" if len(self.errors) == 1 else "%d problems" % len(self.errors)
        head = "%s in the profile (fix them all, then validate again):" % count
        return [head] + ["  - " + item for item in self._shown()]

    def __str__(self) -> str:
        """One paragraph (Pulumi and logs take a message on one line)."""
        return "%s in the profile: %s" % (
            "1 problem" if len(self.errors) == 1 else "%d problems" % len(self.errors),
            " ".join("(%d) %s" % (i + 1, item) for i, item in enumerate(self._shown())),
        )
