"""The fault-injection suite (issue #33): real ``dse`` processes under the faults a shared machine brings.

Marked ``faults``: the default run deselects it, ``make test-faults`` (CI) runs it. Each fault is armed in the
run's own processes by tests/faultinject/sitecustomize.py (see there), never by patching this process:

- SIGKILL of the explorer at 20+ random moments (seeded) of one sweep, local pool and Dask, each followed by a
  resume: after every kill no process of the run is left, the store is sound and lost nothing; at the end every
  point is stored once with the values of an uninterrupted run, and the report is rebuilt;
- a mapper raising on some points, a worker exceeding its memory limit, a worker killed by the kernel: those
  points are recorded failed with their reason, listed by ``dse explore`` and the report, the rest complete;
- a pool worker or a Dask worker lost mid-run: its points run again, none fails;
- ENOSPC at each write site (store, points.parquet, report.html, compare CSVs, the export project): one located
  line, exit 2, nothing stored lost, no half-written file, and the same command resumes once space is back.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pandas as pd
import psutil
import pytest
from faultinject.faulty_mapper import CRASHED, OUT_OF_MEMORY, RAISED, injected_fault
from test_interrupt import FPGA_SPEC, SWEEP_SPEC

from dse.errors import EXIT_USER_ERROR
from dse.evaluators import prepare_run
from dse.explore import explore_points
from dse.files import PARTIAL_MARK
from dse.spec import load_spec

pytestmark = [
    pytest.mark.faults,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="faults are injected through Linux /proc"),
]

ROOT = Path(__file__).resolve().parent.parent
INJECTOR = Path(__file__).resolve().parent / "faultinject"

TAG = "DSE_FAULT_RUN_TAG"  # every process of one run inherits it: how the suite finds orphans
SECONDS_FOR_WORKERS_TO_END = 15.0


def run_env(tag: str, **faults: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(INJECTOR), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", TAG: tag, **faults}


def start(*args: str, tag: str = "", **faults: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "dse.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=run_env(tag or uuid.uuid4().hex, **faults),
    )


def dse(*args: str, **faults: str) -> subprocess.CompletedProcess:
    """``dse ARGS`` to its end, with the faults armed."""
    process = start(*args, **faults)
    out, err = process.communicate(timeout=600)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def processes_of(tag: str) -> list[psutil.Process]:
    """Every live process of the run tagged ``tag`` (a zombie waiting for its new parent counts as ended)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(TAG) == tag and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def assert_no_process_left(tag: str) -> None:
    deadline = time.monotonic() + SECONDS_FOR_WORKERS_TO_END
    while (left := processes_of(tag)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for process in left:  # do not leak them into the rest of the suite
        process.kill()
    assert not left, [(p.pid, " ".join(p.cmdline())[:120]) for p in left]


# the points of a store: its point rows and the array path's chunks (dse/chunkstore.py)
COUNTS = {"points": "SELECT COUNT(*) FROM points", "chunks": "SELECT COALESCE(SUM(n), 0) FROM chunks"}


def stored(run: Path) -> int:
    """Points in the run's store, after checking SQLite finds the whole file sound."""
    path = run / "store.sqlite"
    if not path.exists():
        return 0
    with closing(sqlite3.connect(path, timeout=30)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return sum(db.execute(COUNTS[table]).fetchone()[0] for table in COUNTS if table in tables)


def live_count(run: Path) -> int:
    """Points stored so far by a running explorer (no integrity check: it is writing)."""
    try:
        with closing(sqlite3.connect(run / "store.sqlite", timeout=5)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            return sum(db.execute(COUNTS[table]).fetchone()[0] for table in COUNTS if table in tables)
    except sqlite3.OperationalError:  # no store or no table yet
        return 0


def partial_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if PARTIAL_MARK in p.name)


def no_partial_files(folder: Path) -> None:
    partial = partial_files(folder)
    assert not partial, f"half-written files left behind: {partial}"


def only_temporaries_of(pids: set[int], folder: Path) -> None:
    """What SIGKILLs may leave: hidden temporaries of killed explorers (no handler runs; the next write into the
    folder removes them, and a run killed before it writes leaves them there), none of another process."""
    killed = tuple(f".{pid}-" for pid in pids)
    others = [name for name in partial_files(folder) if not (name.startswith(".") and any(k in name for k in killed))]
    assert not others, f"half-written files of other processes left behind: {others}"


def outputs_whole(run: Path) -> None:
    """The output files there are complete: the old ones or the new ones, never a part."""
    if (run / "points.parquet").exists():
        pd.read_parquet(run / "points.parquet")
    if (run / "report.html").exists():
        assert (run / "report.html").read_text().rstrip().endswith("</html>")


def one_located_line(err: str, where: Path) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dse: error: {where}: "), err
    return lines[0]


# -- SIGKILL at random moments, then resume --------------------------------------------------------------

KILL_POINTS = 20_000  # a sweep of tens of thousands of points, killed 22 times, resumed to the end
MAX_POINTS_PER_KILL = 40
KILL_SEED = 33
# (executor, moment): "start" a random time after launch (imports, pool start, store, sweep);
# "sweep" after a random number of new stored points; both always find the explorer running (KILLS x
# MAX_POINTS_PER_KILL < KILL_POINTS), so these 20 kills happen on a machine of any speed. "outputs": a random
# time into a run whose points are all stored (answering from the store, writing points, front and report),
# killed when it has not ended by then
KILLS = [("local", "start")] * 4 + [("dask", "start")] * 2 + [("local", "sweep")] * 11 + [("dask", "sweep")] * 3
OUTPUT_KILLS = [("local", "outputs"), ("dask", "outputs")]
# no executor named: the array path (dse/column_sweep.py), a chunk of points per transaction, killed a random time
# after launch; last, since one chunk may store every point left
ARRAY_KILLS = [("arrays", "start")] * 2


def kill_at(moment: str, process: subprocess.Popen, run: Path, rng: random.Random) -> bool:
    """Wait for ``moment``, SIGKILL the explorer; False when it ended first (nothing was killed).

    No kill lets more than MAX_POINTS_PER_KILL new points be stored, so on a machine of any speed the
    sweep outlasts the kills (KILLS x MAX_POINTS_PER_KILL < KILL_POINTS)."""
    cap = live_count(run) + MAX_POINTS_PER_KILL
    if moment == "sweep":
        target, seconds = live_count(run) + rng.randint(1, MAX_POINTS_PER_KILL), 300.0
    else:
        target, seconds = cap, rng.uniform(0.2, 4.0) if moment == "start" else rng.uniform(0.5, 8.0)
    deadline = time.monotonic() + seconds
    while live_count(run) < target and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.02)
    assert moment != "sweep" or process.poll() is not None or live_count(run) >= target, "no progress in 300 s"
    if process.poll() is not None:
        return False
    process.kill()
    process.communicate(timeout=60)
    return True


def test_sigkill_at_random_moments_then_resume(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWEEP_SPEC.replace("budget: 4000", f"budget: {KILL_POINTS}"))
    run = tmp_path / "run"
    assert len(KILLS) * MAX_POINTS_PER_KILL < KILL_POINTS  # the sweep outlasts the kills
    rng = random.Random(KILL_SEED)
    schedule = rng.sample(KILLS, len(KILLS))
    kills, before = 0, 0
    killed_pids: set[int] = set()
    for index, (executor, moment) in enumerate([*schedule, *ARRAY_KILLS, ("local", "finish"), *OUTPUT_KILLS]):
        tag = uuid.uuid4().hex
        chosen = [] if executor == "arrays" else ["--executor", executor, "--workers", "2"]
        process = start("explore", str(spec), "-o", str(run), "-q", *chosen, tag=tag)
        if moment == "finish":  # the rest of the sweep, to its end
            _, err = process.communicate(timeout=600)
            assert process.returncode == 0, err
        else:
            kills += kill_at(moment, process, run, rng)
            killed_pids.add(process.pid)
        assert_no_process_left(tag)
        now = stored(run)
        assert now >= before, f"kill {index} ({executor}, {moment}) lost points: {before} -> {now}"
        # killed explorers' own temporaries may stay until the next write into the folder removes them
        only_temporaries_of(killed_pids, run)
        outputs_whole(run)
        before = now
    assert kills >= 20, kills
    report_before = (run / "report.html").stat().st_mtime_ns
    done = dse("explore", str(spec), "-o", str(run), "-q", "--executor", "local", "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert (run / "report.html").stat().st_mtime_ns != report_before  # rebuilt
    no_partial_files(run)  # the debris of every kill is gone
    assert f"{KILL_POINTS} points (0 evaluated, {KILL_POINTS} from the store, 0 failed)" in done.stdout
    assert stored(run) == KILL_POINTS
    resumed = pd.read_parquet(run / "points.parquet")
    loaded = load_spec(spec)
    context, evaluation = prepare_run(loaded)
    reference = explore_points(loaded, evaluation, executor="serial", context=context).points
    assert resumed["point_id"].is_unique and set(resumed["point_id"]) == set(reference["point_id"])
    compared = [c for c in reference.columns if c not in ("point_id", "seq", "eval_s")]
    pd.testing.assert_frame_equal(
        resumed.set_index("point_id").sort_index()[compared],
        reference.set_index("point_id").sort_index()[compared],
        check_dtype=False,
    )


# -- failing points: a mapper bug, a memory limit, a killed worker -------------------------------------------

FAULTY_OPTIONS = {"raise_rows_every": 9, "hog_cols_every": 11, "crash_sum_every": 67}
FAULTY_SPEC = SWEEP_SPEC.replace("budget: 4000", "budget: 240").replace(
    "  kind: systolic\n",
    "  kind: systolic\n  mapper: faulty\n  mapper_options: {"
    + ", ".join(f"{k}: {v}" for k, v in FAULTY_OPTIONS.items())
    + "}\n",
)


def test_failing_points_are_recorded_with_their_reason_and_the_rest_complete(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(FAULTY_SPEC)
    run = tmp_path / "run"
    done = dse(
        "explore", str(spec), "-o", str(run), "-q", "--executor", "local", "--workers", "2", DSE_FAULT_PLUGIN="1"
    )
    assert done.returncode == 0, done.stderr
    points = pd.read_csv(run / "points.csv")
    expected = [injected_fault(r, c, **FAULTY_OPTIONS) for r, c in zip(points["rows"], points["cols"])]
    for fault, status, reason in zip(expected, points["status"], points["reason"].fillna("")):
        assert (status == "failed") == (fault is not None), (fault, status, reason)
        assert fault is None or reason.startswith(fault), (fault, reason)
    failed = {fault: expected.count(fault) for fault in (RAISED, OUT_OF_MEMORY, CRASHED)}
    assert all(failed.values()), failed  # the sweep met each fault
    total = sum(failed.values())
    assert f"240 points (240 evaluated, 0 from the store, {total} failed)" in done.stdout
    assert re.search(rf"{total} point\(s\) failed \(.*RuntimeError x{failed[RAISED]}", done.stdout), done.stdout
    assert f"MemoryError x{failed[OUT_OF_MEMORY]}" in done.stdout and f"WorkerCrashed x{failed[CRASHED]}" in done.stdout
    report = (run / "report.html").read_text()
    assert f"Failed points ({total})" in report
    assert "injected mapper fault" in report and "Unable to allocate" in report and "worker process died" in report


def test_the_explorer_over_its_memory_limit_fails_the_point_and_goes_on(tmp_path: Path) -> None:
    """RLIMIT_AS in the explorer's own process (serial: points are evaluated there): the point that asks for
    more than the limit fails with its MemoryError, every other point and the files are written."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        FAULTY_SPEC.replace("budget: 240", "budget: 60")
        .replace("raise_rows_every: 9, ", "")
        .replace(", crash_sum_every: 67", "")
    )
    run = tmp_path / "run"
    done = dse("explore", str(spec), "-o", str(run), "-q", "--executor", "serial", DSE_FAULT_PLUGIN="1")
    assert done.returncode == 0, done.stderr
    points = pd.read_csv(run / "points.csv")
    hogs = points["cols"] % FAULTY_OPTIONS["hog_cols_every"] == 0
    assert hogs.any() and (points.loc[hogs, "status"] == "failed").all() and (points.loc[~hogs, "status"] == "ok").all()
    assert points.loc[hogs, "reason"].str.startswith(OUT_OF_MEMORY).all()
    assert f"{int(hogs.sum())} point(s) failed (MemoryError x{int(hogs.sum())})" in done.stdout
    assert stored(run) == 60


# -- a worker lost mid-run -------------------------------------------------------------------------------


def workers_of(explorer: int) -> list[psutil.Process]:
    """The pool or Dask worker processes an explorer started (not its resource tracker)."""
    children = psutil.Process(explorer).children(recursive=True)
    return [p for p in children if "spawn_main" in " ".join(p.cmdline()) and "resource_tracker" not in p.cmdline()]


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_a_worker_lost_mid_run_costs_no_point(tmp_path: Path, executor: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWEEP_SPEC.replace("budget: 4000", "budget: 200"))
    run = tmp_path / "run"
    tag = uuid.uuid4().hex
    process = start("explore", str(spec), "-o", str(run), "-q", "--executor", executor, "--workers", "2", tag=tag)
    deadline = time.monotonic() + 300
    while live_count(run) < 30:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.02)
    victims = workers_of(process.pid)
    assert victims, "no worker process found"
    victims[0].kill()
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    assert "200 points (200 evaluated, 0 from the store, 0 failed)" in out, out
    assert stored(run) == 200
    assert_no_process_left(tag)


# -- full disks at each write site ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(spec, run directory) of a finished 200-point sweep, copied by each test that fills its disk."""
    folder = tmp_path_factory.mktemp("finished")
    spec = folder / "spec.yaml"
    spec.write_text(SWEEP_SPEC.replace("budget: 4000", "budget: 200"))
    run = folder / "run"
    done = dse("explore", str(spec), "-o", str(run), "-q", "--executor", "serial")
    assert done.returncode == 0, done.stderr
    assert dse("compare", str(run)).returncode == 0
    return spec, run


def copy_run(run: Path, to: Path) -> Path:
    shutil.copytree(run, to)
    return to


def test_disk_full_in_the_store_stops_and_the_same_command_resumes(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWEEP_SPEC.replace("budget: 4000", "budget: 200"))
    run = tmp_path / "run"
    argv = ("explore", str(spec), "-o", str(run), "-q", "--executor", "serial")
    full = dse(*argv, DSE_FAULT_FULL_STORE_PAGES="40")  # SQLite's own 'database or disk is full'
    assert full.returncode == EXIT_USER_ERROR, full.stderr
    line = one_located_line(full.stderr, run)
    assert f"no space left on the device while writing {run / 'store.sqlite'}" in line and "same command" in line
    kept = int(re.search(r"(\d+) point\(s\) are stored", line).group(1))
    assert 0 < kept < 200 and stored(run) == kept
    no_partial_files(run)
    again = dse(*argv)
    assert again.returncode == 0, again.stderr
    assert f"200 points ({200 - kept} evaluated, {kept} from the store, 0 failed)" in again.stdout


FILE_SITES = {
    "points.parquet": ("explore",),
    "report.html": ("explore",),
    "compare.csv": ("compare",),
    "compare_layers.csv": ("compare",),
}


@pytest.mark.parametrize("name", FILE_SITES)
def test_disk_full_while_writing_a_file_keeps_every_file_whole(
    finished_run: tuple[Path, Path], tmp_path: Path, name: str
) -> None:
    spec, finished = finished_run
    run = copy_run(finished, tmp_path / "run")
    before = {p.name: p.read_bytes() for p in run.iterdir() if not p.name.startswith("store.sqlite")}
    argv = (
        ("explore", str(spec), "-o", str(run), "-q", "--executor", "serial")
        if FILE_SITES[name] == ("explore",)
        else ("compare", str(run))
    )
    full = dse(*argv, DSE_FAULT_FULL_FILE=name)
    assert full.returncode == EXIT_USER_ERROR, full.stderr
    line = one_located_line(full.stderr, run)
    assert f"no space left on the device while writing {run / name}; 200 point(s) are stored" in line, line
    assert (run / name).read_bytes() == before[name]  # the old file, whole
    assert stored(run) == 200
    no_partial_files(run)


def test_disk_full_while_exporting_removes_the_partial_project(tmp_path: Path) -> None:
    pytest.importorskip("hls4ml")
    spec = tmp_path / "fpga.yaml"
    spec.write_text(FPGA_SPEC)
    run = tmp_path / "run"
    assert dse("explore", str(spec), "-o", str(run), "-q", "--executor", "serial").returncode == 0
    point = pd.read_csv(run / "pareto.csv")["point_id"].iloc[0]
    out = tmp_path / "export"
    argv = ("export", str(run), "--point", point, "-o", str(out))
    full = dse(*argv, DSE_FAULT_FULL_FOLDER="hls4ml_prj", DSE_FAULT_FULL_AFTER="3")
    assert full.returncode == EXIT_USER_ERROR, full.stderr
    line = one_located_line(full.stderr, run)
    assert "no space left on the device while writing" in line and f"partial project in {out} was removed" in line
    assert not (out / "hls4ml_prj").exists() and not (out / "export_report.json").exists()
    assert stored(run) == 2
    again = dse(*argv)
    assert again.returncode == 0, again.stderr
    assert (out / "export_report.json").is_file()


def test_injection_is_inert_without_its_variables(tmp_path: Path) -> None:
    """The harness itself: a run with the injector on its path and no fault armed is an ordinary run."""
    probe: Callable[[str], str] = lambda code: subprocess.run(  # noqa: E731
        [sys.executable, "-c", code], capture_output=True, text=True, env=run_env("probe"), check=True
    ).stdout.strip()
    code = "import sitecustomize, sqlite3, _sqlite3, builtins, _io; print(sqlite3.connect is _sqlite3.connect, "
    code += "builtins.open is _io.open, 'dse.files' in __import__('sys').modules)"
    assert probe(code) == "True True False"
