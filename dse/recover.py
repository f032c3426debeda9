"""`dse recover DIR`: a way back from a damaged store.

Python's sqlite3 has no ``.recover``, so the damaged file is read defensively: each table is read in one
pass while that works, then row by row (by rowid) past the pages SQLite cannot read, and every readable
row goes into a fresh store. The damaged file is renamed aside, never deleted. Point keys are kept, so
``dse explore`` on the same spec then evaluates only the points that were lost.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from dse.chunkstore import DIGEST_BYTES, decode_table, hex_keys
from dse.errors import UserError
from dse.store import Store
from dse.store_errors import STORE_FILE, StoreDamaged, check_run_directory

SIDE_FILES = ("-wal", "-shm")  # SQLite's companions of a store; they travel with it when it is renamed aside
WORKSPACE = ".recovering"  # the fresh store is built here, then moved onto DIR/store.sqlite
MIN_ROW_BYTES = 8  # no stored row is smaller: bounds the rowids to probe when the highest cannot be read
# what is copied, in this order: table -> its columns (a store older than `solver` gives NULL for it)
TABLES = {
    "meta": ("name", "value"),
    "points": (
        "key",
        "point_id",
        "seq",
        "fingerprint",
        "params",
        "metrics",
        "status",
        "reason",
        "eval_s",
        "evaluator",
        "exact",
        "created",
        "solver",
    ),
    "chunks": ("id", "fingerprint", "first_seq", "n", "evaluator", "exact", "eval_s", "created", "keys", "data"),
    "layers": ("key", "rows"),
    "proposals": ("tag", "n", "key"),
    "synthesis": ("point_id", "backend", "report", "predicted", "created"),
}
TABLES_OF_POINTS = ("layers", "proposals")  # rows that belong to a point: copied only with their point


@dataclass(frozen=True)
class Recovery:
    """What ``recover_run`` did: points saved, points known lost (at least), where the damaged file lies."""

    run_dir: Path
    saved: int
    lost: int
    damaged: Path | None  # None when the store was not damaged and nothing was changed

    def summary(self) -> str:
        if self.damaged is None:
            return f"{self.run_dir / STORE_FILE} is not damaged; nothing was changed"
        return (
            f"recovered {self.run_dir}: {self.saved} point(s) saved, {self.lost} lost; the damaged store is kept "
            f"as {self.damaged}. Run the same `dse explore` again: it evaluates only the missing points and "
            "rewrites the report"
        )


def recover_run(run_dir: Path) -> Recovery:
    """Copy every readable row of DIR's damaged store into a fresh one; the damaged file is renamed aside."""
    run_dir = Path(run_dir)
    check_run_directory(run_dir)
    store_path = run_dir / STORE_FILE
    if not store_path.is_file():
        raise UserError(
            f"{run_dir} holds no {STORE_FILE}; give a directory written by `dse explore`", where=str(run_dir)
        )
    try:
        Store.open(run_dir).close()
        return Recovery(run_dir, saved=0, lost=0, damaged=None)
    except StoreDamaged:
        pass  # the case this command is for; a newer store (StoreUnreadable) is not damaged and goes up as is
    damaged = store_path.with_name(f"{STORE_FILE}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    move_with_side_files(store_path, damaged)
    workspace = run_dir / WORKSPACE
    shutil.rmtree(workspace, ignore_errors=True)
    try:
        Store.open(workspace).close()  # the current schema, empty
        with closing(sqlite3.connect(damaged)) as source, closing(sqlite3.connect(workspace / STORE_FILE)) as target:
            # lets SQLite read the schema of a truncated file (whose tables point past its end); nothing is written
            source.execute("PRAGMA writable_schema = ON")
            saved, lost = copy_readable(source, target)
        os.replace(workspace / STORE_FILE, store_path)
    except BaseException:
        move_with_side_files(damaged, store_path)  # as it was: nothing half-done is left in its place
        raise
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    return Recovery(run_dir, saved=saved, lost=lost, damaged=damaged)


def move_with_side_files(source: Path, target: Path) -> None:
    """Rename a store and its -wal/-shm companions (their names follow the store's, so SQLite finds them)."""
    os.replace(source, target)
    for suffix in SIDE_FILES:
        side = source.with_name(source.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))


def copy_readable(source: sqlite3.Connection, target: sqlite3.Connection) -> tuple[int, int]:
    """Copy the readable rows of every table; (points saved, points known to be lost)."""
    saved_keys: set[str] = set()
    max_seq = -1
    target.execute("BEGIN")
    for table, columns in TABLES.items():
        present = source_columns(source, table)
        if present is None:
            continue
        selected = [name if name in present else "NULL" for name in columns]
        insert = f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        for row in readable_rows(source, table, selected):
            if table in TABLES_OF_POINTS and row[columns.index("key")] not in saved_keys:
                continue
            if table == "chunks" and not whole_chunk(row):  # damaged bytes that still parsed: lost
                continue
            try:
                target.execute(insert, row)
            except sqlite3.Error:  # a row that breaks the schema (damaged bytes that still parsed): not copied
                continue
            if table == "points":
                saved_keys.add(row[0])
                max_seq = max(max_seq, int(row[2]))
            elif table == "chunks":
                saved_keys.update(hex_keys(np.frombuffer(row[8], dtype=f"S{DIGEST_BYTES}")))
                max_seq = max(max_seq, int(row[2]) + int(row[3]) - 1)
    target.execute("COMMIT")
    known = max(max_seq + 1, stored_point_count(source), len(saved_keys))
    return len(saved_keys), known - len(saved_keys)


def whole_chunk(row: Sequence[Any]) -> bool:
    """A chunk row whose keys and columns read back whole (its n keys, an Arrow stream of n rows)."""
    try:
        n, keys = int(row[3]), row[8]
        return len(keys) == n * DIGEST_BYTES and decode_table(row[9]).num_rows == n
    except (TypeError, ValueError, pa.ArrowException):
        return False


def source_columns(source: sqlite3.Connection, table: str) -> set[str] | None:
    """The columns ``table`` has in the damaged store; None when its schema cannot be read."""
    try:
        rows = source.execute(f"PRAGMA table_info({table})").fetchall()
    except sqlite3.DatabaseError:
        return None
    return {row[1] for row in rows} or None


def readable_rows(source: sqlite3.Connection, table: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """Every row of ``table`` SQLite can read: one pass in rowid order, then rowid by rowid past the damage."""
    select = f"SELECT rowid, {', '.join(columns)} FROM {table}"
    last = 0
    try:
        for rowid, *values in source.execute(f"{select} ORDER BY rowid"):
            last = rowid
            yield tuple(values)
        return
    except sqlite3.DatabaseError:
        pass
    candidates = set(range(last + 1, highest_rowid(source, table) + 1)) | indexed_rowids(source, table, last)
    for rowid in sorted(candidates):
        try:
            row = source.execute(f"{select} WHERE rowid = ?", (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            continue
        if row is not None:
            yield tuple(row[1:])


def indexed_rowids(source: sqlite3.Connection, table: str, after: int) -> set[int]:
    """The rowids above ``after`` that the table's primary-key index still lists (its pages may have survived
    where the table's did not, and they name rows the probe by rowid would not reach)."""
    rowids: set[int] = set()
    try:
        for (rowid,) in source.execute(f"SELECT rowid FROM {table} INDEXED BY sqlite_autoindex_{table}_1"):
            if rowid > after:
                rowids.add(rowid)
    except sqlite3.DatabaseError:  # the index is damaged too (or absent): what was read so far
        pass
    return rowids


def highest_rowid(source: sqlite3.Connection, table: str) -> int:
    """The highest rowid of ``table``, or, when that cannot be read, the most rows the file could hold."""
    try:
        (pages,) = source.execute("PRAGMA page_count").fetchone()
        (page_size,) = source.execute("PRAGMA page_size").fetchone()
    except sqlite3.DatabaseError:
        return 0
    most = pages * page_size // MIN_ROW_BYTES
    try:
        (highest,) = source.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()
    except sqlite3.DatabaseError:
        return most
    return min(int(highest or 0), most)  # a damaged page can hold any number


def stored_point_count(source: sqlite3.Connection) -> int:
    """How many points the damaged store held: its points by their seq index when that survived (0 when not),
    plus its chunks' points."""
    try:
        (count,) = source.execute("SELECT COUNT(*) FROM points INDEXED BY points_seq WHERE seq >= 0").fetchone()
    except sqlite3.DatabaseError:
        return 0
    try:
        (chunked,) = source.execute("SELECT COALESCE(SUM(n), 0) FROM chunks").fetchone()
    except sqlite3.DatabaseError:  # no chunks table (an older store), or a damaged one: the points alone
        chunked = 0
    return int(count) + int(chunked)
