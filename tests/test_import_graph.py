"""No import cycles among the modules of fpir, pitchfork, synth and benchmarks.

The graph is built from the source with `ast` (nothing is imported): module M has an edge to module N
when M's code imports N or a name defined in N, wherever the import statement is, at module level or
inside a function. A function-level ("lazy") import is still a dependency of the code that runs it, so
it counts: hiding an import in a function does not break a cycle here, moving the shared piece down a
layer does.

Imports under `if TYPE_CHECKING:` do not count. They name a type for annotations only and never run,
so they cannot create an import-order dependency; and a record that carries behaviour of a higher layer
(`pitchfork.api.CompiledPipeline`, whose methods call the AOT layer) must still be nameable in the
annotations of the modules it calls into. Everything that runs is layered strictly.

A relative import (`from .x import y`) is resolved against the importing module's package. An import of
a package's name (`from pitchfork.frontend import ir`) is an edge to the submodule when one exists by
that name, else to the package's `__init__`. Implicit imports of parent packages (importing
`pitchfork.frontend.ir` runs `pitchfork/__init__.py` first) are not edges: every `__init__` here is a
docstring or re-exports of its own submodules.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fpir", "pitchfork", "synth", "benchmarks")


def module_files() -> dict[str, Path]:
    """Dotted module name -> source file, for every .py file of the packages."""
    mods: dict[str, Path] = {}
    for top in PACKAGES:
        for p in sorted((ROOT / top).rglob("*.py")):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = p
    return mods


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes inside `if TYPE_CHECKING:` blocks."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            t = node.test
            name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else None
            if name == "TYPE_CHECKING":
                out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first such import}."""
    mods = module_files()

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, int]] = {}
    for m, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_checking_only(tree)
        edges: dict[str, int] = {}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [owner(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    pkg = m.split(".") if path.name == "__init__.py" else m.split(".")[:-1]
                    pkg = pkg[: len(pkg) - node.level + 1]
                    base = ".".join(pkg + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [owner(f"{base}.{a.name}") if f"{base}.{a.name}" in mods else owner(base)
                           for a in node.names]
            for t in targets:
                if t is not None and t != m:
                    edges.setdefault(t, node.lineno)
        graph[m] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, list(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, todo = work[-1]
            if todo:
                w = todo.pop()
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, list(graph[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def describe(comp: list[str], graph: dict[str, dict[str, int]]) -> str:
    inside = set(comp)
    edges = [f"{m}:{line} -> {t}" for m in comp for t, line in sorted(graph[m].items()) if t in inside]
    return f"cycle among {', '.join(comp)}:\n    " + "\n    ".join(edges)


def test_graph_sees_the_packages() -> None:
    graph = import_graph()
    assert "pitchfork.api" in graph and "fpir.ops" in graph
    assert "fpir.term" in graph["fpir.ops"]  # a module-level import is an edge


def test_cycle_finder_names_a_cycle() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert "b:2 -> c" in describe(["a", "b", "c"], graph)


def test_no_import_cycles() -> None:
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(describe(c, graph) for c in found)
