"""What ``dse validate`` prints about a workload: per op kind its count, MACs and weight bytes, the
precisions the ops run at (a quantized or mixed-precision import shows each), and what the importer
folded away or could not find. Read from the graph alone, so every importer and the zoo get it."""

from __future__ import annotations

from collections import Counter, defaultdict

from dse.graph import Graph, human_count


def workload_lines(graph: Graph) -> list[str]:
    """Indented lines describing ``graph`` beyond its one-line summary."""
    count: Counter[str] = Counter()
    macs: dict[str, int] = defaultdict(int)
    weight_bytes: dict[str, int] = defaultdict(int)
    precisions: dict[str, list[str]] = defaultdict(list)
    for op in graph.ops:
        kind = op.kind.value
        count[kind] += 1
        macs[kind] += op.macs
        weight_bytes[kind] += sum(graph.tensors[w].nbytes for w in op.weights if w in graph.tensors)
        if op.precision_label:
            precisions[op.precision_label].append(op.name)
    lines = ["  op kind          ops            MACs     weights"]
    for kind in sorted(count):
        mac_text, weight_text = human_count(macs[kind]), human_count(weight_bytes[kind], 1024)
        lines.append(f"  {kind:<14} {count[kind]:>5} {mac_text:>11}MAC {weight_text:>9}B")
    if precisions:
        for label, names in sorted(precisions.items()):
            shown = ", ".join(names[:6]) + (f", ... ({len(names)} ops)" if len(names) > 6 else "")
            lines.append(f"  precision {label}: {shown}")
    lines += _quantized_layer_lines(graph)
    folded = graph.meta.get("folded_nodes") or {}
    if folded:
        total = sum(folded.values())
        parts = ", ".join(f"{n} {op_type}" for op_type, n in folded.items())
        lines.append(f"  folded {total} of {graph.meta.get('onnx_nodes', '?')} ONNX nodes into constants ({parts})")
    bounds = graph.meta.get("data_dependent_bounds") or {}
    if bounds:
        limit = graph.meta.get("max_detections")
        how = f"max_detections {limit}" if limit else "the worst case (set workload.max_detections to lower it)"
        lines.append(f"  data-dependent counts bounded by {how}: {_bounds_text(bounds)}")
    missing = graph.meta.get("weights_missing") or []
    if missing:
        lines.append(
            f"  weight data missing for {len(missing)} tensors ({', '.join(map(str, missing[:5]))}"
            f"{', ...' if len(missing) > 5 else ''}): shapes only — fine for performance models, "
            "refused by what needs weights (dse export)"
        )
    return lines


SHOWN_QUANTIZED_LAYERS = 8


def _quantized_layer_lines(graph: Graph) -> list[str]:
    """One line per layer a QONNX/Brevitas quantizer set: each operand's bits, signedness and scale."""
    layers = [op for op in graph.ops if "weight_scale" in op.attrs or "act_scale" in op.attrs]
    lines = []
    for op in layers[:SHOWN_QUANTIZED_LAYERS]:
        parts = []
        for prefix, what in (("act", "input"), ("weight", "weights")):
            if f"{prefix}_bits" in op.attrs:
                sign = "signed" if op.attrs[f"{prefix}_signed"] else "unsigned"
                width, integer = op.attrs[f"{prefix}_fixed"]
                parts.append(
                    f"{what} {op.attrs[f'{prefix}_bits']}-bit {sign} x {op.attrs[f'{prefix}_scale']:.4g} "
                    f"(ap_fixed<{width},{integer}>)"
                )
        lines.append(f"  quantized {op.name}: {', '.join(parts)}")
    if len(layers) > SHOWN_QUANTIZED_LAYERS:
        lines.append(f"  ... {len(layers) - SHOWN_QUANTIZED_LAYERS} more quantized layers")
    return lines


def _bounds_text(bounds: dict[str, dict]) -> str:
    """Per op type: how many nodes, the rows each is costed at and the worst case (a range where they differ)."""
    by_op: dict[str, list[dict]] = defaultdict(list)
    for record in bounds.values():
        by_op[str(record["op"])].append(record)

    def span(values: list[int]) -> str:
        return str(min(values)) if min(values) == max(values) else f"{min(values)}-{max(values)}"

    parts = []
    for op_type in sorted(by_op, key=lambda o: (len(by_op[o]), o)):
        records = by_op[op_type]
        rows, worst = span([int(r["rows"]) for r in records]), span([int(r["worst_case"]) for r in records])
        parts.append(f"{len(records)} {op_type} at {rows} rows (worst case {worst})")
    return "; ".join(parts)
