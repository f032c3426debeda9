"""The architecture's rules, checked on the source so they stay true.

Imports flow one way: IR and catalogs -> templates -> hardware cost models -> mappers -> hardware
models -> registry -> run inputs and state -> run outputs -> explorer -> surrogates -> evaluator registry
and peer adapters -> commands -> command line. Every import counts, those inside
functions too: no project module is imported inside a function (only heavy third-party ones may be
deferred), no module imports a ``_private`` name of another, no import circle, families register only
in dse/registry.py, and no source file in the rooms grows past 650 lines.
"""

from __future__ import annotations

import ast
import re
from functools import cache, lru_cache
from pathlib import Path

import pytest

from dse.registry import FAMILIES, HLS4ML

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
    # accuracy models (number formats, the hls4ml emulator, the numpy ONNX runner, the data file) are hardware
    # models of their own kind: (arch, mapping) -> metrics, built by the evaluator from the family table; they sit
    # beside the cost-based models, above the mappers whose mappings they read, and no mapper needs them
    (r"hwmodels\.accuracy(\..*)?$", 4),
    (r"hwmodels\.\w+\.(model|calibrate\w*|arrays)$", 4),
    (r"hwmodels\..*", 2),  # cost models: what mappers query
    (r"mappers\..*", 3),
    (r"dse\.(registry|evaluate)$", 5),
    # The run-and-output rooms, ordered: what a run reads and keeps (spec, space, search, store, run folder,
    # objectives and fronts, executors, the run context) -> what it writes (report, GPU comparison, export,
    # schedule) -> the explorer that drives a sweep and finishes it -> the surrogates, which plug a screened
    # sweep into the explorer -> the evaluator registry (it builds the surrogates' evaluators) and the peers'
    # adapters (they read the surrogates' measured datasets) -> the commands -> the command line (stdlib only).
    (
        r"dse\.(spec|space|space_columns|search|store|store_errors|chunkstore|flat|array_executor|rundir|recover"
        r"|objectives|pareto|executors|evaluator_options|choices|context|session|describe)(\..*)?$",
        6,
    ),
    (r"dse\.(report|compare|silicon|accelforge|export|hls4ml_project|schedule)(\..*)?$", 7),
    (r"dse\.(explore|sweep|column_sweep|finish|runs)$", 8),
    (r"surrogates\.cli$", 11),
    (r"surrogates\..*", 9),
    (r"dse\.(evaluators|peers)$", 10),
    (r"dse\.(commands|api)$", 11),  # the commands and the Python API: two faces of the same operations
    (r"dse\.cli$", 12),
]
LAYER_NAMES = {
    0: "IR and catalogs",
    1: "templates",
    2: "hardware cost models",
    3: "mappers",
    4: "hardware models",
    5: "registry",
    6: "run inputs and state",
    7: "run outputs",
    8: "explorer",
    9: "surrogates",
    10: "evaluator registry and peer adapters",
    11: "commands",
    12: "command line",
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


@cache
def parsed(path: Path) -> ast.Module:
    """The syntax tree of one file, parsed once per test process (several checks walk the same files)."""
    return ast.parse(path.read_text(), filename=str(path))


@lru_cache(maxsize=1)
def imports() -> list[tuple[str, str, str, int, bool]]:
    """(importer, imported, name, line, inside a function) for every project import."""
    rows = []
    for module, path in modules().items():
        for node, inside in sorted(_import_nodes(parsed(path)), key=lambda pair: pair[0].lineno):
            for target, name in _targets(module, path, node):
                rows.append((module, target, name, node.lineno, inside))
    return rows


def _import_nodes(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement of a tree, and whether it sits inside a function (one walk over statements)."""
    found = []
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, inside = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, inside))
        body_inside = inside or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        # Imports are statements: only statements (and handler/case blocks) can hold one, expressions never.
        stack.extend(
            (child, body_inside)
            for child in ast.iter_child_nodes(node)
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case))
        )
    return found


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
        tree = parsed(path)
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
    source = "import a\ndef f():\n    try:\n        import b\n    except E:\n        import c\nclass K:\n    import d\n"
    tree = ast.parse(source)
    assert sorted((node.names[0].name, inside) for node, inside in _import_nodes(tree)) == [
        ("a", False), ("b", True), ("c", True), ("d", False)
    ]  # fmt: skip
    assert layer_of("hwmodels.systolic.model") == 4 and layer_of("hwmodels.systolic.pricing") == 2
    assert layer_of("hwmodels.accuracy") == 4 and layer_of("hwmodels.accuracy.hls_emulator") == 4
    assert layer_of("dse.cli") == 12 and layer_of("dse.report.figures") == 7 and layer_of("dse.evaluators") == 10
    assert layer_of("dse.spec.checks") == 6 and layer_of("dse.explore") == 8 and layer_of("surrogates.cli") == 11
    assert layer_of("surrogates.explorer.hybrid") == 9 and layer_of("dse.files") == 0


# ---------------------------------------------------------------------------------------------------
# Scripts and tests are clients of the installed package: no path hacks, no imports across folders
# ---------------------------------------------------------------------------------------------------
SCRIPT_FOLDERS = ("benchmarks", "tests", "tools")
PATH_EDIT = re.compile(r"sys\.path\s*(\.\s*(insert|append|extend)\b|\+?=)")


def _script_files(folder: str) -> list[Path]:
    """The Python files of ``folder``; this checker, which names the folders it checks, left out."""
    return sorted(path for path in (ROOT / folder).rglob("*.py") if path != Path(__file__).resolve())


def _module_names(folder: str) -> set[str]:
    """The names a file of ``folder`` could be imported by when that folder is on the path."""
    return {path.stem for path in _script_files(folder)} | {folder}


def _imported_roots(tree: ast.AST) -> list[tuple[str, int]]:
    """(first component of every absolute import, line) of one parsed file."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name.split(".")[0], node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.module.split(".")[0], node.lineno))
    return found


def _path_edits(tree: ast.AST) -> list[int]:
    """Lines that touch ``sys.path`` (an edit, or code handed to another interpreter that makes one)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", None) == "sys":
            lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and PATH_EDIT.search(node.value):
            lines.append(node.lineno)
    return lines


def _names_a_file_of(tree: ast.AST, folder: str) -> list[int]:
    """Lines that build a path into ``folder`` (``ROOT / "folder"``, ``"folder/x.py"``): loading its files."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == folder or re.fullmatch(rf"{folder}/[\w/]+\.py", node.value))
    ]


@pytest.mark.parametrize("folder", SCRIPT_FOLDERS)
def test_scripts_and_tests_do_not_edit_sys_path(folder):
    edits = [
        f"{path.relative_to(ROOT)} line {line}" for path in _script_files(folder) for line in _path_edits(parsed(path))
    ]
    assert not edits, "sys.path edited (the package is installed; import it as a user does):\n" + "\n".join(edits)


@pytest.mark.parametrize(
    ("importer", "imported"), [("benchmarks", "tests"), ("tools", "tests"), ("tests", "benchmarks")]
)
def test_no_imports_across_benchmarks_and_tests(importer, imported):
    names = _module_names(imported)
    crossing = []
    for path in _script_files(importer):
        tree = parsed(path)
        crossing += [f"{path.relative_to(ROOT)} line {n}: imports {m}" for m, n in _imported_roots(tree) if m in names]
        crossing += [
            f"{path.relative_to(ROOT)} line {n}: loads a file of {imported}/" for n in _names_a_file_of(tree, imported)
        ]
    assert not crossing, f"{importer}/ reaches into {imported}/ (move what it needs into the library):\n" + "\n".join(
        crossing
    )


@pytest.mark.parametrize("folder", ["benchmarks", "tools"])
def test_scripts_do_not_import_each_other(folder):
    names = _module_names(folder) - {folder}
    shared = [
        f"{path.relative_to(ROOT)} line {n}: imports {m}"
        for path in _script_files(folder)
        for m, n in _imported_roots(parsed(path))
        if m in names and m != path.stem
    ]
    assert not shared, f"{folder}/ scripts import each other (what they share belongs in the library):\n" + "\n".join(
        shared
    )


def test_the_script_checks_see_what_they_must():
    """The checks find a path edit, an import across folders and a path into another folder."""
    edit = "sys.path" + '.insert(0, "x")'  # split, so this file does not flag itself
    tree = ast.parse(f'import sys\n{edit}\nimport scalesim_runner\np = ROOT / "benchmarks" / "a.py"\n')
    assert _path_edits(tree) == [2]
    assert _path_edits(ast.parse(f"code = {edit!r}")) == [1]
    assert ("scalesim_runner", 3) in _imported_roots(tree)
    assert _names_a_file_of(tree, "benchmarks") == [4]
    assert _names_a_file_of(ast.parse('s = "calibrated on benchmarks/gpu_measure.py"'), "benchmarks") == []


# ------------------------------------------------------------------------------------- the family table
# Rooms that may name a template kind in code: the family table and the families' own rooms.
KIND_ROOMS = ("dse/registry.py", "templates/", "hwmodels/", "mappers/")
KIND_CHECKED = ("dse", "surrogates")


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring constants of a module, its classes and its functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_only_the_family_rooms_name_a_template_kind():
    """Code outside the registry, templates, hwmodels and mappers asks the family table instead of comparing
    with a kind's name: a string constant equal to a kind (docstrings aside) is a family branch."""
    kinds = set(FAMILIES)
    found = []
    for room in KIND_CHECKED:
        for path in sorted((ROOT / room).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith(KIND_ROOMS):
                continue
            tree = parsed(path)
            skip = _docstrings(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and node.value in kinds and id(node) not in skip:
                    found.append(f"{relative} line {node.lineno}: {node.value!r}")
    assert not found, "template kinds named outside the family rooms (ask dse.registry):\n" + "\n".join(found)


def test_every_family_declares_consistent_capabilities():
    """Each capability names what the family has: its closed form and layer baselines are its own mappers
    (the expensive one distinct from its baseline), its exporters are known, a precision it takes is a param."""
    for kind, fam in FAMILIES.items():
        assert fam.mappers and fam.default_mapper == next(iter(fam.mappers)), kind
        assert fam.template().kind == kind, f"{kind}: its template names another kind"
        basis = fam.surrogates
        assert basis.closed_form in fam.mappers, f"{kind}: closed form {basis.closed_form!r} is not its mapper"
        for truth, cheap in basis.layer_baselines.items():
            assert truth in fam.mappers and cheap in fam.mappers and truth != cheap, f"{kind}: {truth} -> {cheap}"
        assert basis.op_features is None or isinstance(basis.op_features, str), kind
        assert set(fam.exporters) <= {HLS4ML}, f"{kind}: an exporter dse export does not know"
        assert isinstance(fam.schedules, bool) and isinstance(fam.arch_precision, bool), kind
        if fam.arch_precision:
            assert "precision" in {p.name for p in fam.template().params()}, f"{kind}: no precision parameter"
