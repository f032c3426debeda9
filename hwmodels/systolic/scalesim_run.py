"""Run SCALE-Sim 3.0.0 itself on a few layers and read back its reports.

The one driver of the real simulator: the validation tests and benchmarks (through
``tests/scalesim_runner.py``) and ``dse surrogate dataset --truth scalesim``
(``surrogates.truth.scalesim``) all run the peer this way. SCALE-Sim is driven through its
Python API in a temporary directory; it needs a ``[layout]`` section and a layout file even when no
custom layout is used, and in USER mode it reads the ifmap/filter DRAM bandwidth from the layout
section's ``*SRAMBankBandwidth`` (the ofmap one from ``Bandwidth``), so both are set to ``user_bw``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


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
