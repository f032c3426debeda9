"""The AccelForge comparison reads any bundled digital architecture whose compute is one or several 2-D MAC arrays:
one array (NVDLA), arrays fanned out by a memory (TPU v4i's cores) or by a container with buffers of their own
(Simba's PEs). The layouts below are synthetic ``evaluated_arch`` rows in the shape scripts/af_run.py writes."""

from __future__ import annotations

import pytest

from dse.accelforge import candidates, clock_hz, placement, price_table
from dse.accelforge.arch import CompareError, Workload, check_fanouts, hierarchy, multicasts, read_workload


def _memory(name, size=8192.0, leak=0.0, fanout=(), read=1e-13, write=2e-13):
    actions = [
        {"name": "read", "energy_J": read, "bits_per_action": 1.0, "throughput": 1e12},
        {"name": "write", "energy_J": write, "bits_per_action": 1.0, "throughput": 1e12},
    ]
    spatial = [{"name": f"s{i}", "fanout": float(f)} for i, f in enumerate(fanout)]
    return {"name": name, "type": "Memory", "size": size, "leak_power": leak, "spatial": spatial, "actions": actions}


def _container(name, *fanout):
    return {
        "name": name,
        "type": "Container",
        "spatial": [{"name": f"ax{i}", "fanout": float(f)} for i, f in enumerate(fanout)],
    }


def _mac(leak=0.0, rate=2.5e9):
    action = {"name": "compute", "energy_J": 2e-13, "bits_per_action": "None", "throughput": rate}
    return {"name": "MAC", "type": "Compute", "leak_power": leak, "spatial": [], "actions": [action]}


SIMBA_LIKE = [
    _memory("MainMemory", float("inf"), read=8e-12, write=8e-12),
    _memory("GlobalBuffer", 524288.0, leak=1e-5),
    _container("ProcessingElement", 16),
    _memory("InputBuffer", 65536.0, leak=1e-6),
    _memory("WeightBuffer", 262144.0, leak=1e-5),
    _memory("AccumulationBuffer", 24576.0, leak=1e-6),
    _container("VectorMAC", 8, 8),
    _memory("Register", 8.0),
    _mac(leak=1e-6),
]
TPU_LIKE = [
    _memory("MainMemory", float("inf")),
    _memory("GlobalBuffer", 1e9),
    _memory("LocalBuffer", 1e8, fanout=(4,)),
    _container("ProcessingElement", 128, 128),
    _memory("Register", 8.0),
    _mac(),
]
NVDLA_LIKE = [_memory("MainMemory", float("inf")), _memory("GlobalBuffer", 524288.0), _container("PE", 32, 192), _mac()]


def _names(rows):
    return [r["name"] for r in rows]


def test_several_arrays_each_with_its_own_buffers():
    h = hierarchy(SIMBA_LIKE, _names(SIMBA_LIKE), "simba")
    assert (h.arrays, h.rows, h.cols, h.container) == (16, 8, 8, "VectorMAC")
    assert [lv.name for lv in h.onchip] == ["GlobalBuffer", "InputBuffer", "WeightBuffer", "AccumulationBuffer"]
    assert [lv.name for lv in h.pe_mems] == ["Register"]
    assert h.shared == ("GlobalBuffer",) and h.fan_level == "ProcessingElement"
    assert [h.instances(lv) for lv in h.onchip] == [1, 16, 16, 16]
    # the price table is one array's: the design's leakage (each instance counted once) over the 16 arrays
    wl = Workload("matmul", {"m": 64, "k": 64, "n": 64}, {"ifmap": "A", "filter": "B", "ofmap": "Z"}, 8, "gemm")
    result = {"actions_per_component_tensor_action": {"InputBuffer|A|read": 1.0, "WeightBuffer|B|read": 1.0}}
    table = price_table("simba_like_test", h, placement(result, h, wl), 8)
    whole = 1e-5 + 16 * (1e-6 + 1e-5 + 1e-6) + 16 * 64 * 1e-6
    assert table.leakage_w.value == pytest.approx(whole / 16)


def test_arrays_fanned_out_by_a_memory_and_one_array():
    tpu = hierarchy(TPU_LIKE, _names(TPU_LIKE), "tpu")
    assert (tpu.arrays, tpu.rows, tpu.cols, tpu.shared, tpu.fan_level) == (
        4,
        128,
        128,
        ("GlobalBuffer",),
        "LocalBuffer",
    )
    nvdla = hierarchy(NVDLA_LIKE, _names(NVDLA_LIKE), "nvdla")
    assert (nvdla.arrays, nvdla.rows, nvdla.cols, nvdla.shared) == (1, 32, 192, ())


@pytest.mark.parametrize("reuse, expected", [("Nothing", False), ("input", True), (None, True)])
def test_a_fan_out_multicasts_unless_it_may_reuse_nothing(reuse, expected):
    h = hierarchy(TPU_LIKE, _names(TPU_LIKE), "tpu")
    axis = {"name": "Z", "fanout": 4, **({"may_reuse": reuse} if reuse else {})}
    arch_yaml = {"arch": {"nodes": [{"name": "LocalBuffer", "spatial": [axis]}]}}
    assert multicasts(arch_yaml, h).multicast is expected


def test_the_clock_is_the_recorded_one_else_the_mac_rate():
    h = hierarchy(SIMBA_LIKE, _names(SIMBA_LIKE), "simba")
    assert clock_hz({"evaluated_arch": SIMBA_LIKE, "peak_assumed": {"clock_Hz": None}}, h) == 2.5e9
    assert clock_hz({"evaluated_arch": SIMBA_LIKE, "peak_assumed": {"clock_Hz": 2e8}}, h) == 2e8


@pytest.mark.parametrize(
    "rows, message",
    [
        ([_memory("MainMemory"), _memory("GlobalBuffer"), _mac()], "not a DRAM -> buffers -> PE array -> MAC"),
        ([_memory("MainMemory"), _container("PE", 4, 4), _mac(), _mac()], "expected one compute inside"),
    ],
)
def test_an_architecture_without_one_mac_array_is_refused_by_name(rows, message):
    with pytest.raises(CompareError, match=message):
        hierarchy(rows, _names(rows), "results/x.json")


@pytest.mark.parametrize(
    "window, kernel, expected",
    [
        ("H: p + r, W: q + s", "r, s, ", {"r": 3, "s": 3, "sh": 1, "sw": 1, "height": 16}),
        ("H: p * 2 + r, W: q * 2 + s", "r, s, ", {"r": 3, "s": 3, "sh": 2, "sw": 2, "height": 29}),
        ("H: p * 2, W: q * 2", "", {"r": 1, "s": 1, "sh": 2, "sw": 2, "height": 27}),
    ],
)
def test_a_conv_workload_is_read_with_its_strides_and_window(tmp_path, window, kernel, expected):
    """AccelForge's conv einsums (as in its bundled resnet18.yaml): the input rank is the window the output and kernel
    ranks index, stride included; dse builds the same layer on the same (padded) input, so the output is P x Q."""
    bounds = ", ".join(f"0 <= {r} < {v}" for r, v in {"p": 14, "q": 14, "c": 8, "m": 16, "r": 3, "s": 3}.items())
    text = (
        "workload:\n  bits_per_value: {All: 8}\n  einsums:\n"
        f'  - einsum: "O[p, q, n, m] = I[n, c, {window}] * W[{kernel}c, m]"\n'
        f"    iteration_space_shape: [{bounds}]\n    rank_sizes: {{N: 1}}\n"
        "    renames: {output: O, input: I, weight: W}\n"
    )
    path = tmp_path / "wl.yaml"
    path.write_text(text)
    wl = read_workload(path)
    assert {k: wl.dims[k] for k in ("r", "s", "sh", "sw")} == {k: expected[k] for k in ("r", "s", "sh", "sw")}
    graph = wl.graph()
    (op,) = graph.ops
    assert graph.tensors[op.inputs[0]].shape[2] == expected["height"]
    assert graph.tensors[op.outputs[0]].shape[2:] == (14, 14)
    assert wl.graph("p", 2).tensors[op.outputs[0]].shape[2:] == (7, 14)


def test_an_unreadable_window_is_one_message(tmp_path):
    path = tmp_path / "wl.yaml"
    path.write_text(
        'workload:\n  einsums:\n  - einsum: "O[p, q, m] = I[c, H: p - r, W: q + s] * W[r, s, c, m]"\n'
        "    iteration_space_shape: [0 <= p < 4, 0 <= q < 4, 0 <= c < 4, 0 <= m < 4, 0 <= r < 3, 0 <= s < 3]\n"
        "    renames: {output: O, input: I, weight: W}\n"
    )
    with pytest.raises(CompareError, match="cannot read the input window"):
        read_workload(path)


def _simba_case(output_in_glb: bool):
    h = hierarchy(SIMBA_LIKE, _names(SIMBA_LIKE), "simba")
    wl = Workload("matmul", {"m": 64, "k": 128, "n": 64}, {"ifmap": "A", "filter": "B", "ofmap": "Z"}, 8, "gemm")
    kept = {
        "InputBuffer|A|read": 1,
        "WeightBuffer|B|read": 1,
        "AccumulationBuffer|Z|write": 1,
        "GlobalBuffer|A|read": 1,
    }
    if output_in_glb:
        kept["GlobalBuffer|Z|write"] = 1
    where = placement({"actions_per_component_tensor_action": kept}, h, wl)
    table = price_table(f"simba_like_{output_in_glb}", h, where, 8)
    return h, wl, where, table


def test_an_output_drained_through_an_outer_buffer_pays_it_on_the_drain_not_on_every_partial_sum():
    h, _, _, table = _simba_case(output_in_glb=True)
    glb = 1e-13 + 2e-13  # GlobalBuffer read + write (pJ/bit x 1e12 below)
    assert table.actions["sram_write_ofmap"].value == pytest.approx(0.2)  # AccumulationBuffer's write alone
    assert table.actions["sram_read_ofmap"].value == pytest.approx(0.1 + glb * 1e12)
    assert table.actions["sram_write_ifmap"].value == pytest.approx(0.2 + glb * 1e12)  # an input's fill


def test_arrays_split_the_reduction_only_where_a_shared_buffer_adds_the_partial_outputs():
    for output_in_glb in (True, False):
        h, wl, where, table = _simba_case(output_in_glb)
        cands = candidates(wl, h, table, where, 1e9, 10.0, ("fold",), ("ws",), 1.0)
        splits = {c.split for c in cands}
        assert ("k" in splits) is output_in_glb and {"m", "n"} <= splits
        for c in cands:
            if c.split == "k":  # one drain of Z to DRAM for all 16 arrays, every partial output through the buffer
                assert c.counts["MainMemory|Z|write"] == pytest.approx(64 * 64 * 8)
                assert c.counts["GlobalBuffer|Z|write"] == pytest.approx(16 * 64 * 64 * 8)
                # the 15 drains saved were streamed at 1/16 of the DRAM bandwidth each: their time leaks no more
                leak = c.metrics.energy_breakdown_pj["leakage"] * 16
                assert 0 < c.saved_pj["leakage"] <= leak * 15 / 16


def test_a_result_run_on_another_architecture_is_refused():
    """Component names alone match across AccelForge's bundled architectures (MainMemory, GlobalBuffer, MAC); the
    fan-outs tell an NVDLA result from Simba's YAML."""
    simba_yaml = {"arch": {"nodes": [{"name": "ProcessingElement", "spatial": [{"name": "reuse_all", "fanout": 16}]}]}}
    nvdla_rows = [_memory("MainMemory"), _container("ProcessingElement", 32, 192), _mac()]
    with pytest.raises(CompareError, match=r"fans out \[32.0, 192.0\] in the result but \[16.0\]"):
        check_fanouts(simba_yaml, nvdla_rows, "results/nvdla.json")
    check_fanouts(simba_yaml, SIMBA_LIKE, "results/simba.json")  # its own: no error


@pytest.mark.parametrize(
    "einsum, message",
    [
        ("Z[b, m, n] = A[b, m, k] * B[b, k, n]", "a batched matmul"),
        ("Z[m, n] = A[m, k] * B[k, n]", "rank 'k' has no size"),
    ],
)
def test_a_matmul_workload_outside_the_template_is_one_message(tmp_path, einsum, message):
    bounds = "[0 <= b < 2, 0 <= m < 8, 0 <= n < 8" + (", 0 <= k < 8]" if "b" in einsum else "]")
    path = tmp_path / "wl.yaml"
    path.write_text(
        f'workload:\n  einsums:\n  - einsum: "{einsum}"\n    iteration_space_shape: {bounds}\n'
        "    renames: {output: Z, input: A, weight: B}\n"
    )
    with pytest.raises(CompareError, match=message):
        read_workload(path)
