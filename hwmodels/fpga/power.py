"""Power of an hls4ml-style FPGA design: device static power plus dynamic power per resource and clock.

Why this shape: it is how the Xilinx Power Estimator (UG440) prices a design before implementation -- each
resource's count x clock frequency x activity x a per-resource coefficient, plus the device's static power --
so a design's power follows its DSP, LUT, FF and BRAM use and its clock, the quantities the fpga_dataflow model
already predicts. The coefficients live in ``hwmodels.catalogs.fpga.POWER`` with their sources (most are
UNVERIFIED estimates: see each one's citation).

``activity`` scales every dynamic term: 1.0 runs the design at the catalog's stated toggle rate every cycle (a
streaming design kept busy), 0.0 is an idle, clock-gated design that draws static power only.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwmodels.catalogs.fpga import FpgaPart, power_figures

POWER_COMPONENTS = ("static", "dsp", "lut", "ff", "bram", "uram", "clock")
POWER_NOTE = (
    "FPGA design power is an XPE-style estimate (hwmodels.fpga.power): the part's static power plus dynamic power "
    "per DSP, LUT, FF and BRAM at the design's clock and UG440's default 12.5% toggle rate, the design kept busy; "
    "the coefficients are UNVERIFIED estimates (hwmodels.catalogs.fpga.POWER), not a Vivado power report"
)


@dataclass(frozen=True)
class FpgaPower:
    """A design's power in watts, per component (``POWER_COMPONENTS``)."""

    watts: dict[str, float]

    @property
    def total_w(self) -> float:
        return sum(self.watts.values())

    @property
    def dynamic_w(self) -> float:
        return self.total_w - self.watts["static"]


def design_power(
    part: FpgaPart,
    resources: dict[str, float],
    clock_mhz: float,
    *,
    uram: float = 0.0,
    activity: float = 1.0,
) -> FpgaPower:
    """Static + dynamic power of a design using ``resources`` (the METRICS names dsp, lut, ff, bram) on ``part``."""
    figures = power_figures(part)
    dynamic = activity * clock_mhz * 1e-6  # uW/MHz x MHz -> W
    ff = resources["ff"]
    watts = {
        "static": figures.static_w.value,
        "dsp": resources["dsp"] * figures.dsp_uw_per_mhz.value * dynamic,
        "lut": resources["lut"] * figures.lut_uw_per_mhz.value * dynamic,
        "ff": ff * figures.ff_uw_per_mhz.value * dynamic,
        "bram": resources["bram"] * figures.bram18k_uw_per_mhz.value * dynamic,
        "uram": uram * figures.uram_uw_per_mhz.value * dynamic,
        "clock": (figures.clock_network_uw_per_mhz.value + ff * figures.clock_per_ff_uw_per_mhz.value) * dynamic,
    }
    return FpgaPower(watts)
