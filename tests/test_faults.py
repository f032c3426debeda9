"""Faults and hostile run directories (issue #33): a killed explorer leaves no process behind, a damaged,
foreign or newer store and an odd run directory get one clear message, ``dse recover`` saves what is readable,
and a full disk stops a run with a message saying how to resume, leaving no half-written file.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import psutil
import pytest
from test_interrupt import SWEEP_SPEC, dse, stored, wait_for

from dse import commands as dse_commands
from dse import files as dse_files
from dse import finish as dse_finish
from dse.cli import main
from dse.errors import EXIT_USER_ERROR
from dse.files import PARTIAL_MARK
from dse.store import STORE_SCHEMA_VERSION, Store
from dse.store_errors import STORE_FILE


def still_running(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Those of ``processes`` alive; a zombie (dead, not yet reaped by whoever adopted it) counts as ended."""
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            continue
    return alive


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_sigkill_of_explore_leaves_no_process_of_the_run(tmp_path: Path, executor: str) -> None:
    """Pool workers (local pool, local Dask cluster) and the resource tracker end when the explorer is SIGKILLed."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWEEP_SPEC)
    run = tmp_path / "run"
    explorer = dse("explore", str(spec), "-o", str(run), "-q", "--executor", executor, "--workers", "2")
    wait_for(lambda: stored(run) >= 50, explorer)
    started = psutil.Process(explorer.pid).children(recursive=True)
    assert len(started) >= 2, started  # the workers (and the resource tracker) of this run
    explorer.send_signal(signal.SIGKILL)
    explorer.communicate(timeout=30)
    deadline = time.monotonic() + 10.0
    while still_running(started) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = still_running(started)
    for process in left:  # do not leak them into the rest of the suite
        process.kill()
    assert not left, [(p.pid, p.cmdline()) for p in left]


# -- hostile run directories --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(spec, run directory) of a finished 300-point sweep, to be copied and damaged by each test."""
    folder = tmp_path_factory.mktemp("good")
    spec = folder / "spec.yaml"
    spec.write_text(SWEEP_SPEC.replace("budget: 4000", "budget: 300"))
    run = folder / "run"
    assert main(["explore", str(spec), "-o", str(run), "-q", "--executor", "serial"]) == 0
    return spec, run


def zero_pages(store: Path) -> None:
    with store.open("r+b") as file:
        file.seek(5 * 4096)
        file.write(bytes(3 * 4096))


def truncate(store: Path) -> None:
    os.truncate(store, store.stat().st_size // 2)


def make_foreign(store: Path) -> None:
    store.write_bytes(b"this is not an SQLite file\n" * 200)


def make_newer(store: Path) -> None:
    with closing(sqlite3.connect(store)) as db:
        db.execute(f"PRAGMA user_version = {STORE_SCHEMA_VERSION + 1}")


DAMAGES = {
    "zeroed pages": (zero_pages, "damaged"),
    "truncated": (truncate, "damaged"),
    "foreign": (make_foreign, "damaged"),
    "newer schema": (make_newer, "newer dse"),
}


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_or_newer_store_gets_one_message(
    good_run: tuple[Path, Path], tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, run = good_run
    bad = tmp_path / "bad"
    shutil.copytree(run, bad)
    damage_store, words = DAMAGES[damage]
    damage_store(bad / STORE_FILE)
    before = (bad / STORE_FILE).read_bytes()
    for argv in (["report", str(bad)], ["explore", str(spec), "-o", str(bad), "-q", "--executor", "serial"]):
        assert main(argv) == EXIT_USER_ERROR
        err = one_error_line(capsys)
        assert str(bad / STORE_FILE) in err and words in err, err
        assert ("dse recover" in err) == (words == "damaged"), err
    assert (bad / STORE_FILE).read_bytes() == before  # left as it was, for `dse recover`


def test_run_directory_that_is_a_file_or_holds_a_folder_as_store(
    good_run: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, _ = good_run
    a_file = tmp_path / "run.txt"
    a_file.write_text("not a run")
    odd_store = tmp_path / "odd"
    (odd_store / STORE_FILE).mkdir(parents=True)
    for folder, words in ((a_file, "is a file, not a run directory"), (odd_store, "is not a file")):
        for argv in (["report", str(folder)], ["explore", str(spec), "-o", str(folder), "-q", "--executor", "serial"]):
            assert main(argv) == EXIT_USER_ERROR
            assert words in one_error_line(capsys)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder whatever its permissions")
def test_unreadable_run_directory_gets_one_message(
    good_run: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run = good_run
    locked = tmp_path / "locked"
    shutil.copytree(run, locked)
    locked.chmod(0)
    try:
        assert main(["report", str(locked)]) == EXIT_USER_ERROR
        assert "permission denied" in one_error_line(capsys)
        assert main(["runs", str(tmp_path)]) == 0
        assert "unreadable" in capsys.readouterr().out
    finally:
        locked.chmod(0o755)


def test_run_directory_without_permissions_gets_one_message(
    good_run: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a user without rights on the folder sees (simulated: the suite may run as root, who has every right)."""
    spec, run = good_run
    locked = tmp_path / "locked"
    shutil.copytree(run, locked)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != locked and real_access(path, mode))
    for argv in (["report", str(locked)], ["explore", str(spec), "-o", str(locked), "-q", "--executor", "serial"]):
        assert main(argv) == EXIT_USER_ERROR
        err = one_error_line(capsys)
        assert str(locked) in err and "permission denied" in err, err
    assert main(["runs", str(tmp_path)]) == 0
    assert "unreadable: cannot be read and written (permission denied)" in capsys.readouterr().out


def test_runs_lists_every_readable_run_and_marks_the_others(
    good_run: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run = good_run
    shutil.copytree(run, tmp_path / "a-good")
    for name, (damage_store, _) in DAMAGES.items():
        folder = tmp_path / name.replace(" ", "-")
        shutil.copytree(run, folder)
        damage_store(folder / STORE_FILE)
    assert main(["runs", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    lines = {line.split()[0]: line for line in captured.out.splitlines()[1:]}
    assert "interrupt-sweep" in lines[str(tmp_path / "a-good")] and "done" in lines[str(tmp_path / "a-good")]
    for name in DAMAGES:
        assert "unreadable:" in lines[str(tmp_path / name.replace(" ", "-"))]
    assert len(lines) == 1 + len(DAMAGES)


# -- dse recover ----------------------------------------------------------------------------------------


def zero_scattered_pages(store: Path) -> None:
    with store.open("r+b") as file:
        for page in (20, 40, 60, 80, 100, 150):
            file.seek(page * 4096)
            file.write(bytes(4096))


@pytest.mark.parametrize("damage", [zero_scattered_pages, truncate])
def test_recover_saves_readable_points_and_explore_evaluates_only_the_lost(
    good_run: tuple[Path, Path], tmp_path: Path, damage: Callable[[Path], None], capsys: pytest.CaptureFixture[str]
) -> None:
    spec, run = good_run
    bad = tmp_path / "bad"
    shutil.copytree(run, bad)
    damage(bad / STORE_FILE)
    damaged_bytes = (bad / STORE_FILE).read_bytes()
    assert main(["recover", str(bad)]) == 0
    said = capsys.readouterr().out
    saved, lost = (int(n) for n in re.search(r"(\d+) point\(s\) saved, (\d+) lost", said).groups())
    assert saved > 0 and lost > 0 and saved + lost == 300, said
    kept = list(bad.glob(f"{STORE_FILE}.damaged-*"))
    assert (
        len(kept) == 1 and kept[0].read_bytes()[: len(damaged_bytes) // 2] == damaged_bytes[: len(damaged_bytes) // 2]
    )
    assert kept[0].name in said
    assert main(["explore", str(spec), "-o", str(bad), "-q", "--executor", "serial"]) == 0
    assert f"300 points ({lost} evaluated, {saved} from the store, 0 failed)" in capsys.readouterr().out


def test_recover_leaves_a_sound_store_alone(
    good_run: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run = good_run
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    assert main(["recover", str(copy)]) == 0
    assert "not damaged" in capsys.readouterr().out
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in run.iterdir())


# -- full disks -------------------------------------------------------------------------------------------


def disk_full_after(calls: int, put_many: Callable[..., None]) -> Callable[..., None]:
    """``Store.put_many`` that stores ``calls`` times, then fails as SQLite does on a full disk."""
    done = [0]

    def put_many_until_full(self: Store, *args: object, **kwargs: object) -> None:
        if done[0] >= calls:
            raise sqlite3.OperationalError("database or disk is full")
        done[0] += 1
        put_many(self, *args, **kwargs)

    return put_many_until_full


def test_disk_full_during_the_sweep_stops_with_one_message_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWEEP_SPEC.replace("budget: 4000", "budget: 300"))
    run = tmp_path / "run"
    argv = ["explore", str(spec), "-o", str(run), "-q", "--executor", "serial"]
    monkeypatch.setattr(Store, "put_many", disk_full_after(120, Store.put_many))
    assert main(argv) == EXIT_USER_ERROR
    err = one_error_line(capsys)
    assert "no space left" in err and str(run / STORE_FILE) in err and "same command" in err, err
    stored_now = int(re.search(r"(\d+) point\(s\) are stored", err).group(1))
    assert 0 < stored_now < 300
    assert not [p for p in run.iterdir() if PARTIAL_MARK in p.name]
    monkeypatch.undo()
    assert main(argv) == 0  # space freed: the same command resumes
    assert f"({300 - stored_now} evaluated, {stored_now} from the store, 0 failed)" in capsys.readouterr().out


def fail_when_writing(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every atomic write of a file called ``name`` writes part of it, then fails with ENOSPC."""
    real = dse_files.atomic_write

    def atomic_write_on_a_full_disk(path: str | Path, write: Callable[[Path], object]) -> Path:
        def write_then_fill(temporary: Path) -> None:
            write(temporary)
            with temporary.open("r+b") as file:  # half of it made it to the disk
                file.truncate(max(1, temporary.stat().st_size // 2))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(temporary))

        return real(path, write_then_fill if Path(path).name == name else write)

    monkeypatch.setattr(dse_files, "atomic_write", atomic_write_on_a_full_disk)
    monkeypatch.setattr(dse_finish, "atomic_write", atomic_write_on_a_full_disk)
    monkeypatch.setattr(dse_commands, "atomic_write", atomic_write_on_a_full_disk)


@pytest.mark.parametrize(
    "command, failing",
    [("explore", "points.parquet"), ("explore", "pareto.csv"), ("explore", "report.html"), ("report", "report.html")],
)
def test_disk_full_while_writing_outputs_leaves_every_file_whole(
    good_run: tuple[Path, Path],
    tmp_path: Path,
    command: str,
    failing: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec, run = good_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    before = {p.name: p.read_bytes() for p in copy.iterdir() if p.name != STORE_FILE}
    fail_when_writing(failing, monkeypatch)
    argv = (
        ["report", str(copy)]
        if command == "report"
        else ["explore", str(spec), "-o", str(copy), "-q", "--executor", "serial"]
    )
    assert main(argv) == EXIT_USER_ERROR
    err = one_error_line(capsys)
    assert f"while writing {copy / failing}" in err and "300 point(s) are stored" in err, err
    assert not [p for p in copy.iterdir() if PARTIAL_MARK in p.name]
    assert (copy / failing).read_bytes() == before[failing]  # the old file, whole


def test_disk_full_in_any_other_command_is_one_line(
    good_run: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, _ = good_run
    layers = tmp_path / "layers.csv"
    fail_when_writing(layers.name, monkeypatch)
    assert (
        main(
            [
                "evaluate",
                str(spec),
                *[f"--point={p}" for p in ("rows=16", "cols=16", "dataflow=ws", "sram_kib=64")],
                "--layers",
                str(layers),
            ]
        )
        == EXIT_USER_ERROR
    )
    err = one_error_line(capsys)
    assert f"no space left on the device while writing {layers}" in err and "same command" in err, err
    assert not layers.exists() and not [p for p in tmp_path.iterdir() if PARTIAL_MARK in p.name]


def test_out_of_memory_in_the_explorer_is_one_line_and_keeps_the_store(
    good_run: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A MemoryError of the explorer's own process (a worker's fails only its point: tests/test_fault_injection.py)."""
    spec, run = good_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    before = (copy / "points.parquet").read_bytes()

    def out_of_memory(path: str | Path, write: Callable[[Path], object]) -> Path:
        raise MemoryError()

    monkeypatch.setattr(dse_finish, "atomic_write", out_of_memory)
    assert main(["explore", str(spec), "-o", str(copy), "-q", "--executor", "serial"]) == EXIT_USER_ERROR
    err = one_error_line(capsys)
    assert err.startswith(f"dse: error: {copy}: out of memory") and "300 point(s) are stored" in err, err
    assert "same command" in err and (copy / "points.parquet").read_bytes() == before
