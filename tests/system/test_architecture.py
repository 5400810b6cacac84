"""The package's shape: no import circle between modules, every import points to the same or a lower layer,
and importing the package loads nothing heavy. Imports inside functions count: a lazy import is still an arrow."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import focus_eval

PACKAGE = Path(focus_eval.__file__).resolve().parent

# Lowest first. A module may import from its own top-level package or module, or from a lower layer.
LAYERS = [
    {"errors", "registry", "resources", "digests", "files", "version", "redact", "progress", "tables", "validators"},
    {"results", "options"},
    {"metrics"},
    {"scoring", "group_scores", "analysis"},
    {"data", "presets", "tiny"},
    {"synth", "task", "adapters"},
    {"runner", "verification"},
    {"finetune", "leaderboard"},
    {"api", "bench", "grid", "notebook"},
    {"commands"},
    {"cli", "__main__", "focus_eval"},
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def module_files() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """focus_eval modules that ``name`` imports anywhere in its file (function bodies included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names} & set(modules)
            found.update(submodules or {base})
    resolved = set()
    for target in found:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            resolved.add(target)
    return resolved


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "focus_eval"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_every_top_level_module_has_a_layer():
    assert sorted({top(m) for m in module_files()} - set(RANK)) == []


def test_no_import_circle():
    assert cycles(import_graph()) == []


def test_imports_point_down_the_layers():
    upward = defaultdict(set)
    for module, deps in import_graph().items():
        for dep in deps:
            if top(dep) != top(module) and RANK[top(dep)] > RANK[top(module)]:
                upward[module].add(dep)
    assert dict(upward) == {}


def test_the_checks_see_a_planted_circle_and_an_upward_import():
    graph = {"focus_eval.results.a": {"focus_eval.runner.b"}, "focus_eval.runner.b": {"focus_eval.results.a"}}
    assert cycles(graph) == [["focus_eval.results.a", "focus_eval.runner.b"]]
    assert RANK[top("focus_eval.runner.b")] > RANK[top("focus_eval.results.a")]


def test_importing_the_package_loads_nothing_heavy():
    code = ("import sys, focus_eval, focus_eval.cli, focus_eval.registry; "
            "print(sorted(m for m in ('torch', 'transformers', 'numpy', 'pandas', 'PIL', 'timm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
