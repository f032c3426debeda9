"""load_workload: zoo names, .onnx and SCALE-Sim .csv paths, and the errors for everything else."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from dse.errors import UserError
from dse.graph import GraphError, OpKind
from dse.workload import load_workload

SCALESIM_RESNET18 = Path(__file__).resolve().parents[2] / "shared" / "data" / "scalesim" / "inputs" / "resnet18.csv"


def _zoo():
    zoo = pytest.importorskip("dse.zoo")
    if not hasattr(zoo, "build") or "resnet18" not in zoo.names():
        pytest.skip("dse.zoo has no resnet18 yet")
    return zoo


def _write_onnx(path: Path, op_type: str = "Relu", input_shape: list | None = None) -> Path:
    """A 1x1 conv followed by one ``op_type`` node."""
    weight = numpy_helper.from_array(np.zeros((4, 3, 1, 1), dtype=np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node(op_type, ["c"], ["y"], name="last"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape or ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weight],
    )
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    onnx.save(model, str(path))
    return path


CSV_TEXT = (
    "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
    "first,10,10,3,3,4,8,1,\nsecond,8,8,3,3,8,8,1,\n"
)


def test_zoo_name_builds_the_zoo_model() -> None:
    zoo = _zoo()
    graph = load_workload("resnet18", batch=2, precision="fp16")
    reference = zoo.build("resnet18", batch=2, precision="fp16")
    assert [op.name for op in graph.ops] == [op.name for op in reference.ops]
    assert graph.macs == reference.macs == 2 * 1_814_073_344
    assert graph.tensors["image"].elem_bytes == 2


def test_zoo_options_are_passed_through_and_bad_ones_are_user_errors() -> None:
    _zoo()
    small = load_workload("resnet18", resolution=112)
    assert small.ops[0].dims["H"] == 112
    with pytest.raises(UserError, match="resnet18") as info:
        load_workload("resnet18", colour="blue")
    assert "colour" in str(info.value)
    with pytest.raises(UserError, match="resolution"):
        load_workload("resnet18", resolution=-3)


def test_unknown_model_says_what_is_allowed() -> None:
    _zoo()
    with pytest.raises(UserError) as info:
        load_workload("resnet19")
    message = str(info.value)
    assert "unknown model 'resnet19'" in message
    assert "resnet18" in message and ".onnx" in message and ".csv" in message


def test_onnx_path_resolves_against_base_dir(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    _write_onnx(tmp_path / "models" / "net.onnx")
    graph = load_workload("models/net.onnx", batch=3, base_dir=tmp_path)
    assert [op.kind for op in graph.ops] == [OpKind.CONV, OpKind.ELEMENTWISE]
    assert graph.op("conv").dims["N"] == 3
    assert graph.meta["source"] == str((tmp_path / "models" / "net.onnx").resolve())
    absolute = load_workload(str(tmp_path / "models" / "net.onnx"), base_dir=Path("/nonexistent"))
    assert absolute.op("conv").dims["N"] == 1


def test_onnx_symbolic_dims_option(tmp_path: Path) -> None:
    path = _write_onnx(tmp_path / "dyn.onnx", input_shape=["N", 3, "height", 8])
    with pytest.raises(UserError, match="symbolic dimension 'height'"):
        load_workload(str(path))
    graph = load_workload(str(path), symbolic_dims={"height": 16})
    assert graph.op("conv").dims["H"] == 16
    with pytest.raises(UserError, match=r"options \['resolution'\] do not apply to ONNX models"):
        load_workload(str(path), resolution=16)


def test_missing_file_names_the_resolved_path(tmp_path: Path) -> None:
    for name in ("missing.onnx", "missing.csv"):
        with pytest.raises(UserError) as info:
            load_workload(f"sub/{name}", base_dir=tmp_path)
        message = str(info.value)
        assert str(tmp_path / "sub" / name) in message
        assert "does not exist" in message and ".onnx" in message and ".csv" in message


def test_importer_errors_become_user_errors(tmp_path: Path) -> None:
    path = _write_onnx(tmp_path / "unsupported.onnx", op_type="Shrink")
    with pytest.raises(UserError, match="node 'last' has op type 'Shrink'") as info:
        load_workload(str(path))
    assert isinstance(info.value.__cause__, GraphError)
    assert info.value.__cause__.node == "last"
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text(CSV_TEXT.replace("second,8,8", "second,8,eight"))
    with pytest.raises(UserError, match=r"bad.csv:3: column 3 \('IFMAP Width'\)"):
        load_workload("bad.csv", base_dir=tmp_path)


def test_scalesim_csv(tmp_path: Path) -> None:
    (tmp_path / "topo.csv").write_text(CSV_TEXT)
    graph = load_workload("topo.csv", batch=2, precision="int16", base_dir=tmp_path)
    assert [op.name for op in graph.ops] == ["first", "second"]
    assert graph.op("second").inputs == ("first:out",)
    assert graph.macs == 2 * (8 * 8 * 8 * 4 * 9 + 8 * 6 * 6 * 8 * 9)
    assert graph.tensors["first:weight"].elem_bytes == 2
    with pytest.raises(UserError, match="do not apply to SCALE-Sim topologies"):
        load_workload("topo.csv", base_dir=tmp_path, resolution=3)


@pytest.mark.skipif(not SCALESIM_RESNET18.is_file(), reason=f"{SCALESIM_RESNET18} is absent")
def test_shared_scalesim_resnet18() -> None:
    graph = load_workload(str(SCALESIM_RESNET18))
    assert len(graph.ops) == 21
    assert graph.macs == 1_471_181_568  # sum of the macs column of resnet18_per_layer.csv (one run)


def test_other_file_types_and_bad_arguments(tmp_path: Path) -> None:
    _zoo()
    (tmp_path / "model.pt").write_bytes(b"\x00")
    with pytest.raises(UserError, match=r"file type '\.pt'.*\.onnx"):
        load_workload("model.pt", base_dir=tmp_path)
    with pytest.raises(UserError, match="non-empty string"):
        load_workload("")
    with pytest.raises(UserError, match="non-empty string"):
        load_workload(42)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="batch must be a positive integer"):
        load_workload("resnet18", batch=0)
    with pytest.raises(UserError, match="precision 'fp64' is not known; allowed: int4"):
        load_workload("resnet18", precision="fp64")
