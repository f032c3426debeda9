"""The independent validator accepts real schedules and catches every kind of broken one."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from mappers.systolic.check import ScheduleError, check_schedule
from mappers.systolic.cpsat import CpSatMapper
from mappers.systolic.greedy import GreedyMapper
from tests.test_cpsat import attention_graph, residual_graph, small_arch


@pytest.fixture(scope="module")
def good():
    mapping = CpSatMapper(use_cache=False).map(residual_graph(), small_arch(ifmap_kib=2.0))
    check_schedule(mapping)
    assert mapping.solver["resident"]
    return mapping


def _broken(mapping):
    return copy.copy(mapping)


def test_valid_schedules_pass():
    for mapper in (CpSatMapper(use_cache=False), GreedyMapper()):
        mapping = mapper.map(attention_graph(), small_arch(ifmap_kib=2.0))
        report = check_schedule(mapping)
        assert report.dram_bytes == mapping.solver["dram_bytes"]
        assert report.peak_bytes["ifmap_sram"] <= 2048


def test_unified_scratchpad_schedule_passes_and_its_overlaps_are_caught():
    mapping = CpSatMapper(use_cache=False).map(residual_graph(), small_arch(ifmap_kib=2.0, scratchpad="unified"))
    report = check_schedule(mapping)
    assert set(report.peak_bytes) == {"scratchpad"} and report.peak_bytes["scratchpad"] <= 4096
    weights = [b for b in mapping.buffers if b.memory == "scratchpad" and b.tensor.endswith(":weight")]
    assert weights  # weight tiles now share the scratchpad with everything else
    resident = next(b for b in mapping.buffers if b.kind == "resident")
    clash = next(b for b in weights if b.start <= resident.end and resident.start <= b.end)
    bad = _broken(mapping)
    bad.buffers = [replace(b, offset=resident.offset) if b is clash else b for b in mapping.buffers]
    with pytest.raises(ScheduleError, match="overlaps"):
        check_schedule(bad)


def test_address_overlap_is_caught(good):
    bad = _broken(good)
    resident = next(b for b in good.buffers if b.kind == "resident")
    clash = next(
        b
        for b in good.buffers
        if b.memory == resident.memory and b is not resident and b.start <= resident.end and resident.start <= b.end
    )
    bad.buffers = [replace(b, offset=resident.offset) if b is clash else b for b in good.buffers]
    with pytest.raises(ScheduleError, match="overlaps"):
        check_schedule(bad)


def test_capacity_overflow_is_caught(good):
    bad = _broken(good)
    bad.buffers = [replace(good.buffers[0], offset=10_000)] + good.buffers[1:]
    with pytest.raises(ScheduleError, match="outside"):
        check_schedule(bad)


def test_short_lifetime_is_caught(good):
    bad = _broken(good)
    bad.buffers = [replace(b, end=b.start) if b.kind == "resident" and b.end > b.start else b for b in good.buffers]
    with pytest.raises(ScheduleError, match="lives ops"):
        check_schedule(bad)


def test_traffic_misreport_is_caught(good):
    bad = _broken(good)
    name = next(n for n, om in good.ops.items() if not om.payload.fused_into)
    om = good.ops[name]
    misreported = replace(om.payload, dram_read_bytes=om.payload.dram_read_bytes + 4096)
    bad.ops = {**good.ops, name: replace(om, payload=misreported)}
    with pytest.raises(ScheduleError, match="replay counts"):
        check_schedule(bad)


def test_missing_resident_buffer_is_caught(good):
    bad = _broken(good)
    bad.buffers = [b for b in good.buffers if b.kind != "resident"]
    with pytest.raises(ScheduleError, match="no resident buffer"):
        check_schedule(bad)


def test_order_violation_is_caught(good):
    bad = _broken(good)
    bad.order = list(reversed(good.order))
    with pytest.raises(ScheduleError, match="runs before"):
        check_schedule(bad)


def test_undersized_tile_buffer_is_caught(good):
    bad = _broken(good)
    bad.buffers = [replace(b, size=1) if b.kind == "tile" and b.size > 1 else b for b in good.buffers]
    with pytest.raises(ScheduleError, match="tile buffer"):
        check_schedule(bad)
