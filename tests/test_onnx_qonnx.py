"""QONNX / Brevitas quantizers: per-layer precision (bits, scale, signedness) on the imported ops, shown by
``dse validate``, taken by the fpga_dataflow mapper as each layer's weight type, and evaluated by export."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from dse.cli import main
from dse.describe import workload_lines
from dse.graph import GraphError
from dse.importers import load_onnx
from hwmodels.accuracy.hls_network import qonnx_quantized
from mappers.fpga import FpgaDataflowMapper
from templates.fpga_dataflow import FixedType, FpgaDataflowTemplate
from tests.onnx_contrib_models import finn_conv, qonnx_mlp

SPEC = """
name: qonnx-mlp
workload: {{model: {model}, batch: 1}}
template:
  kind: fpga_dataflow
  params: {{part: xcu250, io_type: io_parallel, strategy: resource, reuse_factor: [1, 4], width: 16, integer: 6}}
objectives: [min latency_cycles, min lut]
search: {{strategy: grid}}
"""


@pytest.mark.parametrize("domain", ["qonnx.custom_op.general", "onnx.brevitas"])
def test_quantizers_become_per_layer_precision(tmp_path: Path, domain: str) -> None:
    graph = load_onnx(qonnx_mlp(tmp_path / "mlp.onnx", domain))
    fc1, fc2 = graph.op("fc1"), graph.op("fc2")
    assert fc1.precision_label == "int8 (weights int4)" and fc2.precision_label == "uint3 (weights int6)"
    assert (fc1.attrs["act_bits"], fc1.attrs["act_scale"], fc1.attrs["act_signed"]) == (8, 2.0**-4, True)
    assert (fc1.attrs["weight_bits"], fc1.attrs["weight_scale"], fc1.attrs["weight_fixed"]) == (4, 0.125, (4, 1))
    assert fc2.attrs["act_signed"] is False and fc2.attrs["act_fixed"] == (4, 0)  # unsigned: one sign bit more
    assert fc2.attrs["weight_fixed"] == (6, 3)  # scale 0.1 is no power of two: 6 bits covering +-3.2
    assert graph.macs == 16 * 32 + 32 * 10
    assert graph.tensors["fc1:weight"].nbytes == 16 * 32  # sub-byte weights stored one per byte
    assert graph.meta["quantized_precisions"] == ["int8", "uint3"]


def test_bipolar_weights_multithreshold_and_trunc(tmp_path: Path) -> None:
    graph = load_onnx(finn_conv(tmp_path / "finn.onnx"))
    conv, act, fc = graph.op("conv"), graph.op("act"), graph.op("fc")
    assert conv.precision_label == "bipolar" and conv.attrs["weight_bits"] == 1 and conv.attrs["weight_fixed"] == (2, 2)
    assert act.attrs["fn"] == "multi_threshold" and act.attrs["thresholds"] == 15 and act.attrs["precision"] == "uint4"
    assert graph.tensors[act.weights[0]].shape == (8, 15)
    assert fc.attrs["act_bits"] == 2 and fc.attrs["act_signed"] is False  # Trunc to 2 bits, through the Flatten
    assert graph.macs == 8 * 3 * 9 * 36 + 8 * 36 * 10


def test_validate_shows_the_layer_precisions(tmp_path: Path) -> None:
    out = "\n".join(workload_lines(load_onnx(qonnx_mlp(tmp_path / "mlp.onnx"))))  # what `dse validate` prints
    assert "precision int8 (weights int4): fc1" in out and "precision uint3 (weights int6): fc2" in out
    assert (
        "quantized fc1: input 8-bit signed x 0.0625 (ap_fixed<8,4>), weights 4-bit signed x 0.125 (ap_fixed<4,1>)"
        in out
    )
    assert "quantized fc2: input 3-bit unsigned x 0.05 (ap_fixed<4,0>)" in out


def test_fpga_mapper_takes_the_trained_weight_types(tmp_path: Path) -> None:
    graph = load_onnx(qonnx_mlp(tmp_path / "mlp.onnx"))
    template = FpgaDataflowTemplate()
    mapper = FpgaDataflowMapper()

    def weight_types(point: dict) -> list[FixedType]:
        mapping = mapper.map(graph, template.instantiate(point))
        return [mapping.ops[name].payload.plan.knobs.weight for name in ("fc1", "fc2")]

    assert weight_types({"weight_width": 16, "weight_integer": 6}) == [FixedType(4, 1), FixedType(6, 3)]
    pinned = weight_types({"layer1_weight_width": 8, "layer1_weight_integer": 2})
    assert pinned == [FixedType(4, 1), FixedType(8, 2)]  # an explicit per-layer type still wins


def test_quantized_weights_evaluate_like_qonnx() -> None:
    def node(op_type: str, **attrs: object) -> onnx.NodeProto:
        return helper.make_node(
            op_type, ["x", "s", "z", "b"], ["y"], name="q", domain="qonnx.custom_op.general", **attrs
        )

    x = np.array([0.3, -2.0, 0.06, 5.0])
    signed = qonnx_quantized(node("Quant", signed=1, narrow=1), [x, np.array(0.125), np.array(0.0), np.array(4.0)])
    assert signed.tolist() == [0.25, -0.875, 0.0, 0.875]  # narrow: -7..7
    unsigned = qonnx_quantized(node("Quant", signed=0), [x, np.array(0.05), np.array(0.0), np.array(3.0)])
    assert np.allclose(unsigned, [0.3, 0.0, 0.05, 0.35])
    bipolar = qonnx_quantized(node("BipolarQuant"), [x, np.array(0.5)])
    assert bipolar.tolist() == [0.5, -0.5, 0.5, 0.5]


def test_a_bit_width_that_is_no_integer_is_refused(tmp_path: Path) -> None:
    with pytest.raises(GraphError) as refused:
        load_onnx(qonnx_mlp(tmp_path / "mlp.onnx", bits=2.5))
    message = str(refused.value)
    assert "node 'w1_q' (Quant)" in message and "bit width 2.5 is not an integer from 1 to 32" in message


def test_brevitas_style_model_explores_and_exports(tmp_path: Path) -> None:
    """Slow (export builds an hls4ml project): the exported layers carry the trained types and weights."""
    from dse.export import export_point

    model = qonnx_mlp(tmp_path / "mlp.onnx")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(model=model.name))
    run = tmp_path / "run"
    assert main(["explore", str(spec), "-o", str(run), "--executor", "serial", "-q"]) == 0
    point = (run / "pareto.csv").read_text().splitlines()[1].split(",")[0]
    report = export_point(run, point, tmp_path / "out", backend="Vitis", csim=False)
    layers = report["hls_config"]["LayerName"]
    assert layers["fc1"]["Precision"]["weight"] == "ap_fixed<4,1>"
    assert layers["fc2"]["Precision"]["weight"] == "ap_fixed<6,3>"


def test_a_brevitas_export_imports_with_its_layer_precisions(tmp_path: Path) -> None:
    """Slow, and only where brevitas and onnxoptimizer are installed (not in the test extra: brevitas pins
    setuptools): a real Brevitas QONNX export, the same form as qonnx_mlp."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxoptimizer")
    brevitas_nn = pytest.importorskip("brevitas.nn")
    from brevitas.export import export_qonnx

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inp = brevitas_nn.QuantIdentity(bit_width=8, return_quant_tensor=True)
            self.fc1 = brevitas_nn.QuantLinear(16, 32, bias=True, weight_bit_width=4)
            self.relu = brevitas_nn.QuantReLU(bit_width=3, return_quant_tensor=True)
            self.fc2 = brevitas_nn.QuantLinear(32, 10, bias=True, weight_bit_width=6)

        def forward(self, x):
            return self.fc2(self.relu(self.fc1(self.inp(x))))

    torch.manual_seed(0)
    path = tmp_path / "brevitas_mlp.onnx"
    export_qonnx(Net().eval(), torch.randn(1, 16), export_path=str(path))
    graph = load_onnx(path)
    labels = [op.precision_label for op in graph.ops if op.macs]
    assert labels == ["int8 (weights int4)", "uint3 (weights int6)"]
    assert [op.attrs["weight_fixed"][0] for op in graph.ops if op.macs] == [4, 6]
