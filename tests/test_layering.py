"""The architecture's rules, checked on the source so they stay true.

Imports flow one way: IR and catalogs -> templates -> hardware cost models -> mappers -> hardware
models -> registry -> run and output modules -> command lines. Every import counts, those inside
functions too: no project module is imported inside a function (only heavy third-party ones may be
deferred), no module imports a ``_private`` name of another, no import circle, families register only
in dse/registry.py, and no source file in the rooms grows past 650 lines.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("dse", "templates", "mappers", "hwmodels", "surrogates")
MAX_LINES = 650

# (pattern on the dotted module name, layer); the first match wins. A module may import its own
# layer or any lower one, never a higher one.
LAYERS: list[tuple[str, int]] = [
    (r"(dse|templates|mappers|hwmodels|surrogates)$", 0),  # package markers
    (r"dse\.(errors|files|graph|workload)$", 0),
    (r"dse\.(zoo|importers)(\..*)?$", 0),
    (r"hwmodels\.catalogs(\..*)?$", 0),
    (r"templates\..*", 1),
    (r"hwmodels\.base$", 4),
    (r"hwmodels\.\w+\.(model|calibrate)$", 4),
    (r"hwmodels\..*", 2),  # cost models: what mappers query
    (r"mappers\..*", 3),
    (r"dse\.(registry|evaluate)$", 5),
    (r"(dse|surrogates)\.cli$", 7),
    (r"(dse|surrogates)\..*", 6),  # spec, space, search, store, explorer, outputs, surrogates
]
LAYER_NAMES = {
    0: "IR and catalogs",
    1: "templates",
    2: "hardware cost models",
    3: "mappers",
    4: "hardware models",
    5: "registry",
    6: "run and output modules",
    7: "command lines",
}


def layer_of(module: str) -> int:
    for pattern, layer in LAYERS:
        if re.fullmatch(pattern, module):
            return layer
    raise AssertionError(f"{module} matches no layer in tests/test_layering.py")


@lru_cache(maxsize=1)
def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for room in ROOMS:
        for path in sorted((ROOT / room).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
    """(project module imported, name taken from it or '') for one import statement."""
    known = modules()
    found: list[tuple[str, str]] = []
    if isinstance(node, ast.Import):
        names = [(alias.name, "") for alias in node.names]
    else:
        if node.level:
            base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        names = []
        for alias in node.names:
            full = f"{source}.{alias.name}"
            names.append((full, "") if full in known else (source, alias.name))
    for target, name in names:
        if target.split(".")[0] not in ROOMS:
            continue
        while target not in known and "." in target:
            target = target.rsplit(".", 1)[0]
        found.append((target, name))
    return found


@lru_cache(maxsize=1)
def imports() -> list[tuple[str, str, str, int, bool]]:
    """(importer, imported, name, line, inside a function) for every project import."""
    rows = []
    for module, path in modules().items():
        tree = ast.parse(path.read_text(), filename=str(path))
        nested: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                nested.update(id(inner) for inner in ast.walk(node) if inner is not node)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target, name in _targets(module, path, node):
                    rows.append((module, target, name, node.lineno, id(node) in nested))
    return rows


def test_no_project_import_inside_a_function():
    hidden = [f"{m} line {line}: imports {t}" for m, t, _, line, inside in imports() if inside]
    assert not hidden, "project modules imported inside functions:\n" + "\n".join(hidden)


def test_no_private_name_taken_from_another_module():
    taken = [
        f"{m} line {line}: {name} from {t}"
        for m, t, name, line, _ in imports()
        if name.startswith("_") and not name.startswith("__") and t != m
    ]
    assert not taken, "private names used across modules:\n" + "\n".join(taken)


def test_imports_flow_one_way():
    upward = []
    for importer, imported, _, line, _ in imports():
        if imported == importer or imported.split(".")[0] == imported and importer.startswith(imported + "."):
            continue
        a, b = layer_of(importer), layer_of(imported)
        if b > a:
            upward.append(f"{importer} ({LAYER_NAMES[a]}) line {line} imports {imported} ({LAYER_NAMES[b]})")
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_no_import_circle():
    graph: dict[str, set[str]] = {m: set() for m in modules()}
    for importer, imported, *_ in imports():
        if imported != importer:
            graph[importer].add(imported)
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_families_register_only_in_the_registry():
    elsewhere = []
    for module, path in modules().items():
        if module == "dse.registry":
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "family":
                elsewhere.append(f"{module} line {node.lineno}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "Family" and isinstance(node.ctx, ast.Load):
                elsewhere.append(f"{module} line {node.lineno} builds a Family")
    assert not elsewhere, "families registered outside dse/registry.py:\n" + "\n".join(elsewhere)


@pytest.mark.parametrize("room", ROOMS)
def test_rooms_stay_small(room):
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in sorted((ROOT / room).rglob("*.py"))
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    ]
    assert not long, f"files over {MAX_LINES} lines:\n" + "\n".join(long)


def test_the_checker_sees_what_it_must():
    """The walk finds imports at module level and inside functions, and resolves relative imports."""
    rows = imports()
    assert any(m == "dse.registry" and t.startswith("templates.") for m, t, *_ in rows)
    assert layer_of("hwmodels.systolic.model") == 4 and layer_of("hwmodels.systolic.pricing") == 2
    assert layer_of("dse.cli") == 7 and layer_of("dse.report.figures") == 6
