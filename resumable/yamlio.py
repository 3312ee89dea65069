"""YAML output, and the fast loader underneath :mod:`resumable.safeyaml`: libyaml when PyYAML was
built with it, PyYAML's pure-Python classes otherwise, the same bytes either way.

Rendering a few hundred jobs spent 85% of its time in PyYAML's pure-Python emitter (issue 16);
libyaml's emitter (``yaml.CSafeDumper``) and parser (``yaml.CSafeLoader``) do the same work in C.
PyYAML ships wheels with libyaml for the common platforms but builds without it elsewhere, so
every caller goes through this module and never names a C class. The output options here
(block style, no aliases, literal blocks for multi-line strings, width 110) are ones both emitters
write identically; tests/plan/test_yamlio.py renders the whole stack with both and compares the bytes.
Set ``RESUMABLE_PURE_YAML=1`` to force the pure-Python classes (tests, benchmarks).
"""

from __future__ import annotations

import io
import os
import re
from typing import Any, Dict, Iterable, Tuple, Type

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

#: Environment variable that forces PyYAML's pure-Python loader and emitter.
ENV_PURE = "RESUMABLE_PURE_YAML"


def have_libyaml() -> bool:
    """Whether PyYAML's C classes are usable here (and not switched off by RESUMABLE_PURE_YAML)."""
    return bool(getattr(yaml, "__with_libyaml__", False)) and not os.environ.get(ENV_PURE)


def backend() -> str:
    return "libyaml (C)" if have_libyaml() else "pure Python"


def _dumper_base() -> Type[Any]:
    return yaml.CSafeDumper if have_libyaml() else yaml.SafeDumper


def _str(dumper: Any, value: str) -> Any:
    if _risky(value):
        dumper.fallback = True
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _no_aliases(self: Any, data: Any) -> bool:
    return True


_RESOLVED: Dict[Tuple[str, Any], str] = {}


def _resolve(self: Any, kind: Any, value: Any, implicit: Any) -> str:
    """Resolver.resolve, remembered: the emitter asks twice per scalar, and manifests repeat the
    same keys and values thousands of times."""
    if kind is not ScalarNode:
        return Resolver.resolve(self, kind, value, implicit)  # type: ignore[no-untyped-call,no-any-return]
    key = (value, implicit)
    tag = _RESOLVED.get(key)
    if tag is None:
        tag = str(Resolver.resolve(self, kind, value, implicit))  # type: ignore[no-untyped-call]
        if len(_RESOLVED) < 65536:
            _RESOLVED[key] = tag
    return tag


_DUMPERS: Dict[Any, Any] = {}


def dumper(pure: bool = False) -> Any:
    """The manifest dumper: plain YAML for reviews, no anchors or aliases even where builders
    share a sub-structure, multi-line strings as literal blocks."""
    base = yaml.SafeDumper if pure else _dumper_base()
    cls: Any = _DUMPERS.get(base)
    if cls is None:
        cls = type("ManifestDumper", (base,), {"ignore_aliases": _no_aliases, "resolve": _resolve})
        cls.add_representer(str, _str)
        _DUMPERS[base] = cls
    return cls


def _risky(value: str) -> bool:
    """Whether the two emitters might lay ``value`` out differently: they agree on plain,
    single-quoted and literal-block scalars but fold long double-quoted ones at different places.
    A string gets double quotes when it holds a tab or another non-printable character, or when it
    spans lines that a literal block cannot hold (white space before a line break or at the end),
    or ends with more than one line break;
    such a string is written by the pure-Python emitter (rare: the builders write none)."""
    if not _PRINTABLE.fullmatch(value):
        return True
    if "\n" not in value:
        return False
    # A block that keeps its final line breaks (``|+``) ends the document with ``...`` in libyaml only.
    keep = value.endswith("\n") and (len(value) == 1 or value[-2] in _BREAKS)
    return keep or " \n" in value or value.endswith(" ")


_BREAKS = "\n\x85\u2028\u2029"


#: Characters both emitters write as they are (YAML 1.1 printable, without tab and the line breaks
#: other than \\n).
_PRINTABLE = re.compile("[\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*")


_STR, _INT, _BOOL, _NULL, _FLOAT = (
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:float",
)
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


def _node(d: Any, data: Any) -> Node:
    """The node SafeRepresenter (with the representers above) would build for manifest data, built
    directly: the generic representer's type dispatch was a third of a large render."""
    kind = type(data)
    if kind is str:
        return _str(d, data)  # type: ignore[no-any-return]
    if kind is dict:
        return MappingNode(_MAP, [(_node(d, k), _node(d, v)) for k, v in data.items()], flow_style=False)
    if kind is list:
        return SequenceNode(_SEQ, [_node(d, item) for item in data], flow_style=False)
    if kind is bool:
        return ScalarNode(_BOOL, "true" if data else "false")
    if kind is int:
        return ScalarNode(_INT, str(data))
    if data is None:
        return ScalarNode(_NULL, "null")
    return d.represent_data(data)  # type: ignore[no-any-return]  # floats and anything rarer


def dump(obj: Any, pure: bool = False) -> str:
    """One manifest as YAML text, the same bytes from either emitter."""
    stream = io.StringIO()
    d = dumper(pure)(stream, default_flow_style=False, sort_keys=False, width=110, allow_unicode=True)
    try:
        d.open()
        d.serialize(_node(d, obj))
        d.close()
    finally:
        d.dispose()
    if not pure and getattr(d, "fallback", False):
        return dump(obj, pure=True)
    return stream.getvalue()


def dump_stream(objects: Iterable[Any], pure: bool = False) -> str:
    """Several manifests as one multi-document stream (``---`` before each), for ``kubectl apply -f -``."""
    return "".join("---\n" + dump(obj, pure) for obj in objects)
