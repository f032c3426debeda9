"""``dse surrogate dataset | train | eval``: build training data, train with honest accuracy, evaluate."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dse.errors import UserError
from dse.files import atomic_write
from dse.spec import load_spec
from surrogates.contract import supported_templates
from surrogates.contract_model import load_surrogate
from surrogates.dataset import build_dataset, check_dataset, design_frame, workloads_from_args
from surrogates.evaluate import REPORTED_TARGETS, design_accuracy, format_table, scatter_html
from surrogates.measured import register as register_measured
from surrogates.model import MODEL_KINDS
from surrogates.scalesim_truth import ScaleSimTruth, default_cache_dir
from surrogates.train import train


def register(sub: argparse._SubParsersAction) -> None:
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
        help=f"where --truth scalesim keeps its per-layer reports (default {default_cache_dir()})",
    )
    d.add_argument(
        "--scalesim-max-cycles",
        type=float,
        metavar="CYCLES",
        default=None,
        help="with --truth scalesim: leave out designs whose model latency over their MAC-array layers exceeds "
        "CYCLES (SCALE-Sim's run time grows with the cycles it simulates; default: simulate every design)",
    )
    d.set_defaults(func=cmd_dataset)

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
    t.set_defaults(func=cmd_train)

    e = ss.add_parser("eval", help="accuracy of a model on a dataset: R^2, MAPE, p50/p75/p95; plot")
    e.add_argument("model")
    e.add_argument("data")
    e.add_argument("--plot", metavar="OUT.html", help="write a predicted-vs-true plotly plot")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_eval)
    register_measured(ss)  # dse surrogate measured: datasets whose truth is real measurements


def _read_dataset(path: str):
    import pandas as pd

    if not Path(path).is_file():
        raise UserError(
            f"dataset not found (looked for {Path(path).resolve()}); build one with "
            "`dse surrogate dataset SPEC -n N -o DATA.parquet`",
            where=path,
        )
    try:
        data = pd.read_parquet(path)
    except Exception as exc:  # not parquet: one line, not a traceback
        raise UserError(
            f"cannot be read as parquet ({type(exc).__name__}); give a file written by `dse surrogate dataset`",
            where=path,
        ) from None
    check_dataset(data, path)
    return data


def cmd_dataset(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    if spec.template.kind not in supported_templates():
        raise UserError(
            f"surrogate datasets support templates {', '.join(supported_templates())}, not {spec.template.kind}",
            where=spec.locate("template.kind"),
        )
    workloads = workloads_from_args(spec, args.workload or [])
    scalesim = None
    if args.truth == "scalesim":
        cache = Path(args.scalesim_cache) if args.scalesim_cache else default_cache_dir()
        scalesim = ScaleSimTruth(cache, max_model_cycles=args.scalesim_max_cycles)
    data = build_dataset(
        spec.template.kind,
        spec.design_space(),
        spec.fixed_params(),
        workloads,
        args.n,
        seed=args.seed,
        mapper=spec.template.mapper,
        mapper_options=dict(spec.template.mapper_options),
        executor=args.executor,
        workers=args.workers,
        base_dir=spec.base_dir,
        scalesim=scalesim,
    )
    if scalesim is not None:
        print(
            f"SCALE-Sim truth: {scalesim.simulated} layer runs in {scalesim.sim_seconds:.1f} s, {scalesim.cached} "
            f"found in {scalesim.cache_dir}"
            + (f", {scalesim.failed} failed" if scalesim.failed else "")
            + (f", {scalesim.skipped} designs over --scalesim-max-cycles left out" if scalesim.skipped else "")
        )
    out = atomic_write(args.output, lambda path: data.to_parquet(path, index=False))
    designs = data.groupby(["workload", "design"]).ngroups
    print(f"wrote {len(data)} op rows of {designs} designs over {len(workloads)} workload(s) to {out}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    if args.model not in MODEL_KINDS:
        raise UserError(f"unknown model {args.model!r}; choose one of: {', '.join(MODEL_KINDS)}", where="--model")
    data = _read_dataset(args.data)
    model = train(data, args.model, holdout=args.holdout, cv_folds=args.cv, seed=args.seed, level=args.level)
    path = model.save(args.output)
    held = model.metrics.get("heldout_workload")
    if held:
        print(
            format_table(
                held["designs"],
                f"held-out workload {', '.join(held['test_workloads'])} "
                f"(trained on {', '.join(held['train_workloads'])})",
            )
        )
        print(format_table(held["baseline_only"], "the closed form alone on the held-out workload (no learning)"))
    print(format_table(model.metrics["random_split"]["designs"], "random split (20 % of designs held out)"))
    if "cross_validation" in model.metrics:
        print("cross-validation: " + json.dumps(model.metrics["cross_validation"]))
    print(f"wrote {path}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    model = load_surrogate(args.model)
    data = _read_dataset(args.data)
    results = design_accuracy(model, data)
    unseen = sorted(set(data["workload"].unique()) - set(model.trained_on))
    if args.json:
        print(json.dumps({"designs": results, "workloads_not_trained_on": unseen}, indent=2))
    else:
        print(format_table(results, f"{args.model} on {args.data}"))
        print("workloads the model never saw: " + (", ".join(unseen) or "none (figures are on training data)"))
    if args.plot:
        truth = design_frame(data).rename(columns={f"design_{t}": t for t in REPORTED_TARGETS})
        path = scatter_html(truth, model.predict_frame(data), REPORTED_TARGETS, Path(args.plot), args.model)
        print(f"wrote {path}")
    return 0
