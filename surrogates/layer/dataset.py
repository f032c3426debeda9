"""Layer-level training data (``surrogates.layer.model``): sample designs, run the expensive mapper and its
cheap baseline on the explorer's executors, keep one row per (workload, design, layer)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.executors import make_executor
from surrogates.dataset import WorkloadSpec, stratified_points
from surrogates.layer.model import LayerTask, baseline_evaluator, layer_frame


def build_layer_dataset(
    template_kind: str,
    space: Any,
    fixed: Mapping[str, Any],
    workloads: Sequence[WorkloadSpec],
    n: int,
    *,
    mapper: str | None,
    mapper_options: Mapping[str, Any] | None = None,
    seed: int = 0,
    executor: str | None = "serial",
    workers: int | None = None,
    base_dir: Path | None = None,
) -> pd.DataFrame:
    """``n`` stratified designs per workload (the same seeds as ``build_dataset``); failed points left out."""
    options = dict(mapper_options or {})
    frames = []
    with make_executor(executor, workers) as pool:
        for w_index, workload in enumerate(workloads):
            graph = workload.build(base_dir)
            points = stratified_points(space, n, seed + 7919 * w_index)
            task = LayerTask(
                PointEvaluator(graph, template_kind, mapper, dict(fixed), options),
                baseline_evaluator(graph, template_kind, mapper, fixed, options),
            )
            done = {o.index: o.value for o in pool.map(task, points) if o.ok}
            if not done:
                raise UserError(f"every sampled point of {workload.label} failed to evaluate", where="template.params")
            kept = sorted(done)
            frames.append(
                layer_frame(
                    template_kind,
                    graph,
                    workload.label,
                    [points[i] for i in kept],
                    fixed,
                    [done[i] for i in kept],
                    task.baseline,
                )
            )
    return pd.concat(frames, ignore_index=True)
