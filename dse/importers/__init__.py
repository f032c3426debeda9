"""Importers: ONNX files and SCALE-Sim topology CSVs become dse.graph.Graph.

``load_onnx`` and ``load_scalesim_csv`` are re-exported lazily, so reading a CSV never pays
for importing onnx.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_onnx", "load_scalesim_csv"]


def __getattr__(name: str) -> Any:
    if name == "load_onnx":
        from dse.importers.onnx_import import load_onnx

        return load_onnx
    if name == "load_scalesim_csv":
        from dse.importers.scalesim_csv import load_scalesim_csv

        return load_scalesim_csv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
