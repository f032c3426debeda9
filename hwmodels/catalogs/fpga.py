"""The FPGA part catalog: resource counts of the parts the fpga_dataflow template targets, with sources.

Why a catalog: "fits the part" is only meaningful against the real capacity of the device, and a
utilisation figure is only as good as its denominator. Every count is a ``Sourced`` value naming the
Xilinx/AMD data sheet table it comes from. BRAM is counted in 18 Kb blocks (the unit Vivado/Vitis HLS
reports use), i.e. twice the data sheets' 36 Kb block count. The DSP slice geometry (multiplier port
widths) sets how many slices one multiplication of a given width needs.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from hwmodels.catalogs.tech import UNVERIFIED, Sourced

DS962 = "AMD/Xilinx DS962 'Alveo U200 and U250 Data Center Accelerator Cards Data Sheet', Table 1 (U250 column)"
DS963 = "AMD/Xilinx DS963 'Alveo U280 Data Center Accelerator Card Data Sheet', Table 1"
DS978 = "AMD/Xilinx DS978 'Alveo U55C Data Center Accelerator Cards Data Sheet', Table 1"
DS923 = (
    "AMD/Xilinx DS923 'Virtex UltraScale+ FPGA Data Sheet' / DS890 'UltraScale Architecture and Product Overview', "
    "Virtex UltraScale+ device table"
)
DS891 = (
    "AMD/Xilinx DS891 'Zynq UltraScale+ MPSoC Data Sheet: Overview', "
    "Table 'Zynq UltraScale+ MPSoC: EG Device Feature Summary'"
)
DS190 = "AMD/Xilinx DS190 'Zynq-7000 SoC Data Sheet: Overview', Table 'Zynq-7000 SoC Family' (Z-7020 column)"
UG579 = (
    "AMD/Xilinx UG579 'UltraScale Architecture DSP Slice User Guide': DSP48E2 has a 27 x 18 two's-complement multiplier"
)
UG479 = "AMD/Xilinx UG479 '7 Series DSP48E1 Slice User Guide': DSP48E1 has a 25 x 18 two's-complement multiplier"


# Our metric -> its key in hls4ml's parsed C-synthesis report (``CSynthesisReport`` from
# ``hls4ml.report.parse_vivado_report``): the one table of HLS-report names, for comparing predictions with
# synthesis and for reading measured designs. The wa-hls4ml data set names its columns after the same keys with an
# ``_hls`` suffix (:func:`wa_hls4ml_column`).
HLS_REPORT_KEYS: dict[str, str] = {
    "latency_cycles": "WorstLatency",
    "ii_cycles": "IntervalMax",
    "dsp": "DSP",
    "lut": "LUT",
    "ff": "FF",
    "bram": "BRAM_18K",
}
HLS_REPORT_LEGACY_DSP_KEY = "DSP48E"  # older Vivado reports name the DSP count after the slice


def wa_hls4ml_column(metric: str) -> str:
    """The wa-hls4ml CSV column holding ``metric`` (``lut`` -> ``LUT_hls``)."""
    return HLS_REPORT_KEYS[metric] + "_hls"


class UnknownPartError(KeyError):
    """A part name that is not in the catalog; the message lists the known names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class FpgaPart:
    """One FPGA part: its capacity and DSP geometry. ``hls_part`` is the full part string hls4ml/Vivado take."""

    name: str
    hls_part: str
    family: str
    lut: Sourced
    ff: Sourced
    dsp: Sourced
    bram18k: Sourced
    uram: Sourced
    dsp_a_bits: Sourced  # wide multiplier port
    dsp_b_bits: Sourced  # narrow multiplier port

    def sourced_fields(self) -> dict[str, Sourced]:
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), Sourced)}

    def sources(self) -> dict[str, str]:
        """Field name -> citation."""
        return {name: s.source for name, s in self.sourced_fields().items()}

    def capacity(self) -> dict[str, float]:
        """Resource name (the METRICS names dsp, lut, ff, bram) -> count available on the part."""
        return {"dsp": self.dsp.value, "lut": self.lut.value, "ff": self.ff.value, "bram": self.bram18k.value}


def _count(value: float, unit: str, source: str, what: str) -> Sourced:
    return Sourced(float(value), unit, f"{source}: {what}")


def _bram18(blocks36: int, source: str) -> Sourced:
    return Sourced(float(2 * blocks36), "BRAM18K", f"{source}: {blocks36} x 36 Kb block RAMs = {2 * blocks36} x 18 Kb")


def _ultrascale_plus(name: str, hls_part: str, family: str, src: str, lut: int, ff: int, dsp: int, b36: int, uram: int):
    return FpgaPart(
        name=name,
        hls_part=hls_part,
        family=family,
        lut=_count(lut, "LUT6", src, f"{lut:,} CLB LUTs"),
        ff=_count(ff, "FF", src, f"{ff:,} CLB flip-flops (registers)"),
        dsp=_count(dsp, "DSP48E2", src, f"{dsp:,} DSP slices"),
        bram18k=_bram18(b36, src),
        uram=_count(uram, "URAM288", src, f"{uram:,} UltraRAM blocks (288 Kb)"),
        dsp_a_bits=Sourced(27.0, "bits", UG579),
        dsp_b_bits=Sourced(18.0, "bits", UG579),
    )


PARTS: dict[str, FpgaPart] = {
    p.name: p
    for p in (
        _ultrascale_plus(
            "xcu250",
            "xcu250-figd2104-2L-e",
            "Alveo U250 (Virtex UltraScale+)",
            DS962,
            1_728_000,
            3_456_000,
            12_288,
            2_688,
            1_280,
        ),
        _ultrascale_plus(
            "xcu280",
            "xcu280-fsvh2892-2L-e",
            "Alveo U280 (Virtex UltraScale+ HBM)",
            DS963,
            1_303_680,
            2_607_360,
            9_024,
            2_016,
            960,
        ),
        _ultrascale_plus(
            "xcu55c",
            "xcu55c-fsvh2892-2L-e",
            "Alveo U55C (Virtex UltraScale+ HBM)",
            DS978,
            1_303_680,
            2_607_360,
            9_024,
            2_016,
            960,
        ),
        _ultrascale_plus(
            "xcvu9p", "xcvu9p-flga2104-2L-e", "Virtex UltraScale+", DS923, 1_182_240, 2_364_480, 6_840, 2_160, 960
        ),
        _ultrascale_plus(
            "xcvu13p", "xcvu13p-flga2577-2-e", "Virtex UltraScale+", DS923, 1_728_000, 3_456_000, 12_288, 2_688, 1_280
        ),
        _ultrascale_plus(
            "xczu9eg", "xczu9eg-ffvb1156-2-e", "Zynq UltraScale+ MPSoC", DS891, 274_080, 548_160, 2_520, 912, 0
        ),
        FpgaPart(
            name="xc7z020",
            hls_part="xc7z020clg400-1",
            family="Zynq-7000 (Artix-7 fabric)",
            lut=_count(53_200, "LUT6", DS190, "53,200 LUTs"),
            ff=_count(106_400, "FF", DS190, "106,400 flip-flops"),
            dsp=_count(220, "DSP48E1", DS190, "220 DSP slices"),
            bram18k=_bram18(140, DS190),
            uram=_count(0, "URAM288", DS190, "no UltraRAM in the 7 series"),
            dsp_a_bits=Sourced(25.0, "bits", UG479),
            dsp_b_bits=Sourced(18.0, "bits", UG479),
        ),
    )
}


def part_names() -> list[str]:
    return list(PARTS)


def get_part(name: str) -> FpgaPart:
    """The part by short name (``xcu250``) or by its full hls4ml part string (``xcu250-figd2104-2L-e``)."""
    if name in PARTS:
        return PARTS[name]
    for part in PARTS.values():
        if name == part.hls_part:
            return part
    raise UnknownPartError(f"unknown FPGA part {name!r}; choose one of: {', '.join(PARTS)}")


# ---------------------------------------------------------------------------------------------------
# Power figures per part (hwmodels.fpga.power prices a design with them)
# ---------------------------------------------------------------------------------------------------
UG440_TOGGLE = (
    "AMD/Xilinx UG440 'Xilinx Power Estimator User Guide' (2021.2), 'Using the Logic Sheet': the default toggle "
    "rate 12.5% (one transition every eight cycles) and average fanout 3 are 'an average extracted from a suite of "
    "customer designs'; signal rate (Mtr/s) = clock frequency (MHz) x toggle rate"
)
UG440_SHEETS = (
    "AMD/Xilinx UG440 'Xilinx Power Estimator User Guide', Logic/DSP/BRAM/Clock sheets: XPE prices each resource "
    "as count x clock (MHz) x toggle (or enable) rate x a per-resource coefficient, plus device static power"
)
_US_PLUS_CHOSEN = (
    "chosen so that a 100k-LUT, 200k-FF, 1k-DSP, 500-BRAM18K design at 300 MHz and 12.5% toggle draws about 4.5 W "
    "of dynamic power, the order of magnitude XPE gives for such a 16 nm UltraScale+ design at VCCINT 0.85 V; "
    "no published per-resource coefficient was found with the search tool"
)
_SEVEN_SERIES_CHOSEN = (
    "the UltraScale+ coefficient x 2: 28 nm HPL at VCCINT 1.0 V has about (1.0/0.85)^2 = 1.38x the switching "
    "energy per unit capacitance and more capacitance per resource than 16 nm; no published per-resource "
    "coefficient was found"
)
_STATIC_CHOSEN = (
    "device static (leakage) power at a typical process corner and 50 C junction, scaled from the part's LUT count "
    "at {per_mlut:g} W per million LUTs ({what}); XPE's device-static figure for the part was not found with the "
    "search tool"
)


@dataclass(frozen=True)
class FpgaPowerFigures:
    """The power coefficients of one part: static power, and dynamic power per resource per MHz of clock.

    Dynamic coefficients are microwatts per MHz per resource at the stated ``toggle_rate`` (DSP, LUT, FF) or
    enable rate (BRAM, URAM; half their cycles, XPE's default), so a design's dynamic power is count x
    coefficient x clock MHz. ``clock_per_ff`` prices the clock tree per clocked flip-flop (the clock net toggles
    every cycle), ``clock_network`` the global clock buffer and spine a design always drives.
    """

    static_w: Sourced
    toggle_rate: Sourced
    dsp_uw_per_mhz: Sourced
    lut_uw_per_mhz: Sourced
    ff_uw_per_mhz: Sourced
    bram18k_uw_per_mhz: Sourced
    uram_uw_per_mhz: Sourced
    clock_per_ff_uw_per_mhz: Sourced
    clock_network_uw_per_mhz: Sourced

    def sources(self) -> dict[str, str]:
        """Field name -> citation."""
        return {f.name: getattr(self, f.name).source for f in fields(self)}


def _coefficient(value: float, what: str, chosen: str) -> Sourced:
    return Sourced(value, "uW/MHz", f"{UNVERIFIED}: {what}; {chosen}; the pricing rule is {UG440_SHEETS}")


def _static(lut: float, per_mlut: float, what: str) -> Sourced:
    watts = round(lut * 1e-6 * per_mlut, 3)
    return Sourced(watts, "W", f"{UNVERIFIED}: " + _STATIC_CHOSEN.format(per_mlut=per_mlut, what=what))


def _power_figures(part: FpgaPart, static_per_mlut: float, process: str, scale: float, chosen: str):
    has_uram = part.uram.value > 0
    return FpgaPowerFigures(
        static_w=_static(part.lut.value, static_per_mlut, process),
        toggle_rate=Sourced(0.125, "fraction", UG440_TOGGLE),
        dsp_uw_per_mhz=_coefficient(3.0 * scale, "one DSP slice multiplying and accumulating", chosen),
        lut_uw_per_mhz=_coefficient(0.07 * scale, "one LUT6 as logic with its share of routing (fanout 3)", chosen),
        ff_uw_per_mhz=_coefficient(0.015 * scale, "one CLB flip-flop's data path", chosen),
        bram18k_uw_per_mhz=_coefficient(
            2.0 * scale, "one 18 Kb block RAM port read every other cycle (50% enable)", chosen
        ),
        uram_uw_per_mhz=_coefficient(
            6.0 * scale if has_uram else 0.0,
            "one 288 Kb UltraRAM at 50% enable" if has_uram else "the part has no UltraRAM",
            chosen,
        ),
        clock_per_ff_uw_per_mhz=_coefficient(0.005 * scale, "the clock tree's load per clocked flip-flop", chosen),
        clock_network_uw_per_mhz=_coefficient(
            50.0 * scale,
            "one global clock buffer and its spine (about 15 mW at 300 MHz; the one 7-series Vivado power report "
            "found, in benchmarks/fpga_power.py, leaves room for no more than about 10 mW at 100 MHz)",
            chosen,
        ),
    )


_US_PLUS_PROCESS = "16 nm FinFET UltraScale+ (TSMC 16FF+), VCCINT 0.85 V"
_SEVEN_SERIES_PROCESS = "28 nm HPL 7 series, VCCINT 1.0 V, about 1/2 the UltraScale+ leakage per LUT-sized tile"

POWER: dict[str, FpgaPowerFigures] = {
    name: _power_figures(part, 2.5, _US_PLUS_PROCESS, 1.0, _US_PLUS_CHOSEN)
    for name, part in PARTS.items()
    if part.name != "xc7z020"
}
POWER["xc7z020"] = _power_figures(PARTS["xc7z020"], 2.0, _SEVEN_SERIES_PROCESS, 2.0, _SEVEN_SERIES_CHOSEN)


def power_figures(part: FpgaPart) -> FpgaPowerFigures:
    """The power coefficients of ``part`` (every catalog part has them)."""
    return POWER[part.name]
