"""SCALE-Sim CALC-mode DRAM reads (hwmodels.systolic.scalesim_calc) against SCALE-Sim itself.

Every CALC row of the shared ResNet-18 reference must match word for word; a few small layers are
also run live through SCALE-Sim 3.0.0 with 1-2 KiB SRAMs (so epochs end many times per layer) on
all three dataflows and a non-square array.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from dse.peers import scalesim_trace
from hwmodels.systolic.memory import epoch_words
from hwmodels.systolic.scalesim_calc import (
    calc_dram_reads,
    calc_dram_reads_replayed,
    epoch_reads,
    repeated_blocks_reads,
)
from hwmodels.systolic.scalesim_run import ScaleSimConfig, ScaleSimLayer, run_scalesim

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "scalesim" / "resnet18_per_layer.csv"


def _gemm_and_arch(layer: ScaleSimLayer, cfg: ScaleSimConfig):
    trace = scalesim_trace([layer], cfg)
    return trace.mapping.ops[layer.name].payload.gemm, trace.arch


def _calc_rows() -> list[dict]:
    with open(SHARED) as f:
        return [r for r in csv.DictReader(f) if r["bw_mode"] == "CALC"]


@pytest.mark.skipif(not SHARED.exists(), reason=f"shared SCALE-Sim reference data not found at {SHARED}")
def test_every_calc_row_of_the_shared_reference_matches_exactly():
    rows = _calc_rows()
    assert len(rows) == 84
    mismatches = []
    for r in rows:
        cfg = ScaleSimConfig.from_reference_row(r)
        layer = ScaleSimLayer(
            r["layer"],
            *(int(r[k]) for k in ("ifmap_h", "ifmap_w", "filt_h", "filt_w", "channels", "num_filters")),
            int(r["stride_h"]),
        )
        gemm, arch = _gemm_and_arch(layer, cfg)
        ifmap, filt = calc_dram_reads(gemm, arch)
        got = (ifmap * gemm.count, filt * gemm.count)
        want = (int(float(r["dram_ifmap_reads"])), int(float(r["dram_filter_reads"])))
        if got != want:
            mismatches.append((r["run"], r["layer"], got, want))
    assert not mismatches


LIVE_LAYERS = [
    ScaleSimLayer("c3s1", 10, 10, 3, 3, 8, 12, 1),
    ScaleSimLayer("c3s2", 11, 11, 3, 3, 4, 20, 2),
    ScaleSimLayer("c1s2", 12, 12, 1, 1, 16, 24, 2),
]
LIVE_CONFIGS = [
    ScaleSimConfig(8, 8, "os", 1, 1, 1),
    ScaleSimConfig(8, 4, "ws", 1, 2, 1),  # non-square
    ScaleSimConfig(4, 8, "is", 1, 2, 1),  # non-square
]


@pytest.mark.parametrize("cfg", LIVE_CONFIGS, ids=lambda c: f"{c.rows}x{c.cols}_{c.dataflow}")
def test_live_scalesim_small_layers_small_srams(cfg: ScaleSimConfig):
    pytest.importorskip("scalesim")
    live = run_scalesim(LIVE_LAYERS, cfg)
    re_read = 0
    for layer, ref in zip(LIVE_LAYERS, live):
        gemm, arch = _gemm_and_arch(layer, cfg)
        want = (int(ref["dram_ifmap_reads"]), int(ref["dram_filter_reads"]))
        assert calc_dram_reads(gemm, arch) == want, layer.name
        assert calc_dram_reads_replayed(gemm, arch) == want, layer.name
        re_read += want[0] > gemm.geometry.unique_inputs
    assert re_read, "the live layers must exercise ifmap re-reads across epoch boundaries"


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
@pytest.mark.parametrize("kib", [1, 2, 4])
def test_fast_path_equals_replay(dataflow: str, kib: int):
    layer = ScaleSimLayer("x", 9, 13, 3, 2, 6, 40, 1)
    cfg = ScaleSimConfig(4, 8, dataflow, kib, kib, kib)
    gemm, arch = _gemm_and_arch(layer, cfg)
    assert calc_dram_reads(gemm, arch) == calc_dram_reads_replayed(gemm, arch)


def test_epoch_rule_on_a_hand_worked_stream():
    # E = 50 * floor(200 / 100) = 100: addresses 0..149 then 0..149 again.
    assert epoch_words(200) == 100
    stream = list(range(150)) * 2
    import numpy as np

    # epoch 1 records 0..99; epoch 2 records 100..149, 0..49 (the 100th is 49); epoch 3 records 50..149
    assert epoch_reads(np.array(stream), 200) == 300
    # nothing referenced twice within reach of an epoch: 150 distinct, read once each when E > 150
    assert epoch_reads(np.array(stream), 400) == 150
    # SRAMs under 100 words never complete a set: only distinct words are read
    assert epoch_reads(np.array(stream), 99) == 150


def test_repeated_blocks_closed_form_against_replay():
    import numpy as np

    blocks = [(30, 3), (45, 2), (120, 2), (10, 1), (70, 4)]
    base = 0
    stream = []
    for f, r in blocks:
        stream += list(range(base, base + f)) * r
        base += f
    for words in (150, 200, 1000, 5000):
        assert repeated_blocks_reads(blocks, epoch_words(words)) == epoch_reads(np.array(stream), words)
