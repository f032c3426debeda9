"""The errors of a run directory and its store: one located message for each way it can be unusable."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dse.errors import UserError
from dse.files import is_disk_full

STORE_FILE = "store.sqlite"


class StoreUnreadable(UserError):
    """A run directory or its store this dse cannot use: damaged, truncated, not SQLite, newer, not a folder.

    A UserError, so every command prints it as one line naming the file and what to do, and exits 2."""

    def __init__(self, path: Path, problem: str, remedy: str):
        super().__init__(f"{problem}; {remedy}", where=str(path))
        self.path = path
        self.problem = problem


class StoreDamaged(StoreUnreadable):
    """A store SQLite cannot read: damaged pages, truncated, not SQLite at all (``dse recover`` saves what it can)."""


def damaged_store_error(path: Path, exc: BaseException) -> StoreDamaged:
    """The one message for a store SQLite cannot read, whatever part of it failed."""
    return StoreDamaged(
        path,
        f"the store cannot be read ({exc}): it is damaged, truncated or not a dse store",
        f"run `dse recover {path.parent}` to save its readable points into a fresh store, "
        "or explore into a new directory",
    )


@contextmanager
def reading_store(path: Path) -> Iterator[None]:
    """Turn SQLite's 'malformed' / 'not a database' errors met while using the store at ``path`` into
    StoreUnreadable; a full disk is let through for the caller to report (see dse/rundir.py)."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if is_disk_full(exc):
            raise
        raise damaged_store_error(Path(path), exc) from None


def check_run_directory(directory: Path) -> None:
    """A run directory that is a file, not readable, or whose store is not a file: one message saying so."""
    store_path = directory / STORE_FILE
    if directory.exists() and not directory.is_dir():
        raise StoreUnreadable(
            directory, "is a file, not a run directory", "give the path of a directory (dse explore creates it)"
        )
    if directory.is_dir() and not os.access(directory, os.R_OK | os.W_OK | os.X_OK):
        raise StoreUnreadable(
            directory, "cannot be read and written (permission denied)", "fix its permissions or use another directory"
        )
    if store_path.exists() and not store_path.is_file():
        raise StoreUnreadable(store_path, "is not a file", "move it away or explore into a new directory")
    if store_path.is_file() and not os.access(store_path, os.R_OK | os.W_OK):
        raise StoreUnreadable(
            store_path, "cannot be read and written (permission denied)", "fix its permissions or copy the run"
        )
