"""Fuzzing the ONNX importer: broken files give one short GraphError, never a traceback, hang or huge allocation.

Inputs: a valid model truncated or with flipped bits, and valid protobufs that lie (inconsistent
shapes, cycles, zero-sized dimensions, 10^9-element tensors declared without data, Expand/Range/
ConstantOfShape to 10^9 elements). Property: ``load_onnx`` returns a graph or raises GraphError whose
message is at most 15 lines; it finishes within hypothesis' deadline; peak memory stays bounded.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from dse.graph import GraphError
from dse.importers import load_onnx

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FUZZ = settings(max_examples=150, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture])
MEMORY_BOUND = 200 * 2**20  # bytes of Python allocations while importing one fuzzed file


def _model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "fuzz", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _value(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [] if shape is None else shape)


def base_model() -> bytes:
    """A small transformer-ish model: conv, reshape through Shape arithmetic, matmul, softmax."""
    w = numpy_helper.from_array(np.ones((8, 3, 3, 3), np.float32), "w")
    fc = numpy_helper.from_array(np.ones((8, 4), np.float32), "fc")
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    minus1 = numpy_helper.from_array(np.array([-1, 8], np.int64), "tail")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Shape", ["r"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "axes"], ["n"], name="gather", axis=0),
        helper.make_node("Transpose", ["r"], ["t"], name="transpose", perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["t", "tail"], ["flat"], name="reshape"),
        helper.make_node("MatMul", ["flat", "fc"], ["m"], name="matmul"),
        helper.make_node("Softmax", ["m"], ["y"], name="softmax"),
    ]
    model = _model(nodes, [_value("x", ["batch", 3, 8, 8])], [_value("y", None)], [w, fc, axes, minus1])
    return model.SerializeToString()


BASE = base_model()


def check(path: Path) -> None:
    """The fuzz property: a graph, or one short GraphError naming the file; bounded memory."""
    tracemalloc.start()
    try:
        load_onnx(path)
    except GraphError as err:
        message = str(err)
        assert len(message.splitlines()) <= 15, message
        assert str(path) in message or err.node, message
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < MEMORY_BOUND, f"peak {peak / 2**20:.0f} MiB"


def test_base_model_imports(tmp_path: Path) -> None:
    path = tmp_path / "base.onnx"
    path.write_bytes(BASE)
    graph = load_onnx(path)
    assert graph.macs == 8 * 8 * 8 * 27 + 64 * 8 * 4


@FUZZ
@given(cut=st.integers(min_value=0, max_value=len(BASE) - 1))
def test_truncated_files(tmp_path_factory, cut: int) -> None:
    path = tmp_path_factory.mktemp("cut") / "m.onnx"
    path.write_bytes(BASE[:cut])
    check(path)


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(BASE) - 1), st.integers(0, 7)), min_size=1, max_size=8))
def test_bit_flipped_files(tmp_path_factory, flips: list[tuple[int, int]]) -> None:
    data = bytearray(BASE)
    for position, bit in flips:
        data[position] ^= 1 << bit
    path = tmp_path_factory.mktemp("flip") / "m.onnx"
    path.write_bytes(bytes(data))
    check(path)


def lying_models() -> st.SearchStrategy[onnx.ModelProto]:
    """Valid protobufs whose content is inconsistent or enormous."""
    dim = st.integers(min_value=0, max_value=10**9)
    small = st.integers(min_value=0, max_value=64)

    def mismatched_matmul(k1: int, k2: int) -> onnx.ModelProto:
        w = numpy_helper.from_array(np.ones((max(k2, 1), 4), np.float32), "w")
        node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
        return _model([node], [_value("x", [1, k1])], [_value("y", None)], [w])

    def declared_huge(n: int, m: int) -> onnx.ModelProto:
        weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[n, m])  # no data at all
        node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
        return _model([node], [_value("x", [1, n])], [_value("y", None)], [weight])

    def huge_constant_of_shape(n: int) -> onnx.ModelProto:
        shape = numpy_helper.from_array(np.array([n, 1000], np.int64), "shape")
        nodes = [
            helper.make_node("ConstantOfShape", ["shape"], ["big"], name="cos"),
            helper.make_node("Add", ["x", "big"], ["y"], name="add"),
        ]
        return _model(nodes, [_value("x", [1, 1000])], [_value("y", None)], [shape])

    def huge_expand(n: int) -> onnx.ModelProto:
        shape = numpy_helper.from_array(np.array([n, n], np.int64), "shape")
        one = numpy_helper.from_array(np.ones((1,), np.float32), "one")
        nodes = [
            helper.make_node("Expand", ["one", "shape"], ["big"], name="expand"),
            helper.make_node("Mul", ["x", "big"], ["y"], name="mul"),
        ]
        return _model(nodes, [_value("x", [1, 1])], [_value("y", None)], [shape, one])

    def huge_range(n: int) -> onnx.ModelProto:
        bounds = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("a", 0), ("b", n), ("d", 1))]
        nodes = [
            helper.make_node("Range", ["a", "b", "d"], ["r"], name="range"),
            helper.make_node("Cast", ["r"], ["rf"], name="cast", to=TensorProto.FLOAT),
            helper.make_node("Add", ["x", "rf"], ["y"], name="add"),
        ]
        return _model(nodes, [_value("x", [1])], [_value("y", None)], bounds)

    def cycle(_: int) -> onnx.ModelProto:
        nodes = [
            helper.make_node("Relu", ["x2"], ["x1"], name="a"),
            helper.make_node("Relu", ["x1"], ["x2"], name="b"),
            helper.make_node("Add", ["x", "x2"], ["y"], name="c"),
        ]
        return _model(nodes, [_value("x", [1, 4])], [_value("y", None)])

    def zero_dims(a: int, b: int) -> onnx.ModelProto:
        node = helper.make_node("Relu", ["x"], ["y"], name="relu")
        return _model([node], [_value("x", [a, b])], [_value("y", None)])

    def bad_reshape(n: int) -> onnx.ModelProto:
        target = numpy_helper.from_array(np.array([n, 3], np.int64), "target")
        node = helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape")
        return _model([node], [_value("x", [2, 4])], [_value("y", None)], [target])

    return st.one_of(
        st.builds(mismatched_matmul, small, small),
        st.builds(declared_huge, dim, dim),
        st.builds(huge_constant_of_shape, dim),
        st.builds(huge_expand, dim),
        st.builds(huge_range, dim),
        st.builds(cycle, small),
        st.builds(zero_dims, small, small),
        st.builds(bad_reshape, small),
    )


@FUZZ
@given(model=lying_models())
def test_valid_protobufs_that_lie(tmp_path_factory, model: onnx.ModelProto) -> None:
    path = tmp_path_factory.mktemp("lie") / "m.onnx"
    path.write_bytes(model.SerializeToString())
    check(path)
