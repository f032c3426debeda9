"""The SQLite store: keys, round trips, evaluation order, frames, meta and durability across reopen."""

from __future__ import annotations

import math
import sqlite3

import pytest

import dse
from dse.store import PointRecord, Store, canonical_json, point_key
from dse.store_errors import STORE_FILE


def _record(key: str, rows: int, *, status: str = "ok", layers: bool = False) -> PointRecord:
    metrics = {"latency_ms": 1.0 / rows, "energy_mj": 0.1 * rows} if status == "ok" else {}
    return PointRecord(
        key=key,
        params={"rows": rows, "dataflow": "ws"},
        status=status,
        metrics=metrics,
        reason=None if status == "ok" else "ValueError: rows too small",
        eval_s=0.01 * rows,
        fingerprint="fp",
        layers=[{"layer": "conv1", "cycles": 10.0 * rows}, {"layer": "conv2", "cycles": 5.0}] if layers else [],
    )


def test_point_key_depends_on_fingerprint_point_and_version_not_key_order():
    a = point_key("fp", {"rows": 8, "dataflow": "ws"})
    assert a == point_key("fp", {"dataflow": "ws", "rows": 8})
    assert a == point_key("fp", canonical_json({"rows": 8, "dataflow": "ws"}))
    assert a != point_key("fp2", {"rows": 8, "dataflow": "ws"})
    assert a != point_key("fp", {"rows": 16, "dataflow": "ws"})
    assert a != point_key("fp", {"rows": 8, "dataflow": "ws"}, version=dse.__version__ + ".dev")
    assert len(a) == 64 and int(a, 16) >= 0


def test_put_get_roundtrip_and_seq_order(tmp_path):
    with Store.open(tmp_path) as store:
        assert not store.has("k1")
        assert store.get("k1") is None
        store.put(_record("k1", 8))
        store.put_many([_record("k2", 16, status="failed"), _record("k3", 4, layers=True)])
        assert store.has("k1") and store.has("k2") and store.has("k3")
        got = store.get("k2")
        assert got.status == "failed" and got.reason == "ValueError: rows too small"
        assert got.params == {"rows": 16, "dataflow": "ws"}
        assert [r.seq for r in store.records()] == [0, 1, 2]
        assert [r.key for r in store.records()] == ["k1", "k2", "k3"]
        assert store.get("k3").metrics == {"latency_ms": 0.25, "energy_mj": 0.4}


def test_a_key_keeps_its_first_result(tmp_path):
    with Store.open(tmp_path) as store:
        store.put(_record("k1", 8))
        second = _record("k1", 8)
        second.metrics = {"latency_ms": 999.0}
        store.put_many([second, _record("k2", 4)])
        assert store.get("k1").metrics["latency_ms"] == pytest.approx(1 / 8)
        assert store.count() == 2
        assert store.get("k2").seq == 1  # no sequence number is burnt on the duplicate
        again = _record("k3", 2)
        again.metrics = {"latency_ms": 999.0}
        store.put_many([_record("k3", 2), again, _record("k4", 2)])  # a key twice in one batch: the first
        assert store.get("k3").metrics["latency_ms"] == pytest.approx(1 / 2)
        assert [store.get(k).seq for k in ("k3", "k4")] == [2, 3] and store.count() == 4


def test_points_frame_columns_and_values(tmp_path):
    with Store.open(tmp_path) as store:
        store.put_many([_record("a" * 64, 8), _record("b" * 64, 16, status="failed")])
        frame = store.points_frame("fp", param_names=["dataflow", "rows"])
        assert list(frame.columns) == [
            "point_id",
            "seq",
            "status",
            "reason",
            "dataflow",
            "rows",
            "latency_ms",
            "energy_mj",
            "eval_s",
            "evaluator",
            "exact",
        ]
        assert frame["point_id"].tolist() == ["a" * 12, "b" * 12]
        assert frame["status"].tolist() == ["ok", "failed"]
        assert frame.loc[0, "latency_ms"] == pytest.approx(0.125)
        assert math.isnan(frame.loc[1, "latency_ms"])
        assert store.points_frame("another-fingerprint").empty


def test_layers_frame_by_point_id(tmp_path):
    with Store.open(tmp_path) as store:
        store.put(_record("c" * 64, 8, layers=True))
        store.put(_record("d" * 64, 8))
        layers = store.layers_frame("c" * 12)
        assert layers["layer"].tolist() == ["conv1", "conv2"]
        assert layers["cycles"].tolist() == [80.0, 5.0]
        assert store.layers_frame("d" * 12).empty
        assert store.layers_frame("nonexistent").empty


def test_meta_status_and_reopen(tmp_path):
    with Store.open(tmp_path) as store:
        store.start_run("toy", "name: toy\n", "fp")
        store.put(_record("k1", 8))
        created = store.meta()["created"]
        assert store.meta()["status"] == "running"
        store.set_status("done")
        with pytest.raises(ValueError, match="running"):
            store.set_status("finished")
    with Store.open(tmp_path) as store:
        meta = store.meta()
        assert meta["status"] == "done" and meta["spec_name"] == "toy" and meta["spec_yaml"] == "name: toy\n"
        assert meta["tool_version"] == dse.__version__
        store.start_run("toy", "name: toy\n", "fp")
        assert store.meta()["created"] == created and store.meta()["status"] == "running"
        assert store.get("k1").metrics["latency_ms"] == pytest.approx(0.125)
        assert store.integrity_ok()


def test_wal_mode_and_proposal_log(tmp_path):
    with Store.open(tmp_path) as store:
        store.put_many([_record("k1", 8)], proposals=[("nsga2:seed=0", 0, "k1"), ("nsga2:seed=0", 1, "k1")])
        store.put_many([], proposals=[("nsga2:seed=0", 2, "k2"), ("tpe:seed=0", 0, "k9")])
        assert store.proposals("nsga2:seed=0") == ["k1", "k1", "k2"]
        assert store.proposals("grid") == []
    db = sqlite3.connect(tmp_path / STORE_FILE)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_failed_transaction_leaves_nothing(tmp_path):
    with Store.open(tmp_path) as store:
        bad = _record("k2", 8)
        bad.status = "exploded"  # violates the CHECK constraint mid-transaction
        with pytest.raises(sqlite3.IntegrityError):
            store.put_many([_record("k1", 8), bad])
        assert store.count() == 0
        store.put(_record("k1", 8))
        assert store.get("k1").seq == 0


def test_worker_side_flattening_is_stored_as_is(tmp_path):
    """FlatMetricsEvaluator encodes layers in the worker; the store writes those bytes and reads them back."""
    from dse.flat import FlatMetricsEvaluator, decode_layers
    from hwmodels.base import LayerMetrics, Metrics

    def evaluator(point):
        layer = LayerMetrics("conv1", "conv", 10.0 * point["rows"], 8.0, 2.0, 64, 0.5, 1.0, 0.0, extra={"folds": 3})
        return Metrics(values={"latency_ms": 2.0}, energy_breakdown_pj={"mac": 1e9}, layers=[layer], info={})

    flat = FlatMetricsEvaluator(evaluator)({"rows": 4})
    assert flat.values == {"latency_ms": 2.0, "energy_mac_mj": pytest.approx(1.0)}
    assert flat.exact is None
    assert decode_layers(flat.layers_blob)[0] == evaluator({"rows": 4}).layers[0].row()
    record = _record("e" * 64, 4)
    record.layers_blob = flat.layers_blob
    with Store.open(tmp_path) as store:
        store.put(record)
        layers = store.layers_frame("e" * 12)
    assert layers[["layer", "cycles", "folds"]].to_dict("records") == [{"layer": "conv1", "cycles": 40.0, "folds": 3}]


def test_store_module_stays_light_for_pool_workers():
    """Spawned workers import dse.flat (FlatMetricsEvaluator); pandas and optuna would cost them a second each."""
    import subprocess
    import sys

    heavy = "('pandas', 'optuna', 'pyarrow', 'sqlite3')"
    code = f"import sys, dse.flat; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
