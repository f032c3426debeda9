"""The YAML spec's schema: what to explore, as frozen pydantic models.

A spec names a workload, a hardware template with parameter values or ranges, the
technology, constraints, objectives, a search strategy and an evaluator. Loading
it (``dse.spec.load``) validates everything that can be validated without evaluating a
design, so a typo costs a second, not an hour of exploration. Every user error is a
``SpecError`` reading ``<file>:<line>: <field.path>: <what was wrong>; <what is
allowed>``: the line comes from walking the composed YAML node tree along the
offending field's path (``dse.spec.messages``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from dse import registry
from dse.graph import PRECISION_BYTES, GraphError
from dse.importers.sparsity import check_spec_sparsity
from dse.objectives import Constraint, Objective
from dse.space import DesignSpace
from dse.spec.messages import Loc, SpecError, line_of, parse_field_path
from hwmodels.base import METRICS

MODEL_FILE_SUFFIXES = (".onnx", ".csv")
ONNX_SYMBOLIC_DIMS = "symbolic_dims"  # an option the ONNX importer takes: {input dim name: size}
# Detection models: the most boxes a data-dependent selection (NonZero, NonMaxSuppression) keeps; an integer >= 1.
# Without it each such count is its worst case (every candidate kept). dse.importers.onnx_detection applies it.
ONNX_MAX_DETECTIONS = "max_detections"
ONNX_OPTIONS = (ONNX_SYMBOLIC_DIMS, ONNX_MAX_DETECTIONS)
DEFAULT_OBJECTIVES = ("min latency_ms", "min energy_mj")
FINGERPRINT_VERSION = 1


# ---------------------------------------------------------------------------------------------- schema


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class WorkloadModel(BaseModel):
    """One model of a multi-DNN workload (``workload.models``): a zoo name, its rate and its options."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    model: str = Field(description="a zoo model name")
    rate: float = Field(1.0, gt=0, description="a number > 0 (inferences/s this model must sustain)")

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Workload(BaseModel):
    """What runs on the hardware. Keys other than model/models/batch/precision are model options."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    model: str | None = Field(None, description="a zoo model name, an .onnx path or a SCALE-Sim .csv path")
    models: list[WorkloadModel] | None = Field(
        None, min_length=1, description="a list of {model: NAME, rate: R} (several DNNs sharing the hardware)"
    )
    batch: int = Field(1, ge=1, description="an integer >= 1 (default 1)")
    precision: str = Field("int8", description="one of: " + ", ".join(PRECISION_BYTES))
    data: str | None = Field(None, description="an .npz file with arrays x and y (data for the accuracy metrics)")
    _model_path: Path | None = PrivateAttr(None)
    _data_sha256: str | None = PrivateAttr(None)
    _data_path: Path | None = PrivateAttr(None)
    _model_sha256: str | None = PrivateAttr(None)  # taken at load time: the file the spec was checked with

    @model_validator(mode="after")
    def _one_of_model_or_models(self) -> Workload:
        if self.model is not None and self.models is not None:  # neither: checks.py says model is missing
            raise ValueError(
                "give exactly one of workload.model (one DNN) or workload.models (a list of {model, rate})"
            )
        try:  # workload.sparsity's syntax; its layer names are checked against the model when it is built
            check_spec_sparsity((self.model_extra or {}).get("sparsity"))
        except GraphError as err:
            raise ValueError(str(err)) from None
        return self

    @property
    def options(self) -> dict[str, Any]:
        """Model-specific options (seq_len, kv_len, phase, num_layers, variant, resolution, ...)."""
        return dict(self.model_extra or {})

    @property
    def source(self) -> str:
        """``zoo``, ``onnx`` or ``csv``: how the graph is to be built."""
        suffix = Path(self.model or "").suffix.lower()
        return suffix[1:] if suffix in MODEL_FILE_SUFFIXES else "zoo"

    @property
    def model_path(self) -> Path | None:
        """The model file resolved against the spec's folder; None for zoo models."""
        return self._model_path

    @property
    def model_sha256(self) -> str | None:
        """sha256 of the model file as it was when the spec was checked; None for zoo models."""
        return self._model_sha256

    @property
    def data_path(self) -> Path | None:
        """The ``data`` file resolved against the spec's folder (set when the spec is checked); None if not given."""
        return self._data_path

    @property
    def data_sha256(self) -> str | None:
        return self._data_sha256

    def attach_data_file(self, path: Path) -> None:
        """Record the resolved data file and its content hash (it changes the accuracy metrics)."""
        self._data_path = path.resolve()
        self._data_sha256 = hashlib.sha256(path.read_bytes()).hexdigest()

    def attach_model_file(self, path: Path) -> None:
        """Record the resolved model file and its content hash (the file the spec was checked with)."""
        self._model_path = path.resolve()
        self._model_sha256 = hashlib.sha256(path.read_bytes()).hexdigest()


class TemplateSpec(_Model):
    kind: str = Field(description="a template kind")
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="a mapping of parameter name to a value, a list of values, "
        "{range: [lo, hi]} or {log_range: [lo, hi]}",
    )
    mapper: str | None = Field(None, description="a mapper name of the template (default: the template's first)")
    mapper_options: dict[str, Any] = Field(
        default_factory=dict,
        description="a mapping of mapper option name to a value (a number, text or true/false)",
    )


class Bound(_Model):
    min: float | None = Field(None, description="a number (lower bound)")
    max: float | None = Field(None, description="a number (upper bound)")


class Search(_Model):
    strategy: Literal["grid", "random", "nsga2", "tpe", "gp"] = "grid"
    budget: int | None = Field(None, ge=1, description="an integer >= 1 (points to evaluate)")
    seed: int = Field(0, ge=0, description="an integer >= 0 (random seed, default 0)")
    population: int | None = Field(None, ge=2, description="an integer >= 2 (nsga2 population size)")
    max_grid: int = Field(
        1_000_000, ge=1, description="an integer >= 1 (the largest grid evaluated whole without a budget)"
    )


class Spec(_Model):
    """A validated spec. Build it with ``load_spec`` / ``parse_spec`` so errors carry line numbers."""

    name: str = Field(description="a non-empty string naming the exploration")
    description: str = Field("", description="a string")
    workload: Workload = Field(description="a mapping with model, batch, precision and model options")
    template: TemplateSpec = Field(description="a mapping with kind, params, mapper and mapper_options")
    tech: str = Field("asic-28nm", description="a technology name")
    constraints: dict[str, Bound] = Field(
        default_factory=dict, description="a mapping of metric name to {min: x} and/or {max: x}"
    )
    objectives: list[str] = Field(
        default_factory=lambda: list(DEFAULT_OBJECTIVES),
        min_length=1,
        description="a list of 'min <metric>' / 'max <metric>' strings",
    )
    search: Search = Field(
        default_factory=Search, description="a mapping with strategy, budget, seed, population, max_grid"
    )
    evaluator: Literal["analytical", "surrogate", "hybrid"] = "analytical"
    evaluator_options: dict[str, Any] = Field(
        default_factory=dict,
        description="a mapping of evaluator option name to a value (`dse.evaluator_options` lists each evaluator's)",
    )
    surrogate: str | None = Field(
        None, description="a surrogate model file (.joblib from `dse surrogate train`), relative to the spec's folder"
    )
    baselines: list[str] = Field(default_factory=list, description="a list of baseline names (e.g. a100, h100)")

    _path: Path = PrivateAttr(Path("<string>"))
    _root: yaml.Node | None = PrivateAttr(None)

    # -------------------------------------------------------------------------------- helpers
    @property
    def path(self) -> Path:
        return self._path

    @property
    def base_dir(self) -> Path:
        """Where relative paths in the spec are resolved: the spec's folder (cwd for an in-memory spec)."""
        if str(self._path) == "<string>":
            return Path.cwd()
        return self._path.resolve().parent

    def attach_source(self, path: Path, root: yaml.Node | None) -> None:
        """Remember the file and YAML node tree the spec came from, so later errors carry line numbers."""
        self._path = path
        self._root = root

    def locate(self, field_path: str) -> str:
        """``file:line`` of a dotted field path such as ``template.params.rows`` or ``objectives[1]``."""
        line, _ = line_of(self._root, parse_field_path(field_path))
        return f"{self._path}:{line}" if line is not None else str(self._path)

    def error(self, field_path: str | Loc, message: str) -> SpecError:
        """A SpecError located at ``field_path``, for later stages that find a problem with this spec."""
        loc = parse_field_path(field_path) if isinstance(field_path, str) else tuple(field_path)
        line, shown = line_of(self._root, loc)
        return SpecError(message, str(self._path), line, shown)

    def family(self) -> registry.Family:
        return registry.family(self.template.kind)

    @property
    def mapper_name(self) -> str:
        """The mapper to use: the one named in the spec, else the template's default."""
        return self.template.mapper or self.family().default_mapper

    def objective_list(self) -> list[Objective]:
        return [parse_objective(text)[0] for text in self.objectives]  # type: ignore[misc]

    def constraint_list(self) -> list[Constraint]:
        return [Constraint(metric, bound.min, bound.max) for metric, bound in self.constraints.items()]

    def design_space(self) -> DesignSpace:
        return DesignSpace.from_spec(self)

    def fixed_params(self, space: DesignSpace | None = None) -> dict[str, Any]:
        """Single-valued params, plus tech and precision under the names the template takes them.

        ``space``: this spec's design space when the caller has it (else it is built here)."""
        template_params = {p.name for p in self.family().template().params()}
        fixed = dict((space if space is not None else self.design_space()).fixed)
        fixed.update(implied_params(self, template_params))
        return fixed

    def evaluation_fingerprint(self) -> str:
        """sha256 of what changes an evaluated point's metrics besides the point itself.

        Objectives, constraints and search settings are left out so a run can be resumed
        with a different budget or objectives; a model file enters by its content hash
        so moving the spec folder keeps the fingerprint.
        """
        workload: dict[str, Any] = {
            "batch": self.workload.batch,
            "precision": self.workload.precision,
            "options": dict(sorted(self.workload.options.items())),
        }
        path = self.workload.model_path
        if path is not None:
            workload["model"] = {"file": path.name, "sha256": self.workload.model_sha256}
        else:
            workload["model"] = self.workload.model
        if self.workload.data is not None:  # only when given, so runs from before workload data keep resuming
            workload["data"] = self.workload.data_sha256 or self.workload.data
        if self.workload.models is not None:
            workload["models"] = [m.model_dump(mode="json") for m in self.workload.models]
        payload = {
            "version": FINGERPRINT_VERSION,
            "workload": workload,
            "template": self.template.kind,
            "mapper": self.mapper_name,
            "tech": self.tech,
            "evaluator": self.evaluator,
        }
        if self.template.mapper_options:  # only when given, so runs from before mapper options keep resuming
            payload["mapper_options"] = dict(sorted(self.template.mapper_options.items()))
        if self.surrogate is not None and self.evaluator != "analytical":
            path = self.surrogate_path
            payload["surrogate"] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else self.surrogate
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def surrogate_path(self) -> Path | None:
        """The ``surrogate`` model file resolved against the spec's folder; None when not given."""
        if self.surrogate is None:
            return None
        path = Path(self.surrogate).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    def to_dict(self) -> dict[str, Any]:
        """The spec with defaults filled in, as plain YAML/JSON-able data (model options back in workload).

        Empty ``template.mapper_options`` and ``evaluator_options`` are left out: a run's spec.yaml reads as it
        did before they existed.
        """
        data = self.model_dump(mode="json", exclude_none=True)
        if not data["template"]["mapper_options"]:
            del data["template"]["mapper_options"]
        if not data["evaluator_options"]:
            del data["evaluator_options"]
        return data


def parse_objective(text: str) -> tuple[Objective | None, str]:
    """An Objective from ``'min latency_ms'``, or None and what was wrong."""
    parts = text.split()
    if len(parts) != 2 or parts[0] not in ("min", "max"):
        return None, f"{text!r} is not an objective; write 'min <metric>' or 'max <metric>'"
    direction, metric = parts
    if metric not in METRICS:
        return None, f"unknown metric {metric!r}; choose one of: {', '.join(METRICS)}"
    return Objective(metric, direction), ""


def implied_params(spec: Spec, template_params: set[str]) -> dict[str, Any]:
    """Template params that come from elsewhere in the spec: ``tech`` (top level) and workload precision."""
    implied: dict[str, Any] = {}
    if "tech" in template_params and "tech" not in spec.template.params:
        implied["tech"] = spec.tech
    if "precision" in template_params and "precision" not in spec.template.params:
        implied["precision"] = spec.workload.precision
    return implied
