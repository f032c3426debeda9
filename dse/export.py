"""``dse export`` and ``dse ingest-report``: an explored FPGA design point becomes a real hls4ml project.

Export rebuilds the point's graph and mapping, turns the graph into hls4ml's layer-list format (channels-last,
Keras weight order) and builds it with ``ModelGraph.from_layer_list`` -- no TensorFlow or PyTorch needed. Every
knob comes from the point: model- and layer-level ReuseFactor (the legal value the mapper chose, which is what
hls4ml would snap to), Strategy, explicit weight/bias/result/accumulator precisions for every layer (an ``auto``
result before a softmax silently yields a constant output in hls4ml 1.3), IOType, part and clock. Weights come
from the ONNX file when the workload is one, else from a seeded generator. ``--csim`` compiles hls4ml's C
simulation with g++ and compares it on seeded inputs with a float reference of the same network.

The project's README names the synthesis command and the prediction; ``dse ingest-report`` reads the
synthesis report back (hls4ml's report readers) into the run's store next to the prediction. hls4ml's synthesis
scripts write no power report; when the user runs Vivado's ``report_power -file <name>power<name>.rpt`` (or keeps an
implementation run's ``*_power_routed.rpt``) anywhere under the project, ingest reads its Summary table too
(total on-chip, dynamic and device static power) and sets the total beside the predicted ``power_w``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dse.choices import EXPORT_BACKENDS
from dse.files import atomic_write_text
from dse.graph import Graph
from dse.hls4ml_project import build_model, csim_accuracy, csim_check, hls_config
from dse.registry import HLS4ML, family, kinds_exporting
from dse.rundir import STORE_FILE, open_run, open_store, stops_when_disk_full
from dse.session import build_evaluator
from hwmodels.accuracy.hls_network import WEIGHT_SEED, ExportError, layer_list, model_weights
from hwmodels.catalogs.fpga import HLS_REPORT_KEYS

PROJECT_DIR = "hls4ml_prj"
POWER_REPORT_GLOB = "*power*.rpt"
POWER_REPORT_KEY = "VivadoPowerReport"  # beside hls4ml's CSynthesisReport / VivadoSynthReport in the stored report
# Vivado report_power's Summary rows -> our names (watts)
POWER_REPORT_ROWS = {
    "Total On-Chip Power (W)": "total_on_chip_w",
    "Dynamic (W)": "dynamic_w",
    "Device Static (W)": "static_w",
}
_POWER_ROW = re.compile(r"^\|\s*(?P<label>[^|]+?)\s*\|\s*(?P<value>[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")
REPORT_FILE = "export_report.json"
SYNTH_COMMANDS = {
    "Vitis": 'vitis_hls -f build_prj.tcl "csim=0 synth=1 cosim=0 export=0 vsynth=1"',
    "Vivado": 'vivado_hls -f build_prj.tcl "csim=0 synth=1 cosim=0 export=0 vsynth=1"',
    "Catapult": "catapult -file build_prj.tcl",
    "Quartus": "make myproject-fpga  # Intel HLS compiler i++, then quartus_sh on the generated project",
}


# ---------------------------------------------------------------------------------------------- CLI


def cmd_export(args: argparse.Namespace) -> int:
    removed = f"the partial project in {args.output} was removed"  # by export_point, as on Ctrl-C
    with stops_when_disk_full(args.run_dir, left=removed, output=args.output):  # explore's one full-disk message
        report = export_point(args.run_dir, args.point, args.output, backend=args.backend, csim=args.csim)
    print(f"wrote {args.output / PROJECT_DIR} ({args.backend}); see {args.output / 'README.md'}")
    if "csim" in report:
        c = report["csim"]
        print(f"C simulation: max |error| {c['max_abs_error']:.4g}, argmax agreement {c['argmax_agreement']:.1%}")
        acc = c.get("accuracy")
        print(f"C simulation accuracy: {acc:.2%}" if acc is not None else f"accuracy {c['accuracy_note']}")
    return 0


def cmd_ingest_report(args: argparse.Namespace) -> int:
    row = ingest_report(args.output)
    print(f"stored the {row['backend']} synthesis report of point {row['point_id']} in {row['run_dir']}")
    for name, (measured, predicted) in row["comparison"].items():
        print(f"  {name:15s} measured {measured:>12} predicted {predicted:>12.6g}")
    return 0


# ---------------------------------------------------------------------------------------------- export


@dataclass
class Design:
    """A point brought back to life: its graph, arch, mapping and predicted metrics."""

    graph: Graph
    arch: Any
    mapping: Any
    metrics: Any
    params: dict[str, Any]
    point_id: str
    spec: Any


def load_design(run_dir: Path, point: str) -> Design:
    """The stored point ``point`` (an id or unique prefix) of ``run_dir``, re-mapped and re-evaluated."""
    run_dir = Path(run_dir)
    with open_run(run_dir) as (store, spec):
        records = [r for r in store.records() if r.key.startswith(point) or r.point_id.startswith(point)]
    if HLS4ML not in family(spec.template.kind).exporters:
        raise ExportError(
            f"run {run_dir} explores the {spec.template.kind} template; only {' and '.join(kinds_exporting(HLS4ML))} "
            "points can be exported",
            where=str(run_dir),
        )
    if len(records) != 1:
        what = "no point" if not records else f"{len(records)} points"
        raise ExportError(
            f"{what} in {run_dir} match --point {point!r}; give one point id from points.csv", where="--point"
        )
    record = records[0]
    if not record.ok:
        raise ExportError(f"point {record.point_id} failed during exploration ({record.reason}); pick another")
    graph, evaluator = build_evaluator(spec)
    missing = graph.meta.get("weights_missing")
    if missing:
        raise ExportError(
            f"the model's weight data is missing (tensors {', '.join(map(str, missing[:5]))}"
            f"{', ...' if len(missing) > 5 else ''}): it was imported with shapes only, which is enough to explore "
            "but not to export; put its external data files beside the .onnx file",
            where=spec.locate("workload.model"),
        )
    trace = evaluator.trace(record.params)
    return Design(graph, trace.arch, trace.mapping, trace.metrics, dict(record.params), record.point_id, spec)


def export_point(run_dir: Path, point: str, out: Path, *, backend: str = "Vitis", csim: bool = False) -> dict[str, Any]:
    """Write the hls4ml project, README and export_report.json for one point; returns the report."""
    if backend not in EXPORT_BACKENDS:
        raise ExportError(
            f"backend {backend!r} is not supported; choose one of: {', '.join(EXPORT_BACKENDS)}", "--backend"
        )
    design = load_design(run_dir, point)
    weights = model_weights(design)
    layers, plan = layer_list(design, weights)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} is a file; give a folder for the project", where="-o")
    config = hls_config(design, backend, out / PROJECT_DIR)
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _write_project(design, config, layers, plan, out, run_dir, backend, csim)
    except BaseException:  # Ctrl-C, SIGTERM or a failure half-way: leave no partial project behind
        shutil.rmtree(out / PROJECT_DIR, ignore_errors=True)
        for name in (REPORT_FILE, "README.md"):
            (out / name).unlink(missing_ok=True)
        raise


def _write_project(design, config, layers, plan, out: Path, run_dir: Path, backend: str, csim: bool) -> dict[str, Any]:
    """hls4ml writes the project under ``out/PROJECT_DIR`` (its OutputDir); the report and README go last,
    each atomically, so a complete export_report.json means a complete project."""
    if not (out / PROJECT_DIR).resolve().is_relative_to(out.resolve()):
        raise ExportError(f"{out / PROJECT_DIR} leads outside {out}; give a plain folder", where="-o")
    model = build_model(config, layers)
    model.write()
    report: dict[str, Any] = {
        "run_dir": str(Path(run_dir).resolve()),
        "out": str(out.resolve()),
        "point_id": design.point_id,
        "params": design.params,
        "backend": backend,
        "part": config["Part"],
        "io_type": config["IOType"],
        "clock_period_ns": config["ClockPeriod"],
        "hls_config": _jsonable(config["HLSConfig"]),
        "weights": "onnx" if design.graph.meta.get("source", "").endswith(".onnx") else f"seeded ({WEIGHT_SEED})",
        "predicted": {k: float(v) for k, v in design.metrics.values.items()},
        "notes": _notes(design),
    }
    if csim:
        report["csim"] = csim_check(model, plan)
        report["csim"].update(csim_accuracy(model, design, config))  # on workload.data, if any
    readme = _readme(report, design)
    atomic_write_text(out / "README.md", readme)
    atomic_write_text(out / REPORT_FILE, json.dumps(report, indent=2, default=str))
    return report


# ---------------------------------------------------------------------------------------------- README / notes


def _notes(design: Design) -> list[str]:
    notes = list(design.metrics.info.get("notes", []))
    members = design.metrics.info.get("shared_engine", {}).get("members", [])
    if members:
        notes.append(
            "layers " + ", ".join(members) + " share one engine in the prediction; hls4ml has no cross-layer engine "
            "sharing, so the project gives each its own engine at its ReuseFactor and synthesis will use more "
            "resources than predicted for them"
        )
    return notes


def _readme(report: dict[str, Any], design: Design) -> str:
    pred = report["predicted"]
    lines = [
        f"# hls4ml project for point {report['point_id']}",
        "",
        f"Exported by `dse export` from `{report['run_dir']}` (spec `{design.spec.name}`).",
        f"Backend {report['backend']}, part {report['part']}, {report['io_type']}, "
        f"clock {report['clock_period_ns']} ns.",
        "",
        "## Synthesize",
        "",
        "```",
        f"cd {PROJECT_DIR}",
        SYNTH_COMMANDS[report["backend"]],
        "```",
        "",
        f"then `dse ingest-report {report['out']}` stores the report next to the prediction.",
        "",
        "## Predicted by dse (before synthesis)",
        "",
        "| metric | predicted |",
        "|---|---|",
    ]
    for key in ("latency_cycles", "ii_cycles", "latency_ms", "dsp", "lut", "ff", "bram", "fpga_util"):
        lines.append(f"| {key} | {pred[key]:.6g} |")
    lines += ["", "## Point", "", "```json", json.dumps(report["params"], indent=2), "```"]
    if report["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report["notes"]]
    if "csim" in report:
        c = report["csim"]
        lines += [
            "",
            "## C simulation",
            "",
            f"{c['samples']} seeded inputs: max |error| vs float {c['max_abs_error']:.4g}, "
            f"argmax agreement {c['argmax_agreement']:.1%}.",
        ]
    return "\n".join(lines) + "\n"


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# ---------------------------------------------------------------------------------------------- ingest


def read_synthesis_report(project: Path, backend: str) -> dict[str, Any]:
    """hls4ml's parsed report of an exported project; ExportError when synthesis has not been run."""
    import contextlib
    import io

    from hls4ml.report import parse_catapult_report, parse_quartus_report, parse_vivado_report

    with contextlib.redirect_stdout(io.StringIO()):
        if backend in ("Vivado", "Vitis"):
            report = parse_vivado_report(str(project))
        elif backend == "Catapult":
            report = parse_catapult_report(str(project))
        else:
            report = parse_quartus_report(str(project), write_to_file=False)
    if not report or not (report.get("CSynthesisReport") or report.get("VivadoSynthReport") or backend == "Quartus"):
        raise ExportError(
            f"no synthesis report found in {project}; run the synthesis command in its README first",
            where=str(project),
        )
    return report


def ingest_report(out: Path) -> dict[str, Any]:
    """Store the synthesis report of an exported project in its run's store, beside the prediction."""
    out = Path(out)
    meta_file = out / REPORT_FILE
    if not meta_file.is_file():
        raise ExportError(f"{out} has no {REPORT_FILE}; give a folder written by `dse export`", where=str(out))
    meta = json.loads(meta_file.read_text())
    report = read_synthesis_report(out / PROJECT_DIR, meta["backend"])
    power = read_power_report(out / PROJECT_DIR)
    if power is not None:
        report = {**report, POWER_REPORT_KEY: power}
    run_dir = Path(meta["run_dir"])
    if not (run_dir / STORE_FILE).is_file():
        raise ExportError(f"the run {run_dir} named in {meta_file} has no {STORE_FILE}", where=str(meta_file))
    with stops_when_disk_full(run_dir), open_store(run_dir) as store:
        store.put_synthesis(meta["point_id"], meta["backend"], report, meta["predicted"])
    return {
        "point_id": meta["point_id"],
        "backend": meta["backend"],
        "run_dir": str(run_dir),
        "comparison": compare(report, meta["predicted"]),
    }


def compare(report: dict[str, Any], predicted: dict[str, float]) -> dict[str, tuple[str, float]]:
    """Measured (from the HLS report, and Vivado's power report when read) vs predicted, for the figures both have."""
    synth = report.get("CSynthesisReport", {})
    rows = {ours: (str(synth[theirs]), predicted[ours]) for ours, theirs in HLS_REPORT_KEYS.items() if theirs in synth}
    power = report.get(POWER_REPORT_KEY, {})
    if "total_on_chip_w" in power and "power_w" in predicted:
        rows["power_w"] = (str(power["total_on_chip_w"]), predicted["power_w"])
    return rows


def parse_power_report(text: str) -> dict[str, float]:
    """Total on-chip, dynamic and device static power (W) from the Summary table of Vivado's ``report_power``."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        match = _POWER_ROW.match(line.strip())
        if match and match["label"] in POWER_REPORT_ROWS and POWER_REPORT_ROWS[match["label"]] not in found:
            found[POWER_REPORT_ROWS[match["label"]]] = float(match["value"])
    return found


def read_power_report(project: Path) -> dict[str, Any] | None:
    """The newest Vivado power report under ``project`` (parsed, with its path), or None when there is none."""
    candidates = sorted(Path(project).rglob(POWER_REPORT_GLOB), key=lambda path: (path.stat().st_mtime, str(path)))
    for path in reversed(candidates):
        power = parse_power_report(path.read_text(errors="replace"))
        if "total_on_chip_w" in power:
            return {**power, "file": str(path.relative_to(project))}
    return None


def stored_synthesis(run_dir: Path) -> list[dict[str, Any]]:
    """Every synthesis report ingested into ``run_dir``'s store."""
    with open_store(Path(run_dir)) as store:
        return store.synthesis()
