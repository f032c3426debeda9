"""The explorer: spec -> proposals -> evaluations -> store -> Pareto front -> files and report.

The loop asks the search strategy for a batch, answers every point the store
already holds from the store, evaluates the rest through the executor, and
commits each result before it is counted, shown or told to the sampler. When the
budget is spent it marks feasible and Pareto-optimal points and writes
``points.parquet``/``points.csv``, ``pareto.csv``, ``hypervolume.csv``,
``spec.yaml`` and the HTML report into the run directory.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dse.executors import Outcome, make_executor
from dse.objectives import Constraint, Objective
from dse.pareto import FrontTracker, feasible_mask, front_mask, hypervolume_history, objective_matrix
from dse.search import Observation, Proposal, SearchStrategy, make_strategy
from dse.store import FlatMetrics, FlatMetricsEvaluator, PointRecord, Store, point_key


@dataclass
class ExploreResult:
    """What a run produced; ``points`` and ``pareto`` are the frames written to the run directory."""

    out_dir: Path
    points: pd.DataFrame
    pareto: pd.DataFrame
    evaluated: int
    reused: int
    failed: int
    seconds: float
    report: Path | None = None
    notes: list[str] = field(default_factory=list)
    sweep_seconds: float = 0.0  # of ``seconds``, the part spent proposing, evaluating and storing points


def explore(
    spec: Any,
    out_dir: Path,
    evaluator: Callable[[Mapping[str, Any]], Any],
    *,
    executor: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    space: Any = None,
) -> ExploreResult:
    """Run the spec's search to its budget in ``out_dir`` (resuming whatever the store there holds)."""
    start = time.perf_counter()
    out_dir = Path(out_dir)
    if space is None:
        from dse.space import DesignSpace

        space = DesignSpace.from_spec(spec)
    objectives = list(spec.objective_list())
    constraints = list(spec.constraint_list())
    fingerprint = spec.evaluation_fingerprint()
    evaluator_name = str(getattr(spec, "evaluator", None) or "analytical")
    strategy = make_strategy(spec, space, objectives, constraints)

    with Store.open(out_dir) as store:
        spec_path = getattr(spec, "path", None)
        store.start_run(
            spec.name, spec_yaml_text(spec), fingerprint, str(Path(spec_path).resolve()) if spec_path else ""
        )
        # a batch evaluator (surrogate prediction) brings its own in-process executor; hybrid its own sweep
        batch_executor = getattr(evaluator, "batch_executor", None)
        sweep_class = getattr(evaluator, "sweep_class", Sweep)
        with batch_executor() if batch_executor else make_executor(executor, workers) as pool:
            sweep = sweep_class(store, strategy, space, fingerprint, evaluator_name, objectives, constraints)
            with _Display(progress, strategy.budget, spec.name) as display:
                sweep.run(pool, FlatMetricsEvaluator(evaluator), display)
        sweep_seconds = time.perf_counter() - start
        store.set_status("done")
        run_notes = list(strategy.notes) + list(getattr(sweep, "notes", []))
        report, points, pareto, notes = finish_run(out_dir, spec, store, space, run_notes, sweep, strategy)
    return ExploreResult(
        out_dir=out_dir,
        points=points,
        pareto=pareto,
        evaluated=sweep.evaluated,
        reused=sweep.reused,
        failed=sweep.failed,
        seconds=time.perf_counter() - start,
        report=report,
        notes=notes,
        sweep_seconds=sweep_seconds,
    )


class Sweep:
    """The ask -> (store | evaluate) -> store -> tell loop, with its counters.

    Public extension point: an evaluator that must drive the loop itself (the surrogates' hybrid
    evaluator screens the whole budget before evaluating anything exactly) carries a ``sweep_class``
    attribute naming a subclass, and ``explore`` runs that instead. Subclasses override ``run``.
    """

    def __init__(
        self,
        store: Store,
        strategy: SearchStrategy,
        space: Any,
        fingerprint: str,
        evaluator_name: str,
        objectives: Sequence[Objective],
        constraints: Sequence[Constraint],
    ):
        self.store = store
        self.strategy = strategy
        self.space = space
        self.fingerprint = fingerprint
        self.evaluator_name = evaluator_name
        self.objectives = objectives
        self.constraints = constraints
        self.front = FrontTracker(len(objectives))
        self.evaluated = 0
        self.reused = 0
        self.failed = 0
        self.proposed = 0

    def key(self, point: Mapping[str, Any]) -> str:
        return point_key(self.fingerprint, self.space.canonical(dict(point)))

    def run(self, pool: Any, evaluator: Callable[[Mapping[str, Any]], Any], display: _Display) -> None:
        self.proposed = self._replay(display) if self.strategy.replays else 0
        batch_size = self.strategy.batch_size(pool.workers)
        while self.proposed < self.strategy.budget:
            proposals = self.strategy.ask(min(batch_size, self.strategy.budget - self.proposed))
            if not proposals:
                break
            observations = self._run_batch(proposals, pool, evaluator, display)
            self.strategy.tell(proposals, observations)
            self.proposed += len(proposals)

    def _replay(self, display: _Display) -> int:
        """Feed the strategy's own earlier proposals back to it, so an optuna sampler continues from them."""
        history = []
        for key in self.store.proposals(self.strategy.tag)[: self.strategy.budget]:
            record = self.store.get(key)
            if record is not None:
                history.append((record.params, _observation(record)))
                self._count(record, reused=True, display=display)
        return self.strategy.replay(history)

    def _run_batch(
        self,
        proposals: Sequence[Proposal],
        pool: Any,
        evaluator: Callable[[Mapping[str, Any]], Any],
        display: _Display,
    ) -> list[Observation]:
        """Answer stored points from the store, evaluate the others once each; observations in proposal order."""
        keys = [self.key(p.point) for p in proposals]
        log: dict[str, list[tuple[str, int, str]]] = {}
        if self.strategy.replays:
            for i, key in enumerate(keys):
                log.setdefault(key, []).append((self.strategy.tag, self.proposed + i, key))
        results: dict[str, PointRecord] = {}
        fresh: dict[str, Mapping[str, Any]] = {}
        for proposal, key in zip(proposals, keys):
            if key in results or key in fresh:
                continue
            stored = self.store.get(key)
            if stored is not None:
                results[key] = stored
            else:
                fresh[key] = proposal.point
        self.store.put_many([], proposals=[entry for key in results for entry in log.get(key, [])])
        fresh_keys = list(fresh)
        for outcome in pool.map(evaluator, [fresh[k] for k in fresh_keys]):
            key = fresh_keys[outcome.index]
            record = self._record(key, fresh[key], outcome)
            self.store.put_many([record], proposals=log.get(key, []))  # committed before counted, shown or told
            results[key] = record
            self.evaluated += 1
            self._count(record, reused=False, display=display)
        counted_fresh: set[str] = set()
        for key in keys:
            if key in fresh and key not in counted_fresh:
                counted_fresh.add(key)  # counted above, when it was evaluated
            else:
                self._count(results[key], reused=True, display=display)
        return [_observation(results[key]) for key in keys]

    def _record(self, key: str, point: Mapping[str, Any], outcome: Outcome) -> PointRecord:
        common = {"key": key, "params": dict(point), "eval_s": outcome.seconds, "fingerprint": self.fingerprint}
        if outcome.ok:
            flat: FlatMetrics = outcome.value
            exact = self.evaluator_name == "analytical" if flat.exact is None else flat.exact
            return PointRecord(
                status="ok",
                metrics=flat.values,
                evaluator=self.evaluator_name,
                exact=exact,
                layers_blob=flat.layers_blob,
                **common,
            )
        return PointRecord(status="failed", reason=outcome.error, evaluator=self.evaluator_name, exact=False, **common)

    def _count(self, record: PointRecord, *, reused: bool, display: _Display) -> None:
        if reused:
            self.reused += 1
        if not record.ok:
            self.failed += 1
        elif self._feasible(record):
            values = np.array(
                [o.to_min(float(record.metrics.get(o.metric, np.nan))) for o in self.objectives], dtype=float
            )
            self.front.add(values)
        display.advance(front=len(self.front), failed=self.failed)

    def _feasible(self, record: PointRecord) -> bool:
        return all(c.violation(record.metrics) == 0.0 for c in self.constraints)


def _observation(record: PointRecord) -> Observation:
    return Observation(ok=record.ok, metrics=record.metrics)


# -- frames and files ------------------------------------------------------------------


def finish_run(
    out_dir: Path,
    spec: Any,
    store: Store,
    space: Any,
    notes: list[str],
    sweep: Sweep | None = None,
    strategy: SearchStrategy | None = None,
) -> tuple[Path | None, pd.DataFrame, pd.DataFrame, list[str]]:
    """From the store to the run directory's files: annotated points, front, hypervolume, report.

    Shared by ``explore`` and ``dse report`` so a regenerated report is the one a run writes.
    """
    objectives = list(spec.objective_list())
    constraints = list(spec.constraint_list())
    fingerprint = spec.evaluation_fingerprint()
    free_names = [dim.name for dim in space.free]
    param_names = free_names + [name for name in space.fixed if name not in free_names]
    points, outside = _points_in_space(store, fingerprint, param_names, space)
    points = annotate(points, objectives, constraints)
    layers = {pid: store.layers_frame(pid) for pid in points.loc[points["pareto"], "point_id"]}
    pareto = pareto_frame(points, objectives)
    history = hypervolume_history(points, objectives, constraints)
    if sweep is not None and strategy is not None:
        notes = notes + _run_notes(points, sweep, strategy)
    if outside:
        notes.append(f"{outside} stored point(s) of earlier runs in this directory lie outside this spec's space")
    write_outputs(out_dir, spec, points, pareto, history)
    comparison = None
    if getattr(spec, "baselines", None):
        from dse.compare import compare_run, write_comparison
        from dse.errors import UserError

        try:
            comparison = compare_run(spec, pareto, layers, param_names=free_names)
            write_comparison(out_dir, comparison)
        except UserError as err:
            notes.append(f"GPU comparison not written: {err}")
    report = _write_report(
        out_dir, spec, points, objectives, constraints, free_names, layers, history, notes, comparison
    )
    return report, points, pareto, notes


def annotate(frame: pd.DataFrame, objectives: Sequence[Objective], constraints: Sequence[Constraint]) -> pd.DataFrame:
    """Add ``feasible`` (ok and every constraint met) and ``pareto`` (feasible and non-dominated) columns."""
    frame = frame.copy()
    frame["feasible"] = feasible_mask(frame, constraints)
    frame["pareto"] = front_mask(frame, objectives, constraints) if objectives else False
    return frame


def _points_in_space(store: Store, fingerprint: str, param_names: list[str], space: Any) -> tuple[pd.DataFrame, int]:
    """Stored points of this evaluation that lie in the spec's space (a directory may hold earlier, wider runs)."""
    frame = store.points_frame(fingerprint, param_names)
    if not hasattr(space, "contains"):
        return frame, 0
    inside = {r.point_id for r in store.records(fingerprint) if space.contains(r.params)}
    keep = frame["point_id"].isin(inside)
    return frame[keep].reset_index(drop=True), int((~keep).sum())


def pareto_frame(points: pd.DataFrame, objectives: Sequence[Objective]) -> pd.DataFrame:
    """The Pareto-optimal rows, best first on the first objective."""
    front = points[points["pareto"]]
    if objectives and not front.empty:
        order = np.argsort(objective_matrix(front, objectives[:1])[:, 0], kind="stable")
        front = front.iloc[order]
    return front.reset_index(drop=True)


def spec_yaml_text(spec: Any) -> str:
    """The spec as the user wrote it when it came from a file, else its dict form as YAML."""
    path = getattr(spec, "path", None)
    if path is not None and Path(path).is_file():
        return Path(path).read_text()
    import yaml

    return yaml.safe_dump(spec.to_dict(), sort_keys=False)


def write_outputs(out_dir: Path, spec: Any, points: pd.DataFrame, pareto: pd.DataFrame, history: pd.DataFrame) -> None:
    """points.parquet, points.csv, pareto.csv, hypervolume.csv and spec.yaml."""
    parquet_safe(points).to_parquet(out_dir / "points.parquet", index=False)
    points.to_csv(out_dir / "points.csv", index=False)
    pareto.to_csv(out_dir / "pareto.csv", index=False)
    history.to_csv(out_dir / "hypervolume.csv", index=False)
    target = out_dir / "spec.yaml"
    source = getattr(spec, "path", None)
    if source is not None and Path(source).is_file():
        if Path(source).resolve() != target.resolve():
            shutil.copyfile(source, target)
    else:
        target.write_text(spec_yaml_text(spec))


def parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Arrow needs one type per column: a param mixing numbers and strings (e.g. [16, auto]) becomes text."""
    out = frame.copy()
    for column in [c for c in out.columns if pd.api.types.is_object_dtype(out[c])]:
        kinds = {type(v) for v in out[column] if v is not None and not (isinstance(v, float) and np.isnan(v))}
        if len(kinds) > 1:
            out[column] = out[column].map(lambda v: None if v is None else str(v))
    return out


def _run_notes(points: pd.DataFrame, sweep: Sweep, strategy: SearchStrategy) -> list[str]:
    notes = [
        f"strategy {strategy.name}, budget {strategy.budget}: {sweep.evaluated} evaluated in this run, "
        f"{sweep.reused} answered from the store, {sweep.failed} failed"
    ]
    failed = points[points["status"] == "failed"]
    if not failed.empty:
        reasons = failed["reason"].fillna("").str.split(":").str[0].value_counts()
        notes.append("failures by type: " + ", ".join(f"{name} x{count}" for name, count in reasons.items()))
    if not points.empty and not points["feasible"].any():
        notes.append("no evaluated point satisfies every constraint; the Pareto front is empty")
    return notes


def _write_report(
    out_dir: Path,
    spec: Any,
    points: pd.DataFrame,
    objectives: Sequence[Objective],
    constraints: Sequence[Constraint],
    param_names: list[str],
    layers: Mapping[str, pd.DataFrame],
    history: pd.DataFrame,
    notes: list[str],
    comparison: Any = None,
) -> Path | None:
    try:
        from dse.report import write_report
    except ModuleNotFoundError as exc:
        if exc.name != "dse.report":
            raise
        notes.append("report.html not written: dse.report is not available in this installation")
        return None
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


# -- progress --------------------------------------------------------------------------


class _Display:
    """A rich progress bar on stderr (done/budget, points/s, ETA, front size, failures), or nothing."""

    def __init__(self, enabled: bool, total: int, title: str):
        self._progress = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            TextColumn("front {task.fields[front]}  failed {task.fields[failed]}"),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._progress.add_task(title, total=total, rate="", front=0, failed=0)
        self._started = time.perf_counter()
        self._done = 0

    def __enter__(self) -> _Display:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, *, front: int, failed: int) -> None:
        if self._progress is None:
            return
        self._done += 1
        rate = self._done / max(time.perf_counter() - self._started, 1e-9)
        self._progress.update(self._task, advance=1, rate=f"{rate:.1f} pt/s", front=front, failed=failed)
