"""SCALE-Sim 3.0.0 next to the systolic family: the one adapter between the two.

It runs the real simulator on a few layers and reads its reports back, and translates both ways
between SCALE-Sim's inputs and ours: a SCALE-Sim config <-> a systolic design point
(:func:`arch_point`, :func:`scalesim_config`), SCALE-Sim layers <-> our graph and lowered GEMMs
(:func:`layer_graph`, :func:`scalesim_layer`), and our per-layer figures under SCALE-Sim's report
names (:func:`layer_figures`). The validation tests, the benchmarks and
``dse surrogate dataset --truth scalesim`` (``surrogates.truth.scalesim``) all use it.

SCALE-Sim is driven through its Python API in a temporary directory; it needs a ``[layout]``
section and a layout file even when no custom layout is used, and in USER mode it reads the
ifmap/filter DRAM bandwidth from the layout section's ``*SRAMBankBandwidth`` (the ofmap one from
``Bandwidth``), so both are set to ``user_bw``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dse.errors import UserError
from dse.graph import Graph, GraphBuilder
from dse.importers.sparsity import parse_pattern, with_sparsity
from hwmodels.systolic.compute import LoweredGemm
from hwmodels.systolic.cost import gemm_cost
from hwmodels.systolic.sparse import SparseLowering, scalesim_sparse_report
from templates.systolic import SystolicArch

TRUTH_WHERE = "template.params"  # where a design SCALE-Sim cannot represent is refused


@dataclass(frozen=True)
class ScaleSimLayer:
    """One row of a SCALE-Sim convolution topology (no padding; a GEMM is a 1x1 'conv')."""

    name: str
    ifmap_h: int
    ifmap_w: int
    filt_h: int
    filt_w: int
    channels: int
    num_filters: int
    stride: int = 1
    sparsity: str = ""  # SCALE-Sim v3's per-layer "N:M" column ("" = the column left out: dense)


@dataclass(frozen=True)
class ScaleSimConfig:
    rows: int
    cols: int
    dataflow: str  # os | ws | is
    ifmap_kb: int = 64
    filter_kb: int = 64
    ofmap_kb: int = 64
    bw_mode: str = "CALC"  # CALC | USER
    user_bw: int = 10  # words/cycle, used in USER mode
    sparsity_support: bool = False  # SCALE-Sim 3's [sparsity] section
    sparse_rep: str = "ellpack_block"  # csr | csc | ellpack_block
    optimized_mapping: bool = False
    block_size: int = 8

    @property
    def run_name(self) -> str:
        sparse = f"_sp{self.sparse_rep}" if self.sparsity_support else ""
        return f"r{self.rows}x{self.cols}_{self.dataflow}_{self.bw_mode.lower()}{self.user_bw}{sparse}"

    @classmethod
    def from_reference_row(cls, row: dict) -> ScaleSimConfig:
        """The configuration of one row of the shared ``resnet18_per_layer.csv`` (its runs use 10 words/cycle)."""
        return cls(
            int(row["array_rows"]),
            int(row["array_cols"]),
            row["dataflow"],
            int(row["ifmap_sram_kb"]),
            int(row["filter_sram_kb"]),
            int(row["ofmap_sram_kb"]),
            row["bw_mode"],
            10,
        )


def config_text(cfg: ScaleSimConfig) -> str:
    """A complete SCALE-Sim .cfg (the same layout as the shared reference runs)."""
    bank_bw = cfg.user_bw if cfg.bw_mode == "USER" else 100
    return f"""[general]
run_name = {cfg.run_name}

[architecture_presets]
ArrayHeight:    {cfg.rows}
ArrayWidth:     {cfg.cols}
IfmapSramSzkB:   {cfg.ifmap_kb}
FilterSramSzkB:  {cfg.filter_kb}
OfmapSramSzkB:   {cfg.ofmap_kb}
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Bandwidth : {cfg.user_bw}
Dataflow : {cfg.dataflow}
MemoryBanks:   1
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: {bank_bw}
IfmapSRAMBankNum: {1 if cfg.bw_mode == "USER" else 10}
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: {bank_bw}
FilterSRAMBankNum: {1 if cfg.bw_mode == "USER" else 10}
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : {str(cfg.sparsity_support).lower()}
SparseRep : {cfg.sparse_rep}
OptimizedMapping : {str(cfg.optimized_mapping).lower()}
BlockSize : {cfg.block_size}
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: {cfg.bw_mode}
UseRamulatorTrace: False
"""


def topology_text(layers: list[ScaleSimLayer]) -> str:
    # SCALE-Sim drops the last comma-separated field of every row, so each row ends with a comma.
    # SCALE-Sim v3 reads an optional trailing "N:M" column (sparsity ratio) per layer.
    head = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,"
    lines = [head + (" Sparsity," if any(ly.sparsity for ly in layers) else "")]
    for ly in layers:
        nm = f"{ly.sparsity}," if ly.sparsity else ""
        lines.append(
            f"{ly.name},{ly.ifmap_h},{ly.ifmap_w},{ly.filt_h},{ly.filt_w},{ly.channels},{ly.num_filters},{ly.stride},{nm}"
        )
    return "\n".join(lines) + "\n"


def read_report(path: Path) -> list[dict[str, float]]:
    with open(path) as f:
        rows = list(csv.reader(f))
    header = [h.strip() for h in rows[0] if h.strip()]
    out = []
    for row in rows[1:]:
        vals = [v.strip() for v in row if v.strip()]
        out.append({h: _number(v) for h, v in zip(header, vals)})
    return out


def _number(text: str) -> float | str:
    """A report cell as a number (the sparse report also has one text column, the representation)."""
    try:
        return float(text)
    except ValueError:
        return text


def _sparse_fields(sparse: dict[str, float]) -> dict[str, float]:
    """SPARSE_REPORT's storage figures (words; SCALE-Sim counts metadata in 32-bit words)."""
    if not sparse:
        return {}
    by_start = {k.split("(")[0].strip().lower(): v for k, v in sparse.items()}
    return {
        "original_filter_storage": by_start["original filter storage"],
        "new_filter_storage": by_start["new storage"],
        "filter_metadata_storage": by_start["filter metadata storage"],
    }


def run_scalesim(layers: list[ScaleSimLayer], cfg: ScaleSimConfig, workdir: Path | None = None) -> list[dict]:
    """Run SCALE-Sim on ``layers`` (one layer per run, so each gets its own wall time).

    Returns one dict per layer with the report fields under the same names as the shared
    ``resnet18_per_layer.csv`` (total_cycles_incl_prefetch, compute_cycles, dram_ifmap_reads, ...).
    """
    from scalesim.scale_sim import scalesim  # imported lazily: a heavy optional dependency

    results = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        tmpdir = Path(tmp)
        cfg_path = tmpdir / "run.cfg"
        cfg_path.write_text(config_text(cfg))
        layout_path = tmpdir / "layout.csv"
        layout_path.write_text("Layer name,\n")
        for i, layer in enumerate(layers):
            topo_path = tmpdir / f"topo{i}.csv"
            topo_path.write_text(topology_text([layer]))
            out_dir = tmpdir / f"out{i}"
            sim = scalesim(
                save_disk_space=True,
                verbose=False,
                config=str(cfg_path),
                topology=str(topo_path),
                layout=str(layout_path),
            )
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                sim.run_scale(top_path=str(out_dir))
            wall = time.perf_counter() - start
            report_dir = out_dir / cfg.run_name
            comp = read_report(report_dir / "COMPUTE_REPORT.csv")[0]
            detail = read_report(report_dir / "DETAILED_ACCESS_REPORT.csv")[0]
            sparse = read_report(report_dir / "SPARSE_REPORT.csv")[0] if cfg.sparsity_support else {}
            results.append(
                {
                    **_sparse_fields(sparse),
                    "layer": layer.name,
                    "total_cycles_incl_prefetch": comp["Total Cycles (incl. prefetch)"],
                    "compute_cycles": comp["Total Cycles"],
                    "stall_cycles": comp["Stall Cycles"],
                    "dram_ifmap_reads": detail["DRAM IFMAP Reads"],
                    "dram_filter_reads": detail["DRAM Filter Reads"],
                    "dram_ofmap_writes": detail["DRAM OFMAP Writes"],
                    "dram_ifmap_start_cycle": detail["DRAM IFMAP Start Cycle"],
                    "dram_filter_start_cycle": detail["DRAM Filter Start Cycle"],
                    "dram_ofmap_stop_cycle": detail["DRAM OFMAP Stop Cycle"],
                    "sim_wall_s": wall,
                }
            )
    return results


# ---------------------------------------------------------------------------------------------------
# SCALE-Sim's inputs <-> ours
# ---------------------------------------------------------------------------------------------------
def arch_point(cfg: ScaleSimConfig) -> dict[str, Any]:
    """The systolic template point equivalent to a SCALE-Sim config (int8 = SCALE-Sim's 1-byte word).

    CALC -> dram_mode 'unlimited' with the 10 words/cycle SCALE-Sim hard-codes for the initial fill;
    USER B words/cycle -> dram_mode 'per_operand' at B GB/s (int8, 1000 MHz).
    """
    calc = cfg.bw_mode == "CALC"
    return {
        "rows": cfg.rows,
        "cols": cfg.cols,
        "dataflow": cfg.dataflow,
        "ifmap_sram_kib": cfg.ifmap_kb,
        "filter_sram_kib": cfg.filter_kb,
        "ofmap_sram_kib": cfg.ofmap_kb,
        "dram_gbps": 10.0 if calc else float(cfg.user_bw),
        "freq_mhz": 1000.0,
        "precision": "int8",
        "dram_mode": "unlimited" if calc else "per_operand",
        "sparsity_support": cfg.sparsity_support,
        "sparse_rep": cfg.sparse_rep,
        "sparsity_optimized_mapping": cfg.optimized_mapping,
        "sparsity_block_size": cfg.block_size,
    }


def scalesim_config(arch: SystolicArch) -> ScaleSimConfig:
    """The SCALE-Sim configuration of a systolic design (as the validation tests map it), or a UserError.

    ``per_operand`` -> USER mode at the design's DRAM words/cycle, rounded to a whole word as the
    model's own USER emulation does; ``unlimited`` -> CALC. SRAMs in SCALE-Sim's kB of 1024 words.
    """
    design = f"design rows={arch.rows} cols={arch.cols} dataflow={arch.dataflow} dram_mode={arch.dram_mode}"
    if arch.dram_mode == "shared":
        raise UserError(
            f"{design}: SCALE-Sim has no shared DRAM channel; --truth scalesim needs dram_mode "
            "per_operand (SCALE-Sim USER bandwidth) or unlimited (SCALE-Sim CALC)",
            where=TRUTH_WHERE,
        )
    if arch.sparsity_support:
        raise UserError(f"{design}: --truth scalesim runs dense layers; set sparsity_support: false", where=TRUTH_WHERE)
    kb = {}
    for which in ("ifmap", "filter", "ofmap"):
        words = arch.sram_words(which)
        if words % 1024 or words == 0:
            raise UserError(
                f"{design}: the {which} SRAM holds {words} words, not a whole number of SCALE-Sim's "
                "1024-word kB; choose SRAM sizes (KiB x word bytes) that are",
                where=TRUTH_WHERE,
            )
        kb[which] = words // 1024
    user = arch.dram_mode == "per_operand"
    bandwidth = max(1, round(arch.dram_words_per_cycle)) if user else 10
    mode = "USER" if user else "CALC"
    return ScaleSimConfig(arch.rows, arch.cols, arch.dataflow, kb["ifmap"], kb["filter"], kb["ofmap"], mode, bandwidth)


def scalesim_layer(gemm: LoweredGemm, op_name: str) -> ScaleSimLayer:
    """The SCALE-Sim layer of one lowered GEMM copy: the smallest unpadded image whose ceil-sized
    output is the op's P x Q (so M, K, N are the op's; a matmul is a 1 x M image of K channels)."""
    g = gemm.geometry
    if gemm.window_pattern is not None:
        raise UserError(f"op {op_name!r} is sparse; --truth scalesim runs dense layers", where=TRUTH_WHERE)
    if g.stride_h != g.stride_w:
        raise UserError(
            f"op {op_name!r} has strides {g.stride_h}x{g.stride_w}; SCALE-Sim has one stride per layer",
            where=TRUTH_WHERE,
        )
    height = (g.P - 1) * g.stride_h + g.R
    width = (g.Q - 1) * g.stride_w + g.S
    return ScaleSimLayer("layer", height, width, g.R, g.S, g.C, gemm.N, g.stride_h)


def layer_graph(layers: list[ScaleSimLayer]) -> Graph:
    """One conv op per SCALE-Sim layer.

    SCALE-Sim's topologies are unpadded, but it sizes the output as ceil((H - R + stride) / stride),
    one more than floor when the stride does not divide H - R: its last window hangs over the edge
    (those addresses are never fetched). The same output comes from padding the bottom/right edge.
    """
    b = GraphBuilder("scalesim_layers")
    for ly in layers:
        x = b.input(f"{ly.name}_in", (1, ly.channels, ly.ifmap_h, ly.ifmap_w))
        p = math.ceil((ly.ifmap_h - ly.filt_h + ly.stride) / ly.stride)
        q = math.ceil((ly.ifmap_w - ly.filt_w + ly.stride) / ly.stride)
        pad_b = (p - 1) * ly.stride + ly.filt_h - ly.ifmap_h
        pad_r = (q - 1) * ly.stride + ly.filt_w - ly.ifmap_w
        b.conv(x, ly.num_filters, (ly.filt_h, ly.filt_w), stride=ly.stride, pad=(0, 0, pad_b, pad_r), name=ly.name)
    graph = b.build()
    return with_sparsity(graph, {ly.name: parse_pattern(ly.sparsity) for ly in layers if ly.sparsity})


def layer_figures(
    layer: ScaleSimLayer,
    gemm: LoweredGemm,
    sparse: SparseLowering | None,
    arch: SystolicArch,
    cfg: ScaleSimConfig,
) -> dict[str, Any]:
    """Our model's figures for one mapped layer, under SCALE-Sim's report names (as :func:`run_scalesim`)."""
    cost = gemm_cost(gemm, arch)
    report = {}
    if cfg.sparsity_support and layer.sparsity:
        report = vars(scalesim_sparse_report(sparse.dense, sparse.pattern.n, sparse.pattern.m, cfg.sparse_rep))
    return {
        **report,
        "layer": layer.name,
        "total_cycles_incl_prefetch": cost.scalesim_total_cycles,
        "compute_cycles": cost.compute_cycles - 1,
        "dram_ifmap_reads": cost.ifmap_dram_reads,
        "dram_filter_reads": cost.filter_dram_reads,
        "dram_ofmap_writes": cost.ofmap_dram_writes,
    }
