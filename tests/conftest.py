"""Fixtures shared by several test files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DIGITS_TRAINER = ROOT / "tools" / "train_digits.py"
DIGITS_FILES = ("digits_mlp.onnx", "digits_val.npz", "digits_all.npz")


@pytest.fixture(scope="session")
def digits_workloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the trained digits MLP and its data, written once per session by ``tools/train_digits.py``
    (the demo's trainer, run as ``make demo`` runs it); tests copy it where they add files of their own."""
    folder = tmp_path_factory.mktemp("digits_workloads")
    subprocess.run([sys.executable, str(DIGITS_TRAINER), str(folder)], check=True, capture_output=True)
    assert all((folder / name).is_file() for name in DIGITS_FILES)
    return folder
