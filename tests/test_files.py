"""Output files are written atomically: a failed write leaves the old file as it was and no temporary file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse import finish
from dse.compare import Comparison, write_comparison
from dse.files import PARTIAL_MARK, atomic_write, atomic_write_text


class WriterFailed(RuntimeError):
    pass


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if PARTIAL_MARK in p.name]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = atomic_write_text(tmp_path / "points.csv", "old\n")

    def half_then_fail(path: Path) -> None:
        path.write_text("half a ne")
        raise WriterFailed("disk full")

    with pytest.raises(WriterFailed):
        atomic_write(target, half_then_fail)
    assert target.read_text() == "old\n"
    assert leftovers(tmp_path) == []


def test_the_writer_sees_the_target_extension_and_the_file_is_readable_by_others(tmp_path: Path) -> None:
    seen: list[Path] = []
    target = atomic_write(
        tmp_path / "sub" / "model.joblib.gz", lambda path: seen.append(path) or path.write_bytes(b"x")
    )
    assert seen[0].parent == target.parent and seen[0].name.endswith(".gz")
    assert target.read_bytes() == b"x"
    assert target.stat().st_mode & 0o777 == 0o644
    assert leftovers(target.parent) == []


def test_write_comparison_keeps_the_old_csvs_when_writing_fails(tmp_path: Path, monkeypatch) -> None:
    comparison = Comparison(
        workload="w", summary=pd.DataFrame({"name": ["a"], "latency_ms": [1.0]}), layers=pd.DataFrame({"layer": ["l0"]})
    )
    write_comparison(tmp_path, comparison)
    before = {name: (tmp_path / name).read_text() for name in ("compare.csv", "compare_layers.csv")}
    original = pd.DataFrame.to_csv

    def fail_after_writing(frame: pd.DataFrame, path, **kwargs):
        original(frame.iloc[:0], path, **kwargs)
        raise WriterFailed("interrupted")

    monkeypatch.setattr(pd.DataFrame, "to_csv", fail_after_writing)
    changed = Comparison(
        workload="w", summary=pd.DataFrame({"name": ["b"], "latency_ms": [2.0]}), layers=comparison.layers
    )
    with pytest.raises(WriterFailed):
        write_comparison(tmp_path, changed)
    assert {name: (tmp_path / name).read_text() for name in before} == before
    assert leftovers(tmp_path) == []


def test_a_write_removes_the_temporaries_a_killed_writer_left_and_keeps_a_live_ones(tmp_path: Path) -> None:
    """SIGKILL runs no handler, so its temporary file stays; the next write into the folder removes it."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    debris = tmp_path / f".points.csv.{dead_pid}-0123456789ab{PARTIAL_MARK}.csv"
    live = tmp_path / f".report.html.{os.getpid()}-ba9876543210{PARTIAL_MARK}.html"
    debris.write_text("half a ")
    live.write_text("being written")
    atomic_write_text(tmp_path / "pareto.csv", "a\n")
    assert not debris.exists()
    assert live.exists()
    assert (tmp_path / "pareto.csv").read_text() == "a\n"


def test_a_large_run_writes_the_same_points_through_arrow(tmp_path: Path, monkeypatch) -> None:
    """Above ``ARROW_CSV_ROWS`` points.csv and points.parquet come from one Arrow table: the same values."""
    points = pd.DataFrame(
        {"point_id": ["a", "b", "c"], "dataflow": ["ws", None, "os"], "latency_ms": [1.5, np.nan, 3e-9]}
    ).assign(feasible=[True, False, True], rows=[4, 8, 16])
    spec = type("Spec", (), {"path": None, "to_dict": staticmethod(lambda: {"name": "x"})})()
    history = pd.DataFrame({"seq": [0], "hypervolume": [0.0]})
    for limit, folder in ((2, tmp_path / "arrow"), (100, tmp_path / "pandas")):
        monkeypatch.setattr(finish, "ARROW_CSV_ROWS", limit)
        folder.mkdir()
        finish.write_outputs(folder, spec, points, points.iloc[:1], history)
    for name in ("points.csv", "points.parquet"):
        read = pd.read_csv if name.endswith(".csv") else pd.read_parquet
        pd.testing.assert_frame_equal(read(tmp_path / "arrow" / name), read(tmp_path / "pandas" / name))
    assert (tmp_path / "arrow" / "points.csv").read_text() != (tmp_path / "pandas" / "points.csv").read_text()
