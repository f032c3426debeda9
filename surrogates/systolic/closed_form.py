"""The surrogates' closed-form baseline: the systolic model's own cost over arrays of (design, op)
pairs (``pair_costs``) and its sums per design (the design-level surrogate's rows).

The models learn *ratios to this baseline* (``surrogates.learning.to_target``). Array ops go through
``hwmodels.systolic.batch.gemm_cost_arrays``: exact for the default ``shared`` DRAM, with stand-ins
where the scalar model walks a sequence (the os filter's epoch rule, SCALE-Sim's USER/CALC replays);
``est_approximate`` marks those pairs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from hwmodels.systolic.batch import gemm_cost_arrays
from hwmodels.systolic.cost import vector_busy_cycles
from hwmodels.systolic.pricing import PE_ACTIONS, conv_window, pe_reuse, pe_storage_pj_per_mac, stationary_words
from surrogates.systolic.tables import ARCH_FEATURES, DATAFLOWS, ArchTable, OpTable
from surrogates.systolic.user_mode_closed_form import USER_MODE_DATAFLOWS, user_mode_pair_costs
from templates.systolic import DRAM_MODES, PE_SCRATCHPADS

# raw per-pair figures of the closed-form baseline (``pair_costs``): stored in datasets next to the
# features, summed per design by the design-level surrogate
PAIR_COLUMNS = (
    "est_cycles",
    "est_energy_pj",
    "est_compute_cycles",
    "est_vector_cycles",
    "est_stall_cycles",
    "est_fill_cycles",
    "est_approximate",
)


def pair_costs(ops: OpTable, archs: ArchTable, totals: bool = False) -> dict[str, np.ndarray]:
    """The closed-form baseline of every (design, op) pair: ``PAIR_COLUMNS`` as (designs, ops) arrays,
    or with ``totals`` their sums over each design's ops (times multiplicity; ``est_approximate``
    weighted by cycles) as (designs,) arrays without building the pair arrays.

    Array ops go through ``hwmodels.systolic.batch.gemm_cost_arrays`` one (dataflow, DRAM mode) group of
    designs at a time; vector ops follow ``hwmodels.systolic.cost.vector_op_cost``; a fused op has no
    latency of its own but pays for its ALU work and traffic. Energy is ``SystolicModel``'s: accesses
    x catalog energies (``hwmodels.systolic.pricing``) + leakage x cycles.
    """
    a, o = archs.columns, ops.columns
    nd, no = len(archs), len(ops)
    out = {name: np.zeros(nd if totals else (nd, no)) for name in PAIR_COLUMNS}
    leak = a["_leak_w_per_mm2"] * a["_area_total"] / a["_freq"] * 1e6  # pJ per cycle

    def emit(rows: np.ndarray | slice, cols: np.ndarray, values: dict[str, Any], energy: Any) -> None:
        """Store one block of pairs; ``energy`` is [(per-design price, per-pair count)...] plus cycles x leak."""
        values = {**values, "est_approximate": values["est_approximate"] * values["est_cycles"]} if totals else values
        count = ops.count[cols]
        if totals:  # blocks of array and vector ops add up
            for name, value in values.items():
                out[name][rows] += np.asarray(value, dtype=float) @ count
            total = (values["est_cycles"] @ count) * leak[rows]
            for price, amount in energy:
                total = total + price * (amount @ count)
            out["est_energy_pj"][rows] += total
        else:
            for name, value in values.items():
                out[name][_block_index(rows, cols)] = value
            total = values["est_cycles"] * leak[rows, None]
            for price, amount in energy:
                total = total + price[:, None] * amount
            out["est_energy_pj"][_block_index(rows, cols)] = total

    if ops.gemms is not None:
        cols = ops.array_index
        macs = o["_macs"][cols]
        group = a["_dataflow"] * len(DRAM_MODES) + a["_mode"].astype(int)
        present = np.unique(group)
        for code in present:
            rows = np.flatnonzero(group == code) if len(present) > 1 else slice(None)
            df, mode = DATAFLOWS[code // len(DRAM_MODES)], DRAM_MODES[code % len(DRAM_MODES)]
            prices = ("_e_mac", "_e_sram_if", "_e_sram_f", "_e_sram_of", "_e_dram", "_e_pe_mac", "_e_pe_load")
            design = {name: a[name][rows] for name in prices}
            c = gemm_cost_arrays(
                ops.gemms,
                df,
                mode,
                *(a[name][rows, None] for name in ("_rows", "_cols", "_ifmap_words", "_filter_words")),
                a["_ofmap_words"][rows, None],
                a["_words_per_cycle"][rows, None],
            )
            if mode == "per_operand" and df in USER_MODE_DATAFLOWS:  # SCALE-Sim USER's walk (user_mode_closed_form)
                user = ("_rows", "_cols", "_ifmap_words", "_filter_words", "_words_per_cycle")
                c = user_mode_pair_costs(c, ops.gemms, df, *(a[name][rows] for name in user))
            array = (c["ifmap_sram_reads"], c["filter_sram_reads"], c["ofmap_sram_writes"])
            reused, pe_mac = scratchpad_reuse(a, rows, df, c, ops)
            emit(
                rows,
                cols,
                {
                    "est_cycles": c["cycles"],
                    "est_compute_cycles": c["compute_cycles"],
                    "est_fill_cycles": c["fill_cycles"] + c["tail_cycles"],
                    "est_stall_cycles": c["busy_cycles"] - c["compute_cycles"],
                    "est_approximate": c["approximate"],
                },
                [
                    (design["_e_mac"], np.broadcast_to(macs, c["cycles"].shape)),
                    (design["_e_sram_if"], reused[0] + c["ifmap_dram_reads"]),
                    (design["_e_sram_f"], reused[1] + c["filter_dram_reads"]),
                    (design["_e_sram_of"], reused[2] + c["ofmap_dram_writes"]),
                    (design["_e_dram"], c["ifmap_dram_reads"] + c["filter_dram_reads"] + c["ofmap_dram_writes"]),
                    pe_mac(design["_e_pe_mac"], np.broadcast_to(macs, c["cycles"].shape)),
                    (design["_e_pe_load"], stationary_words(df, *array)),
                ],
            )
    vector = np.flatnonzero(~o["_array"])
    if len(vector):
        reads, writes, flops = o["_vec_reads"][vector], o["_vec_writes"][vector], o["_flops"][vector]
        live = o["fused"][vector] == 0  # a fused op runs in its producer's output pipeline
        compute = np.ceil(flops / a["_lanes"][:, None])
        busy = np.empty_like(compute)
        for code, dram_mode in enumerate(DRAM_MODES):
            rows = a["_mode"] == code
            if rows.any():
                bw = a["_words_per_cycle"][rows, None]
                busy[rows] = vector_busy_cycles(compute[rows], reads, writes, bw, dram_mode)
        shape = (nd, len(vector))
        emit(
            slice(None),
            vector,
            {
                "est_cycles": busy * live,
                "est_compute_cycles": np.zeros(shape),
                "est_vector_cycles": compute * live,
                "est_stall_cycles": (busy - compute) * live,
                "est_fill_cycles": np.zeros(shape),
                "est_approximate": np.zeros(shape),
            },
            [
                (a["_e_sram_if"] + a["_e_dram"], np.broadcast_to(reads + writes, shape)),
                (a["_e_alu"], np.broadcast_to(flops, shape)),
            ],
        )
    return out


def scratchpad_reuse(a: dict, rows: np.ndarray | slice, df: str, c: dict, ops: OpTable) -> tuple[tuple, Any]:
    """The array's SRAM streams (ifmap reads, filter reads, ofmap writes) of each (design, GEMM) pair after its
    PE scratchpads' reuse (``pe_reuse`` on the pair's folds and conv window), and a function giving the PE
    storage charge (price, count) at that reuse (``pe_storage_pj_per_mac``): the model's formulas, as
    ``gemm_energy_pj`` applies them. With one register per operand (every design here), the streams as they are."""
    array = (c["ifmap_sram_reads"], c["filter_sram_reads"], c["ofmap_sram_writes"])
    depths = tuple(a[f"_pe_{role}_words"][rows, None] for role in PE_SCRATCHPADS)
    if all(np.all(d == 1) for d in depths):
        return array, lambda price, macs: (price, macs)
    window = tuple(np.array([conv_window(g)[i] for g in ops.gemms.lowered], dtype=float)[None, :] for i in range(3))
    reuse = pe_reuse(df, c["row_folds"], c["col_folds"], depths, array, window)
    actions = {k: a[f"_{k}"][rows, None] for k in PE_ACTIONS}
    per_mac = pe_storage_pj_per_mac(df, a["_word_bytes"][rows, None], a["_acc_bytes"][rows, None], actions, reuse)
    ones = np.ones(np.shape(a["_e_pe_mac"][rows]))
    return reuse.streams(*array), lambda price, macs: (ones, per_mac * macs)


def _block_index(rows: np.ndarray | slice, cols: np.ndarray) -> tuple:
    """Index of the (rows, cols) block of a (designs, ops) array."""
    return (rows, cols) if isinstance(rows, slice) else np.ix_(rows, cols)


AGGREGATE_FEATURES = (
    "log_est_cycles_total",
    "log_est_energy_total",
    "frac_compute",
    "frac_vector",
    "frac_stall",
    "frac_fill",
    "frac_approximate",
    "util_array",
    "log_op_count",
)
DESIGN_FEATURES = ARCH_FEATURES + AGGREGATE_FEATURES


CHUNK_DESIGNS = 4096  # designs per chunk of (design, op) arrays: a few hundred KiB each, cache-resident


def batch_design_features(ops: OpTable, archs: ArchTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``design_features`` for a batch of designs, a cache-sized chunk of designs at a time, on every core
    (numpy releases the GIL inside its array loops, so threads run chunks in parallel)."""

    def chunk(start: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        part = archs.slice(start, start + CHUNK_DESIGNS)
        return design_features(pair_costs(ops, part, totals=True), part.columns, ops.columns, ops.count)

    starts = range(0, len(archs), CHUNK_DESIGNS)
    if len(starts) == 1:
        parts = [chunk(0)]
    else:
        with ThreadPoolExecutor(max_workers=min(len(starts), os.cpu_count() or 1)) as pool:
            parts = list(pool.map(chunk, starts))
    rows, cycles, energy = zip(*parts)
    return np.vstack(rows), np.concatenate(cycles), np.concatenate(energy)


def design_totals(block: Any, count: np.ndarray) -> dict[str, np.ndarray]:
    """``pair_costs(..., totals=True)`` from (designs, ops) pair columns (a dataset frame's)."""
    sums = {name: block(name) @ count for name in PAIR_COLUMNS}
    sums["est_approximate"] = (block("est_approximate") * block("est_cycles")) @ count
    return sums


def design_features(
    totals: Mapping[str, np.ndarray],
    arch: Mapping[str, np.ndarray],
    op_columns: Mapping[str, np.ndarray],
    count: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Design-level rows (designs, len(DESIGN_FEATURES)) and the baseline's cycle and energy totals.

    ``totals`` are the per-design sums of ``pair_costs``; ``arch`` maps ARCH_FEATURES to (designs,)
    arrays; ``op_columns`` gives op_is_conv, op_is_matmul and log_macs per op, ``count`` the ops'
    multiplicity. The same code serves a batch being predicted and a dataset frame being trained on.
    """
    cycles, energy = totals["est_cycles"], totals["est_energy_pj"]
    denom = cycles + 1.0
    array = op_columns["op_is_conv"] + op_columns["op_is_matmul"]
    array_macs = float((array * (np.exp2(op_columns["log_macs"]) - 1.0)) @ count)
    pe = np.exp2(arch["log_rows"] + arch["log_cols"])
    agg = {
        "log_est_cycles_total": np.log2(denom),
        "log_est_energy_total": np.log2(energy + 1.0),
        "frac_compute": totals["est_compute_cycles"] / denom,
        "frac_vector": totals["est_vector_cycles"] / denom,
        "frac_stall": totals["est_stall_cycles"] / denom,
        "frac_fill": totals["est_fill_cycles"] / denom,
        "frac_approximate": totals["est_approximate"] / denom,
        "util_array": array_macs / (totals["est_compute_cycles"] * pe + 1.0),
        "log_op_count": np.full(len(cycles), np.log2(count.sum() + 1.0)),
    }
    rows = np.column_stack([arch[name] for name in ARCH_FEATURES] + [agg[name] for name in AGGREGATE_FEATURES])
    return rows, cycles, energy
