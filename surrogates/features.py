"""Design features for the surrogates: one row per (design point, op), built with numpy in batches.

A surrogate is only fast if its features are: the op side (loop dims, lowered GEMM, tensor words,
fusion) is tabulated once per graph, the design side once per point, and their cross features
(folds, stall-free compute cycles, DRAM traffic over bandwidth) by broadcasting the two.

The models learn *ratios to a closed-form baseline*: ``log((value + 1) / (baseline + 1))``. The
baseline of an op's cycles and energy is the systolic model's own closed forms evaluated over arrays
(``hwmodels.systolic.gemm_cost_arrays``): exact for the default ``shared`` DRAM, with stand-ins where
the scalar model walks a sequence (the os filter's epoch rule, SCALE-Sim's USER/CALC replays); the
``est_approximate`` feature marks those pairs. What the baseline misses is what the model learns.
``benchmarks/surrogate_accuracy.py`` prints the baseline alone next to the models, so what the
learning adds is visible.

Schema: ``FEATURES`` lists every feature column in order; a saved model records it and refuses data
or code whose schema differs.
"""

from __future__ import annotations

import functools
import itertools
import operator
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.graph import Graph, OpKind
from hwmodels.systolic import INTEGRATION_OVERHEAD, GemmShapes, bank_kib, gemm_cost_arrays, vector_busy_cycles

SCHEMA_VERSION = 3
OP_KINDS = tuple(k.value for k in OpKind)
DATAFLOWS = ("os", "ws", "is")
DRAM_MODES = ("shared", "per_operand", "unlimited")
SUPPORTED_TEMPLATES = ("systolic",)

# op-side columns (one row per distinct op of a graph)
OP_FEATURES = (
    *(f"op_is_{k}" for k in OP_KINDS),
    "log_gemm_m",
    "log_gemm_k",
    "log_gemm_n",
    "log_gemm_count",
    "log_macs",
    "log_flops",
    "log_in_words",
    "log_weight_words",
    "log_out_words",
    "log_unique_in_words",
    "in_reuse",
    "conv_r",
    "conv_stride",
    "resident_output",
    "fused",
)
# design-side columns (one row per design point)
ARCH_FEATURES = (
    "log_rows",
    "log_cols",
    *(f"df_{d}" for d in DATAFLOWS),
    "log_ifmap_kib",
    "log_filter_kib",
    "log_ofmap_kib",
    "log_dram_gbps",
    "log_freq_mhz",
    "bits",
    "log_vector_lanes",
    *(f"dram_{m}" for m in DRAM_MODES),
    "tech_nm",
    "log_dram_words_per_cycle",
)
# cross columns (design x op)
CROSS_FEATURES = (
    "log_row_folds",
    "log_col_folds",
    "log_fold_len",
    "log_compute_cycles",
    "log_vector_cycles",
    "log_memory_cycles",
    "log_roofline_cycles",
    "memory_over_compute",
    "log_in_over_ifmap_sram",
    "log_weight_over_filter_sram",
    "log_out_over_ofmap_sram",
    "log_fill_cycles",
    "log_refetch_words",
    "log_energy_floor_pj",
    "log_est_cycles",
    "log_est_energy_pj",
    "est_stall_share",
    "est_fill_share",
    "est_approximate",
)
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
FEATURES = OP_FEATURES + ARCH_FEATURES + CROSS_FEATURES
AREA_FEATURES = ARCH_FEATURES + (
    "log_pe_area_mm2",
    "log_sram_area_mm2_per_kib",
    "log_alu_area_mm2",
    "log_area_floor_mm2",
)


def _log2(x: np.ndarray | float) -> np.ndarray:
    return np.log2(np.maximum(x, 0.0) + 1.0)


# ----------------------------------------------------------------------------------------------- ops


@dataclass
class OpTable:
    """The distinct ops of one graph (same shape and same fusion = same cost) with their multiplicity."""

    graph_name: str
    names: list[str]  # one representative op name per row
    members: list[list[str]]  # every op name the row stands for
    count: np.ndarray  # multiplicity
    columns: dict[str, np.ndarray]  # OP_FEATURES plus raw helpers (macs, words)
    array_index: np.ndarray  # rows that run on the MAC array
    gemms: GemmShapes | None  # their lowered GEMMs (None when there are none)

    def __len__(self) -> int:
        return len(self.names)

    def matrix(self) -> np.ndarray:
        return np.column_stack([self.columns[name] for name in OP_FEATURES])


def op_table(graph: Graph) -> OpTable:
    """Tabulate the ops of ``graph`` as the systolic fold mapper lowers them (fusion included)."""
    from mappers.systolic import ARRAY_KINDS, SystolicFoldMapper, lower_op
    from templates.systolic import SystolicTemplate

    def words(names: Sequence[str]) -> float:
        return float(sum(graph.tensors[t].numel for t in names))

    mapping = SystolicFoldMapper().map(graph, SystolicTemplate().instantiate({}))  # fusion is arch-independent
    rows: dict[tuple, dict[str, Any]] = {}
    for op in graph.ops:
        om = mapping.ops[op.name]
        resident = set(om.resident_inputs)
        in_words = sum(graph.tensors[t].numel for t in op.inputs if t not in resident)
        weight_words = sum(graph.tensors[t].numel for t in op.weights)
        out_words = sum(graph.tensors[t].numel for t in op.outputs)
        fused = bool(om.extra.get("fused_into"))
        key = (op.shape_key(), bool(om.resident_output), fused, in_words, weight_words, out_words)
        if key in rows:
            rows[key]["members"].append(op.name)
            continue
        row: dict[str, Any] = {f"op_is_{k}": float(op.kind.value == k) for k in OP_KINDS}
        gemm = None
        if op.kind in ARRAY_KINDS:
            gemm = lower_op(op)
            g = gemm.geometry
            m, k, n, count = gemm.M, gemm.K, gemm.N, gemm.count
            unique_in = g.unique_inputs * count
            reuse = g.references / max(1, g.unique_inputs)
            conv_r, stride = g.R, g.stride_h
        else:
            m = k = n = count = 0
            unique_in, reuse, conv_r, stride = in_words, 1.0, 0, 0
        row.update(
            {
                "log_gemm_m": _log2(m),
                "log_gemm_k": _log2(k),
                "log_gemm_n": _log2(n),
                "log_gemm_count": _log2(count),
                "log_macs": _log2(op.macs),
                "log_flops": _log2(op.flops),
                "log_in_words": _log2(in_words),
                "log_weight_words": _log2(weight_words),
                "log_out_words": _log2(out_words),
                "log_unique_in_words": _log2(unique_in),
                "in_reuse": float(reuse),
                "conv_r": float(conv_r),
                "conv_stride": float(stride),
                "resident_output": float(om.resident_output),
                "fused": float(fused),
                # raw helpers for the cross features
                "_array": op.kind in ARRAY_KINDS,
                "_m": m,
                "_k": k,
                "_n": n,
                "_count": count,
                "_macs": op.macs,
                "_flops": op.flops,
                "_unique_in": unique_in,
                "_weights": weight_words if op.kind not in ARRAY_KINDS else k * n * count,
                "_out": 0 if om.resident_output else out_words,
                "_in": in_words,
                # what the vector unit reads (inputs not on chip, weights) and writes (every output)
                "_vec_reads": words([t for t in op.inputs if t not in resident]) + words(op.weights),
                "_vec_writes": words(op.outputs),
                "members": [op.name],
                "gemm": gemm,
            }
        )
        rows[key] = row
    ordered = list(rows.values())
    columns = (
        {
            name: np.array([r[name] for r in ordered], dtype=bool if name == "_array" else float)
            for name in ordered[0]
            if name not in ("members", "gemm")
        }
        if ordered
        else {}
    )
    array_index = np.array([i for i, r in enumerate(ordered) if r["gemm"] is not None], dtype=int)
    gemms = [ordered[i]["gemm"] for i in array_index]
    return OpTable(
        graph_name=graph.name,
        names=[r["members"][0] for r in ordered],
        members=[r["members"] for r in ordered],
        count=np.array([len(r["members"]) for r in ordered], dtype=float),
        columns=columns,
        array_index=array_index,
        gemms=GemmShapes.of(gemms, [not ordered[i]["resident_output"] for i in array_index]) if gemms else None,
    )


# ----------------------------------------------------------------------------------------------- designs


@dataclass
class ArchTable:
    """Design-side columns for a batch of design points."""

    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    def matrix(self, names: Sequence[str] = ARCH_FEATURES) -> np.ndarray:
        return np.column_stack([self.columns[name] for name in names])

    def slice(self, start: int, stop: int) -> ArchTable:
        return ArchTable({name: values[start:stop] for name, values in self.columns.items()})


def arch_table(template_kind: str, points: Sequence[Mapping[str, Any]], fixed: Mapping[str, Any]) -> ArchTable:
    """Tabulate the design features of every point, vectorised over the batch.

    The values are those ``template.instantiate`` gives (a test compares the two on random points);
    a point the template refuses is instantiated on its own so the error is the template's own message.
    """
    from dse.errors import UserError
    from dse.registry import family
    from templates.systolic import PRECISIONS

    if template_kind not in SUPPORTED_TEMPLATES:
        raise UserError(
            f"no surrogate features for template {template_kind!r}; supported: {', '.join(SUPPORTED_TEMPLATES)}",
            where="template.kind",
        )
    template = family(template_kind).template()
    if not points:
        raise UserError("no design points to predict", where="points")
    cols = template.resolve_columns(points, fixed)
    n = len(points)

    def refuse(mask: np.ndarray) -> None:
        if mask.any():
            # the template's own message for the first refused point
            template.instantiate({**fixed, **points[int(np.argmax(mask))]})
            raise AssertionError("a point the vectorised checks refused was accepted by instantiate")

    def given(name: str) -> np.ndarray:
        column = cols[name]
        if isinstance(column, np.ndarray):
            return np.ones(n, dtype=bool)
        return np.fromiter(map(operator.is_not, column, itertools.repeat(None)), dtype=bool, count=n)

    def number(name: str, default: float) -> np.ndarray:
        column = cols[name]
        if isinstance(column, np.ndarray):
            return column
        return np.array([default if v is None else v for v in column], dtype=float)

    individual = given("ifmap_sram_kib") | given("filter_sram_kib") | given("ofmap_sram_kib")
    scratchpad, scratchpads = _codes(cols["scratchpad"])
    unified = scratchpad == scratchpads.index("unified") if "unified" in scratchpads else np.zeros(n, dtype=bool)
    refuse(unified & individual)
    total = given("sram_kib")
    refuse(total & individual)
    each = number("sram_kib", 0.0) / 3
    sizes = [
        np.where(total, each, number(name, 64.0)) for name in ("ifmap_sram_kib", "filter_sram_kib", "ofmap_sram_kib")
    ]
    precision, precisions = _codes(cols["precision"])
    bits = np.array([PRECISIONS[p] for p in precisions], dtype=float)[precision]
    word_bytes = bits // 8
    for kib in sizes:
        refuse(kib * 1024 / word_bytes < 200)
    from hwmodels.catalogs.tech import tech_names

    tech_code, techs = _codes(cols["tech"])
    known = set(tech_names())
    refuse(np.array([t not in known for t in techs], dtype=bool)[tech_code])
    rows, cols_ = number("rows", 0), number("cols", 0)
    lanes = number("vector_lanes", 0)
    lanes = np.where(lanes == 0, cols_, lanes)
    dram_gbps, freq = number("dram_gbps", 0), number("freq_mhz", 0)
    words_per_cycle = dram_gbps * 1e3 / freq / word_bytes
    dataflow, _ = _codes(cols["dataflow"], DATAFLOWS)
    mode, _ = _codes(cols["dram_mode"], DRAM_MODES)
    # catalog constants once per (tech, precision) present and per technology for the SRAM energies
    pair = tech_code * len(precisions) + precision
    present, pair_index = np.unique(pair, return_inverse=True)
    table = [_tech_constants(techs[code // len(precisions)], precisions[code % len(precisions)]) for code in present]
    consts = np.array(table, dtype=float)[pair_index]
    e_mac, e_alu, e_dram, pe_area, sram_area, alu_area, leak, node_nm = consts.T
    tech = (tech_code, techs)
    e_sram = [_sram_pj_per_byte(tech, kib) for kib in bank_kib(*sizes, unified)]
    sram_kib = sizes[0] + sizes[1] + sizes[2]
    area_floor = rows * cols_ * pe_area + sram_kib * sram_area + lanes * alu_area
    columns = {
        "log_rows": np.log2(rows),
        "log_cols": np.log2(cols_),
        **{f"df_{d}": (dataflow == i).astype(float) for i, d in enumerate(DATAFLOWS)},
        "log_ifmap_kib": np.log2(sizes[0]),
        "log_filter_kib": np.log2(sizes[1]),
        "log_ofmap_kib": np.log2(sizes[2]),
        "log_dram_gbps": np.log2(dram_gbps),
        "log_freq_mhz": np.log2(freq),
        "bits": bits,
        "log_vector_lanes": np.log2(lanes),
        **{f"dram_{m}": (mode == i).astype(float) for i, m in enumerate(DRAM_MODES)},
        "tech_nm": node_nm,
        "log_dram_words_per_cycle": np.log2(words_per_cycle),
        "log_pe_area_mm2": np.log2(pe_area * 1e6),
        "log_sram_area_mm2_per_kib": np.log2(sram_area * 1e6),
        "log_alu_area_mm2": np.log2(alu_area * 1e6),
        "log_area_floor_mm2": np.log2(area_floor),
        "_rows": rows,
        "_cols": cols_,
        "_lanes": lanes,
        "_words_per_cycle": words_per_cycle,
        "_freq": freq,
        "_bits": bits,
        "_ifmap_words": np.floor(sizes[0] * 1024 / word_bytes),
        "_filter_words": np.floor(sizes[1] * 1024 / word_bytes),
        "_ofmap_words": np.floor(sizes[2] * 1024 / word_bytes),
        "_e_mac": e_mac,
        "_e_alu": e_alu,
        "_e_sram": np.minimum(np.minimum(e_sram[0], e_sram[1]), e_sram[2]) * word_bytes,
        "_e_sram_if": e_sram[0] * word_bytes,
        "_e_sram_f": e_sram[1] * word_bytes,
        "_e_sram_of": e_sram[2] * word_bytes,
        "_area_floor": area_floor,
        "_area_total": area_floor * (1.0 + INTEGRATION_OVERHEAD),
        "_e_dram": e_dram * word_bytes,
        "_leak_w_per_mm2": leak,
        "_word_bytes": word_bytes,
        "_mode": mode.astype(float),
        "_dataflow": dataflow,
    }
    return ArchTable(columns)


@functools.lru_cache(maxsize=256)
def _tech_constants(tech: str, precision: str) -> tuple:
    """Catalog energies (pJ) and areas (mm^2) of one technology at one precision."""
    from hwmodels.catalogs.tech import get_tech
    from templates.systolic import PRECISIONS

    node = get_tech(tech)
    bits = PRECISIONS[precision]
    fmt = "int" if precision.startswith("int") else "fp"
    return (
        node.mac_energy_pj(bits, fmt),
        node.alu_energy_pj(bits, fmt),
        node.dram_energy_pj(1.0),
        node.pe_area_mm2(bits, fmt),
        node.sram_area_mm2(1.0),
        node.alu_area_mm2(bits, fmt),
        node.leakage_w_per_mm2.value,
        float(node.node_nm),
    )


def _sram_pj_per_byte(tech: tuple[np.ndarray, list[str]], kib: np.ndarray) -> np.ndarray:
    """The catalog's SRAM energy per byte of each (technology, capacity): one array call per technology.
    ``tech`` is (code per design, technology names) as ``_codes`` gives."""
    from hwmodels.catalogs.tech import get_tech

    codes, names = tech
    if len(names) == 1:
        return np.asarray(get_tech(names[0]).sram_energy_pj_per_byte(kib), dtype=float)
    out = np.empty(len(kib))
    for code, name in enumerate(names):
        mask = codes == code
        out[mask] = get_tech(name).sram_energy_pj_per_byte(kib[mask])
    return out


def _codes(column: Sequence[Any], choices: Sequence[Any] | None = None) -> tuple[np.ndarray, list[Any]]:
    """(index of each value in ``choices``, choices) for a column of labels; choices default to the
    distinct values in order of appearance. One dictionary look-up per value."""
    choices = list(dict.fromkeys(column)) if choices is None else list(choices)
    lookup = {value: i for i, value in enumerate(choices)}
    return np.fromiter(map(lookup.__getitem__, column), dtype=np.intp, count=len(column)), choices


# ----------------------------------------------------------------------------------------------- baseline


def pair_costs(ops: OpTable, archs: ArchTable, totals: bool = False) -> dict[str, np.ndarray]:
    """The closed-form baseline of every (design, op) pair: ``PAIR_COLUMNS`` as (designs, ops) arrays,
    or with ``totals`` their sums over each design's ops (times multiplicity; ``est_approximate``
    weighted by cycles) as (designs,) arrays without building the pair arrays.

    Array ops go through ``hwmodels.systolic.gemm_cost_arrays`` one (dataflow, DRAM mode) group of
    designs at a time; vector ops follow ``hwmodels.systolic.vector_op_cost``; a fused op has no
    latency of its own but pays for its ALU work and traffic. Energy is ``SystolicModel``'s: accesses
    x catalog energies + leakage x cycles.
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
            design = {name: a[name][rows] for name in ("_e_mac", "_e_sram_if", "_e_sram_f", "_e_sram_of", "_e_dram")}
            c = gemm_cost_arrays(
                ops.gemms,
                df,
                mode,
                *(a[name][rows, None] for name in ("_rows", "_cols", "_ifmap_words", "_filter_words")),
                a["_ofmap_words"][rows, None],
                a["_words_per_cycle"][rows, None],
            )
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
                    (design["_e_sram_if"], c["ifmap_sram_reads"] + c["ifmap_dram_reads"]),
                    (design["_e_sram_f"], c["filter_sram_reads"] + c["filter_dram_reads"]),
                    (design["_e_sram_of"], c["ofmap_sram_writes"] + c["ofmap_dram_writes"]),
                    (design["_e_dram"], c["ifmap_dram_reads"] + c["filter_dram_reads"] + c["ofmap_dram_writes"]),
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


def _block_index(rows: np.ndarray | slice, cols: np.ndarray) -> tuple:
    """Index of the (rows, cols) block of a (designs, ops) array."""
    return (rows, cols) if isinstance(rows, slice) else np.ix_(rows, cols)


# ----------------------------------------------------------------------------------------------- cross


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
    m, k, n, count = row(o["_m"]), row(o["_k"]), row(o["_n"]), row(o["_count"])
    # (Sr, Sc, T) per dataflow: os (M, N, K), ws (K, N, M), is (K, M, N) -- mappers.systolic.spatial_dims
    sr = np.where(df == 0, m, k)
    sc = np.where(df == 2, m, n)
    t = np.where(df == 0, k, np.where(df == 1, m, n))
    row_folds = np.ceil(sr / rows)
    col_folds = np.ceil(sc / cols)
    fold_len = t + rows + cols - 2 + np.where(df == 0, 0, rows)
    array = row(o["_array"])
    compute = np.where(array, count * row_folds * col_folds * fold_len, 0.0)
    vector = np.where(array, 0.0, np.ceil(row(o["_flops"]) / col(a["_lanes"])))
    unique_in, weights, out = row(o["_unique_in"]), row(o["_weights"]), row(o["_out"])
    words = np.where(array, unique_in + weights + out, row(o["_in"]) + out)
    # capacity-aware traffic: an operand larger than half its SRAM is streamed again per fold
    half_if, half_f = col(a["_ifmap_words"]) / 2, col(a["_filter_words"]) / 2
    per_copy_in = unique_in / np.maximum(count, 1)
    in_passes = np.where((df != 2) & (per_copy_in >= half_if), col_folds, 1.0)
    filter_block = np.where(df == 0, k * np.minimum(cols, n), k * n)
    f_passes = np.where((df == 1) | (filter_block < half_f), 1.0, np.where(df == 0, row_folds, col_folds))
    refetch = np.where(array, unique_in * in_passes + weights * f_passes + out, words)
    words_per_cycle = col(a["_words_per_cycle"])
    unlimited = col(a["_mode"]) == DRAM_MODES.index("unlimited")
    memory = np.where(unlimited, 0.0, refetch / words_per_cycle)
    fill = np.where(
        array,
        (np.minimum(per_copy_in, half_if) + np.minimum(weights / np.maximum(count, 1), half_f)) / words_per_cycle,
        0.0,
    )
    fused = row(o["fused"]) > 0
    roofline = np.where(fused, 0.0, np.maximum(compute + vector, memory) + fill)
    # array-side SRAM accesses per dataflow (hwmodels.systolic.gemm_cost), all copies
    sram_if = count * np.where(df == 2, k * m, m * k * col_folds)
    sram_f = count * np.where(df == 1, k * n, np.where(df == 0, k * n * row_folds, n * k * col_folds))
    sram_of = count * m * n * np.where(df == 0, 1.0, row_folds)
    leak_pj_per_cycle = col(a["_leak_w_per_mm2"] * a["_area_floor"] / a["_freq"]) * 1e6
    energy_floor = (
        row(o["_macs"]) * col(a["_e_mac"])
        + np.where(array, 0.0, row(o["_flops"]) * col(a["_e_alu"]) + words * col(a["_e_sram_if"]))
        + np.where(
            array, sram_if * col(a["_e_sram_if"]) + sram_f * col(a["_e_sram_f"]) + sram_of * col(a["_e_sram_of"]), 0.0
        )
        + refetch * (col(a["_e_dram"]) + np.where(array, col(a["_e_sram_if"]), 0.0))
        + roofline * leak_pj_per_cycle
    )
    est = pair_costs(ops, archs)
    est_cycles = est["est_cycles"]
    cross = {
        "log_row_folds": _log2(np.where(array, row_folds, 0.0)),
        "log_col_folds": _log2(np.where(array, col_folds, 0.0)),
        "log_fold_len": _log2(np.where(array, fold_len, 0.0)),
        "log_compute_cycles": _log2(compute),
        "log_vector_cycles": _log2(vector),
        "log_memory_cycles": _log2(memory),
        "log_roofline_cycles": _log2(roofline),
        "memory_over_compute": np.log2((memory + 1.0) / (compute + vector + 1.0)),
        "log_in_over_ifmap_sram": np.log2((row(o["_unique_in"]) + 1.0) / col(a["_ifmap_words"])),
        "log_weight_over_filter_sram": np.log2((row(o["_weights"]) + 1.0) / col(a["_filter_words"])),
        "log_out_over_ofmap_sram": np.log2((row(o["_out"]) + 1.0) / col(a["_ofmap_words"])),
        "log_fill_cycles": _log2(fill),
        "log_refetch_words": _log2(refetch),
        "log_energy_floor_pj": _log2(energy_floor),
        "log_est_cycles": _log2(est_cycles),
        "log_est_energy_pj": _log2(est["est_energy_pj"]),
        "est_stall_share": est["est_stall_cycles"] / (est_cycles + 1.0),
        "est_fill_share": est["est_fill_cycles"] / (est_cycles + 1.0),
        "est_approximate": est["est_approximate"],
    }
    shape = (nd, no)
    return CrossFeatures(
        ops=ops, archs=archs, blocks={name: np.broadcast_to(value, shape) for name, value in {**cross, **est}.items()}
    )


# ----------------------------------------------------------------------------------------------- design level

# one row per design: its design features plus what its ops add up to (shares of the baseline's cycles)
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


def to_log_ratio(value: np.ndarray, base: np.ndarray) -> np.ndarray:
    """The surrogates' target: a value as a log ratio to its analytical baseline (+1 keeps zeros finite)."""
    return np.log((value + 1.0) / (base + 1.0))


def from_log_ratio(ratio: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Invert ``to_log_ratio``, clipped at zero."""
    return np.maximum(np.exp(ratio) * (base + 1.0) - 1.0, 0.0)


CHUNK_DESIGNS = 4096  # designs per chunk of (design, op) arrays: a few hundred KiB each, cache-resident


def batch_design_features(ops: OpTable, archs: ArchTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``design_features`` for a batch of designs, a cache-sized chunk of designs at a time, on every core
    (numpy releases the GIL inside its array loops, so threads run chunks in parallel)."""
    from concurrent.futures import ThreadPoolExecutor

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
