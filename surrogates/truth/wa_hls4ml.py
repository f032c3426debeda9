"""Real measurements in, as training data: wa-hls4ml synthesis records.

A reader returns one row per measured design with ``network`` (what a held-out split groups by),
numeric feature columns (``FPGA_FEATURES``) and target columns (``FPGA_TARGETS``), so the same
``train_measured`` fits a surrogate on any of them and reports its error on networks it never saw.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dse.errors import UserError
from hwmodels.catalogs.fpga import wa_hls4ml_column
from surrogates.learning import make_regressor

FPGA_FEATURES = ("d_in", "hidden", "d_out", "prec", "reuse_factor", "mults", "mults_per_rf", "weight_bits")
FPGA_TARGETS = ("lut", "ff", "dsp", "bram", "latency_cycles", "ii_cycles")
CLOCK_COLUMN = "TargetClockPeriod_hls"
WA_DEFAULT_CLOCK_NS = 5.0  # every wa-hls4ml run targets 5 ns (arXiv 2511.05615); used when the column is absent
_WA_COLUMNS = {wa_hls4ml_column(target): target for target in FPGA_TARGETS}


def _fpga_features(d_in: Any, hidden: Any, d_out: Any, prec: Any, rf: Any) -> dict[str, Any]:
    mults = np.asarray(d_in) * np.asarray(hidden) + np.asarray(hidden) * np.asarray(d_out)
    return {
        "d_in": d_in,
        "hidden": hidden,
        "d_out": d_out,
        "prec": prec,
        "reuse_factor": rf,
        "mults": mults,
        "mults_per_rf": mults / np.maximum(np.asarray(rf), 1),
        "weight_bits": mults * np.asarray(prec),
    }


def read_wa_hls4ml(path: str | Path) -> pd.DataFrame:
    """The wa-hls4ml CSV (2-layer dense networks, Vivado HLS): successful syntheses only."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"wa-hls4ml CSV not found (looked for {path.resolve()})", where=str(path))
    try:
        raw = pd.read_csv(path)
    except (ValueError, UnicodeDecodeError) as exc:  # not a CSV at all: one line, not a traceback
        raise UserError(
            f"cannot be read as a CSV ({type(exc).__name__}); give the wa-hls4ml CSV", where=str(path)
        ) from None
    needed = ["model_string", "prec", "rf", "hls_synth_success", *_WA_COLUMNS]
    missing = [c for c in needed if c not in raw.columns]
    if missing:
        raise UserError(f"is not a wa-hls4ml CSV (missing columns: {', '.join(missing)})", where=str(path))
    raw = raw[raw["hls_synth_success"].astype(bool)].reset_index(drop=True)
    widths = raw["model_string"].astype(str).str.split("-", expand=True)
    if widths.shape[1] != 3 or not widths.apply(lambda c: c.str.fullmatch(r"\d+")).all().all():
        bad = raw["model_string"][~raw["model_string"].astype(str).str.fullmatch(r"\d+-\d+-\d+")].iloc[0]
        raise UserError(
            f"model_string {bad!r} is not a 2-layer network 'd_in-hidden-d_out' (only 2-layer rows are supported)",
            where=str(path),
        )
    widths = widths.astype(int)
    numeric = ["prec", "rf", *_WA_COLUMNS]
    wrong = [c for c in numeric if not pd.api.types.is_numeric_dtype(raw[c])]
    if wrong:
        raise UserError(f"columns {', '.join(wrong)} must be numbers", where=str(path))
    frame = pd.DataFrame({"network": raw["model_string"]})
    for name, values in _fpga_features(widths[0], widths[1], widths[2], raw["prec"], raw["rf"]).items():
        frame[name] = np.asarray(values, dtype=float)
    for column, target in _WA_COLUMNS.items():
        frame[target] = raw[column].astype(float)
    # the clock the design was synthesized for (wa-hls4ml's TargetClockPeriod_hls; 5 ns in the published runs)
    clock = raw[CLOCK_COLUMN] if CLOCK_COLUMN in raw.columns else pd.Series(WA_DEFAULT_CLOCK_NS, index=raw.index)
    frame["clock_period_ns"] = clock.astype(float)
    frame["source"] = "wa-hls4ml"
    return frame


def network_split(frame: pd.DataFrame, column: str = "network") -> np.ndarray:
    """True for the test half: networks split by a stable hash of their name (never by row). The same halves
    as ``benchmarks/fpga_wa_hls4ml.py``, whose calibration half fitted the FPGA model's LUT/FF constants."""
    return np.array([zlib.crc32(str(n).encode()) % 2 == 1 for n in frame[column]])


def train_measured(frame: pd.DataFrame, kind: str = "gb", seed: int = 0) -> dict[str, Any]:
    """One regressor per target on log(1 + target); returns models and the test-half predictions."""
    test = network_split(frame)
    x = frame[list(FPGA_FEATURES)].to_numpy(float)
    models, predictions = {}, {}
    for target in FPGA_TARGETS:
        model = make_regressor(kind, multi_output=False, seed=seed)
        model.fit(x[~test], np.log1p(frame[target].to_numpy(float)[~test]))
        models[target] = model
        predictions[target] = np.expm1(model.predict(x[test]))
    return {"models": models, "test": test, "predictions": pd.DataFrame(predictions)}
