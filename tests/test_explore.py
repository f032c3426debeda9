"""The explorer end to end on the closed-form toy model: files, flags, failures, executors, resume, SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from explore_fixtures import (
    EVAL_DELAY_ENV,
    EVAL_LOG_ENV,
    FakeSearch,
    FakeSpec,
    ToyEvaluator,
    read_eval_log,
    toy_metrics,
    toy_space,
)

from dse.executors import DaskExecutor, LocalExecutor, SerialExecutor, make_executor
from dse.explore import explore
from dse.pareto import pareto_mask
from dse.store import Store, point_key

TESTS_DIR = Path(__file__).resolve().parent


def _spec(strategy: str = "grid", budget: int | None = None, seed: int = 0, population: int | None = None) -> FakeSpec:
    return FakeSpec(search=FakeSearch(strategy, budget, seed, population))


def _run(out: Path, spec: FakeSpec, evaluator=None, **kwargs):
    kwargs.setdefault("executor", "serial")
    kwargs.setdefault("progress", False)
    return explore(spec, out, evaluator or ToyEvaluator(), space=toy_space(), **kwargs)


def _keys(points: list[dict], fingerprint: str = "toy-fingerprint-v1") -> list[str]:
    space = toy_space()
    return [point_key(fingerprint, space.canonical(p)) for p in points]


def test_grid_sweep_writes_every_output(tmp_path):
    result = _run(tmp_path, _spec("grid", 48))
    assert (result.evaluated, result.reused, result.failed) == (48, 0, 0)
    for name in ["points.parquet", "points.csv", "pareto.csv", "hypervolume.csv", "spec.yaml", "store.sqlite"]:
        assert (tmp_path / name).is_file(), name
    points = pd.read_parquet(tmp_path / "points.parquet")
    assert len(points) == 48
    for column in ["point_id", "seq", "status", "reason", "rows", "cols", "dataflow", "sram_kib", "freq_mhz"]:
        assert column in points.columns
    for column in ["latency_ms", "energy_mj", "area_mm2", "energy_mac_mj", "eval_s", "feasible", "pareto"]:
        assert column in points.columns
    # metrics are the toy model's, row by row
    for _, row in points.iterrows():
        expected = toy_metrics(row[["rows", "cols", "dataflow", "sram_kib", "freq_mhz"]].to_dict())
        assert row["latency_ms"] == pytest.approx(expected["latency_ms"])
        assert row["feasible"] == (expected["area_mm2"] <= 12.0)
    # pareto = feasible and non-dominated on (latency, energy)
    feasible = points[points["feasible"]]
    mask = pareto_mask(feasible[["latency_ms", "energy_mj"]].to_numpy(), ["min", "min"])
    assert sorted(feasible["point_id"][mask]) == sorted(points.loc[points["pareto"], "point_id"])
    assert sorted(pd.read_csv(tmp_path / "pareto.csv")["point_id"]) == sorted(feasible["point_id"][mask])
    assert result.pareto["latency_ms"].is_monotonic_increasing
    history = pd.read_csv(tmp_path / "hypervolume.csv")
    assert len(history) == 48 and history["hypervolume"].is_monotonic_increasing
    assert history["front_size"].iloc[-1] == mask.sum()
    assert "toy-systolic" in (tmp_path / "spec.yaml").read_text()
    assert pd.read_csv(tmp_path / "points.csv")["point_id"].tolist() == points["point_id"].tolist()
    # per-layer rows are stored for every point
    with Store.open(tmp_path) as store:
        layers = store.layers_frame(points["point_id"].iloc[5])
        assert layers["layer"].tolist() == ["conv1", "conv2"]
        assert store.meta()["status"] == "done"


def test_report_is_written_when_the_report_module_is_present(tmp_path):
    pytest.importorskip("dse.report")
    result = _run(tmp_path, _spec("random", 20))
    assert result.report == tmp_path / "report.html"
    assert result.report.stat().st_size > 1000


def test_rerun_answers_everything_from_the_store(tmp_path, monkeypatch):
    log = tmp_path / "evals.jsonl"
    monkeypatch.setenv(EVAL_LOG_ENV, str(log))
    first = _run(tmp_path / "run", _spec("random", 30, seed=4))
    assert first.evaluated == 30 and len(read_eval_log(log)) == 30
    second = _run(tmp_path / "run", _spec("random", 30, seed=4))
    assert (second.evaluated, second.reused) == (0, 30)
    assert len(read_eval_log(log)) == 30
    pd.testing.assert_frame_equal(first.points, second.points)
    # a bigger budget evaluates only the new points
    third = _run(tmp_path / "run", _spec("grid", None))
    assert third.evaluated + third.reused == toy_space().grid_size()
    evaluated = read_eval_log(log)
    assert len(evaluated) == 30 + third.evaluated
    assert len(set(_keys(evaluated))) == len(evaluated)  # nothing evaluated twice


def test_failing_points_are_stored_and_do_not_stop_the_sweep(tmp_path):
    result = _run(tmp_path, _spec("grid", 48), ToyEvaluator(fail_param="dataflow", fail_value="os"))
    points = result.points
    failed = points[points["status"] == "failed"]
    assert result.failed == len(failed) == 24
    assert set(failed["reason"]) == {"ValueError: dataflow='os' is not supported by the toy model"}
    assert failed["latency_ms"].isna().all()
    assert not failed["feasible"].any() and not failed["pareto"].any()
    assert (points.loc[points["status"] == "ok", "dataflow"] == "ws").all()
    assert result.pareto["pareto"].all() and len(result.pareto) > 0


def test_nsga2_resume_replays_history_and_never_reevaluates(tmp_path, monkeypatch):
    log = tmp_path / "evals.jsonl"
    monkeypatch.setenv(EVAL_LOG_ENV, str(log))
    first = _run(tmp_path / "run", _spec("nsga2", 24, population=8))
    assert first.evaluated + first.reused == 24
    second = _run(tmp_path / "run", _spec("nsga2", 40, population=8))
    # the 24 earlier proposals are replayed (counted as reused); 16 new ones are asked for
    assert second.reused >= 24 and second.evaluated + second.reused == 40
    evaluated = _keys(read_eval_log(log))
    assert len(evaluated) == first.evaluated + second.evaluated
    assert len(set(evaluated)) == len(evaluated)
    with Store.open(tmp_path / "run") as store:
        assert len(store.proposals("nsga2:seed=0")) == 40
        assert store.count() == len(evaluated)


def test_same_seed_same_points_across_runs(tmp_path):
    a = _run(tmp_path / "a", _spec("tpe", 20, seed=9))
    b = _run(tmp_path / "b", _spec("tpe", 20, seed=9))
    assert a.points["point_id"].tolist() == b.points["point_id"].tolist()


def _sorted_metrics(points: pd.DataFrame) -> pd.DataFrame:
    columns = ["point_id", "status", "latency_ms", "energy_mj", "area_mm2", "feasible", "pareto"]
    return points.sort_values("point_id")[columns].reset_index(drop=True)


def test_local_process_pool_matches_serial(tmp_path):
    serial = _run(tmp_path / "serial", _spec("random", 24, seed=1))
    local = _run(tmp_path / "local", _spec("random", 24, seed=1), executor="local", workers=2)
    pd.testing.assert_frame_equal(_sorted_metrics(serial.points), _sorted_metrics(local.points))


def test_dask_local_cluster_matches_serial(tmp_path, monkeypatch):
    pytest.importorskip("dask.distributed")
    serial = _run(tmp_path / "serial", _spec("random", 24, seed=2), ToyEvaluator("rows", 32))
    import dse.explore as explore_module

    monkeypatch.setattr(explore_module, "make_executor", lambda name, workers: DaskExecutor(2, processes=False))
    dask = _run(tmp_path / "dask", _spec("random", 24, seed=2), ToyEvaluator("rows", 32))
    pd.testing.assert_frame_equal(_sorted_metrics(serial.points), _sorted_metrics(dask.points))
    assert dask.failed == serial.failed > 0


@pytest.mark.slow
def test_dask_local_cluster_with_processes_matches_serial(tmp_path):
    serial = _run(tmp_path / "serial", _spec("random", 16, seed=2))
    dask = _run(tmp_path / "dask", _spec("random", 16, seed=2), executor="dask", workers=2)
    pd.testing.assert_frame_equal(_sorted_metrics(serial.points), _sorted_metrics(dask.points))


def _explode(point):
    if point == 3:
        raise RuntimeError("boom")
    return point * 10


def _crash_on_seven(point):
    if point == 7:
        os._exit(13)  # a segfault-like death of the worker process
    return point + 1


def test_executors_capture_exceptions_per_item():
    for executor in [SerialExecutor(), LocalExecutor(2)]:
        with executor:
            outcomes = sorted(executor.map(_explode, list(range(6))), key=lambda o: o.index)
        assert [o.value for o in outcomes] == [0, 10, 20, None, 40, 50]
        assert outcomes[3].error == "RuntimeError: boom"
        assert all(o.seconds >= 0 for o in outcomes)


def test_local_executor_survives_a_dying_worker():
    with LocalExecutor(2) as executor:
        outcomes = sorted(executor.map(_crash_on_seven, list(range(10))), key=lambda o: o.index)
        assert [o.index for o in outcomes] == list(range(10))
        assert outcomes[7].error.startswith("WorkerCrashed")
        assert [o.value for o in outcomes if o.index != 7] == [i + 1 for i in range(10) if i != 7]
        again = list(executor.map(_crash_on_seven, [1, 2]))  # the pool was rebuilt
        assert sorted(o.value for o in again) == [2, 3]


def test_executor_by_name():
    from dse.errors import UserError

    assert isinstance(make_executor("serial"), SerialExecutor)
    local = make_executor(None, 3)
    assert isinstance(local, LocalExecutor) and local.workers == 3
    assert make_executor("local").workers >= 1
    with pytest.raises(UserError, match="allowed: serial, local, dask, tcp://HOST:PORT"):
        make_executor("threads")
    with pytest.raises(UserError, match="at least 1"):
        make_executor("local", 0)
    outcome = next(SerialExecutor().map("explore_fixtures:toy_metrics", [toy_space().first_point()]))
    assert outcome.ok and outcome.value["area_mm2"] > 0


def test_progress_bar_runs(tmp_path, capsys):
    result = _run(tmp_path, _spec("random", 10), progress=True)
    assert result.evaluated == 10
    assert "10/10" in capsys.readouterr().err


def _sweep_command(out: Path, budget: int) -> list[str]:
    return [sys.executable, "-m", "explore_fixtures", str(out), "--strategy", "random", "--budget", str(budget),
            "--executor", "local", "--workers", "2"]  # fmt: skip


def test_sigkill_mid_sweep_then_resume_loses_nothing_and_repeats_nothing(tmp_path):
    budget = 80
    out = tmp_path / "run"
    first_log, second_log = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    env = {**os.environ, EVAL_DELAY_ENV: "0.02", EVAL_LOG_ENV: str(first_log)}
    sweep = subprocess.Popen(
        _sweep_command(out, budget), cwd=TESTS_DIR, env=env, start_new_session=True, stdout=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        stored = 0
        while stored < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
            assert sweep.poll() is None, "the sweep finished before it could be killed; raise the budget or delay"
            if (out / "store.sqlite").exists():
                with Store.open(out) as store:
                    stored = store.count()
    finally:
        os.killpg(sweep.pid, signal.SIGKILL)  # the sweep and its pool workers, all at once
        sweep.wait(timeout=30)
    assert sweep.returncode == -signal.SIGKILL

    with Store.open(out) as store:
        assert store.integrity_ok()
        survivors = {r.key for r in store.records()}
        assert store.meta()["status"] == "running"
    assert 20 <= len(survivors) < budget

    env[EVAL_LOG_ENV] = str(second_log)
    resumed = subprocess.run(
        _sweep_command(out, budget), cwd=TESTS_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout.strip().splitlines()[-1])

    everything = set(_keys(toy_space().sample(budget, 0)))
    evaluated_again = _keys(read_eval_log(second_log))
    assert len(evaluated_again) == len(set(evaluated_again))  # nothing evaluated twice within the resume
    assert set(evaluated_again) == everything - survivors  # exactly the missing points: zero repeated
    assert summary == {"evaluated": len(everything - survivors), "reused": len(survivors), "points": budget}
    with Store.open(out) as store:
        assert {r.key for r in store.records()} == everything  # zero lost
        assert store.meta()["status"] == "done"
        seqs = [r.seq for r in store.records()]
        assert seqs == list(range(budget))
    assert np.isfinite(pd.read_parquet(out / "points.parquet")["latency_ms"]).all()


def test_parquet_keeps_params_that_mix_numbers_and_text(tmp_path):
    from dse.finish import parquet_safe

    frame = pd.DataFrame({"tile": [16, "auto", None], "latency_ms": [1.0, 2.0, np.nan]})
    parquet_safe(frame).to_parquet(tmp_path / "p.parquet")
    tile = pd.read_parquet(tmp_path / "p.parquet")["tile"]
    assert tile[:2].tolist() == ["16", "auto"] and pd.isna(tile[2])
    assert frame["tile"].tolist() == [16, "auto", None]  # the caller's frame is left alone


SMALL_SPEC = """
name: explore-integration
workload: {model: resnet18, batch: 1, precision: int8}
template:
  kind: systolic
  params:
    rows: [16, 32, 64]
    cols: [16, 32, 64]
    dataflow: [ws, os]
    sram_kib: {log_range: [64, 1024]}
    dram_gbps: 25.6
    freq_mhz: 800
constraints: {area_mm2: {max: 20}}
objectives: [min latency_ms, min energy_mj]
search: {strategy: nsga2, budget: 12, seed: 0, population: 4}
"""


def test_real_spec_space_and_evaluator(tmp_path):
    """The whole pipeline: spec -> DesignSpace.from_spec -> PointEvaluator -> store -> files."""
    try:
        from dse.session import build_evaluator
        from dse.spec import parse_spec
    except ImportError as exc:
        pytest.skip(f"pipeline not importable yet: {exc}")
    spec = parse_spec(SMALL_SPEC)
    _graph, evaluator = build_evaluator(spec)
    result = explore(spec, tmp_path, evaluator, executor="serial", progress=False)
    assert result.evaluated + result.reused == 12
    assert result.failed == 0
    points = result.points
    assert {"rows", "cols", "dataflow", "sram_kib", "dram_gbps", "freq_mhz"} <= set(points.columns)
    assert (points["latency_ms"] > 0).all() and points["pareto"].any()
    with Store.open(tmp_path) as store:
        assert store.meta()["fingerprint"] == spec.evaluation_fingerprint()
        layers = store.layers_frame(result.pareto["point_id"].iloc[0])
        assert len(layers) > 10 and "cycles" in layers.columns
    again = explore(spec, tmp_path, evaluator, executor="serial", progress=False)
    assert again.evaluated == 0 and again.reused == 12


def test_explore_points_sweeps_without_writing_a_file(tmp_path, monkeypatch):
    """The sweep of ``explore`` for benchmarks and tests: the same points and front, no run directory."""
    from dse.explore import explore_points

    monkeypatch.chdir(tmp_path)
    swept = explore_points(_spec("grid", 48), ToyEvaluator(), space=toy_space(), executor="serial")
    assert list(tmp_path.iterdir()) == []
    assert (swept.evaluated, swept.reused, swept.failed) == (48, 0, 0)
    written = _run(tmp_path / "run", _spec("grid", 48))
    columns = [c for c in written.points.columns if c != "eval_s"]
    pd.testing.assert_frame_equal(swept.points[columns], written.points[columns])
    assert swept.pareto["point_id"].tolist() == written.pareto["point_id"].tolist()


def test_the_registry_runs_a_real_spec_without_files(tmp_path, monkeypatch):
    """``dse.evaluators.prepare_run``: one context (space, fingerprint, graph) and the spec's evaluation."""
    from dse.evaluators import prepare_run
    from dse.explore import explore_points
    from dse.spec import parse_spec

    monkeypatch.chdir(tmp_path)
    spec = parse_spec(SMALL_SPEC)
    context, evaluation = prepare_run(spec)
    assert context.fingerprint == spec.evaluation_fingerprint() and context.graph is not None
    assert context.space == spec.design_space()
    swept = explore_points(spec, evaluation, executor="serial", context=context)
    assert swept.evaluated == 12 and swept.points["pareto"].any()
    assert not any(tmp_path.iterdir())


def test_points_outside_a_narrower_space_are_left_out(tmp_path):
    from dse.space import DesignSpace, Dimension

    _run(tmp_path, _spec("grid", 48))
    narrow = DesignSpace(
        tuple(Dimension("rows", "int", values=(4,)) if d.name == "rows" else d for d in toy_space().dims)
    )
    result = explore(_spec("grid", 12), tmp_path, ToyEvaluator(), executor="serial", progress=False, space=narrow)
    # the first 48 grid points were all 36 with rows=4 (3 cols x 2 dataflows x 6 sram) and 12 with rows=8
    assert (result.evaluated, result.reused) == (0, 12)
    assert (result.points["rows"] == 4).all() and len(result.points) == 36
    assert any("12 stored point(s)" in note for note in result.notes)


def test_executor_connects_to_a_running_scheduler():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://", dashboard_address=None
    ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://")
        with make_executor(address) as executor:
            assert executor.workers == 1
            outcomes = sorted(executor.map(_explode, [1, 3, 5]), key=lambda o: o.index)
        assert [o.value for o in outcomes] == [10, None, 50]
        assert outcomes[1].error == "RuntimeError: boom"


def test_points_the_machine_failed_are_evaluated_again_on_resume(tmp_path, monkeypatch):
    """A point whose worker died or ran out of memory failed for the machine, not for itself: the resumed run
    evaluates it again and its result takes the failure's place (same seq); a point's own failure is kept."""
    first = _run(tmp_path / "run", _spec("random", 12, seed=2))
    keys = list(first.points.sort_values("seq")["point_id"])
    with Store.open(tmp_path / "run") as store:
        records = {r.point_id: r for r in store.records()}
    crashed, lost, own = (records[keys[i]] for i in (3, 5, 7))
    with closing(sqlite3.connect(tmp_path / "run" / "store.sqlite")) as db, db:  # as a crash would have left them
        for record, reason in ((crashed, "WorkerCrashed: died"), (lost, "MemoryError: "), (own, "ValueError: bad")):
            db.execute("UPDATE points SET status = 'failed', reason = ? WHERE key = ?", (reason, record.key))
    log = tmp_path / "evals.jsonl"
    monkeypatch.setenv(EVAL_LOG_ENV, str(log))
    again = _run(tmp_path / "run", _spec("random", 12, seed=2))
    assert (again.evaluated, again.reused) == (2, 10)
    assert sorted(_keys(read_eval_log(log))) == sorted([crashed.key, lost.key])
    with Store.open(tmp_path / "run") as store:
        after = {r.key: r for r in store.records()}
    assert after[crashed.key].ok and after[lost.key].ok and after[crashed.key].seq == crashed.seq
    assert after[own.key].reason == "ValueError: bad"
    assert [r.seq for r in sorted(after.values(), key=lambda r: r.seq)] == list(range(12))
