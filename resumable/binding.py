"""Bind YAML data to the profile dataclasses, and describe them as JSON Schema and Markdown.

The dataclasses in :mod:`resumable.profile` are the one definition of the profile: their
annotations give the types (closed sets of values are the ``Literal`` aliases of
:mod:`resumable.choices`), ``field(metadata=...)`` gives docs and ranges. This module
reads them, so the loader, ``resumable schema`` and docs/profile.md cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import functools
import math
import re
import typing
import unicodedata
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar

from . import formats as F
from .choices import is_literal, values
from .errors import ProfileError, ProfileErrors, shown
from .versions import VersionError, parse

T = TypeVar("T")

#: Versions are short (``8.0.RC3.alpha002``); a longer string is refused before it is parsed.
VERSION_MAX = 64
#: Whole numbers fit a Kubernetes int64 field.
INT_MAX = 2**63 - 1

# C0/C1 control characters, DEL and the Unicode line and paragraph separators; ``multiline``
# strings may hold tabs and line breaks.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_MULTILINE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The Unicode bidirectional embeddings, overrides and isolates (Unicode Standard Annex #9, section
# 2; CVE-2021-42574 "Trojan Source"): they make text display in another order than it is stored,
# so a name a person reads in a plan, a message or kubectl output would not be the name that runs.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def spec(
    doc: str,
    *,
    minimum: Optional[float] = None,
    maximum: Optional[float] = None,
    version: bool = False,
    dns_name: bool = False,
    required: bool = False,
    example: Any = None,
    min_items: Optional[int] = None,
    format: Optional[str] = None,
    key_format: Optional[str] = None,
    multiline: bool = False,
    hints: Optional[Mapping[str, str]] = None,
    choices_doc: Optional[Mapping[str, str]] = None,
) -> Dict[str, Any]:
    """Metadata for a profile field (use as ``field(default=..., metadata=spec(...))``).

    ``format`` names a :mod:`resumable.formats` format every string of the field must have (for a
    list or mapping: its items or values); ``key_format`` the same for the keys of a mapping;
    ``multiline`` lets the strings hold tabs and line breaks (every other control character is
    refused in every string); ``hints`` maps values people write by mistake to the suggestion
    for them (a closed field: instead of the closest spelling, which may name another product);
    ``choices_doc`` says what each allowed value means (schema descriptions and docs)."""
    if dns_name:
        format = F.DNS_LABEL
    if format is not None and format not in F.FORMATS:
        raise ValueError("unknown format %r" % format)
    return {
        "doc": doc,
        "minimum": minimum,
        "maximum": maximum,
        "version": version,
        "dns_name": dns_name,
        "required": required,
        "example": example,
        "min_items": min_items,
        "format": format,
        "key_format": key_format,
        "multiline": multiline,
        "hints": dict(hints or {}),
        "choices_doc": dict(choices_doc or {}),
    }


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> Dict[str, Any]:
    """The resolved annotations of a profile dataclass, computed once per class (a profile of
    hundreds of jobs binds each class hundreds of times)."""
    return typing.get_type_hints(cls)


@functools.lru_cache(maxsize=None)
def _fields(cls: type) -> Dict[str, dataclasses.Field]:  # type: ignore[type-arg]
    return {f.name: f for f in dataclasses.fields(cls)}


def unwrap_optional(tp: Any) -> Tuple[Any, bool]:
    if typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def _type_name(tp: Any) -> str:
    tp, optional = unwrap_optional(tp)
    origin = typing.get_origin(tp)
    if origin in (list, List):
        name = "a list of %s" % _plural(typing.get_args(tp)[0])
    elif origin in (dict, Dict):
        name = "a mapping of %s" % _plural(typing.get_args(tp)[1])
    elif dataclasses.is_dataclass(tp):
        name = "a mapping"
    elif is_literal(tp):
        name = "one of %s" % ", ".join(str(v) for v in values(tp))
    else:
        name = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}.get(tp, str(tp))
    return name + (" or null" if optional else "")


def _plural(tp: Any) -> str:
    tp, _ = unwrap_optional(tp)
    if typing.get_origin(tp) in (list, List):
        return "lists"
    if typing.get_origin(tp) in (dict, Dict) or dataclasses.is_dataclass(tp):
        return "mappings"
    if is_literal(tp):
        return "values (%s)" % ", ".join(str(v) for v in values(tp))
    return {str: "strings", int: "integers", float: "numbers", bool: "booleans"}.get(tp, str(tp))


def _did_you_mean(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    if close:
        return "Did you mean %r? Known keys: %s." % (close[0], ", ".join(known))
    return "Known keys: %s." % ", ".join(known)


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "the boolean %s" % str(value).lower()
    if isinstance(value, (int, float)):
        return "the number %s" % shown(value)
    if isinstance(value, str):
        return "the string %s" % shown(value)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if value is None:
        return "null"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return "the date %s (YAML reads an unquoted date as a timestamp; quote it)" % value
    return type(value).__name__


def _key_path(where: str, key: Any) -> str:
    """``where.key`` for a mapping key, shortened and escaped like any value in a message."""
    plain = isinstance(key, str) and len(key) <= 40 and not _CONTROL.search(key) and not _BIDI.search(key)
    text = key if plain else shown(key, 40)
    return "%s.%s" % (where, text) if where else str(text)


class _Failed(Exception):
    """A part of the document had problems, already recorded; its parent cannot be built either."""


def bind(cls: Type[T], data: Any, path: str) -> T:
    """Build ``cls`` from ``data`` (a mapping), raising :class:`ProfileError` at ``path``; every
    problem of the document is found in one run (a :class:`~resumable.errors.ProfileErrors` when
    there is more than one), so a user fixes them all at once instead of one per run."""
    problems: List[ProfileError] = []
    try:
        return _bind(cls, data, path, problems)
    except _Failed:
        pass
    if len(problems) == 1:
        raise problems[0]
    raise ProfileErrors(problems)


def _record(problems: List[ProfileError], exc: ProfileError) -> None:
    problems.append(exc)


def _bind(cls: Type[T], data: Any, path: str, problems: List[ProfileError]) -> T:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ProfileError("expected a mapping, found %s" % _describe(data), path, "Write it as `key: value` lines.")
    hints = _hints(cls)  # type: ignore[arg-type]
    fields = _fields(cls)  # type: ignore[arg-type]
    failed = False
    misspelt = set()  # known keys an unknown key is close to: not reported missing as well
    removed: Mapping[str, str] = getattr(cls, "REMOVED_KEYS", {})
    for key in data:
        if isinstance(key, str) and key in removed:
            failed = True
            _record(problems, ProfileError("%s is no longer a profile field" % key, _key_path(path, key), removed[key]))
        elif not isinstance(key, str) or key not in fields:
            failed = True
            misspelt.update(difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.6))
            _record(
                problems,
                ProfileError(
                    "unknown key %s" % shown(key),
                    path or None,
                    _did_you_mean(key if isinstance(key, str) else str(key), list(fields)),
                ),
            )
    values: Dict[str, Any] = {}
    for name, f in fields.items():
        where = "%s.%s" % (path, name) if path else name
        if name in data:
            try:
                values[name] = _convert(hints[name], data[name], where, f.metadata, problems)
            except ProfileError as exc:
                failed = True
                _record(problems, exc)
            except _Failed:
                failed = True
        elif f.metadata.get("required") and name not in misspelt:
            failed = True
            _record(
                problems,
                ProfileError(
                    "required key %r is missing" % name,
                    path or None,
                    "Add `%s:` (%s)." % (name, f.metadata.get("doc", "")),
                ),
            )
    if failed:
        raise _Failed()
    return cls(**values)


def _each(convert: Any, items: Sequence[Any], problems: List[ProfileError]) -> List[Any]:
    """``convert`` applied to every item; the problems of all items are recorded before failing."""
    out: List[Any] = []
    failed = False
    for item in items:
        try:
            out.append(convert(item))
        except ProfileError as exc:
            failed = True
            _record(problems, exc)
        except _Failed:
            failed = True
    if failed:
        raise _Failed()
    return out


def _convert(tp: Any, value: Any, where: str, meta: Mapping[str, Any], problems: List[ProfileError]) -> Any:
    inner, optional = unwrap_optional(tp)
    if value is None:
        if optional:
            return None
        raise ProfileError("must not be empty (expected %s)" % _type_name(tp), where, "Give a value or remove the key.")
    origin = typing.get_origin(inner)
    if dataclasses.is_dataclass(inner):
        return _bind(inner, value, where, problems)  # type: ignore[arg-type]
    if origin in (list, List):
        if not isinstance(value, list):
            raise ProfileError(
                "expected %s, found %s" % (_type_name(inner), _describe(value)),
                where,
                "Write a YAML list (`- item` lines or `[a, b]`).",
            )
        item_tp = typing.get_args(inner)[0]
        items = _each(
            lambda iv: _convert(item_tp, iv[1], "%s[%d]" % (where, iv[0]), meta, problems),
            list(enumerate(value)),
            problems,
        )
        min_items = meta.get("min_items")
        if min_items is not None and len(items) < min_items:
            raise ProfileError("needs at least %d item(s)" % min_items, where, "Add an entry.")
        return items
    if origin in (dict, Dict):
        if not isinstance(value, dict):
            raise ProfileError(
                "expected %s, found %s" % (_type_name(inner), _describe(value)),
                where,
                "Write a YAML mapping (`key: value`).",
            )
        key_tp, val_tp = typing.get_args(inner)
        pairs = _each(
            lambda kv: (
                _key(key_tp, kv[0], where, meta),
                _convert(val_tp, kv[1], _key_path(where, kv[0]), meta, problems),
            ),
            list(value.items()),
            problems,
        )
        return dict(pairs)
    return _scalar(inner, value, where, meta)


def _key(tp: Any, key: Any, where: str, meta: Mapping[str, Any]) -> Any:
    """A mapping key: one of a ``Literal``'s values, or a string (in ``key_format`` when given)."""
    at = "%s (key %s)" % (where, shown(key, 40))
    if is_literal(tp):
        return _scalar(tp, key, at, {})
    if not isinstance(key, str):
        raise ProfileError(
            "keys must be strings, found %s" % _describe(key),
            at,
            "Write the key as a string (quote it).",
        )
    return _scalar(str, key, at, {"format": meta.get("key_format")})


def _scalar(tp: Any, value: Any, where: str, meta: Mapping[str, Any]) -> Any:
    if is_literal(tp):
        return _choice(values(tp), value, where, meta)
    if tp is bool:
        if not isinstance(value, bool):
            raise ProfileError("expected a boolean, found %s" % _describe(value), where, "Write true or false.")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ProfileError("expected an integer, found %s" % _describe(value), where, "Write a whole number.")
        if not -INT_MAX - 1 <= value <= INT_MAX:
            raise ProfileError(
                "%s is too large (at most %d)" % (shown(value), INT_MAX),
                where,
                "Write a number in the documented range.",
            )
    elif tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProfileError("expected a number, found %s" % _describe(value), where, "Write a number.")
        try:
            value = float(value)
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):
            raise ProfileError("%s is not a finite number" % shown(value), where, "Write a finite number.")
    elif tp is str:
        value = _string(value, where, meta)
    return value


def _string(value: Any, where: str, meta: Mapping[str, Any]) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and not meta.get("version"):
        if not -INT_MAX - 1 <= value <= INT_MAX:
            raise ProfileError("%s is too large" % shown(value), where, "Write it as a quoted string.")
        value = str(value)
    elif isinstance(value, float) and not meta.get("version") and math.isfinite(value):
        value = str(value)
    if not isinstance(value, str):
        hint = "Write it as a string."
        if isinstance(value, bool):
            hint = 'YAML reads unquoted on/off/yes/no/true/false as a boolean; quote it, e.g. "%s".' % (
                "on" if value else "off"
            )
        if meta.get("version"):
            hint = 'Quote versions, e.g. "1.28" (unquoted 1.30 would be read as the number 1.3).'
        raise ProfileError("expected a string, found %s" % _describe(value), where, hint)
    control = (_CONTROL_MULTILINE if meta.get("multiline") else _CONTROL).search(value)
    if control is not None:
        raise ProfileError(
            "%s contains a control character (%s at position %d)"
            % (shown(value), shown(control.group(0))[1:-1], control.start()),
            where,
            "Remove it (in double-quoted YAML, escapes such as \\t or \\x1b produce control characters).",
        )
    bidi = _BIDI.search(value)
    if bidi is not None:
        raise ProfileError(
            "%s contains a bidirectional-text control character (U+%04X %s at position %d), which shows the "
            "text in another order than it is read"
            % (shown(value), ord(bidi.group(0)), unicodedata.name(bidi.group(0), "?"), bidi.start()),
            where,
            "Remove it: write the value in the order it is meant.",
        )
    if meta.get("version"):
        _check_version(value, where)
    fmt = meta.get("format")
    if fmt:
        problem = F.problem(fmt, value)
        if problem is not None:
            raise ProfileError(problem, where, "Write %s." % F.FORMATS[fmt].description)
    return value


def _check_version(value: str, where: str) -> None:
    fix = "Use the vendor's spelling, e.g. 7.3.0, 6.0.RC2, 8.0.RC2, 2.1.0.post8"
    if len(value) > VERSION_MAX:
        raise ProfileError("is %d characters long; a version is at most %d" % (len(value), VERSION_MAX), where, fix)
    if value != value.strip() or any(c.isspace() for c in value):
        raise ProfileError("%s contains white space" % shown(value), where, fix + ", without spaces")
    try:
        parse(value)
    except (VersionError, ValueError) as exc:
        raise ProfileError("%s is not a version" % shown(value), where, "%s (%s)." % (fix, exc)) from None


def _choice(choices: Sequence[Any], value: Any, where: str, meta: Mapping[str, Any]) -> Any:
    """A value of a ``Literal``: first of the choices' type (so ``on`` read as a boolean gets the
    quoting hint), then one of them."""
    value = _scalar(type(choices[0]), value, where, meta)
    if value not in choices:
        close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.5)
        hint = "Allowed: %s." % ", ".join(str(c) for c in choices)
        known = (meta.get("hints") or {}).get(str(value).strip().lower())
        if known:
            hint = "Did you mean %s? %s" % (known, hint)
        elif close:
            hint = "Did you mean %r? %s" % (close[0], hint)
        raise ProfileError("%s is not an allowed value" % shown(value), where, hint)
    return value


# --- JSON Schema ---------------------------------------------------------------------------------------

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def json_schema(cls: type, title: Optional[str] = None) -> Dict[str, Any]:
    schema = _object_schema(cls)
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    if title:
        schema["title"] = title
    return schema


def _object_schema(cls: type) -> Dict[str, Any]:
    hints = _hints(cls)
    props: Dict[str, Any] = {}
    required: List[str] = []
    for f in dataclasses.fields(cls):
        props[f.name] = _field_schema(hints[f.name], f)
        if f.metadata.get("required"):
            required.append(f.name)
    out: Dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": props}
    if cls.__doc__:
        out["description"] = " ".join(cls.__doc__.split())
    if required:
        out["required"] = required
    return out


def _field_schema(
    tp: Any,
    f: Optional[dataclasses.Field] = None,  # type: ignore[type-arg]
    meta: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The schema of a field (``f``), or of the items/values of one (``meta``: the field's)."""
    if meta is None:
        meta = f.metadata if f is not None else {}
    inner, optional = unwrap_optional(tp)
    origin = typing.get_origin(inner)
    if dataclasses.is_dataclass(inner):
        out = _object_schema(inner)  # type: ignore[arg-type]
    elif origin in (list, List):
        out = {"type": "array", "items": _field_schema(typing.get_args(inner)[0], meta=_item_meta(meta))}
        if meta.get("min_items") is not None:
            out["minItems"] = meta["min_items"]
    elif origin in (dict, Dict):
        key_tp, val_tp = typing.get_args(inner)
        out = {"type": "object", "additionalProperties": _field_schema(val_tp, meta=_item_meta(meta))}
        if is_literal(key_tp):
            out["propertyNames"] = {"enum": list(values(key_tp))}
        elif meta.get("key_format") and F.FORMATS[meta["key_format"]].pattern:
            out["propertyNames"] = {"pattern": F.FORMATS[meta["key_format"]].pattern}
    elif is_literal(inner):
        choices = values(inner)
        out = {"type": _JSON_TYPES[type(choices[0])], "enum": list(choices)}
    else:
        out = {"type": _JSON_TYPES[inner]}
        if inner is str and not meta.get("version"):
            # the loader reads a number written for a string as its text (_string): the schema takes it too
            out["type"] = ["string", "number"]
        if meta.get("minimum") is not None:
            out["minimum"] = meta["minimum"]
        if meta.get("maximum") is not None:
            out["maximum"] = meta["maximum"]
        if meta.get("version"):
            out["pattern"] = r"^[vV]?\d+(\.\d+)*([.\-_][A-Za-z]*\d*)*(\+\S+)?$"
            out["maxLength"] = VERSION_MAX
        fmt = F.FORMATS.get(meta.get("format") or "")
        if fmt is not None:
            if fmt.pattern:
                out["pattern"] = fmt.pattern
            if fmt.max_length:
                out["maxLength"] = fmt.max_length
    if f is not None:
        if meta.get("doc"):
            out["description"] = meta["doc"]
        default = field_default(f)
        if default is not dataclasses.MISSING and not dataclasses.is_dataclass(default):
            out["default"] = default
        if meta.get("example") is not None:
            out["examples"] = [meta["example"]]
    if optional:
        out = {"anyOf": [out, {"type": "null"}], **{k: v for k, v in out.items() if k in ("description",)}}
    return out


def _item_meta(meta: Mapping[str, Any]) -> Dict[str, Any]:
    """What of a field's metadata applies to each of its items or values."""
    return {k: meta.get(k) for k in ("format", "key_format", "version", "multiline")}


def field_default(f: dataclasses.Field) -> Any:  # type: ignore[type-arg]
    """The default of a dataclass field (from default or default_factory), or MISSING."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


# --- Markdown reference ---------------------------------------------------------------------------------


def markdown_reference(cls: type, prefix: str = "") -> List[str]:
    """Rows ``| key | type | default | meaning |`` for every field, depth first."""
    hints = _hints(cls)
    rows: List[str] = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        inner, _ = unwrap_optional(tp)
        key = prefix + f.name
        origin = typing.get_origin(inner)
        item = typing.get_args(inner)[0] if origin in (list, List) else None
        doc = f.metadata.get("doc", "")
        extras = []
        if is_literal(inner):
            extras.append("one of: " + ", ".join("`%s`" % c for c in values(inner)))
        lo, hi = f.metadata.get("minimum"), f.metadata.get("maximum")
        if lo is not None or hi is not None:
            extras.append("range %s to %s" % ("-inf" if lo is None else _num(lo), "inf" if hi is None else _num(hi)))
        if f.metadata.get("version"):
            extras.append("a version string")
        fmt = F.FORMATS.get(f.metadata.get("format") or "")
        if fmt is not None:
            extras.append(("each " if origin in (list, List, dict, Dict) else "") + fmt.description)
        key_fmt = F.FORMATS.get(f.metadata.get("key_format") or "")
        if key_fmt is not None:
            extras.append("keys: " + key_fmt.description)
        if f.metadata.get("required"):
            extras.append("**required**")
        default = field_default(f)
        if dataclasses.is_dataclass(inner) or (item is not None and dataclasses.is_dataclass(item)):
            default_text = "see below"
        elif default is dataclasses.MISSING:
            default_text = ""
        else:
            default_text = "`%s`" % _yaml_scalar(default)
        meaning = doc + ("" if not extras else " (%s)" % "; ".join(extras))
        rows.append("| `%s` | %s | %s | %s |" % (key, _type_name(tp), default_text, meaning.replace("|", "\\|")))
        if dataclasses.is_dataclass(inner):
            rows.extend(markdown_reference(inner, key + "."))  # type: ignore[arg-type]
        elif item is not None and dataclasses.is_dataclass(item):
            rows.extend(markdown_reference(item, key + "[]."))  # type: ignore[arg-type]
    return rows


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def _yaml_scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, dict)) and not v:
        return "[]" if isinstance(v, list) else "{}"
    return str(v)
