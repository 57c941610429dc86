"""Print gnnrepro's import graph between its parts and check that imports only go down.

A part is a subpackage (gnnrepro.sampling, ...) or a top-level module (gnnrepro.graph, ...).
Every `import` counts, also one inside a function. Imports must follow LAYERS, the data flow
of the architecture (docs/layout.md): a part may import its own layer's modules or lower
layers only, and the part graph must have no cycle. Exit status 1 if either rule is broken.

    python tools/import_graph.py [PACKAGE_DIR]      # default: the gnnrepro/ beside tools/
"""
from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

#: Lowest first. A part imports only parts of its own or a lower layer.
LAYERS: list[set[str]] = [
    {"_C", "_ops", "_meta", "checks", "errors", "atomic", "env", "graph", "typed_graph",
     "supervisor", "pinning",
     "progress", "feature_file", "eval_subset"},
    {"datasets"},
    {"peers"},
    {"sampling"},
    {"features"},
    {"config"},
    {"pipeline"},
    {"baselines"},
    {"interop"},
    {"models"},
    {"training"},
    {"linkpred"},
    {"drop_in", "drop_in_link", "drop_in_hetero"},
    {"partition"},
    {"distributed"},
    {"bench"},
    {"experiments"},
    {"plots"},
    {"__main__", "__init__", "cli_parser"},
]


def part_of(module: str) -> str | None:
    """gnnrepro.x.y -> 'x'; None for modules outside gnnrepro."""
    names = module.split(".")
    if names[0] != "gnnrepro":
        return None
    return names[1] if len(names) > 1 else "__init__"


def module_name(path: Path, package: Path) -> str:
    rel = path.relative_to(package.parent).with_suffix("")
    names = list(rel.parts)
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names)


def imports_of(path: Path, module: str, tree: ast.AST | None = None) -> set[str]:
    """Absolute names of the gnnrepro modules `path` imports (relative imports resolved); `tree`
    is its parsed source where the caller has it (read from elsewhere than the disk)."""
    if tree is None:
        tree = ast.parse(path.read_text(), filename=str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                if path.name != "__init__.py":
                    anchor = anchor[:-1]
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base != "gnnrepro":  # `from gnnrepro import x` imports x, not the package
                out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in out if name.startswith("gnnrepro")}


def part_graph(package: Path) -> dict[str, set[str]]:
    """part -> the other parts it imports."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, package)
        here = part_of(module)
        graph[here]
        for name in imports_of(path, module):
            there = part_of(name)
            exists = there is not None and ((package / there).is_dir()
                                            or (package / f"{there}.py").exists()
                                            or there == "_C")
            if exists and there != here:
                graph[here].add(there)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one part (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(part: str) -> int | None:
    return next((i for i, parts in enumerate(LAYERS) if part in parts), None)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'a -> b' for every import of a part from a higher layer (or from an unlisted part)."""
    bad = []
    for here, theres in sorted(graph.items()):
        for there in sorted(theres):
            lh, lt = layer(here), layer(there)
            if lh is None or lt is None or lt > lh:
                bad.append(f"{here} (layer {lh}) -> {there} (layer {lt})")
    return bad


def main(argv: list[str]) -> int:
    package = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "gnnrepro"
    graph = part_graph(package)
    for here in sorted(graph, key=lambda p: (layer(p) if layer(p) is not None else 99, p)):
        print(f"{here:>12} -> {', '.join(sorted(graph[here])) or '-'}")
    found, bad = cycles(graph), upward_imports(graph)
    print(f"cycles: {found or 'none'}")
    print(f"imports against the layers: {bad or 'none'}")
    return 1 if found or bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
