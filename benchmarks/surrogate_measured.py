"""Surrogates trained on real measurements next to the analytical models, on designs the surrogate never saw.

FPGA: the wa-hls4ml Vivado HLS rows as a contract dataset (``dse surrogate measured wa-hls4ml:CSV``), split by
network with the stable hash halves of ``benchmarks/fpga_wa_hls4ml.py`` (whose calibration half fitted the FPGA
model's LUT/FF constants, so the test half is unseen by both). Per target: the surrogate (learns
log(measured / model)), the analytical FPGA model alone, and a direct regressor on the raw network sizes
(``surrogates.truth.wa_hls4ml.train_measured``, no model).

GPU: LLMCompass's measured A100 kernels (``llmcompass:DIR``; or ``--gpu-csv`` from tools/gpu_measure.py),
leave one shape family (one sweep) out. Per family: the surrogate, the GPU model as shipped (its constants were
calibrated on these very rows, so it has seen the held-out family), and the GPU model refitted
(``hwmodels.gpu.calibrate.fit``) on the other families only -- the honest analytical figure.

    .venv/bin/python benchmarks/surrogate_measured.py [--model gb|rf] [--skip-refit]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from hwmodels.gpu.calibrate import OP_KINDS, fit, predict_seconds, read_llmcompass, with_tuning
from surrogates.evaluate import accuracy
from surrogates.truth.measured import measured_dataset, read_gpu_csv, sweep_families
from surrogates.truth.measured_eval import (
    FPGA_REPORTED,
    format_comparison,
    group_out_comparison,
    heldout_comparison,
)
from surrogates.truth.wa_hls4ml import FPGA_TARGETS, read_wa_hls4ml, train_measured
from templates.gpu import GpuTemplate

ROOT = Path(__file__).resolve().parents[1]

SHARED = ROOT.parent / "shared" / "data"
WA = SHARED / "wa-hls4ml" / "wa_2layer_subset.csv"
LLMCOMPASS = SHARED / "gpu" / "llmcompass_a100"


def fpga(path: Path, kind: str) -> None:
    started = time.perf_counter()
    data = measured_dataset([f"wa-hls4ml:{path}"])
    built = time.perf_counter() - started
    result = heldout_comparison(data, FPGA_REPORTED, kind)
    direct = train_measured(read_wa_hls4ml(path), "gb")
    truth = read_wa_hls4ml(path)[list(FPGA_TARGETS)][direct["test"]]
    for target in FPGA_TARGETS:
        if target in result["targets"]:
            pred = direct["predictions"][target].to_numpy()
            result["targets"][target]["direct (no model)"] = accuracy(truth[target].to_numpy(), pred)
    print(
        f"FPGA: wa-hls4ml {len(data)} designs of {data['workload'].nunique()} networks "
        f"(dataset built in {built:.1f} s); "
        f"trained on {result['train_workloads']} networks ({result['train_rows']} designs), tested on "
        f"{result['test_workloads']} others ({result['test_rows']} designs); surrogate {kind}"
    )
    print(format_comparison(result["targets"], "", ("surrogate", "model", "direct (no model)")))


def gpu_refit(rows, families) -> dict[str, dict]:
    """Per family: the GPU model refitted on every other family, accuracy on the family."""
    arch = GpuTemplate().instantiate({"gpu": rows[0].gpu, "precision": rows[0].precision})
    out, predicted = {}, np.full(len(rows), np.nan)
    for family in sorted(set(families)):
        train = [m for m, f in zip(rows, families) if f != family]
        fitted = with_tuning(arch, fit(train, arch).tuning)
        for i, (m, f) in enumerate(zip(rows, families)):
            if f == family:
                predicted[i] = predict_seconds(m, fitted)
    truth = np.array([m.seconds for m in rows])
    out["all"] = accuracy(truth, predicted)
    for family in sorted(set(families)):
        mask = np.array([f == family for f in families])
        out[family] = accuracy(truth[mask], predicted[mask])
    return out


def gpu(source: str, kind: str, refit: bool) -> None:
    data = measured_dataset([source])
    result = group_out_comparison(data, "family", ("latency_ms",), kind)
    if refit and source.startswith("llmcompass:"):
        rows = read_llmcompass(source.split(":", 1)[1])
        refitted = gpu_refit(rows, sweep_families(rows))
    elif refit:
        rows, families = read_gpu_csv(Path(source.split(":", 1)[1]))
        # the calibration prices one kernel per row: attention rows (several kernels) get no refit figure
        single = [(m, f) for m, f in zip(rows, families) if m.op in OP_KINDS]
        rows, families = [m for m, _ in single], [f for _, f in single]
        refitted = gpu_refit(rows, families) if len({m.gpu for m in rows}) == 1 else {}
    else:
        refitted = {}
    print(
        f"\nGPU: {source}: {len(data)} measured kernels in {data['family'].nunique()} shape families; "
        f"each family predicted by fits that never saw it (surrogate {kind}); 'model' = the GPU model as shipped, "
        "calibrated on all these rows (it saw the family); 'model refit' = calibrated without the family"
    )
    names = ("surrogate", "model", "model refit")
    lines = [f"  {'family':<30} {'predictor':<12} {'n':>4} {'R^2':>8} {'MAPE %':>8} {'p95 %':>8}"]
    for family, by_target in result.items():
        cells = dict(by_target["latency_ms"])
        if family in refitted:
            cells["model refit"] = refitted[family]
        for name in names:
            if name in cells:
                m = cells[name]
                lines.append(
                    f"  {family:<30} {name:<12} {m['n']:>4} {m['r2']:>8.4f} {m['mape']:>8.2f} {m['p95']:>8.2f}"
                )
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wa", type=Path, default=WA)
    parser.add_argument("--llmcompass", type=Path, default=LLMCOMPASS)
    parser.add_argument("--gpu-csv", type=Path, help="a measurement CSV of tools/gpu_measure.py instead")
    parser.add_argument("--model", default="gb", help="gb | rf")
    parser.add_argument("--skip-refit", action="store_true", help="skip refitting the GPU model per family")
    args = parser.parse_args(argv)
    if args.wa.is_file():
        fpga(args.wa, args.model)
    else:
        print(f"wa-hls4ml data not found at {args.wa}; FPGA part skipped")
    source = f"gpu-csv:{args.gpu_csv}" if args.gpu_csv else f"llmcompass:{args.llmcompass}"
    if args.gpu_csv or args.llmcompass.is_dir():
        gpu(source, args.model, not args.skip_refit)
    else:
        print(f"LLMCompass data not found at {args.llmcompass}; GPU part skipped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
