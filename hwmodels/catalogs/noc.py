"""On-chip interconnect prices for the multicore template (``templates.multicore``), with their sources."""

from __future__ import annotations

from hwmodels.catalogs.tech import Sourced

# Moving data across a chip costs about 0.1 pJ per bit per mm of wire at 40 nm (Keckler, Dally, Khailany,
# Garland, Glasco, "GPUs and the Future of Parallel Computing", IEEE Micro 31(5), 2011, Fig. 1: 256 bits over
# 1 mm of on-chip wire ~26 pJ). One mesh hop between neighbouring cores of an edge NPU is taken as 1 mm, plus a
# router traversal of similar size, so ~0.8 pJ/byte/hop. UNVERIFIED: the figure was transcribed from memory
# of the paper's chart, the 1 mm hop length and the router share are assumptions; set noc_pj_per_byte per design.
NOC_PJ_PER_BYTE_HOP = Sourced(
    0.8,
    "pJ/byte/hop",
    "UNVERIFIED: ~0.1 pJ/bit/mm on-chip wire at 40 nm (Keckler et al., IEEE Micro 2011, Fig. 1), 1 mm per hop",
)
