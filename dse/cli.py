"""The `dse` command line: explore, evaluate, report, runs, models, params, validate.

User errors (bad spec, bad model file, illegal parameter value) print one message
naming the file, field or node, what was wrong and what is allowed, and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dse.errors import EXIT_USER_ERROR, UserError

# Modules that add their own sub-commands: each has ``register(subparsers)`` which adds a parser
# whose ``func(args) -> int`` runs it (user errors raised as UserError and friends, as everywhere).
# A module that is not part of this checkout is skipped; any other import error propagates.
COMMAND_MODULES: list[str] = ["dse.schedule", "dse.compare", "dse.export", "surrogates.cli"]


def _user_errors() -> tuple[type[BaseException], ...]:
    from dse.graph import GraphError
    from mappers.base import MappingError
    from templates.base import TemplateError

    return (UserError, GraphError, TemplateError, MappingError)


def _parse_point(items: Sequence[str]) -> dict[str, Any]:
    """``["rows=32", "dataflow=os"]`` -> typed values (YAML scalars: 32 -> int, 2.5 -> float, true -> bool)."""
    import yaml

    point: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise UserError(f"--point {item!r} must be NAME=VALUE, e.g. --point rows=32", where="command line")
        name, _, raw = item.partition("=")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        point[name.strip()] = value
    return point


def build_evaluator(spec):
    """The spec's workload graph and a PointEvaluator for its template (fixed params merged in)."""
    from dse.evaluate import PointEvaluator
    from dse.graph import GraphError
    from dse.workload import load_workload

    w = spec.workload
    try:
        graph = load_workload(w.model, batch=w.batch, precision=w.precision, base_dir=spec.base_dir, **w.options)
    except (UserError, GraphError, ValueError, KeyError) as exc:
        msg = exc.args[0] if exc.args else str(exc)
        node = getattr(exc, "node", None)
        where = spec.locate("workload.model")
        raise UserError(f"{msg}" + (f" (node {node!r})" if node and node not in str(msg) else ""), where) from None
    return graph, PointEvaluator(graph, spec.template.kind, spec.template.mapper, spec.fixed_params())


def _full_point(spec, space, given: dict[str, Any]) -> dict[str, Any]:
    """Fixed params from the spec, overridden by --point values; every free param must be given."""
    point = dict(space.fixed)
    free = {d.name: d for d in space.free}
    for name, value in given.items():
        point[name] = value
    missing = [n for n in free if n not in given]
    if missing:
        hints = "; ".join(f"{n} in {_describe_dim(free[n])}" for n in missing)
        raise UserError(
            f"the spec varies {', '.join(missing)}; give a value with --point NAME=VALUE ({hints})",
            where=str(spec.path) if spec.path else None,
        )
    return point


def _describe_dim(dim) -> str:
    if dim.values is not None:
        return "{" + ", ".join(map(str, dim.values)) + "}"
    return f"[{dim.low:g}, {dim.high:g}]"


# -- commands ------------------------------------------------------------------


def cmd_explore(args: argparse.Namespace) -> int:
    from dse.explore import explore
    from dse.spec import load_spec

    spec = load_spec(args.spec)
    graph, evaluator = build_evaluator(spec)
    if spec.evaluator != "analytical":
        from surrogates.hybrid import wrap_evaluator

        evaluator = wrap_evaluator(spec, graph, evaluator)
    out = Path(args.output)
    result = explore(spec, out, evaluator, executor=args.executor, workers=args.workers, progress=not args.quiet)
    front = result.pareto
    print(
        f"{spec.name}: {len(result.points)} points ({result.evaluated} evaluated, {result.reused} from the store, "
        f"{result.failed} failed), {len(front)} on the Pareto front, {result.seconds:.1f} s"
    )
    print(f"wrote {out / 'points.parquet'}, {out / 'pareto.csv'}, {out / 'report.html'}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from dse.space import DesignSpace
    from dse.spec import load_spec

    spec = load_spec(args.spec)
    space = DesignSpace.from_spec(spec)
    graph, evaluator = build_evaluator(spec)
    point = _full_point(spec, space, _parse_point(args.point or []))
    metrics = evaluator(point)
    values = metrics.flat()
    if args.json:
        print(json.dumps({"point": point, "metrics": values}, indent=2, default=str))
    else:
        print(f"{spec.name}: {graph.summary()}")
        print("point: " + ", ".join(f"{k}={v}" for k, v in point.items()))
        from hwmodels.base import METRICS

        for name, value in values.items():
            unit = METRICS.get(name, ("", "", ""))[0]
            print(f"  {name:<22} {value:>14.6g} {unit}")
    if args.layers:
        import pandas as pd

        frame = pd.DataFrame([layer.row() for layer in metrics.layers])
        Path(args.layers).parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(args.layers, index=False)
        print(f"wrote {len(frame)} layers to {args.layers}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from dse.runs import rebuild_report

    path = rebuild_report(Path(args.run_dir))
    print(f"wrote {path}")
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from dse.runs import list_runs

    rows = list_runs(Path(args.root))
    if not rows:
        print(f"no run directories under {args.root}")
        return 0
    header = f"{'run':<32} {'spec':<28} {'points':>7} {'failed':>7} {'front':>6}  status"
    print(header)
    for r in rows:
        print(f"{str(r['dir']):<32} {r['spec']:<28} {r['points']:>7} {r['failed']:>7} {r['front']:>6}  {r['status']}")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from dse import zoo

    for name in zoo.names():
        m = zoo.MODELS[name]
        opts = ", ".join(m.options)
        print(f"{name:<14} {m.doc}" + (f"  [options: {opts}]" if opts else ""))
    return 0


def cmd_params(args: argparse.Namespace) -> int:
    from dse.registry import families

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
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from dse.space import DesignSpace
    from dse.spec import load_spec

    spec = load_spec(args.spec)
    space = DesignSpace.from_spec(spec)
    graph, _ = build_evaluator(spec)
    print(f"{args.spec}: ok — {graph.summary()}; {space.grid_size()} grid points over {len(space.free)} free params")
    return 0


def make_parser() -> argparse.ArgumentParser:
    from dse import __version__

    p = argparse.ArgumentParser(prog="dse", description="Design-space exploration of dataflow accelerators and FPGAs")
    p.add_argument("--version", action="version", version=f"dse {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    e = sub.add_parser("explore", help="search a spec's design space; write points, Pareto front and report")
    e.add_argument("spec")
    e.add_argument("-o", "--output", required=True, help="run directory (resumed if it exists)")
    e.add_argument("--executor", default=None, help="serial | local (default) | dask | tcp://HOST:PORT")
    e.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    e.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    e.set_defaults(func=cmd_explore)

    v = sub.add_parser("evaluate", help="evaluate one design point; optionally write per-layer metrics")
    v.add_argument("spec")
    v.add_argument("--point", action="append", metavar="NAME=VALUE", help="a parameter value (repeatable)")
    v.add_argument("--layers", metavar="OUT.csv", help="write per-layer metrics to this CSV")
    v.add_argument("--json", action="store_true", help="print the metrics as JSON")
    v.set_defaults(func=cmd_evaluate)

    r = sub.add_parser("report", help="regenerate DIR/report.html from the run's store")
    r.add_argument("run_dir")
    r.set_defaults(func=cmd_report)

    ru = sub.add_parser("runs", help="list run directories with their spec, points, front size and status")
    ru.add_argument("root", nargs="?", default="runs")
    ru.set_defaults(func=cmd_runs)

    m = sub.add_parser("models", help="list the built-in model zoo")
    m.set_defaults(func=cmd_models)

    pa = sub.add_parser("params", help="list a template's parameters, defaults and legal values")
    pa.add_argument("kind")
    pa.set_defaults(func=cmd_params)

    va = sub.add_parser("validate", help="check a spec and build its workload without evaluating")
    va.add_argument("spec")
    va.set_defaults(func=cmd_validate)

    from dse.registry import import_optional

    for module_name in COMMAND_MODULES:
        module = import_optional(module_name)
        if module is not None:
            module.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except _user_errors() as exc:
        print(f"dse: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("dse: interrupted; everything evaluated so far is in the store (run again to resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
