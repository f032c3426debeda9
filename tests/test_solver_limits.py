"""Solver limits: the systolic CP-SAT mapper's deterministic and wall-clock limits come from the spec, and a
point whose solve hits them is stored with its status and gap (answered from the store on resume, never lost
or solved again)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd

from dse.cli import main

SPEC = """
name: cpsat-limit
workload: {model: resnet18, batch: 1}
template:
  kind: systolic
  mapper: cpsat
  mapper_options: {time_limit_s: 0.001, wall_time_limit_s: 0.5}
  params: {rows: [16, 32], cols: 16, sram_kib: 256}
objectives: [min latency_ms, min energy_mj]
search: {strategy: grid}
"""


def test_a_point_that_hits_the_limit_is_stored_with_status_and_gap(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    run = tmp_path / "run"
    assert main(["explore", str(spec), "-o", str(run), "-q", "--executor", "serial"]) == 0
    points = pd.read_parquet(run / "points.parquet")
    assert len(points) == 2 and (points["status"] == "ok").all()
    assert (points["solver_status"] == "FEASIBLE").all()  # not proven optimal: the limit stopped it
    assert (points["solver_gap"] > 0).all() and (points["solver_gap"] <= 1).all()
    with sqlite3.connect(run / "store.sqlite") as db:
        facts = [row[0] for row in db.execute("SELECT solver FROM points")]
    assert all('"limit_hit": true' in f for f in facts)
    capsys.readouterr()
    assert main(["explore", str(spec), "-o", str(run), "-q", "--executor", "serial"]) == 0
    assert "0 evaluated, 2 from the store" in capsys.readouterr().out  # never solved again


def test_limits_are_checked(tmp_path: Path, capsys) -> None:
    for bad in ("time_limit_s: -1", "time_limit_s: .nan", "wall_time_limit_s: 1e9", "time_limit_s: fast"):
        spec = tmp_path / "bad.yaml"
        spec.write_text(SPEC.replace("time_limit_s: 0.001, wall_time_limit_s: 0.5", bad))
        assert main(["evaluate", str(spec), "--point", "rows=16"]) == 2
        err = capsys.readouterr().err
        assert "time_limit_s" in err and len(err.strip().splitlines()) == 1, err
