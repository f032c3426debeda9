"""A synthetic points frame shaped like a large systolic grid's, to measure the report at scale.

Why here: the report's browser test and ``benchmarks/report_scale.py`` build the same million-point frame
without a sweep; the columns are the ones ``dse.finish`` hands ``write_report`` (identity, status,
feasibility, front flag, parameters, every metric and the energy and area breakdowns). The metrics come
from a toy roofline, not a hardware model: only their spread and correlations matter here.
"""

from __future__ import annotations

import moocore
import numpy as np
import pandas as pd

from dse.objectives import Constraint, Objective

SYNTHETIC_OBJECTIVES = (Objective("latency_ms", "min"), Objective("energy_mj", "min"), Objective("area_mm2", "min"))
SYNTHETIC_CONSTRAINTS = (Constraint("area_mm2", high=20.0),)
SYNTHETIC_PARAMS = {
    "rows": (4, 8, 12, 16, 24, 32, 48, 64, 96, 128),
    "cols": (4, 8, 12, 16, 24, 32, 48, 64, 96, 128),
    "dataflow": ("ws", "os", "is"),
    "sram_kib": (48, 96, 192, 384, 768, 1536, 3072),
    "dram_gbps": (6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6, 819.2),
    "freq_mhz": (400, 500, 600, 700, 800, 900, 1000, 1100, 1200, 1300, 1400, 1500),
    "vector_lanes": (0, 16, 64, 256, 1024),
}
DATAFLOW_EFFICIENCY = {"ws": 0.85, "os": 0.75, "is": 0.65}
NETWORK_MACS = 4.1e9  # ResNet-50 at 224x224
NETWORK_BYTES = 26e6  # its int8 weights and activations, read once when they fit
FAILED_SHARE = 0.002


def synthetic_points(count: int, seed: int = 0) -> pd.DataFrame:
    """``count`` random designs of the grid above, evaluated by the toy model; a few failed; the feasible front
    flagged over ``SYNTHETIC_OBJECTIVES`` under ``SYNTHETIC_CONSTRAINTS``."""
    rng = np.random.default_rng(seed)
    params = {name: np.asarray(grid)[rng.integers(0, len(grid), count)] for name, grid in SYNTHETIC_PARAMS.items()}
    pes = (params["rows"] * params["cols"]).astype(float)
    efficiency = pd.Series(params["dataflow"]).map(DATAFLOW_EFFICIENCY).to_numpy() * rng.uniform(0.7, 1.0, count)
    spill = np.maximum(1.0, 6e5 / (params["sram_kib"] * 1024.0))
    dram_bytes = NETWORK_BYTES * spill
    compute_s = NETWORK_MACS / (pes * efficiency * params["freq_mhz"] * 1e6)
    memory_s = dram_bytes / (params["dram_gbps"] * 1e9)
    latency_ms = (np.maximum(compute_s, memory_s) + 0.3 * np.minimum(compute_s, memory_s)) * 1e3
    energy_mj = {
        "mac": NETWORK_MACS * 0.2e-9 * rng.uniform(0.95, 1.05, count),
        "sram": NETWORK_MACS * 1.1e-9 * (1 + np.log2(params["sram_kib"] / 48.0) * 0.12),
        "dram": dram_bytes * 20e-9,
        "vector": params["vector_lanes"] * 2e-4 + 0.05,
        "leakage": latency_ms * (pes * 2e-5 + params["sram_kib"] * 1e-5),
    }
    area_mm2 = {
        "pe_array": pes * 1.4e-3,
        "sram": params["sram_kib"] * 2.4e-3,
        "vector": params["vector_lanes"] * 2.5e-3,
        "wiring": 0.4 + np.sqrt(pes) * 0.01,
    }
    energy, area = sum(energy_mj.values()), sum(area_mm2.values())
    seconds = latency_ms * 1e-3
    frame = pd.DataFrame(
        {
            "point_id": [f"{v:012x}" for v in rng.integers(0, 2**48, count)],
            "seq": np.arange(count),
            "status": "ok",
            "reason": None,
            **params,
            "latency_ms": latency_ms,
            "latency_cycles": np.round(seconds * params["freq_mhz"] * 1e6),
            "throughput_ips": 1.0 / seconds,
            "energy_mj": energy,
            "edp": energy * latency_ms,
            "area_mm2": area,
            "power_w": energy * 1e-3 / seconds,
            "utilization": compute_s / seconds * efficiency,
            "dram_mb": dram_bytes / 1e6,
            "tops_per_w": 2 * NETWORK_MACS / (energy * 1e-3) / 1e12,
            **{f"energy_{name}_mj": values for name, values in energy_mj.items()},
            **{f"area_{name}_mm2": values for name, values in area_mm2.items()},
        }
    )
    failed = rng.random(count) < FAILED_SHARE
    metric_columns = [c for c in frame.columns if c not in ("point_id", "seq", "status", "reason", *params)]
    frame.loc[failed, metric_columns] = np.nan
    frame.loc[failed, "status"] = "failed"
    frame.loc[failed, "reason"] = "MappingError: a layer's weights do not fit the scratchpad"
    feasible = ~failed & (area <= SYNTHETIC_CONSTRAINTS[0].high)
    frame["feasible"] = feasible
    pareto = np.zeros(count, dtype=bool)
    values = frame.loc[feasible, [o.metric for o in SYNTHETIC_OBJECTIVES]].to_numpy(dtype=float)
    pareto[np.flatnonzero(feasible)] = moocore.is_nondominated(values, keep_weakly=True)
    frame["pareto"] = pareto
    return frame
