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
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.graph import Graph, OpKind

SCHEMA_VERSION = 1
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
    return np.log2(np.maximum(np.asarray(x, dtype=float), 0.0) + 1.0)


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


@functools.lru_cache(maxsize=256)
def _tech_constants(tech: str, bits: int, precision: str, ifmap: float, filt: float, ofmap: float) -> tuple:
    """Catalog energies and areas one design needs (pJ, mm^2), cached per distinct design technology."""
    from hwmodels.catalog import get_tech

    node = get_tech(tech)
    fmt = "int" if precision.startswith("int") else "fp"
    sram_pj = tuple(node.sram_energy_pj_per_byte(kib / 2) for kib in (ifmap, filt, ofmap))
    return (
        node.mac_energy_pj(bits, fmt),
        node.alu_energy_pj(bits, fmt),
        sram_pj,
        node.dram_energy_pj(1.0),
        node.pe_area_mm2(bits, fmt),
        node.sram_area_mm2(1.0),
        node.alu_area_mm2(bits, fmt),
        node.leakage_w_per_mm2.value,
        float(node.node_nm),
    )


@dataclass
class ArchTable:
    """Design-side columns for a batch of design points."""

    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    def matrix(self, names: Sequence[str] = ARCH_FEATURES) -> np.ndarray:
        return np.column_stack([self.columns[name] for name in names])


def arch_table(template_kind: str, points: Sequence[Mapping[str, Any]], fixed: Mapping[str, Any]) -> ArchTable:
    """Instantiate every point (template checks included) and tabulate its design features."""
    from dse.errors import UserError
    from dse.registry import family

    if template_kind not in SUPPORTED_TEMPLATES:
        raise UserError(
            f"no surrogate features for template {template_kind!r}; supported: {', '.join(SUPPORTED_TEMPLATES)}",
            where="template.kind",
        )
    template = family(template_kind).template()
    archs = [template.instantiate({**fixed, **point}) for point in points]
    col: dict[str, list[float]] = {name: [] for name in AREA_FEATURES}
    raw: dict[str, list[float]] = {k: [] for k in ("rows", "cols", "lanes", "words_per_cycle", "freq", "bits")}
    raw.update({k: [] for k in ("ifmap_words", "filter_words", "ofmap_words", "e_mac", "e_alu", "e_sram", "e_dram")})
    raw.update({k: [] for k in ("leak_w_per_mm2", "word_bytes", "mode", "e_sram_if", "e_sram_f", "e_sram_of")})
    raw["area_floor"] = []
    for a in archs:
        consts = _tech_constants(a.tech, a.bits, a.precision, a.ifmap_sram_kib, a.filter_sram_kib, a.ofmap_sram_kib)
        e_mac, e_alu, e_sram, e_dram, pe_area, sram_area, alu_area, leak, node_nm = consts
        values = {
            "log_rows": math.log2(a.rows),
            "log_cols": math.log2(a.cols),
            **{f"df_{d}": float(a.dataflow == d) for d in DATAFLOWS},
            "log_ifmap_kib": math.log2(a.ifmap_sram_kib),
            "log_filter_kib": math.log2(a.filter_sram_kib),
            "log_ofmap_kib": math.log2(a.ofmap_sram_kib),
            "log_dram_gbps": math.log2(a.dram_gbps),
            "log_freq_mhz": math.log2(a.freq_mhz),
            "bits": float(a.bits),
            "log_vector_lanes": math.log2(a.vector_lanes),
            **{f"dram_{m}": float(a.dram_mode == m) for m in DRAM_MODES},
            "tech_nm": node_nm,
            "log_dram_words_per_cycle": math.log2(a.dram_words_per_cycle),
            "log_pe_area_mm2": math.log2(pe_area * 1e6),
            "log_sram_area_mm2_per_kib": math.log2(sram_area * 1e6),
            "log_alu_area_mm2": math.log2(alu_area * 1e6),
        }
        sram_kib = a.ifmap_sram_kib + a.filter_sram_kib + a.ofmap_sram_kib
        area_floor = a.rows * a.cols * pe_area + sram_kib * sram_area + a.vector_lanes * alu_area
        values["log_area_floor_mm2"] = math.log2(area_floor)
        for name in AREA_FEATURES:
            col[name].append(values[name])
        for name, value in (
            ("rows", a.rows),
            ("cols", a.cols),
            ("lanes", a.vector_lanes),
            ("words_per_cycle", a.dram_words_per_cycle),
            ("freq", a.freq_mhz),
            ("bits", a.bits),
            ("ifmap_words", a.sram_words("ifmap")),
            ("filter_words", a.sram_words("filter")),
            ("ofmap_words", a.sram_words("ofmap")),
            ("e_mac", e_mac),
            ("e_alu", e_alu),
            ("e_sram", min(e_sram) * a.word_bytes),
            ("e_sram_if", e_sram[0] * a.word_bytes),
            ("e_sram_f", e_sram[1] * a.word_bytes),
            ("e_sram_of", e_sram[2] * a.word_bytes),
            ("area_floor", area_floor),
            ("e_dram", e_dram * a.word_bytes),
            ("leak_w_per_mm2", leak),
            ("word_bytes", a.word_bytes),
            ("mode", DRAM_MODES.index(a.dram_mode)),
        ):
            raw[name].append(float(value))
    columns = {name: np.array(values, dtype=float) for name, values in col.items()}
    columns.update({f"_{name}": np.array(values, dtype=float) for name, values in raw.items()})
    columns["_dataflow"] = np.array([DATAFLOWS.index(a.dataflow) for a in archs], dtype=int)
    return ArchTable(columns)


# ----------------------------------------------------------------------------------------------- cross


@dataclass
class CrossFeatures:
    """Features of every (design, op) pair, flattened design-major, plus the roofline baselines."""

    matrix: np.ndarray  # (designs * ops, len(FEATURES))
    roofline_cycles: np.ndarray  # (designs * ops,)
    energy_floor_pj: np.ndarray  # (designs * ops,)
    n_designs: int
    n_ops: int


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
    blocks = []
    for name in FEATURES:
        if name in cross:
            blocks.append(cross[name].reshape(nd, no))
        elif name in o:
            blocks.append(np.broadcast_to(row(o[name]), (nd, no)))
        else:
            blocks.append(np.broadcast_to(col(a[name]), (nd, no)))
    matrix = np.stack(blocks, axis=-1).reshape(nd * no, len(FEATURES))
    return CrossFeatures(
        matrix=matrix,
        roofline_cycles=roofline.reshape(-1),
        energy_floor_pj=np.broadcast_to(energy_floor, (nd, no)).reshape(-1),
        n_designs=nd,
        n_ops=no,
    )


def area_matrix(archs: ArchTable) -> np.ndarray:
    return archs.matrix(AREA_FEATURES)


def schema() -> dict[str, Any]:
    """What a model's inputs are: saved with it and compared on load."""
    return {
        "version": SCHEMA_VERSION,
        "features": list(FEATURES),
        "area_features": list(AREA_FEATURES),
        "templates": list(SUPPORTED_TEMPLATES),
    }
