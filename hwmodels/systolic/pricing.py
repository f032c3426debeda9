"""What a systolic design pays: per-access energies of its MACs, PE registers, SRAM banks (read and written),
DRAM and ALUs, its area and its leakage, from the technology catalog (``hwmodels.catalogs.tech``) or from a
published per-action table (``hwmodels.catalogs.actions``: ``tech: tpu-v4``).

The one place these prices are derived: the systolic model (``hwmodels.systolic.model``) charges them per
layer, the multicore mapper per task, the RDU cost model for its PMUs, DRAM and compute, the tiling mappers'
energy objective (``mappers.systolic.objective.cost_model``) scores schedules with them, and the surrogates'
batch features (``surrogates.systolic.tables.arch_table``) take the same figures for numpy columns of designs
(``pe_storage_pj_per_mac`` and friends broadcast: no Python branch on a value).

PE-level storage (``pe_storage``): every MAC reads its weight, input and partial sum from the PE's registers
and writes the partial sum back at the accumulator's width (``acc_bits``: 32 bits for int8); the operands the
dataflow moves are written into the neighbouring PE's register (and cross a PE-to-PE link) each MAC, the
stationary one once per load.

Per-PE scratchpads (``pe_weight_words``, ``pe_input_words``, ``pe_psum_words``; 1 = a register): a PE that keeps
a x b words of the stationary operand covers a row folds and b column folds in one pass (``pe_reuse``), so the
streamed operand is read from the SRAM once per b column folds and the partial sums written once per a row folds;
a conv's input word serves up to S window positions from a scratchpad that keeps a filter row (Eyeriss' row
stationary). Energy only: the cycles stay the fold model's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

import numpy as np

from hwmodels.catalogs.actions import PE_ROLES, REQUIRED_ACTIONS, action_table, area_node, register_write_pj_per_bit
from hwmodels.catalogs.tech import DIE_OVERHEAD, LOGIC_UTILIZATION, TechNode, dram_energy_pj, get_tech
from hwmodels.systolic.compute import LoweredGemm, array_sram_reads, array_writes, folds, spatial_dims
from hwmodels.systolic.cost import GemmCost
from hwmodels.systolic.sparse import sparse_area_fraction
from templates.systolic import PRECISIONS, SystolicArch

# SRAM energy per byte is taken at the capacity of one bank of the double buffer (half the SRAM),
# since an access activates one half only.
_BANKS_PER_SRAM = 2
# A unified scratchpad (``scratchpad="unified"``) is banked so the array's input, weight and output
# streams and the DMA rarely meet in one bank; 4 banks is Gemmini's default scratchpad (``sp_banks =
# 4``, Genc et al., DAC 2021). Its banks are a quarter of the whole, larger than a split SRAM's halves
# (a sixth of the whole), so every access costs more: the price of one shared address space.
_UNIFIED_BANKS = 4


def bank_kib(ifmap_kib, filter_kib, ofmap_kib, unified):  # noqa: ANN001, ANN201 (scalars or numpy arrays)
    """The bank one access to the ifmap, filter and ofmap SRAMs activates, in KiB: their energy scale.

    The one place this is decided, for scalars (the model, the tiling mappers' prices) and for numpy
    columns (the surrogates' batch features): a split SRAM's half, or a quarter of a unified scratchpad.
    """
    sizes = (ifmap_kib, filter_kib, ofmap_kib)
    whole = (ifmap_kib + filter_kib + ofmap_kib) / _UNIFIED_BANKS
    if isinstance(unified, (bool, np.bool_)):
        return tuple(whole if unified else kib / _BANKS_PER_SRAM for kib in sizes)
    return tuple(np.where(unified, whole, np.asarray(kib) / _BANKS_PER_SRAM) for kib in sizes)


def sram_bank_kib(arch: SystolicArch) -> dict[str, float]:
    """The bank one access to each SRAM ('ifmap' | 'filter' | 'ofmap') activates, in KiB: its energy scale."""
    banks = bank_kib(arch.ifmap_sram_kib, arch.filter_sram_kib, arch.ofmap_sram_kib, arch.scratchpad == "unified")
    return dict(zip(("ifmap", "filter", "ofmap"), banks))


def number_format(precision: str) -> str:
    """The catalog's number format of a precision: 'int' for the integer ones, else 'fp'."""
    return "int" if precision.startswith("int") else "fp"


def die_overhead_mm2(core_mm2):  # noqa: ANN001, ANN201 (a float or a numpy column)
    """What a die adds around its core blocks (control, I/O, wiring), each a sourced fraction of them
    (``hwmodels.catalogs.tech.DIE_OVERHEAD``)."""
    return {block: share.value * core_mm2 for block, share in DIE_OVERHEAD.items()}


def placed_logic_mm2(cell_mm2):  # noqa: ANN001, ANN201 (a float or a numpy column)
    """Placed area of synthesized logic: its cell area over the placement density."""
    return cell_mm2 / LOGIC_UTILIZATION.value


def area_total_mm2(logic_cell_mm2, sram_mm2):  # noqa: ANN001, ANN201 (floats or numpy columns)
    """Whole-design area from the cell area of its logic and the area of its SRAM macros: the one formula the
    surrogates' batch features share with ``systolic_area_mm2``."""
    core = placed_logic_mm2(logic_cell_mm2) + sram_mm2
    return core + sum(die_overhead_mm2(core).values())


def sram_block_mm2(node: TechNode, ifmap_kib, filter_kib, ofmap_kib, unified):  # noqa: ANN001, ANN201 (or columns)
    """Area of a design's on-chip SRAM, built as its accesses see it: three SRAMs of two banks each (the double
    buffer's halves) or one unified scratchpad of ``_UNIFIED_BANKS`` banks, each bank a macro read 64 bits at a
    time (``TechNode.sram_area_mm2``). The one formula for scalars and for the surrogates' numpy columns."""
    split = sum(node.sram_area_mm2(kib, banks=_BANKS_PER_SRAM) for kib in (ifmap_kib, filter_kib, ofmap_kib))
    whole = node.sram_area_mm2(np.asarray(ifmap_kib) + filter_kib + ofmap_kib, banks=_UNIFIED_BANKS)
    out = np.where(unified, whole, split)
    return float(out) if np.ndim(out) == 0 else out


def pe_local_storage_mm2(node: TechNode, bits: int, acc_bits: int, words: dict[str, int]):  # noqa: ANN201
    """Placed area one PE's local stores add beyond the single register per operand that ``TechNode.pe_area_mm2``
    already counts: ``words`` by role ('weight' | 'input' | 'psum'; partial sums at ``acc_bits``), each a register
    file or an SRAM macro, whichever is smaller (``TechNode.local_storage_area_mm2``). 0 for one word each."""
    width = {"weight": bits, "input": bits, "psum": acc_bits}
    return sum(
        node.local_storage_area_mm2(words[role], width[role]) - node.local_storage_area_mm2(1, width[role])
        for role in width
    )


# Words each PE keeps per operand when it has no scratchpad: one register each.
ONE_REGISTER_EACH = {"weight": 1, "input": 1, "psum": 1}


def pe_words(arch: SystolicArch) -> dict[str, int]:
    """Words each PE keeps per operand (``pe_weight_words``, ``pe_input_words``, ``pe_psum_words``)."""
    return {"weight": arch.pe_weight_words, "input": arch.pe_input_words, "psum": arch.pe_psum_words}


def systolic_area_mm2(arch: SystolicArch) -> dict[str, float]:
    """Area per block: PE array (arithmetic, registers and any deeper PE-local stores), SRAM (one scratchpad or
    three SRAMs, banked), vector lanes, then the control, I/O and wiring a die adds around them. Logic blocks are
    placed cell areas (``placed_logic_mm2``)."""
    tech = get_tech(arch.tech)
    fmt = number_format(arch.precision)
    pe_cells = arch.rows * arch.cols * tech.pe_area_mm2(arch.bits, fmt)
    local = arch.rows * arch.cols * pe_local_storage_mm2(tech, arch.bits, arch.accumulator_bits, pe_words(arch))
    sizes = (arch.ifmap_sram_kib, arch.filter_sram_kib, arch.ofmap_sram_kib)
    parts = {
        "pe_array": placed_logic_mm2(pe_cells) + local,
        "sram": sram_block_mm2(tech, *sizes, arch.scratchpad == "unified"),
        "vector": placed_logic_mm2(arch.vector_lanes * tech.alu_area_mm2(arch.bits, fmt)),
    }
    if arch.sparsity_support:  # zero gates, N:M muxes, intersection logic (hwmodels.catalogs.sparse)
        parts["sparse"] = parts["pe_array"] * sparse_area_fraction(arch)
    parts.update(die_overhead_mm2(sum(parts.values())))
    return parts


@dataclass(frozen=True)
class Prices:
    """One design's prices: per-access energies in pJ (SRAM per byte of the bank an access activates, read
    and written; DRAM per byte; the PE registers per MAC and per stationary word), its area per block and
    its leakage. ``tech`` is the catalog node of the area and the leakage."""

    tech: TechNode
    e_mac: float
    e_alu: float
    e_sram: dict[str, float]  # 'ifmap' | 'filter' | 'ofmap' -> pJ per byte read
    area_mm2: dict[str, float]
    leakage_w: float
    leakage_pj_per_cycle: float
    e_sram_write: dict[str, float] = field(default_factory=dict)  # pJ per byte written (default: as read)
    e_dram_read: float = 0.0  # pJ per byte
    e_dram_write: float = 0.0
    e_pe_per_mac: float = 0.0  # PE registers and forwarding, per MAC (``pe_storage_pj_per_mac``)
    e_pe_per_load: float = 0.0  # one word of the stationary operand loaded into (or drained from) a PE
    pe_actions: dict[str, float] = field(default_factory=dict)  # the pe_* actions (pJ per byte)
    acc_bytes: float = 4.0
    tech_word_bytes: float = 1.0
    pe_words: tuple = (1, 1, 1)  # (weight, input, psum) words each PE keeps (``pe_reuse``)

    @property
    def e_sram_vec(self) -> float:
        """Vector ops stage through the ifmap/ofmap SRAMs: the ifmap bank's price."""
        return self.e_sram["ifmap"]

    @property
    def area_total_mm2(self) -> float:
        return sum(self.area_mm2.values())

    def sram_write(self, which: str) -> float:
        return self.e_sram_write.get(which, self.e_sram[which])

    def dram_pj(self, read_bytes: float, write_bytes: float = 0.0) -> float:  # noqa: ANN001 (or numpy arrays)
        return read_bytes * self.e_dram_read + write_bytes * self.e_dram_write


def action_prices(tech: str, bits: int, fmt: str) -> dict[str, float]:
    """Every per-action energy (``hwmodels.catalogs.actions.REQUIRED_ACTIONS``; pJ per op or per *byte*)
    of ``tech`` at one operand width, before the SRAM's capacity is known (SRAM entries of a catalog node are
    None: they follow the bank, ``sram_prices``). The one place a node and a published table meet."""
    table = action_table(tech)
    if table is not None:
        per_byte = {a: 8 * s.value for a, s in table.actions.items() if a not in ("mac", "vector_op")}
        return {"mac": table.pj("mac"), "vector_op": table.pj("vector_op"), **per_byte}
    node = get_tech(tech)
    reg = 8 * register_write_pj_per_bit(node)
    dram = node.dram_energy_pj(1.0)
    out: dict[str, float] = {"mac": node.mac_energy_pj(bits, fmt), "vector_op": node.alu_energy_pj(bits, fmt)}
    out.update({a: None for a in REQUIRED_ACTIONS if a.startswith("sram_")})  # type: ignore[misc]
    out.update({"dram_read": dram, "dram_write": dram, "pe_forward": 0.0})
    out.update({f"pe_read_{role}": 0.0 for role in PE_ROLES})
    out.update({f"pe_write_{role}": reg for role in PE_ROLES})
    return out


def dram_pj_per_byte(tech: str, kind: str = "lpddr4") -> float:
    """One DRAM byte read: a table's own figure, or the catalog's interface of ``kind`` (node-independent)."""
    table = action_table(tech)
    return 8 * table.pj("dram_read") if table is not None else dram_energy_pj(1.0, kind)


def sram_prices(tech: str, bank_kib_of: dict[str, float], actions: dict[str, float]) -> tuple[dict, dict]:
    """(read, write) pJ per byte of each SRAM: a table's own figures, or the node's by bank capacity."""
    if action_table(tech) is not None:
        return (
            {w: actions[f"sram_read_{w}"] for w in bank_kib_of},
            {w: actions[f"sram_write_{w}"] for w in bank_kib_of},
        )
    node = get_tech(tech)
    read = {w: node.sram_energy_pj_per_byte(kib) for w, kib in bank_kib_of.items()}
    return read, dict(read)


def pe_storage_pj_per_mac(dataflow, word_bytes, acc_bytes, e: dict, reuse=None):  # noqa: ANN001, ANN201 (or arrays)
    """PE registers per MAC (pJ) under ``dataflow`` ('ws' | 'is' | 'os', or an array of them).

    Each MAC reads its weight, its input and the partial sum it adds to, and writes the partial sum
    (``acc_bytes`` wide: int8 arrays accumulate in 32 bits). The operands that move are written into the
    next PE's register and cross a PE-to-PE link each MAC; the stationary one is read only (its loads are
    ``e_pe_per_load``). Under os the partial sum stays put; under ws / is it moves down the column. With
    scratchpads (``reuse``: a ``PeReuse``) a moving word is written once for the MACs that reuse it in the PE.
    """
    df = np.asarray(dataflow)
    once = (1.0, 1.0, 1.0) if reuse is None else reuse.moving_per_mac
    reads = (e["pe_read_weight"] + e["pe_read_input"]) * word_bytes + e["pe_read_psum"] * acc_bytes
    psum_write = e["pe_write_psum"] * acc_bytes
    moving_input = (e["pe_write_input"] + e["pe_forward"]) * word_bytes * once[0]
    moving_weight = (e["pe_write_weight"] + e["pe_forward"]) * word_bytes * once[1]
    moving_psum = e["pe_forward"] * acc_bytes * once[2]
    out = (
        reads
        + psum_write
        + np.where(
            df == "os", moving_input + moving_weight, np.where(df == "ws", moving_input, moving_weight) + moving_psum
        )
    )
    return float(out) if np.ndim(out) == 0 else out


# The PE-register actions ``pe_storage_pj_per_mac`` reads (pJ per byte)
PE_ACTIONS = (*(f"pe_{rw}_{role}" for role in PE_ROLES for rw in ("read", "write")), "pe_forward")

# Row-fold groups a PE scratchpad may cover (``pe_reuse`` tries each, and the two splits that fill one side first)
_GROUPS = 2 ** np.arange(13.0)


@dataclass(frozen=True)
class PeReuse:
    """What per-PE scratchpads save on one GEMM (numbers or numpy columns): every PE keeps ``a`` x ``b`` words
    of the stationary operand, so one pass covers ``a`` row folds and ``b`` column folds; ``window`` is the
    share of a conv's im2col input reads left when a scratchpad keeps a filter row (1: no sliding reuse)."""

    dataflow: object
    row_share: object  # ceil(row_folds / a) / row_folds: the partial sums (ws/is) or weights (os) left
    col_share: object  # ceil(col_folds / b) / col_folds: the streamed input (ws/os) or weight (is) reads left
    window: object
    a: object
    b: object

    def streams(self, ifmap, filt, ofmap):  # noqa: ANN001, ANN201 (numbers or arrays)
        """The array's SRAM (ifmap reads, filter reads, ofmap writes) after reuse in the PEs."""
        df = np.asarray(self.dataflow)
        ws, os_ = df == "ws", df == "os"
        if_share = np.where(ws, self.col_share * self.window, np.where(os_, self.col_share, self.window))
        f_share = np.where(ws, 1.0, np.where(os_, self.row_share, self.col_share))
        of_share = np.where(os_, 1.0, self.row_share)
        return tuple(_scalar(x * share) for x, share in ((ifmap, if_share), (filt, f_share), (ofmap, of_share)))

    @property
    def moving_per_mac(self) -> tuple:
        """Writes per MAC of the moving (input, weight, psum) words: each is written once for the MACs of the
        PE that reuse it (ws: b columns of inputs; is: b columns of weights; os: b inputs, a weights)."""
        df = np.asarray(self.dataflow)
        ws, os_ = df == "ws", df == "os"
        one = np.ones_like(np.asarray(self.a, dtype=float))
        inputs = np.where(ws, self.window / self.b, np.where(os_, 1.0 / self.b, one))
        weights = np.where(ws, one, np.where(os_, 1.0 / self.a, 1.0 / self.b))
        psums = np.where(os_, one, 1.0 / self.a)
        return _scalar(inputs), _scalar(weights), _scalar(psums)


def _scalar(x):  # noqa: ANN001, ANN202
    return float(x) if np.ndim(x) == 0 else x


def conv_window(gemm) -> tuple:  # noqa: ANN001 (a LoweredGemm)
    """(S, Q, stride) of a lowered conv's rows for ``window_share`` ((1, 1, 1) for a matmul or an N:M condensed
    GEMM, whose window columns are not the geometry's)."""
    g = gemm.geometry
    return (1, 1, 1) if gemm.window_pattern is not None else (g.S, g.Q, g.stride_w)


def window_share(kernel_w, out_w, stride_w, taps):  # noqa: ANN001, ANN201 (numbers or arrays)
    """Share of a conv's im2col input reads (one row of S = ``kernel_w`` taps over Q = ``out_w`` outputs) left
    when a PE scratchpad keeps ``taps`` consecutive taps and slides over the input row: each group of g taps
    reads Q * g - (Q - 1) * max(g - stride, 0) distinct words instead of Q * g. 1 exactly when ``taps`` = 1."""
    s, q, u = (np.asarray(v, dtype=float) for v in (kernel_w, out_w, stride_w))
    g = np.minimum(np.maximum(taps, 1), s)
    groups = np.ceil(s / g)
    last = s - (groups - 1) * g
    shared = (groups - 1) * np.maximum(g - u, 0) + np.maximum(last - u, 0)
    return _scalar((q * s - (q - 1) * shared) / np.maximum(q * s, 1))


def pe_reuse(dataflow, row_folds, col_folds, pe_words, streams=(1, 1, 1), window=(1, 1, 1)) -> PeReuse:  # noqa: ANN001
    """The reuse per-PE scratchpads of ``pe_words`` = (weight, input, psum) words allow on one GEMM of
    ``row_folds`` x ``col_folds`` folds (numbers or columns), as a closed form of the loop nest.

    The stationary operand's scratchpad (ws: weights, is: inputs, os: partial sums) keeps s = a x b words: a
    row folds (ws/is: reduction, os: output rows) and b column folds. The other operand's scratchpad bounds a
    (ws: the a inputs of one output row wait for the b columns; is: the a weights; os: a inputs, unless b
    weights wait instead). Of the splits a = 1, 2, 4, ... (and the one covering the columns first) the one
    leaving the fewest of the array's SRAM words ``streams`` = (ifmap reads, filter reads, ofmap writes) is
    taken; all depths 1 give a = b = 1 and shares exactly 1. ``window`` = (S, Q, stride) of a conv's lowered
    rows: under ws / is a PE keeping a >= S taps slides along them.
    """
    if all(np.ndim(v) == 0 and v == 1 for v in pe_words):  # registers only (the default): the same, cheaply
        return PeReuse(dataflow, 1.0, 1.0, 1.0, 1.0, 1.0)
    df = np.asarray(dataflow)
    weight, inputs, psum = (np.asarray(v, dtype=float) for v in pe_words)
    rf, cf = (np.maximum(np.asarray(v, dtype=float), 1.0) for v in (row_folds, col_folds))
    ws, os_ = df == "ws", df == "os"
    s = np.where(ws, weight, np.where(os_, psum, inputs))
    bound = np.where(ws, inputs, np.where(os_, np.maximum(inputs, psum), weight))
    splits = np.concatenate([_GROUPS, [np.inf, -1.0]]).reshape((-1,) + (1,) * np.ndim(rf * s))
    fill_cols = np.floor(s / np.minimum(s, cf))  # the split that covers the columns first
    a = np.where(splits < 0, fill_cols, splits)
    a = np.maximum(np.minimum(np.minimum(a, np.minimum(s, bound)), rf), 1.0)
    b = np.maximum(np.minimum(np.floor(s / a), cf), 1.0)
    b = np.where(os_ & (a > inputs), np.minimum(b, np.maximum(weight, 1.0)), b)
    row_share, col_share = np.ceil(rf / a) / rf, np.ceil(cf / b) / cf
    if_words, f_words, of_words = (np.asarray(v, dtype=float) for v in streams)
    row_words = np.where(os_, f_words, of_words)
    col_words = np.where(ws | os_, if_words, f_words)
    words = row_share * row_words + col_share * col_words
    best = np.argmin(words, axis=0)
    pick = lambda x: np.take_along_axis(x, best[None], axis=0)[0]  # noqa: E731
    a, b, row_share, col_share = pick(a), pick(b), pick(row_share), pick(col_share)
    taps = np.where(ws | (df == "is"), a, 1.0)
    win = window_share(window[0], window[1], window[2], taps)
    return PeReuse(dataflow, *(_scalar(x) for x in (row_share, col_share)), win, _scalar(a), _scalar(b))


def pe_load_pj_per_word(dataflow, word_bytes, acc_bytes, e: dict):  # noqa: ANN001, ANN201 (scalars or arrays)
    """One word of the stationary operand written into its PE (ws: a weight, is: an input) or, under os, one
    finished output read out of its accumulator register."""
    df = np.asarray(dataflow)
    out = np.where(
        df == "os",
        e["pe_read_psum"] * acc_bytes,
        np.where(df == "ws", e["pe_write_weight"], e["pe_write_input"]) * word_bytes,
    )
    return float(out) if np.ndim(out) == 0 else out


def stationary_words(dataflow, ifmap_sram_reads, filter_sram_reads, ofmap_sram_writes):  # noqa: ANN001, ANN201
    """Words of the stationary operand loaded into (or drained from) the PEs: the array-side SRAM stream of
    that operand (ws: the filter's, is: the ifmap's, os: the ofmap's)."""
    df = np.asarray(dataflow)
    out = np.where(df == "ws", filter_sram_reads, np.where(df == "is", ifmap_sram_reads, ofmap_sram_writes))
    return float(out) if np.ndim(out) == 0 else out


def design_prices(arch: SystolicArch) -> Prices:
    """The prices of ``arch``: its ``tech`` is a catalog node or a published action table."""
    fmt = number_format(arch.precision)
    node = area_node(arch.tech)
    area = systolic_area_mm2(arch if node.name == arch.tech else replace(arch, tech=node.name))
    table = action_table(arch.tech)
    leak_w = table.leakage_w.value if table is not None and table.leakage_w is not None else None
    leak_w = node.leakage_w(sum(area.values())) if leak_w is None else leak_w
    e = action_prices(arch.tech, arch.bits, fmt)
    read, write = sram_prices(arch.tech, sram_bank_kib(arch), e)
    wb, ab = arch.word_bytes, arch.accumulator_bits / 8
    return Prices(
        tech=node,
        e_mac=e["mac"],
        e_alu=e["vector_op"],
        e_sram=read,
        area_mm2=area,
        leakage_w=leak_w,
        leakage_pj_per_cycle=leak_w * 1e12 / (arch.freq_mhz * 1e6),
        e_sram_write=write,
        e_dram_read=e["dram_read"],
        e_dram_write=e["dram_write"],
        e_pe_per_mac=pe_storage_pj_per_mac(arch.dataflow, wb, ab, e),
        e_pe_per_load=pe_load_pj_per_word(arch.dataflow, wb, ab, e),
        pe_actions={k: v for k, v in e.items() if k.startswith("pe_")},
        acc_bytes=ab,
        tech_word_bytes=wb,
        pe_words=(arch.pe_weight_words, arch.pe_input_words, arch.pe_psum_words),
    )


# ---------------------------------------------------------------------------------------------------
# The same catalog figures for numpy columns of designs (the surrogates' batch features)
# ---------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def tech_constants(tech: str, precision: str) -> tuple:
    """Energies (pJ) and areas (mm^2) of one technology (node or table) at one precision."""
    node = area_node(tech)
    bits = PRECISIONS[precision]
    fmt = number_format(precision)
    e = action_prices(tech, bits, fmt)
    return (
        e["mac"],
        e["vector_op"],
        e["dram_read"],
        node.pe_area_mm2(bits, fmt),
        node.sram_mm2_per_kib(),
        node.alu_area_mm2(bits, fmt),
        node.leakage_w_per_mm2.value,
        float(node.node_nm),
    )


def pe_action_columns(tech: tuple[np.ndarray, list[str]], precision: tuple[np.ndarray, list[str]]) -> dict:
    """The PE-register actions (pJ per byte) of each design, as columns (``pe_storage_pj_per_mac``'s ``e``)."""
    (t_codes, t_names), (p_codes, p_names) = tech, precision
    table = np.array(
        [[action_prices(t, PRECISIONS[p], number_format(p))[k] for k in PE_ACTIONS] for t in t_names for p in p_names],
        dtype=float,
    )
    rows = table[t_codes * len(p_names) + p_codes]
    return {k: rows[:, i] for i, k in enumerate(PE_ACTIONS)}


def sram_pj_per_byte(tech: tuple[np.ndarray, list[str]], kib: np.ndarray, role: str = "ifmap") -> np.ndarray:
    """SRAM energy per byte read of each (technology, capacity): one array call per technology (a table's
    own figure for ``role``). ``tech`` is (code per design, technology names)."""
    codes, names = tech

    def price(name: str, sizes: np.ndarray) -> np.ndarray:
        table = action_table(name)
        if table is not None:
            return np.full(np.shape(sizes), 8 * table.pj(f"sram_read_{role}"))
        return np.asarray(get_tech(name).sram_energy_pj_per_byte(sizes), dtype=float)

    if len(names) == 1:
        return price(names[0], kib)
    out = np.empty(len(kib))
    for code, name in enumerate(names):
        mask = codes == code
        out[mask] = price(name, kib[mask])
    return out


def per_area_node(tech: tuple[np.ndarray, list[str]], area_of) -> np.ndarray:  # noqa: ANN001
    """A column of areas priced one array call per technology present: ``area_of(node, mask)`` prices the designs
    at ``mask`` on their technology's area node."""
    codes, names = tech
    out = np.zeros(len(codes))
    for code, name in enumerate(names):
        mask = codes == code
        out[mask] = area_of(area_node(name), mask)
    return out


def sram_area_columns(tech: tuple[np.ndarray, list[str]], sizes: tuple, unified: np.ndarray) -> np.ndarray:
    """``sram_block_mm2`` of each design, as a column."""
    return per_area_node(
        tech,
        lambda node, mask: sram_block_mm2(node, *(np.asarray(kib)[mask] for kib in sizes), np.asarray(unified)[mask]),
    )


def pe_local_area_columns(tech: tuple[np.ndarray, list[str]], bits, acc_bits, words: dict) -> np.ndarray:  # noqa: ANN001
    """``pe_local_storage_mm2`` of one PE of each design, as a column (``words``: role -> column of depths)."""
    return per_area_node(
        tech,
        lambda node, mask: pe_local_storage_mm2(
            node, np.asarray(bits)[mask], np.asarray(acc_bits)[mask], {r: np.asarray(c)[mask] for r, c in words.items()}
        ),
    )


# ---------------------------------------------------------------------------------------------------
# Charges: access counts x these prices (the systolic model per layer, the multicore mapper per task)
# ---------------------------------------------------------------------------------------------------
def gemm_energy_pj(
    cost: GemmCost, macs: int, prices: Prices, word_bytes: int, dataflow: str, window: tuple = (1, 1, 1)
) -> dict[str, float]:
    """Energy (pJ, before leakage) of one lowered GEMM: MACs, the PE registers (per MAC and per stationary
    word), the SRAM accesses of the array (less what the PE scratchpads reuse, ``pe_reuse``; ``window`` = (S, Q,
    stride) of a conv) plus every DRAM fill (a write) and drain (a read) through its SRAM, and the DRAM bytes.
    Works on numpy columns of costs too (one design's prices)."""
    wb = word_bytes
    r, w = prices.e_sram, prices.sram_write
    array = (cost.ifmap_sram_reads, cost.filter_sram_reads, cost.ofmap_sram_writes)
    reuse = pe_reuse(dataflow, cost.row_folds, cost.col_folds, prices.pe_words, array, window)
    if_reads, f_reads, of_writes = reuse.streams(*array)
    sram = (
        if_reads * wb * r["ifmap"]
        + cost.ifmap_dram_reads * wb * w("ifmap")
        + f_reads * wb * r["filter"]
        + cost.filter_dram_reads * wb * w("filter")
        + of_writes * wb * w("ofmap")
        + cost.ofmap_dram_writes * wb * r["ofmap"]
    )
    loads = stationary_words(dataflow, *array)
    return {
        "mac": macs * prices.e_mac,
        "pe_storage": macs * pe_mac_pj(prices, dataflow, reuse) + loads * prices.e_pe_per_load,
        "sram": sram,
        "dram": prices.dram_pj((cost.ifmap_dram_reads + cost.filter_dram_reads) * wb, cost.ofmap_dram_writes * wb),
        "vector": 0.0,
    }


def pe_mac_pj(prices: Prices, dataflow, reuse: PeReuse):  # noqa: ANN001, ANN201 (scalars or arrays)
    """The PE storage per MAC of one GEMM: the design's register price, or with scratchpads its reuse's."""
    if not prices.pe_actions:  # Prices built by hand (no action table): the design-level figure
        return prices.e_pe_per_mac
    return pe_storage_pj_per_mac(dataflow, prices.tech_word_bytes, prices.acc_bytes, prices.pe_actions, reuse)


TILED_ROLES = ("input", "weight", "output")  # mappers.payloads.OperandTraffic.role


def tiled_sram_energy_pj(array_bytes, streams, fills: dict, prices: Prices, reused=None):  # noqa: ANN001, ANN201
    """SRAM energy (pJ) of a tiled array op: its ``array_bytes`` of array-side accesses shared out over the
    three SRAMs as the fold model's ``streams`` (ifmap reads, filter reads, ofmap writes) are, each less what the
    PE scratchpads reuse (``reused``: the streams after ``PeReuse.streams``), plus the DRAM fills (writes) of its
    inputs and weights and the drain (reads) of its outputs (``fills`` by role, bytes)."""
    r, w = prices.e_sram, prices.sram_write
    if_words, f_words, of_words = streams
    left_if, left_f, left_of = streams if reused is None else reused
    total = if_words + f_words + of_words
    per_byte = (left_if * r["ifmap"] + left_f * r["filter"] + left_of * w("ofmap")) / np.maximum(total, 1e-300)
    out = (
        array_bytes * per_byte
        + fills["input"] * w("ifmap")
        + fills["weight"] * w("filter")
        + fills["output"] * r["ofmap"]
    )
    return float(out) if np.ndim(out) == 0 else out


def tiled_array_energy_pj(array_bytes, streams, folds, fills: dict, macs, prices: Prices, dataflow, window):  # noqa: ANN001, ANN201
    """(SRAM, PE storage) energy (pJ) of a tiled array op whose whole GEMM has ``folds`` = (row, column) folds
    and fold-model ``streams``: the scratchpads' reuse (``pe_reuse``) is the whole GEMM's, shared by its tiles."""
    reuse = pe_reuse(dataflow, folds[0], folds[1], prices.pe_words, streams, window)
    sram = tiled_sram_energy_pj(array_bytes, streams, fills, prices, reuse.streams(*streams))
    pe = macs * pe_mac_pj(prices, dataflow, reuse) + stationary_words(dataflow, *streams) * prices.e_pe_per_load
    return sram, pe


def fold_streams(gemm: LoweredGemm, arch: SystolicArch) -> tuple[float, float, float]:
    """(ifmap reads, filter reads, ofmap writes) the array makes of its SRAMs over the whole GEMM, in words, as
    the fold model counts them: a tiled op's tiles split the same folds, so these are its streams too."""
    df = arch.dataflow
    sr, sc, t = spatial_dims(gemm, df)
    rf, cf = folds(sr, sc, arch.rows, arch.cols)
    sram_if, sram_f = array_sram_reads(df, sr, sc, t, rf, cf)
    n = gemm.count
    return n * float(sram_if), n * float(sram_f), n * float(array_writes(gemm.M, gemm.N, rf, df))


def array_sram_share(gemm: LoweredGemm, arch: SystolicArch, prices: Prices) -> float:
    """Share of a tiled array op's array-side SRAM energy its PE scratchpads leave: ``pe_reuse`` over the whole
    GEMM's folds, priced by ``tiled_sram_energy_pj`` as the model prices the op's tiles. The tiling mappers'
    energy objective scales its array-side SRAM bytes by it. Exactly 1.0 with one register per operand."""
    if all(words == 1 for words in prices.pe_words):
        return 1.0
    streams = fold_streams(gemm, arch)
    sr, sc, _ = spatial_dims(gemm, arch.dataflow)
    rf, cf = folds(sr, sc, arch.rows, arch.cols)
    reuse = pe_reuse(arch.dataflow, rf, cf, prices.pe_words, streams, conv_window(gemm))
    no_fills = dict.fromkeys(TILED_ROLES, 0.0)
    plain = tiled_sram_energy_pj(1.0, streams, no_fills, prices)
    left = tiled_sram_energy_pj(1.0, streams, no_fills, prices, reuse.streams(*streams))
    return left / plain if plain > 0 else 1.0


def vector_energy_pj(flops: int, read_bytes: float, write_bytes: float, prices: Prices) -> dict[str, float]:
    """Energy (pJ, before leakage) of one op on the SIMD unit: ALU work, staging SRAM and DRAM bytes."""
    return {
        "mac": 0.0,
        "pe_storage": 0.0,
        "sram": read_bytes * prices.e_sram_vec + write_bytes * prices.sram_write("ifmap"),
        "dram": prices.dram_pj(read_bytes, write_bytes),
        "vector": flops * prices.e_alu,
    }
