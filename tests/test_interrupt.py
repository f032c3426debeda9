"""Ctrl-C (SIGINT) and SIGTERM stop dse cleanly, with a real process each time.

During a sweep, during the writing of points/report and during an export: the process exits with
130 / 143 and one line, every point it stored is still in the store, no half-written report.html,
points.parquet, csv or project is left, and the same command run again completes (resuming).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dse.files import PARTIAL_MARK

SWEEP_SPEC = """
name: interrupt-sweep
workload: {model: jet_mlp, batch: 1}
template:
  kind: systolic
  params:
    rows: {range: [4, 256]}
    cols: {range: [4, 256]}
    dataflow: [ws, os, is]
    sram_kib: {log_range: [16, 4096]}
objectives: [min latency_ms, min energy_mj]
search: {strategy: random, budget: 4000, seed: 0}
"""
FPGA_SPEC = """
name: interrupt-fpga
workload: {model: jet_mlp, batch: 1}
template:
  kind: fpga_dataflow
  params: {part: xcu250, io_type: io_parallel, reuse_factor: [4, 8], strategy: resource}
objectives: [min latency_cycles, min dsp]
search: {strategy: grid}
"""
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
OUTPUTS = ("report.html", "points.parquet", "points.csv", "pareto.csv", "hypervolume.csv")


def dse(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "dse.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def stored(run: Path) -> int:
    path = run / "store.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM points").fetchone()[0]
    except sqlite3.OperationalError:  # the table does not exist yet
        return 0


def wait_for(condition: Callable[[], bool], process: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"dse ended before the moment to interrupt it: {process.communicate()}"
        assert time.monotonic() < deadline, "timed out waiting for the moment to interrupt"
        time.sleep(0.02)


def stop(process: subprocess.Popen, signum: signal.Signals) -> str:
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == EXIT_CODES[signum], err
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and "resume" in err, err
    return err


def no_partial_files(folder: Path) -> None:
    partial = [p.name for p in folder.rglob("*") if PARTIAL_MARK in p.name or p.name.startswith(".report-")]
    assert not partial, f"half-written files left behind: {partial}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_sweep_keeps_points_and_resumes(tmp_path: Path, signum: signal.Signals) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWEEP_SPEC)
    run = tmp_path / "run"
    process = dse("explore", str(spec), "-o", str(run), "-q", "--executor", "serial")
    wait_for(lambda: stored(run) >= 50, process)
    stop(process, signum)
    kept = stored(run)
    assert 50 <= kept < 4000
    assert not any((run / name).exists() for name in OUTPUTS)  # the sweep never reached the outputs
    no_partial_files(run)
    # resume with a smaller budget so the test stays quick: every kept point is answered from the store
    spec.write_text(SWEEP_SPEC.replace("budget: 4000", f"budget: {kept + 20}"))
    again = subprocess.run(
        [sys.executable, "-m", "dse.cli", "explore", str(spec), "-o", str(run), "-q", "--executor", "serial"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert f"{kept} from the store" in again.stdout or stored(run) >= kept
    assert stored(run) == kept + 20
    assert all((run / name).is_file() for name in OUTPUTS)


def explored(spec: Path, run: Path) -> Path:
    """``run`` after a complete serial ``dse explore`` of ``spec`` (the state the interruptions start from)."""
    done = subprocess.run(
        [sys.executable, "-m", "dse.cli", "explore", str(spec), "-o", str(run), "-q", "--executor", "serial"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return run


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_while_writing_outputs_leaves_no_partial_file(tmp_path: Path, signum: signal.Signals) -> None:
    """``dse report`` rewrites points.*, pareto.csv and report.html; stopped half-way, none is left half-written."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWEEP_SPEC.replace("budget: 4000", "budget: 300"))
    run = explored(spec, tmp_path / "run")
    report = run / "report.html"
    report.unlink()
    csv_before = (run / "points.csv").stat().st_mtime_ns
    process = dse("report", str(run))
    # points.csv rewritten: the process is now writing the rest and rendering the report
    wait_for(lambda: (run / "points.csv").stat().st_mtime_ns != csv_before, process)
    stop(process, signum)
    assert not report.exists()
    for name in OUTPUTS[1:]:
        assert (run / name).stat().st_size > 0  # each is whole: the old file or the new one
    no_partial_files(run)
    assert stored(run) == 300
    again = subprocess.run(
        [sys.executable, "-m", "dse.cli", "report", str(run)], capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    assert report.read_text().rstrip().endswith("</html>")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_export_leaves_no_partial_project(tmp_path: Path, signum: signal.Signals) -> None:
    pytest.importorskip("hls4ml")
    spec = tmp_path / "fpga.yaml"
    spec.write_text(FPGA_SPEC)
    run = explored(spec, tmp_path / "run")
    point = (run / "pareto.csv").read_text().splitlines()[1].split(",")[0]
    out = tmp_path / "export"
    # --csim keeps the exporter busy (a g++ build) well after the project folder appears, so the signal
    # always lands while the export is half done, however fast or loaded the machine is
    process = dse("export", str(run), "--point", point, "-o", str(out), "--csim")
    wait_for(lambda: (out / "hls4ml_prj").exists(), process)
    stop(process, signum)
    assert not (out / "hls4ml_prj").exists()
    assert not (out / "export_report.json").exists()
    no_partial_files(out)
    again = subprocess.run(
        [sys.executable, "-m", "dse.cli", "export", str(run), "--point", point, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert (out / "export_report.json").is_file() and (out / "hls4ml_prj" / "firmware").is_dir()
