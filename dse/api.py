"""The Python API: what the command line does, as functions that return pandas DataFrames and plotly figures.

Everything here is a thin layer over the modules the commands use, so a run made from Python is the run
``dse explore`` makes (same store, same files, same report) and can be resumed, reported or compared from
either side. ``import dse`` exposes these names lazily (``dse.explore_spec``, ``dse.load_spec``, ...), so the
package itself stays light to import. Their names differ from the package's modules (``dse.explore``,
``dse.evaluate``, ``dse.compare`` are modules), so an attribute of ``dse`` always means one thing.

    import dse
    spec = dse.load_spec("designs/quickstart.yaml")
    run = dse.explore_spec(spec, "runs/quickstart")
    run.pareto            # the front, a DataFrame
    dse.figures(run.out_dir)["pareto"].show()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import yaml

from dse import API_NAMES
from dse.compare import Comparison, compare_dir
from dse.context import RunContext
from dse.describe import workload_lines
from dse.evaluators import prepare_run
from dse.explore import ExploreResult
from dse.explore import explore as explore_run
from dse.finish import collect_points, pareto_frame
from dse.graph import Graph
from dse.pareto import hypervolume_history
from dse.report.data import ReportData
from dse.report.figures import hypervolume_figure, parallel_coordinates_figure, pareto_figure
from dse.report.figures_layers import layer_breakdown_figure
from dse.rundir import open_run
from dse.session import build_evaluator, build_graph, full_point
from dse.space import DesignSpace
from dse.spec import Spec, parse_spec
from dse.spec import load_spec as load_spec_file
from hwmodels.base import METRICS

SpecLike = Spec | str | Path | Mapping[str, Any]  # a Spec, a spec file's path, or a dict of the file's fields

__all__ = list(API_NAMES)  # named once, in dse/__init__.py, which loads this module lazily


@dataclass(frozen=True)
class RunResult:
    """A run directory's results: every point and the Pareto front, as the files ``dse explore`` writes.

    ``points`` has one row per design point (``point_id``, one column per parameter, one per metric,
    ``status``/``reason``, ``feasible``, ``pareto``); ``pareto`` holds the Pareto rows, best first on the
    first objective; ``report`` is the path of ``report.html`` (None when none was written).
    """

    out_dir: Path
    spec: Spec
    points: pd.DataFrame
    pareto: pd.DataFrame
    report: Path | None


@dataclass(frozen=True)
class DesignResult:
    """One evaluated design: its full point, its metrics (name -> value, units in ``metric_units()``) and
    one row per layer (cycles, stalls, DRAM traffic, utilisation, energy per component)."""

    point: dict[str, Any]
    metrics: dict[str, float]
    layers: pd.DataFrame
    info: dict[str, Any]


def load_spec(path: str | Path) -> Spec:
    """Read and check a YAML spec file; a mistake raises ``dse.spec.SpecError`` naming the file, line and field."""
    return load_spec_file(path)


def spec_from_dict(spec: Mapping[str, Any], base_dir: str | Path = ".") -> Spec:
    """Build a spec from a Python dict with the YAML file's fields (``name``, ``workload``, ``template``, ...).

    Relative paths in it (``workload.model``, ``workload.data``) are read from ``base_dir``.
    """
    text = yaml.safe_dump(dict(spec), sort_keys=False)
    return parse_spec(text, Path(base_dir) / f"{spec.get('name', 'spec')}.yaml")


def as_spec(spec: SpecLike) -> Spec:
    """A Spec from a Spec, a spec file's path or a dict."""
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, Mapping):
        return spec_from_dict(spec)
    return load_spec(spec)


def explore_spec(
    spec: SpecLike,
    out_dir: str | Path,
    *,
    executor: str | None = "serial",
    workers: int | None = None,
    progress: bool = False,
    arrays: bool = False,
) -> RunResult:
    """Search the spec's design space into ``out_dir`` (resuming what its store holds), as ``dse explore`` does.

    ``executor``: ``serial`` (default here: one process, best for small spaces and notebooks), ``local``
    (a process pool of ``workers``), ``dask`` or ``tcp://HOST:PORT`` (a Dask scheduler). ``arrays``: a grid
    or random sweep's chunks go to the family's array evaluator on those workers (``dse explore --arrays``).
    """
    spec = as_spec(spec)
    context, evaluation = prepare_run(spec)
    result: ExploreResult = explore_run(
        spec,
        Path(out_dir),
        evaluation,
        executor=executor,
        workers=workers,
        progress=progress,
        context=context,
        arrays=arrays,
    )
    return RunResult(Path(out_dir), spec, result.points, result.pareto, result.report)


def load_run(run_dir: str | Path) -> RunResult:
    """The points and front of an existing run directory, read from its store (nothing is evaluated)."""
    run_dir = Path(run_dir)
    with open_run(run_dir) as (store, spec):
        context = RunContext.of(spec)
        points, _ = collect_points(context, store)
    report = run_dir / "report.html"
    return RunResult(
        run_dir, spec, points, pareto_frame(points, context.objectives), report if report.is_file() else None
    )


def evaluate_design(spec: SpecLike, point: Mapping[str, Any] | None = None) -> DesignResult:
    """Evaluate one design, as ``dse evaluate``: ``point`` gives every parameter the spec searches."""
    spec = as_spec(spec)
    space = DesignSpace.from_spec(spec)
    _, evaluator = build_evaluator(spec, space)
    full = full_point(spec, space, dict(point or {}))
    metrics = evaluator(full)
    layers = pd.DataFrame([layer.row() for layer in metrics.layers])
    return DesignResult(full, metrics.flat(), layers, dict(metrics.info))


def workload_graph(spec: SpecLike) -> tuple[Graph, list[str]]:
    """The spec's workload graph and the lines ``dse validate`` prints about it (op kinds, MACs, weights)."""
    graph = build_graph(as_spec(spec))
    return graph, workload_lines(graph)


def figures(run_dir: str | Path) -> dict[str, go.Figure]:
    """The report's figures of a run directory as plotly figures, keyed ``pareto`` (two or more objectives),
    ``parallel_coordinates``, ``hypervolume`` and ``layers`` (the per-layer breakdown of the Pareto designs)."""
    run_dir = Path(run_dir)
    with open_run(run_dir) as (store, spec):
        context = RunContext.of(spec)
        points, _ = collect_points(context, store)
        layers = {str(pid): store.layers_frame(pid) for pid in points.loc[points["pareto"], "point_id"]}
    objectives, constraints = list(context.objectives), list(context.constraints)
    data = ReportData(points.reset_index(drop=True), objectives, constraints, context.free_names)
    out: dict[str, go.Figure] = {}
    if not data.ok.empty:
        if len(objectives) >= 2:
            out["pareto"] = pareto_figure(data)
        out["parallel_coordinates"] = parallel_coordinates_figure(data)[0]
    history = hypervolume_history(points, objectives, constraints)
    if not history.empty:
        out["hypervolume"] = hypervolume_figure(history)
    breakdown = layer_breakdown_figure(data, layers) if not data.front.empty else None
    if breakdown is not None:
        out["layers"] = breakdown[0]
    return out


def compare_gpus(run_dir: str | Path, baselines: Sequence[str] | None = None) -> Comparison:
    """A run's Pareto designs against GPU baselines, as ``dse compare``: ``.summary`` and ``.layers`` are
    DataFrames, ``.figures`` the comparison's plotly figures. ``baselines``: catalog GPUs or DGX nodes
    (default: the spec's ``baselines``, else H100 and A100)."""
    return compare_dir(Path(run_dir), baselines)


def metric_units() -> dict[str, str]:
    """Every metric's unit (``latency_ms`` -> ``ms``), as the report and ``dse evaluate`` print them."""
    return {name: unit for name, (unit, *_rest) in METRICS.items()}
