"""The YAML spec: it loads what ARCHITECTURE.md promises and rejects each mistake with one located message.

Two kinds of tests: fixture files under ``tests/specs/`` run against the real registry
(systolic template, tech catalog, zoo), each bad one declaring its expected error in
its first line; and in-memory specs against a small ``toy`` template registered for
the test, so the error machinery is checked independently of any real template.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dse import registry
from dse.cli import main
from dse.errors import UserError
from dse.evaluator_options import EVALUATOR_OPTIONS, HybridOptions, parse_evaluator_options
from dse.objectives import Constraint, Objective
from dse.spec.load import load_spec, parse_spec
from dse.spec.messages import SpecError
from dse.spec.schema import DEFAULT_OBJECTIVES
from templates.base import Arch, Param, Template, TemplateError

SPECS = Path(__file__).resolve().parent / "specs"
ARCH_EXAMPLE = SPECS / "architecture_example.yaml"
HAVE_SYSTOLIC = all(
    importlib.util.find_spec(f"{room}.systolic") is not None for room in ("templates", "mappers", "hwmodels")
)
needs_systolic = pytest.mark.skipif(
    not HAVE_SYSTOLIC, reason="the systolic family (template/mapper/model) is not all there"
)


# ---------------------------------------------------------------------------------------------- a toy template


@dataclass(frozen=True)
class ToyArch(Arch):
    rows: int
    cols: int
    sram_kib: float


class ToyTemplate(Template):
    """A small template with one cross-field rule, so spec tests do not depend on a real family."""

    kind = "toy"

    def params(self) -> list[Param]:
        return [
            Param("rows", "int", 32, low=1, high=1024),
            Param("cols", "int", 32, low=1, high=1024),
            Param("dataflow", "str", "os", choices=("ws", "os", "is")),
            Param("sram_kib", "float", None, low=1),
            Param("ifmap_sram_kib", "float", 64.0, low=1),
            Param("dram_gbps", "float", 25.6, low=0.1),
            Param("double_buffer", "bool", True),
            Param("precision", "str", "int8", choices=("int8", "int16", "fp16")),
            Param("tech", "str", "asic-28nm"),
        ]

    def instantiate(self, point: Mapping[str, Any]) -> ToyArch:
        p = self.resolve(point)
        if p["sram_kib"] is not None and "ifmap_sram_kib" in point:
            raise TemplateError("give sram_kib or ifmap_sram_kib, not both", "ifmap_sram_kib")
        if p["rows"] > 8 * p["cols"]:
            raise TemplateError(f"rows={p['rows']} is more than 8 x cols={p['cols']}; keep rows <= 8 * cols", "rows")
        return ToyArch(p["rows"], p["cols"], p["sram_kib"] or 3 * p["ifmap_sram_kib"])


class ToyMapper:
    pass


class ToyModel:
    pass


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register kind ``toy`` beside whatever real families import."""
    real_families = registry.families

    def families() -> dict[str, registry.Family]:
        try:
            fams = dict(real_families())
        except ImportError:
            fams = {}
        fams["toy"] = registry.Family(
            template=ToyTemplate,
            mappers={"plain": ToyMapper, "alt": ToyMapper},
            hwmodel=ToyModel,
            surrogates=registry.SurrogateBasis(closed_form="plain"),
        )
        return fams

    def family(kind: str) -> registry.Family:
        fams = families()
        if kind not in fams:
            raise KeyError(kind)
        return fams[kind]

    monkeypatch.setattr(registry, "families", families)
    monkeypatch.setattr(registry, "family", family)


TOY_SPEC = """\
name: toy-spec
workload: {model: jet_mlp, batch: 2}
template:
  kind: toy
  params:
    rows: [16, 32, 64, 128]
    cols: [16, 32, 64, 128]
    dataflow: [ws, os, is]
    sram_kib: {log_range: [64, 4096]}
    dram_gbps: 25.6
objectives: [min latency_ms, min energy_mj]
search: {strategy: random, budget: 50, seed: 3}
"""


def toy_error(text: str, path: str = "designs/toy.yaml") -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_spec(text, path)
    return info.value


def expect(err: SpecError, line: int | None, field: str | None, *fragments: str) -> None:
    """One message: ``file:line: field: ...`` carrying every fragment."""
    text = str(err)
    assert "\n" not in text and "Traceback" not in text
    assert err.line == line, text
    assert err.field == field, text
    prefix = err.file + (f":{line}" if line is not None else "") + (f": {field}" if field else "") + ": "
    assert text.startswith(prefix), text
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text!r}"
    assert isinstance(err, UserError)


# ---------------------------------------------------------------------------------------------- fixture files


def _expected_error(path: Path) -> tuple[int, str | None, list[str]]:
    """The first line of a bad fixture: ``# error: LINE FIELD | fragment | fragment``."""
    header = path.read_text().splitlines()[0]
    m = re.fullmatch(r"# error: (\d+) (\S+) \| (.*)", header)
    assert m, f"{path.name}: first line must be '# error: LINE FIELD | fragment | ...'"
    field = None if m.group(2) == "-" else m.group(2)
    return int(m.group(1)), field, [f.strip() for f in m.group(3).split("|")]


BAD_FIXTURES = sorted((SPECS / "bad").glob("*.yaml"))


def test_there_is_a_bad_fixture_per_error_class() -> None:
    names = {p.stem for p in BAD_FIXTURES}
    required = {
        "yaml_syntax",
        "unknown_top_key",
        "unknown_param",
        "bad_choice",
        "wrong_type",
        "range_lo_ge_hi",
        "bad_objective",
        "unknown_metric_constraint",
        "unknown_strategy",
        "unknown_tech",
        "unknown_kind",
        "missing_workload_file",
        "cross_field",
        "unknown_evaluator_option",
    }
    assert required <= names, f"missing fixtures: {sorted(required - names)}"


@needs_systolic
@pytest.mark.parametrize("path", BAD_FIXTURES, ids=lambda p: p.stem)
def test_bad_fixture_gives_its_one_message(path: Path) -> None:
    line, field, fragments = _expected_error(path)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    expect(info.value, line, field, *fragments)
    assert info.value.file == str(path)


@needs_systolic
def test_architecture_example_loads_as_written() -> None:
    spec = load_spec(ARCH_EXAMPLE)
    assert spec.name == "resnet18-systolic-edge"
    assert spec.workload.model == "resnet18" and spec.workload.source == "zoo" and spec.workload.model_path is None
    assert (spec.workload.batch, spec.workload.precision, spec.workload.options) == (1, "int8", {})
    assert spec.template.kind == "systolic" and spec.mapper_name == "fold"
    assert list(spec.template.params) == ["rows", "cols", "dataflow", "sram_kib", "dram_gbps", "freq_mhz"]
    assert spec.tech == "asic-28nm"
    assert spec.constraint_list() == [Constraint("area_mm2", None, 20.0), Constraint("power_w", None, 5.0)]
    assert spec.objective_list() == [Objective("latency_ms", "min"), Objective("energy_mj", "min")]
    assert (spec.search.strategy, spec.search.budget, spec.search.seed) == ("nsga2", 500, 0)
    assert spec.evaluator == "analytical" and spec.baselines == ["a100", "h100"]
    fixed = spec.fixed_params()
    assert fixed["dram_gbps"] == 25.6 and fixed["freq_mhz"] == 800.0
    assert fixed["tech"] == "asic-28nm" and fixed["precision"] == "int8"
    assert spec.locate("template.params.sram_kib") == f"{ARCH_EXAMPLE}:9"
    assert spec.design_space().grid_size() == 4 * 4 * 3 * 7


@needs_systolic
def test_every_fixed_and_first_grid_point_instantiates_the_real_template() -> None:
    spec = load_spec(ARCH_EXAMPLE)
    template = spec.family().template()
    space = spec.design_space()
    for point in [next(space.grid()), *space.sample(5, seed=1)]:
        template.instantiate({**spec.fixed_params(), **point})


@needs_systolic
@pytest.mark.parametrize("path", sorted((SPECS / "good").glob("*.yaml")), ids=lambda p: p.stem)
def test_good_fixture_loads(path: Path) -> None:
    spec = load_spec(path)
    assert spec.objective_list() and spec.design_space().grid_size() >= 1
    json.dumps(spec.to_dict())


@needs_systolic
def test_model_file_resolves_against_the_spec_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # not the spec's folder: the path must still resolve
    spec = load_spec(SPECS / "good" / "csv_relative.yaml")
    assert spec.workload.source == "csv"
    assert spec.workload.model_path == (SPECS / "good" / "tiny_topology.csv").resolve()
    assert spec.base_dir == (SPECS / "good").resolve()
    space = spec.design_space()
    assert space.dim("rows").grid_values() == (8, 16, 24, 32, 40, 48, 56, 64)
    assert space.dim("cols").grid_values() == (8, 16, 32, 64, 128)
    assert space.dim("dram_gbps").grid_values() == pytest.approx((12.8, 25.6, 38.4, 51.2))
    assert spec.fixed_params()["tech"] == "asic-16nm"


def test_missing_spec_file_names_the_file() -> None:
    err = pytest.raises(SpecError, load_spec, "designs/no_such_spec.yaml").value
    expect(err, None, None, "spec file not found", "give an existing YAML file")
    assert str(err).startswith("designs/no_such_spec.yaml: ")


def test_a_folder_is_not_a_spec(tmp_path: Path) -> None:
    expect(pytest.raises(SpecError, load_spec, tmp_path).value, None, None, "is a directory")


# ---------------------------------------------------------------------------------------------- toy template


def test_toy_spec_loads_with_defaults(toy: None) -> None:
    spec = parse_spec(TOY_SPEC, "designs/toy.yaml")
    assert spec.tech == "asic-28nm" and spec.evaluator == "analytical" and spec.baselines == []
    assert spec.mapper_name == "plain"
    assert spec.constraint_list() == []
    assert spec.fixed_params() == {"dram_gbps": 25.6, "tech": "asic-28nm", "precision": "int8"}
    assert spec.locate("template.params.dataflow") == "designs/toy.yaml:8"
    assert spec.locate("objectives[1]") == "designs/toy.yaml:11"
    assert spec.locate("template.params.nothing_here") == "designs/toy.yaml:5"  # deepest existing key
    assert spec.path == Path("designs/toy.yaml")


def test_default_objectives_and_search(toy: None) -> None:
    spec = parse_spec("name: d\nworkload: {model: jet_mlp}\ntemplate: {kind: toy}\n")
    assert spec.objectives == list(DEFAULT_OBJECTIVES)
    assert spec.objective_list() == [Objective("latency_ms", "min"), Objective("energy_mj", "min")]
    assert (spec.search.strategy, spec.search.budget, spec.search.seed, spec.search.population) == (
        "grid",
        None,
        0,
        None,
    )
    assert spec.workload.batch == 1 and spec.workload.precision == "int8"
    assert spec.design_space().grid_size() == 1


def test_to_dict_round_trips(toy: None) -> None:
    text = TOY_SPEC.replace("batch: 2}", "batch: 2, seq_len: 64}").replace("jet_mlp", "bert_base")
    spec = parse_spec(text)
    data = spec.to_dict()
    assert data["workload"] == {"model": "bert_base", "batch": 2, "precision": "int8", "seq_len": 64}
    assert spec.workload.options == {"seq_len": 64}
    import yaml

    again = parse_spec(yaml.safe_dump(data, sort_keys=False))
    assert again.to_dict() == data
    assert again.evaluation_fingerprint() == spec.evaluation_fingerprint()


def test_fingerprint_ignores_objectives_constraints_and_search(toy: None) -> None:
    base = parse_spec(TOY_SPEC).evaluation_fingerprint()
    assert re.fullmatch(r"[0-9a-f]{64}", base)
    same = [
        TOY_SPEC.replace("[min latency_ms, min energy_mj]", "[max throughput_ips]"),
        TOY_SPEC.replace("budget: 50, seed: 3", "budget: 500, seed: 9") + "constraints: {area_mm2: {max: 3}}\n",
        TOY_SPEC.replace("name: toy-spec", "name: renamed"),
    ]
    for text in same:
        assert parse_spec(text).evaluation_fingerprint() == base
    different = [
        TOY_SPEC.replace("batch: 2", "batch: 4"),
        TOY_SPEC.replace("batch: 2", "batch: 2, precision: int16"),
        TOY_SPEC.replace("jet_mlp", "resnet18"),
        TOY_SPEC + "tech: asic-7nm\n",
        TOY_SPEC + "evaluator: surrogate\n",
        TOY_SPEC.replace("kind: toy", "kind: toy\n  mapper: alt"),
    ]
    prints = {parse_spec(text).evaluation_fingerprint() for text in different}
    assert base not in prints and len(prints) == len(different)
    # naming the default mapper explicitly evaluates the same way
    assert parse_spec(TOY_SPEC.replace("kind: toy", "kind: toy\n  mapper: plain")).evaluation_fingerprint() == base


def test_fingerprint_follows_model_file_content(toy: None, tmp_path: Path) -> None:
    model = tmp_path / "net.csv"
    model.write_text("Layer name, IFMAP Height\nConv1, 8,\n")
    text = TOY_SPEC.replace("jet_mlp", "net.csv")
    first = parse_spec(text, tmp_path / "s.yaml")
    assert first.workload.model_path == model.resolve()
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (moved / "net.csv").write_bytes(model.read_bytes())
    assert parse_spec(text, moved / "s.yaml").evaluation_fingerprint() == first.evaluation_fingerprint()
    model.write_text("Layer name, IFMAP Height\nConv1, 16,\n")
    changed = parse_spec(text, tmp_path / "s.yaml").evaluation_fingerprint()
    assert changed != first.evaluation_fingerprint()  # the spec loaded before the edit keeps its fingerprint


@pytest.mark.parametrize(
    ("old", "new", "line", "field", "fragments"),
    [
        (
            "dataflow: [ws, os, is]",
            "dataflow: [ws, wx, is]",
            8,
            "template.params.dataflow[1]",
            ["'wx' is not allowed; choose one of: ws, os, is"],
        ),
        (
            "rows: [16, 32, 64, 128]",
            "rows: [16, 32, 64, 2048]",
            6,
            "template.params.rows[3]",
            ["2048 is above the maximum 1024"],
        ),
        ("rows: [16, 32, 64, 128]", "rows: [16, 32, 16]", 6, "template.params.rows[2]", ["16 is listed twice"]),
        ("rows: [16, 32, 64, 128]", "rows: []", 6, "template.params.rows", ["empty list", "range"]),
        ("rows: [16, 32, 64, 128]", "rows:", 6, "template.params.rows", ["has no value"]),
        ("rows: [16, 32, 64, 128]", "rows: [16, [32]]", 6, "template.params.rows[1]", ["an int value is needed"]),
        ("rows: [16, 32, 64, 128]", "rows: 16.5", 6, "template.params.rows", ["must be a int, got 16.5"]),
        (
            "rows: [16, 32, 64, 128]",
            "rowz: [16, 32]",
            6,
            "template.params.rowz",
            ["'rowz' is not a parameter of toy", "its parameters are: rows, cols, dataflow"],
        ),
        (
            "sram_kib: {log_range: [64, 4096]}",
            "sram_kib: {log_range: [4096, 64]}",
            9,
            "template.params.sram_kib.log_range",
            ["4096.0 is not below upper bound 64.0", "lo < hi"],
        ),
        (
            "sram_kib: {log_range: [64, 4096]}",
            "sram_kib: {range: [64, 64]}",
            9,
            "template.params.sram_kib.range",
            ["not below"],
        ),
        (
            "sram_kib: {log_range: [64, 4096]}",
            "sram_kib: {log_range: [0, 4096]}",
            9,
            "template.params.sram_kib.log_range[0]",
            ["below the minimum 1"],
        ),
        (
            "sram_kib: {log_range: [64, 4096]}",
            "sram_kib: {log_range: [64, big]}",
            9,
            "template.params.sram_kib.log_range[1]",
            ["'big' is not a number"],
        ),
        (
            "sram_kib: {log_range: [64, 4096]}",
            "sram_kib: {log_range: [64]}",
            9,
            "template.params.sram_kib.log_range",
            ["list of two numbers"],
        ),
        (
            "sram_kib: {log_range: [64, 4096]}",
            "sram_kib: {log_range: [64, 4096], step: 2}",
            9,
            "template.params.sram_kib.step",
            ["log_range takes `num`"],
        ),
        (
            "sram_kib: {log_range: [64, 4096]}",
            "sram_kib: {range: [64, 4096], stpe: 2}",
            9,
            "template.params.sram_kib.stpe",
            ["unknown key 'stpe'", "allowed keys: range, log_range, step, num"],
        ),
        (
            "sram_kib: {log_range: [64, 4096]}",
            "sram_kib: {range: [64, 4096], log_range: [64, 4096]}",
            9,
            "template.params.sram_kib",
            ["exactly one of"],
        ),
        (
            "sram_kib: {log_range: [64, 4096]}",
            "sram_kib: {range: [64, 4096], num: 1}",
            9,
            "template.params.sram_kib.num",
            ["integer >= 2"],
        ),
        (
            "rows: [16, 32, 64, 128]",
            "rows: {range: [16, 128], step: 0.5}",
            6,
            "template.params.rows.step",
            ["whole number"],
        ),
        (
            "dataflow: [ws, os, is]",
            "dataflow: {range: [1, 3]}",
            8,
            "template.params.dataflow.range",
            ["numeric parameter", "give a list of values (ws, os, is)"],
        ),
        ("dram_gbps: 25.6", "precision: int16", 10, "template.params.precision", ["set workload.precision"]),
    ],
)
def test_param_errors_point_at_the_value(toy: None, old: str, new: str, line: int, field: str, fragments) -> None:
    assert old in TOY_SPEC
    expect(toy_error(TOY_SPEC.replace(old, new)), line, field, *fragments)


def test_cross_field_template_error_is_reported_at_the_named_param(toy: None) -> None:
    text = TOY_SPEC.replace("dram_gbps: 25.6", "dram_gbps: 25.6\n    ifmap_sram_kib: 32")
    expect(
        toy_error(text),
        11,
        "template.params.ifmap_sram_kib",
        "give sram_kib or ifmap_sram_kib, not both",
        "at the first grid point: rows=16, cols=16, dataflow=ws, sram_kib=64.0",
    )
    # the first grid point breaks a rule between rows and cols
    text = TOY_SPEC.replace("rows: [16, 32, 64, 128]", "rows: [512]").replace(
        "cols: [16, 32, 64, 128]", "cols: [32, 64]"
    )
    expect(toy_error(text), 6, "template.params.rows", "rows=512 is more than 8 x cols=32")


def test_precision_the_template_does_not_take(toy: None) -> None:
    err = toy_error(TOY_SPEC.replace("batch: 2", "batch: 2, precision: int4"))
    expect(err, 2, "workload.precision", "'int4' is not allowed; choose one of: int8, int16, fp16", "toy template")
    err = toy_error(TOY_SPEC.replace("batch: 2", "batch: 2, precision: int3"))
    expect(err, 2, "workload.precision", "'int3' is not allowed; choose one of: int4, int8")


@pytest.mark.parametrize(
    ("text", "line", "field", "fragments"),
    [
        (
            TOY_SPEC + "evaluater: analytical\n",
            13,
            "evaluater",
            ["unknown key 'evaluater'", "allowed keys: name, description, workload, template, tech"],
        ),
        (
            TOY_SPEC.replace("kind: toy", "kind: toy\n  mapping: fold"),
            5,
            "template.mapping",
            ["unknown key 'mapping'", "allowed keys: kind, params, mapper"],
        ),
        (
            TOY_SPEC.replace("kind: toy", "kind: toy\n  mapper: best"),
            5,
            "template.mapper",
            ["'best' is not a mapper of toy; choose one of: plain, alt"],
        ),
        (
            TOY_SPEC.replace("kind: toy", "kind: tpu"),
            4,
            "template.kind",
            ["'tpu' is not a template kind; choose one of:", "toy"],
        ),
        (
            TOY_SPEC.replace("batch: 2", "batch: two"),
            2,
            "workload.batch",
            ["got 'two' (a string); expected an integer >= 1"],
        ),
        (TOY_SPEC.replace("batch: 2", "batch: 0"), 2, "workload.batch", ["0 is too small; must be >= 1"]),
        (TOY_SPEC.replace("batch: 2", "batch: 2.5"), 2, "workload.batch", ["got 2.5 (a number)"]),
        (TOY_SPEC.replace("batch: 2", "batch: true"), 2, "workload.batch", ["got true (a boolean)"]),
        (
            TOY_SPEC.replace("name: toy-spec", "name: 42"),
            1,
            "name",
            ["got 42 (an integer); expected a non-empty string"],
        ),
        (TOY_SPEC.replace("name: toy-spec", "name: '  '"), 1, "name", ["is blank"]),
        (TOY_SPEC.replace("name: toy-spec\n", ""), 1, "name", ["required key is missing"]),
        (
            TOY_SPEC.replace("workload: {model: jet_mlp, batch: 2}", "workload: jet_mlp"),
            2,
            "workload",
            ["got 'jet_mlp' (a string); expected a mapping with model, batch"],
        ),
        (TOY_SPEC.replace("model: jet_mlp, ", ""), 2, "workload.model", ["required key is missing"]),
        (TOY_SPEC.replace("batch: 2", "batch: 2, seq_len: [1, 2]"), 2, "workload.seq_len", ["single value"]),
        (TOY_SPEC.replace("jet_mlp", "net.pb"), 2, "workload.model", ["not a supported model file", ".onnx"]),
        (
            TOY_SPEC.replace("jet_mlp", "missing.onnx"),
            2,
            "workload.model",
            ["model file 'missing.onnx' not found (looked for", "relative to the spec's folder"],
        ),
        (
            TOY_SPEC.replace("strategy: random", "strategy: annealing"),
            12,
            "search.strategy",
            ["'annealing' is not allowed; choose one of: grid, random, nsga2, tpe"],
        ),
        (TOY_SPEC.replace("seed: 3", "seed: -1"), 12, "search.seed", ["-1 is too small; must be >= 0"]),
        (TOY_SPEC.replace("budget: 50, ", ""), 12, "search.budget", ["strategy random needs a budget"]),
        (
            TOY_SPEC.replace("budget: 50", "budget: 50, population: 8"),
            12,
            "search.population",
            ["applies only to strategy nsga2"],
        ),
        (
            TOY_SPEC.replace("min energy_mj", "fastest energy_mj"),
            11,
            "objectives[1]",
            ["'fastest energy_mj' is not an objective; write 'min <metric>' or 'max <metric>'"],
        ),
        (
            TOY_SPEC.replace("[min latency_ms, min energy_mj]", "['', min energy_mj]"),
            11,
            "objectives[0]",
            ["'' is not an objective; write 'min <metric>' or 'max <metric>'"],
        ),
        (
            TOY_SPEC.replace("min energy_mj", "min joules"),
            11,
            "objectives[1]",
            ["unknown metric 'joules'; choose one of: latency_ms"],
        ),
        (
            TOY_SPEC.replace("min energy_mj", "max latency_ms"),
            11,
            "objectives[1]",
            ["latency_ms already appears in objectives[0]"],
        ),
        (TOY_SPEC.replace("[min latency_ms, min energy_mj]", "[]"), 11, "objectives", ["is empty"]),
        (
            TOY_SPEC + "constraints: {area: {max: 20}}\n",
            13,
            "constraints.area",
            ["unknown metric 'area'; choose one of: latency_ms"],
        ),
        (
            TOY_SPEC + "constraints: {area_mm2: {maximum: 20}}\n",
            13,
            "constraints.area_mm2.maximum",
            ["unknown key 'maximum'; allowed keys: min, max"],
        ),
        (
            TOY_SPEC + "constraints: {area_mm2: {max: 1e3}}\n",
            13,
            "constraints.area_mm2.max",
            ["got '1e3' (a string)", "write 1.0e3", "expected a number"],
        ),
        (
            TOY_SPEC + "constraints: {area_mm2: {min: 5, max: 2}}\n",
            13,
            "constraints.area_mm2",
            ["min 5 is above max 2"],
        ),
        (TOY_SPEC + "constraints: {area_mm2: {}}\n", 13, "constraints.area_mm2", ["has no bound"]),
        (TOY_SPEC + "tech: asic-3nm\n", 13, "tech", ["unknown technology 'asic-3nm'; choose one of:", "asic-28nm"]),
        (
            TOY_SPEC + "evaluator: magic\n",
            13,
            "evaluator",
            ["'magic' is not allowed; choose one of: analytical, surrogate, hybrid"],
        ),
        (TOY_SPEC + "baselines: [a100, a100]\n", 13, "baselines[1]", ["'a100' is listed twice"]),
        (TOY_SPEC + "baselines: a100\n", 13, "baselines", ["got 'a100' (a string); expected a list"]),
        (
            TOY_SPEC.replace("kind: toy", "kind: toy\n  kind: toy"),
            5,
            "template.kind",
            ["key given twice (first on line 4)"],
        ),
        ("- name: x\n", 1, None, ["the top level is a list, not a mapping"]),
        ("", 1, None, ["the spec is empty"]),
        ("name: x\nworkload: {model: [jet_mlp\n", 3, None, ["YAML syntax error", "the spec must be valid YAML"]),
        ("name: x\n  bad: indent\n", 2, None, ["YAML syntax error", "mapping values are not allowed here"]),
    ],
)
def test_each_mistake_gives_one_located_message(toy: None, text: str, line: int, field: str | None, fragments) -> None:
    expect(toy_error(text), line, field, *fragments)


def test_several_mistakes_report_the_first_in_the_file_and_count_the_rest(toy: None) -> None:
    text = TOY_SPEC.replace("batch: 2", "batch: 0").replace("strategy: random", "strategy: annealing")
    text += "evaluater: x\n"
    expect(toy_error(text), 2, "workload.batch", "must be >= 1", "(and 2 more problems)")
    text = TOY_SPEC.replace("min energy_mj", "min joules") + "tech: asic-3nm\n"
    expect(toy_error(text), 11, "objectives[1]", "unknown metric 'joules'", "(and 1 more problem)")


def test_model_file_options(toy: None, tmp_path: Path) -> None:
    (tmp_path / "net.onnx").write_bytes(b"not parsed at load time")
    (tmp_path / "net.csv").write_text("Layer name,\n")
    onnx = TOY_SPEC.replace("jet_mlp, batch: 2", "net.onnx, batch: 2, symbolic_dims: {seq: 128}")
    assert parse_spec(onnx, tmp_path / "s.yaml").workload.options == {"symbolic_dims": {"seq": 128}}
    err = toy_error(onnx.replace("128", "long"), str(tmp_path / "s.yaml"))
    expect(err, 2, "workload.symbolic_dims.seq", "got 'long' (a string); expected an integer >= 1")
    err = toy_error(onnx.replace("symbolic_dims: {seq: 128}", "seq_len: 128"), str(tmp_path / "s.yaml"))
    expect(err, 2, "workload.seq_len", "ONNX models take only symbolic_dims")
    csv = TOY_SPEC.replace("jet_mlp, batch: 2", "net.csv, batch: 2, seq_len: 128")
    expect(toy_error(csv, str(tmp_path / "s.yaml")), 2, "workload.seq_len", "takes no model options")


def test_zoo_names_and_options_are_checked(toy: None) -> None:
    expect(
        toy_error(TOY_SPEC.replace("jet_mlp", "resnet19")),
        2,
        "workload.model",
        "'resnet19' is not a zoo model; choose one of:",
        "resnet18",
    )
    expect(
        toy_error(TOY_SPEC.replace("batch: 2", "batch: 2, resolution: 224")),
        2,
        "workload.resolution",
        "jet_mlp does not take option 'resolution'",
    )
    spec = parse_spec(TOY_SPEC.replace("jet_mlp, batch: 2", "resnet18, batch: 2, resolution: 160"))
    assert spec.workload.options == {"resolution": 160}


def test_tech_may_be_swept_in_params_unless_also_set_at_top_level(toy: None) -> None:
    text = TOY_SPEC.replace("dram_gbps: 25.6", "dram_gbps: 25.6\n    tech: [asic-28nm, asic-7nm]")
    spec = parse_spec(text)
    assert "tech" not in spec.fixed_params() and spec.design_space().dim("tech").values == ("asic-28nm", "asic-7nm")
    expect(toy_error(text.replace("asic-7nm", "asic-1nm")), 11, "template.params.tech[1]", "unknown technology")
    expect(toy_error(text + "tech: asic-16nm\n"), 11, "template.params.tech", "also set at the top level")


def test_error_helper_locates_later_stage_problems(toy: None) -> None:
    spec = parse_spec(TOY_SPEC, "designs/toy.yaml")
    err = spec.error("workload.model", "jet_mlp cannot run at batch 2 on this template; use batch 1")
    assert str(err) == "designs/toy.yaml:2: workload.model: jet_mlp cannot run at batch 2 on this template; use batch 1"


# ---------------------------------------------------------------------------------------------- mapper options

CPSAT_SPEC = """\
name: cpsat-options
workload: {model: jet_mlp}
template:
  kind: systolic
  mapper: cpsat
  mapper_options: {objective: latency, time_limit_s: 2}
  params: {rows: [16, 32], cols: 32}
"""


@needs_systolic
def test_mapper_options_load_and_enter_the_fingerprint() -> None:
    spec = parse_spec(CPSAT_SPEC, "designs/cpsat.yaml")
    assert spec.mapper_name == "cpsat"
    assert spec.template.mapper_options == {"objective": "latency", "time_limit_s": 2}
    assert spec.to_dict()["template"]["mapper_options"] == {"objective": "latency", "time_limit_s": 2}
    without = parse_spec(CPSAT_SPEC.replace("  mapper_options: {objective: latency, time_limit_s: 2}\n", ""))
    assert without.template.mapper_options == {} and "mapper_options" not in without.to_dict()["template"]
    assert spec.evaluation_fingerprint() != without.evaluation_fingerprint()
    assert spec.locate("template.mapper_options.time_limit_s") == "designs/cpsat.yaml:6"


@needs_systolic
def test_unknown_mapper_option_is_one_located_message_listing_the_options() -> None:
    err = toy_error(CPSAT_SPEC.replace("time_limit_s: 2", "time_limit: 2"), "designs/cpsat.yaml")
    expect(
        err,
        6,
        "template.mapper_options.time_limit",
        "'time_limit' is not an option of the cpsat mapper of systolic",
        "objective",
        "time_limit_s",
    )
    assert "more problem" not in str(err)


@needs_systolic
@pytest.mark.parametrize(
    "old, new, field, fragment",
    [
        ("objective: latency", "objective: fastest", "template.mapper_options", "unknown objective 'fastest'"),
        ("time_limit_s: 2", "time_limit_s: two", "template.mapper_options.time_limit_s", "must be a float"),
        ("time_limit_s: 2", "time_limit_s: [2]", "template.mapper_options.time_limit_s", "give a single value"),
    ],
)
def test_bad_mapper_option_values_are_located(old: str, new: str, field: str, fragment: str) -> None:
    expect(toy_error(CPSAT_SPEC.replace(old, new), "designs/cpsat.yaml"), 6, field, fragment)


@needs_systolic
def test_unknown_mapper_option_through_dse_validate_exits_2(tmp_path: Path, capsys) -> None:
    path = tmp_path / "cpsat.yaml"
    path.write_text(CPSAT_SPEC.replace("objective: latency", "objectiv: latency"))
    code = main(["validate", str(path)])
    message = capsys.readouterr().err.strip()
    assert code == 2, message
    assert "Traceback" not in message and len(message.splitlines()) == 1, message
    assert f"{path}:6: template.mapper_options.objectiv:" in message and "time_limit_s" in message


# ---------------------------------------------------------------------------------------------- evaluator options

HYBRID_SPEC = """\
name: hybrid-options
workload: {model: jet_mlp}
template: {kind: systolic, params: {rows: [16, 32], cols: 32}}
evaluator: hybrid
evaluator_options: {max_exact_fraction: 0.5, trees: 16, kappa: 2, explore_share: null}
"""


@needs_systolic
def test_evaluator_options_load_as_the_evaluators_dataclass() -> None:
    spec = parse_spec(HYBRID_SPEC, "designs/hybrid.yaml")
    assert spec.evaluator_options == {"max_exact_fraction": 0.5, "trees": 16, "kappa": 2, "explore_share": None}
    options = parse_evaluator_options(spec.evaluator, spec.evaluator_options)
    assert options == HybridOptions(max_exact_fraction=0.5, trees=16, kappa=2.0, explore_share=None)
    assert isinstance(options.kappa, float)  # an integer stands for a float
    assert spec.to_dict()["evaluator_options"]["trees"] == 16
    without = parse_spec(HYBRID_SPEC.replace(HYBRID_SPEC.splitlines()[-1] + "\n", ""))
    assert without.evaluator_options == {} and "evaluator_options" not in without.to_dict()
    assert parse_evaluator_options("hybrid", {}) == HybridOptions()
    # the options steer which points are evaluated exactly, never an exact point's metrics: stored points stay valid
    assert spec.evaluation_fingerprint() == without.evaluation_fingerprint()
    assert spec.locate("evaluator_options.trees") == "designs/hybrid.yaml:5"


@needs_systolic
@pytest.mark.parametrize(
    "old, new, field, fragments",
    [
        ("trees: 16", "trees: 1.5", "evaluator_options.trees", ["trees=1.5 must be an int"]),
        ("trees: 16", "trees: true", "evaluator_options.trees", ["trees=True must be an int"]),
        ("kappa: 2", "kappa: wide", "evaluator_options.kappa", ["kappa='wide' must be a float"]),
        ("kappa: 2", "kapa: 2", "evaluator_options.kapa", ["no option 'kapa'", "kappa (a float, default 1.0)"]),
        ("evaluator: hybrid", "evaluator: analytical", "evaluator_options.max_exact_fraction", ["options: none"]),
    ],
)
def test_bad_evaluator_options_are_one_located_message(old: str, new: str, field: str, fragments: list[str]) -> None:
    expect(toy_error(HYBRID_SPEC.replace(old, new), "designs/hybrid.yaml"), 5, field, *fragments)


def test_every_spec_evaluator_has_a_factory_and_an_options_dataclass() -> None:
    from typing import get_args

    from dse.evaluators import EVALUATORS
    from dse.spec.schema import Spec

    names = set(get_args(Spec.model_fields["evaluator"].annotation))
    assert names == set(EVALUATORS) == set(EVALUATOR_OPTIONS)
    assert all(EVALUATORS[name].options is EVALUATOR_OPTIONS[name] for name in names)


@needs_systolic
def test_the_registry_refuses_bad_options_of_a_spec_built_in_code(tmp_path: Path, capsys) -> None:
    from dse.cli import main
    from dse.evaluators import make_evaluation
    from dse.session import build_evaluator

    spec = parse_spec(HYBRID_SPEC, tmp_path / "hybrid.yaml").model_copy(update={"evaluator_options": {"trees": "x"}})
    graph, exact = build_evaluator(spec)
    with pytest.raises(UserError, match="trees='x' must be an int") as info:
        make_evaluation(spec, graph, exact)
    assert info.value.where == spec.locate("evaluator_options.trees")
    path = tmp_path / "bad.yaml"
    path.write_text(HYBRID_SPEC.replace("trees: 16", "tree: 16"))
    assert main(["explore", str(path), "-o", str(tmp_path / "run"), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:5: evaluator_options.tree:" in err and "max_exact_fraction" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


# -- untrusted paths: a spec reads only files in its own folder unless given an absolute path --------------

TOPOLOGY = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
TOPOLOGY += "Conv1, 34, 34, 3, 3, 3, 16, 1,\n"


def _topology_spec(model: str, extra: str = "") -> str:
    return f"name: paths\nworkload: {{model: '{model}'}}\ntemplate: {{kind: systolic}}\n{extra}"


@pytest.mark.parametrize("model", ["../outside.csv", "sub/../../outside.csv", "link.csv"])
def test_relative_model_paths_may_not_leave_the_spec_folder(tmp_path: Path, model: str) -> None:
    (tmp_path / "outside.csv").write_text(TOPOLOGY)
    folder = tmp_path / "specs"
    (folder / "sub").mkdir(parents=True)
    (folder / "link.csv").symlink_to(tmp_path / "outside.csv")  # a link pointing out is refused too
    spec = folder / "spec.yaml"
    spec.write_text(_topology_spec(model))
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    assert "leads outside the spec's folder" in str(info.value) and "workload.model" in str(info.value)


def test_model_paths_inside_the_folder_or_absolute_are_read(tmp_path: Path) -> None:
    folder = tmp_path / "specs"
    (folder / "models").mkdir(parents=True)
    (folder / "models" / "net.csv").write_text(TOPOLOGY)
    (tmp_path / "elsewhere.csv").write_text(TOPOLOGY)
    spec = folder / "spec.yaml"
    spec.write_text(_topology_spec("models/net.csv"))
    assert load_spec(spec).workload.model_path == (folder / "models" / "net.csv").resolve()
    spec.write_text(_topology_spec(str(tmp_path / "elsewhere.csv")))  # the user's absolute path: allowed
    assert load_spec(spec).workload.model_path == (tmp_path / "elsewhere.csv").resolve()


def test_surrogate_path_may_not_leave_the_spec_folder(tmp_path: Path) -> None:
    (tmp_path / "model.joblib").write_bytes(b"x")
    folder = tmp_path / "specs"
    folder.mkdir()
    spec = folder / "spec.yaml"
    spec.write_text("name: s\nworkload: {model: jet_mlp}\ntemplate: {kind: systolic}\nsurrogate: ../model.joblib\n")
    with pytest.raises(SpecError, match="surrogate.*leads outside the spec's folder"):
        load_spec(spec)


def test_alias_bombs_and_oversized_specs_are_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]  # 10^9 values
    spec = tmp_path / "bomb.yaml"
    spec.write_text("\n".join(lines) + "\nname: *a8\n")
    with pytest.raises(SpecError, match="expands to more than 100,000 values"):
        load_spec(spec)
    spec.write_text("name: big\n# " + "x" * (1 << 20) + "\n")
    with pytest.raises(SpecError, match="a spec is at most"):
        load_spec(spec)
