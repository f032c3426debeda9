"""The surrogates' baseline in SCALE-Sim USER mode (``dram_mode="per_operand"``, every dataflow).

The array closed forms (``hwmodels.systolic.batch.gemm_cost_arrays``) have no stand-in for SCALE-Sim
USER mode's read-buffer window walk: its re-reads and the stalls they cause can multiply a layer's
latency, so a baseline without them left the trees a residual they could not learn on a network
they never saw (held-out ResNet-18 latency R^2 0.30). The model's own walk (``hwmodels.systolic.
user_mode``) costs as much as exact evaluation, so the ``per_operand`` pairs get the fold-level
walk (``hwmodels.systolic.user_mode_batch``: exact-rule walk over whole folds, the ifmap's duplicate
copies left out) put together as ``hwmodels.systolic.cost.gemm_cost`` does; ``approximate`` marks them
and the trees learn what the walk leaves out.
"""

from __future__ import annotations

import numpy as np

from hwmodels.systolic.batch import GemmShapes
from hwmodels.systolic.user_mode_batch import user_mode_traffic_batch

USER_MODE_DATAFLOWS = ("os", "ws", "is")  # the dataflows SCALE-Sim USER mode is emulated for


def user_mode_pair_costs(
    costs: dict[str, np.ndarray],
    gemms: GemmShapes,
    dataflow: str,
    rows: np.ndarray,
    cols: np.ndarray,
    words_if: np.ndarray,
    words_f: np.ndarray,
    words_per_cycle: np.ndarray,
) -> dict[str, np.ndarray]:
    """``gemm_cost_arrays``'s figures for (designs, GEMMs) of one ``per_operand`` group with the USER
    walk's reads, fill and read stalls in place of the closed forms; the design arrays are (designs,).

    Per copy: busy = max(compute lines + read stalls, ofmap writes during the run / bandwidth), and
    cycles = fill + copies x busy + tail, as the scalar model prices it."""
    if dataflow not in USER_MODE_DATAFLOWS or not gemms.lowered:
        return costs
    nd, ng = len(rows), len(gemms.lowered)
    shape = (nd, ng)
    out = {name: np.array(np.broadcast_to(value, shape), dtype=float) for name, value in costs.items()}
    out["approximate"] = np.array(np.broadcast_to(costs["approximate"], shape), dtype=bool)
    copies = gemms.count
    for d in range(nd):
        sram = (int(words_if[d]), int(words_f[d]))
        bw = float(words_per_cycle[d])
        for j, gemm in enumerate(gemms.lowered):
            if gemm.window_pattern is not None:  # sparse N:M across channels: the model keeps its closed form
                continue
            user = user_mode_traffic_batch(gemm, int(rows[d]), int(cols[d]), dataflow, sram, bw)
            n = copies[j]
            lines = out["compute_cycles"][d, j] / n
            tail = out["tail_cycles"][d, j]
            during_of = max(0.0, out["ofmap_dram_writes"][d, j] / n - tail * bw)
            busy = max(lines + user.read_stall_cycles, during_of / bw)
            out["fill_cycles"][d, j] = user.fill_cycles
            out["busy_cycles"][d, j] = n * busy
            out["cycles"][d, j] = user.fill_cycles + n * busy + tail
            out["approximate"][d, j] = True
            out["ifmap_dram_reads"][d, j] = n * user.ifmap_dram_reads
            out["filter_dram_reads"][d, j] = n * user.filter_dram_reads
    return out
