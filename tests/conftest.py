"""Shared fixtures and the suite's two splits: unit vs integration, and the default run vs ``slow``.

unit vs integration is a marker, not a folder: every module below ``INTEGRATION_MODULES`` runs a whole
pipeline (the CLI, ``explore``, a subprocess, an external tool such as SCALE-Sim, g++ or Chromium, a
surrogate training); every other module checks one piece (a template, a mapper, a model, a parser) and
is marked ``unit``. A marker keeps the files where they are (other work edits them; helper modules such
as explore_fixtures.py must stay importable by pool workers and ``python -m``), and one table here says
which is which. ``pytest -m unit`` runs the fast pieces alone, ``pytest -m integration`` the pipelines.

``slow``: the default run (``make test``) deselects it; ``make test-all`` runs everything. The tests that
moved there re-check on a larger input or a longer run what a faster default test already checks; each
entry of ``SLOW_TESTS`` says which.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dse import zoo
from dse.graph import Graph

ROOT = Path(__file__).resolve().parent.parent
DIGITS_TRAINER = ROOT / "tools" / "train_digits.py"
DIGITS_FILES = ("digits_mlp.onnx", "digits_val.npz", "digits_all.npz")

INTEGRATION_MODULES = frozenset(
    {
        "test_cli",
        "test_compare",
        "test_conformance",
        "test_describe",
        "test_explore",
        "test_export",
        "test_fuzz_inputs",
        "test_fuzz_onnx",
        "test_gpu_measure",
        "test_hybrid",
        "test_import_real_models",
        "test_interrupt",
        "test_quant",
        "test_quant_precision",
        "test_rdu",
        "test_report_browser",
        "test_scalesim_calc",
        "test_scalesim_truth",
        "test_scalesim_validation",
        "test_schedule_cli",
        "test_solver_limits",
        "test_sparsity_scalesim",
        "test_store",
        "test_surrogate",
        "test_surrogate_measured",
        "test_user_mode_batch",
        "test_user_mode_surrogate",
    }
)

# "module.py::test_name" (every parameter) or "module.py::test_name[id]" (one) -> why it runs only with
# -m slow, naming the default test that covers the same code.
SLOW_TESTS: dict[str, str] = {
    "test_interrupt.py::test_signal_while_writing_outputs_leaves_no_partial_file[SIGINT]": (
        "the [SIGTERM] case runs the same cleanup (Terminated is a KeyboardInterrupt, so both signals unwind "
        "through the same finally blocks); the SIGINT exit code and message are checked by "
        "test_signal_during_sweep_keeps_points_and_resumes[SIGINT]; each case is a subprocess sweep"
    ),
    "test_interrupt.py::test_signal_during_export_leaves_no_partial_project[SIGINT]": (
        "the [SIGTERM] case runs the same export cleanup; each case is a subprocess sweep plus a g++ build"
    ),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test unit or integration, and the tests of SLOW_TESTS slow (a stale entry is an error)."""
    seen: set[str] = set()
    modules: set[str] = set()
    for item in items:
        module = item.path.stem
        modules.add(module)
        item.add_marker(pytest.mark.integration if module in INTEGRATION_MODULES else pytest.mark.unit)
        base = item.originalname if isinstance(item, pytest.Function) else item.name
        for key in (f"{item.path.name}::{base}", f"{item.path.name}::{item.name}"):  # all parameters, or one
            if key in SLOW_TESTS:
                seen.add(key)
                item.add_marker(pytest.mark.slow)
    stale = [key for key in SLOW_TESTS if key.split(".py::")[0] in modules and key not in seen]
    if stale:
        raise pytest.UsageError(f"tests/conftest.py SLOW_TESTS names tests that do not exist: {', '.join(stale)}")


@pytest.fixture(scope="session")
def zoo_graph() -> Callable[..., Graph]:
    """``zoo_graph(name, **options)``: a model-zoo workload graph built once per session (treat it as read-only)."""
    build = functools.cache(lambda name, options: zoo.build(name, **dict(options)))
    return lambda name, **options: build(name, tuple(sorted(options.items())))


@pytest.fixture(scope="session")
def digits_workloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the trained digits MLP and its data, written once per session by ``tools/train_digits.py``
    (the demo's trainer, run as ``make demo`` runs it); tests copy it where they add files of their own."""
    folder = tmp_path_factory.mktemp("digits_workloads")
    subprocess.run([sys.executable, str(DIGITS_TRAINER), str(folder)], check=True, capture_output=True)
    assert all((folder / name).is_file() for name in DIGITS_FILES)
    return folder
