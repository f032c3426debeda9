"""Fault injection for tests/test_fault_injection.py, armed in a real ``dse`` process and every worker it starts.

The suite puts this folder first on PYTHONPATH, so Python imports this module when any process of the run
starts (the explorer, spawned pool workers, Dask workers); each ``DSE_FAULT_*`` variable arms one fault and
nothing happens without them. Every fault goes through a public door or the operating system's own failure:
a plug-in mapper registered with ``dse.registry.register_mapper``, SQLite's own "database or disk is full"
(``PRAGMA max_page_count``), and ENOSPC raised where a file is written.

- ``DSE_FAULT_PLUGIN=1``: the ``faulty`` systolic mapper of ``faulty_mapper`` (its options pick the points that
  raise, exceed a memory limit or kill their worker).
- ``DSE_FAULT_FULL_STORE_PAGES=N``: every connection to a ``store.sqlite`` may grow it by N pages at most.
- ``DSE_FAULT_FULL_FILE=NAME``: every atomic write of a file called NAME writes half of it, then gets ENOSPC.
- ``DSE_FAULT_FULL_FOLDER=NAME`` and ``DSE_FAULT_FULL_AFTER=K``: creating a file below a folder called NAME
  fails with ENOSPC after K files were created there.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any


def disk_full(path: object) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def limit_store_growth(extra_pages: int) -> None:
    real_connect = sqlite3.connect

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = real_connect(database, *args, **kwargs)
        if str(database).endswith("store.sqlite"):
            (pages,) = db.execute("PRAGMA page_count").fetchone()
            db.execute(f"PRAGMA max_page_count = {pages + extra_pages}")
        return db

    sqlite3.connect = connect


def fill_disk_when_writing(name: str) -> None:
    import dse.files  # before any module binds ``from dse.files import atomic_write``

    real_atomic_write = dse.files.atomic_write

    def atomic_write(path: str | Path, write: Callable[[Path], object]) -> Path:
        if Path(path).name != name:
            return real_atomic_write(path, write)

        def write_half_then_fill(temporary: Path) -> None:
            write(temporary)
            with temporary.open("r+b") as file:
                file.truncate(max(1, temporary.stat().st_size // 2))
            raise disk_full(temporary)

        return real_atomic_write(path, write_half_then_fill)

    dse.files.atomic_write = atomic_write


def fill_disk_below(folder: str, files_that_fit: int) -> None:
    real_open = builtins.open
    created = [0]

    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | os.PathLike) and set(mode) & set("wax") and folder in Path(file).parts:
            created[0] += 1
            if created[0] > files_that_fit:
                raise disk_full(file)
        return real_open(file, mode, *args, **kwargs)

    builtins.open = io.open = open_


if os.environ.get("DSE_FAULT_PLUGIN"):
    import faulty_mapper

    faulty_mapper.register()
if os.environ.get("DSE_FAULT_FULL_STORE_PAGES"):
    limit_store_growth(int(os.environ["DSE_FAULT_FULL_STORE_PAGES"]))
if os.environ.get("DSE_FAULT_FULL_FILE"):
    fill_disk_when_writing(os.environ["DSE_FAULT_FULL_FILE"])
if os.environ.get("DSE_FAULT_FULL_FOLDER"):
    fill_disk_below(os.environ["DSE_FAULT_FULL_FOLDER"], int(os.environ.get("DSE_FAULT_FULL_AFTER", "0")))
