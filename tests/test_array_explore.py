"""The explorer's array path (``dse.evaluators.ArrayExecutor``): a grid sweep of the systolic family streamed to
``hwmodels.systolic.arrays``, stored exactly as the scalar path evaluates each point."""

from __future__ import annotations

import pytest

TOLERANCE = 1e-12
ARRAY_SPEC = """
name: array-grid
workload: {model: small_cnn, batch: 1, precision: int8}
template:
  kind: systolic
  params:
    rows: [4, 16, 32]
    cols: [8, 32]
    dataflow: [ws, os, is]
    ifmap_sram_kib: [1, 16]
    filter_sram_kib: 8
    ofmap_sram_kib: 8
    dram_gbps: [6.4, 25.6]
    freq_mhz: 800
    sparsity_optimized_mapping: true
objectives: [min latency_ms, min energy_mj]
search: {strategy: grid, seed: 0}
"""


def test_explorer_streams_a_grid_to_the_array_evaluator_and_stores_what_evaluate_prints(tmp_path):
    """A grid sweep goes through the array evaluator: every stored point equals ``dse evaluate``'s metrics for
    it (the scalar path), a point the template refuses is a failed point with its message, the front designs
    get their per-layer rows when the run finishes, and a re-run answers every point from the store."""
    from dse.evaluators import ArrayExecutor, prepare_run
    from dse.explore import explore
    from dse.session import build_evaluator
    from dse.spec import parse_spec
    from dse.store import Store

    spec = parse_spec(ARRAY_SPEC, "array-grid.yaml")  # the optimized sparse mapping: refused under os and is
    context, evaluation = prepare_run(spec)
    assert evaluation.array_executor is not None and isinstance(evaluation.array_executor(), ArrayExecutor)
    result = explore(spec, tmp_path, evaluation, progress=False, context=context)
    assert result.evaluated == 72 and result.failed == 48
    _, scalar = build_evaluator(spec)
    with Store.open(tmp_path) as store:
        records = store.records()
        assert len(records) == 72
        for record in records:
            if not record.ok:
                assert "only under dataflow=ws" in record.reason and record.params["dataflow"] != "ws"
                continue
            want = scalar(record.params).flat()
            assert set(record.metrics) == set(want)
            for name, value in want.items():
                assert record.metrics[name] == pytest.approx(value, rel=TOLERANCE, abs=0.0), (name, record.params)
        front = result.pareto["point_id"].tolist()
        assert front and all(not store.layers_frame(pid).empty for pid in front)
        off_front = [r.point_id for r in records if r.ok and r.point_id not in front]
        assert store.layers_frame(off_front[0]).empty  # per-layer rows only where they are looked at
    again = explore(spec, tmp_path, evaluation, progress=False, context=context)
    assert again.evaluated == 0 and again.reused == 72


def test_explorer_streams_a_grid_to_the_array_evaluator():
    """The default suite's share (no files, no report): a grid sweep in memory goes through the array evaluator
    and keeps the scalar path's metrics; refused points fail with the template's message."""
    from dse.evaluators import prepare_run
    from dse.explore import explore_points
    from dse.session import build_evaluator
    from dse.spec import parse_spec

    spec = parse_spec(ARRAY_SPEC, "array-grid.yaml")
    context, evaluation = prepare_run(spec)
    result = explore_points(spec, evaluation, context=context)
    assert result.evaluated == 72 and result.failed == 48
    _, scalar = build_evaluator(spec)
    ok = result.points[result.points["status"] == "ok"]
    assert len(ok) == 24 and set(ok["dataflow"]) == {"ws"}
    for _, row in ok.iloc[::5].iterrows():
        point = {name: row[name] for name in ("rows", "cols", "dataflow", "ifmap_sram_kib", "dram_gbps")}
        for name, value in scalar(point).flat().items():
            assert row[name] == pytest.approx(value, rel=TOLERANCE, abs=0.0), (name, point)


FAMILY_SPECS = {
    "fpga_dataflow": """
name: fpga-array-grid
workload: {model: jet_mlp, batch: 1}
template:
  kind: fpga_dataflow
  params:
    reuse_factor: [1, 4, 16]
    strategy: [latency, resource]
    execution: [dataflow, hybrid]
    width: [12, 4]
    integer: 6
objectives: [min latency_cycles, min dsp]
search: {strategy: grid, seed: 0}
""",
    "gpu": """
name: gpu-array-grid
workload: {model: small_cnn, batch: 2, precision: fp16}
template:
  kind: gpu
  params:
    gpu: [h100_sxm, l4, jetson_agx_orin]
    gpus: [1, 2]
    mem_gbps: [200, 2000]
    execution: [graph, eager]
objectives: [min latency_ms, min energy_mj]
search: {strategy: grid, seed: 0}
""",
}


@pytest.mark.parametrize("kind", sorted(FAMILY_SPECS))
def test_explorer_streams_a_grid_of_every_array_family(kind):
    """The fpga_dataflow and gpu grids go through their families' array evaluators and keep the scalar path's
    metrics; the points the template refuses (fpga: integer bits above the width; gpu: two GPUs without an NVLink
    figure) fail with the scalar path's message."""
    from dse.evaluators import ArrayExecutor, prepare_run
    from dse.explore import explore_points
    from dse.session import build_evaluator
    from dse.spec import parse_spec

    spec = parse_spec(FAMILY_SPECS[kind], f"{kind}.yaml")
    context, evaluation = prepare_run(spec)
    assert evaluation.array_executor is not None and isinstance(evaluation.array_executor(), ArrayExecutor)
    result = explore_points(spec, evaluation, context=context)
    assert result.evaluated == 24 and result.failed == {"fpga_dataflow": 12, "gpu": 8}[kind]
    _, scalar = build_evaluator(spec)
    names = list(spec.template.params)
    for _, row in result.points.iterrows():
        point = {name: row[name] for name in names}
        if row["status"] != "ok":
            with pytest.raises(ValueError):
                scalar(point)
            continue
        for name, value in scalar(point).flat().items():
            assert row[name] == pytest.approx(value, rel=TOLERANCE, abs=0.0), (name, point)
