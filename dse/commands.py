"""The core commands of `dse`: explore, evaluate, report, runs, recover, models, params, validate.

Each ``cmd_NAME(args) -> int`` runs one parsed command line; dse/cli.py defines the parsers and loads
this module only when one of these commands runs (so `dse --help` stays fast).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from dse import zoo
from dse.describe import workload_lines
from dse.errors import UserError
from dse.evaluators import prepare_run
from dse.explore import explore
from dse.files import atomic_write
from dse.finish import failures_by_type
from dse.recover import recover_run
from dse.registry import families, mapper_option_names
from dse.runs import list_runs, rebuild_report
from dse.session import build_evaluator, full_point, parse_point
from dse.space import DesignSpace
from dse.spec import load_spec
from hwmodels.base import METRICS, Metrics, area_blocks_mm2


def cmd_explore(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    context, evaluation = prepare_run(spec)  # the spec's evaluator (analytical, surrogate, hybrid), by the registry
    out = Path(args.output)
    result = explore(
        spec,
        out,
        evaluation,
        executor=args.executor,
        workers=args.workers,
        progress=not args.quiet,
        context=context,
        arrays=args.arrays,
    )
    front = result.pareto
    print(
        f"{spec.name}: {len(result.points)} points ({result.evaluated} evaluated, {result.reused} from the store, "
        f"{result.failed} failed), {len(front)} on the Pareto front, {result.seconds:.1f} s"
    )
    if result.failed:
        print(
            f"{result.failed} point(s) failed ({failures_by_type(result.points)}): each with its reason in "
            f"{out / 'points.csv'} and the report's Failed points table"
        )
    print(f"wrote {out / 'points.parquet'}, {out / 'pareto.csv'}, {out / 'report.html'}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    space = DesignSpace.from_spec(spec)
    graph, evaluator = build_evaluator(spec, space)  # exact: one point, with its layers
    point = full_point(spec, space, parse_point(args.point or []))
    metrics = evaluator(point)
    values = metrics.flat()
    if args.json:
        print(json.dumps({"point": point, "metrics": values}, indent=2, default=str))
    else:
        print(f"{spec.name}: {graph.summary()}")
        print("point: " + ", ".join(f"{k}={v}" for k, v in point.items()))
        for name, value in metrics.values.items():
            unit = METRICS.get(name, ("", "", ""))[0]
            print(f"  {name:<22} {value:>14.6g} {unit}")
        for line in breakdown_lines(metrics):
            print(line)
    if args.layers:
        frame = pd.DataFrame([layer.row() for layer in metrics.layers])
        atomic_write(args.layers, lambda path: frame.to_csv(path, index=False))
        print(f"wrote {len(frame)} layers to {args.layers}")
    return 0


def breakdown_lines(metrics: Metrics) -> list[str]:
    """The design's energy by component (mJ) and area by block (mm^2), each with its share of the total."""
    tables = (
        ("energy by component", "mJ", {k: v * 1e-9 for k, v in metrics.energy_breakdown_pj.items()}),
        ("area by block", "mm^2", area_blocks_mm2(metrics.info)),
    )
    lines: list[str] = []
    for title, unit, parts in tables:
        total = sum(parts.values())
        if not parts or total <= 0:
            continue
        lines.append(f"  {title}:")
        lines += [f"    {name:<20} {value:>14.6g} {unit:<5} {value / total:>6.1%}" for name, value in parts.items()]
    return lines


def cmd_report(args: argparse.Namespace) -> int:
    path = rebuild_report(Path(args.run_dir))
    print(f"wrote {path}")
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    rows = list_runs(Path(args.root))
    if not rows:
        print(f"no run directories under {args.root}")
        return 0
    header = f"{'run':<32} {'spec':<28} {'points':>7} {'failed':>7} {'front':>6}  status"
    print(header)
    for r in rows:
        print(f"{str(r['dir']):<32} {r['spec']:<28} {r['points']:>7} {r['failed']:>7} {r['front']:>6}  {r['status']}")
    return 0


def cmd_recover(args: argparse.Namespace) -> int:
    print(recover_run(Path(args.run_dir)).summary())
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    for name in zoo.names():
        m = zoo.MODELS[name]
        opts = ", ".join(m.options)
        print(f"{name:<14} {m.doc}" + (f"  [options: {opts}]" if opts else ""))
    return 0


def cmd_params(args: argparse.Namespace) -> int:
    fams = families()
    if args.kind not in fams:
        raise UserError(f"unknown template kind {args.kind!r}; allowed: {', '.join(sorted(fams))}")
    fam = fams[args.kind]
    print(f"template {args.kind} (mappers: {', '.join(fam.mappers)}; default {fam.default_mapper})")
    for p in fam.template().params():
        allowed = ""
        if p.choices:
            allowed = "one of " + ", ".join(map(str, p.choices))
        elif p.low is not None or p.high is not None:
            allowed = f"[{'' if p.low is None else f'{p.low:g}'}, {'' if p.high is None else f'{p.high:g}'}]"
        print(f"  {p.name:<18} {p.type:<6} default={p.default!s:<10} {allowed:<28} {p.unit:<6} {p.doc}")
    for mapper in fam.mappers:
        options = mapper_option_names(args.kind, mapper)
        listing = "; ".join(f"{name} ({what})" for name, what in options.items()) or "none"
        print(f"mapper {mapper} options (template.mapper_options): {listing}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    space = DesignSpace.from_spec(spec)
    graph, _ = build_evaluator(spec)
    continuous = [d.name for d in space.dims if not d.has_grid]
    size = f"{space.grid_size():,} grid points" if not continuous else f"continuous in {', '.join(continuous)}"
    print(f"{args.spec}: ok — {graph.summary()}; {size} over {len(space.free)} free params")
    print("\n".join(workload_lines(graph)))
    return 0
