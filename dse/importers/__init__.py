"""Importers: ONNX files and SCALE-Sim topology CSVs become dse.graph.Graph.

``load_onnx`` and ``load_scalesim_csv`` are re-exported here. The ONNX modules import onnx only
inside the functions that read a model, so reading a CSV never pays for importing onnx.
"""

from __future__ import annotations

from dse.importers.onnx_import import load_onnx
from dse.importers.scalesim_csv import load_scalesim_csv

__all__ = ["load_onnx", "load_scalesim_csv"]
