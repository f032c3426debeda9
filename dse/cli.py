"""The `dse` command line: explore, evaluate, report, runs, models, params, validate.

User errors (bad spec, bad model file, illegal parameter value) print one message
naming the file, field or node, what was wrong and what is allowed, and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

import dse
from dse import compare, export, schedule, zoo
from dse.describe import workload_lines
from dse.errors import EXIT_USER_ERROR, UserError
from dse.explore import explore
from dse.files import atomic_write
from dse.graph import GraphError
from dse.registry import families, mapper_option_names
from dse.runs import list_runs, rebuild_report
from dse.session import build_evaluator, full_point, parse_point
from dse.space import DesignSpace
from dse.spec import load_spec
from hwmodels.base import METRICS
from mappers.base import MappingError
from surrogates import cli as surrogate_cli
from surrogates.hybrid import wrap_evaluator
from templates.base import TemplateError

# Modules that add their own sub-commands: each has ``register(subparsers)`` which adds a parser
# whose ``func(args) -> int`` runs it (user errors raised as UserError and friends, as everywhere).
COMMAND_MODULES = (schedule, compare, export, surrogate_cli)
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM
USER_ERRORS: tuple[type[BaseException], ...] = (UserError, GraphError, TemplateError, MappingError)


# -- commands ------------------------------------------------------------------


def cmd_explore(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    graph, exact = build_evaluator(spec)
    evaluation = wrap_evaluator(spec, graph, exact)  # the spec's evaluator: analytical, surrogate or hybrid
    out = Path(args.output)
    result = explore(spec, out, evaluation, executor=args.executor, workers=args.workers, progress=not args.quiet)
    front = result.pareto
    print(
        f"{spec.name}: {len(result.points)} points ({result.evaluated} evaluated, {result.reused} from the store, "
        f"{result.failed} failed), {len(front)} on the Pareto front, {result.seconds:.1f} s"
    )
    print(f"wrote {out / 'points.parquet'}, {out / 'pareto.csv'}, {out / 'report.html'}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    space = DesignSpace.from_spec(spec)
    graph, evaluator = build_evaluator(spec)
    point = full_point(spec, space, parse_point(args.point or []))
    metrics = evaluator(point)
    values = metrics.flat()
    if args.json:
        print(json.dumps({"point": point, "metrics": values}, indent=2, default=str))
    else:
        print(f"{spec.name}: {graph.summary()}")
        print("point: " + ", ".join(f"{k}={v}" for k, v in point.items()))
        for name, value in values.items():
            unit = METRICS.get(name, ("", "", ""))[0]
            print(f"  {name:<22} {value:>14.6g} {unit}")
    if args.layers:
        frame = pd.DataFrame([layer.row() for layer in metrics.layers])
        atomic_write(args.layers, lambda path: frame.to_csv(path, index=False))
        print(f"wrote {len(frame)} layers to {args.layers}")
    return 0


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


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dse", description="Design-space exploration of dataflow accelerators and FPGAs")
    p.add_argument("--version", action="version", version=f"dse {dse.__version__}")
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

    for module in COMMAND_MODULES:
        module.register(sub)
    return p


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so every ``finally``/cleanup runs (temporary files removed, store closed)."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread (an embedding program): leave its signal handling alone
        previous = None
    try:
        return int(args.func(args) or 0)
    except USER_ERRORS as exc:
        print(f"dse: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        print(
            f"dse: {'terminated' if terminated else 'interrupted'}; every point evaluated so far is in the store "
            "and no half-written file was left (run the same command again to resume)",
            file=sys.stderr,
        )
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`dse validate SPEC | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
