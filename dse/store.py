"""The result store: one SQLite file per run directory (``DIR/store.sqlite``).

Every evaluated point is committed here before anyone is told about it, keyed by
``sha256(evaluation fingerprint, canonical point, dse version)``. A run killed at
any moment (SIGKILL included) therefore resumes where it stopped, and a point
whose key is present is never evaluated again. WAL journaling keeps committed
transactions intact across process crashes.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import dse
from dse.chunkstore import (
    CHUNK_SCHEMA,
    Chunk,
    DigestIndex,
    NewChunk,
    chunk_next_seq,
    chunk_places,
    chunk_point_count,
    chunk_records,
    digests_of,
    hex_keys,
    iter_chunks,
    read_chunk,
    rows_by_chunk,
    write_chunk,
)
from dse.files import is_disk_full
from dse.flat import (
    POINT_ID_LENGTH,
    TRANSIENT_FAILURES,
    PointRecord,
    decode_layers,
    encode_layers,
    failed_transiently,
    json_default,
)
from dse.store_errors import (
    STORE_FILE,
    StoreUnreadable,
    check_run_directory,
    reading_store,
)

if TYPE_CHECKING:  # pandas is imported where frames are built: pool workers import this module and stay light
    import pandas as pd

_RECORD_COLUMNS = "key, params, status, metrics, reason, eval_s, evaluator, exact, fingerprint, seq, solver"
# PRAGMA user_version of the stores this code writes; a store with a higher one was written by a newer dse
DECODED_CHUNKS = 4  # decoded chunks a store keeps at hand
STORE_SCHEMA_VERSION = 2  # 2: the ``chunks`` table of the array path (dse.chunkstore)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS points (
    key TEXT PRIMARY KEY,
    point_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    params TEXT NOT NULL,
    metrics TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    reason TEXT,
    eval_s REAL,
    evaluator TEXT,
    exact INTEGER,
    created REAL,
    solver TEXT
);
CREATE INDEX IF NOT EXISTS points_point_id ON points (point_id);
CREATE INDEX IF NOT EXISTS points_seq ON points (seq);
CREATE INDEX IF NOT EXISTS points_fingerprint_seq ON points (fingerprint, seq);
CREATE TABLE IF NOT EXISTS layers (key TEXT PRIMARY KEY, rows BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS proposals (tag TEXT NOT NULL, n INTEGER NOT NULL, key TEXT NOT NULL, PRIMARY KEY (tag, n));
CREATE TABLE IF NOT EXISTS synthesis (
    point_id TEXT NOT NULL, backend TEXT NOT NULL, report TEXT NOT NULL, predicted TEXT NOT NULL, created REAL,
    PRIMARY KEY (point_id, backend)
);
"""


def canonical_json(point: Mapping[str, Any] | str) -> str:
    """Stable JSON text for a point (sorted keys, no whitespace); a string is taken as already canonical."""
    if isinstance(point, str):
        return point
    return json.dumps(dict(point), sort_keys=True, separators=(",", ":"), default=json_default)


def point_key(fingerprint: str, canonical: Mapping[str, Any] | str, version: str = dse.__version__) -> str:
    """The store key: what was evaluated (fingerprint), where (point) and by which code (version)."""
    text = "\n".join([fingerprint, canonical_json(canonical), version])
    return hashlib.sha256(text.encode()).hexdigest()


class Store:
    """SQLite-backed store of evaluated points for one run directory."""

    def __init__(self, path: Path, connection: sqlite3.Connection):
        self.path = path
        self._db = connection
        self._index: DigestIndex | None = None  # every stored key, built when a chunk is first looked at
        self._decoded: dict[int, Chunk] = {}  # the chunks looked at last (a front's points share a few)

    @classmethod
    def open(cls, directory: Path | str) -> Store:
        """The store of ``directory`` (created when missing); StoreUnreadable when it cannot be used as one.

        A quick check reads every page once, so a damaged store is named here, before a sweep starts."""
        directory = Path(directory)
        check_run_directory(directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if is_disk_full(exc):
                raise
            raise StoreUnreadable(
                directory, f"cannot be created ({exc.strerror})", "choose another directory"
            ) from None
        path = directory / STORE_FILE
        db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        try:
            with reading_store(path):
                db.execute("PRAGMA journal_mode=WAL")
                # NORMAL in WAL mode: a committed transaction survives any process crash (SIGKILL);
                # only an OS crash / power loss can drop the last few, which then simply re-run.
                db.execute("PRAGMA synchronous=NORMAL")
                store = cls._with_schema(path, db)
                (verdict,) = db.execute("PRAGMA quick_check(1)").fetchone()
                if verdict != "ok":  # e.g. "*** in database main ***\nPage 8: btreeInitPage() returns error code 11"
                    raise sqlite3.DatabaseError(" ".join(line for line in verdict.splitlines() if "***" not in line))
        except BaseException:
            db.close()
            raise
        return store

    @classmethod
    def in_memory(cls) -> Store:
        """A store that lives only as long as this object: a sweep that writes no files (``dse.explore.sweep``)."""
        return cls._with_schema(Path(":memory:"), sqlite3.connect(":memory:", isolation_level=None))

    @classmethod
    def _with_schema(cls, path: Path, db: sqlite3.Connection) -> Store:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version > STORE_SCHEMA_VERSION:
            raise StoreUnreadable(
                path,
                f"was written by a newer dse (store schema {version}; dse {dse.__version__} reads up to "
                f"{STORE_SCHEMA_VERSION})",
                "open it with that newer dse, or explore into a new directory",
            )
        db.executescript(_SCHEMA + CHUNK_SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(points)")}
        if "solver" not in columns:  # a store written before solver outcomes were kept
            db.execute("ALTER TABLE points ADD COLUMN solver TEXT")
        if version < STORE_SCHEMA_VERSION:
            db.execute(f"PRAGMA user_version = {STORE_SCHEMA_VERSION}")
        return cls(path, db)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- meta ----------------------------------------------------------------------

    def start_run(self, spec_name: str, spec_yaml: str, fingerprint: str, spec_path: str = "") -> None:
        """Record which spec this directory holds; ``created`` is kept from the first run.

        ``spec_path`` (the spec file's absolute path) lets ``dse report`` resolve the spec's
        relative model paths the way the run did."""
        created = self.meta().get("created") or time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self._set_meta(
            {
                "spec_name": spec_name,
                "spec_yaml": spec_yaml,
                "fingerprint": fingerprint,
                "created": created,
                "tool_version": dse.__version__,
                "status": "running",
                "spec_path": spec_path,
            }
        )

    def set_status(self, status: str) -> None:
        if status not in ("running", "done"):
            raise ValueError(f"status must be 'running' or 'done', got {status!r}")
        self._set_meta({"status": status})

    def meta(self) -> dict[str, str]:
        return dict(self._db.execute("SELECT name, value FROM meta").fetchall())

    def _set_meta(self, values: Mapping[str, str]) -> None:
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", list(values.items()))

    # -- points --------------------------------------------------------------------

    def has(self, key: str) -> bool:
        return self._db.execute("SELECT 1 FROM points WHERE key = ?", (key,)).fetchone() is not None

    def get(self, key: str) -> PointRecord | None:
        row = self._db.execute(
            f"SELECT {_RECORD_COLUMNS} FROM points WHERE key = ?",
            (key,),
        ).fetchone()
        if row is not None:
            return _record_from_row(row)
        return self.get_many([key]).get(key) if self.has_chunks() else None

    def get_many(self, keys: Sequence[str]) -> dict[str, PointRecord]:
        """The stored points among ``keys``, by key: one query per 500 keys instead of one per key."""
        found: dict[str, PointRecord] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(f"SELECT {_RECORD_COLUMNS} FROM points WHERE key IN ({marks})", part)
            for row in rows.fetchall():
                found[row[0]] = _record_from_row(row)
        missing = [key for key in unique if key not in found]
        if missing and self.has_chunks():
            places = self.digest_index().find(digests_of(missing))
            found.update((record.key, record) for record in self._records_at(places[places >= 0]))
        return found

    def points(self, point_ids: Sequence[str]) -> dict[str, PointRecord]:
        """The stored points of many point_ids at once, by point_id (a chunk decoded once for all its points)."""
        found: dict[str, PointRecord] = {}
        for point_id in dict.fromkeys(point_ids):
            row = self._db.execute(f"SELECT {_RECORD_COLUMNS} FROM points WHERE point_id = ?", (point_id,)).fetchone()
            if row is not None:
                found[point_id] = _record_from_row(row)
        missing = [pid for pid in dict.fromkeys(point_ids) if pid not in found and len(pid) >= POINT_ID_LENGTH]
        if missing and self.has_chunks():
            index = self.digest_index()
            places = [p for pid in missing for p in index.with_prefix(pid[:POINT_ID_LENGTH])[:1] if p >= 0]
            found.update((record.point_id, record) for record in self._records_at(np.array(places, dtype=np.int64)))
        return found

    def _records_at(self, places: np.ndarray) -> list[PointRecord]:
        """The records of chunk places, each chunk decoded once."""
        records = []
        for chunk_id, rows in rows_by_chunk(places):
            chunk = self.chunk(chunk_id)
            if chunk is not None:
                records += chunk_records(chunk, rows.tolist())
        return records

    def point(self, point_id: str) -> PointRecord | None:
        """The stored point of a point_id (the first 12 characters of its key), or None."""
        row = self._db.execute(f"SELECT {_RECORD_COLUMNS} FROM points WHERE point_id = ?", (point_id,)).fetchone()
        if row is not None:
            return _record_from_row(row)
        if not self.has_chunks() or len(point_id) < POINT_ID_LENGTH:
            return None
        return self.points([point_id]).get(point_id)

    def put(self, record: PointRecord) -> None:
        self.put_many([record])

    def put_many(self, records: Sequence[PointRecord], proposals: Iterable[tuple[str, int, str]] = ()) -> None:
        """Store records (and the search's proposal log entries ``(tag, n, key)``) in one transaction.

        A key already present keeps its first result: a point is evaluated once, unless that result is a
        transient failure (``PointRecord.transient``), which the new result replaces in its place (same seq).
        """
        with self._transaction():
            next_seq = self.next_seq()
            stored = self._stored_status([record.key for record in records])
            rows, blobs, replaced = [], [], []
            batch: set[str] = set()
            now = time.time()
            for record in records:
                if record.key in batch:  # a key twice in one batch keeps its first result
                    continue
                if record.key in stored:
                    status, reason, seq = stored[record.key]
                    if not failed_transiently(status, reason):
                        continue
                    replaced.append((record.key,))
                    record.seq = seq
                else:
                    record.seq = next_seq
                    next_seq += 1
                batch.add(record.key)
                rows.append(_record_row(record, now))
                blob = record.layers_blob or (encode_layers(record.layers) if record.layers else None)
                if blob:
                    blobs.append((record.key, blob))
            self._db.executemany("DELETE FROM points WHERE key = ?", replaced)
            self._db.executemany(
                "INSERT INTO points (key, point_id, seq, fingerprint, params, metrics, status, reason, eval_s,"
                " evaluator, exact, created, solver) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._db.executemany("INSERT OR REPLACE INTO layers (key, rows) VALUES (?, ?)", blobs)
            self._db.executemany("INSERT OR REPLACE INTO proposals (tag, n, key) VALUES (?, ?, ?)", list(proposals))

    def _stored_status(self, keys: Sequence[str]) -> dict[str, tuple[str, str | None, int]]:
        """(status, reason, seq) of the stored points among ``keys``: one query per 500 keys."""
        found: dict[str, tuple[str, str | None, int]] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            query = f"SELECT key, status, reason, seq FROM points WHERE key IN ({marks})"
            found.update((key, (status, reason, seq)) for key, status, reason, seq in self._db.execute(query, part))
        missing = [key for key in unique if key not in found]
        if missing and self.has_chunks():  # an array-path point: always ok, never replaced
            places = self.digest_index().find(digests_of(missing))
            found.update((key, ("ok", None, -1)) for key, place in zip(missing, places.tolist()) if place >= 0)
        return found

    def count(self, fingerprint: str | None = None) -> int:
        if fingerprint is None:
            rows = self._db.execute("SELECT COUNT(*) FROM points").fetchone()[0]
        else:
            rows = self._db.execute("SELECT COUNT(*) FROM points WHERE fingerprint = ?", (fingerprint,)).fetchone()[0]
        return rows + chunk_point_count(self._db, fingerprint)

    def records(self, fingerprint: str | None = None) -> list[PointRecord]:
        """All stored points (of one fingerprint when given), in evaluation order."""
        return [record for chunk in self.record_chunks(fingerprint) for record in chunk]

    def record_chunks(
        self, fingerprint: str | None = None, size: int = 50_000, *, chunked: bool = True
    ) -> Iterator[list[PointRecord]]:
        """The stored points (of one fingerprint when given) in evaluation order, ``size`` at a time: a caller
        that turns each chunk into columns never holds a million records at once."""
        sql = f"SELECT {_RECORD_COLUMNS} FROM points"
        args: tuple[Any, ...] = ()
        if fingerprint is not None:
            sql += " WHERE fingerprint = ?"
            args = (fingerprint,)
        cursor = self._db.execute(sql + " ORDER BY seq", args)
        if not chunked or not self.has_chunks():  # ``chunked=False``: the ``points`` rows alone
            while rows := cursor.fetchmany(size):
                yield [_record_from_row(row) for row in rows]
            return
        # both tables, merged by seq (the array path's runs are read by ``chunks``, not record by record)
        merged = [_record_from_row(row) for row in cursor.fetchall()]
        merged += [record for chunk in self.chunks(fingerprint) for record in chunk_records(chunk)]
        merged.sort(key=lambda record: record.seq or 0)
        for start in range(0, len(merged), size):
            yield merged[start : start + size]

    def proposals(self, tag: str) -> list[str]:
        """Keys a search strategy proposed under ``tag``, in proposal order (to replay it on resume)."""
        return [k for (k,) in self._db.execute("SELECT key FROM proposals WHERE tag = ? ORDER BY n", (tag,))]

    # -- chunks: the array path's points, a batch to a row (dse.chunkstore) ---------

    def has_chunks(self) -> bool:
        return self._db.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None

    def digest_index(self) -> DigestIndex:
        """Every stored key, brought up to date (``DigestIndex``): what a chunked sweep looks keys up in."""
        if self._index is None:
            self._index = DigestIndex()
        self._index.refresh(self._db, TRANSIENT_FAILURES)
        return self._index

    def next_seq(self) -> int:
        """The ``seq`` the next stored point gets, over both tables."""
        (points_next,) = self._db.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM points").fetchone()
        return max(int(points_next), chunk_next_seq(self._db))

    def put_chunk(self, chunk: NewChunk) -> np.ndarray:
        """Store a batch of points that evaluated ok as one chunk, in one transaction; which rows were stored.

        As in ``put_many``: a key already stored (by another run on this store meanwhile) keeps its first
        result, a key twice in the batch keeps its first row, and a transient failure of the key is replaced."""
        with self._transaction():
            index = self.digest_index()
            keep = index.find(chunk.digests) < -1
            _, first = np.unique(chunk.digests, return_index=True)
            keep &= np.isin(np.arange(len(chunk.digests)), first)
            rows = np.flatnonzero(keep)
            if len(rows) == 0:
                return keep
            stored = chunk.rows(rows)
            if index.transient:
                replaced = [key for key in hex_keys(stored.digests) if key in index.transient]
                self._db.executemany("DELETE FROM points WHERE key = ?", [(key,) for key in replaced])
                index.transient.difference_update(replaced)
            chunk_id = write_chunk(self._db, self.next_seq(), stored)
            index.add(stored.digests, chunk_places(chunk_id, len(rows)))
            index.last_chunk = max(index.last_chunk, chunk_id)
        return keep

    def chunks(self, fingerprint: str | None = None) -> Iterator[Chunk]:
        """The stored chunks (of one fingerprint when given) in ``seq`` order, decoded one at a time."""
        return iter_chunks(self._db, fingerprint)

    def chunk(self, chunk_id: int) -> Chunk | None:
        """One chunk, decoded (the last few are kept: a stored chunk never changes)."""
        if chunk_id not in self._decoded:
            chunk = read_chunk(self._db, chunk_id)
            if chunk is None:
                return None
            if len(self._decoded) >= DECODED_CHUNKS:
                self._decoded.pop(next(iter(self._decoded)))
            self._decoded[chunk_id] = chunk
        return self._decoded[chunk_id]

    def _key_of(self, point_id: str) -> str | None:
        """The full key of a point_id (or of a full key) in either table, without decoding a chunk."""
        if len(point_id) > POINT_ID_LENGTH:
            return point_id
        row = self._db.execute("SELECT key FROM points WHERE point_id = ?", (point_id,)).fetchone()
        if row is not None:
            return row[0]
        if not self.has_chunks() or len(point_id) < POINT_ID_LENGTH:
            return None
        index = self.digest_index()
        keys = index.keys_with_prefix(point_id)
        return keys[0] if keys else None

    # -- frames --------------------------------------------------------------------

    def points_frame(
        self,
        fingerprint: str | None = None,
        param_names: Sequence[str] | None = None,
        records: Sequence[PointRecord] | None = None,
    ) -> pd.DataFrame:
        """One row per point: point_id, seq, status, reason, the params, the metrics, eval_s, evaluator, exact.

        Params come first in ``param_names`` order (else in the order points name them), then metrics.
        ``records`` (those ``records(fingerprint)`` returned) spares a caller that has them a second decoding.
        """
        records = self.records(fingerprint) if records is None else records
        params_order: list[str] = list(param_names or [])
        metrics_order: list[str] = []
        for record in records:
            params_order += [k for k in record.params if k not in params_order]
            metrics_order += [k for k in record.metrics if k not in metrics_order]
        any_solver = any(record.solver for record in records)
        rows = []
        for record in records:
            row: dict[str, Any] = {
                "point_id": record.point_id,
                "seq": record.seq,
                "status": record.status,
                "reason": record.reason,
            }
            row.update({name: record.params.get(name) for name in params_order})
            row.update({name: record.metrics.get(name, math.nan) for name in metrics_order})
            row.update({"eval_s": record.eval_s, "evaluator": record.evaluator, "exact": record.exact})
            if any_solver:
                solver = record.solver or {}
                row.update({"solver_status": solver.get("status"), "solver_gap": solver.get("gap", math.nan)})
            rows.append(row)
        columns = ["point_id", "seq", "status", "reason", *params_order, *metrics_order, "eval_s", "evaluator", "exact"]
        if any_solver:  # a mapper ran a solver: its status and gap (a time limit hit shows as FEASIBLE, gap > 0)
            columns += ["solver_status", "solver_gap"]
        import pandas as pd

        frame = pd.DataFrame(rows, columns=columns)
        for name in metrics_order:
            frame[name] = pd.to_numeric(frame[name], errors="coerce")
        return frame

    def layers_frame(self, point_id: str) -> pd.DataFrame:
        """Per-layer rows of one point (by point_id or full key); empty when none were stored."""
        import pandas as pd

        key = self._key_of(point_id)
        return pd.DataFrame(self.layer_rows(key) if key is not None else [])

    def put_layers(self, key: str, rows: list[dict[str, Any]]) -> None:
        """Store the per-layer rows of a stored point that has none (an array-evaluated point the report
        looks at); rows already there are kept."""
        if not rows:
            return
        with self._transaction():
            self._db.execute("INSERT OR IGNORE INTO layers (key, rows) VALUES (?, ?)", (key, encode_layers(rows)))

    def layer_rows(self, key: str) -> list[dict[str, Any]]:
        """Per-layer rows of one point by its full key, as stored (empty when none were)."""
        row = self._db.execute("SELECT rows FROM layers WHERE key = ?", (key,)).fetchone()
        return decode_layers(row[0]) if row else []

    def put_synthesis(
        self, point_id: str, backend: str, report: Mapping[str, Any], predicted: Mapping[str, Any]
    ) -> None:
        """A synthesis report of an exported point, beside the metrics predicted for it (replaces an earlier one)."""
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO synthesis (point_id, backend, report, predicted, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (point_id, backend, json.dumps(report), json.dumps(dict(predicted)), time.time()),
            )

    def synthesis(self) -> list[dict[str, Any]]:
        """Every synthesis report ingested into this run, with its prediction."""
        rows = self._db.execute("SELECT point_id, backend, report, predicted FROM synthesis").fetchall()
        return [
            {"point_id": p, "backend": b, "report": json.loads(r), "predicted": json.loads(q)} for p, b, r, q in rows
        ]

    def integrity_ok(self) -> bool:
        return self._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    # -- plumbing ------------------------------------------------------------------

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on error (the connection runs in autocommit mode)."""

    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self._db.execute("COMMIT")
        elif self._db.in_transaction:  # SQLite rolls back by itself on some errors (a full disk): nothing to undo
            self._db.execute("ROLLBACK")


def _record_row(record: PointRecord, created: float) -> tuple[Any, ...]:
    """The ``points`` table's row of a record whose ``seq`` is assigned."""
    return (
        record.key,
        record.point_id,
        record.seq,
        record.fingerprint,
        json.dumps(record.params, default=json_default),
        json.dumps(record.metrics, default=json_default),
        record.status,
        record.reason,
        record.eval_s,
        record.evaluator,
        int(record.exact),
        created,
        None if record.solver is None else json.dumps(record.solver, default=json_default),
    )


def _record_from_row(row: Sequence[Any]) -> PointRecord:
    key, params, status, metrics, reason, eval_s, evaluator, exact, fingerprint, seq, solver = row
    return PointRecord(
        key=key,
        params=json.loads(params),
        status=status,
        metrics=json.loads(metrics),
        reason=reason,
        eval_s=eval_s or 0.0,
        evaluator=evaluator or "",
        exact=bool(exact),
        fingerprint=fingerprint,
        seq=seq,
        solver=None if solver is None else json.loads(solver),
    )
