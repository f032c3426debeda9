"""The array path's columnar sweep and store: the same keys, membership, records and points as the point path."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse.chunkstore import DigestIndex, NewChunk, digest_heads, digests_of, hex_keys
from dse.recover import copy_readable
from dse.space import DesignSpace
from dse.space_columns import column_digests, column_points, contains_columns, grid_columns, points_columns
from dse.spec import parse_spec
from dse.store import PointRecord, Store, point_key

SPACE_SPEC = """
name: columns
workload: {model: small_cnn, batch: 1, precision: int8}
template:
  kind: systolic
  params:
    rows: [4, 16, 32]
    cols: {range: [8, 24], step: 8}
    dataflow: [ws, os]
    dram_gbps: [6.4, 25.6]
    freq_mhz: 800
    sparsity_optimized_mapping: [false, true]
objectives: [min latency_ms, min energy_mj]
search: {strategy: grid}
"""


def _space(text: str = SPACE_SPEC) -> DesignSpace:
    return DesignSpace.from_spec(parse_spec(text, "columns.yaml"))


def test_grid_columns_and_their_keys_are_the_point_paths():
    """Grid columns from the point index are ``DesignSpace.grid``'s points (values and types), and each row's
    digest is ``point_key`` of the canonical point, for a slice in the middle of the grid too."""
    space = _space()
    points = list(space.grid())
    assert grid_columns(space, 0, len(points)) is not None
    for start, n in ((0, len(points)), (17, 30)):
        columns = grid_columns(space, start, n)
        rows = column_points(columns)
        assert rows == points[start : start + n]
        assert [type(v) for v in rows[0].values()] == [type(v) for v in points[start].values()]
        keys = hex_keys(column_digests("fp", space, columns, n))
        assert keys == [point_key("fp", space.canonical(p)) for p in points[start : start + n]]


def test_random_points_as_columns_keep_their_keys():
    """Sampled points (floats drawn from a log range, bools, strings) keyed from columns as from dicts, a
    missing fixed dimension filled as ``canonical`` fills it, and a refused value refused alike."""
    space = _space(SPACE_SPEC.replace("dram_gbps: [6.4, 25.6]", "dram_gbps: {log_range: [6.4, 819.2]}"))
    points = space.sample(200, seed=3)
    columns = points_columns(space, points)
    want = [point_key("fp", space.canonical(p)) for p in points]
    assert hex_keys(column_digests("fp", space, columns, len(points))) == want
    without_fixed = {name: column for name, column in columns.items() if name != "freq_mhz"}
    assert hex_keys(column_digests("fp", space, without_fixed, len(points))) == want
    with pytest.raises(ValueError, match="unknown parameter"):
        column_digests("fp", space, {**columns, "bogus": columns["rows"]}, len(points))
    bad = {**columns, "rows": np.array(["x"] * len(points), dtype=object)}
    with pytest.raises(ValueError):
        column_digests("fp", space, bad, len(points))
    with pytest.raises(ValueError):
        space.canonical({**points[0], "rows": "x"})
    outside = {**columns, "dram_gbps": columns["dram_gbps"] * np.where(np.arange(len(points)) % 2, 1.0, 200.0)}
    assert contains_columns(space, outside, len(points)).tolist() == [
        space.contains({**p, "dram_gbps": v}) for p, v in zip(points, outside["dram_gbps"].tolist())
    ]
    assert contains_columns(space, columns, len(points)).all()


def test_contains_columns_is_contains_row_by_row():
    """A wider earlier space's points are judged by the narrower spec's rules, row by row."""
    narrow = _space()
    wide = _space(SPACE_SPEC.replace("rows: [4, 16, 32]", "rows: [4, 8, 16, 32]").replace("[8, 24]", "[8, 40]"))
    points = list(wide.grid())
    columns = grid_columns(wide, 0, len(points))
    mask = contains_columns(narrow, columns, len(points))
    assert mask.tolist() == [narrow.contains(p) for p in points]
    assert 0 < mask.sum() < len(points)
    assert not contains_columns(narrow, {**columns, "bogus": columns["rows"]}, len(points)).any()
    missing = {name: column for name, column in columns.items() if name != "rows"}
    assert not contains_columns(narrow, missing, len(points)).any()


def _chunk_columns(n: int, offset: int = 0) -> tuple[dict, dict]:
    rows = np.arange(offset, offset + n, dtype=np.int64)
    params = {"rows": rows, "dataflow": np.array(["ws", "os"] * (n // 2) + ["ws"] * (n % 2), dtype=object)}
    metrics = {"latency_ms": 1.0 / (rows + 1), "energy_mj": 0.1 * rows}
    return params, metrics


def _digests(keys: list[str]) -> np.ndarray:
    return digests_of(keys)


def test_store_chunks_answer_like_points_rows(tmp_path: Path):
    """A chunk stores only keys not stored yet (a point row, a repeat in the batch, another run's chunk), keeps
    seq numbering across both tables, replaces a transient failure, and answers get/get_many/point/points,
    records, counts and layers like a points row."""
    keys = [f"{i:02x}" * 32 for i in range(1, 11)]
    with Store.open(tmp_path) as store:
        store.put(PointRecord(key=keys[0], params={"rows": 0, "dataflow": "ws"}, status="ok", metrics={"x": 1.0}))
        transient = PointRecord(key=keys[1], params={"rows": 1}, status="failed", reason="WorkerCrashed: gone")
        store.put(transient)
        params, metrics = _chunk_columns(6)
        batch = _digests([keys[0], keys[1], keys[2], keys[3], keys[3], keys[4]])
        stored = store.put_chunk(NewChunk("fp", batch, params, metrics, "analytical", True, 0.5))
        assert stored.tolist() == [False, True, True, True, False, True]
        assert store.count() == 5 and store.count("fp") == 4
        records = store.records()
        assert [r.key for r in records] == [keys[0], keys[1], keys[2], keys[3], keys[4]]
        assert [r.seq for r in records] == [0, 1, 2, 3, 4]  # the transient failure's row gone, its key in the chunk
        chunk_record = store.get(keys[3])
        assert chunk_record.params == {"rows": 3, "dataflow": "os"} and chunk_record.status == "ok"
        assert chunk_record.metrics == {"latency_ms": 0.25, "energy_mj": pytest.approx(0.3)}
        assert chunk_record.eval_s == 0.5 and chunk_record.exact and chunk_record.evaluator == "analytical"
        assert set(store.get_many([keys[0], keys[4], keys[9]])) == {keys[0], keys[4]}
        assert store.point(keys[4][:12]).key == keys[4] and store.point("f" * 12) is None
        assert {pid: r.key for pid, r in store.points([keys[2][:12], keys[0][:12]]).items()} == {
            keys[2][:12]: keys[2],
            keys[0][:12]: keys[0],
        }
        store.put_layers(keys[4], [{"layer": "conv1", "cycles": 3.0}])
        assert store.layers_frame(keys[4][:12])["cycles"].tolist() == [3.0]
        # another run on the same store (its own connection): what is stored is not stored twice
        with Store.open(tmp_path) as other:
            params2, metrics2 = _chunk_columns(3, offset=10)
            batch = _digests([keys[4], keys[5], keys[6]])
            again = other.put_chunk(NewChunk("fp", batch, params2, metrics2, "analytical", True, 0.1))
            assert again.tolist() == [False, True, True]
        store.put_many([PointRecord(key=keys[5], params={"rows": 5}, status="ok", metrics={"x": 2.0})])
        assert store.get(keys[5]).params == {"rows": 11, "dataflow": "os"}  # the first result is kept
        assert [r.seq for r in store.records()] == [0, 1, 2, 3, 4, 5, 6]
        assert store.next_seq() == 7


def test_digest_index_tells_apart_keys_of_the_same_head():
    """Two keys whose first 8 bytes agree are found each at its own place; a prefix finds both."""
    first = bytes(range(32))
    second = first[:31] + b"\xff"
    index = DigestIndex()
    digests = np.frombuffer(first + second, dtype="S32")
    assert digest_heads(digests).tolist()[0] == digest_heads(digests).tolist()[1]
    index.add(digests, np.array([7, 9], dtype=np.int64))
    assert index.find(digests[::-1]).tolist() == [9, 7]
    assert index.find(np.frombuffer(bytes(32), dtype="S32")).tolist() == [-2]
    assert sorted(index.with_prefix(first.hex()[:12])) == [7, 9]


def test_recover_copies_whole_chunks_with_their_points(tmp_path: Path):
    """``dse recover``'s copy keeps a store's chunks, counts their points as saved, and skips a chunk whose
    bytes no longer read as its points."""
    source_dir, target_dir = tmp_path / "a", tmp_path / "b"
    keys = [f"{i:02x}" * 32 for i in range(1, 9)]
    with Store.open(source_dir) as store:
        params, metrics = _chunk_columns(4)
        store.put_chunk(NewChunk("fp", _digests(keys[:4]), params, metrics, "analytical", True, 0.1))
        params, metrics = _chunk_columns(4, offset=4)
        store.put_chunk(NewChunk("fp", _digests(keys[4:]), params, metrics, "analytical", True, 0.1))
    with sqlite3.connect(source_dir / "store.sqlite") as db:
        db.execute("UPDATE chunks SET data = X'00' WHERE first_seq = 4")
    Store.open(target_dir).close()
    with sqlite3.connect(source_dir / "store.sqlite") as src, sqlite3.connect(target_dir / "store.sqlite") as dst:
        dst.isolation_level = None
        saved, lost = copy_readable(src, dst)
    assert (saved, lost) == (4, 4)
    with Store.open(target_dir) as store:
        assert [r.key for r in store.records()] == keys[:4] and store.get(keys[5]) is None


ARRAY_SPEC = SPACE_SPEC.replace("search: {strategy: grid}", "search: {strategy: grid, budget: BUDGET}")


def _by_id(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return frame.sort_values("point_id").reset_index(drop=True)[columns]


def test_array_and_point_paths_store_the_same_points():
    """The same grid through the columnar sweep (no executor named) and point by point (serial): the same
    points frame (the array path stores the points it refuses, with the scalar path's message, after its
    chunk: the same seqs in another order)."""
    from dse.evaluators import prepare_run
    from dse.explore import explore_points

    spec = parse_spec(ARRAY_SPEC.replace("BUDGET", "72"), "columns.yaml")
    context, evaluation = prepare_run(spec)
    arrays = explore_points(spec, evaluation, context=context).points
    serial = explore_points(spec, evaluation, executor="serial", context=context).points
    assert list(arrays.columns) == list(serial.columns)
    compared = [c for c in serial.columns if c not in ("eval_s", "seq")]
    pd.testing.assert_frame_equal(_by_id(arrays, compared), _by_id(serial, compared), check_dtype=False, rtol=1e-12)
    assert sorted(arrays["seq"]) == sorted(serial["seq"]) == list(range(72))
    assert (arrays["status"] == "failed").sum() == 18  # the optimised sparse mapping refused off ws: messages


def test_the_two_paths_resume_each_other(tmp_path: Path):
    """Part of a grid stored point by point, the rest by the array path, then all of it answered from the store
    point by point: each point evaluated once, the frame the serial run gives."""
    from dse.evaluators import prepare_run
    from dse.explore import explore, explore_points

    spec = parse_spec(ARRAY_SPEC.replace("BUDGET", "72"), "columns.yaml")
    context, evaluation = prepare_run(spec)
    serial = explore_points(spec, evaluation, executor="serial", context=context).points
    compared = [c for c in serial.columns if c not in ("eval_s", "seq")]
    half = parse_spec(ARRAY_SPEC.replace("BUDGET", "40"), "columns.yaml")
    first = explore(half, tmp_path, prepare_run(half)[1], executor="serial", progress=False)
    assert first.evaluated == 40
    rest = explore(spec, tmp_path, evaluation, progress=False, context=context)
    assert (rest.evaluated, rest.reused) == (32, 40)
    again = explore(spec, tmp_path, evaluation, executor="serial", progress=False, context=context)
    assert (again.evaluated, again.reused) == (0, 72)
    pd.testing.assert_frame_equal(
        _by_id(again.points, compared), _by_id(serial, compared), check_dtype=False, rtol=1e-12
    )
