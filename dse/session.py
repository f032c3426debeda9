"""From a spec to what a command runs: the workload graph, the evaluator, one full design point.

Shared by every command (explore, evaluate, validate, schedule, export, surrogate) so they build
the same evaluator the same way; the command line itself only parses arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.graph import Graph, GraphError, merge_graphs
from dse.space import MAX_MAGNITUDE, DesignSpace, Dimension
from dse.spec import Spec
from dse.workload import load_workload


def build_graph(spec: Spec) -> Graph:
    """The spec's workload graph; a bad model is one UserError located at ``workload.model``."""
    w = spec.workload
    if w.models is not None:  # several DNNs sharing the hardware: one graph, each op tagged with its model
        parts = []
        for i, entry in enumerate(w.models):
            try:
                graph = load_workload(entry.model, batch=w.batch, precision=w.precision, **entry.options)
            except (UserError, GraphError, ValueError, KeyError) as exc:
                raise UserError(str(exc.args[0] if exc.args else exc), spec.locate(f"workload.models[{i}]")) from None
            parts.append((entry.model, graph))
        return merge_graphs(parts, {entry.model: entry.rate for entry in w.models})
    try:
        return load_workload(w.model, batch=w.batch, precision=w.precision, base_dir=spec.base_dir, **w.options)
    except (UserError, GraphError, ValueError, KeyError) as exc:
        msg = exc.args[0] if exc.args else str(exc)
        node = getattr(exc, "node", None)
        where = spec.locate("workload.model")
        raise UserError(f"{msg}" + (f" (node {node!r})" if node and node not in str(msg) else ""), where) from None


def build_evaluator(spec: Spec, space: DesignSpace | None = None) -> tuple[Graph, PointEvaluator]:
    """The spec's workload graph and a PointEvaluator for its template (fixed params and mapper options merged in).

    ``space``: the spec's design space when the caller built it already (``dse.evaluators.prepare_run``)."""
    graph = build_graph(spec)
    data = spec.workload.data_path
    evaluator = PointEvaluator(
        graph,
        spec.template.kind,
        spec.template.mapper,
        spec.fixed_params(space),
        dict(spec.template.mapper_options),
        data=None if data is None else str(data),
    )
    if evaluator.accuracy is not None:  # data, weights and float baseline checked here, once (a bad file exits 2)
        try:
            evaluator.accuracy.prepare()
        except UserError as exc:
            raise spec.error("workload.data", exc.message) from None
    return graph, evaluator


def parse_point(items: Sequence[str]) -> dict[str, Any]:
    """``["rows=32", "dataflow=os"]`` -> typed values (YAML scalars: 32 -> int, 2.5 -> float, true -> bool)."""
    point: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise UserError(f"--point {item!r} must be NAME=VALUE, e.g. --point rows=32", where="command line")
        name, _, raw = item.partition("=")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        if not isinstance(value, (str, int, float, bool)):
            raise UserError(
                f"--point {item[:60]!r}: the value must be one number, text or true/false", where="command line"
            )
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not abs(value) <= MAX_MAGNITUDE:
            raise UserError(f"--point {item[:60]!r}: give a finite number within ±{MAX_MAGNITUDE:g}", "command line")
        point[name.strip()] = value
    return point


def full_point(spec: Spec, space: DesignSpace, given: dict[str, Any]) -> dict[str, Any]:
    """Fixed params from the spec, overridden by --point values; every free param must be given."""
    point = dict(space.fixed)
    free = {d.name: d for d in space.free}
    for name, value in given.items():
        point[name] = value
    missing = [n for n in free if n not in given]
    if missing:
        hints = "; ".join(f"{n} in {describe_dim(free[n])}" for n in missing)
        raise UserError(
            f"the spec varies {', '.join(missing)}; give a value with --point NAME=VALUE ({hints})",
            where=str(spec.path) if spec.path else None,
        )
    return point


def describe_dim(dim: Dimension) -> str:
    """A free dimension's values as a user reads them: {a, b, c} or [low, high]."""
    if dim.values is not None:
        return "{" + ", ".join(map(str, dim.values)) + "}"
    return f"[{dim.low:g}, {dim.high:g}]"
