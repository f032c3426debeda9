"""The `dse` command line: every sub-command's parser, and the one place that runs a command.

    explore, evaluate, report, runs, recover, models, params, validate, schedule, compare, export, ingest-report,
    surrogate dataset | train | eval | measured

User errors (bad spec, bad model file, illegal parameter value) print one message
naming the file, field or node, what was wrong and what is allowed, and exit 2.

The parsers are all defined here and need only the standard library, so `dse --help` (and the help of
every sub-command) answers without loading numpy, pandas or the models. Each parser names the function
that runs it as ``"module:function"``; ``load_name`` imports that module by name (importlib) when the
command runs. It is the only deferred project import of the command line: the layering test forbids
``import`` statements inside functions, and the names in ``set_defaults(run=...)`` point at modules of
the run-and-output layer, below this one.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dse
from dse.choices import EXPORT_BACKENDS, MEASURED_SOURCE_KINDS, SCHEDULE_MAPPERS, scalesim_cache_dir
from dse.errors import EXIT_USER_ERROR
from dse.files import is_disk_full

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM
# The errors printed as one line and exit 2, loaded by name when a command fails (their modules are loaded by then).
USER_ERROR_NAMES = (
    "dse.errors:UserError",
    "dse.graph:GraphError",
    "templates.base:TemplateError",
    "mappers.base:MappingError",
)


def load_name(target: str) -> Any:
    """The object ``target`` = ``"package.module:name"`` names, importing its module on first use."""
    module_name, _, name = target.partition(":")
    return getattr(importlib.import_module(module_name), name)


def user_errors() -> tuple[type[BaseException], ...]:
    """The classes of USER_ERROR_NAMES."""
    return tuple(load_name(target) for target in USER_ERROR_NAMES)


# -- parsers -------------------------------------------------------------------


def add_core_commands(sub: argparse._SubParsersAction) -> None:
    """explore, evaluate, report, runs, recover, models, params, validate (run by dse/commands.py)."""
    e = sub.add_parser("explore", help="search a spec's design space; write points, Pareto front and report")
    e.add_argument("spec")
    e.add_argument("-o", "--output", required=True, help="run directory (resumed if it exists)")
    e.add_argument("--executor", default=None, help="serial | local (default) | dask | tcp://HOST:PORT")
    e.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    e.add_argument(
        "--arrays",
        action="store_true",
        help="with --executor: grid/random chunks go to the array evaluator on the executor's workers, "
        "a sub-batch each (the same points as in process); without --executor the array path runs here anyway",
    )
    e.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    e.set_defaults(run="dse.commands:cmd_explore")

    v = sub.add_parser("evaluate", help="evaluate one design point; optionally write per-layer metrics")
    v.add_argument("spec")
    v.add_argument("--point", action="append", metavar="NAME=VALUE", help="a parameter value (repeatable)")
    v.add_argument("--layers", metavar="OUT.csv", help="write per-layer metrics to this CSV")
    v.add_argument("--json", action="store_true", help="print the metrics as JSON")
    v.set_defaults(run="dse.commands:cmd_evaluate")

    r = sub.add_parser("report", help="regenerate DIR/report.html from the run's store")
    r.add_argument("run_dir")
    r.set_defaults(run="dse.commands:cmd_report")

    ru = sub.add_parser("runs", help="list run directories with their spec, points, front size and status")
    ru.add_argument("root", nargs="?", default="runs")
    ru.set_defaults(run="dse.commands:cmd_runs")

    rc = sub.add_parser(
        "recover",
        help="save every readable point of a damaged DIR/store.sqlite into a fresh store (the damaged file is kept)",
    )
    rc.add_argument("run_dir")
    rc.set_defaults(run="dse.commands:cmd_recover")

    m = sub.add_parser("models", help="list the built-in model zoo")
    m.set_defaults(run="dse.commands:cmd_models")

    pa = sub.add_parser("params", help="list a template's parameters, defaults and legal values")
    pa.add_argument("kind")
    pa.set_defaults(run="dse.commands:cmd_params")

    va = sub.add_parser("validate", help="check a spec and build its workload without evaluating")
    va.add_argument("spec")
    va.set_defaults(run="dse.commands:cmd_validate")


def add_output_commands(sub: argparse._SubParsersAction) -> None:
    """schedule (dse/schedule.py), compare (dse/compare.py), export and ingest-report (dse/export.py)."""
    p = sub.add_parser(
        "schedule",
        help="tile, order and allocate one design point's network; write schedule.json and memory_timeline.html",
    )
    p.add_argument("spec")
    p.add_argument("--point", action="append", metavar="NAME=VALUE", help="a parameter value (repeatable)")
    p.add_argument("-o", "--output", required=True, help="directory for schedule.json and memory_timeline.html")
    p.add_argument("--mapper", default="cpsat", choices=SCHEDULE_MAPPERS, help="scheduler (default: cpsat)")
    p.add_argument("--objective", default="dram", choices=("dram", "latency", "energy"), help="what cpsat minimises")
    p.add_argument("--time-limit", type=float, default=10.0, metavar="S", help="CP-SAT time limit in seconds")
    p.set_defaults(run="dse.schedule:cmd_schedule")

    c = sub.add_parser("compare", help="compare a run's Pareto designs with GPU baselines (latency, energy, perf/W)")
    c.add_argument("run_dir")
    c.add_argument(
        "--baselines",
        action="append",
        metavar="GPU[,GPU]",
        help="GPUs or nodes (dgx_h100, dgx_a100) to compare with (default: the spec's baselines, else h100 and a100)",
    )
    c.set_defaults(run="dse.compare:cmd_compare")

    x = sub.add_parser("export", help="write an hls4ml project for one explored FPGA design point")
    x.add_argument("run_dir", type=Path, help="a run directory written by `dse explore`")
    x.add_argument("--point", required=True, help="the point id (or a unique prefix) from points.csv / the report")
    x.add_argument("-o", "--output", type=Path, required=True, help="folder to write the project into")
    x.add_argument("--backend", choices=EXPORT_BACKENDS, default="Vitis", help="hls4ml backend (default Vitis)")
    x.add_argument("--csim", action="store_true", help="compile the C simulation with g++ and check it")
    x.set_defaults(run="dse.export:cmd_export")
    q = sub.add_parser("ingest-report", help="read an exported project's synthesis report into its run")
    q.add_argument("output", type=Path, help="a folder written by `dse export`")
    q.set_defaults(run="dse.export:cmd_ingest_report")


def add_surrogate_commands(sub: argparse._SubParsersAction) -> None:
    """surrogate dataset | train | eval (surrogates/cli.py) and measured (surrogates/truth/measured.py)."""
    s = sub.add_parser("surrogate", help="learned surrogate models: build data, train, evaluate")
    ss = s.add_subparsers(dest="surrogate_command", required=True)

    d = ss.add_parser("dataset", help="sample N points of a spec's space, evaluate them, store features + targets")
    d.add_argument("spec")
    d.add_argument("-n", type=int, required=True, help="design points per workload")
    d.add_argument("-o", "--output", required=True, help="DATA.parquet")
    d.add_argument(
        "--workload",
        action="append",
        metavar="MODEL[:k=v,...]",
        help="sample these workloads instead of the spec's (repeatable), e.g. bert_base:num_layers=2",
    )
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--executor", default=None, help="serial | local (default) | dask | tcp://HOST:PORT")
    d.add_argument("--workers", type=int, default=None)
    d.add_argument(
        "--truth",
        choices=("model", "scalesim"),
        default="model",
        help="model (default: the spec's mapper and model) | scalesim (real SCALE-Sim 3.0.0 on every MAC-array "
        "layer of each systolic design, parallel on the executors, cached per layer and array config)",
    )
    d.add_argument(
        "--scalesim-cache",
        metavar="DIR",
        default=None,
        help=f"where --truth scalesim keeps its per-layer reports (default {scalesim_cache_dir()})",
    )
    d.add_argument(
        "--scalesim-max-cycles",
        type=float,
        metavar="CYCLES",
        default=None,
        help="with --truth scalesim: leave out designs whose model latency over their MAC-array layers exceeds "
        "CYCLES (SCALE-Sim's run time grows with the cycles it simulates; default: simulate every design)",
    )
    d.set_defaults(run="surrogates.cli:cmd_dataset")

    t = ss.add_parser("train", help="train a surrogate; report held-out-workload, random-split and CV accuracy")
    t.add_argument("data", help="DATA.parquet from `dse surrogate dataset`")
    t.add_argument("-o", "--output", required=True, help="MODEL.joblib")
    t.add_argument("--model", default="gb", help="gb (gradient boosting, default) | rf (random forest)")
    t.add_argument(
        "--level",
        default="op",
        help="op (default: a model per (design, op) pair; generalises best where the closed-form "
        "baseline is approximate) | design (the baseline summed per design + one model per design, "
        ">= 100,000 designs/s; for shared-DRAM spaces, where the baseline is exact)",
    )
    t.add_argument("--holdout", action="append", help="workload to test on, never trained on (default: the last)")
    t.add_argument("--cv", type=int, default=0, help="cross-validation folds (0 = none)")
    t.add_argument("--seed", type=int, default=0)
    t.set_defaults(run="surrogates.cli:cmd_train")

    e = ss.add_parser("eval", help="accuracy of a model on a dataset: R^2, MAPE, p50/p75/p95; plot")
    e.add_argument("model")
    e.add_argument("data")
    e.add_argument("--plot", metavar="OUT.html", help="write a predicted-vs-true plotly plot")
    e.add_argument("--json", action="store_true")
    e.set_defaults(run="surrogates.cli:cmd_eval")

    m = ss.add_parser(
        "measured",
        help="a contract dataset whose truth is real measurements (wa-hls4ml, ingested reports, GPU timings)",
    )
    m.add_argument("sources", nargs="+", metavar="KIND:PATH", help=f"KIND one of {', '.join(MEASURED_SOURCE_KINDS)}")
    m.add_argument("-o", "--output", required=True, help="DATA.parquet")
    m.set_defaults(run="surrogates.truth.measured:cmd_measured")


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dse", description="Design-space exploration of dataflow accelerators and FPGAs")
    p.add_argument("--version", action="version", version=f"dse {dse.__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    add_core_commands(sub)
    add_output_commands(sub)
    add_surrogate_commands(sub)
    return p


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed command; a user error becomes one line on stderr and exit 2 (no traceback)."""
    command = load_name(args.run)
    try:
        return int(command(args) or 0)
    except Exception as exc:
        if is_disk_full(exc):  # a command with no message of its own for it (explore and report have one)
            where = getattr(exc, "filename", None) or "its output"
            print(
                f"dse: error: no space left on the device while writing {where}; no file was left half-written. "
                "Free some space and run the same command again",
                file=sys.stderr,
            )
            return EXIT_USER_ERROR
        if not isinstance(exc, user_errors()):
            raise
        print(f"dse: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR


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
        return run_command(args)
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
