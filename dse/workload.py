"""The spec's ``workload`` becomes a Graph: a zoo name, an ONNX file or a SCALE-Sim topology CSV.

This is the one place that decides what a ``model`` string means, so the CLI, the explorer
and the tests all accept the same things and fail with the same message. Every failure is a
UserError saying what is allowed (zoo names, ``.onnx`` files, ``.csv`` SCALE-Sim topologies).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dse import zoo
from dse.errors import UserError
from dse.graph import PRECISION_BYTES, Graph, GraphError
from dse.importers.onnx_import import load_onnx
from dse.importers.scalesim_csv import load_scalesim_csv
from dse.importers.sparsity import apply_spec_sparsity

MODEL_FILE_SUFFIXES = (".onnx", ".csv")
_ONNX_OPTIONS = ("symbolic_dims", "max_detections")


def load_workload(
    model: str,
    *,
    batch: int = 1,
    precision: str = "int8",
    base_dir: Path | None = None,
    **options: Any,
) -> Graph:
    """Build the Graph for ``model``: a zoo name, a ``.onnx`` path or a SCALE-Sim ``.csv`` path.

    Relative paths resolve against ``base_dir`` (the spec file's folder), else the working
    directory. ``options`` go to the zoo builder; for ONNX ``symbolic_dims`` and ``max_detections``.
    """
    if not isinstance(model, str) or not model.strip():
        raise UserError(f"workload model must be a non-empty string, got {model!r}; {_allowed()}", where="model")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise UserError(f"batch must be a positive integer, got {batch!r}", where="batch")
    if precision not in PRECISION_BYTES:
        raise UserError(
            f"precision {precision!r} is not known; allowed: {', '.join(PRECISION_BYTES)}", where="precision"
        )
    model = model.strip()
    suffix = Path(model).suffix.lower()
    sparsity = options.pop("sparsity", None)  # workload.sparsity (dse.importers.sparsity), not a model option
    if suffix in MODEL_FILE_SUFFIXES:
        graph = _load_file(_resolve(model, base_dir), suffix, batch, precision, options)
    else:
        graph = _load_zoo(model, batch, precision, base_dir, options)
    try:
        return apply_spec_sparsity(graph, sparsity)
    except GraphError as err:
        raise UserError(str(err), where="sparsity") from err


def _allowed() -> str:
    return f"allowed: a zoo model ({', '.join(_zoo_names()) or 'none available'}), a .onnx file or a SCALE-Sim .csv"


def _zoo_names() -> list[str]:
    return sorted(zoo.names())


def _resolve(model: str, base_dir: Path | None) -> Path:
    return confined_path(model, base_dir)


def confined_path(text: str, base_dir: Path | None, what: str = "model file") -> Path:
    """A path written in a spec, resolved: an absolute (or ``~``) path as the user gave it; a relative one
    against the spec's folder, and refused (UserError) when it leads outside that folder (``..``, or a
    symbolic link pointing out): a spec received from someone else reads only files beside it."""
    path = Path(text).expanduser()
    if path.is_absolute() or base_dir is None:
        return path.resolve()
    folder = Path(base_dir).resolve()
    resolved = (folder / path).resolve()
    if not resolved.is_relative_to(folder):
        raise UserError(
            f"{what} {text!r} leads outside the spec's folder {folder} (to {resolved}); relative paths in a "
            "spec must stay inside its folder: move the file there or give an absolute path",
            where="model" if what == "model file" else what,
        )
    return resolved


def _load_file(path: Path, suffix: str, batch: int, precision: str, options: dict[str, Any]) -> Graph:
    if not path.is_file():
        raise UserError(f"model file {path} does not exist; {_allowed()}", where="model")
    try:
        if suffix == ".onnx":
            unknown = sorted(set(options) - set(_ONNX_OPTIONS))
            if unknown:
                raise UserError(
                    f"options {unknown} do not apply to ONNX models; allowed: {', '.join(_ONNX_OPTIONS)}",
                    where=str(path),
                )
            return load_onnx(path, batch=batch, precision=precision, **options)
        if options:
            raise UserError(
                f"options {sorted(options)} do not apply to SCALE-Sim topologies; they take none", where=str(path)
            )
        return load_scalesim_csv(path, batch=batch, precision=precision)
    except GraphError as err:
        raise UserError(str(err)) from err


def _load_zoo(model: str, batch: int, precision: str, base_dir: Path | None, options: dict[str, Any]) -> Graph:
    try:
        return zoo.build(model, batch=batch, precision=precision, **options)
    except KeyError as err:  # dse.zoo.UnknownModelError
        maybe_file = _resolve(model, base_dir)
        if maybe_file.is_file() or "/" in model or "\\" in model:
            kind = f"file type {Path(model).suffix!r}" if Path(model).suffix else "a file without a suffix"
            raise UserError(
                f"model {model!r} is {kind}, which cannot be imported; {_allowed()}", where="model"
            ) from err
        raise UserError(f"unknown model {model!r}; {_allowed()}", where="model") from err
    except (ValueError, TypeError) as err:  # bad options (GraphError is a ValueError too)
        raise UserError(f"model {model!r}: {err}", where="model") from err
