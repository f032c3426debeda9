"""A run directory: ``store.sqlite`` (the truth) plus files derived from it.

``open_run`` is how every command that reads a finished or running run gets at its store and the
spec it was explored with, so relative model paths resolve as they did when it ran.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from dse.errors import UserError
from dse.files import is_disk_full
from dse.spec import Spec, parse_spec
from dse.store import Store
from dse.store_errors import STORE_FILE, check_run_directory, reading_store

__all__ = [
    "NOTHING_HALF_WRITTEN",
    "STORE_FILE",
    "DiskFull",
    "OutOfMemory",
    "open_run",
    "open_store",
    "spec_of",
    "stops_when_disk_full",
]


class DiskFull(UserError):
    """The disk filled during a run or a report: one line (exit 2) saying what is safe and how to go on."""


class OutOfMemory(UserError):
    """The dse process itself ran out of memory (a worker's MemoryError fails only its point): one line, exit 2."""


NOTHING_HALF_WRITTEN = "no file was left half-written"


@contextmanager
def stops_when_disk_full(run_dir: Path, left: str = NOTHING_HALF_WRITTEN, output: Path | None = None) -> Iterator[None]:
    """Turn 'no space left' (an OSError, or SQLite's 'database or disk is full') into DiskFull, and a
    MemoryError of this process into OutOfMemory: the two resources a run may exhaust, each one located line.

    Nothing is lost when that happens: every point is committed before it is counted (the failed
    transaction rolls back whole) and every output file is written atomically, so the old file or none
    is left, never half of one. The message says how many points the store holds and that the same
    command resumes from them once space is freed; ``left`` says what became of the command's own output
    (a command that writes a folder, as ``dse export`` does, removes the partial one) and ``output`` is what
    the message names when the error names no file."""
    store_path = Path(run_dir) / STORE_FILE
    try:
        yield
    except MemoryError:  # raised in this process, not in a worker (there it is the point's failure reason)
        raise OutOfMemory(
            f"out of memory (this dse process reached its memory limit: ulimit -v, a container's limit or the "
            f"machine's memory); {stored_line(store_path)} and {left}. Free some memory or raise the limit and run "
            "the same command again: it resumes from the store",
            where=str(run_dir),
        ) from None
    except (OSError, sqlite3.OperationalError) as exc:
        if not is_disk_full(exc):
            raise
        where = getattr(exc, "filename", None) or output or store_path
        raise DiskFull(
            f"no space left on the device while writing {where}; {stored_line(store_path)} and {left}. "
            "Free some space and run the same command again: it resumes from the store",
            where=str(run_dir),
        ) from None


def stored_line(store_path: Path) -> str:
    """'N point(s) are stored in STORE' (counted on a connection of its own), for the messages above."""
    stored = stored_points(store_path)
    kept = "every point evaluated so far is" if stored is None else f"{stored} point(s) are"
    return f"{kept} stored in {store_path}"


def stored_points(store_path: Path) -> int | None:
    """How many points the store holds, read on a connection of its own (None when it cannot be read)."""
    if not store_path.is_file():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{store_path}?mode=ro", uri=True, timeout=5.0)) as db:
            return int(db.execute("SELECT COUNT(*) FROM points").fetchone()[0])
    except sqlite3.Error:
        return None


def open_store(run_dir: Path) -> Store:
    """The store of an existing run directory; a UserError naming the directory when there is none, or when
    it or its store cannot be read (``dse.store.StoreUnreadable``)."""
    run_dir = Path(run_dir)
    check_run_directory(run_dir)
    if not (run_dir / STORE_FILE).is_file():
        raise UserError(
            f"{run_dir} is not a run directory (no {STORE_FILE}); give a directory written by `dse explore`",
            where=str(run_dir),
        )
    return Store.open(run_dir)


def spec_of(run_dir: Path, meta: dict[str, str]) -> Spec:
    """The spec the run used, parsed from the store with its original path (so relative model paths resolve)."""
    text = meta.get("spec_yaml", "")
    if not text:
        raise UserError(f"the store in {run_dir} records no spec; re-run `dse explore` on it", where=str(run_dir))
    path = meta.get("spec_path") or str(Path(run_dir) / "spec.yaml")
    return parse_spec(text, path=path)


@contextmanager
def open_run(run_dir: Path) -> Iterator[tuple[Store, Spec]]:
    """(store, spec) of an existing run directory; the store closes when the block ends."""
    with open_store(run_dir) as store, reading_store(store.path):
        yield store, spec_of(Path(run_dir), store.meta())
