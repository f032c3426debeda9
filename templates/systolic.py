"""The systolic-array template: a rows x cols MAC array with three double-buffered SRAMs
(ifmap, filter, ofmap) in front of one DRAM interface, plus a SIMD vector unit for non-MAC ops.

It mirrors SCALE-Sim's architecture presets (array shape, dataflow, SRAM sizes) and adds what a
design-space exploration needs: DRAM bandwidth in GB/s, clock, precision, technology node and the
vector unit. How a SCALE-Sim run maps onto these parameters:

- ``ArrayHeight/ArrayWidth`` -> ``rows``/``cols``; ``Dataflow`` -> ``dataflow``;
  ``IfmapSramSzkB`` etc. -> ``ifmap_sram_kib`` etc. (SCALE-Sim's word is one byte, so compare at int8).
- USER bandwidth of B words/cycle -> ``dram_mode="per_operand"`` (SCALE-Sim gives ifmap, filter and
  ofmap each their own B words/cycle port) with ``dram_gbps = B * word_bytes * freq_mhz / 1000``;
  e.g. 10 words/cycle at int8 and 1000 MHz = 10 GB/s.
- CALC bandwidth -> ``dram_mode="unlimited"``: no stall during compute, the initial SRAM fill at
  ``dram_gbps`` (SCALE-Sim hard-codes 10 words/cycle, i.e. 10 GB/s at int8 and 1 GHz) and the ofmap
  drain at ``cols`` words/cycle.
- ``dram_mode="shared"`` (the default, not in SCALE-Sim) is the physical case: one DRAM channel of
  ``dram_gbps`` shared by the three streams.

``scratchpad`` says how the on-chip SRAM is organised. ``split`` (the default, SCALE-Sim's): three
SRAMs, the ifmap SRAM feeding the array's left edge, the filter SRAM its top edge, the ofmap SRAM taking
its outputs and draining to DRAM; no path from the ofmap SRAM back into the array. ``unified``: one
scratchpad of ``sram_kib`` with one address space, banked so the array's input, weight and output
streams and the DMA each get a port (as Gemmini's scratchpad, a TPU's unified buffer or most NPUs'
shared buffer): an op's output tiles land in the scratchpad and the next op reads them from there.
The tiling mappers place every buffer anywhere in it; the fold mapper (the SCALE-Sim model) uses it
as three equal static partitions (``ifmap_sram_kib`` etc. are a third each), which a unified
scratchpad can always do, so fold figures are the split ones. Bank conflicts are not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dse.graph import PRECISION_BITS, GraphError
from dse.importers.sparsity import parse_pattern
from hwmodels.catalogs.actions import price_names
from hwmodels.catalogs.tech import TechNode
from templates.base import Arch, Param, Roofline, Template, TemplateError

# The precisions a systolic array takes, with their bit widths from the IR's one table.
PRECISIONS: dict[str, int] = {name: PRECISION_BITS[name] for name in ("int8", "int16", "fp16", "bf16", "fp32")}
DATAFLOWS = ("ws", "os", "is")
DRAM_MODES = ("shared", "per_operand", "unlimited")
SCRATCHPADS = ("split", "unified")
SPARSE_REPS = ("ellpack_block", "csr", "csc", "bitmask", "rle")  # hwmodels.catalogs.sparse.FORMATS
SPARSE_MACS = ("skip", "gate")
SPARSE_LAYERS = ("workload", "none", "all", "pointwise", "spatial", "inner")
DEFAULT_TECH = "asic-28nm"
SRAM_NAMES = ("ifmap_sram_kib", "filter_sram_kib", "ofmap_sram_kib")
DEFAULT_SRAM_KIB = 64.0  # each SRAM when neither it nor sram_kib is given
SRAM_PARTS = 3  # sram_kib is split equally over the three SRAMs
MIN_SRAM_WORDS = 200  # the double-buffered SRAM model needs at least this many words per SRAM


# The instantiation rules, written once for a point's scalars and for the surrogates' numpy columns of
# many points (``surrogates.systolic.features.arch_table``), so the two cannot drift apart.
def buffer_kib(own_given: Any, own_kib: Any, total_given: Any, sram_kib: Any) -> Any:
    """One SRAM's size in KiB: a third of ``sram_kib`` where that is given, else its own size, else
    ``DEFAULT_SRAM_KIB``. Scalars (a missing size may be None) or numpy columns."""
    if isinstance(own_given, np.ndarray) or isinstance(total_given, np.ndarray):
        return np.where(total_given, sram_kib / SRAM_PARTS, np.where(own_given, own_kib, DEFAULT_SRAM_KIB))
    if total_given:
        return sram_kib / SRAM_PARTS
    return own_kib if own_given else DEFAULT_SRAM_KIB


def word_bytes_of(bits: Any) -> Any:
    """Bytes per word of a precision's bit width (scalars or numpy columns)."""
    return bits // 8


def too_few_words(kib: Any, word_bytes: Any) -> Any:
    """Whether an SRAM of ``kib`` holds fewer than ``MIN_SRAM_WORDS`` words (scalars or numpy columns)."""
    return kib * 1024 / word_bytes < MIN_SRAM_WORDS


def accumulator_bits_of(acc_bits: Any, bits: Any, is_int: Any) -> Any:
    """The accumulator width: ``acc_bits`` where given (> 0), else the catalog's rule for the operand width
    (integers: ``TechNode.accumulator_bits``, 32 for int8 as TPU v1's accumulators; floats in fp32)."""
    out = np.where(acc_bits > 0, acc_bits, np.where(is_int, TechNode.accumulator_bits(bits), 32))
    return int(out) if np.ndim(out) == 0 else out


def lanes_of(vector_lanes: Any, cols: Any) -> Any:
    """SIMD lanes: ``vector_lanes``, or one per array column when it is 0 (scalars or numpy columns)."""
    if isinstance(vector_lanes, np.ndarray) or isinstance(cols, np.ndarray):
        return np.where(vector_lanes == 0, cols, vector_lanes)
    return vector_lanes or cols


def dram_words_per_cycle(dram_gbps: Any, freq_mhz: Any, word_bytes: Any) -> Any:
    """Words the DRAM interface moves in one array clock: GB/s divided by GHz, over the word size."""
    return dram_gbps * 1e3 / freq_mhz / word_bytes


@dataclass(frozen=True)
class SystolicArch(Arch):
    """One systolic design. SRAM sizes are per buffer, in KiB (for a unified scratchpad: a third of it each)."""

    kind: ClassVar[str] = "systolic"

    rows: int
    cols: int
    dataflow: str
    ifmap_sram_kib: float
    filter_sram_kib: float
    ofmap_sram_kib: float
    dram_gbps: float
    freq_mhz: float
    precision: str
    tech: str
    vector_lanes: int
    dram_mode: str = "shared"
    scratchpad: str = "split"
    # SCALE-Sim 3's [sparsity] section, under our names, and Sparseloop's gating vs skipping
    sparsity_support: bool = False
    sparse_rep: str = "ellpack_block"
    sparsity_optimized_mapping: bool = False
    sparsity_block_size: int = 4
    sparse_mac: str = "skip"
    # workload-side axes (DRACO): applied by the fold mapper to the graph it maps
    width_multiplier: float = 1.0
    round_channels: bool = False
    sparse_layers: str = "workload"
    sparse_pattern: str = "2:4"
    acc_bits: int = 0  # 0: the catalog's width for the precision (``accumulator_bits``)
    # words each PE keeps of each operand (1: a register); deeper scratchpads reuse operands in the PE (energy only)
    pe_weight_words: int = 1
    pe_input_words: int = 1
    pe_psum_words: int = 1

    @property
    def accumulator_bits(self) -> int:
        """Width of the partial sums the PEs keep and pass on (int8 -> 32 bits unless ``acc_bits`` says)."""
        return accumulator_bits_of(self.acc_bits, self.bits, self.precision.startswith("int"))

    @property
    def reshapes_workload(self) -> bool:
        """Whether the workload-side axes change the graph (DRACO width/rounding, a layer selection)."""
        return self.width_multiplier != 1.0 or self.round_channels or self.sparse_layers != "workload"

    @property
    def scratchpad_kib(self) -> float:
        """All on-chip SRAM together: the size of a unified scratchpad."""
        return self.ifmap_sram_kib + self.filter_sram_kib + self.ofmap_sram_kib

    @property
    def bits(self) -> int:
        return PRECISIONS[self.precision]

    @property
    def word_bytes(self) -> int:
        return word_bytes_of(self.bits)

    @property
    def dram_bytes_per_cycle(self) -> float:
        """GB/s divided by GHz: bytes the DRAM interface moves in one array clock."""
        return self.dram_gbps * 1e3 / self.freq_mhz

    @property
    def dram_words_per_cycle(self) -> float:
        return dram_words_per_cycle(self.dram_gbps, self.freq_mhz, self.word_bytes)

    @property
    def macs_per_cycle(self) -> int:
        return self.rows * self.cols

    def roofline(self) -> Roofline:
        """Every PE doing a MAC each clock, against the DRAM interface."""
        return Roofline(2.0 * self.macs_per_cycle * self.freq_mhz * 1e6, self.dram_gbps * 1e9)

    def sram_words(self, which: str) -> int:
        """Capacity of one SRAM ('ifmap' | 'filter' | 'ofmap') in words of this precision."""
        kib = {"ifmap": self.ifmap_sram_kib, "filter": self.filter_sram_kib, "ofmap": self.ofmap_sram_kib}[which]
        return int(kib * 1024 // self.word_bytes)


PE_SCRATCHPADS = ("weight", "input", "psum")  # the per-PE storage whose depth is a parameter


class SystolicTemplate(Template):
    kind: ClassVar[str] = "systolic"

    def params(self) -> list[Param]:
        return [
            Param("rows", "int", 32, "PE rows of the array", low=1, high=4096),
            Param("cols", "int", 32, "PE columns of the array", low=1, high=4096),
            Param("dataflow", "str", "os", "which operand stays in the PEs", choices=DATAFLOWS),
            Param("ifmap_sram_kib", "float", None, "ifmap SRAM (KiB, double-buffered); default 64", low=1, unit=" KiB"),
            Param("filter_sram_kib", "float", None, "filter SRAM (KiB); default 64", low=1, unit=" KiB"),
            Param("ofmap_sram_kib", "float", None, "ofmap SRAM (KiB); default 64", low=1, unit=" KiB"),
            Param("sram_kib", "float", None, "total SRAM, split equally over the three", low=3, unit=" KiB"),
            Param("dram_gbps", "float", 25.6, "DRAM bandwidth", low=1e-3, unit=" GB/s"),
            Param("freq_mhz", "float", 1000.0, "array clock", low=1, high=10000, unit=" MHz"),
            Param("precision", "str", "int8", "operand precision (sets the word size)", choices=tuple(PRECISIONS)),
            Param(
                "tech", "str", DEFAULT_TECH, "technology: a catalog node, or a per-action table (tpu-v4, eyeriss-65nm)"
            ),
            Param("vector_lanes", "int", 0, "SIMD lanes for non-MAC ops (0 = cols)", low=0, high=65536),
            Param("dram_mode", "str", "shared", "how the three streams share DRAM", choices=DRAM_MODES),
            Param(
                "scratchpad",
                "str",
                "split",
                "SRAM organisation: split (ifmap/filter/ofmap, SCALE-Sim) or unified (one scratchpad of sram_kib)",
                choices=SCRATCHPADS,
            ),
            Param(
                "sparsity_support",
                "bool",
                False,
                "sparse datapath (SCALE-Sim 3 SparsitySupport): N:M weights condensed",
            ),
            Param(
                "sparse_rep", "str", "ellpack_block", "compressed weight format (metadata size)", choices=SPARSE_REPS
            ),
            Param(
                "sparsity_optimized_mapping",
                "bool",
                False,
                "SCALE-Sim 3 OptimizedMapping (ws only): blocks of sparsity_block_size, N <= block/2 per column",
            ),
            Param(
                "sparsity_block_size",
                "int",
                4,
                "block size of the optimized mapping (SCALE-Sim BlockSize, <= rows)",
                low=2,
                high=4096,
            ),
            Param(
                "sparse_mac",
                "str",
                "skip",
                "ineffectual MACs: skip (condensed N:M, time and energy) or gate (energy only)",
                choices=SPARSE_MACS,
            ),
            Param("width_multiplier", "float", 1.0, "DRACO: scale every hidden layer's channels", low=0.05, high=8.0),
            Param(
                "round_channels",
                "bool",
                False,
                "DRACO: round each hidden layer's output channels up to a multiple of cols",
            ),
            Param(
                "sparse_layers",
                "str",
                "workload",
                "which conv/matmul layers take sparse_pattern (workload: as the spec says)",
                choices=SPARSE_LAYERS,
            ),
            Param("sparse_pattern", "str", "2:4", "N:M pattern (or density) of the layers sparse_layers picks"),
            Param(
                "acc_bits",
                "int",
                0,
                "partial-sum width in the PEs (energy only; 0 = 2*bits+16 for integers, 32 for floats)",
                low=0,
                high=64,
            ),
            *(
                Param(
                    f"pe_{role}_words",
                    "int",
                    1,
                    f"{role} words each PE keeps (1 = a register; deeper: a scratchpad reusing them, area in pe_array)",
                    low=1,
                    high=65536,
                )
                for role in PE_SCRATCHPADS
            ),
        ]

    def instantiate(self, point: Mapping[str, Any]) -> SystolicArch:
        v = self.resolve(point)
        individual = [n for n in SRAM_NAMES if v[n] is not None]
        if v["scratchpad"] == "unified" and individual:
            raise TemplateError(
                f"a unified scratchpad has one size: give sram_kib instead of {', '.join(individual)} "
                "(per-buffer sizes belong to scratchpad=split)",
                individual[0],
            )
        total_given = v["sram_kib"] is not None
        if total_given and individual:
            raise TemplateError(
                f"give either sram_kib (split equally) or the individual SRAM sizes, not both "
                f"(also got {', '.join(individual)})",
                "sram_kib",
            )
        sizes = tuple(buffer_kib(v[n] is not None, v[n], total_given, v["sram_kib"]) for n in SRAM_NAMES)
        word_bytes = word_bytes_of(PRECISIONS[v["precision"]])
        for name, kib in zip(SRAM_NAMES, sizes):
            if too_few_words(kib, word_bytes):
                raise TemplateError(
                    f"{name}={kib:g} KiB holds fewer than {MIN_SRAM_WORDS} {v['precision']} words; the "
                    f"double-buffered SRAM model needs at least {MIN_SRAM_WORDS} (use >= 1 KiB at int8)",
                    name,
                )
        names = list(price_names())
        if v["tech"] not in names:
            raise TemplateError(
                f"tech={v['tech']!r} is neither a catalog node nor an action table; choose one of: {', '.join(names)}",
                "tech",
            )
        lanes = lanes_of(v["vector_lanes"], v["cols"])
        if v["sparsity_optimized_mapping"]:
            if v["dataflow"] != "ws":
                raise TemplateError(
                    f"sparsity_optimized_mapping runs only under dataflow=ws (SCALE-Sim 3's optimized sparse "
                    f"mapping), not {v['dataflow']}",
                    "sparsity_optimized_mapping",
                )
            if v["sparsity_block_size"] > v["rows"] or v["sparsity_block_size"] % 2:
                raise TemplateError(
                    f"sparsity_block_size={v['sparsity_block_size']} must be even and <= rows={v['rows']}",
                    "sparsity_block_size",
                )
        check_pattern(v["sparse_pattern"])
        return SystolicArch(
            rows=v["rows"],
            cols=v["cols"],
            dataflow=v["dataflow"],
            ifmap_sram_kib=float(sizes[0]),
            filter_sram_kib=float(sizes[1]),
            ofmap_sram_kib=float(sizes[2]),
            dram_gbps=v["dram_gbps"],
            freq_mhz=v["freq_mhz"],
            precision=v["precision"],
            tech=v["tech"],
            vector_lanes=lanes,
            dram_mode=v["dram_mode"],
            scratchpad=v["scratchpad"],
            sparsity_support=v["sparsity_support"],
            sparse_rep=v["sparse_rep"],
            sparsity_optimized_mapping=v["sparsity_optimized_mapping"],
            sparsity_block_size=v["sparsity_block_size"],
            sparse_mac=v["sparse_mac"],
            width_multiplier=v["width_multiplier"],
            round_channels=v["round_channels"],
            sparse_layers=v["sparse_layers"],
            sparse_pattern=v["sparse_pattern"],
            acc_bits=v["acc_bits"],
            **{f"pe_{role}_words": v[f"pe_{role}_words"] for role in PE_SCRATCHPADS},
        )

    def instantiate_columns(
        self, points: Sequence[Mapping[str, Any]], fixed: Mapping[str, Any]
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """``instantiate`` for a batch of points (the array evaluation's designs): every ``SystolicArch``
        field as a column (numbers as floats, the rest as objects), and which points ``instantiate`` accepts;
        the caller instantiates a refused one alone for the template's own message. The same rules as
        ``instantiate`` (the module's column-ready functions), a dictionary look-up per value."""
        n = len(points)
        cols = self.resolve_columns(points, fixed)

        def given(name: str) -> np.ndarray:
            column = cols[name]
            if isinstance(column, np.ndarray):
                return np.ones(n, dtype=bool)
            return np.array([v is not None for v in column], dtype=bool)

        def number(name: str, default: float = 0.0) -> np.ndarray:
            column = cols[name]
            if isinstance(column, np.ndarray):
                return column.astype(float)
            return np.array([default if v is None else v for v in column], dtype=float)

        def labels(name: str) -> np.ndarray:
            out = np.empty(n, dtype=object)
            out[:] = list(cols[name])
            return out

        individual = given(SRAM_NAMES[0]) | given(SRAM_NAMES[1]) | given(SRAM_NAMES[2])
        scratchpad = labels("scratchpad")
        total = given("sram_kib")
        accepted = ~((scratchpad == "unified") & individual) & ~(total & individual)
        sizes = [buffer_kib(given(name), number(name), total, number("sram_kib")) for name in SRAM_NAMES]
        precision = labels("precision")
        bits = np.array([PRECISIONS[p] for p in precision], dtype=float)
        for kib in sizes:
            accepted &= ~too_few_words(kib, word_bytes_of(bits))
        known = set(price_names())
        tech = labels("tech")
        accepted &= np.array([t in known for t in tech], dtype=bool)
        rows, dataflow = number("rows"), labels("dataflow")
        optimized = labels("sparsity_optimized_mapping").astype(bool)
        block = number("sparsity_block_size")
        accepted &= ~(optimized & ((dataflow != "ws") | (block > rows) | (block % 2 != 0)))
        pattern = labels("sparse_pattern")
        for text in set(pattern):
            try:
                check_pattern(text)
            except TemplateError:
                accepted &= pattern != text
        columns = {
            "rows": rows,
            "cols": number("cols"),
            "dataflow": dataflow,
            **dict(zip(SRAM_NAMES, (np.asarray(kib, dtype=float) for kib in sizes))),
            "dram_gbps": number("dram_gbps"),
            "freq_mhz": number("freq_mhz"),
            "precision": precision,
            "tech": tech,
            "vector_lanes": lanes_of(number("vector_lanes"), number("cols")).astype(float),
            **{name: labels(name) for name in ("dram_mode", "scratchpad", "sparsity_support", "sparse_rep")},
            "sparsity_optimized_mapping": optimized.astype(object),
            "sparsity_block_size": block.astype(object),
            "sparse_mac": labels("sparse_mac"),
            "width_multiplier": number("width_multiplier").astype(object),
            **{name: labels(name) for name in ("round_channels", "sparse_layers")},
            "sparse_pattern": pattern,
            **{f"pe_{r}_words": number(f"pe_{r}_words", 1).astype(int).astype(object) for r in PE_SCRATCHPADS},
        }
        return columns, accepted


def check_pattern(text: str) -> None:
    """``sparse_pattern`` must read as a sparsity (``"2:4"``, ``"dense"``, a density)."""
    try:
        parse_pattern(_number_or_text(text), "sparse_pattern")
    except GraphError as err:
        raise TemplateError(str(err), "sparse_pattern") from None


def _number_or_text(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text
