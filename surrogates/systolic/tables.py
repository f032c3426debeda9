"""The two sides of the surrogates' feature rows: the ops of a graph (``op_table``, once per graph) and
the design points (``arch_table``, once per batch of points), as numpy columns.

``arch_table`` applies the systolic template's own instantiation rules (``templates.systolic``) to
columns of points and takes the catalog prices from ``hwmodels.systolic.pricing``, so its values are
those ``SystolicTemplate.instantiate`` and the model give.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.errors import UserError
from dse.graph import Graph, OpKind
from dse.registry import family, kinds_with_op_features
from hwmodels.catalogs.actions import ROLES as SRAM_ROLES
from hwmodels.catalogs.actions import price_names
from hwmodels.systolic.batch import GemmShapes
from hwmodels.systolic.pricing import (
    area_total_mm2,
    bank_kib,
    pe_action_columns,
    pe_load_pj_per_word,
    pe_local_area_columns,
    pe_storage_pj_per_mac,
    sram_area_columns,
    sram_pj_per_byte,
    tech_constants,
)
from mappers.payloads import FoldPlan
from mappers.systolic.fold import ARRAY_KINDS, SystolicFoldMapper, lower_op
from templates.systolic import (
    DRAM_MODES,
    PE_SCRATCHPADS,
    PRECISIONS,
    SRAM_NAMES,
    SystolicTemplate,
    accumulator_bits_of,
    buffer_kib,
    dram_words_per_cycle,
    lanes_of,
    too_few_words,
    word_bytes_of,
)

OP_KINDS = tuple(k.value for k in OpKind)
DATAFLOWS = ("os", "ws", "is")  # the feature order (df_os, df_ws, df_is); the template lists them ws first
SUPPORTED_TEMPLATES = kinds_with_op_features()  # the families these op-level features describe

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


def log2_plus_one(x: np.ndarray | float) -> np.ndarray:
    """log2(x + 1), negative values clipped to 0: the features' log scale, finite at zero."""
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

    def words(names: Sequence[str]) -> float:
        return float(sum(graph.tensors[t].numel for t in names))

    mapping = SystolicFoldMapper().map(graph, SystolicTemplate().instantiate({}))  # fusion is arch-independent
    rows: dict[tuple, dict[str, Any]] = {}
    for op in graph.ops:
        om = mapping.ops[op.name]
        resident = set(om.resident_inputs)
        in_words = sum(graph.tensors[t].numel for t in op.inputs if t not in resident)
        weight_words = sum(graph.read_numel(op, t) for t in op.weights)  # read traffic: a look-up reads its rows
        out_words = sum(graph.tensors[t].numel for t in op.outputs)
        fused = bool(om.payload_as(FoldPlan).fused_into)
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
                "log_gemm_m": log2_plus_one(m),
                "log_gemm_k": log2_plus_one(k),
                "log_gemm_n": log2_plus_one(n),
                "log_gemm_count": log2_plus_one(count),
                "log_macs": log2_plus_one(op.macs),
                "log_flops": log2_plus_one(op.flops),
                "log_in_words": log2_plus_one(in_words),
                "log_weight_words": log2_plus_one(weight_words),
                "log_out_words": log2_plus_one(out_words),
                "log_unique_in_words": log2_plus_one(unique_in),
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
                "_vec_reads": words([t for t in op.inputs if t not in resident]) + weight_words,
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
    scratchpad, scratchpads = label_codes(cols["scratchpad"])
    unified = scratchpad == scratchpads.index("unified") if "unified" in scratchpads else np.zeros(n, dtype=bool)
    refuse(unified & individual)
    total = given("sram_kib")
    refuse(total & individual)
    sram_total = number("sram_kib", 0.0)
    sizes = [buffer_kib(given(name), number(name, 0.0), total, sram_total) for name in SRAM_NAMES]
    precision, precisions = label_codes(cols["precision"])
    bits = np.array([PRECISIONS[p] for p in precisions], dtype=float)[precision]
    word_bytes = word_bytes_of(bits)
    for kib in sizes:
        refuse(too_few_words(kib, word_bytes))
    tech_code, techs = label_codes(cols["tech"])
    known = set(price_names())
    refuse(np.array([t not in known for t in techs], dtype=bool)[tech_code])
    rows, cols_ = number("rows", 0), number("cols", 0)
    lanes = lanes_of(number("vector_lanes", 0), cols_)
    dram_gbps, freq = number("dram_gbps", 0), number("freq_mhz", 0)
    words_per_cycle = dram_words_per_cycle(dram_gbps, freq, word_bytes)
    dataflow, _ = label_codes(cols["dataflow"], DATAFLOWS)
    mode, _ = label_codes(cols["dram_mode"], DRAM_MODES)
    # catalog constants once per (tech, precision) present and per technology for the SRAM energies
    pair = tech_code * len(precisions) + precision
    present, pair_index = np.unique(pair, return_inverse=True)
    table = [tech_constants(techs[code // len(precisions)], precisions[code % len(precisions)]) for code in present]
    consts = np.array(table, dtype=float)[pair_index]
    e_mac, e_alu, e_dram, pe_area, sram_area, alu_area, leak, node_nm = consts.T
    tech = (tech_code, techs)
    e_sram = [sram_pj_per_byte(tech, kib, role) for kib, role in zip(bank_kib(*sizes, unified), SRAM_ROLES)]
    pe_actions = pe_action_columns(tech, (precision, precisions))
    is_int = np.array([p.startswith("int") for p in precisions], dtype=bool)[precision]
    acc_bytes = accumulator_bits_of(number("acc_bits", 0), bits, is_int) / 8
    dataflow_names = np.asarray(DATAFLOWS)[dataflow]
    sram_kib = sizes[0] + sizes[1] + sizes[2]
    depths = {role: number(f"pe_{role}_words", 1) for role in PE_SCRATCHPADS}
    pe_local = rows * cols_ * pe_local_area_columns(tech, bits, acc_bytes * 8, depths)
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
        "_area_total": area_total_mm2(
            rows * cols_ * pe_area + lanes * alu_area, sram_area_columns(tech, sizes, unified) + pe_local
        ),
        "_e_dram": e_dram * word_bytes,
        "_e_pe_mac": pe_storage_pj_per_mac(dataflow_names, word_bytes, acc_bytes, pe_actions),
        "_e_pe_load": pe_load_pj_per_word(dataflow_names, word_bytes, acc_bytes, pe_actions),
        "_acc_bytes": acc_bytes,
        **{f"_{action}": price for action, price in pe_actions.items()},  # for per-GEMM scratchpad reuse
        **{f"_pe_{role}_words": words for role, words in depths.items()},
        "_leak_w_per_mm2": leak,
        "_word_bytes": word_bytes,
        "_mode": mode.astype(float),
        "_dataflow": dataflow,
    }
    return ArchTable(columns)


def label_codes(column: Sequence[Any], choices: Sequence[Any] | None = None) -> tuple[np.ndarray, list[Any]]:
    """(index of each value in ``choices``, choices) for a column of labels; choices default to the
    distinct values in order of appearance. One dictionary look-up per value."""
    choices = list(dict.fromkeys(column)) if choices is None else list(choices)
    lookup = {value: i for i, value in enumerate(choices)}
    return np.fromiter(map(lookup.__getitem__, column), dtype=np.intp, count=len(column)), choices
