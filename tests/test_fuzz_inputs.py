"""Fuzzing what a user or a file can hand dse: spec documents, SCALE-Sim CSVs, template parameter values,
``--point`` strings (ONNX files are fuzzed in their own module).

The property, for every input: ``dse`` exits 0 or 2; with 2 it prints one message of at most 15 lines
and never a traceback (an exception escaping ``main`` fails the test); it stays within a time bound
(pytest-timeout) and a rejected input leaves an existing run directory byte-for-byte untouched.
The default suite runs a few dozen deterministic examples per input kind; ``-m slow`` runs thousands.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.cli import main
from dse.registry import families

MAX_MESSAGE_LINES = 15
COMMON = {
    "derandomize": True,
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}
FAST = settings(max_examples=30, **COMMON)
LONG = settings(max_examples=1500, **COMMON)

BASE_SPEC: dict[str, Any] = {
    "name": "fuzz",
    "workload": {"model": "jet_mlp", "batch": 1, "precision": "int8"},
    "template": {"kind": "systolic", "params": {"rows": [8, 16], "cols": 16, "dataflow": ["ws", "os"]}},
    "tech": "asic-28nm",
    "constraints": {"area_mm2": {"max": 50}},
    "objectives": ["min latency_ms", "min energy_mj"],
    "search": {"strategy": "grid", "budget": 2, "seed": 0},
}

HUGE_NUMBERS = st.sampled_from([10**400, -(10**400), 2**63, 2**64 + 1, 1e308, -1e308, 5e-324, 0, -1])
ODD_FLOATS = st.sampled_from([math.nan, math.inf, -math.inf, -0.0])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    HUGE_NUMBERS,
    st.floats(allow_nan=True, allow_infinity=True),
    ODD_FLOATS,
    st.text(max_size=30),
    st.sampled_from(["", " ", "ws", "int8", "1e9", "0x10", "${HOME}", "../../etc/passwd", "\u202e\u0000", "🙂" * 20]),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.text(max_size=12) | st.sampled_from(["range", "num"]), children, max_size=5),
    ),
    max_leaves=20,
)


def run_dse(argv: list[str]) -> tuple[int, str]:
    """``dse argv`` in this process: exit code and stderr; any exception escaping it fails the test."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as exit:  # argparse's own refusal of a malformed command line: usage + one error line
            code = int(exit.code or 0)
    return code, err.getvalue()


def assert_clean(code: int, err: str) -> None:
    """Exit 0, or exit 2 with one short message and no traceback."""
    assert code in (0, 2), f"exit {code}: {err}"
    assert "Traceback" not in err, err
    if code == 2:
        lines = err.strip().splitlines()
        assert 1 <= len(lines) <= MAX_MESSAGE_LINES, err
        assert lines[0].startswith("dse: error:") or lines[-1].startswith("dse"), err


def _paths(tree: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a nested dict/list (for picking what to mutate)."""
    out = [prefix]
    if isinstance(tree, dict):
        for key, value in tree.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            out += _paths(value, (*prefix, i))
    return out


@st.composite
def mutated_specs(draw: st.DrawFn) -> Any:
    """The base spec with one to three fields replaced by random values, deleted, or joined by unknown keys."""
    spec = copy.deepcopy(BASE_SPEC)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(spec) if p]
        if not paths:
            return draw(VALUES)
        path = draw(st.sampled_from(paths))
        parent = spec
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(VALUES)
        elif action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=10))] = draw(VALUES)
    return spec


def _dump(data: Any) -> str:
    try:
        return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    except (yaml.YAMLError, OverflowError, ValueError):
        return repr(data)  # not YAML-representable: the raw text is a fine hostile input too


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An explored run directory that rejected inputs must leave untouched."""
    folder = tmp_path_factory.mktemp("fuzz")
    spec = folder / "base.yaml"
    spec.write_text(_dump(BASE_SPEC))
    out = folder / "run"
    assert_clean(*run_dse(["explore", str(spec), "-o", str(out), "-q", "--executor", "serial"]))
    return out


def check_spec_text(text: str, folder: Path, run_dir: Path | None = None) -> None:
    spec = folder / "spec.yaml"
    spec.write_text(text, encoding="utf-8", errors="surrogatepass")
    code, err = run_dse(["validate", str(spec)])
    assert_clean(code, err)
    if code == 2 and run_dir is not None:
        before = _snapshot(run_dir)
        again, err = run_dse(["explore", str(spec), "-o", str(run_dir), "-q", "--executor", "serial"])
        assert again == 2, f"validate rejected the spec but explore did not: {err}"
        assert_clean(again, err)
        assert _snapshot(run_dir) == before, "a rejected spec changed the run directory"


# -- spec documents --------------------------------------------------------------------------------------


@FAST
@given(spec=mutated_specs())
def test_fuzz_spec_documents(spec: Any, tmp_path_factory: pytest.TempPathFactory, run_dir: Path) -> None:
    check_spec_text(_dump(spec), tmp_path_factory.mktemp("spec"), run_dir)


@FAST
@given(text=st.text(max_size=300))
def test_fuzz_spec_text(text: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    check_spec_text(text, tmp_path_factory.mktemp("text"))


@FAST
@given(depth=st.integers(2, 12), width=st.integers(2, 12), nest=st.integers(50, 3000))
def test_fuzz_yaml_bombs_and_deep_nesting(depth: int, width: int, nest: int, tmp_path_factory) -> None:
    """Billion-laughs alias bombs and deeply nested lists: refused quickly, in bounded memory."""
    folder = tmp_path_factory.mktemp("bomb")
    lines = ["a0: &a0 [x, x]"]
    for level in range(1, depth + 1):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    bomb = "\n".join(lines) + f"\nname: *a{depth}\n" + _dump({k: v for k, v in BASE_SPEC.items() if k != "name"})
    check_spec_text(bomb, folder)
    check_spec_text("name: deep\nworkload: " + "[" * nest + "]" * nest + "\n", folder)


# -- SCALE-Sim topology CSVs -----------------------------------------------------------------------------

CSV_CELLS = st.one_of(
    st.integers(-5, 300).map(str),
    st.sampled_from(["", " ", "0", "-1", "nan", "inf", "1e400", str(10**30), "3.5", "x", "🙂", '"', ",,", "\x00"]),
    st.text(max_size=8),
)
HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,"


@FAST
@given(
    rows=st.lists(st.lists(CSV_CELLS, min_size=0, max_size=10), max_size=6),
    header=st.sampled_from([HEADER, "", "garbage", HEADER.replace("Strides,", "")]),
)
def test_fuzz_scalesim_csv(rows: list[list[str]], header: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("csv")
    body = "\n".join(", ".join(row) + "," for row in rows)
    (folder / "topo.csv").write_text(f"{header}\n{body}\n", encoding="utf-8", errors="surrogatepass")
    spec = {**BASE_SPEC, "workload": {"model": "topo.csv", "batch": 1, "precision": "int8"}}
    check_spec_text(_dump(spec), folder)


@FAST
@given(blob=st.binary(max_size=400))
def test_fuzz_scalesim_csv_bytes(blob: bytes, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("csvbytes")
    (folder / "topo.csv").write_bytes(blob)
    spec = {**BASE_SPEC, "workload": {"model": "topo.csv", "batch": 1, "precision": "int8"}}
    check_spec_text(_dump(spec), folder)


# -- template parameter values (systolic, GPU, FPGA, RDU) ------------------------------------------------

FAMILY_PARAMS = [(kind, p.name) for kind, fam in sorted(families().items()) for p in fam.template().params()]


@st.composite
def family_points(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """One family and one to three of its parameters set to hostile (or ordinary) values."""
    kind = draw(st.sampled_from(sorted(families())))
    params = [p for p in families()[kind].template().params()]
    chosen = draw(st.lists(st.sampled_from(params), min_size=1, max_size=3, unique_by=lambda p: p.name))
    ordinary = st.sampled_from([p.default for p in chosen if p.default is not None] or [1])
    values = {p.name: draw(st.one_of(SCALARS, ordinary, st.sampled_from(list(p.choices or [0])))) for p in chosen}
    return kind, values


@FAST
@given(case=family_points())
def test_fuzz_template_parameters(case: tuple[str, dict[str, Any]], tmp_path_factory) -> None:
    """Each family's parameters set to random values: evaluated, or refused with one message."""
    kind, params = case
    folder = tmp_path_factory.mktemp("params")
    spec = {**BASE_SPEC, "template": {"kind": kind, "params": params}}
    path = folder / "spec.yaml"
    path.write_text(_dump(spec), encoding="utf-8", errors="surrogatepass")
    assert_clean(*run_dse(["evaluate", str(path)]))


# -- --point strings -------------------------------------------------------------------------------------

POINT_TEXT = st.one_of(
    st.text(max_size=40),
    st.tuples(
        st.sampled_from(["rows", "cols", "dataflow", "sram_kib", "nope", "", " rows "]), st.text(max_size=20)
    ).map("=".join),
    st.sampled_from(
        [
            "rows=1e400",
            "rows=nan",
            "rows=.inf",
            "rows=[1,2]",
            "rows={a: 1}",
            "rows=&a [*a]",
            "rows=!!python/object:os.system x",
        ]
    ),
)


@FAST
@given(points=st.lists(POINT_TEXT, min_size=1, max_size=3))
def test_fuzz_point_strings(points: list[str], tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("point")
    path = folder / "spec.yaml"
    path.write_text(_dump(BASE_SPEC))
    argv = ["evaluate", str(path)]
    for point in points:
        argv += ["--point", point]
    assert_clean(*run_dse(argv))


# -- long runs -------------------------------------------------------------------------------------------


@pytest.mark.slow
@LONG
@given(spec=mutated_specs())
def test_fuzz_spec_documents_long(spec: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    check_spec_text(_dump(spec), tmp_path_factory.mktemp("spec"))


@pytest.mark.slow
@LONG
@given(case=family_points())
def test_fuzz_template_parameters_long(case: tuple[str, dict[str, Any]], tmp_path_factory) -> None:
    test_fuzz_template_parameters.hypothesis.inner_test(case, tmp_path_factory)


@pytest.mark.slow
@LONG
@given(
    rows=st.lists(st.lists(CSV_CELLS, min_size=0, max_size=10), max_size=6),
    header=st.sampled_from([HEADER, "", "garbage", HEADER.replace("Strides,", "")]),
)
def test_fuzz_scalesim_csv_long(rows: list[list[str]], header: str, tmp_path_factory) -> None:
    test_fuzz_scalesim_csv.hypothesis.inner_test(rows, header, tmp_path_factory)


@pytest.mark.slow
@LONG
@given(points=st.lists(POINT_TEXT, min_size=1, max_size=3))
def test_fuzz_point_strings_long(points: list[str], tmp_path_factory: pytest.TempPathFactory) -> None:
    test_fuzz_point_strings.hypothesis.inner_test(points, tmp_path_factory)


@pytest.mark.slow
@LONG
@given(text=st.text(max_size=300))
def test_fuzz_spec_text_long(text: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    test_fuzz_spec_text.hypothesis.inner_test(text, tmp_path_factory)
