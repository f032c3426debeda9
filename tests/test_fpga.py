"""fpga_dataflow: part catalog, template knobs, hls4ml reuse-factor rules, resource/latency model, designs."""

from __future__ import annotations

from pathlib import Path

import pytest

from dse import zoo
from dse.evaluate import PointEvaluator
from dse.graph import GraphBuilder
from dse.peers import wa_hls4ml_errors, wa_hls4ml_predict
from dse.spec import load_spec
from hwmodels.catalogs.fpga import UnknownPartError, get_part, part_names
from hwmodels.fpga.cost import bram18_blocks, dsp_per_mult
from mappers.base import MappingError
from mappers.fpga import FpgaDataflowMapper, closest_reuse_factor, valid_reuse_factors
from surrogates.truth.wa_hls4ml import network_split, read_wa_hls4ml
from templates.base import TemplateError
from templates.fpga_dataflow import FpgaDataflowTemplate

ROOT = Path(__file__).resolve().parents[1]
WA_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "wa-hls4ml" / "wa_2layer_subset.csv"


def test_catalog_has_every_required_part_with_sources():
    assert {"xcu250", "xcu280", "xcu55c", "xcvu9p", "xcvu13p", "xczu9eg", "xc7z020"} <= set(part_names())
    u250 = get_part("xcu250")
    assert (u250.dsp.value, u250.lut.value, u250.bram18k.value, u250.uram.value) == (12288, 1728000, 5376, 1280)
    assert get_part("xc7z020").dsp.value == 220 and get_part("xc7z020").dsp_a_bits.value == 25
    assert get_part("xcu250-figd2104-2L-e") is u250
    for name in part_names():
        assert all(source for source in get_part(name).sources().values())
    with pytest.raises(UnknownPartError, match="choose one of: xcu250"):
        get_part("xc9999")


@pytest.mark.parametrize("n_in,n_out", [(16, 64), (64, 32), (32, 5), (72, 16), (9, 8)])
def test_valid_reuse_factors_match_hls4ml(n_in, n_out):
    from hls4ml.backends import get_backend

    assert valid_reuse_factors(n_in, n_out) == get_backend("Vivado").get_valid_reuse_factors(n_in, n_out)
    valid = valid_reuse_factors(n_in, n_out)
    for chosen in (1, 3, 7, 100, 5000):
        assert closest_reuse_factor(valid, chosen) == get_backend("Vivado").get_closest_reuse_factor(valid, chosen)


def test_template_defaults_overrides_and_errors():
    template = FpgaDataflowTemplate()
    arch = template.instantiate({"reuse_factor": 4, "layer1_reuse_factor": 16, "layer1_weight_width": 8})
    assert arch.layer(0).reuse_factor == 4 and arch.layer(0).weight.hls() == "ap_fixed<16,6>"
    assert arch.layer(1).reuse_factor == 16 and arch.layer(1).weight.hls() == "ap_fixed<8,6>"
    assert arch.layer(30).reuse_factor == 4  # beyond MAX_LAYERS: model level
    with pytest.raises(TemplateError, match="integer=9 exceeds width=8"):
        template.instantiate({"width": 8, "integer": 9})
    with pytest.raises(TemplateError, match="choose one of"):
        template.instantiate({"part": "xc9999"})
    with pytest.raises(TemplateError, match="layer2_execution"):
        template.instantiate({"layer2_execution": "hybrid"})


def test_reuse_factor_is_snapped_like_hls4ml_and_recorded():
    graph = zoo.build("jet_mlp")
    evaluator = PointEvaluator(graph, "fpga_dataflow")
    metrics = evaluator({"strategy": "resource", "reuse_factor": 5})
    plans = {layer.layer: layer.extra for layer in metrics.layers if "reuse_factor" in layer.extra}
    assert plans["fc1"]["reuse_factor"] == 4 and plans["fc1"]["requested_reuse_factor"] == 5
    assert any("fc1" in note and "using 4" in note for note in metrics.info["notes"])


def test_dsp_latency_and_interval_of_the_jet_mlp():
    evaluator = PointEvaluator(zoo.build("jet_mlp"), "fpga_dataflow")
    default = evaluator({})
    assert default["dsp"] == 16 * 64 + 64 * 32 + 32 * 32 + 32 * 5  # RF 1: one multiplier per weight
    assert default["ii_cycles"] == 1  # latency strategy, io_parallel: fully pipelined
    narrow = evaluator({"weight_width": 6, "weight_integer": 1})
    assert narrow["dsp"] == 0 and narrow["lut"] > default["lut"] * 0.5  # 6-bit products go to LUTs
    resource = evaluator({"strategy": "resource", "reuse_factor": 32})
    assert resource["dsp"] < default["dsp"] / 16
    assert resource["ii_cycles"] == resource["latency_cycles"]  # io_parallel Resource layers do not overlap
    assert 0 < resource["fpga_util"] < default["fpga_util"]


@pytest.mark.parametrize(
    ("model", "point"),
    [
        ("jet_mlp", {"strategy": "resource", "reuse_factor": 4}),
        ("small_cnn", {"strategy": "resource", "reuse_factor": 8, "io_type": "io_stream"}),
    ],
)
def test_a_batch_streams_through_the_same_pipeline_one_sample_per_interval(model, point):
    """An hls4ml design takes one sample at a time: a batch of 4 needs the same engines, interval, throughput and
    power as one sample, its latency adds three intervals and its energy is four samples' worth."""
    one = PointEvaluator(zoo.build(model, batch=1), "fpga_dataflow")(point)
    four = PointEvaluator(zoo.build(model, batch=4), "fpga_dataflow")(point)
    for name in ("dsp", "lut", "ff", "bram", "ii_cycles", "throughput_ips", "power_w", "tops_per_w"):
        assert four[name] == pytest.approx(one[name]), name
    assert four["latency_cycles"] == one["latency_cycles"] + 3 * one["ii_cycles"]
    assert four["energy_mj"] == pytest.approx(4 * one["energy_mj"])


def test_dsp_geometry_and_bram_shapes():
    part = get_part("xcu250")
    assert dsp_per_mult(16, 16, part) == 1
    assert dsp_per_mult(32, 32, part) == 4
    assert dsp_per_mult(6, 16, part) == 0
    assert bram18_blocks(1024, 18) == 1 and bram18_blocks(1024, 36) == 2 and bram18_blocks(0, 8) == 0


def test_hybrid_shares_light_layers_without_slowing_the_pipeline():
    evaluator = PointEvaluator(zoo.build("small_cnn"), "fpga_dataflow")
    base = {"strategy": "resource", "reuse_factor": 8, "io_type": "io_stream"}
    dataflow = evaluator({**base, "execution": "dataflow"})
    hybrid = evaluator({**base, "execution": "hybrid"})
    sequential = evaluator({**base, "execution": "sequential"})
    assert hybrid["dsp"] < dataflow["dsp"] and hybrid["ii_cycles"] == dataflow["ii_cycles"]
    assert len(hybrid.info["shared_engine"]["members"]) >= 2
    assert sequential.info["shared_engine"]["members"] == ["conv1", "conv2", "dense"]
    pinned = evaluator(
        {**base, "execution": "dataflow", "layer1_execution": "sequential", "layer2_execution": "sequential"}
    )
    assert pinned.info["shared_engine"]["members"] == ["conv2", "dense"]


def test_unsupported_graphs_are_refused_with_the_op_named():
    b = GraphBuilder("residual")
    x = b.input("x", (1, 8))
    y = b.linear(x, 8, name="fc")
    b.add(y, x, name="skip")
    arch = FpgaDataflowTemplate().instantiate({})
    with pytest.raises(MappingError, match="'skip'") as err:
        FpgaDataflowMapper().map(b.build(), arch)
    assert err.value.node == "skip"


@pytest.mark.parametrize("name", ["jet_mlp_fpga.yaml", "small_cnn_fpga.yaml"])
def test_designs_load_and_their_first_point_evaluates(name):
    from dse.session import build_evaluator

    spec = load_spec(ROOT / "designs" / name)
    _, evaluator = build_evaluator(spec)
    point = next(iter(spec.design_space().grid()))
    assert evaluator(point)["latency_cycles"] > 0


@pytest.mark.skipif(not WA_DATA.is_file(), reason=f"wa-hls4ml reference data not found at {WA_DATA}")
def test_model_meets_the_wa_hls4ml_targets_on_held_out_networks():
    rows = read_wa_hls4ml(WA_DATA)
    table = wa_hls4ml_errors(rows, wa_hls4ml_predict(rows))
    test = table[table["half"] == "test"].set_index("target")
    assert set(test.index) == {"latency_cycles", "ii_cycles", "dsp", "lut", "ff", "bram"}
    for target, row in test.iterrows():
        assert row["median_ape_%"] <= row["limit_%"], f"{target}: {row['median_ape_%']:.1f}% > {row['limit_%']}%"
    held_out = network_split(rows)
    assert held_out.any() and (~held_out).any()
    assert not set(rows[held_out]["network"]) & set(rows[~held_out]["network"])
