"""From the store to a run directory's files: annotated points, Pareto front, hypervolume, report.

The one caller of the GPU comparison and the report: ``explore`` ends here, and ``dse report``
regenerates the same files from the store alone, so a regenerated report is the one a run writes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from dse.chunkstore import DIGEST_BYTES, Chunk, param_names
from dse.compare import Comparison, compare_run, write_comparison
from dse.context import RunContext
from dse.errors import UserError
from dse.files import atomic_write, atomic_write_text
from dse.objectives import Constraint, Objective, unproduced_metrics
from dse.pareto import designs_near_knee, feasible_mask, front_mask, hypervolume_history, objective_matrix
from dse.report import write_report
from dse.space_columns import contains_columns
from dse.spec import Spec
from dse.store import POINT_ID_LENGTH, Store
from hwmodels.base import METRICS

PARQUET_ROW_GROUP = 100_000  # rows per row group of points.parquet
# above this many rows, points.csv and hypervolume.csv are written by Arrow's CSV writer (strings quoted, booleans
# as true/false)
ARROW_CSV_ROWS = 100_000
# front designs whose per-layer rows a finishing run evaluates when the array path stored none: the report's
# per-layer figure offers the 24 nearest the knee, the GPU comparison reads the knee's
LAYER_DESIGNS = 64
POINT_ID_BYTES = POINT_ID_LENGTH // 2  # a point_id is the first 12 hex digits of its key


@dataclass(frozen=True)
class SweepCounts:
    """What a sweep did, for the run's notes."""

    strategy: str
    budget: int
    evaluated: int
    reused: int
    failed: int


def finish_run(
    out_dir: Path,
    context: RunContext,
    store: Store,
    notes: list[str],
    counts: SweepCounts | None = None,
    layer_rows: Callable[[Mapping[str, Any]], list[dict[str, Any]]] | None = None,
) -> tuple[Path | None, pd.DataFrame, pd.DataFrame, list[str]]:
    """From the store to the run directory's files: annotated points, front, hypervolume, report.

    Shared by ``explore`` and ``dse report`` so a regenerated report is the one a run writes; the GPU
    comparison reuses the context's workload graph when the run built one.
    ``layer_rows``: the exact per-layer rows of a point, for the
    front designs stored without them (the array evaluation keeps none); they are stored for later reports.
    """
    spec = context.spec
    objectives, constraints = list(context.objectives), list(context.constraints)
    free_names = context.free_names
    points, outside = collect_points(context, store)
    pareto = pareto_frame(points, objectives)
    history = hypervolume_history(points, objectives, constraints)
    if counts is not None:
        notes = notes + run_notes(points, counts)
    if outside:
        notes.append(f"{outside} stored point(s) of earlier runs in this directory lie outside this spec's space")
    # the files are written (Arrow's writers let go of the GIL) while the front's layers and the report are built
    with ThreadPoolExecutor(max_workers=1) as writer:
        written = writer.submit(write_outputs, out_dir, spec, points, pareto, history)
        layers, layer_notes = front_layers(context, store, points, layer_rows)
        notes = notes + layer_notes
        comparison = None
        if spec.baselines:
            try:
                comparison = compare_run(spec, pareto, layers, param_names=free_names, graph=context.graph)
                write_comparison(out_dir, comparison)
            except UserError as err:
                notes.append(f"GPU comparison not written: {err}")
        report = _write_report(
            out_dir, spec, points, objectives, constraints, free_names, layers, history, notes, comparison
        )
        written.result()
    return report, points, pareto, notes


def front_layers(
    context: RunContext,
    store: Store,
    points: pd.DataFrame,
    layer_rows: Callable[[Mapping[str, Any]], list[dict[str, Any]]] | None,
) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The per-layer rows of the Pareto designs, by point_id, and a note when only some were evaluated.

    Rows the store lacks (the array path keeps none) are evaluated by ``layer_rows`` and stored; on a large
    front only for the ``LAYER_DESIGNS`` designs nearest the knee, the ones a reader opens first."""
    layers = {pid: store.layers_frame(pid) for pid in points.loc[points["pareto"], "point_id"]}
    notes: list[str] = []
    if layer_rows is None or context.evaluator_name != "analytical":
        return layers, notes
    wanted = [pid for pid, frame in layers.items() if frame.empty]
    if len(wanted) > LAYER_DESIGNS:
        near = set(designs_near_knee(points[points["pareto"]], list(context.objectives), LAYER_DESIGNS))
        notes.append(
            f"per-layer rows evaluated for the {LAYER_DESIGNS} front designs nearest the knee of "
            f"{len(layers)}; `dse evaluate SPEC --point NAME=VALUE ... --layers OUT.csv` writes any other's"
        )
        wanted = [pid for pid in wanted if pid in near]
    for pid, record in store.points(wanted).items():
        if record.ok:
            store.put_layers(record.key, layer_rows(record.params))
            layers[pid] = store.layers_frame(pid)
    return layers, notes


def annotate(frame: pd.DataFrame, objectives: Sequence[Objective], constraints: Sequence[Constraint]) -> pd.DataFrame:
    """Add ``feasible`` (ok and every constraint met) and ``pareto`` (feasible and non-dominated) columns."""
    frame = frame.copy()
    frame["feasible"] = feasible_mask(frame, constraints)
    frame["pareto"] = front_mask(frame, objectives, constraints) if objectives else False
    return frame


def collect_points(context: RunContext, store: Store) -> tuple[pd.DataFrame, int]:
    """The stored points of this evaluation that lie in the spec's space (a directory may hold earlier,
    wider runs), annotated, and how many lie outside; ``points`` rows decoded a chunk of records at a time,
    the array path's chunks taken as columns."""
    frames, params, outside = [], list(context.param_names), 0
    for records in store.record_chunks(context.fingerprint, chunked=False):
        inside = [r for r in records if context.space.contains(r.params)]
        outside += len(records) - len(inside)
        frames.append(store.points_frame(param_names=context.param_names, records=inside))
        named = set().union(*(r.params.keys() for r in inside))
        params += [c for c in frames[-1].columns if c in named and c not in params]
    points_rows = len(frames)
    for chunk in store.chunks(context.fingerprint):
        frame, left_out = chunk_frame(chunk, context)
        frames.append(frame)
        outside += left_out
        params += [c for c in param_names(chunk.table) if c not in params]
    if not frames:
        frames = [store.points_frame(param_names=context.param_names, records=[])]
    texts = {f["reason"].dtype for f in frames[:points_rows]} - {np.dtype(object)}
    if texts:  # failure messages in a text column (pandas' str): the chunks' empty reasons take its type
        frames[points_rows:] = [f.assign(reason=f["reason"].astype(texts.pop())) for f in frames[points_rows:]]
    points = frames[0] if len(frames) == 1 else _joined(frames, params)
    if 0 < points_rows < len(frames):  # both tables: in evaluation order
        points = points.sort_values("seq", kind="stable").reset_index(drop=True)
    ok = points[points["status"] == "ok"] if "status" in points.columns else points
    missing = unproduced_metrics(ok.dropna(axis=1, how="all").columns, context.objectives, context.constraints)
    if len(ok) and missing:
        field, metric = missing[0]
        produced = sorted(c for c in ok.columns if c in METRICS)
        raise UserError(
            f"{metric}: the {context.spec.template.kind} model gives no such metric for this workload "
            f"({len(ok)} point(s) evaluated and kept in the store); it gives: "
            f"{', '.join(produced)}",
            where=field,
        )
    return annotate(points, context.objectives, context.constraints), outside


def chunk_frame(chunk: Chunk, context: RunContext) -> tuple[pd.DataFrame, int]:
    """A stored chunk's points inside the spec's space as ``points_frame`` rows, and how many lie outside."""
    names = param_names(chunk.table)
    params = {name: chunk.table.column(name).to_numpy(zero_copy_only=False) for name in names}
    inside = contains_columns(context.space, params, chunk.n)
    rows = np.flatnonzero(inside)
    raw = np.ascontiguousarray(chunk.digests[rows]).tobytes()
    columns: dict[str, Any] = {
        "point_id": [raw[i : i + POINT_ID_BYTES].hex() for i in range(0, len(raw), DIGEST_BYTES)],
        "seq": chunk.first_seq + rows,
        "status": np.full(len(rows), "ok", dtype=object),
        "reason": np.full(len(rows), None, dtype=object),
    }
    columns.update({name: column[rows] for name, column in params.items()})
    columns.update(
        {name: chunk.table.column(name).to_numpy()[rows] for name in chunk.table.column_names if name not in params}
    )
    columns.update(
        {
            "eval_s": np.full(len(rows), chunk.eval_s),
            "evaluator": np.full(len(rows), chunk.evaluator, dtype=object),
            "exact": np.full(len(rows), chunk.exact),
        }
    )
    return pd.DataFrame(columns), chunk.n - len(rows)


def _joined(frames: list[pd.DataFrame], params: list[str]) -> pd.DataFrame:
    """The chunks' frames as one, columns in ``points_frame``'s order: the params, then the metrics in the
    order they first appear."""
    head = ["point_id", "seq", "status", "reason"]
    tail = ["eval_s", "evaluator", "exact", "solver_status", "solver_gap"]
    metrics = [c for c in dict.fromkeys(c for f in frames for c in f.columns) if c not in {*head, *tail, *params}]
    joined = pd.concat(frames, ignore_index=True, sort=False)
    return joined[[c for c in head + params + metrics + tail if c in joined.columns]]


def pareto_frame(points: pd.DataFrame, objectives: Sequence[Objective]) -> pd.DataFrame:
    """The Pareto-optimal rows, best first on the first objective."""
    front = points[points["pareto"]]
    if objectives and not front.empty:
        order = np.argsort(objective_matrix(front, objectives[:1])[:, 0], kind="stable")
        front = front.iloc[order]
    return front.reset_index(drop=True)


def spec_yaml_text(spec: Spec) -> str:
    """The spec as the user wrote it when it came from a file, else its dict form as YAML."""
    path = spec.path
    if path is not None and Path(path).is_file():
        return Path(path).read_text()
    return yaml.safe_dump(spec.to_dict(), sort_keys=False)


def write_outputs(out_dir: Path, spec: Spec, points: pd.DataFrame, pareto: pd.DataFrame, history: pd.DataFrame) -> None:
    """points.parquet, points.csv, pareto.csv, hypervolume.csv and spec.yaml, each written atomically."""
    safe = parquet_safe(points)
    rows = PARQUET_ROW_GROUP  # a reader can take a million points a row group at a time
    if len(points) > ARROW_CSV_ROWS:  # pandas formats CSV numbers in Python, ~10x slower than Arrow's writer
        import pyarrow as pa
        import pyarrow.csv
        import pyarrow.parquet

        table = pa.Table.from_pandas(safe, preserve_index=False)
        write_parquet = pyarrow.parquet.write_table
        atomic_write(out_dir / "points.parquet", lambda path: write_parquet(table, path, row_group_size=rows))
        atomic_write(out_dir / "points.csv", lambda path: pyarrow.csv.write_csv(table, path))
    else:
        atomic_write(out_dir / "points.parquet", lambda path: safe.to_parquet(path, index=False, row_group_size=rows))
        atomic_write(out_dir / "points.csv", lambda path: points.to_csv(path, index=False))
    atomic_write(out_dir / "pareto.csv", lambda path: pareto.to_csv(path, index=False))
    if len(history) > ARROW_CSV_ROWS:  # a row per evaluation
        import pyarrow as pa
        import pyarrow.csv

        curve = pa.Table.from_pandas(history, preserve_index=False)
        atomic_write(out_dir / "hypervolume.csv", lambda path: pyarrow.csv.write_csv(curve, path))
    else:
        atomic_write(out_dir / "hypervolume.csv", lambda path: history.to_csv(path, index=False))
    target = out_dir / "spec.yaml"
    source = spec.path
    if source is not None and Path(source).is_file():
        if Path(source).resolve() != target.resolve():
            atomic_write(target, lambda path: shutil.copyfile(source, path))
    else:
        atomic_write_text(target, spec_yaml_text(spec))


def parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Arrow needs one type per column: a param mixing numbers and strings (e.g. [16, auto]) becomes text."""
    objects = [c for c in frame.columns if pd.api.types.is_object_dtype(frame[c])]
    mixed = [c for c in objects if pd.api.types.infer_dtype(frame[c], skipna=True).startswith("mixed")]
    if not mixed:
        return frame
    out = frame.copy()
    for column in mixed:
        out[column] = out[column].map(lambda v: None if v is None else str(v))
    return out


def failures_by_type(points: pd.DataFrame) -> str:
    """'RuntimeError x3, MemoryError x1': the failed points counted by the exception type their reason starts
    with, most frequent first; empty when no point failed."""
    failed = points[points["status"] == "failed"]
    if failed.empty:
        return ""
    reasons = failed["reason"].fillna("").str.split(":").str[0].value_counts()
    return ", ".join(f"{name} x{count}" for name, count in reasons.items())


def run_notes(points: pd.DataFrame, counts: SweepCounts) -> list[str]:
    """The report's lines on what this run did and why points failed."""
    notes = [
        f"strategy {counts.strategy}, budget {counts.budget}: {counts.evaluated} evaluated in this run, "
        f"{counts.reused} answered from the store, {counts.failed} failed"
    ]
    failures = failures_by_type(points)
    if failures:
        notes.append(f"failures by type: {failures}")
    if not points.empty and not points["feasible"].any():
        notes.append("no evaluated point satisfies every constraint; the Pareto front is empty")
    return notes


def _write_report(
    out_dir: Path,
    spec: Spec,
    points: pd.DataFrame,
    objectives: Sequence[Objective],
    constraints: Sequence[Constraint],
    param_names: list[str],
    layers: Mapping[str, pd.DataFrame],
    history: pd.DataFrame,
    notes: list[str],
    comparison: Comparison | None = None,
) -> Path:
    return write_report(
        out_dir / "report.html",
        points,
        title=spec.name,
        objectives=objectives,
        constraints=constraints,
        param_names=param_names,
        layers=layers,
        hypervolume=history,
        notes=notes,
        comparison=comparison,
    )
