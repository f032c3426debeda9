"""Our model on a peer's inputs, through the evaluator: the side every validation against a peer compares.

Two peers: SCALE-Sim 3.0.0 (the adapter -- configs, topologies, runs, reports, config <-> point -- is
``hwmodels.systolic.scalesim_run``) and the wa-hls4ml Vivado HLS syntheses (read by
``surrogates.truth.wa_hls4ml.read_wa_hls4ml``). Each peer's design is turned into a design point and run through
:class:`~dse.evaluate.PointEvaluator`, as every design of a run is evaluated; the tests, the benchmarks and
the surrogates' SCALE-Sim truth share these functions instead of wiring template, mapper and model by hand.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dse.evaluate import PointEvaluator, Trace
from dse.registry import HLS4ML, SCALESIM, kinds_exporting, kinds_simulated_by
from hwmodels.systolic.scalesim_run import ScaleSimConfig, ScaleSimLayer, arch_point, layer_figures, layer_graph
from mappers.payloads import FoldPlan
from surrogates.truth.measured import WA_HLS4ML_FIXED, dense_graph
from surrogates.truth.wa_hls4ml import network_split

# The fpga_dataflow model's promise on wa-hls4ml networks it was not calibrated on: median absolute
# percentage error per target at most this (its LUT/FF constants were fitted on the other half).
WA_HLS4ML_ALLOWED_MEDIAN_APE = {
    "latency_cycles": 0.10,
    "ii_cycles": 0.10,
    "dsp": 0.10,
    "lut": 0.20,
    "ff": 0.20,
    "bram": 0.20,
}

(SCALESIM_KIND,) = kinds_simulated_by(SCALESIM)  # the family SCALE-Sim runs (its configs are our points)
(HLS4ML_KIND,) = kinds_exporting(HLS4ML)  # the family whose projects wa-hls4ml synthesized


# ---------------------------------------------------------------------------------------------------
# SCALE-Sim
# ---------------------------------------------------------------------------------------------------
def scalesim_trace(layers: list[ScaleSimLayer], cfg: ScaleSimConfig) -> Trace:
    """The design equivalent to ``cfg`` evaluated on one conv op per layer (arch, fold mapping, metrics)."""
    return PointEvaluator(layer_graph(layers), SCALESIM_KIND, "fold").trace(arch_point(cfg))


def scalesim_predict(layers: list[ScaleSimLayer], cfg: ScaleSimConfig) -> list[dict[str, Any]]:
    """Our model's figures for each layer, under SCALE-Sim's report names (as ``run_scalesim`` gives them)."""
    trace = scalesim_trace(layers, cfg)
    figures = []
    for layer in layers:
        plan = trace.mapping.ops[layer.name].payload_as(FoldPlan)
        figures.append(layer_figures(layer, plan.gemm, plan.sparse, trace.arch, cfg))
    return figures


# ---------------------------------------------------------------------------------------------------
# wa-hls4ml
# ---------------------------------------------------------------------------------------------------
def wa_hls4ml_point(prec: float, reuse_factor: float, clock_period_ns: float) -> dict[str, Any]:
    """The fpga_dataflow point of one wa-hls4ml synthesis (its fixed hls4ml configuration, its own knobs)."""
    return {
        **WA_HLS4ML_FIXED,
        "clock_period_ns": float(clock_period_ns),
        "reuse_factor": int(reuse_factor),
        "weight_width": int(prec),
    }


def wa_hls4ml_traces(frame: pd.DataFrame) -> list[Trace]:
    """Our model's trace of every row of ``read_wa_hls4ml``'s frame (each distinct design evaluated once)."""
    evaluators: dict[tuple[int, int, int], PointEvaluator] = {}
    traces: dict[tuple, Trace] = {}
    out = []
    columns = ["d_in", "hidden", "d_out", "prec", "reuse_factor", "clock_period_ns"]
    for d_in, hidden, d_out, prec, rf, clock in frame[columns].itertuples(index=False):
        widths = (int(d_in), int(hidden), int(d_out))
        key = (*widths, int(prec), int(rf), float(clock))
        if key not in traces:
            if widths not in evaluators:
                evaluators[widths] = PointEvaluator(dense_graph(widths), HLS4ML_KIND, HLS4ML)
            traces[key] = evaluators[widths].trace(wa_hls4ml_point(prec, rf, clock))
        out.append(traces[key])
    return out


def wa_hls4ml_predict(frame: pd.DataFrame) -> pd.DataFrame:
    """Our model's value of each wa-hls4ml target (``WA_HLS4ML_ALLOWED_MEDIAN_APE``) for every row."""
    rows = [{m: t.metrics.values[m] for m in WA_HLS4ML_ALLOWED_MEDIAN_APE} for t in wa_hls4ml_traces(frame)]
    return pd.DataFrame(rows, index=frame.index)


def wa_hls4ml_errors(frame: pd.DataFrame, predicted: pd.DataFrame) -> pd.DataFrame:
    """Median and p90 absolute percentage error per target, on the calibration and the test halves
    (``surrogates.truth.wa_hls4ml.network_split``: networks split by a stable hash, never rows)."""
    test = network_split(frame)
    table = []
    for metric, limit in WA_HLS4ML_ALLOWED_MEDIAN_APE.items():
        truth = frame[metric].to_numpy(dtype=float)
        ape = np.abs(predicted[metric].to_numpy() - truth) / np.maximum(np.abs(truth), 1e-9)
        ape = np.where(truth == 0, np.where(predicted[metric].to_numpy() == 0, 0.0, 1.0), ape)
        for half, mask in (("calibration", ~test), ("test", test)):
            sel = ape[mask]
            table.append(
                {
                    "target": metric,
                    "half": half,
                    "rows": int(sel.size),
                    "median_ape_%": 100 * float(np.median(sel)),
                    "p90_ape_%": 100 * float(np.quantile(sel, 0.9)),
                    "limit_%": 100 * limit,
                }
            )
    return pd.DataFrame(table)
