"""dse beside AccelForge on one layer (issue #28): the dse design equivalent to an AccelForge digital architecture,
priced with AccelForge's per-action energies, energy and action counts per component and tensor side by side, and
the last line ``total energy: dse X uJ, AccelForge Y uJ, error Z %``.

    python benchmarks/accelforge_compare.py --arch ARCH.yaml --result RESULT.json [--mapper fold|cpsat|best]
        [--dataflow ws|os|is|best] [--workload WORKLOAD.yaml] [--cpsat-s 5]

e.g. from ``../shared/data/accelforge``: ``--arch arches/tpu_v4i.yaml --result results/tpu_v4i_gemm512_energy.json``.
How the design is built and priced: ``dse.accelforge``.
"""

from __future__ import annotations

import sys

from dse.accelforge import main

if __name__ == "__main__":
    sys.exit(main())
