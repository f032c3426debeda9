"""The graph IR: one DAG of operators that every importer and zoo model produces.

Each op carries its loop nest (``dims``), the tensors it reads and writes, and its
MAC/FLOP counts, so mappers and hardware models never need to know where the
graph came from. This module imports nothing else of the project: it is the
bottom of the pipeline (spec -> graph -> arch -> mapping -> metrics).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

PRECISION_BYTES: dict[str, int] = {
    "int4": 1,  # stored one per byte; packing is a hardware-model concern
    "int8": 1,
    "fp8": 1,
    "int16": 2,
    "fp16": 2,
    "bf16": 2,
    "int32": 4,
    "fp32": 4,
}
PRECISION_BITS: dict[str, int] = {
    "int4": 4,
    "int8": 8,
    "fp8": 8,
    "int16": 16,
    "fp16": 16,
    "bf16": 16,
    "int32": 32,
    "fp32": 32,
}


class GraphError(ValueError):
    """A graph is malformed or an operator is not supported; ``node`` names the culprit."""

    def __init__(self, message: str, node: str | None = None):
        super().__init__(message)
        self.node = node


class OpKind(str, Enum):
    CONV = "conv"  # dims N,K,C,H,W,P,Q,R,S,G (C and K total channels, G groups)
    MATMUL = "matmul"  # dims B,M,N,K: out[B,M,N] = sum_K a[B,M,K] * b[B,K,N]
    ELEMENTWISE = "elementwise"  # dims N (number of output elements), attrs fn, arity
    POOL = "pool"  # dims N,C,H,W,P,Q,R,S, attrs mode (max|avg), stride
    SOFTMAX = "softmax"  # dims R (rows), L (row length)
    LAYERNORM = "layernorm"  # dims R (rows), L (normalised length)
    FFT = "fft"  # dims B (independent transforms), L (length); attrs inverse
    SCAN = "scan"  # dims B, L (sequence), D (channels), S (state size): selective scan

    def __str__(self) -> str:  # pragma: no cover - cosmetic
        return self.value


# FLOPs per output element for the non-MAC ops (exp counted as 1, as ZigZag/LLMCompass do).
_ELEMENTWISE_FLOPS = {
    "relu": 1,
    "relu6": 2,
    "clip": 2,
    "add": 1,
    "sub": 1,
    "mul": 1,
    "div": 1,
    "sigmoid": 4,
    "silu": 5,
    "swish": 5,
    "gelu": 8,
    "tanh": 4,
    "exp": 1,
    "softplus": 3,
    "identity": 0,
    "batchnorm": 2,
}


@dataclass(frozen=True)
class Tensor:
    """A named tensor. ``kind`` says where it comes from: a graph input, a weight, an
    intermediate activation or a graph output."""

    name: str
    shape: tuple[int, ...]
    elem_bytes: int = 1
    kind: str = "activation"  # input | weight | activation | output

    @property
    def numel(self) -> int:
        return math.prod(self.shape) if self.shape else 1

    @property
    def nbytes(self) -> int:
        return self.numel * self.elem_bytes


@dataclass(frozen=True)
class OpSparsity:
    """How sparse an op's operands are (``Op.attrs["sparsity"]``; absent = dense).

    ``n:m`` is a structured pattern on the weights (at most n non-zeros in every m consecutive weights
    along the reduction, as 2:4 tensor cores and SCALE-Sim v3 take it; 1:1 = not structured);
    ``weight_density`` the fraction of non-zero weights (n/m for a pattern, any value for unstructured
    sparsity); ``act_density`` that of the input activations (ReLU zeros).
    """

    n: int = 1
    m: int = 1
    weight_density: float = 1.0
    act_density: float = 1.0

    @property
    def structured(self) -> bool:
        return self.m > 1 and self.n < self.m

    @property
    def dense(self) -> bool:
        return not self.structured and self.weight_density >= 1.0 and self.act_density >= 1.0

    @property
    def label(self) -> str:
        """``"2:4"``, ``"d=0.30"`` (unstructured) or ``"dense"``."""
        if self.structured:
            return f"{self.n}:{self.m}"
        return "dense" if self.weight_density >= 1.0 else f"d={self.weight_density:.2f}"


@dataclass(frozen=True)
class Op:
    """One operator: its loop nest (``dims``), tensors and work.

    ``inputs`` are activation tensor names (in operand order), ``weights`` the
    parameter tensors, ``outputs`` the produced tensors. ``attrs`` holds strides,
    padding, the elementwise function and similar; it is never needed to count work.
    """

    name: str
    kind: OpKind
    dims: Mapping[str, int]
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    weights: tuple[str, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def precision_label(self) -> str | None:
        """The precision a quantized import records for this op ('int8', 'int8 (weights int4)'), else None."""
        precision = self.attrs.get("precision")
        if not precision:
            return None
        weights = self.attrs.get("weight_precision")
        return precision + (f" (weights {weights})" if weights and weights != precision else "")

    @property
    def macs(self) -> int:
        d = self.dims
        if self.kind is OpKind.CONV:
            return d["N"] * d["K"] * d["P"] * d["Q"] * (d["C"] // d.get("G", 1)) * d["R"] * d["S"]
        if self.kind is OpKind.MATMUL:
            return d["B"] * d["M"] * d["N"] * d["K"]
        return 0

    @property
    def flops(self) -> int:
        """Arithmetic operations (a MAC counts 2)."""
        d = self.dims
        k = self.kind
        if k in (OpKind.CONV, OpKind.MATMUL):
            return 2 * self.macs
        if k is OpKind.ELEMENTWISE:
            return d["N"] * _ELEMENTWISE_FLOPS.get(str(self.attrs.get("fn", "add")), 1)
        if k is OpKind.POOL:
            return d["N"] * d["C"] * d["P"] * d["Q"] * d["R"] * d["S"]
        if k is OpKind.SOFTMAX:
            return 5 * d["R"] * d["L"]  # max, sub, exp, sum, div
        if k is OpKind.LAYERNORM:
            return 8 * d["R"] * d["L"]  # mean, var, normalise, scale, shift
        if k is OpKind.FFT:
            return int(5 * d["B"] * d["L"] * max(1.0, math.log2(d["L"])))  # radix-2 estimate
        if k is OpKind.SCAN:
            # h = exp(dt*A) * h + dt*B*x ; y = C.h  -> about 9 flops per (b,l,d,s)
            return 9 * d["B"] * d["L"] * d["D"] * d["S"]
        raise GraphError(f"unknown op kind {k!r}", node=self.name)

    @property
    def sparsity(self) -> OpSparsity:
        """The op's operand sparsity (dense unless a workload's ``sparsity`` or an importer set it)."""
        return self.attrs.get("sparsity") or DENSE

    def shape_key(self) -> tuple:
        """Identity of the work, independent of names: equal keys cost the same on any arch."""
        attrs = tuple(sorted((k, _freeze(v)) for k, v in self.attrs.items() if k != "source"))
        return (self.kind.value, tuple(sorted(self.dims.items())), attrs)


DENSE = OpSparsity()


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


@dataclass
class Graph:
    """A DAG of ops in a topological order, with every tensor it names."""

    name: str
    ops: list[Op]
    tensors: dict[str, Tensor]
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    # -- structure ---------------------------------------------------------
    def validate(self) -> None:
        seen_ops: set[str] = set()
        produced: set[str] = {n for n, t in self.tensors.items() if t.kind in ("input", "weight")}
        for op in self.ops:
            if op.name in seen_ops:
                raise GraphError(f"duplicate op name {op.name!r}", node=op.name)
            seen_ops.add(op.name)
            for t in (*op.inputs, *op.weights, *op.outputs):
                if t not in self.tensors:
                    raise GraphError(f"op {op.name!r} names unknown tensor {t!r}", node=op.name)
            for t in op.inputs:
                if t not in produced:
                    raise GraphError(
                        f"op {op.name!r} reads {t!r} before any op produces it (ops must be in topological order)",
                        node=op.name,
                    )
            produced.update(op.outputs)

    @property
    def batch(self) -> int:
        """The inferences one evaluation of the graph runs: its workload batch (1 where it has none)."""
        return int(self.meta.get("batch", 1) or 1)

    def op(self, name: str) -> Op:
        for o in self.ops:
            if o.name == name:
                return o
        raise KeyError(name)

    def producer(self) -> dict[str, str]:
        """tensor name -> name of the op that writes it."""
        return {t: op.name for op in self.ops for t in op.outputs}

    def consumers(self) -> dict[str, list[str]]:
        """tensor name -> names of the ops that read it (in op order)."""
        out: dict[str, list[str]] = {}
        for op in self.ops:
            for t in (*op.inputs, *op.weights):
                out.setdefault(t, []).append(op.name)
        return out

    def read_numel(self, op: Op, tensor: str) -> int:
        """Elements ``op`` reads of ``tensor`` (DRAM read traffic, not storage): a weight read in part,
        as an embedding look-up reads only the rows it selects, scales by ``attrs['weight_read_fraction']``;
        every other tensor, and a weight without that attr, is read whole (exactly ``Tensor.numel``)."""
        t = self.tensors[tensor]
        fraction = op.attrs.get("weight_read_fraction")
        if fraction is None or t.kind != "weight":
            return t.numel
        return round(t.numel * float(fraction))

    def read_nbytes(self, op: Op, tensor: str) -> int:
        """Bytes ``op`` reads of ``tensor``: ``read_numel`` at the tensor's element size."""
        return self.read_numel(op, tensor) * self.tensors[tensor].elem_bytes

    def edges(self) -> list[tuple[str, str, str]]:
        """(producer op, consumer op, tensor) for every activation edge."""
        prod = self.producer()
        return [(prod[t], op.name, t) for op in self.ops for t in op.inputs if t in prod]

    # -- totals ------------------------------------------------------------
    @property
    def macs(self) -> int:
        return sum(op.macs for op in self.ops)

    @property
    def flops(self) -> int:
        return sum(op.flops for op in self.ops)

    @property
    def weight_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors.values() if t.kind == "weight")

    def summary(self) -> str:
        kinds: dict[str, int] = {}
        for op in self.ops:
            kinds[op.kind.value] = kinds.get(op.kind.value, 0) + 1
        parts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        return (
            f"{self.name}: {len(self.ops)} ops ({parts}), {human_count(self.macs)}MAC, "
            f"{human_count(self.weight_bytes, 1024)}B weights"
        )

    def with_elem_bytes(self, elem_bytes: int) -> Graph:
        """The same graph with every tensor stored at ``elem_bytes`` per element."""
        tensors = {n: replace(t, elem_bytes=elem_bytes) for n, t in self.tensors.items()}
        return Graph(self.name, list(self.ops), tensors, dict(self.meta))


def human_count(value: float, base: int = 1000) -> str:
    """4.09 G, 569 M, 4.26 k: human-sized counts for summaries (base 1024 gives Ki/Mi/Gi)."""
    units = ["", "k", "M", "G", "T"] if base == 1000 else ["", "Ki", "Mi", "Gi", "Ti"]
    i = 0
    while abs(value) >= base and i < len(units) - 1:
        value /= base
        i += 1
    return f"{value:.3g} {units[i]}"


def _conv_out(size: int, k: int, stride: int, pad_lo: int, pad_hi: int, dilation: int = 1) -> int:
    return (size + pad_lo + pad_hi - dilation * (k - 1) - 1) // stride + 1


class GraphBuilder:
    """Builds a Graph op by op while tracking shapes (activations are NCHW or [B, S, D]).

    Zoo models and importers both use it, so the two produce the same IR.
    Every method takes an input tensor name and returns its output tensor name.
    """

    def __init__(self, name: str, elem_bytes: int = 1):
        self.name = name
        self.elem_bytes = elem_bytes
        self.ops: list[Op] = []
        self.tensors: dict[str, Tensor] = {}
        self.meta: dict[str, Any] = {}
        self._counter: dict[str, int] = {}
        self._op_names: set[str] = set()  # names of self.ops (only add_op appends): a 1,000-node import stays linear

    # -- helpers -----------------------------------------------------------
    def _uniq(self, base: str) -> str:
        n = self._counter.get(base, 0)
        self._counter[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def _op_name(self, name: str | None, kind: str) -> str:
        if name is None:
            return self._uniq(kind)
        if name in self._op_names:
            return self._uniq(name)
        self._counter.setdefault(name, 1)
        return name

    def tensor(self, name: str, shape: Iterable[int], kind: str = "activation") -> str:
        shape = tuple(int(s) for s in shape)
        if any(s <= 0 for s in shape):
            raise GraphError(f"tensor {name!r} has a non-positive dimension {shape}", node=name)
        self.tensors[name] = Tensor(name, shape, self.elem_bytes, kind)
        return name

    def shape(self, t: str) -> tuple[int, ...]:
        return self.tensors[t].shape

    def input(self, name: str, shape: Iterable[int]) -> str:
        return self.tensor(name, shape, "input")

    def add_op(
        self,
        name: str | None,
        kind: OpKind,
        dims: Mapping[str, int],
        inputs: Iterable[str],
        out_shape: Iterable[int],
        weights: Mapping[str, Iterable[int]] | None = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> str:
        op_name = self._op_name(name, kind.value)
        self._op_names.add(op_name)
        out = self.tensor(f"{op_name}:out", out_shape)
        w_names = []
        for suffix, wshape in (weights or {}).items():
            w_names.append(self.tensor(f"{op_name}:{suffix}", wshape, "weight"))
        dims = {k: int(v) for k, v in dims.items()}
        for k, v in dims.items():
            if v <= 0:
                raise GraphError(f"op {op_name!r} has non-positive loop bound {k}={v}", node=op_name)
        self.ops.append(Op(op_name, kind, dims, tuple(inputs), (out,), tuple(w_names), dict(attrs or {})))
        return out

    # -- layers ------------------------------------------------------------
    def conv(
        self,
        x: str,
        out_channels: int,
        kernel: int | tuple[int, int],
        stride: int | tuple[int, int] = 1,
        pad: int | tuple[int, int] | tuple[int, int, int, int] = 0,
        groups: int = 1,
        name: str | None = None,
        bias: bool = False,
        dilation: int = 1,
    ) -> str:
        n, c, h, w = self.shape(x)
        r, s = (kernel, kernel) if isinstance(kernel, int) else kernel
        sh, sw = (stride, stride) if isinstance(stride, int) else stride
        if isinstance(pad, int):
            pt = pb = pl = pr = pad
        elif len(pad) == 2:
            pt = pb = pad[0]
            pl = pr = pad[1]
        else:
            pt, pl, pb, pr = pad
        if c % groups or out_channels % groups:
            raise GraphError(f"conv {name}: channels {c}->{out_channels} not divisible by groups {groups}", node=name)
        p = _conv_out(h, r, sh, pt, pb, dilation)
        q = _conv_out(w, s, sw, pl, pr, dilation)
        weights = {"weight": (out_channels, c // groups, r, s)}
        if bias:
            weights["bias"] = (out_channels,)
        return self.add_op(
            name,
            OpKind.CONV,
            dict(N=n, K=out_channels, C=c, H=h, W=w, P=p, Q=q, R=r, S=s, G=groups),
            [x],
            (n, out_channels, p, q),
            weights,
            dict(stride=(sh, sw), pad=(pt, pl, pb, pr), dilation=dilation),
        )

    def linear(self, x: str, out_features: int, name: str | None = None, bias: bool = True) -> str:
        """Dense layer on the last axis: [..., K] @ [K, N]."""
        shape = self.shape(x)
        k = shape[-1]
        m = math.prod(shape[:-1])
        weights = {"weight": (k, out_features)}
        if bias:
            weights["bias"] = (out_features,)
        return self.add_op(
            name, OpKind.MATMUL, dict(B=1, M=m, N=out_features, K=k), [x], (*shape[:-1], out_features), weights
        )

    def matmul(self, a: str, b: str, name: str | None = None, transpose_b: bool = False) -> str:
        """Activation x activation batched matmul: a[..., M, K] @ b[..., K, N] (or b^T)."""
        sa, sb = self.shape(a), self.shape(b)
        m, k = sa[-2], sa[-1]
        n = sb[-2] if transpose_b else sb[-1]
        kb = sb[-1] if transpose_b else sb[-2]
        if kb != k:
            raise GraphError(f"matmul {name}: inner dimensions {k} and {kb} differ", node=name)
        batch = math.prod(sa[:-2]) if len(sa) > 2 else 1
        return self.add_op(
            name,
            OpKind.MATMUL,
            dict(B=batch, M=m, N=n, K=k),
            [a, b],
            (*sa[:-2], m, n),
            None,
            dict(transpose_b=transpose_b),
        )

    def elementwise(self, fn: str, *xs: str, name: str | None = None) -> str:
        shape = self.shape(xs[0])
        numel = math.prod(shape)
        return self.add_op(name, OpKind.ELEMENTWISE, dict(N=numel), list(xs), shape, None, dict(fn=fn, arity=len(xs)))

    def relu(self, x: str, name: str | None = None) -> str:
        return self.elementwise("relu", x, name=name)

    def add(self, a: str, b: str, name: str | None = None) -> str:
        return self.elementwise("add", a, b, name=name)

    def pool(
        self,
        x: str,
        kernel: int,
        stride: int,
        pad: int = 0,
        mode: str = "max",
        name: str | None = None,
    ) -> str:
        n, c, h, w = self.shape(x)
        p = _conv_out(h, kernel, stride, pad, pad)
        q = _conv_out(w, kernel, stride, pad, pad)
        return self.add_op(
            name,
            OpKind.POOL,
            dict(N=n, C=c, H=h, W=w, P=p, Q=q, R=kernel, S=kernel),
            [x],
            (n, c, p, q),
            None,
            dict(mode=mode, stride=(stride, stride), pad=(pad, pad, pad, pad)),
        )

    def global_pool(self, x: str, mode: str = "avg", name: str | None = None) -> str:
        n, c, h, w = self.shape(x)
        return self.add_op(
            name,
            OpKind.POOL,
            dict(N=n, C=c, H=h, W=w, P=1, Q=1, R=h, S=w),
            [x],
            (n, c, 1, 1),
            None,
            dict(mode=mode, stride=(h, w), pad=(0, 0, 0, 0), is_global=True),
        )

    def reshape(self, x: str, shape: Iterable[int]) -> str:
        """A free view: renames the tensor with a new shape, no op is emitted."""
        shape = tuple(int(s) for s in shape)
        if math.prod(shape) != self.tensors[x].numel:
            raise GraphError(f"reshape of {x!r} from {self.shape(x)} to {shape} changes the element count", node=x)
        t = self.tensors[x]
        self.tensors[x] = replace(t, shape=shape)
        return x

    def softmax(self, x: str, name: str | None = None) -> str:
        shape = self.shape(x)
        return self.add_op(name, OpKind.SOFTMAX, dict(R=math.prod(shape[:-1]), L=shape[-1]), [x], shape)

    def layernorm(self, x: str, name: str | None = None) -> str:
        shape = self.shape(x)
        d = shape[-1]
        return self.add_op(
            name,
            OpKind.LAYERNORM,
            dict(R=math.prod(shape[:-1]), L=d),
            [x],
            shape,
            {"gamma": (d,), "beta": (d,)},
        )

    def fft(self, x: str, length: int, inverse: bool = False, name: str | None = None) -> str:
        """FFT along a length-``length`` axis; every other axis is a batch of transforms."""
        shape = self.shape(x)
        numel = math.prod(shape)
        if numel % length:
            raise GraphError(f"fft {name}: length {length} does not divide tensor of {numel} elements", node=name)
        return self.add_op(name, OpKind.FFT, dict(B=numel // length, L=length), [x], shape, None, dict(inverse=inverse))

    def scan(self, x: str, *extra: str, state: int, name: str | None = None) -> str:
        """Selective scan over x[B, L, D] with a state of size ``state`` per channel."""
        b, seq, d = self.shape(x)
        return self.add_op(
            name, OpKind.SCAN, dict(B=b, L=seq, D=d, S=state), [x, *extra], (b, seq, d), {"A": (d, state)}
        )

    def output(self, t: str) -> str:
        self.tensors[t] = replace(self.tensors[t], kind="output")
        return t

    def build(self) -> Graph:
        produced = {t for op in self.ops for t in op.outputs}
        consumed = {t for op in self.ops for t in op.inputs}
        tensors = dict(self.tensors)
        for t in produced - consumed:
            tensors[t] = replace(tensors[t], kind="output")
        return Graph(self.name, list(self.ops), tensors, dict(self.meta))


def merge_graphs(parts: Sequence[tuple[str, Graph]], rates: Mapping[str, float] | None = None) -> Graph:
    """Several models as one graph (a multi-DNN workload): every op and tensor name is prefixed with
    ``<model>/``, every op records its model in ``attrs["model"]``, ``meta["model_rates"]`` holds each
    model's rate (inferences/s; 1 when not given) and ``meta["models"]`` their order."""
    ops: list[Op] = []
    tensors: dict[str, Tensor] = {}
    for label, g in parts:

        def name(t: str, label: str = label) -> str:
            return f"{label}/{t}"

        tensors.update({name(t): replace(tensor, name=name(t)) for t, tensor in g.tensors.items()})
        for op in g.ops:
            ops.append(
                replace(
                    op,
                    name=name(op.name),
                    inputs=tuple(map(name, op.inputs)),
                    outputs=tuple(map(name, op.outputs)),
                    weights=tuple(map(name, op.weights)),
                    attrs={**op.attrs, "model": label},
                )
            )
    labels = [label for label, _ in parts]
    first = parts[0][1].meta if parts else {}
    meta = {
        "model": "+".join(labels),
        "models": labels,
        "model_rates": {label: float((rates or {}).get(label, 1.0)) for label in labels},
        "batch": first.get("batch", 1),
        "precision": first.get("precision"),
    }
    return Graph("+".join(g.name for _, g in parts), ops, tensors, meta)
