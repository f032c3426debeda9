"""Calibration of the GPU model on measured kernels: fit one GPU's tuning constants, report the error.

The data is plain rows (``Measurement``: GPU, precision, op, shape, latency, how it was taken), read from the
CSV ``tools/gpu_measure.py`` writes (``PLAIN_COLUMNS``) or from LLMCompass's "real hardware" files
(``read_llmcompass``). The model is the project's own (``hwmodels.gpu.cost``): a GEMM is timed with the best
threadblock tile (wave quantisation over the SMs, shared-memory tile efficiency, pipeline fill for small K),
a conv with a filter window as its implicit GEMM at its own efficiency plus its own fixed cost (a 1x1 conv is
a plain GEMM), softmax / layernorm / GELU as memory-bound kernels; a measured eager call adds the host's
per-call cost, partly overlapped with the device work (rows taken otherwise, e.g. CUDA-graph replays, are
device time only). :func:`fit` finds, by bounded robust least squares on log errors (scipy; soft-L1, so one
kernel the model does not describe cannot drag the rest), the constants of ``GpuTuning`` the rows can
constrain (``free_parameters``: a host cost only from a host-bound eager row of its kind, the device's fixed
cost and the host/device overlap only when some rows are device time alone, conv constants only from conv
rows, ...) and keeps the others at stated values (a GEMM host cost no row shows follows the softmax one by a
measured ratio, ``host_ties``); :func:`cross_validate` reports k-fold error per op kind and
:func:`family_cross_validate` the error on whole shape families held out of the fit.
No learned residual: a parametric model transfers to shapes it never saw.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from hwmodels.catalogs.gpu import assumption
from hwmodels.catalogs.gpu_tuning import GpuTuning
from hwmodels.gpu.calibrate_rows import ELEMENTWISE_FLOPS, Measurement, operand_bytes
from hwmodels.gpu.calibrate_rows import OP_KINDS as OP_KINDS
from hwmodels.gpu.calibrate_rows import PLAIN_COLUMNS as PLAIN_COLUMNS
from hwmodels.gpu.calibrate_rows import read_llmcompass as read_llmcompass
from hwmodels.gpu.calibrate_rows import read_measurements as read_measurements
from hwmodels.gpu.calibrate_rows import write_measurements as write_measurements
from hwmodels.gpu.cost import Gemm, Tile, gemm_cost, memory_kernel_cost, misaligned_tiles
from mappers.gpu import best_tile
from templates.gpu import GpuArch

KERNEL_OF = {"GEMM": "gemm", "softmax": "softmax", "layernorm": "layernorm", "GELU": "elementwise"}
LONG_ROW_CHOICES = (4096.0, 8192.0, 16384.0, 32768.0, 65536.0)  # bytes; the fit picks the best
# robust loss on log errors: quadratic up to ~20 %, then linear, so one kernel the model does not describe
# (a misaligned GEMM, a 3-channel conv) cannot drag every other row's constants
LOSS, LOSS_SCALE = "soft_l1", 0.2
# An eager row shows its kind's host cost only when its device time (starting constants) is at most this share
# of what was measured; where every row of a kind is device-bound its host cost cannot be told from the device's.
HOST_BOUND_SHARE = 0.5
# Such a kind's host cost is then set from the reference kind's, fitted on the same rows (same host, framework
# and timing method), times a measured ratio (catalog ``gemm_host_ratio``).
HOST_REFERENCE = "softmax.host_us"
HOST_RATIOS = {"gemm.host_us": "gemm_host_ratio"}


# ---------------------------------------------------------------------------------------------------
# The model of one measured call
# ---------------------------------------------------------------------------------------------------
def as_measured(arch: GpuArch, m: Measurement) -> GpuArch:
    """``arch`` run the way the row was taken (eager calls pay the host's per-call cost)."""
    execution = "eager" if m.eager else "graph"
    return arch if arch.execution == execution else replace(arch, execution=execution)


def _gemm(m: Measurement, eb: int) -> Gemm:
    """The GEMM of a row. A conv whose im2col matrix (M x K) is larger than its input has a filter window
    (R*S > 1, what ``mappers.gpu`` marks a conv); a 1x1 conv reads its input as the A matrix: a plain GEMM."""
    a_im2col = float(m.M * m.K * eb * m.count)
    windowed = m.op == "conv" and operand_bytes(m, eb)[0] < a_im2col
    return Gemm(m.M, m.N, m.K, m.count, conv=windowed)


@dataclass(frozen=True)
class RowEffects:
    """How the measurements were taken, as the model of a row prices it (all off: the model before issue #29).

    ``warm_l2``: every row repeats its call on the same tensors (warm-up calls then the timed repeats, or a CUDA
    graph of 20 calls), so a GEMM whose operands all fit the L2 reads them from L2, not DRAM (``warm_in_l2``),
    at ``warm_l2_ratio`` x the DRAM bandwidth.
    ``alignment``: a GEMM with a row stride that is not a multiple of 16 bytes runs at ``misaligned_efficiency``
    (off: 1, every GEMM priced as aligned)."""

    warm_l2: bool = True
    alignment: bool = True


EFFECTS = RowEffects()
BEFORE_EFFECTS = RowEffects(warm_l2=False, alignment=False)


def warm_in_l2(m: Measurement, arch: GpuArch) -> bool:
    """A GEMM row whose operands (A, B and C) together fit the GPU's L2: repeated calls keep them there."""
    return m.kind == "GEMM" and sum(operand_bytes(m, arch.elem_bytes)) <= arch.l2_mib * 2**20


def warm_arch(m: Measurement, arch: GpuArch, warm_l2: bool = True) -> GpuArch:
    """``arch`` as the row runs: timed eager or as a graph, and for a GEMM warm in L2 (with ``warm_l2``) its
    operand stream at ``warm_l2_ratio`` x DRAM bandwidth (0: at the DRAM share, as a cold call)."""
    arch = as_measured(arch, m)
    if warm_l2 and arch.tuning.warm_l2_ratio > 0.0 and warm_in_l2(m, arch):
        return replace(arch, bandwidth_fraction=arch.tuning.warm_l2_ratio)
    return arch


def predict_seconds(m: Measurement, arch: GpuArch, tile: Tile | None = None, warm_l2: bool = True) -> float:
    """Model time of one measured call: operands streamed from DRAM, or from L2 for a GEMM that fits it when
    ``warm_l2`` (``RowEffects``, ``warm_arch``); GEMMs with ``tile`` or else the best tile."""
    arch = warm_arch(m, arch, warm_l2)
    eb = arch.elem_bytes
    if m.kind == "GEMM":
        a, b, c = operand_bytes(m, eb)
        if tile is None:
            return best_tile(_gemm(m, eb), arch, a, b, c, 0.0)[1]
        return gemm_cost(_gemm(m, eb), tile, arch, a_dram_bytes=a, b_dram_bytes=b, c_dram_bytes=c).seconds
    elements = float(m.M * m.N * m.count)
    return memory_kernel_cost(
        arch,
        flops=ELEMENTWISE_FLOPS.get(m.op, 1.0) * elements,
        dram_read_bytes=elements * eb,
        dram_write_bytes=elements * eb,
        l2_bytes=0.0,
        kind=KERNEL_OF[m.kind],
        row_bytes=float(m.N * eb) if m.op in ("softmax", "layernorm") else 0.0,
    ).seconds


def mape_by_kind(rows: Sequence[Measurement], predicted: Sequence[float]) -> dict[str, float]:
    """Mean absolute percentage error per op kind (and 'all')."""
    errors: dict[str, list[float]] = {}
    for m, p in zip(rows, predicted):
        errors.setdefault(m.kind, []).append(abs(p - m.seconds) / m.seconds * 100.0)
    out = {kind: float(np.mean(values)) for kind, values in errors.items()}
    out["all"] = float(np.mean([e for values in errors.values() for e in values])) if errors else math.nan
    return out


# ---------------------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------------------
# (name, lower, upper): the fitted vector; kernel constants are "<kind>.<field>"
PARAMETERS: tuple[tuple[str, float, float], ...] = (
    ("compute_fraction", 0.3, 1.0),
    ("bandwidth_fraction", 0.2, 1.0),
    # prior: a kernel's device-side fixed cost (launch gap in a CUDA graph, fill and tail) is a few us; eager
    # timings alone cannot tell it from the host's cost, so it is bounded here and the host takes the rest
    ("launch_us", 0.0, 5.0),
    ("overlap_exponent", 1.0, 12.0),
    ("conv_efficiency", 0.05, 1.0),
    ("conv_fixed_us", 0.0, 50.0),
    # re-reads of operands warm in L2 over DRAM bandwidth: free only where a warm GEMM is bound by them
    ("warm_l2_ratio", 0.2, 10.0),
    # a misaligned GEMM's share of the main-loop rate: free only where such a GEMM's device time shows
    ("misaligned_efficiency", 0.02, 1.0),
    ("gemm.host_us", 0.0, 500.0),
    ("softmax.bandwidth_fraction", 0.1, 1.0),
    ("softmax.host_us", 0.0, 500.0),
    ("softmax.long_row_passes", 0.0, 4.0),
    ("layernorm.bandwidth_fraction", 0.1, 1.0),
    ("layernorm.host_us", 0.0, 500.0),
    ("layernorm.long_row_passes", 0.0, 4.0),
    ("elementwise.bandwidth_fraction", 0.1, 1.0),
    ("elementwise.host_us", 0.0, 500.0),
)


def tuning_vector(tuning: GpuTuning) -> np.ndarray:
    values = []
    for name, _, _ in PARAMETERS:
        if "." in name:
            kind, attr = name.split(".")
            values.append(getattr(tuning.kernel(kind), attr))
        else:
            values.append(getattr(tuning, name))
    return np.array(values, dtype=float)


def tuning_from_vector(base: GpuTuning, x: np.ndarray, long_row_bytes: float | None = None) -> GpuTuning:
    scalars = {name: float(v) for (name, _, _), v in zip(PARAMETERS, x) if "." not in name}
    per_kind: dict[str, dict[str, float]] = {}
    for (name, _, _), v in zip(PARAMETERS, x):
        if "." in name:
            kind, attr = name.split(".")
            per_kind.setdefault(kind, {})[attr] = float(v)
    per_kind.setdefault("gemm", {})["bandwidth_fraction"] = scalars["bandwidth_fraction"]  # one GEMM fraction
    kernels = tuple(replace(k, **per_kind.get(k.kind, {})) for k in base.kernels)
    if long_row_bytes is not None:
        scalars["long_row_bytes"] = float(long_row_bytes)
    return replace(base, kernels=kernels, **scalars)


def with_tuning(arch: GpuArch, tuning: GpuTuning) -> GpuArch:
    """``arch`` with ``tuning`` (and the three constants GpuArch also carries) in place."""
    return replace(
        arch,
        tuning=tuning,
        compute_fraction=tuning.compute_fraction,
        bandwidth_fraction=tuning.bandwidth_fraction,
        launch_us=tuning.launch_us,
    )


@dataclass
class Fit:
    """The fitted constants and what they explain."""

    tuning: GpuTuning
    fit_mape: dict[str, float]
    unidentified: list[str]  # constants no row constrained (kept at the value said in ``notes``)
    notes: list[str]


def _identified(jac: np.ndarray, names: Sequence[str]) -> list[str]:
    """Names of the parameters whose Jacobian column is (numerically) zero: no row constrains them."""
    norms = np.linalg.norm(jac, axis=0)
    return [n for n, v in zip(names, norms) if v < 1e-6]


def device_seconds(m: Measurement, arch: GpuArch, warm_l2: bool = True) -> float:
    """Model time of the row's kernel on the device alone (no host cost)."""
    return predict_seconds(replace(m, method="graph"), arch, warm_l2=warm_l2)


def device_visible(m: Measurement, arch: GpuArch, warm_l2: bool = True) -> bool:
    """A row whose measured time shows its device time: a CUDA-graph row, or an eager one whose device time
    (starting constants) is more than ``HOST_BOUND_SHARE`` of what was measured."""
    return not m.eager or device_seconds(m, arch, warm_l2) > HOST_BOUND_SHARE * m.seconds


def stream_bound_rows(rows: Sequence[Measurement], arch: GpuArch, effects: RowEffects) -> list[Measurement]:
    """Device-visible GEMM rows warm in L2 whose time is their operand stream (starting constants, best tile)."""
    out = []
    for m in rows:
        if not (effects.warm_l2 and warm_in_l2(m, arch) and device_visible(m, arch)):
            continue
        a, b, c = operand_bytes(m, arch.elem_bytes)
        cost = gemm_cost(
            _gemm(m, arch.elem_bytes),
            _tile_for(m, arch),
            warm_arch(m, arch),
            a_dram_bytes=a,
            b_dram_bytes=b,
            c_dram_bytes=c,
        )
        if cost.bound == "dram":
            out.append(m)
    return out


def misaligned_rows(rows: Sequence[Measurement], arch: GpuArch, effects: RowEffects) -> list[Measurement]:
    """Device-visible GEMM rows run as misaligned tensor-core tiles (``hwmodels.gpu.cost.misaligned_tiles``)."""
    if not effects.alignment:
        return []
    return [
        m
        for m in rows
        if m.kind == "GEMM"
        and misaligned_tiles(_gemm(m, arch.elem_bytes), arch)
        and device_visible(m, arch, effects.warm_l2)
    ]


def host_bound_kernels(rows: Sequence[Measurement], arch: GpuArch) -> set[str]:
    """Kernel kinds with an eager row whose device time is at most ``HOST_BOUND_SHARE`` of its measured time."""
    return {KERNEL_OF[m.kind] for m in rows if m.eager and device_seconds(m, arch) <= HOST_BOUND_SHARE * m.seconds}


def free_parameters(
    rows: Sequence[Measurement], arch: GpuArch, identify: bool = True, effects: RowEffects = EFFECTS
) -> list[int]:
    """Indices into ``PARAMETERS`` that ``rows`` can constrain. The others stay at their starting values:
    a kernel kind's constants only show in its rows, the conv constants only in conv rows. With ``identify``
    (the default), a host cost only in a host-bound eager row of its kind (``host_bound_kernels``), and the
    device's fixed cost and the overlap exponent only when some rows are device time alone (CUDA graphs):
    eager rows alone cannot tell them from the host's cost. (Left free, the solver moved them anyway: the
    A100's GEMM host cost drifted to 45 us on rows where 170 us of device time hides it.) The warm-L2 stream
    ratio only where a device-visible GEMM warm in L2 is bound by its operand stream (``stream_bound_rows``),
    the misaligned efficiency only where a device-visible misaligned GEMM shows it (``misaligned_rows``):
    elsewhere no row moves them and a free constant would drift."""
    eager_kernels = {KERNEL_OF[m.kind] for m in rows if m.eager}
    hosts = host_bound_kernels(rows, arch) if identify else eager_kernels
    device_only = any(not m.eager for m in rows) or not identify
    kernels = {KERNEL_OF[m.kind] for m in rows}
    out = []
    for i, (name, _, _) in enumerate(PARAMETERS):
        kind, _, attr = name.rpartition(".")
        if attr == "host_us":
            keep = kind in hosts
        elif name == "overlap_exponent":
            keep = bool(eager_kernels) and device_only
        elif name == "launch_us":
            keep = device_only
        elif name.startswith("conv_"):
            keep = any(_gemm(m, arch.elem_bytes).conv for m in rows)
        elif name == "warm_l2_ratio":
            keep = bool(stream_bound_rows(rows, arch, effects))
        elif name == "misaligned_efficiency":
            keep = bool(misaligned_rows(rows, arch, effects))
        elif kind:
            keep = kind in kernels
        else:
            keep = True
        if keep:
            out.append(i)
    return out


def host_ties(rows: Sequence[Measurement], free: Sequence[int]) -> dict[str, tuple[str, float]]:
    """Host costs set from the reference kind's (``HOST_RATIOS``): eager rows of the kind, none host-bound,
    and a fitted reference. Name -> (reference name, ratio)."""
    names = [PARAMETERS[i][0] for i in free]
    eager = {KERNEL_OF[m.kind] for m in rows if m.eager}
    if HOST_REFERENCE not in names:
        return {}
    return {
        name: (HOST_REFERENCE, assumption(ratio))
        for name, ratio in HOST_RATIOS.items()
        if name not in names and name.split(".")[0] in eager
    }


def _fit_once(
    rows: Sequence[Measurement],
    arch: GpuArch,
    long_row_bytes: float,
    free: Sequence[int],
    ties: dict[str, tuple[str, float]],
    warm_l2: bool = True,
) -> tuple[np.ndarray, float, np.ndarray]:
    """Least squares on log(model/measured) over the ``free`` constants (``ties`` follow their reference);
    returns the full vector, the mean absolute log error and the Jacobian (columns of ``free``)."""
    base = replace(arch.tuning, long_row_bytes=long_row_bytes)
    lower = np.array([PARAMETERS[i][1] for i in free])
    upper = np.array([PARAMETERS[i][2] for i in free])
    full = tuning_vector(base)
    x0 = np.clip(full[free], lower + 1e-9, upper - 1e-9)
    measured = np.array([m.seconds for m in rows])

    index = {name: i for i, (name, _, _) in enumerate(PARAMETERS)}

    def expand(x: np.ndarray) -> np.ndarray:
        out = full.copy()
        out[free] = x
        for name, (reference, ratio) in ties.items():
            out[index[name]] = ratio * out[index[reference]]
        return out

    result = None
    for _ in range(2):  # tiles chosen with the current constants, refitted once with the refreshed tiles
        candidate = with_tuning(arch, tuning_from_vector(base, expand(x0)))
        tiles = [_tile_for(m, candidate, warm_l2) if m.kind == "GEMM" else None for m in rows]

        def residuals(x: np.ndarray, tiles=tiles) -> np.ndarray:
            trial = with_tuning(arch, tuning_from_vector(base, expand(x)))
            predicted = np.array([predict_seconds(m, trial, t, warm_l2) for m, t in zip(rows, tiles)])
            return np.log(predicted / measured)

        result = least_squares(
            residuals, x0, bounds=(lower, upper), x_scale="jac", max_nfev=400, loss=LOSS, f_scale=LOSS_SCALE
        )
        x0 = result.x
    return expand(x0), float(np.mean(np.abs(result.fun))), result.jac


def _tile_for(m: Measurement, arch: GpuArch, warm_l2: bool = True) -> Tile:
    a, b, c = operand_bytes(m, arch.elem_bytes)
    return best_tile(_gemm(m, arch.elem_bytes), warm_arch(m, arch, warm_l2), a, b, c, 0.0)[0]


def fit(
    rows: Sequence[Measurement],
    arch: GpuArch,
    identify: bool = True,
    long_row_bytes: float | None = None,
    effects: RowEffects = EFFECTS,
) -> Fit:
    """Fit ``arch``'s tuning to ``rows`` (one GPU, one precision); the long-row threshold is picked from
    ``LONG_ROW_CHOICES`` by the same loss (or given). Constants no row constrains keep a stated fallback;
    ``identify=False`` is the earlier rule (every host cost of an eager kind, the launch cost and the overlap
    exponent always free), ``effects=BEFORE_EFFECTS`` the model before the L2 and alignment effects, both kept
    to compare with."""
    if len(rows) < 4:
        raise ValueError(f"calibration needs at least 4 measured calls, got {len(rows)}")
    kinds = {m.kind for m in rows}
    has_rows = any(m.op in ("softmax", "layernorm") for m in rows)
    choices = LONG_ROW_CHOICES if has_rows else (arch.tuning.long_row_bytes,)
    choices = choices if long_row_bytes is None else (long_row_bytes,)
    if not effects.alignment:
        arch = with_tuning(arch, replace(arch.tuning, misaligned_efficiency=1.0))
    if effects.warm_l2 and arch.tuning.warm_l2_ratio <= 0.0:  # start warm reads at the DRAM share
        arch = with_tuning(arch, replace(arch.tuning, warm_l2_ratio=arch.tuning.bandwidth_fraction))
    free = free_parameters(rows, arch, identify, effects)
    ties = host_ties(rows, free) if identify else {}
    notes = []
    overlap = [name for name, _, _ in PARAMETERS].index("overlap_exponent")
    if identify and overlap not in free and any(m.eager for m in rows):
        arch = with_tuning(arch, replace(arch.tuning, overlap_exponent=assumption("serial_overlap_exponent")))
        notes.append("overlap_exponent: no row timed both eager and as a CUDA graph; serial (p = 1)")
    fits = (_fit_once(rows, arch, lrb, free, ties, effects.warm_l2) + (lrb,) for lrb in choices)
    best = min(fits, key=lambda item: item[1])
    x, _, jac, long_row_bytes = best
    names = [p[0] for p in PARAMETERS]
    base = replace(arch.tuning, long_row_bytes=long_row_bytes)
    flat = _back_to_start(rows, arch, base, x, _identified(jac, [names[i] for i in free]), effects.warm_l2)
    tuning = tuning_from_vector(base, x)
    warm = [name for name, _, _ in PARAMETERS].index("warm_l2_ratio")
    if warm not in free:
        tuning = replace(tuning, warm_l2_ratio=0.0)
        if effects.warm_l2:
            notes.append("warm_l2_ratio: no warm row is bound by its operand stream; warm reads priced as DRAM (0)")
    fixed = [name for i, name in enumerate(names) if i not in free and name not in ties]
    unidentified = fixed + flat
    for name, (reference, ratio) in ties.items():
        notes.append(f"{name}: no host-bound row; {ratio:g} x {reference} (measured ratio, gemm_host_ratio)")
    hosts = {k.kind: k.host_us for k in tuning.kernels if f"{k.kind}.host_us" not in unidentified}
    kernel_kinds = {KERNEL_OF[k] for k in kinds}
    if "bandwidth_fraction" in unidentified and "elementwise" in kernel_kinds:
        streaming = tuning.kernel("elementwise").bandwidth_fraction
        tuning = _set_kernel(replace(tuning, bandwidth_fraction=streaming), "gemm", bandwidth_fraction=streaming)
        unidentified.remove("bandwidth_fraction")
        notes.append("bandwidth_fraction: no GEMM row streams from DRAM; set to the fitted elementwise (GELU) share")
    for kernel in tuning.kernels:
        if f"{kernel.kind}.host_us" in unidentified and hosts:
            floor = min(hosts.values())
            tuning = _set_kernel(tuning, kernel.kind, host_us=floor)
            notes.append(f"{kernel.kind}.host_us: no host-bound row; set to the smallest fitted per-call cost")
        if kernel.kind not in kernel_kinds and kernel.kind != "gemm":
            tuning = _set_kernel(tuning, kernel.kind, bandwidth_fraction=tuning.bandwidth_fraction)
            notes.append(f"{kernel.kind}.bandwidth_fraction: no rows; set to the GEMM bandwidth fraction")
    for name in unidentified:
        if any(note.startswith(f"{name}:") for note in notes):  # said already, with the value it took
            continue
        if not name.endswith(".host_us") or not hosts:
            notes.append(f"{name}: no row constrains it; kept at its starting value")
    for i in free:
        name, low, high = PARAMETERS[i]
        tolerance = 1e-6 * max(1.0, abs(x[i]))
        if name not in unidentified and x[i] - low <= tolerance:
            notes.append(f"{name}: at its lower bound {low:g}")
        elif name not in unidentified and high - x[i] <= tolerance:
            notes.append(f"{name}: at its upper bound {high:g} (the rows ask for more)")
    fitted = with_tuning(arch, tuning)
    predicted = [predict_seconds(m, fitted, warm_l2=effects.warm_l2) for m in rows]
    return Fit(tuning, mape_by_kind(rows, predicted), unidentified, notes)


def _log_error(rows: Sequence[Measurement], arch: GpuArch, base: GpuTuning, x: np.ndarray, warm_l2: bool) -> float:
    trial = with_tuning(arch, tuning_from_vector(base, x))
    return float(np.mean([abs(math.log(predict_seconds(m, trial, warm_l2=warm_l2) / m.seconds)) for m in rows]))


def _back_to_start(
    rows: Sequence[Measurement], arch: GpuArch, base: GpuTuning, x: np.ndarray, flat: Sequence[str], warm_l2: bool
) -> list[str]:
    """Put the free constants that no row moves at the solution (``flat``) back at their starting values, in
    place in ``x``, where that costs no row anything: the solver walks such a constant anywhere (an H100 fit
    left the GEMM DRAM share at 0.2 with no row streaming from DRAM). One that a row holds on one side (a
    DRAM-bound GEMM that would turn compute-bound back at the start) keeps its fitted value. Returns the
    names put back."""
    start = tuning_vector(base)
    names = [p[0] for p in PARAMETERS]
    error = _log_error(rows, arch, base, x, warm_l2)
    out = []
    for name in flat:
        i = names.index(name)
        trial = x.copy()
        trial[i] = start[i]
        trial_error = _log_error(rows, arch, base, trial, warm_l2)
        if trial_error <= error + 1e-9:
            x[i], error = start[i], min(error, trial_error)
            out.append(name)
    return out


def _set_kernel(tuning: GpuTuning, kind: str, **changes: float) -> GpuTuning:
    kernels = tuple(replace(k, **changes) if k.kind == kind else k for k in tuning.kernels)
    return replace(tuning, kernels=kernels)


def folds(rows: Sequence[Measurement], k: int) -> list[list[int]]:
    """k folds, stratified by op kind and spread along each sweep (row i of a kind goes to fold i mod k)."""
    out: list[list[int]] = [[] for _ in range(k)]
    seen: dict[str, int] = {}
    for i, m in enumerate(rows):
        n = seen.get(m.kind, 0)
        out[n % k].append(i)
        seen[m.kind] = n + 1
    return [f for f in out if f]


@dataclass
class CrossValidation:
    """Held-out predictions of every row (each predicted by the fit that did not see it)."""

    rows: list[Measurement]
    predicted: list[float]
    mape: dict[str, float]


def cross_validate(
    rows: Sequence[Measurement], arch: GpuArch, k: int = 5, fitter: Callable[..., Fit] = fit
) -> CrossValidation:
    """k-fold cross-validated error per op kind: fit on k-1 folds, predict the held-out one."""
    rows = list(rows)
    predicted = [math.nan] * len(rows)
    for held in folds(rows, k):
        keep = set(held)
        train = [m for i, m in enumerate(rows) if i not in keep]
        fitted = with_tuning(arch, fitter(train, arch).tuning)
        for i in held:
            predicted[i] = predict_seconds(rows[i], fitted)
    return CrossValidation(rows, predicted, mape_by_kind(rows, predicted))


def shape_family(m: Measurement, arch: GpuArch) -> str:
    """A row's shape family: its sweep or layer group (the name up to its first '_' or ':': 'square', 'r50',
    'matmul'), a GEMM's split at the GPU's ridge point into bandwidth- and compute-bound shapes (one sweep
    crosses it, and the two sides depend on different constants). Twins timed eager and as a graph share it."""
    group = re.split(r"[_:]", m.name or m.op, maxsplit=1)[0]
    if m.kind != "GEMM":
        return f"{m.kind}/{group}"
    intensity = 2.0 * m.M * m.N * m.K / ((m.M * m.K + m.K * m.N + m.M * m.N) * arch.elem_bytes)
    return f"{group}/{'bandwidth' if intensity < arch.peak_flops / arch.bytes_per_s else 'compute'}-bound"


def family_cross_validate(
    rows: Sequence[Measurement],
    arch: GpuArch,
    ops: Sequence[str] = ("gemm",),
    fitter: Callable[..., Fit] = fit,
    warm_l2: bool = True,
) -> dict[str, list[tuple[Measurement, float]]]:
    """Leave one shape family out: every family of rows of ``ops`` is predicted by a fit on the other rows
    (none of its shapes, in any timing), priced with or without ``warm_l2`` (as the fitter's ``RowEffects``).
    Family -> [(row, held-out prediction)]."""
    family = {id(m): shape_family(m, arch) for m in rows}
    out: dict[str, list[tuple[Measurement, float]]] = {}
    for name in sorted({family[id(m)] for m in rows if m.op in ops}):
        fitted = with_tuning(arch, fitter([m for m in rows if family[id(m)] != name], arch).tuning)
        out[name] = [(m, predict_seconds(m, fitted, warm_l2=warm_l2)) for m in rows if family[id(m)] == name]
    return out
