"""The contract every hardware family passes, whatever its template, mappers and model.

Parametrized over ``dse.registry.FAMILIES`` (every mapper of every family), so a new family is checked
the moment it is registered: params() describe legal defaults, instantiate() builds an Arch, map() and
evaluate() give metrics in the schema of ``hwmodels.base.METRICS`` with per-layer rows, the same point
twice gives identical metrics, the evaluator survives a pickle round trip (what process-pool and Dask
workers receive), and an illegal value is one clear error naming the parameter, printed by the CLI as
one line with exit 2.
"""

from __future__ import annotations

import math
import pickle
from typing import Any

import pytest

from dse.cli import main, user_errors
from dse.errors import EXIT_USER_ERROR
from dse.evaluate import PointEvaluator
from dse.registry import FAMILIES
from hwmodels.base import METRICS, LayerMetrics, Metrics
from templates.base import Param, TemplateError

WORKLOAD = "small_cnn"  # 8 ops (conv, pool, matmul, elementwise, softmax): every family maps it in well under 1 s
FAMILY_MAPPERS = [(kind, mapper) for kind, fam in FAMILIES.items() for mapper in fam.mappers]


@pytest.fixture(scope="module")
def graph(zoo_graph):
    return zoo_graph(WORKLOAD)


def default_point(kind: str) -> dict[str, Any]:
    return {p.name: p.default for p in FAMILIES[kind].template().params()}


def illegal_value(param: Param) -> Any | None:
    """A value ``param`` must refuse: outside its choices or below its lower bound (None when it has neither)."""
    if param.choices:
        return "not-a-choice" if param.type == "str" else max(c for c in param.choices if c is not None) * 1000 + 7
    if param.low is not None:
        return param.low - 1 if param.type == "int" else param.low - 1.0
    return None


def checkable_param(kind: str) -> tuple[Param, Any]:
    for param in FAMILIES[kind].template().params():
        value = illegal_value(param)
        if value is not None:
            return param, value
    raise AssertionError(f"template {kind} has no parameter with choices or a lower bound to check")


@pytest.fixture(scope="module")
def evaluated(graph) -> dict[tuple[str, str], tuple[PointEvaluator, Metrics]]:
    """Every family's every mapper on the default point, evaluated once for the whole module."""
    out = {}
    for kind, mapper in FAMILY_MAPPERS:
        evaluator = PointEvaluator(graph, kind, mapper)
        out[kind, mapper] = (evaluator, evaluator(default_point(kind)))
    return out


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_params_have_legal_defaults_and_instantiate(kind):
    template = FAMILIES[kind].template()
    params = template.params()
    assert params and len({p.name for p in params}) == len(params), "parameter names must be unique"
    for p in params:
        assert p.doc, f"{kind}.{p.name} has no doc"
        assert p.check(p.default) == p.default or p.default is None
    arch = template.instantiate(default_point(kind))
    assert arch.as_dict()


@pytest.mark.parametrize("kind,mapper", FAMILY_MAPPERS)
def test_map_and_evaluate_give_metrics_in_the_schema(kind, mapper, evaluated, graph):
    _, metrics = evaluated[kind, mapper]
    for name, value in metrics.values.items():
        assert name in METRICS, f"{kind}/{mapper} reports {name!r}, which hwmodels.base.METRICS does not define"
        assert METRICS[name][0], f"metric {name} has no unit"
        assert math.isfinite(value), f"{kind}/{mapper}: {name} = {value}"
    assert all(math.isfinite(v) and v >= 0 for v in metrics.energy_breakdown_pj.values())
    assert metrics.values["latency_ms"] > 0, f"{kind}/{mapper}: every family reports a positive latency"
    op_names = {op.name for op in graph.ops}
    assert metrics.layers, f"{kind}/{mapper} gives no per-layer rows"
    for layer in metrics.layers:
        assert isinstance(layer, LayerMetrics)
        assert layer.layer.split("+")[0] in op_names or layer.layer in op_names or layer.extra, layer.layer
        row = layer.row()
        assert row["layer"] == layer.layer and row["cycles"] >= 0


@pytest.mark.parametrize("kind,mapper", FAMILY_MAPPERS)
def test_same_point_twice_and_after_pickling_gives_identical_metrics(kind, mapper, evaluated):
    evaluator, first = evaluated[kind, mapper]
    point = default_point(kind)
    assert evaluator(point).flat() == first.flat()
    worker_copy = pickle.loads(pickle.dumps(evaluator))  # what a pool or Dask worker receives
    again = worker_copy(point)
    assert again.flat() == first.flat()
    assert [layer.row() for layer in again.layers] == [layer.row() for layer in first.layers]


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_an_illegal_value_is_one_error_naming_the_parameter(kind):
    param, value = checkable_param(kind)
    with pytest.raises(TemplateError) as raised:
        FAMILIES[kind].template().instantiate({**default_point(kind), param.name: value})
    assert param.name in str(raised.value)
    assert isinstance(raised.value, user_errors()), "the CLI must print it as a user error"


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_the_cli_prints_an_illegal_value_as_one_line(kind, tmp_path, capsys):
    param, value = checkable_param(kind)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"name: conformance-{kind}\nworkload: {{model: {WORKLOAD}}}\ntemplate: {{kind: {kind}}}\n"
        "objectives: [min latency_ms]\n"
    )
    code = main(["evaluate", str(spec), "--point", f"{param.name}={value}"])
    err = capsys.readouterr().err
    assert code == EXIT_USER_ERROR
    assert err.startswith("dse: error:") and err.count("\n") == 1 and param.name in err
    assert "Traceback" not in err
