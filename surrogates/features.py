"""Design features for the surrogates: one row per (design point, op), built with numpy in batches.

A surrogate is only fast if its features are: the op side (loop dims, lowered GEMM, tensor words,
fusion) is tabulated once per graph, the design side once per point, and their cross features
(folds, stall-free compute cycles, minimum DRAM traffic over bandwidth) by broadcasting the two.

The models learn *ratios to a roofline*: ``log((cycles + 1) / (roofline + 1))`` where roofline =
max(stall-free array cycles, minimum DRAM words / DRAM words per cycle). The roofline is a few
closed-form lines; everything it misses (re-fetches of operands that do not fit the SRAMs, fills,
drains, DRAM stalls) is what the model learns. ``benchmarks/surrogate_accuracy.py`` prints the
roofline alone next to the models so that what the learning adds is visible.

Schema: ``FEATURES`` lists every feature column in order; a saved model records it and refuses data
or code whose schema differs.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.graph import Graph, OpKind

SCHEMA_VERSION = 2
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

    def __len__(self) -> int:
        return len(self.names)

    def matrix(self) -> np.ndarray:
        return np.column_stack([self.columns[name] for name in OP_FEATURES])


def op_table(graph: Graph) -> OpTable:
    """Tabulate the ops of ``graph`` as the systolic fold mapper lowers them (fusion included)."""
    from mappers.systolic import ARRAY_KINDS, SystolicFoldMapper, lower_op
    from templates.systolic import SystolicTemplate

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
                "members": [op.name],
            }
        )
        rows[key] = row
    ordered = list(rows.values())
    columns = (
        {
            name: np.array([r[name] for r in ordered], dtype=bool if name == "_array" else float)
            for name in ordered[0]
            if name != "members"
        }
        if ordered
        else {}
    )
    return OpTable(
        graph_name=graph.name,
        names=[r["members"][0] for r in ordered],
        members=[r["members"] for r in ordered],
        count=np.array([len(r["members"]) for r in ordered], dtype=float),
        columns=columns,
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
        return np.array([v is not None for v in column], dtype=bool)

    def number(name: str, default: float) -> np.ndarray:
        column = cols[name]
        if isinstance(column, np.ndarray):
            return column
        return np.array([default if v is None else v for v in column], dtype=float)

    individual = given("ifmap_sram_kib") | given("filter_sram_kib") | given("ofmap_sram_kib")
    unified = np.array([v == "unified" for v in cols["scratchpad"]], dtype=bool)
    refuse(unified & individual)
    total = given("sram_kib")
    refuse(total & individual)
    each = number("sram_kib", 0.0) / 3
    sizes = [
        np.where(total, each, number(name, 64.0)) for name in ("ifmap_sram_kib", "filter_sram_kib", "ofmap_sram_kib")
    ]
    bits = np.array([PRECISIONS[p] for p in cols["precision"]], dtype=float)
    word_bytes = bits // 8
    for kib in sizes:
        refuse(kib * 1024 / word_bytes < 200)
    from hwmodels.catalog import tech_names

    names = set(tech_names())
    refuse(np.array([t not in names for t in cols["tech"]], dtype=bool))
    rows, cols_ = number("rows", 0), number("cols", 0)
    lanes = number("vector_lanes", 0)
    lanes = np.where(lanes == 0, cols_, lanes)
    dram_gbps, freq = number("dram_gbps", 0), number("freq_mhz", 0)
    words_per_cycle = dram_gbps * 1e3 / freq / word_bytes
    dataflow = np.array([DATAFLOWS.index(v) for v in cols["dataflow"]], dtype=int)
    mode = np.array([DRAM_MODES.index(v) for v in cols["dram_mode"]], dtype=int)
    # catalog constants per distinct (tech, precision) and per distinct SRAM size
    tech = np.array(cols["tech"], dtype=object)
    per_tech: dict[tuple, tuple] = {}
    tech_index = np.empty(n, dtype=int)
    for i, key in enumerate(zip(cols["tech"], cols["precision"])):
        tech_index[i] = per_tech.setdefault(key, (len(per_tech), _tech_constants(*key)))[0]
    consts = np.array([c for _, c in sorted(per_tech.values(), key=lambda item: item[0])], dtype=float)[tech_index]
    e_mac, e_alu, e_dram, pe_area, sram_area, alu_area, leak, node_nm = consts.T
    e_sram = [_sram_pj_per_byte(tech, kib / 2) for kib in sizes]
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
    from hwmodels.catalog import get_tech
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


def _sram_pj_per_byte(tech: np.ndarray, kib: np.ndarray) -> np.ndarray:
    """The catalog's SRAM energy per byte of each (technology, capacity): one array call per technology."""
    from hwmodels.catalog import get_tech

    out = np.empty(len(kib))
    for name in set(tech.tolist()):
        mask = tech == name
        out[mask] = get_tech(name).sram_energy_pj_per_byte(kib[mask])
    return out


# ----------------------------------------------------------------------------------------------- cross


@dataclass
class CrossFeatures:
    """Features of every (design, op) pair as (designs, ops) blocks, plus the roofline baselines.

    The full design-major matrix (one row per pair) is built only on request: the design-level
    surrogate needs a few blocks, not a (designs x ops, features) copy of everything.
    """

    ops: OpTable
    archs: ArchTable
    blocks: dict[str, np.ndarray]  # CROSS_FEATURES and raw _compute/_vector/_memory/_fill/_refetch: (designs, ops)
    roofline: np.ndarray  # (designs, ops)
    energy_floor: np.ndarray  # (designs, ops)

    @property
    def n_designs(self) -> int:
        return self.roofline.shape[0]

    @property
    def n_ops(self) -> int:
        return self.roofline.shape[1]

    @property
    def roofline_cycles(self) -> np.ndarray:
        return self.roofline.reshape(-1)

    @property
    def energy_floor_pj(self) -> np.ndarray:
        return self.energy_floor.reshape(-1)

    def column(self, name: str) -> np.ndarray:
        """One feature as a (designs, ops) array (a broadcast view for op-only and design-only features)."""
        shape = (self.n_designs, self.n_ops)
        if name in self.blocks:
            return self.blocks[name]
        if name in self.ops.columns:
            return np.broadcast_to(self.ops.columns[name][None, :], shape)
        return np.broadcast_to(self.archs.columns[name][:, None], shape)

    def block(self, name: str) -> np.ndarray:
        """One feature at its natural shape: (1, ops) for op features, (designs, 1) for design features,
        (designs, ops) for cross features; numpy broadcasting does the rest."""
        if name in self.blocks:
            return self.blocks[name]
        if name in self.ops.columns:
            return self.ops.columns[name][None, :]
        return self.archs.columns[name][:, None]

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
    }
    shape = (nd, no)
    raw = {"_compute": compute, "_vector": vector, "_memory": memory, "_fill": fill, "_refetch": refetch}
    return CrossFeatures(
        ops=ops,
        archs=archs,
        blocks={name: np.broadcast_to(value, shape) for name, value in {**cross, **raw}.items()},
        roofline=np.broadcast_to(roofline, shape),
        energy_floor=np.broadcast_to(energy_floor, shape),
    )


# ----------------------------------------------------------------------------------------------- design level

# one row per design: its design features plus what its ops add up to. ``rw_`` = roofline-weighted mean
# over the design's ops; ``stage1_`` = the per-op linear stage's totals over the roofline totals.
AGGREGATE_FEATURES = (
    "log_roofline_total",
    "log_energy_floor_total",
    "log_compute_total",
    "log_vector_total",
    "log_memory_total",
    "log_fill_total",
    "log_refetch_total",
    "frac_memory_bound",
    "frac_overlap",
    "frac_fill",
    "frac_compute",
    "frac_vector",
    "frac_memory",
    "frac_array",
    "rw_in_over_ifmap_sram",
    "rw_weight_over_filter_sram",
    "rw_out_over_ofmap_sram",
    "rw_row_folds",
    "rw_col_folds",
    "rw_memory_over_compute",
    "rw_in_reuse",
    "rw_conv_stride",
    "rw_gemm_k",
    "util_array",
    "log_op_count",
    "stage1_cycles_over_roofline",
    "stage1_energy_over_floor",
)
DESIGN_FEATURES = ARCH_FEATURES + AGGREGATE_FEATURES


@dataclass
class LinearStage:
    """Per-op linear predictor of the two log ratios (cycles, energy) with its scaling folded in:
    ``ratio[t] = intercept[t] + sum_f weights[t, f] * feature_f``. Cheap enough to run on every
    (design, op) pair of a batch of a hundred thousand designs."""

    weights: np.ndarray  # (2, len(FEATURES))
    intercept: np.ndarray  # (2,)

    def ratios(self, block: Any) -> list[np.ndarray]:
        """The two ratios as (designs, ops) arrays; ``block(name)`` gives a feature at its natural shape."""
        out = []
        for t in range(2):
            parts = []
            for group in (OP_FEATURES, ARCH_FEATURES, CROSS_FEATURES):  # (1, ops), (designs, 1), (designs, ops)
                part = 0.0
                for name in group:
                    w = self.weights[t, FEATURES.index(name)]
                    if w != 0.0:
                        part = part + w * block(name)
                parts.append(part)
            out.append(self.intercept[t] + parts[0] + parts[1] + parts[2])
        return out


def to_log_ratio(value: np.ndarray, base: np.ndarray) -> np.ndarray:
    """The surrogates' target: a value as a log ratio to its analytical baseline (+1 keeps zeros finite)."""
    return np.log((value + 1.0) / (base + 1.0))


def from_log_ratio(ratio: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Invert ``to_log_ratio``, clipped at zero."""
    return np.maximum(np.exp(ratio) * (base + 1.0) - 1.0, 0.0)


def _unlog(x: np.ndarray) -> np.ndarray:
    return np.exp2(x) - 1.0


CHUNK_DESIGNS = 4096  # designs per chunk of (design, op) arrays: a few hundred KiB each, cache-resident


def batch_design_features(
    ops: OpTable, archs: ArchTable, stage1: LinearStage
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``design_features`` for a batch of designs, a cache-sized chunk of designs at a time, on every core
    (numpy releases the GIL inside its array loops, so threads run chunks in parallel)."""
    from concurrent.futures import ThreadPoolExecutor

    def chunk(start: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cross = cross_features(ops, archs.slice(start, start + CHUNK_DESIGNS))
        return design_features(cross.block, cross.roofline, cross.energy_floor, ops.count, stage1)

    starts = range(0, len(archs), CHUNK_DESIGNS)
    if len(starts) == 1:
        parts = [chunk(0)]
    else:
        with ThreadPoolExecutor(max_workers=min(len(starts), os.cpu_count() or 1)) as pool:
            parts = list(pool.map(chunk, starts))
    rows, s1_cycles, s1_energy = zip(*parts)
    return np.vstack(rows), np.concatenate(s1_cycles), np.concatenate(s1_energy)


def design_features(
    block: Any, roofline: np.ndarray, floor: np.ndarray, count: np.ndarray, stage1: LinearStage
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Design-level rows (designs, len(DESIGN_FEATURES)) and the linear stage's cycle and energy totals.

    ``block(name)`` gives each feature at its natural shape (see ``CrossFeatures.block``), so the same
    code serves a batch being predicted and a dataset frame being trained on.
    """
    cnt = count[None, :]
    ratio_c, ratio_e = stage1.ratios(block)
    s1_cycles = (from_log_ratio(ratio_c, roofline) * cnt).sum(axis=1)
    s1_energy = (from_log_ratio(ratio_e, floor) * cnt).sum(axis=1)

    def raw(name: str, log_name: str) -> np.ndarray:
        """A raw cycle/word block per op *times its multiplicity*; from its log feature where not at hand."""
        try:
            values = block(name)
        except KeyError:
            values = _unlog(block(log_name))
        return values * cnt

    roof = roofline * cnt
    compute = raw("_compute", "log_compute_cycles")
    vector = raw("_vector", "log_vector_cycles")
    memory = raw("_memory", "log_memory_cycles")
    fill = raw("_fill", "log_fill_cycles")
    refetch = raw("_refetch", "log_refetch_words")
    nd = roof.shape[0]

    def weighted(name: str) -> np.ndarray:
        """sum over ops of roofline x feature (a matrix-vector product for op features)."""
        values = block(name)
        if values.shape[0] == 1:
            return roof @ values[0]
        return np.einsum("ij,ij->i", roof, values)

    r_total = roof.sum(axis=1)
    e_total = floor @ count
    denom = r_total + 1.0
    busy = compute + vector
    array_share = (block("op_is_conv") + block("op_is_matmul"))[0]
    macs = _unlog(block("log_macs"))[0] * count
    pe = np.exp2(block("log_rows") + block("log_cols"))[:, 0]
    agg = {
        "log_roofline_total": np.log2(r_total + 1.0),
        "log_energy_floor_total": np.log2(e_total + 1.0),
        "log_compute_total": np.log2(compute.sum(axis=1) + 1.0),
        "log_vector_total": np.log2(vector.sum(axis=1) + 1.0),
        "log_memory_total": np.log2(memory.sum(axis=1) + 1.0),
        "log_fill_total": np.log2(fill.sum(axis=1) + 1.0),
        "log_refetch_total": np.log2(refetch.sum(axis=1) + 1.0),
        "frac_memory_bound": np.where(memory > busy, roof, 0.0).sum(axis=1) / denom,
        "frac_overlap": np.minimum(busy, memory).sum(axis=1) / denom,
        "frac_fill": fill.sum(axis=1) / denom,
        "frac_compute": compute.sum(axis=1) / denom,
        "frac_vector": vector.sum(axis=1) / denom,
        "frac_memory": memory.sum(axis=1) / denom,
        "frac_array": (roof @ array_share) / denom,
        **{
            f"rw_{name}": weighted(column) / denom
            for name, column in (
                ("in_over_ifmap_sram", "log_in_over_ifmap_sram"),
                ("weight_over_filter_sram", "log_weight_over_filter_sram"),
                ("out_over_ofmap_sram", "log_out_over_ofmap_sram"),
                ("row_folds", "log_row_folds"),
                ("col_folds", "log_col_folds"),
                ("memory_over_compute", "memory_over_compute"),
                ("in_reuse", "in_reuse"),
                ("conv_stride", "conv_stride"),
                ("gemm_k", "log_gemm_k"),
            )
        },
        "util_array": (macs @ array_share) / ((compute @ array_share) * pe + 1.0),
        "log_op_count": np.full(nd, np.log2(count.sum() + 1.0)),
        "stage1_cycles_over_roofline": to_log_ratio(s1_cycles, r_total),
        "stage1_energy_over_floor": to_log_ratio(s1_energy, e_total),
    }
    arch = [np.broadcast_to(block(name)[:, :1], (nd, 1))[:, 0] for name in ARCH_FEATURES]
    rows = np.column_stack(arch + [agg[name] for name in AGGREGATE_FEATURES])
    return rows, s1_cycles, s1_energy


def area_matrix(archs: ArchTable) -> np.ndarray:
    return archs.matrix(AREA_FEATURES)


def schema() -> dict[str, Any]:
    """What a model's inputs are: saved with it and compared on load."""
    return {
        "version": SCHEMA_VERSION,
        "features": list(FEATURES),
        "area_features": list(AREA_FEATURES),
        "design_features": list(DESIGN_FEATURES),
        "templates": list(SUPPORTED_TEMPLATES),
    }
