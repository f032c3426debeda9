"""``dse surrogate dataset | train | eval``: build training data, train with honest accuracy, evaluate.

The commands' parsers are in dse/cli.py, which loads this module by name when one of them runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dse.choices import scalesim_cache_dir
from dse.errors import UserError
from dse.files import atomic_write
from dse.spec import load_spec
from surrogates.contract.features import supported_templates
from surrogates.dataset import build_dataset, check_dataset, design_frame, workloads_from_args
from surrogates.evaluate import REPORTED_TARGETS, design_accuracy, format_table, scatter_html
from surrogates.learning import MODEL_KINDS
from surrogates.protocol import load_surrogate
from surrogates.train import train
from surrogates.truth.scalesim import ScaleSimTruth


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
        cache = Path(args.scalesim_cache) if args.scalesim_cache else scalesim_cache_dir()
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
