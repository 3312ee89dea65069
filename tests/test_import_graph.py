"""The house's floors, and no import circle: every import of resumable/ and resumable_pulumi/ (module
level, inside functions, under TYPE_CHECKING) is read from the source with ast.

- **No circle.** A circle means two modules each need the other to be defined first; it works only as
  long as nobody reorders an import, and it hides which floor a module belongs to (the envtable <->
  facts circle of issue 17 was one).
- **Imports run down the floors** (:data:`FLOORS`, bottom first). A floor holds rooms; a module imports
  its own room or a lower floor, never a room beside it on its floor (the in-container runtime and
  the image build do not reach into each other) and never a higher floor: that
  is a *back arrow* (plan/nodes.py reaching up into manifests/ for node labels was the last, issue 32).
  A module in no room fails too: a new module is given its floor when it is written.
- **What the Pulumi program may not import** (:data:`FORBIDDEN`): the in-container package.

``python tests/test_import_graph.py`` prints the floors, their rooms and modules, and every back arrow.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from conftest import ROOT

PACKAGE = ROOT / "resumable"
PACKAGES = (PACKAGE, ROOT / "resumable_pulumi")

#: the floors, bottom first: (floor, its rooms: (room, the modules it holds; ``pkg.*``: a package and
#: everything in it))
FLOORS: Sequence[Tuple[str, Sequence[Tuple[str, Sequence[str]]]]] = (
    (
        "foundation",
        (
            (
                "foundation",
                (
                    "resumable",
                    "resumable.errors",
                    "resumable.constants",
                    "resumable.choices",
                    "resumable.versions",
                    "resumable.sources",
                    "resumable.yamlio",
                    "resumable.jsonio",
                    "resumable.fileio",
                    "resumable.formats",
                    "resumable.safeyaml",
                    "resumable.releases",
                    "resumable.traits",
                    "resumable.wheelfiles",
                    "resumable.hardware",
                    "resumable.binding",
                    "resumable.options",
                    "resumable.nodeversions",
                    "resumable.kubenames",
                ),
            ),
        ),
    ),
    (
        "profile",
        (
            (
                "profile",
                (
                    "resumable.profile",
                    "resumable.envowners",
                    "resumable.facts",
                    "resumable.envderived",
                    "resumable.operatorenv",
                ),
            ),
        ),
    ),
    ("rules", (("rules", ("resumable.rules.*",)),)),
    ("plan", (("plan", ("resumable.plan.*",)),)),
    # the manifest builders sit below the gate: it builds a plan's objects to check them as the API
    # server will (issue 35, resumable/manifests/accepted.py); the in-container commands and the image
    # build read the plan the gate gives
    ("builders", (("manifests", ("resumable.manifests.*",)),)),
    ("gate", (("api", ("resumable.api",)),)),
    (
        "consumers",
        (
            ("runtime", ("resumable.runtime.*",)),
            ("image", ("resumable.image.*",)),
        ),
    ),
    ("docs", (("docs", ("resumable.deploydoc", "resumable.docsgen", "resumable.initprofile")),)),
    ("cli", (("cli", ("resumable.cli", "resumable.__main__")),)),
    ("pulumi", (("pulumi", ("resumable_pulumi.*",)),)),
)

#: (room, room it may never import, why)
FORBIDDEN = (("pulumi", "runtime", "the Pulumi program runs outside the training container"),)


def module_names() -> Dict[str, Path]:
    out: Dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
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


def _holds(entry: str, module: str) -> bool:
    """``resumable.plan.*`` holds the package and every module in it; ``resumable.api`` itself only."""
    if entry.endswith(".*"):
        return module == entry[:-2] or module.startswith(entry[:-1])
    return module == entry


def room_of(module: str) -> Optional[Tuple[int, str]]:
    """The floor (its index) and room of ``module``."""
    for index, (_, rooms) in enumerate(FLOORS):
        for room, entries in rooms:
            if any(_holds(entry, module) for entry in entries):
                return index, room
    return None


def back_arrows(graph: Dict[str, Set[str]]) -> List[str]:
    """Every import that does not run down the floors (or stay in its room), every forbidden one, and
    every module in no room."""
    out = []
    for module in sorted(graph):
        here = room_of(module)
        if here is None:
            out.append("%s is in no room (give it a floor in FLOORS)" % module)
            continue
        for target in sorted(graph[module]):
            there = room_of(target)
            if there is None:
                continue  # reported as a module of its own
            if there[1] == here[1]:
                continue
            if there[0] == here[0]:
                out.append("%s -> %s (a room beside it: %s -> %s)" % (module, target, here[1], there[1]))
            elif there[0] > here[0]:
                out.append("%s -> %s (up: %s -> %s)" % (module, target, FLOORS[here[0]][0], FLOORS[there[0]][0]))
            for room, never, why in FORBIDDEN:
                if here[1] == room and there[1] == never:
                    out.append("%s -> %s (%s)" % (module, target, why))
    return out


def report(graph: Dict[str, Set[str]]) -> str:
    """The floors from the top, each room with its modules, then the back arrows."""
    lines = []
    for index in reversed(range(len(FLOORS))):
        name, rooms = FLOORS[index]
        lines.append("floor %d %s" % (index, name))
        for room, _ in rooms:
            members = sorted(m for m in graph if (room_of(m) or (-1, ""))[1] == room)
            lines.append(
                "  %-10s %d module%s: %s" % (room, len(members), "" if len(members) == 1 else "s", ", ".join(members))
            )
    arrows = back_arrows(graph)
    lines.append("back arrows: %d" % len(arrows))
    lines.extend("  " + a for a in arrows)
    return "\n".join(lines) + "\n"


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


def test_imports_run_down_the_floors() -> None:
    arrows = back_arrows(import_graph())
    assert arrows == [], "imports against the floors (tests/test_import_graph.py FLOORS):\n" + "\n".join(arrows)


def test_the_floor_check_finds_a_back_arrow_a_side_arrow_and_a_homeless_module() -> None:
    """The check itself, on made-up graphs: a plan module reaching up into the manifests (the arrow of
    issue 32), the runtime reaching into the image room beside it, the Pulumi program into the runtime,
    and a module nobody placed; a downward import and one inside a room are fine."""
    graph = {
        "resumable.plan.nodes": {"resumable.manifests.device_plugin", "resumable.traits", "resumable.plan.model"},
        "resumable.runtime.launch": {"resumable.image.context", "resumable.api"},
        "resumable_pulumi.image": {"resumable.runtime.context", "resumable.image.context"},
        "resumable.newroom": set(),
    }
    assert back_arrows(graph) == [
        "resumable.newroom is in no room (give it a floor in FLOORS)",
        "resumable.plan.nodes -> resumable.manifests.device_plugin (up: plan -> builders)",
        "resumable.runtime.launch -> resumable.image.context (a room beside it: runtime -> image)",
        "resumable_pulumi.image -> resumable.runtime.context (the Pulumi program runs outside the training container)",
    ]


def test_the_image_build_and_the_node_labels_sit_where_they_belong() -> None:
    """Issue 32: the image build is a room of its own, which the Pulumi program imports without the
    in-container package; the plan's node labels come from below (resumable.traits), not the manifests."""
    graph = import_graph()
    assert "resumable.image.context" in graph["resumable_pulumi.image"]
    assert not any(t.startswith("resumable.runtime") for t in graph["resumable_pulumi.image"])
    assert not any(t.startswith("resumable.runtime") for t in graph["resumable.image.context"])
    assert "resumable.traits" in graph["resumable.plan.nodes"]
    assert "resumable.traits" in graph["resumable.manifests.device_plugin"]


def test_the_printed_graph_as_the_readme_runs_it() -> None:
    """``python tests/test_import_graph.py`` (README, strategy module): the floors from the top, every room
    with its modules, and no back arrow (exit 0)."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "tests/test_import_graph.py"], cwd=str(ROOT), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "floor %d pulumi" % (len(FLOORS) - 1) and lines[-1] == "back arrows: 0"
    assert any(line.split()[:1] == ["image"] and "resumable.image.context" in line for line in lines)


if __name__ == "__main__":
    sys.stdout.write(report(import_graph()))
    sys.exit(1 if back_arrows(import_graph()) else 0)
