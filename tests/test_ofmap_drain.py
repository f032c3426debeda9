"""The ofmap drain replay (``hwmodels.systolic.memory.calc_ofmap_tail``) against SCALE-Sim 3.0.0's own write
buffer class, fed the ofmap demand profile line by line: the last DRAM write must land on the same cycle."""

from __future__ import annotations

import numpy as np
import pytest

from hwmodels.systolic.compute import ConvGeometry, LoweredGemm
from hwmodels.systolic.memory import OfmapWriteProfile, calc_ofmap_tail


def _gemm(m: int, k: int, n: int) -> LoweredGemm:
    return LoweredGemm(m, k, n, 1, ConvGeometry(1, m, k, 1, 1, 1, 1, 1, m))


def _scalesim_tail(profile: OfmapWriteProfile, words: int, bw: int) -> int:
    write_buffer = pytest.importorskip("scalesim.memory.write_buffer")
    write_port = pytest.importorskip("scalesim.memory.write_port")
    buf = write_buffer.write_buffer()
    buf.set_params(write_port.write_port(), total_size_bytes=words, word_size=1, active_buf_frac=0.5, backing_buf_bw=bw)
    address = 0
    last = 0
    for line in range(profile.lines):
        count = profile.written_through(line) - profile.written_through(line - 1)
        row = np.full((1, profile.cols), -1.0)
        row[0, :count] = np.arange(address, address + count)
        address += count
        last = buf.service_writes(row, np.array([[line]]))[0][0]
    buf.empty_all_buffers(last)
    return int(np.amax(buf.cycles_vec)) - (profile.lines - 1)


@pytest.mark.parametrize(
    ("shape", "dataflow", "rows", "cols", "words"),
    [
        ((300, 40, 50), "ws", 8, 8, 2048),
        ((300, 40, 50), "os", 8, 8, 2048),
        ((300, 40, 50), "is", 8, 8, 2048),
        ((121, 27, 20), "ws", 8, 12, 4096),
        ((64, 100, 30), "is", 10, 10, 4096),
        ((500, 72, 30), "os", 12, 8, 1024),
        ((729, 36, 19), "ws", 16, 8, 3000),  # odd SRAM size, partial last column fold
        ((97, 13, 41), "os", 5, 7, 700),
    ],
)
def test_drain_replay_matches_scalesim_write_buffer(shape, dataflow, rows, cols, words):
    profile = OfmapWriteProfile.of(_gemm(*shape), dataflow, rows, cols)
    assert profile.written_through(profile.lines - 1) == shape[0] * shape[2] * (
        1 if dataflow == "os" else profile.row_folds
    )
    assert calc_ofmap_tail(profile, words, cols) == _scalesim_tail(profile, words, cols)
