"""Design features for the surrogates: one row per (design point, op), built with numpy in batches.

A surrogate is only fast if its features are: the op side (loop dims, lowered GEMM, tensor words,
fusion) is tabulated once per graph, the design side once per point, and their cross features
(folds, operand size over SRAM size, the closed form's cycles, energy and shares) by broadcasting the two.

The models learn *ratios to a closed-form baseline*: ``log((value + 1) / (baseline + 1))``. The
baseline of an op's cycles and energy is the systolic model's own closed forms evaluated over arrays
(``hwmodels.systolic.batch.gemm_cost_arrays``, in ``surrogates.systolic.closed_form``): exact for the default
``shared`` DRAM, with stand-ins where the scalar model walks a sequence (the os filter's epoch rule,
SCALE-Sim's USER/CALC replays); the ``est_approximate`` feature marks those pairs. What the baseline
misses is what the model learns. ``benchmarks/surrogate_accuracy.py`` prints the baseline alone next
to the models, so what the learning adds is visible.

The op and design columns are ``surrogates.systolic.tables``'; this module crosses them. The names the
surrogates use are importable from here (``__all__``).

Schema: ``FEATURES`` lists every feature column in order; a saved model records it and refuses data
or code whose schema differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from surrogates.systolic.closed_form import (
    AGGREGATE_FEATURES,
    CHUNK_DESIGNS,
    DESIGN_FEATURES,
    PAIR_COLUMNS,
    batch_design_features,
    design_features,
    design_totals,
    pair_costs,
)
from surrogates.systolic.tables import (
    ARCH_FEATURES,
    DATAFLOWS,
    OP_FEATURES,
    OP_KINDS,
    SUPPORTED_TEMPLATES,
    ArchTable,
    OpTable,
    arch_table,
    label_codes,
    log2_plus_one,
    op_table,
)
from templates.systolic import DRAM_MODES

__all__ = [
    "AGGREGATE_FEATURES",
    "ARCH_FEATURES",
    "AREA_FEATURES",
    "CHUNK_DESIGNS",
    "CROSS_FEATURES",
    "DATAFLOWS",
    "DESIGN_FEATURES",
    "DRAM_MODES",
    "FEATURES",
    "OP_FEATURES",
    "OP_KINDS",
    "PAIR_COLUMNS",
    "SCHEMA_VERSION",
    "SUPPORTED_TEMPLATES",
    "ArchTable",
    "CrossFeatures",
    "OpTable",
    "arch_table",
    "area_matrix",
    "batch_design_features",
    "cross_features",
    "design_features",
    "design_totals",
    "label_codes",
    "op_table",
    "pair_costs",
    "schema",
]

SCHEMA_VERSION = 4  # 4: the roofline cross features (a cruder traffic model than the closed form) dropped
# cross columns (design x op)
CROSS_FEATURES = (
    "log_row_folds",
    "log_col_folds",
    "log_fold_len",
    "log_in_over_ifmap_sram",
    "log_weight_over_filter_sram",
    "log_out_over_ofmap_sram",
    "log_est_cycles",
    "log_est_energy_pj",
    "est_stall_share",
    "est_fill_share",
    "est_approximate",
)
FEATURES = OP_FEATURES + ARCH_FEATURES + CROSS_FEATURES
AREA_FEATURES = ARCH_FEATURES + (
    "log_pe_area_mm2",
    "log_sram_area_mm2_per_kib",
    "log_alu_area_mm2",
    "log_area_floor_mm2",
)


@dataclass
class CrossFeatures:
    """Features of every (design, op) pair as (designs, ops) blocks, plus the closed-form baselines.

    The full design-major matrix (one row per pair) is built only on request.
    """

    ops: OpTable
    archs: ArchTable
    blocks: dict[str, np.ndarray]  # CROSS_FEATURES and PAIR_COLUMNS: (designs, ops)

    @property
    def n_designs(self) -> int:
        return len(self.archs)

    @property
    def n_ops(self) -> int:
        return len(self.ops)

    @property
    def baseline_cycles(self) -> np.ndarray:
        """Per pair, design-major (the dataset's row order)."""
        return self.blocks["est_cycles"].reshape(-1)

    @property
    def baseline_energy_pj(self) -> np.ndarray:
        return self.blocks["est_energy_pj"].reshape(-1)

    def column(self, name: str) -> np.ndarray:
        """One feature as a (designs, ops) array (a broadcast view for op-only and design-only features)."""
        shape = (self.n_designs, self.n_ops)
        if name in self.blocks:
            return self.blocks[name]
        if name in self.ops.columns:
            return np.broadcast_to(self.ops.columns[name][None, :], shape)
        return np.broadcast_to(self.archs.columns[name][:, None], shape)

    def matrix(self) -> np.ndarray:
        """(designs x ops, len(FEATURES)), design-major: the per-op surrogate's input."""
        nd, no = self.n_designs, self.n_ops
        return np.stack([self.column(name) for name in FEATURES], axis=-1).reshape(nd * no, len(FEATURES))


def cross_features(ops: OpTable, archs: ArchTable) -> CrossFeatures:
    """Broadcast designs (axis 0) against ops (axis 1) and compute the cross columns."""
    a, o = archs.columns, ops.columns
    nd, no = len(archs), len(ops)

    def col(x: np.ndarray) -> np.ndarray:
        return x[:, None]

    def row(x: np.ndarray) -> np.ndarray:
        return x[None, :]

    rows, cols, df = col(a["_rows"]), col(a["_cols"]), col(a["_dataflow"])
    m, k, n = row(o["_m"]), row(o["_k"]), row(o["_n"])
    # (Sr, Sc, T) per dataflow: os (M, N, K), ws (K, N, M), is (K, M, N) -- hwmodels.systolic.compute.spatial_axes
    sr = np.where(df == 0, m, k)
    sc = np.where(df == 2, m, n)
    t = np.where(df == 0, k, np.where(df == 1, m, n))
    row_folds = np.ceil(sr / rows)
    col_folds = np.ceil(sc / cols)
    fold_len = t + rows + cols - 2 + np.where(df == 0, 0, rows)
    array = row(o["_array"])
    est = pair_costs(ops, archs)
    est_cycles = est["est_cycles"]
    cross = {
        "log_row_folds": log2_plus_one(np.where(array, row_folds, 0.0)),
        "log_col_folds": log2_plus_one(np.where(array, col_folds, 0.0)),
        "log_fold_len": log2_plus_one(np.where(array, fold_len, 0.0)),
        "log_in_over_ifmap_sram": np.log2((row(o["_unique_in"]) + 1.0) / col(a["_ifmap_words"])),
        "log_weight_over_filter_sram": np.log2((row(o["_weights"]) + 1.0) / col(a["_filter_words"])),
        "log_out_over_ofmap_sram": np.log2((row(o["_out"]) + 1.0) / col(a["_ofmap_words"])),
        "log_est_cycles": log2_plus_one(est_cycles),
        "log_est_energy_pj": log2_plus_one(est["est_energy_pj"]),
        "est_stall_share": est["est_stall_cycles"] / (est_cycles + 1.0),
        "est_fill_share": est["est_fill_cycles"] / (est_cycles + 1.0),
        "est_approximate": est["est_approximate"],
    }
    shape = (nd, no)
    return CrossFeatures(
        ops=ops, archs=archs, blocks={name: np.broadcast_to(value, shape) for name, value in {**cross, **est}.items()}
    )


def area_matrix(archs: ArchTable) -> np.ndarray:
    return archs.matrix(AREA_FEATURES)


def schema() -> dict[str, Any]:
    """What a model's inputs are: saved with it and compared on load."""
    return {
        "version": SCHEMA_VERSION,
        "features": list(FEATURES),
        "area_features": list(AREA_FEATURES),
        "design_features": list(DESIGN_FEATURES),
        "pair_columns": list(PAIR_COLUMNS),
        "templates": list(SUPPORTED_TEMPLATES),
    }
