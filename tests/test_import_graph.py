"""No import circle in resumable/: every import (module level, inside functions, under
TYPE_CHECKING) is read from the source with ast and the graph is searched for cycles.

A circle means two modules each need the other to be defined first; it works only as long as
nobody reorders an import, and it hides which floor a module belongs to (the envtable <-> facts
circle of issue 17 was one)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

from conftest import ROOT

PACKAGE = ROOT / "resumable"


def module_names() -> Dict[str, Path]:
    out: Dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports_of(name: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    """The modules of the package ``name`` imports anywhere in its file. ``from . import x`` needs
    the submodule x when there is one, else the package itself; the parent package every submodule
    import brings in implicitly is not counted (Python initialises it first, whatever it imports)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                sub = "%s.%s" % (prefix, alias.name)
                target = sub if sub in modules else prefix
                if target in modules:
                    found.add(target)
    found.discard(name)
    return found


def import_graph() -> Dict[str, Set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_walker_sees_function_level_imports_and_finds_a_circle() -> None:
    """The search itself: a circle closed by an import inside a function is found, a chain is not."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    modules = module_names()
    # torchrun_patch imports the process table at module level, the commands module the supervisor
    # inside a function: both are edges of the graph
    assert "resumable.runtime.proctable" in imports_of(
        "resumable.runtime.torchrun_patch", modules["resumable.runtime.torchrun_patch"], modules
    )
    assert "resumable.runtime.supervisor" in imports_of(
        "resumable.runtime.commands", modules["resumable.runtime.commands"], modules
    )
    assert imports_of("resumable.facts", modules["resumable.facts"], modules) >= {
        "resumable.envowners",
        "resumable.releases",
        "resumable.constants",
    }


def test_no_import_circle_in_resumable() -> None:
    found = cycles(import_graph())
    assert found == [], "import circles in resumable/: %s" % "; ".join(" <-> ".join(c) for c in found)


def test_the_env_floors_sit_on_either_side_of_the_facts() -> None:
    """envowners (lifting env values into fields) comes before the facts, envderived after."""
    graph = import_graph()
    assert "resumable.facts" in graph["resumable.envderived"]
    assert "resumable.envowners" in graph["resumable.facts"]
    assert "resumable.facts" not in graph["resumable.envowners"]
