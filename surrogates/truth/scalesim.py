"""Real SCALE-Sim 3.0.0 as a surrogate dataset's truth (``dse surrogate dataset --truth scalesim``).

Each sampled systolic design is mapped by the fold mapper (SCALE-Sim's own lowering); every MAC-array
op becomes one SCALE-Sim layer run on the design's array, SRAMs and DRAM mode. The per-layer runs are
pooled over all designs, de-duplicated by (layer shape, array config), looked up in an on-disk cache
and the missing ones simulated in parallel on the explorer's executors; a re-run, or another design
with the same array config, does not simulate again.

What SCALE-Sim does not model stays analytical, and is said so: the vector unit's ops (SCALE-Sim has
none) keep the model's cycles, and energy, area and power stay the model's (SCALE-Sim reports no
energy); power is recomputed over SCALE-Sim's latency. A grouped op (depthwise conv, batched matmul)
is ``count`` identical GEMMs run back to back: one is simulated and its cycles multiplied.

A design SCALE-Sim cannot represent is refused with one clear message: the ``shared`` DRAM channel
(SCALE-Sim has per-operand USER bandwidth or unlimited CALC only), sparsity support, an SRAM that is
not a whole number of SCALE-Sim's 1024-word kB, unequal strides, the spec's other mappers.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dse.choices import scalesim_cache_dir
from dse.errors import UserError
from dse.evaluate import PointEvaluator
from dse.executors import Executor
from dse.files import atomic_write_text
from hwmodels.systolic.scalesim_run import ScaleSimConfig, ScaleSimLayer, run_scalesim, scalesim_config, scalesim_layer
from mappers.payloads import FoldPlan, TiledPlan

SCALESIM_VERSION = "3.0.0"  # part of every cache key: another simulator version simulates again
TRUTH_FIGURE = "total_cycles_incl_prefetch"  # SCALE-Sim's latency of one layer (the fill included)
WHERE = "template.params"


@dataclass(frozen=True)
class SimJob:
    """One SCALE-Sim run: a layer on an array configuration; its key names the cache entry."""

    layer: ScaleSimLayer
    config: ScaleSimConfig

    @property
    def key(self) -> str:
        text = json.dumps([SCALESIM_VERSION, asdict(self.layer), asdict(self.config)], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class LayerCache:
    """SCALE-Sim reports on disk, one JSON file per (layer, config); written atomically, so concurrent
    workers that simulate the same job only duplicate work."""

    root: Path

    def path(self, job: SimJob) -> Path:
        key = job.key
        return self.root / key[:2] / f"{key}.json"

    def get(self, job: SimJob) -> dict[str, Any] | None:
        try:
            return json.loads(self.path(job).read_text())["report"]
        except (OSError, ValueError, KeyError):
            return None

    def put(self, job: SimJob, report: Mapping[str, Any]) -> None:
        entry = {"layer": asdict(job.layer), "config": asdict(job.config), "report": dict(report)}
        atomic_write_text(self.path(job), json.dumps(entry))


@dataclass
class SimulateLayer:
    """Picklable executor task: one job's SCALE-Sim report, from the cache or a fresh run (then cached)."""

    cache_root: str

    def __call__(self, job: SimJob) -> dict[str, Any]:
        cache = LayerCache(Path(self.cache_root))
        report = cache.get(job)
        if report is None:
            report = run_scalesim([job.layer], job.config)[0]
            cache.put(job, report)
        return report


@dataclass(frozen=True)
class LayerPlan:
    """One layer of one evaluated design: the model's figures and, for a MAC-array op, its SCALE-Sim job."""

    name: str
    cycles: float
    energy_pj: float
    job: SimJob | None
    copies: int


@dataclass
class PlanDesign:
    """Picklable executor task: evaluate a point with the model and list its layers' SCALE-Sim jobs."""

    evaluator: PointEvaluator

    def __call__(self, point: Mapping[str, Any]) -> tuple[list[LayerPlan], dict[str, float], float]:
        trace = self.evaluator.trace(point)
        config = scalesim_config(trace.arch)
        plans = []
        for layer in trace.metrics.layers:
            payload = trace.mapping.ops[layer.layer].payload
            gemm = payload.gemm if isinstance(payload, (FoldPlan, TiledPlan)) else None
            job = None if gemm is None else SimJob(scalesim_layer(gemm, layer.layer), config)
            plans.append(LayerPlan(layer.layer, layer.cycles, layer.energy_pj, job, 1 if gemm is None else gemm.count))
        return plans, dict(trace.metrics.values), float(trace.arch.freq_mhz)


@dataclass
class ScaleSimTruth:
    """``--truth scalesim``: where the cache lives, and what the last builds simulated."""

    cache_dir: Path = field(default_factory=scalesim_cache_dir)
    # Designs whose model latency over their MAC-array layers exceeds this many cycles are not simulated
    # (None: every design). SCALE-Sim's run time grows with the cycles it simulates (about 0.1-0.3 ms each
    # here), and a space's worst designs (e.g. ws with a small filter SRAM, re-reading through USER mode's
    # prefetch window) run to 1e8 cycles: hours for one design.
    max_model_cycles: float | None = None
    simulated: int = 0  # layer runs made
    skipped: int = 0  # designs over ``max_model_cycles``, left out unsimulated
    cached: int = 0  # distinct layer runs found in the cache
    failed: int = 0  # layer runs SCALE-Sim failed on (their designs are left out)
    sim_seconds: float = 0.0  # wall time of the simulation phase

    def check(self, evaluator: PointEvaluator, points: Sequence[Mapping[str, Any]]) -> None:
        """Refuse, before anything runs, a spec whose designs SCALE-Sim cannot represent."""
        if evaluator.mapper_name not in (None, "fold"):
            raise UserError(
                "--truth scalesim maps layers as SCALE-Sim does (the fold mapper), not with "
                f"{evaluator.mapper_name!r}; drop template.mapper",
                where="template.mapper",
            )
        for point in points:
            scalesim_config(evaluator.arch(point))

    def targets(
        self,
        pool: Executor,
        evaluator: PointEvaluator,
        members: Sequence[Sequence[str]],
        points: Sequence[Mapping[str, Any]],
    ) -> dict[int, tuple[np.ndarray, dict[str, float]]]:
        """Per point index: (per op row [cycles, energy_pj] with SCALE-Sim's cycles, design figures), as
        ``surrogates.dataset.LayerTargets`` returns them. Points that failed are left out."""
        self.check(evaluator, points)
        outcomes = list(pool.map(PlanDesign(evaluator), points))
        plans = {o.index: o.value for o in outcomes if o.ok}
        if self.max_model_cycles is not None:
            cheap = {i: plan for i, plan in plans.items() if array_cycles(plan[0]) <= self.max_model_cycles}
            self.skipped += len(plans) - len(cheap)
            if plans and not cheap:
                raise UserError(
                    f"every sampled design is over the SCALE-Sim bound of {self.max_model_cycles:.3g} model cycles "
                    f"(the least is {min(array_cycles(p[0]) for p in plans.values()):.3g}); raise "
                    "--scalesim-max-cycles",
                    where=WHERE,
                )
            plans = cheap
        if not plans:
            raise UserError(f"no sampled design could be planned for SCALE-Sim: {outcomes[0].error}", where=WHERE)
        jobs = {p.job.key: p.job for layers, _, _ in plans.values() for p in layers if p.job is not None}
        cache = LayerCache(self.cache_dir)
        reports = {key: r for key, job in jobs.items() if (r := cache.get(job)) is not None}
        self.cached += len(reports)
        missing = [job for key, job in jobs.items() if key not in reports]
        start = time.perf_counter()
        for outcome in pool.map(SimulateLayer(str(self.cache_dir)), missing):
            if outcome.ok:
                reports[missing[outcome.index].key] = outcome.value
                self.simulated += 1
            else:
                self.failed += 1
        self.sim_seconds += time.perf_counter() - start
        out = {}
        for index, (layers, values, freq_mhz) in plans.items():
            if any(p.job is not None and p.job.key not in reports for p in layers):
                continue
            cycles = {p.name: _truth_cycles(p, reports) for p in layers}
            energy = {p.name: p.energy_pj for p in layers}
            per_op = np.array(
                [np.mean([[cycles[n], energy[n]] for n in names], axis=0) for names in members], dtype=float
            ).reshape(len(members), 2)
            out[index] = per_op, design_values(sum(cycles.values()), freq_mhz, values)
        return out


def array_cycles(layers: Sequence[LayerPlan]) -> float:
    """The model's cycles over a design's MAC-array layers (those SCALE-Sim would simulate)."""
    return float(sum(p.cycles for p in layers if p.job is not None))


def _truth_cycles(plan: LayerPlan, reports: Mapping[str, Mapping[str, Any]]) -> float:
    """SCALE-Sim's cycles for an array op (all its copies); the model's for a vector op."""
    if plan.job is None:
        return plan.cycles
    return float(reports[plan.job.key][TRUTH_FIGURE]) * plan.copies


def design_values(latency_cycles: float, freq_mhz: float, model: Mapping[str, float]) -> dict[str, float]:
    """A design's figures with SCALE-Sim's latency: energy and area the model's, power over the new latency."""
    latency_ms = latency_cycles / (freq_mhz * 1e3)
    power_w = model["energy_mj"] / latency_ms if latency_ms > 0 else 0.0
    return {
        "latency_cycles": latency_cycles,
        "latency_ms": latency_ms,
        "energy_mj": model["energy_mj"],
        "area_mm2": model["area_mm2"],
        "power_w": power_w,
    }
