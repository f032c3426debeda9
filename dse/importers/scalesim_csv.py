"""SCALE-Sim topology CSVs become the same graph IR the zoo builds.

Two formats are read, as SCALE-Sim 3.0 reads them (``scalesim/topology_utils.py``):

- conv: ``Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter,
  Strides,`` (one stride for both axes, an optional ``N:M`` sparsity column, a trailing comma);
- GEMM: ``Layer, M, N, K,`` (optional sparsity column), one ``A[M,K] @ B[K,N]`` per row.

SCALE-Sim never pads; its output size is ``ceil((ifmap - filter + stride) / stride)``, i.e. the
last window may run past the input edge when ``(ifmap - filter)`` is not a multiple of the stride
(ResNet-18's 224 -> 110 for the 7x7/2 stem). That overhang is recorded as bottom/right padding so
the IR's output size and MAC count equal SCALE-Sim's. Layers named with ``DP`` are depthwise in
SCALE-Sim (one single-channel conv per input channel); they become one grouped conv with the same
MACs. SCALE-Sim simulates layers independently, so a layer reads the previous layer's output only
when the shapes connect; otherwise it reads its own graph input ``<layer>:ifmap``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from dse.graph import PRECISION_BYTES, Graph, GraphBuilder, GraphError
from dse.importers.sparsity import parse_pattern, with_sparsity

CONV_COLUMNS = (
    "Layer name",
    "IFMAP Height",
    "IFMAP Width",
    "Filter Height",
    "Filter Width",
    "Channels",
    "Num Filter",
    "Strides",
)
GEMM_COLUMNS = ("Layer", "M", "N", "K")
SPARSITY_COLUMN = "Sparsity"


@dataclass(frozen=True)
class _Row:
    """One topology row: its line number, layer name and the numeric cells by column name."""

    line: int
    name: str
    values: dict[str, int]
    raw: dict[str, str]


def load_scalesim_csv(path: str | Path, *, batch: int = 1, precision: str = "int8") -> Graph:
    """Import a SCALE-Sim topology (conv or GEMM format) as a Graph; ``batch`` becomes the conv N."""
    path = Path(path)
    if precision not in PRECISION_BYTES:
        raise GraphError(f"unknown precision {precision!r}; allowed: {', '.join(PRECISION_BYTES)}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise GraphError(f"batch must be a positive integer, got {batch!r}")
    lines = _read_lines(path)
    columns = _columns(path, lines[0] if lines else "")
    rows = _parse_rows(path, lines, columns)
    if not rows:
        raise GraphError(f"{path}: the topology has a header but no layer rows")
    builder = GraphBuilder(path.stem, elem_bytes=PRECISION_BYTES[precision])
    if columns == GEMM_COLUMNS:
        _build_gemm(builder, rows, batch)
    else:
        _build_conv(builder, path, rows, batch)
    builder.meta.update(
        source=str(path),
        format="scalesim-gemm" if columns == GEMM_COLUMNS else "scalesim-conv",
        precision=precision,
        batch=batch,
        scalesim_layers=[{"line": row.line, **row.raw} for row in rows],
    )
    # SCALE-Sim v3's trailing N:M column: the layer's weight sparsity (1:1 or absent = dense)
    patterns = {row.name: parse_pattern(row.raw[SPARSITY_COLUMN]) for row in rows if SPARSITY_COLUMN in row.raw}
    return with_sparsity(builder.build(), patterns)


def _read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise GraphError(f"{path}: no such SCALE-Sim topology file")
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise GraphError(f"{path}: cannot read the SCALE-Sim topology ({err})") from None


def _cells(line: str) -> list[str]:
    """Split a row the way SCALE-Sim does, tolerating a missing trailing comma."""
    cells = [c.strip() for c in line.split(",")]
    while cells and cells[-1] == "":
        cells.pop()
    return cells


def _columns(path: Path, header: str) -> tuple[str, ...]:
    cells = [c.lower() for c in _cells(header)]
    if cells and cells[-1] == SPARSITY_COLUMN.lower():
        cells.pop()
    for columns in (CONV_COLUMNS, GEMM_COLUMNS):
        if cells == [c.lower() for c in columns]:
            return columns
    raise GraphError(
        f"{path}:1: header {header.strip()!r} is not a SCALE-Sim topology header; expected "
        f"'{', '.join(CONV_COLUMNS)},' (conv layers) or '{', '.join(GEMM_COLUMNS)},' (GEMM layers)"
    )


def _parse_rows(path: Path, lines: list[str], columns: tuple[str, ...]) -> list[_Row]:
    rows = []
    for line_number, line in enumerate(lines[1:], start=2):
        cells = _cells(line)
        if not cells:
            continue
        where = f"{path}:{line_number}"
        if len(cells) < len(columns):
            missing = columns[len(cells)]
            raise GraphError(
                f"{where}: the row has {len(cells)} of {len(columns)} columns; column {len(cells) + 1} "
                f"({missing!r}) is missing",
                node=cells[0] or None,
            )
        if len(cells) > len(columns) + 1:
            raise GraphError(
                f"{where}: the row has {len(cells)} columns; a SCALE-Sim topology row has {len(columns)} "
                f"and an optional {SPARSITY_COLUMN!r} column (N:M)",
                node=cells[0] or None,
            )
        name = cells[0]
        if not name:
            raise GraphError(f"{where}: column 1 ({columns[0]!r}) is empty; every layer needs a name")
        values: dict[str, int] = {}
        for index, column in enumerate(columns[1:], start=1):
            values[column] = _positive_int(where, index, column, cells[index], name)
        raw = dict(zip(columns, cells))
        if len(cells) > len(columns):
            raw[SPARSITY_COLUMN] = _sparsity(where, len(columns), cells[-1], name)
        rows.append(_Row(line_number, name, values, raw))
    return rows


def _positive_int(where: str, index: int, column: str, text: str, layer: str) -> int:
    try:
        value = int(text)  # SCALE-Sim itself calls int() on every cell
    except ValueError:
        value = 0
    if value < 1:
        raise GraphError(
            f"{where}: column {index + 1} ({column!r}) of layer {layer!r} is {text!r}; it must be a positive integer",
            node=layer,
        )
    return value


def _sparsity(where: str, index: int, text: str, layer: str) -> str:
    parts = text.split(":")
    if len(parts) != 2 or not all(p.strip().isdigit() and int(p) > 0 for p in parts) or int(parts[0]) > int(parts[1]):
        raise GraphError(
            f"{where}: column {index + 1} ({SPARSITY_COLUMN!r}) of layer {layer!r} is {text!r}; "
            "it must be a ratio N:M with 0 < N <= M",
            node=layer,
        )
    return text


def _ifmap_name(builder: GraphBuilder, layer: str) -> str:
    name = f"{layer}:ifmap"
    suffix = 1
    while name in builder.tensors:
        name = f"{layer}:ifmap_{suffix}"
        suffix += 1
    return name


def _build_conv(builder: GraphBuilder, path: Path, rows: list[_Row], batch: int) -> None:
    previous: str | None = None
    for row in rows:
        v = row.values
        height, width = v["IFMAP Height"], v["IFMAP Width"]
        filter_h, filter_w = v["Filter Height"], v["Filter Width"]
        channels, filters, stride = v["Channels"], v["Num Filter"], v["Strides"]
        for column, filter_size, input_size in (("Filter Height", filter_h, height), ("Filter Width", filter_w, width)):
            if filter_size > input_size:
                index = CONV_COLUMNS.index(column) + 1
                raise GraphError(
                    f"{path}:{row.line}: column {index} ({column!r}) of layer {row.name!r} is {filter_size}, larger "
                    f"than the IFMAP ({input_size}); SCALE-Sim does not pad, so a filter must fit inside the IFMAP",
                    node=row.name,
                )
        out_h = math.ceil((height - filter_h + stride) / stride)
        out_w = math.ceil((width - filter_w + stride) / stride)
        pad_bottom = (out_h - 1) * stride + filter_h - height
        pad_right = (out_w - 1) * stride + filter_w - width
        depthwise = "DP" in row.name  # SCALE-Sim's own (case-sensitive) depthwise marker
        groups = channels if depthwise else 1
        out_channels = channels * filters if depthwise else filters
        in_shape = (batch, channels, height, width)
        if previous is not None and builder.shape(previous) == in_shape:
            x = previous
        else:
            x = builder.input(_ifmap_name(builder, row.name), in_shape)
        previous = builder.conv(
            x,
            out_channels,
            (filter_h, filter_w),
            stride=stride,
            pad=(0, 0, pad_bottom, pad_right),
            groups=groups,
            name=row.name,
        )


def _build_gemm(builder: GraphBuilder, rows: list[_Row], batch: int) -> None:
    previous: str | None = None
    for row in rows:
        m, n, k = row.values["M"], row.values["N"], row.values["K"]
        in_shape = (batch, m, k)
        if previous is not None and builder.shape(previous) == in_shape:
            x = previous
        else:
            x = builder.input(_ifmap_name(builder, row.name), in_shape)
        previous = builder.linear(x, n, name=row.name, bias=False)
