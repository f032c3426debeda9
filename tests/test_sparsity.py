"""Sparsity in the graph, the spec and the SCALE-Sim topology; the sparse datapath's prices; DRACO reshaping."""

from __future__ import annotations

import pytest

from dse.errors import UserError
from dse.graph import GraphBuilder, OpSparsity
from dse.importers.scalesim_csv import load_scalesim_csv
from dse.importers.sparsity import parse_pattern, with_sparsity
from dse.registry import make_mapper
from dse.workload import load_workload
from hwmodels.systolic.model import SystolicModel
from hwmodels.systolic.sparse import condensed_k
from mappers.base import MappingError
from mappers.systolic.fold import SystolicFoldMapper
from templates.base import TemplateError
from templates.systolic import SystolicTemplate


def _run(graph, **point):
    arch = SystolicTemplate().instantiate({"rows": 16, "cols": 16, "dataflow": "ws", **point})
    return SystolicModel().evaluate(SystolicFoldMapper().map(graph, arch), arch)


def _conv(density: OpSparsity | None = None):
    b = GraphBuilder("one")
    b.output(b.conv(b.input("x", (1, 16, 12, 12)), 32, 3, name="conv"))
    g = b.build()
    return with_sparsity(g, {"conv": density}) if density else g


def test_patterns_parse_and_refuse():
    assert parse_pattern("2:4") == OpSparsity(2, 4, 0.5)
    assert parse_pattern("dense").dense and parse_pattern("4:4").dense
    assert parse_pattern(0.3).weight_density == 0.3
    for bad in ("5:4", "0:4", "2-4", 1.5, True):
        with pytest.raises(ValueError, match="allowed"):
            parse_pattern(bad)
    assert condensed_k(27, 2, 4) == 14 and condensed_k(144, 2, 4) == 72 and condensed_k(9, 1, 4) == 3


def test_spec_sparsity_default_and_layers():
    g = load_workload("mobilenet_v1", sparsity={"default": "2:4", "layers": {"conv1": "dense", "FC": 0.3}})
    by = {op.name: op.sparsity for op in g.ops}
    assert by["conv1"].dense and by["conv_pw_1"].label == "2:4" and by["FC"].label == "d=0.30"
    with pytest.raises(UserError, match="'nope' is not a conv/matmul"):
        load_workload("mobilenet_v1", sparsity={"layers": {"nope": "2:4"}})
    with pytest.raises(UserError, match="allowed keys"):
        load_workload("mobilenet_v1", sparsity={"defualt": "2:4"})


def test_spec_file_error_is_one_line(tmp_path):
    from dse.spec import load_spec
    from dse.spec.messages import SpecError

    spec = tmp_path / "s.yaml"
    spec.write_text("name: x\nworkload: {model: small_cnn, sparsity: {default: '3:2'}}\ntemplate: {kind: systolic}\n")
    with pytest.raises(SpecError, match="3:2"):
        load_spec(spec)


def test_scalesim_topology_nm_column(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text(
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Sparsity,\n"
        "c1,10,10,3,3,8,16,1,2:4,\nc2,8,8,3,3,16,16,1,1:1,\n"
    )
    g = load_scalesim_csv(csv)
    assert g.op("c1").sparsity == OpSparsity(2, 4, 0.5) and g.op("c2").sparsity.dense


def test_dense_graph_on_sparse_array_computes_the_same():
    plain, sparse_hw = _run(_conv()), _run(_conv(), sparsity_support=True)
    assert plain.values["latency_cycles"] == sparse_hw.values["latency_cycles"]
    assert plain.values["energy_mj"] < sparse_hw.values["energy_mj"]  # same work, more area -> leakage


def test_two_of_four_halves_compute_and_weights():
    dense = _run(_conv(OpSparsity(2, 4, 0.5)))  # no sparsity_support: zeros are computed
    sparse = _run(_conv(OpSparsity(2, 4, 0.5)), sparsity_support=True)
    d, s = dense.layers[0], sparse.layers[0]
    assert s.compute_cycles < d.compute_cycles and s.macs == d.macs // 2
    assert s.extra["filter_metadata_bits"] == 16 * 9 * 32 // 2 * 2  # 2 bits per kept weight
    gate = _run(_conv(OpSparsity(2, 4, 0.5)), sparsity_support=True, sparse_mac="gate").layers[0]
    assert gate.compute_cycles == d.compute_cycles and gate.energy_breakdown_pj["mac"] < d.energy_breakdown_pj["mac"]


def test_unstructured_energy_falls_with_density():
    energies = [
        _run(_conv(OpSparsity(weight_density=x)), sparsity_support=True, sparse_rep="bitmask").values["energy_mj"]
        for x in (0.9, 0.5, 0.1)
    ]
    assert energies[0] > energies[1] > energies[2]


def test_optimized_mapping_only_ws():
    with pytest.raises(TemplateError, match="only under dataflow=ws"):
        SystolicTemplate().instantiate({"dataflow": "os", "sparsity_optimized_mapping": True})
    with pytest.raises(TemplateError, match="sparse_pattern"):
        SystolicTemplate().instantiate({"sparse_pattern": "7:3"})


def test_draco_rounding_fills_the_array_and_tracks_macs():
    g = load_workload("mobilenet_v1")
    arch = SystolicTemplate().instantiate({"rows": 64, "cols": 64, "round_channels": True})
    mapped = SystolicFoldMapper().map(g, arch).graph
    for op in mapped.ops:
        if op.kind.value == "conv" and op.dims.get("G", 1) == 1:
            assert op.dims["K"] % 64 == 0, op.name
    assert mapped.op("FC").dims["N"] == g.op("FC").dims["N"]  # the classifier keeps its classes
    assert sum(o.macs for o in mapped.ops) > sum(o.macs for o in g.ops)
    half = SystolicTemplate().instantiate({"width_multiplier": 0.5})
    assert sum(o.macs for o in SystolicFoldMapper().map(g, half).graph.ops) < 0.3 * sum(o.macs for o in g.ops)


def test_sparse_layer_choice():
    g = load_workload("mobilenet_v1")
    arch = SystolicTemplate().instantiate({"sparsity_support": True, "sparse_layers": "pointwise"})
    mapped = SystolicFoldMapper().map(g, arch).graph
    assert mapped.op("conv_pw_3").sparsity.label == "2:4" and mapped.op("conv_dw_3").sparsity.dense


def _macs(graph) -> int:
    return sum(op.macs for op in graph.ops)


def _two_convs():
    b = GraphBuilder("two")
    x = b.conv(b.input("x", (1, 8, 10, 10)), 20, 3, name="c1")
    b.output(b.conv(x, 12, 1, name="c2"))
    return b.build()


@pytest.mark.parametrize("mapper", ["greedy", "cpsat"])
def test_tiling_mappers_apply_the_workload_axes(mapper):
    """cpsat and greedy reshape the graph as fold does: the mapping describes the widened network."""
    arch = SystolicTemplate().instantiate({"rows": 16, "cols": 16, "width_multiplier": 1.5, "round_channels": True})
    options = {"time_limit_s": 2.0} if mapper == "cpsat" else {}
    mapping = make_mapper("systolic", mapper, options).map(_two_convs(), arch)
    fold = SystolicFoldMapper().map(_two_convs(), arch)
    assert mapping.graph.op("c1").dims["K"] == fold.graph.op("c1").dims["K"] == 32  # 20 x 1.5 -> 30 -> 32
    assert _macs(mapping.graph) == _macs(fold.graph) > _macs(_two_convs())


@pytest.mark.parametrize("mapper", ["greedy", "cpsat"])
def test_tiling_mappers_refuse_sparse_execution(mapper):
    graph = with_sparsity(_two_convs(), {"c1": parse_pattern("2:4")})
    sparse_arch = SystolicTemplate().instantiate({"rows": 16, "cols": 16, "sparsity_support": True})
    with pytest.raises(MappingError, match="'c1' is 2:4 sparse.*use mapper: fold"):
        make_mapper("systolic", mapper, {}).map(graph, sparse_arch)
    dense_arch = SystolicTemplate().instantiate({"rows": 16, "cols": 16})  # runs the zeros: nothing to refuse
    assert make_mapper("systolic", mapper, {}).map(graph, dense_arch).ops


def test_layers_carry_utilisation_before_and_after_reshaping():
    """Rounding MobileNet's widths to the 64-wide array doubles conv_pw_1's PE utilisation (32 -> 64
    filters fill all columns under ws); the dense shape's figure sits beside it, and the report plots both."""
    import pandas as pd

    from dse.report.figures_layers import utilization_traces

    g = load_workload("mobilenet_v1")
    arch = SystolicTemplate().instantiate({"rows": 64, "cols": 64, "dataflow": "ws", "round_channels": True})
    rows = {r["layer"]: r for r in (layer.row() for layer in _evaluate(g, arch).layers)}
    pw = rows["conv_pw_1"]
    assert pw["pe_utilization"] == pytest.approx(2 * pw["pe_utilization_dense_shape"], rel=0.02)
    plain = {r["layer"]: r for r in (layer.row() for layer in _evaluate(g, SystolicTemplate().instantiate({})).layers)}
    assert "pe_utilization_dense_shape" not in plain["conv_pw_1"]  # not reshaped: no "before" figure
    frame = pd.DataFrame([pw, rows["conv1"]])
    traces = utilization_traces(frame, frame["layer"].to_numpy(), True)
    assert [t.name for t in traces] == ["PE utilisation (as run)", "PE utilisation, dense shape (before reshaping)"]


def _evaluate(graph, arch):
    return SystolicModel().evaluate(SystolicFoldMapper().map(graph, arch), arch)
