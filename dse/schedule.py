"""``dse schedule``: the whole-network schedule of one design point, as JSON and a memory-timeline plot.

    dse schedule SPEC --point rows=32 --point sram_kib=1024 -o DIR [--mapper cpsat|greedy]
                      [--objective dram|latency|energy] [--time-limit S]

writes ``DIR/schedule.json`` (per op: tile, loop order, buffers with offsets and lifetimes, DRAM
traffic; the tensors that spill to DRAM; the solver's status, bound and gap; the memory organisation,
``split`` ifmap/filter/ofmap SRAMs or one ``unified`` scratchpad) and ``DIR/memory_timeline.html``
(plotly: one panel per scratchpad, address against op index, a rectangle per buffer). Every schedule
is checked by ``mappers.systolic.check`` before it is written.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dse.errors import UserError
from dse.files import atomic_write, atomic_write_text
from dse.registry import family, kinds_scheduled, make_mapper, mapper_option_names
from dse.session import build_evaluator, full_point, parse_point
from dse.space import DesignSpace
from dse.spec import load_spec
from mappers.payloads import TiledPlan
from mappers.systolic.check import check_schedule
from mappers.systolic.nest import target_of


def cmd_schedule(args: argparse.Namespace) -> int:
    if args.time_limit <= 0:
        raise UserError(f"--time-limit must be a positive number of seconds, got {args.time_limit:g}")
    spec = load_spec(args.spec)
    if not family(spec.template.kind).schedules:
        raise UserError(
            f"dse schedule tiles {' and '.join(kinds_scheduled())} designs; the spec's template is "
            f"{spec.template.kind!r}",
            where=spec.locate("template.kind"),
        )
    space = DesignSpace.from_spec(spec)
    graph, evaluator = build_evaluator(spec)
    point = full_point(spec, space, parse_point(args.point or []))
    arch = evaluator.arch(point)
    options = {"objective": args.objective}
    if "time_limit_s" in mapper_option_names(spec.template.kind, args.mapper):
        options["time_limit_s"] = args.time_limit
    mapper = make_mapper(spec.template.kind, args.mapper, options)
    mapping = mapper.map(graph, arch)
    check = check_schedule(mapping)
    metrics = evaluator.hwmodel.evaluate(mapping, arch)  # the model of the spec's family
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    doc = schedule_document(mapping, point, metrics.values, check.peak_bytes)
    atomic_write_text(out / "schedule.json", json.dumps(doc, indent=2, default=_json_default))
    write_memory_timeline(mapping, out / "memory_timeline.html")
    s = mapping.solver
    status = s.get("status", "")
    gap = f", gap {s['gap']:.2%}" if status == "FEASIBLE" else ""
    print(
        f"{spec.name}: {mapper.name} {status}{gap} in {s.get('seconds', 0.0):.2f} s; "
        f"DRAM {s['dram_bytes'] / 1e6:.3f} MB "
        f"({s['noncompulsory_bytes'] / 1e6:.3f} MB non-compulsory), {len(s['resident'])} tensors resident, "
        f"{len(s['spills'])} spilled"
    )
    print(f"wrote {out / 'schedule.json'}, {out / 'memory_timeline.html'}")
    return 0


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def schedule_document(mapping, point: dict, metrics: dict, peaks: dict) -> dict:
    """The JSON form of a tiled schedule: solver facts, scratchpads, ops in order, spills."""
    index = {name: i for i, name in enumerate(mapping.order)}
    by_tensor: dict[str, list] = {}
    for b in mapping.buffers:
        by_tensor.setdefault(b.tensor, []).append(b)
    ops = []
    for name in mapping.order:
        om = mapping.ops[name]
        plan = om.payload_as(TiledPlan)
        op = mapping.graph.op(name)
        touched = (*op.inputs, *op.weights, *op.outputs)
        buffers = [
            {
                "tensor": b.tensor,
                "memory": b.memory,
                "kind": b.kind,
                "offset": b.offset,
                "size": b.size,
                "start": b.start,
                "end": b.end,
            }
            for t in dict.fromkeys(touched)
            for b in by_tensor.get(t, [])
            if b.start <= index[name] <= b.end
        ]
        entry = {
            "op": name,
            "kind": op.kind.value,
            "position": index[name],
            "tile": om.tile,
            "loop_order": list(om.loop_order),
            "dataflow": om.dataflow,
            "resident_inputs": list(om.resident_inputs),
            "resident_output": om.resident_output,
            "dram_read_bytes": plan.dram_read_bytes,
            "dram_write_bytes": plan.dram_write_bytes,
            "buffers": buffers,
        }
        if plan.fused_into:
            entry["fused_into"] = plan.fused_into
        else:
            entry["compute_cycles"] = plan.compute_cycles
            entry["spills"] = [t for t in op.outputs if t in mapping.solver.get("spills", [])]
        ops.append(entry)
    solver = {k: v for k, v in mapping.solver.items() if k not in ("resident", "spills")}
    return {
        "graph": mapping.graph.name,
        "mapper": mapping.mapper,
        "point": point,
        "solver": solver,
        "memory_organisation": getattr(mapping.arch, "scratchpad", "split"),
        "scratchpads": [
            {"name": name, "capacity_bytes": cap, "peak_bytes": peaks.get(name, 0)}
            for name, cap in _capacities(mapping).items()
        ],
        "metrics": metrics,
        "resident": mapping.solver.get("resident", []),
        "spills": mapping.solver.get("spills", []),
        "ops": ops,
    }


def _capacities(mapping) -> dict[str, int]:
    return dict(target_of(mapping.arch).capacities)


def write_memory_timeline(mapping, path: Path) -> Path:
    """Plotly figure: per scratchpad, every buffer as a rectangle (op index x address), hover for details."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    caps = _capacities(mapping)
    memories = list(caps)
    fig = make_subplots(rows=len(memories), cols=1, subplot_titles=memories, shared_xaxes=True, vertical_spacing=0.06)
    colours = {"resident": "rgba(31,119,180,0.55)", "tile": "rgba(255,127,14,0.45)"}
    for row, memory in enumerate(memories, start=1):
        for kind in ("resident", "tile"):
            xs: list = []
            ys: list = []
            texts: list = []
            for b in mapping.buffers:
                if b.memory != memory or b.kind != kind:
                    continue
                x0, x1 = b.start - 0.45, b.end + 0.45
                y0, y1 = b.offset, b.offset + b.size
                xs += [x0, x1, x1, x0, x0, None]
                ys += [y0, y0, y1, y1, y0, None]
                label = (
                    f"{b.tensor}<br>{kind}, {b.size} B at {b.offset}<br>ops {b.start}-{b.end}: "
                    f"{mapping.order[b.start]} .. {mapping.order[b.end]}"
                )
                texts += [label] * 5 + [None]
            if xs:
                fig.add_trace(
                    go.Scatter(
                        x=xs,
                        y=ys,
                        fill="toself",
                        mode="lines",
                        line={"width": 1},
                        fillcolor=colours[kind],
                        name=f"{kind} buffers",
                        legendgroup=kind,
                        showlegend=row == 1,
                        text=texts,
                        hoverinfo="text",
                    ),
                    row=row,
                    col=1,
                )
        fig.add_hline(y=caps[memory], line_dash="dash", line_color="red", row=row, col=1)
        fig.update_yaxes(title_text="address (bytes)", row=row, col=1)
    fig.update_xaxes(title_text="op index (execution order)", row=len(memories), col=1)
    s = mapping.solver
    fig.update_layout(
        title=(
            f"{mapping.graph.name}: {mapping.mapper} schedule, {s.get('status', '')}; "
            f"DRAM {s['dram_bytes'] / 1e6:.2f} MB"
        ),
        height=320 * len(memories),
    )
    return atomic_write(path, lambda temporary: fig.write_html(str(temporary), include_plotlyjs=True, full_html=True))
