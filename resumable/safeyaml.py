"""A bounded YAML loader for files a user hands us (profiles, release YAMLs given as CRD sources).

PyYAML's ``safe_load`` builds no arbitrary objects, but it still lets a small file do harm:
a list nested a thousand deep overflows the recursion limit; an alias bomb (a few lines whose
aliases refer to aliases) is cheap to load but expands to billions of nodes in whatever walks
or dumps it; a 5,000-digit integer stops ``int()`` (Python 3.11 caps conversions at 4,300
digits); ``!!int abc`` or ``!!bool maybe`` raise ValueError/KeyError instead of a YAML error;
and a second ``jobs:`` key silently replaces the first. :class:`BoundedLoader` refuses each of
these as a YAML error with the line and column, so the caller reports one paragraph (exit 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional, Type

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from .errors import ResumableError, shown
from .yamlio import have_libyaml


class Limits(NamedTuple):
    """Bounds for one kind of document."""

    #: deepest nesting of sequences and mappings, aliases followed
    depth: int
    #: nodes that aliases may add when expanded (a document without aliases adds none)
    alias_nodes: int
    #: characters of an integer scalar (int64 needs 20)
    int_chars: int = 100


#: A profile is a few levels deep; anchors and merge keys for shared job settings stay possible.
PROFILE = Limits(depth=32, alias_nodes=10_000)
#: Release YAMLs: CRD schemas nest about 35 levels (PodTemplateSpec inside a job spec).
MANIFEST = Limits(depth=100, alias_nodes=100_000)

_MERGE = "tag:yaml.org,2002:merge"


if TYPE_CHECKING:
    _Base = yaml.SafeLoader
else:
    _Base = object


class _Checks(_Base):
    """:class:`Limits`, duplicate-key detection and errors for bad tags, over a YAML loader."""

    limits = PROFILE
    _depth = 0

    # --- composition: depth and alias expansion ----------------------------------------------------

    def compose_node(self, parent: Optional[Node], index: Any) -> Optional[Node]:
        self._depth += 1
        try:
            if self._depth > self.limits.depth:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    "the document nests deeper than %d levels" % self.limits.depth,
                    self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )
            node: Optional[Node] = super().compose_node(parent, index)
            return node
        finally:
            self._depth -= 1

    def compose_document(self) -> Optional[Node]:
        node: Optional[Node] = super().compose_document()
        if node is not None:
            self._check_expansion(node)
        return node

    def _check_expansion(self, root: Node) -> None:
        """Sizes and depths with aliases followed, computed once per distinct node (iteratively:
        the graph may be deeper than Python's recursion limit once aliases are followed)."""
        size: Dict[int, int] = {}
        depth: Dict[int, int] = {}
        on_path: Dict[int, bool] = {}
        stack: List[Any] = [(root, False)]
        while stack:
            node, done = stack.pop()
            key = id(node)
            children = _children(node)
            if done:
                size[key] = 1 + sum(size[id(c)] for c in children)
                depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
                on_path[key] = False
                continue
            if key in size:
                continue
            if on_path.get(key):
                raise ConstructorError(
                    None, None, "an alias refers to a node that contains it (a recursive structure)", node.start_mark
                )
            on_path[key] = True
            stack.append((node, True))
            for child in children:
                if on_path.get(id(child)):
                    raise ConstructorError(
                        None,
                        None,
                        "an alias refers to a node that contains it (a recursive structure)",
                        child.start_mark,
                    )
                if id(child) not in size:
                    stack.append((child, False))
        distinct = len(size)
        extra = size[id(root)] - distinct
        if extra > self.limits.alias_nodes:
            raise ConstructorError(
                None,
                None,
                "aliases expand the document by %d nodes (at most %d): an alias bomb?"
                % (extra, self.limits.alias_nodes),
                root.start_mark,
            )
        if depth[id(root)] > self.limits.depth:
            raise ConstructorError(
                None,
                None,
                "with its aliases followed the document nests deeper than %d levels" % self.limits.depth,
                root.start_mark,
            )

    # --- construction: duplicate keys, scalars that do not fit their tag ------------------------------

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> Dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: Dict[Any, Node] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue  # PyYAML reports the unhashable key itself
                if key in seen:
                    raise ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        "found duplicate key %s (first at line %d); YAML would keep only the last one"
                        % (shown(key), seen[key].start_mark.line + 1),
                        key_node.start_mark,
                    )
                seen[key] = key_node
        mapping: Dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping

    def construct_yaml_int(self, node: ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        if len(text) > self.limits.int_chars:
            raise ConstructorError(
                None,
                None,
                "an integer of %d characters (at most %d)" % (len(text), self.limits.int_chars),
                node.start_mark,
            )
        try:
            value: int = super().construct_yaml_int(node)
        except (ValueError, TypeError, KeyError, IndexError):
            raise ConstructorError(None, None, "%s is not an integer" % shown(text), node.start_mark) from None
        return value

    def construct_yaml_float(self, node: ScalarNode) -> float:
        try:
            value: float = super().construct_yaml_float(node)
        except (ValueError, TypeError, KeyError, IndexError, OverflowError):
            text = str(self.construct_scalar(node))
            raise ConstructorError(None, None, "%s is not a number" % shown(text), node.start_mark) from None
        return value

    def construct_yaml_bool(self, node: ScalarNode) -> bool:
        try:
            value: bool = super().construct_yaml_bool(node)
        except (KeyError, AttributeError, TypeError):
            text = str(self.construct_scalar(node))
            raise ConstructorError(
                None, None, "%s is not a boolean (write true or false)" % shown(text), node.start_mark
            ) from None
        return value

    def construct_yaml_timestamp(self, node: ScalarNode) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
            text = str(self.construct_scalar(node))
            raise ConstructorError(None, None, "%s is not a timestamp" % shown(text), node.start_mark) from None


class BoundedLoader(_Checks, yaml.SafeLoader):
    """``yaml.SafeLoader`` with the checks of :class:`_Checks`.

    :func:`load` and :func:`load_all` use the same checks over libyaml's parser when PyYAML has it
    (:func:`_c_loader`): the C code only scans and parses into events; composing nodes (the depth
    limit), the alias check and construction stay in Python."""


BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_yaml_int)
BoundedLoader.add_constructor("tag:yaml.org,2002:float", BoundedLoader.construct_yaml_float)
BoundedLoader.add_constructor("tag:yaml.org,2002:bool", BoundedLoader.construct_yaml_bool)
BoundedLoader.add_constructor("tag:yaml.org,2002:timestamp", BoundedLoader.construct_yaml_timestamp)


class _ManifestLoader(BoundedLoader):
    limits = MANIFEST


_CParser: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None)


def _c_loader(base: Type[BoundedLoader]) -> Optional[Type[BoundedLoader]]:
    """``base``'s checks over libyaml's parser: Python's Composer and constructors come first in
    the method order, so only the event methods (check_event, peek_event, get_event) are libyaml's."""
    if _CParser is None:
        return None

    def init(self: Any, stream: Any) -> None:
        _CParser.__init__(self, stream)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        Composer.__init__(self)

    members = {"__init__": init, "limits": base.limits, "yaml_constructors": BoundedLoader.yaml_constructors}
    cls: Type[BoundedLoader] = type(
        "C" + base.__name__, (_Checks, Composer, SafeConstructor, Resolver, _CParser), members
    )
    return cls


_C_LOADERS: Dict[Type[BoundedLoader], Optional[Type[BoundedLoader]]] = {}


def _children(node: Node) -> List[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _loader(limits: Limits) -> Type[BoundedLoader]:
    if limits == PROFILE:
        base: Type[BoundedLoader] = BoundedLoader
    elif limits == MANIFEST:
        base = _ManifestLoader
    else:
        base = type("Loader", (BoundedLoader,), {"limits": limits})
    if not have_libyaml():
        return base
    if base not in _C_LOADERS:
        _C_LOADERS[base] = _c_loader(base)
    return _C_LOADERS[base] or base


def _error(exc: BaseException, text: str, source: str, error: Type[ResumableError], fix: str) -> ResumableError:
    if isinstance(exc, RecursionError):
        return error("is nested too deeply to read", source, fix)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        where = "%s line %d column %d" % (source, mark.line + 1, mark.column + 1)
    elif isinstance(exc, yaml.reader.ReaderError):
        before = text[: exc.position]
        where = "%s line %d column %d" % (source, before.count("\n") + 1, len(before) - before.rfind("\n"))
    else:
        where = source
    if isinstance(exc, yaml.reader.ReaderError):
        problem = "unacceptable character #x%04x: control characters are not allowed" % (
            exc.character if isinstance(exc.character, int) else ord(exc.character)
        )
    else:
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
    return error("is not valid YAML (%s)" % problem, where, fix)


def load(text: str, source: str, limits: Limits, error: Type[ResumableError], fix: str) -> Any:
    """The single document in ``text``; any problem raises ``error`` naming ``source``."""
    loader: Optional[BoundedLoader] = None
    try:
        loader = _loader(limits)(text)
        return loader.get_single_data()
    except (yaml.YAMLError, RecursionError) as exc:
        raise _error(exc, text, source, error, fix) from None
    finally:
        if loader is not None:
            loader.dispose()


def load_all(text: str, source: str, limits: Limits, error: Type[ResumableError], fix: str) -> List[Any]:
    """Every document in ``text`` (empty ones as None); any problem raises ``error`` naming ``source``."""
    loader: Optional[BoundedLoader] = None
    docs: List[Any] = []
    try:
        loader = _loader(limits)(text)
        while loader.check_data():  # type: ignore[no-untyped-call]
            docs.append(loader.get_data())
    except (yaml.YAMLError, RecursionError) as exc:
        raise _error(exc, text, source, error, fix) from None
    finally:
        if loader is not None:
            loader.dispose()
    return docs
