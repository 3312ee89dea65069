"""JSON read from files we do not control and JSON printed for other programs, both strict.

Python's ``json`` reads and writes ``NaN`` and ``Infinity``, which are not JSON (RFC 8259, section 6):
a reader here refuses them and a writer never prints them. A reader also refuses what would make
it slow or crash instead of answering: an integer of thousands of digits (Python 3.8 converts one
in quadratic time; 3.11 and later refuse it with their own message) and nesting deep enough to
exhaust the interpreter's stack. A string that is not UTF-8 text (an environment value or file name
with undecodable bytes) is printed as a ``\\udcXX`` escape, as any encoding can hold it.
"""

from __future__ import annotations

import json
from typing import Any, Callable, NoReturn, Optional, TextIO

from .errors import unicode_ok

#: digits of the longest integer a JSON document here may hold (far above any time, pid or count)
MAX_INT_DIGITS = 40


def _constant(name: str) -> NoReturn:
    raise ValueError("%s is not a JSON value" % name)


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError("an integer of %d digits" % len(text.lstrip("-")))
    return int(text)


def loads(text: str) -> Any:
    """The JSON value of ``text``; :class:`ValueError` (with the reason) for anything else."""
    try:
        return json.loads(text, parse_constant=_constant, parse_int=_integer)
    except RecursionError:
        raise ValueError("it nests deeper than this Python can read") from None


def dumps(
    data: Any,
    stream: Optional[TextIO] = None,
    indent: Optional[int] = 2,
    default: Optional[Callable[[Any], Any]] = None,
) -> str:
    """``data`` as JSON for ``stream`` (non-ASCII characters written as themselves when its encoding
    holds them, else escaped; without a stream, escaped); :class:`ValueError` for a float that is
    not finite. ``default`` turns what JSON has no type for into something it has."""
    if stream is not None and unicode_ok(stream):
        text = json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False, default=default)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: only an escape can carry it
            pass
        else:
            return text
    return json.dumps(data, indent=indent, ensure_ascii=True, allow_nan=False, default=default)
