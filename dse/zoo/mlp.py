"""The hls4ml jet-tagging MLP: the canonical tiny FPGA workload (16 features -> 5 jet classes)."""

from __future__ import annotations

from dse.graph import Graph, GraphBuilder

JET_MLP_WIDTHS = (16, 64, 32, 32, 5)


def jet_mlp(batch: int = 1, elem_bytes: int = 1) -> Graph:
    """Dense+ReLU x3, Dense, Softmax; layer names as in the hls4ml tutorial model (fc1 ... output, softmax)."""
    b = GraphBuilder("jet_mlp", elem_bytes)
    x = b.input("features", (batch, JET_MLP_WIDTHS[0]))
    hidden = JET_MLP_WIDTHS[1:-1]
    for i, width in enumerate(hidden, start=1):
        x = b.linear(x, width, name=f"fc{i}")
        x = b.relu(x, name=f"relu{i}")
    x = b.linear(x, JET_MLP_WIDTHS[-1], name="output")
    b.softmax(x, name="softmax")
    return b.build()
