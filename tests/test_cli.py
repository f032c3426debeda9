"""End to end through the `dse` command line, as a user runs it."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from dse.cli import load_name, main, make_parser
from dse.store import Store

ROOT = Path(__file__).resolve().parents[1]
DESIGNS = ROOT / "designs"

SMALL_SPEC = """\
name: cli-small
workload: {model: resnet18, batch: 1, precision: int8}
template:
  kind: systolic
  params:
    rows: [16, 32]
    cols: [16, 32]
    dataflow: [ws, os]
    sram_kib: [256, 1024]
    dram_gbps: 25.6
    freq_mhz: 800
tech: asic-28nm
constraints: {area_mm2: {max: 20}}
objectives: [min latency_ms, min energy_mj]
search: {strategy: grid}
"""


def dse(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dse.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


@pytest.fixture()
def small_spec(tmp_path: Path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL_SPEC)
    return path


def test_explore_writes_every_output_and_resumes(small_spec: Path, tmp_path: Path, capsys) -> None:
    """The installed ``dse`` entry point explores (a subprocess); resume, ``runs`` and ``report`` then go through
    the same ``dse.cli.main`` in this process."""
    out = tmp_path / "run"
    first = dse("explore", str(small_spec), "-o", str(out), "--executor", "serial", "-q")
    assert first.returncode == 0, first.stderr
    assert "16 evaluated" in first.stdout
    for name in ("store.sqlite", "points.parquet", "points.csv", "pareto.csv", "hypervolume.csv", "report.html"):
        assert (out / name).is_file(), name
    points = pd.read_parquet(out / "points.parquet")
    assert len(points) == 16
    for column in ("point_id", "rows", "cols", "dataflow", "sram_kib", "latency_ms", "energy_mj", "area_mm2"):
        assert column in points.columns
    assert points["status"].eq("ok").all()
    front = pd.read_csv(out / "pareto.csv")
    assert 1 <= len(front) <= 16
    assert set(front["point_id"]) == set(points.loc[points["pareto"], "point_id"])

    code, stdout, err = in_process(capsys, "explore", str(small_spec), "-o", str(out), "--executor", "serial", "-q")
    assert code == 0, err
    assert "0 evaluated, 16 from the store" in stdout

    code, stdout, _ = in_process(capsys, "runs", str(tmp_path))
    assert code == 0 and "cli-small" in stdout and "16" in stdout
    (out / "report.html").unlink()
    code, _, err = in_process(capsys, "report", str(out))
    assert code == 0, err
    assert (out / "report.html").stat().st_size > 100_000  # plotly.js is embedded


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``dse ARGS`` through ``dse.cli.main`` in this process: the same parser and command, without paying a
    fresh interpreter's imports per call (the subprocess test above checks the real entry point)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SMALL_SPEC explored once for the module (16 points); tests that must leave it untouched check its bytes."""
    folder = tmp_path_factory.mktemp("small-run")
    spec = folder / "small.yaml"
    spec.write_text(SMALL_SPEC)
    out = folder / "run"
    assert main(["explore", str(spec), "-o", str(out), "--executor", "serial", "-q"]) == 0
    return out


def test_evaluate_writes_per_layer_csv(small_spec: Path, tmp_path: Path, capsys) -> None:
    layers = tmp_path / "layers.csv"
    code, _, err = in_process(
        capsys,
        "evaluate",
        str(small_spec),
        "--point",
        "rows=32",
        "--point",
        "cols=16",
        "--point",
        "dataflow=os",
        "--point",
        "sram_kib=256",
        "--layers",
        str(layers),
    )
    assert code == 0, err
    frame = pd.read_csv(layers)
    required = [
        "layer",
        "cycles",
        "compute_cycles",
        "stall_cycles",
        "dram_read_bytes",
        "dram_write_bytes",
        "utilization",
        "energy_pj",
    ]
    assert all(c in frame.columns for c in required)
    assert "Conv1" in set(frame["layer"]) and "FC" in set(frame["layer"])
    assert (frame["cycles"] >= frame["compute_cycles"]).all()
    assert frame["utilization"].between(0, 1).all()


def test_evaluate_names_layers_as_the_scalesim_csv_does(tmp_path: Path, capsys) -> None:
    spec = DESIGNS / "alexnet_scalesim_topology.yaml"
    layers = tmp_path / "alex.csv"
    code, _, err = in_process(
        capsys,
        "evaluate",
        str(spec),
        "--point",
        "rows=32",
        "--point",
        "cols=32",
        "--point",
        "dataflow=ws",
        "--point",
        "dram_gbps=10",
        "--layers",
        str(layers),
    )
    assert code == 0, err
    assert list(pd.read_csv(layers)["layer"]) == ["Conv1", "Conv2", "Conv3", "Conv4", "Conv5", "FC6", "FC7", "FC8"]


def test_evaluate_needs_every_free_parameter(small_spec: Path, capsys) -> None:
    code, _, err = in_process(capsys, "evaluate", str(small_spec), "--point", "rows=32")
    assert code == 2
    assert "cols" in err and "--point" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "edit, expected",
    [
        (("dataflow: [ws, os]", "dataflow: [ws, xs]"), "template.params.dataflow"),
        (("model: resnet18", "model: resnet19"), "resnet18"),
        (("rows: [16, 32]", "rowz: [16, 32]"), "rowz"),
        (("strategy: grid", "strategy: annealing"), "search.strategy"),
    ],
)
def test_bad_spec_is_one_message_exit_2_and_store_untouched(
    small_run: Path, tmp_path: Path, capsys, edit: tuple[str, str], expected: str
) -> None:
    before = (small_run / "store.sqlite").read_bytes()
    bad = tmp_path / "bad.yaml"
    bad.write_text(SMALL_SPEC.replace(*edit))
    code, _, err = in_process(capsys, "explore", str(bad), "-o", str(small_run), "-q")
    assert code == 2
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert str(bad) in lines[0] and expected in lines[0]
    with sqlite3.connect(small_run / "store.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM points").fetchone()[0] == 16
    assert (small_run / "store.sqlite").read_bytes() == before


def test_report_on_a_non_run_directory_is_a_user_error(tmp_path: Path, capsys) -> None:
    code, _, err = in_process(capsys, "report", str(tmp_path))
    assert code == 2 and "not a run directory" in err and "Traceback" not in err


@pytest.mark.parametrize("spec", sorted(p.name for p in DESIGNS.glob("*.yaml")))
def test_every_design_validates(spec: str, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    code, out, err = in_process(capsys, "validate", str(DESIGNS / spec))
    assert code == 0, err
    assert "ok" in out


def test_models_and_params_list_what_exists(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = in_process(capsys, "models")
    assert code == 0 and "resnet50" in out and "gpt2" in out
    code, out, _ = in_process(capsys, "params", "systolic")
    assert code == 0 and "dataflow" in out and "ws" in out
    code, _, err = in_process(capsys, "params", "tpu")
    assert code == 2 and "systolic" in err


def test_console_script_is_installed() -> None:
    exe = shutil.which("dse", path=str(Path(sys.executable).parent))
    assert exe is not None, "the `dse` console script is not installed next to the interpreter"


def test_help_loads_no_command_module() -> None:
    """`dse --help` answers in a fraction of a second: building every parser imports no numpy, pandas or models."""
    probe = (
        "import sys, dse.cli; dse.cli.make_parser(); "
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('numpy', 'pandas', 'scipy', 'templates', 'mappers', 'hwmodels', 'surrogates') or m == 'dse.commands')))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [], f"dse.cli imports {result.stdout.strip()} before any command runs"


def every_subparser(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield child
                yield from every_subparser(child)


def test_every_command_names_a_function_that_exists() -> None:
    parsers = [p for p in every_subparser(make_parser()) if p.get_default("run")]
    assert len(parsers) == 16  # 12 commands, and `surrogate` with 4 of its own
    for parser in parsers:
        assert callable(load_name(parser.get_default("run"))), parser.prog


def test_evaluate_prints_energy_by_component_and_area_by_block(small_spec: Path, capsys) -> None:
    point = ["--point", "rows=32", "--point", "cols=16", "--point", "dataflow=os", "--point", "sram_kib=256"]
    code, out, err = in_process(capsys, "evaluate", str(small_spec), *point)
    assert code == 0, err
    energy_at, area_at = out.index("energy by component:"), out.index("area by block:")
    assert energy_at < area_at

    def table(text: str) -> dict[str, tuple[float, float]]:
        rows = re.findall(r"^    (\w+)\s+(\S+) \S+\s+([\d.]+)%$", text, re.M)
        return {name: (float(value), float(share)) for name, value, share in rows}

    energy, area = table(out[energy_at:area_at]), table(out[area_at:])
    assert {"mac", "sram", "dram", "leakage"} <= set(energy)
    assert {"pe_array", "sram", "control", "io", "wiring"} <= set(area)
    assert sum(share for _, share in area.values()) == pytest.approx(100, abs=0.5)
    code, out, err = in_process(capsys, "evaluate", str(small_spec), *point, "--json")
    metrics = json.loads(out)["metrics"]
    blocks = {k: v for k, v in metrics.items() if re.fullmatch(r"area_.+_mm2", k)}
    assert sum(blocks.values()) == pytest.approx(metrics["area_mm2"])
    assert blocks["area_sram_mm2"] == pytest.approx(area["sram"][0], rel=1e-5)


def test_a_metric_the_model_does_not_give_for_the_workload_is_one_message(tmp_path: Path, capsys) -> None:
    """tpot_ms is a metric a spec may name, but the RDU model gives serving metrics for LLM workloads only:
    the run says so in one located message, exit 2, and keeps what it evaluated."""
    spec = tmp_path / "gpt2_rdu.yaml"
    spec.write_text(
        "name: gpt2-rdu\nworkload: {model: jet_mlp}\ntemplate: {kind: rdu}\n"
        "objectives: [min latency_ms]\nconstraints: {tpot_ms: {max: 5}}\nsearch: {strategy: grid}\n"
    )
    code, _, err = in_process(capsys, "explore", str(spec), "-o", str(tmp_path / "run"), "--executor", "serial", "-q")
    assert code == 2, err
    assert "constraints.tpot_ms: tpot_ms: the rdu model gives no such metric for this workload" in err
    assert "Traceback" not in err and "latency_ms" in err
    with Store.open(tmp_path / "run") as store:
        assert store.count() == 1
