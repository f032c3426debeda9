"""A small CNN of the size hls4ml users put on one FPGA (conv-pool x2, dense, softmax; 1x16x16 input)."""

from __future__ import annotations

from dse.graph import Graph, GraphBuilder

SMALL_CNN_FILTERS = (8, 16)
SMALL_CNN_CLASSES = 10


def small_cnn(batch: int = 1, elem_bytes: int = 1, resolution: int = 16) -> Graph:
    """Conv3x3(8)+ReLU, MaxPool2, Conv3x3(16)+ReLU, MaxPool2, Flatten, Dense(10), Softmax."""
    b = GraphBuilder("small_cnn", elem_bytes)
    x = b.input("image", (batch, 1, resolution, resolution))
    for i, filters in enumerate(SMALL_CNN_FILTERS, start=1):
        x = b.conv(x, filters, 3, name=f"conv{i}", bias=True)
        x = b.relu(x, name=f"relu{i}")
        x = b.pool(x, 2, 2, name=f"pool{i}")
    n, c, h, w = b.shape(x)
    x = b.reshape(x, (n, c * h * w))
    x = b.linear(x, SMALL_CNN_CLASSES, name="dense")
    b.softmax(x, name="softmax")
    return b.build()
