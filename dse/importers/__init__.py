"""Importers: ONNX files and SCALE-Sim topology CSVs become dse.graph.Graph."""
