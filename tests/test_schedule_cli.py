"""``dse schedule``: writes a validated schedule.json and a plotly memory timeline; user errors exit 2."""

from __future__ import annotations

import json

from dse.cli import main
from dse.graph import Graph
from mappers.base import Buffer, Mapping, OpMapping
from mappers.payloads import TiledPlan
from mappers.systolic.check import check_schedule

SPEC = """
name: tiny-schedule
workload: {model: resnet18, batch: 1, precision: int8, resolution: 32}
template:
  kind: systolic
  params:
    rows: [8, 16]
    cols: 16
    dataflow: os
    sram_kib: [96, 384]
tech: asic-28nm
objectives: [min latency_ms]
search: {strategy: grid, seed: 0}
"""


def _spec(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    return path


def _rebuild(doc, graph: Graph, arch) -> Mapping:
    """A Mapping from schedule.json, to replay what the file claims through the validator."""
    ops, buffers = {}, set()
    for e in doc["ops"]:
        plan = TiledPlan(
            unit="vector" if "fused_into" in e else "array",
            dram_read_bytes=e["dram_read_bytes"],
            dram_write_bytes=e["dram_write_bytes"],
            fused_into=e.get("fused_into"),
        )
        ops[e["op"]] = OpMapping(
            e["op"],
            e["tile"],
            tuple(e["loop_order"]),
            e["dataflow"],
            tuple(e["resident_inputs"]),
            e["resident_output"],
            plan,
        )
        for b in e["buffers"]:
            buffers.add(Buffer(b["tensor"], b["memory"], b["offset"], b["size"], b["start"], b["end"], b["kind"]))
    order = [e["op"] for e in doc["ops"]]
    return Mapping(
        graph,
        arch,
        ops,
        order,
        sorted(buffers, key=lambda b: (b.start, b.tensor)),
        "json",
        {"dram_bytes": doc["solver"]["dram_bytes"]},
    )


def test_schedule_writes_json_and_timeline(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["schedule", str(_spec(tmp_path)), "--point", "rows=8", "--point", "sram_kib=96", "-o", str(out)])
    assert rc == 0
    doc = json.loads((out / "schedule.json").read_text())
    assert doc["solver"]["status"] in ("OPTIMAL", "FEASIBLE") and doc["mapper"] == "cpsat"
    assert {s["name"] for s in doc["scratchpads"]} == {"ifmap_sram", "filter_sram", "ofmap_sram"}
    first = next(e for e in doc["ops"] if "fused_into" not in e)
    assert first["tile"] and first["loop_order"] and first["buffers"]
    assert all({"offset", "size", "start", "end", "memory"} <= set(b) for e in doc["ops"] for b in e["buffers"])
    assert doc["metrics"]["dram_mb"] * 1e6 == doc["solver"]["dram_bytes"]
    html = (out / "memory_timeline.html").read_text()
    assert "plotly" in html.lower() and "ifmap_sram" in html
    assert "OPTIMAL" in capsys.readouterr().out or doc["solver"]["status"] == "FEASIBLE"
    # what the file says replays cleanly through the validator
    from dse.session import build_evaluator
    from dse.spec import load_spec

    graph, evaluator = build_evaluator(load_spec(tmp_path / "spec.yaml"))
    check_schedule(_rebuild(doc, graph, evaluator.arch(doc["point"])))


def test_greedy_moves_more_dram_than_cpsat(tmp_path):
    spec = _spec(tmp_path)
    args = ["--point", "rows=16", "--point", "sram_kib=384"]
    assert main(["schedule", str(spec), *args, "-o", str(tmp_path / "c")]) == 0
    assert main(["schedule", str(spec), *args, "-o", str(tmp_path / "g"), "--mapper", "greedy"]) == 0
    c = json.loads((tmp_path / "c" / "schedule.json").read_text())
    g = json.loads((tmp_path / "g" / "schedule.json").read_text())
    assert c["solver"]["dram_bytes"] < g["solver"]["dram_bytes"]
    assert not g["resident"] and c["resident"]


def test_unified_scratchpad_schedules_into_one_memory(tmp_path):
    spec = _spec(tmp_path)
    point = ["--point", "rows=16", "--point", "sram_kib=384"]
    assert main(["schedule", str(spec), *point, "-o", str(tmp_path / "s")]) == 0
    assert main(["schedule", str(spec), *point, "--point", "scratchpad=unified", "-o", str(tmp_path / "u")]) == 0
    split = json.loads((tmp_path / "s" / "schedule.json").read_text())
    unified = json.loads((tmp_path / "u" / "schedule.json").read_text())
    assert split["memory_organisation"] == "split" and unified["memory_organisation"] == "unified"
    assert unified["scratchpads"] == [
        {"name": "scratchpad", "capacity_bytes": 384 * 1024, "peak_bytes": unified["scratchpads"][0]["peak_bytes"]}
    ]
    assert 0 < unified["scratchpads"][0]["peak_bytes"] <= 384 * 1024
    assert {b["memory"] for e in unified["ops"] for b in e["buffers"]} == {"scratchpad"}
    assert unified["solver"]["dram_bytes"] <= split["solver"]["dram_bytes"]
    assert "scratchpad" in (tmp_path / "u" / "memory_timeline.html").read_text()
    from dse.session import build_evaluator
    from dse.spec import load_spec

    graph, evaluator = build_evaluator(load_spec(spec))
    check_schedule(_rebuild(unified, graph, evaluator.arch(unified["point"])))


def test_user_errors_exit_2(tmp_path, capsys):
    spec = _spec(tmp_path)
    assert main(["schedule", str(spec), "--point", "rows=8", "-o", str(tmp_path / "x")]) == 2
    assert "sram_kib" in capsys.readouterr().err
    assert (
        main(
            [
                "schedule",
                str(spec),
                "--point",
                "rows=8",
                "--point",
                "sram_kib=96",
                "--time-limit",
                "0",
                "-o",
                str(tmp_path / "y"),
            ]
        )
        == 2
    )
    assert "--time-limit" in capsys.readouterr().err
