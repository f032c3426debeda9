"""Columnar chunks of the result store: the array path's points, a few thousand to a row.

A sweep that evaluates designs as arrays (``dse.column_sweep``) commits each batch as ONE row of the
``chunks`` table: the batch's store keys (raw 32-byte sha256 digests, in row order) and an Arrow IPC
stream of its columns (the params, then every flat metric). Nothing is held or decoded per point, so
a million points are stored, looked up and read back at array speed, and the points are the same
points a ``points`` row would hold: same key, same ``seq`` numbering (``first_seq + row``), same
values. A chunk holds only points that evaluated ok; a point the array path refuses goes through the
``points`` table with its message.

``DigestIndex`` answers "is this key stored, and where" for a batch of keys with one sorted-array
search; it is brought up to date inside the writing transaction, so two runs on one store never store
a key twice.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from dse.flat import PointRecord

CHUNK_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    n INTEGER NOT NULL,
    evaluator TEXT NOT NULL,
    exact INTEGER NOT NULL,
    eval_s REAL NOT NULL,
    created REAL NOT NULL,
    keys BLOB NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_fingerprint ON chunks (fingerprint, first_seq);
"""
DIGEST_BYTES = 32  # sha256
IN_POINTS_TABLE = -1  # DigestIndex location of a key that lives in the ``points`` table
# zstd: metric columns compress ~3x at a few hundred MB/s, so a million points is ~150 MB on disk
PARAMS_METADATA = "dse.params"
_IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")


def digests_of(keys: Sequence[str]) -> np.ndarray:
    """Hex store keys as an array of raw digests (numpy ``S32``, sortable and searchable)."""
    return np.array([bytes.fromhex(k) for k in keys], dtype=f"S{DIGEST_BYTES}")


def hex_keys(digests: np.ndarray) -> list[str]:
    """The hex store keys of raw digests (``digests_of``'s inverse)."""
    raw = np.ascontiguousarray(digests, dtype=f"S{DIGEST_BYTES}").tobytes()
    return [raw[i : i + DIGEST_BYTES].hex() for i in range(0, len(raw), DIGEST_BYTES)]


def encode_table(params: Mapping[str, np.ndarray], metrics: Mapping[str, np.ndarray]) -> bytes:
    """A chunk's columns (the params, then the metrics) as a compressed Arrow IPC stream; the schema's
    metadata names the params."""
    columns = {**{name: pa.array(column) for name, column in params.items()}}
    columns.update({name: pa.array(np.asarray(column, dtype=float)) for name, column in metrics.items()})
    table = pa.table(columns).replace_schema_metadata({PARAMS_METADATA: json.dumps(list(params))})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_IPC_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def decode_table(blob: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(blob)).read_all()


def param_names(table: pa.Table) -> list[str]:
    """The params among a chunk table's columns (the rest are metrics)."""
    return json.loads((table.schema.metadata or {}).get(PARAMS_METADATA.encode(), b"[]"))


@dataclass(frozen=True)
class Chunk:
    """One stored chunk: its points' keys and columns, and what is common to its points."""

    id: int
    fingerprint: str
    first_seq: int
    evaluator: str
    exact: bool
    eval_s: float  # seconds per point
    digests: np.ndarray
    table: pa.Table

    @property
    def n(self) -> int:
        return len(self.digests)


@dataclass(frozen=True)
class NewChunk:
    """A batch of points that evaluated ok, to be stored as one chunk: their keys (raw digests), params and flat
    metrics as columns, and what is common to them."""

    fingerprint: str
    digests: np.ndarray
    params: Mapping[str, np.ndarray]
    metrics: Mapping[str, np.ndarray]
    evaluator: str
    exact: bool
    eval_s: float  # seconds per point

    def rows(self, index: np.ndarray) -> NewChunk:
        """The chunk of the given rows only."""
        return replace(
            self,
            digests=self.digests[index],
            params={name: np.asarray(column)[index] for name, column in self.params.items()},
            metrics={name: np.asarray(column)[index] for name, column in self.metrics.items()},
        )


def write_chunk(db: sqlite3.Connection, first_seq: int, chunk: NewChunk) -> int:
    """Insert one chunk (inside the caller's transaction); its id."""
    cursor = db.execute(
        "INSERT INTO chunks (fingerprint, first_seq, n, evaluator, exact, eval_s, created, keys, data)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            chunk.fingerprint,
            first_seq,
            len(chunk.digests),
            chunk.evaluator,
            int(chunk.exact),
            float(chunk.eval_s),
            time.time(),
            np.ascontiguousarray(chunk.digests, dtype=f"S{DIGEST_BYTES}").tobytes(),
            encode_table(chunk.params, chunk.metrics),
        ),
    )
    return int(cursor.lastrowid or 0)


_CHUNK_COLUMNS = "id, fingerprint, first_seq, evaluator, exact, eval_s, keys, data"


def _chunk(row: Sequence[Any]) -> Chunk:
    chunk_id, fingerprint, first_seq, evaluator, exact, eval_s, keys, data = row
    digests = np.frombuffer(keys, dtype=f"S{DIGEST_BYTES}")
    return Chunk(chunk_id, fingerprint, first_seq, evaluator, bool(exact), eval_s, digests, decode_table(data))


def read_chunk(db: sqlite3.Connection, chunk_id: int) -> Chunk | None:
    row = db.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
    return None if row is None else _chunk(row)


def iter_chunks(db: sqlite3.Connection, fingerprint: str | None = None) -> Iterator[Chunk]:
    """Every chunk (of one fingerprint when given), in ``seq`` order, one decoded at a time."""
    where, args = ("", ()) if fingerprint is None else (" WHERE fingerprint = ?", (fingerprint,))
    ids = [i for (i,) in db.execute(f"SELECT id FROM chunks{where} ORDER BY first_seq", args)]
    for chunk_id in ids:
        chunk = read_chunk(db, chunk_id)
        if chunk is not None:
            yield chunk


def chunk_point_count(db: sqlite3.Connection, fingerprint: str | None = None) -> int:
    where, args = ("", ()) if fingerprint is None else (" WHERE fingerprint = ?", (fingerprint,))
    return int(db.execute(f"SELECT COALESCE(SUM(n), 0) FROM chunks{where}", args).fetchone()[0])


def chunk_next_seq(db: sqlite3.Connection) -> int:
    """One past the last ``seq`` a chunk holds (0 when there are none)."""
    return int(db.execute("SELECT COALESCE(MAX(first_seq + n), 0) FROM chunks").fetchone()[0])


def digest_heads(digests: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each digest as a big-endian integer: sorting and searching integers is several
    times faster than 32-byte strings, and equal heads are told apart by the whole digest."""
    raw = np.frombuffer(np.ascontiguousarray(digests, dtype=f"S{DIGEST_BYTES}").tobytes(), dtype=np.uint8)
    return raw.reshape(-1, DIGEST_BYTES)[:, :8].copy().view(">u8").reshape(-1).astype(np.uint64)


@dataclass
class DigestIndex:
    """Every stored key of a store, sorted, each with its place: ``(chunk id << 32) | row`` for a chunk's
    point, ``IN_POINTS_TABLE`` for a ``points`` row. ``refresh`` reads only what was stored since the last look
    (chunks by id, points by seq), so a sweep keeps it current at the cost of its own writes. Keys of
    transient failures are left out: such a point is evaluated again, and its row replaced."""

    heads: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint64))  # sorted
    digests: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=f"S{DIGEST_BYTES}"))  # by head
    places: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    transient: set[str] = field(default_factory=set)
    last_chunk: int = 0
    last_seq: int = -1

    def refresh(self, db: sqlite3.Connection, transient_reasons: Sequence[str]) -> None:
        new_digests, new_places = [], []
        query = "SELECT id, keys, n FROM chunks WHERE id > ? ORDER BY id"
        for chunk_id, keys, n in db.execute(query, (self.last_chunk,)):
            new_digests.append(np.frombuffer(keys, dtype=f"S{DIGEST_BYTES}"))
            new_places.append(chunk_places(chunk_id, n))
            self.last_chunk = max(self.last_chunk, chunk_id)
        rows = db.execute("SELECT key, status, reason, seq FROM points WHERE seq > ?", (self.last_seq,)).fetchall()
        kept = []
        for key, status, reason, seq in rows:
            self.last_seq = max(self.last_seq, seq)
            if status == "failed" and (reason or "").startswith(tuple(transient_reasons)):
                self.transient.add(key)
            else:
                self.transient.discard(key)
                kept.append(key)
        if kept:
            new_digests.append(digests_of(kept))
            new_places.append(np.full(len(kept), IN_POINTS_TABLE, dtype=np.int64))
        if new_digests:
            self.add(np.concatenate(new_digests), np.concatenate(new_places))

    def add(self, digests: np.ndarray, places: np.ndarray) -> None:
        """Merge keys in (kept sorted: one ``np.insert`` per batch, not a sort of the whole index)."""
        heads = digest_heads(digests)
        order = np.argsort(heads, kind="stable")
        at = np.searchsorted(self.heads, heads[order])
        self.heads = np.insert(self.heads, at, heads[order])
        self.digests = np.insert(self.digests, at, digests[order])
        self.places = np.insert(self.places, at, places[order])

    def find(self, digests: np.ndarray) -> np.ndarray:
        """The place of each digest, or -2 where it is not stored."""
        found = np.full(len(digests), -2, dtype=np.int64)
        if len(self.heads) == 0 or len(digests) == 0:
            return found
        heads = digest_heads(digests)
        at = np.searchsorted(self.heads, heads)
        inside = at < len(self.heads)
        at_safe = np.minimum(at, len(self.heads) - 1)
        same_head = inside & (self.heads[at_safe] == heads)
        exact = same_head & (self.digests[at_safe] == digests)
        found[exact] = self.places[at_safe[exact]]
        for i in np.flatnonzero(same_head & ~exact):  # another key with the same 8 first bytes: walk its run
            j = int(at[i]) + 1
            while j < len(self.heads) and self.heads[j] == heads[i]:
                if self.digests[j] == digests[i]:
                    found[i] = self.places[j]
                    break
                j += 1
        return found

    def _prefix_range(self, prefix: str) -> np.ndarray:
        """The index rows whose hex key starts with ``prefix`` (a point_id, 12 hex digits)."""
        even = bytes.fromhex(prefix[: len(prefix) - len(prefix) % 2])[:8]
        low = int.from_bytes(even.ljust(8, b"\x00"), "big")
        high = int.from_bytes(even.ljust(8, b"\xff"), "big")
        lo = int(np.searchsorted(self.heads, np.uint64(low)))
        hi = int(np.searchsorted(self.heads, np.uint64(high), side="right"))
        matching = [i for i, key in enumerate(hex_keys(self.digests[lo:hi])) if key.startswith(prefix)]
        return np.array([lo + i for i in matching], dtype=np.int64)

    def with_prefix(self, prefix: str) -> list[int]:
        """Places of the keys that start with a hex ``prefix`` (a point_id)."""
        return [int(p) for p in self.places[self._prefix_range(prefix)]]

    def keys_with_prefix(self, prefix: str) -> list[str]:
        """The hex keys that start with ``prefix``."""
        return hex_keys(self.digests[self._prefix_range(prefix)])


def chunk_places(chunk_id: int, n: int) -> np.ndarray:
    """The places of a chunk's ``n`` rows: ``(chunk id << 32) | row``."""
    return (np.int64(chunk_id) << 32) | np.arange(n, dtype=np.int64)


def rows_by_chunk(places: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """Chunk places grouped by chunk: (chunk id, its rows), each chunk once, in id order."""
    chunk_ids = places >> 32
    for chunk_id in np.unique(chunk_ids).tolist():
        yield int(chunk_id), places[chunk_ids == chunk_id] & 0xFFFFFFFF


def chunk_records(chunk: Chunk, rows: Sequence[int] | None = None) -> list[PointRecord]:
    """A chunk's points (or the given rows) as the records a ``points`` row would give."""
    rows = list(range(chunk.n) if rows is None else rows)
    params = set(param_names(chunk.table))
    taken = chunk.table.take(rows)
    columns = {name: taken.column(name).to_pylist() for name in taken.column_names}
    keys = hex_keys(chunk.digests[rows])
    return [
        PointRecord(
            key=keys[j],
            params={name: columns[name][j] for name in columns if name in params},
            status="ok",
            metrics={name: columns[name][j] for name in columns if name not in params},
            eval_s=chunk.eval_s,
            evaluator=chunk.evaluator,
            exact=chunk.exact,
            fingerprint=chunk.fingerprint,
            seq=chunk.first_seq + i,
        )
        for j, i in enumerate(rows)
    ]
