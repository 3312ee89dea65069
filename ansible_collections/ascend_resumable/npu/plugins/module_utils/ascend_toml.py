# -*- coding: utf-8 -*-
"""A small TOML 1.0 reader and writer for container runtime configuration files.

The nodes run Python 3.8+ (EL 8/9, openEuler, Ubuntu 22.04), where the standard library has no
TOML module before 3.11 and none that writes. containerd's config.toml uses tables, dotted and
quoted keys, strings, integers, booleans, floats, arrays and the odd inline table; all of that
is read here. Dates and times are refused with a clear error (containerd has no such setting).

``loads(text)`` returns nested dicts (insertion ordered) and lists; ``dumps(data)`` writes them
back as tables. Comments and layout are not kept when a file is rewritten, which is what the
Ascend Docker Runtime installer (go-toml) and nvidia-ctk do too; callers keep a backup.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")
_BARE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_DEC = re.compile(r"[+-]?(0|[1-9](_?[0-9])*)\Z")
_HEX = re.compile(r"0x[0-9A-Fa-f](_?[0-9A-Fa-f])*\Z")
_OCT = re.compile(r"0o[0-7](_?[0-7])*\Z")
_BIN = re.compile(r"0b[01](_?[01])*\Z")
_FLOAT = re.compile(
    r"[+-]?(0|[1-9](_?[0-9])*)((\.[0-9](_?[0-9])*)([eE][+-]?[0-9](_?[0-9])*)?|[eE][+-]?[0-9](_?[0-9])*)\Z"
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class TomlError(ValueError):
    """The text is not TOML this reader accepts; the message names the line."""


class _Parser:
    def __init__(self, text):
        if text.startswith("\ufeff"):
            text = text[1:]
        self.s = text
        self.i = 0
        self.root = {}
        # ids of: tables opened by a [header] or [[header]] entry, tables made by dotted keys,
        # tables created only as parents of a header, inline tables (closed for good) and
        # arrays written as values (never extended by [[header]])
        self.header = set()
        self.dotted = set()
        self.implicit = set()
        self.frozen = set()
        self.static = set()

    # --- low level ---------------------------------------------------------------------------
    def error(self, msg):
        line = self.s.count("\n", 0, self.i) + 1
        raise TomlError("line %d: %s" % (line, msg))

    def peek(self, n=1):
        return self.s[self.i : self.i + n]

    def skip_ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def skip_comment(self):
        if self.peek() == "#":
            while self.i < len(self.s) and self.s[self.i] != "\n":
                ch = self.s[self.i]
                if ch == "\r" and self.peek(2) == "\r\n":
                    return
                if ch != "\t" and (ord(ch) < 0x20 or ord(ch) == 0x7F):
                    self.error("control character in a comment")
                self.i += 1

    def end_of_line(self):
        self.skip_ws()
        self.skip_comment()
        if self.peek(2) == "\r\n":
            self.i += 2
        elif self.peek() == "\n":
            self.i += 1
        elif self.i < len(self.s):
            self.error("expected the end of the line, found %r" % self.peek())

    def skip_blank(self):
        """Whitespace, newlines and comments (inside arrays and between statements)."""
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch in " \t\n":
                self.i += 1
            elif ch == "\r" and self.peek(2) == "\r\n":
                self.i += 2
            elif ch == "#":
                self.skip_comment()
            else:
                break

    # --- document ------------------------------------------------------------------------------
    def parse(self):
        current = self.root
        while True:
            self.skip_blank()
            if self.i >= len(self.s):
                return self.root
            if self.peek(2) == "[[":
                self.i += 2
                path = self.key()
                if self.peek(2) != "]]":
                    self.error("expected ]] after an array-of-tables header")
                self.i += 2
                current = self.array_table(path)
            elif self.peek() == "[":
                self.i += 1
                path = self.key()
                if self.peek() != "]":
                    self.error("expected ] after a table header")
                self.i += 1
                current = self.table(path)
            else:
                self.key_value(current)
            self.end_of_line()

    def parent_of_header(self, path):
        table = self.root
        for part in path[:-1]:
            if part not in table:
                table[part] = {}
                self.implicit.add(id(table[part]))
            child = table[part]
            if isinstance(child, list):
                if id(child) in self.static or not child:
                    self.error("%s is an array value, not a table" % part)
                child = child[-1]
            if not isinstance(child, dict):
                self.error("%s is already a value, not a table" % part)
            if id(child) in self.frozen:
                self.error("inline table %s cannot be extended" % part)
            table = child
        return table

    def table(self, path):
        parent = self.parent_of_header(path)
        last = path[-1]
        if last in parent:
            existing = parent[last]
            if not isinstance(existing, dict) or id(existing) not in self.implicit:
                self.error("table [%s] is defined twice" % ".".join(path))
            self.implicit.discard(id(existing))
        else:
            parent[last] = {}
        self.header.add(id(parent[last]))
        return parent[last]

    def array_table(self, path):
        parent = self.parent_of_header(path)
        last = path[-1]
        if last not in parent:
            parent[last] = []
        arr = parent[last]
        if not isinstance(arr, list) or id(arr) in self.static:
            self.error("[[%s]] conflicts with an existing value" % ".".join(path))
        entry = {}
        arr.append(entry)
        self.header.add(id(entry))
        return entry

    def key_value(self, table):
        path = self.key()
        if self.peek() != "=":
            self.error("expected = after the key %s" % ".".join(path))
        self.i += 1
        self.skip_ws()
        value = self.value()
        for part in path[:-1]:
            if part not in table:
                table[part] = {}
                self.dotted.add(id(table[part]))
            child = table[part]
            if not isinstance(child, dict) or id(child) not in self.dotted or id(child) in self.frozen:
                self.error("key %s: %s is already defined" % (".".join(path), part))
            table = child
        last = path[-1]
        if last in table:
            self.error("key %s is defined twice" % ".".join(path))
        table[last] = value

    def key(self):
        parts = []
        while True:
            self.skip_ws()
            ch = self.peek()
            if ch == '"':
                if self.peek(3) == '"""':
                    self.error("a key cannot be a multi-line string")
                parts.append(self.basic_string(False))
            elif ch == "'":
                if self.peek(3) == "'''":
                    self.error("a key cannot be a multi-line string")
                parts.append(self.literal_string(False))
            else:
                start = self.i
                while self.i < len(self.s) and self.s[self.i] in _BARE_CHARS:
                    self.i += 1
                if start == self.i:
                    self.error("expected a key, found %r" % (ch or "end of file"))
                parts.append(self.s[start : self.i])
            self.skip_ws()
            if self.peek() != ".":
                return parts
            self.i += 1

    # --- values --------------------------------------------------------------------------------
    def value(self):
        ch = self.peek()
        if ch == '"':
            return self.basic_string(self.peek(3) == '"""')
        if ch == "'":
            return self.literal_string(self.peek(3) == "'''")
        if ch == "[":
            return self.array()
        if ch == "{":
            return self.inline_table()
        start = self.i
        while self.i < len(self.s) and self.s[self.i] not in " \t\r\n,]}#":
            self.i += 1
        token = self.s[start : self.i]
        if token == "true":
            return True
        if token == "false":
            return False
        if not token:
            self.error("expected a value")
        return self.number(token)

    def number(self, token):
        if _DATE.match(token):
            self.error("dates and times are not supported here (%s)" % token)
        if _DEC.match(token):
            return int(token.replace("_", ""))
        if _HEX.match(token):
            return int(token[2:].replace("_", ""), 16)
        if _OCT.match(token):
            return int(token[2:].replace("_", ""), 8)
        if _BIN.match(token):
            return int(token[2:].replace("_", ""), 2)
        if _FLOAT.match(token):
            return float(token.replace("_", ""))
        if token in ("inf", "+inf", "-inf", "nan", "+nan", "-nan"):
            return float(token.lstrip("+"))
        self.error("invalid value %r" % token)

    def array(self):
        self.i += 1
        out = []
        self.static.add(id(out))
        while True:
            self.skip_blank()
            if self.peek() == "]":
                self.i += 1
                return out
            out.append(self.value())
            self.skip_blank()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() == "]":
                self.i += 1
                return out
            else:
                self.error("expected , or ] in an array")

    def inline_table(self):
        self.i += 1
        table = {}
        self.skip_ws()
        if self.peek() == "}":
            self.i += 1
        else:
            while True:
                self.key_value(table)
                self.skip_ws()
                if self.peek() == ",":
                    self.i += 1
                elif self.peek() == "}":
                    self.i += 1
                    break
                else:
                    self.error("expected , or } in an inline table")
        self.freeze(table)
        return table

    def freeze(self, value):
        if isinstance(value, dict):
            self.frozen.add(id(value))
            for v in value.values():
                self.freeze(v)
        elif isinstance(value, list):
            for v in value:
                self.freeze(v)

    def closing_quotes(self, quote):
        """At a run of 3+ quotes: 1 or 2 of them may belong to the string (TOML 1.0)."""
        run = 0
        while self.peek(run + 1)[-1:] == quote and run < len(self.s) - self.i:
            run += 1
        if run > 5:
            self.error("too many quotes")
        self.i += run
        return quote * (run - 3)

    def open_string(self, multiline):
        """Skip the opening quote(s) and, for a multi-line string, a newline right after them."""
        self.i += 3 if multiline else 1
        if multiline:
            if self.peek(2) == "\r\n":
                self.i += 2
            elif self.peek() == "\n":
                self.i += 1

    def closing(self, quote, multiline):
        """The next character, or the string's last characters (str) when it ends here."""
        if self.i >= len(self.s):
            self.error("unterminated string")
        if multiline and self.peek(3) == quote * 3:
            return None, self.closing_quotes(quote)
        if not multiline and self.s[self.i] == quote:
            self.i += 1
            return None, ""
        return self.s[self.i], None

    def basic_string(self, multiline):
        self.open_string(multiline)
        out = []
        while True:
            ch, tail = self.closing('"', multiline)
            if tail is not None:
                return "".join(out) + tail
            if ch == "\\":
                self.i += 1
                esc = self.peek()
                if esc in _ESCAPES:
                    out.append(_ESCAPES[esc])
                    self.i += 1
                elif esc in ("u", "U"):
                    size = 4 if esc == "u" else 8
                    digits = self.s[self.i + 1 : self.i + 1 + size]
                    if len(digits) != size or not re.match(r"[0-9A-Fa-f]+\Z", digits):
                        self.error("invalid unicode escape")
                    code = int(digits, 16)
                    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                        self.error("invalid unicode scalar value")
                    out.append(chr(code))
                    self.i += 1 + size
                elif multiline and esc in " \t\r\n":
                    # line-ending backslash: drop whitespace and newlines up to the next text
                    j = self.i
                    while j < len(self.s) and self.s[j] in " \t":
                        j += 1
                    if self.s[j : j + 1] != "\n" and self.s[j : j + 2] != "\r\n":
                        self.error("invalid escape")
                    while j < len(self.s) and self.s[j] in " \t\r\n":
                        j += 1
                    self.i = j
                else:
                    self.error("invalid escape \\%s" % esc)
                continue
            self.check_char(ch, multiline)
            if multiline and ch == "\r" and self.peek(2) != "\r\n":
                self.error("bare carriage return in a string")
            out.append(ch)
            self.i += 1

    def check_char(self, ch, multiline):
        if ch == "\n" and not multiline:
            self.error("newline in a single-line string")
        if ch not in "\t\n\r" and (ord(ch) < 0x20 or ord(ch) == 0x7F):
            self.error("control character in a string")
        if ch == "\r" and not multiline:
            self.error("carriage return in a single-line string")

    def literal_string(self, multiline):
        self.open_string(multiline)
        out = []
        while True:
            ch, tail = self.closing("'", multiline)
            if tail is not None:
                return "".join(out) + tail
            self.check_char(ch, multiline)
            if multiline and ch == "\r" and self.peek(2) != "\r\n":
                self.error("bare carriage return in a string")
            out.append(ch)
            self.i += 1


def loads(text):
    """Parse TOML text into dicts and lists; raises TomlError (with the line) on invalid input."""
    return _Parser(text).parse()


# --- writer ------------------------------------------------------------------------------------------
def _key(part):
    return part if BARE_KEY.match(part) else _string(part)


def _string(value):
    out = ['"']
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join("%s = %s" % (_key(k), _value(v)) for k, v in value.items()) + "}"
    raise TypeError("cannot write %r as TOML" % (value,))


def _is_table_array(value):
    return isinstance(value, list) and len(value) > 0 and all(isinstance(v, dict) for v in value)


def _emit(table, path, lines, header):
    scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict) and not _is_table_array(v)]
    tables = [(k, v) for k, v in table.items() if isinstance(v, dict)]
    arrays = [(k, v) for k, v in table.items() if _is_table_array(v)]
    if header is not None and (scalars or not (tables or arrays)):
        if lines:
            lines.append("")
        lines.append(header)
    for k, v in scalars:
        lines.append("%s = %s" % (_key(k), _value(v)))
    for k, v in tables:
        sub = [*path, k]
        _emit(v, sub, lines, "[%s]" % ".".join(_key(p) for p in sub))
    for k, v in arrays:
        sub = [*path, k]
        for entry in v:
            if lines:
                lines.append("")
            lines.append("[[%s]]" % ".".join(_key(p) for p in sub))
            _emit_array_entry(entry, sub, lines)


def _emit_array_entry(entry, path, lines):
    for k, v in entry.items():
        if not isinstance(v, dict) and not _is_table_array(v):
            lines.append("%s = %s" % (_key(k), _value(v)))
    for k, v in entry.items():
        if isinstance(v, dict) or _is_table_array(v):
            # sub-tables of an array entry are written inline to keep them with their entry
            lines.append("%s = %s" % (_key(k), _value(v)))


def dumps(data):
    """Write nested dicts/lists as TOML (tables as [headers]); loads(dumps(x)) == x."""
    lines = []
    _emit(data, [], lines, None)
    return "\n".join(lines) + "\n"
