"""The YAML spec: what to explore, checked up front with one precise message per mistake.

A spec names a workload, a hardware template with parameter values or ranges, the
technology, constraints, objectives, a search strategy and an evaluator. Loading
it validates everything that can be validated without evaluating a design, so a
typo costs a second, not an hour of exploration. Every user error is a
``SpecError`` reading ``<file>:<line>: <field.path>: <what was wrong>; <what is
allowed>``: the line comes from walking the composed YAML node tree along the
offending field's path.
"""

from __future__ import annotations

import hashlib
import json
import re
import typing
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from dse.errors import UserError
from dse.graph import PRECISION_BYTES
from dse.objectives import Constraint, Objective
from dse.space import SCALAR_TYPES, DesignSpace, SpaceError, dimension_from_spec
from templates.base import Template, TemplateError

Loc = tuple[str | int, ...]

MODEL_FILE_SUFFIXES = (".onnx", ".csv")
ONNX_SYMBOLIC_DIMS = "symbolic_dims"  # the one option the ONNX importer takes: {input dim name: size}
DEFAULT_OBJECTIVES = ("min latency_ms", "min energy_mj")
FINGERPRINT_VERSION = 1


class SpecError(UserError):
    """A mistake in a spec file; ``str()`` is ``file:line: field: what was wrong; what is allowed``."""

    def __init__(self, message: str, file: str, line: int | None = None, field: str | None = None):
        where = file if line is None else f"{file}:{line}"
        if field:
            where = f"{where}: {field}"
        super().__init__(message, where)
        self.file = file
        self.line = line
        self.field = field


# ---------------------------------------------------------------------------------------------- schema


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Workload(BaseModel):
    """What runs on the hardware. Keys other than model/batch/precision are model options."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    model: str = Field(description="a zoo model name, an .onnx path or a SCALE-Sim .csv path")
    batch: int = Field(1, ge=1, description="an integer >= 1 (default 1)")
    precision: str = Field("int8", description="one of: " + ", ".join(PRECISION_BYTES))
    _model_path: Path | None = PrivateAttr(None)
    _model_sha256: str | None = PrivateAttr(None)  # taken at load time: the file the spec was checked with

    @property
    def options(self) -> dict[str, Any]:
        """Model-specific options (seq_len, kv_len, phase, num_layers, variant, resolution, ...)."""
        return dict(self.model_extra or {})

    @property
    def source(self) -> str:
        """``zoo``, ``onnx`` or ``csv``: how the graph is to be built."""
        suffix = Path(self.model).suffix.lower()
        return suffix[1:] if suffix in MODEL_FILE_SUFFIXES else "zoo"

    @property
    def model_path(self) -> Path | None:
        """The model file resolved against the spec's folder; None for zoo models."""
        return self._model_path


class TemplateSpec(_Model):
    kind: str = Field(description="a template kind")
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="a mapping of parameter name to a value, a list of values, "
        "{range: [lo, hi]} or {log_range: [lo, hi]}",
    )
    mapper: str | None = Field(None, description="a mapper name of the template (default: the template's first)")


class Bound(_Model):
    min: float | None = Field(None, description="a number (lower bound)")
    max: float | None = Field(None, description="a number (upper bound)")


class Search(_Model):
    strategy: Literal["grid", "random", "nsga2", "tpe", "gp"] = "grid"
    budget: int | None = Field(None, ge=1, description="an integer >= 1 (points to evaluate)")
    seed: int = Field(0, ge=0, description="an integer >= 0 (random seed, default 0)")
    population: int | None = Field(None, ge=2, description="an integer >= 2 (nsga2 population size)")


class Spec(_Model):
    """A validated spec. Build it with ``load_spec`` / ``parse_spec`` so errors carry line numbers."""

    name: str = Field(description="a non-empty string naming the exploration")
    description: str = Field("", description="a string")
    workload: Workload = Field(description="a mapping with model, batch, precision and model options")
    template: TemplateSpec = Field(description="a mapping with kind, params and mapper")
    tech: str = Field("asic-28nm", description="a technology name")
    constraints: dict[str, Bound] = Field(
        default_factory=dict, description="a mapping of metric name to {min: x} and/or {max: x}"
    )
    objectives: list[str] = Field(
        default_factory=lambda: list(DEFAULT_OBJECTIVES),
        min_length=1,
        description="a list of 'min <metric>' / 'max <metric>' strings",
    )
    search: Search = Field(default_factory=Search, description="a mapping with strategy, budget, seed, population")
    evaluator: Literal["analytical", "surrogate", "hybrid"] = "analytical"
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

    def locate(self, field_path: str) -> str:
        """``file:line`` of a dotted field path such as ``template.params.rows`` or ``objectives[1]``."""
        line, _ = _line_of(self._root, _parse_field_path(field_path))
        return f"{self._path}:{line}" if line is not None else str(self._path)

    def error(self, field_path: str | Loc, message: str) -> SpecError:
        """A SpecError located at ``field_path``, for later stages that find a problem with this spec."""
        loc = _parse_field_path(field_path) if isinstance(field_path, str) else tuple(field_path)
        line, shown = _line_of(self._root, loc)
        return SpecError(message, str(self._path), line, shown)

    def family(self):
        from dse import registry

        return registry.family(self.template.kind)

    @property
    def mapper_name(self) -> str:
        """The mapper to use: the one named in the spec, else the template's default."""
        return self.template.mapper or self.family().default_mapper

    def objective_list(self) -> list[Objective]:
        return [_parse_objective(text)[0] for text in self.objectives]  # type: ignore[misc]

    def constraint_list(self) -> list[Constraint]:
        return [Constraint(metric, bound.min, bound.max) for metric, bound in self.constraints.items()]

    def design_space(self) -> DesignSpace:
        return DesignSpace.from_spec(self)

    def fixed_params(self) -> dict[str, Any]:
        """Single-valued params, plus tech and precision under the names the template takes them."""
        template_params = {p.name for p in self.family().template().params()}
        fixed = dict(self.design_space().fixed)
        fixed.update(_implied_params(self, template_params))
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
            workload["model"] = {"file": path.name, "sha256": self.workload._model_sha256}
        else:
            workload["model"] = self.workload.model
        payload = {
            "version": FINGERPRINT_VERSION,
            "workload": workload,
            "template": self.template.kind,
            "mapper": self.mapper_name,
            "tech": self.tech,
            "evaluator": self.evaluator,
        }
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
        """The spec with defaults filled in, as plain YAML/JSON-able data (model options back in workload)."""
        return self.model_dump(mode="json", exclude_none=True)


# ---------------------------------------------------------------------------------------------- loading


def load_spec(path: str | Path) -> Spec:
    """Read and validate a YAML spec file; raises SpecError on any problem with it."""
    shown = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(
            f"spec file not found (looked for {Path(path).resolve()}); give an existing YAML file", shown
        ) from None
    except IsADirectoryError:
        raise SpecError("is a directory, not a spec file; give a YAML file", shown) from None
    except UnicodeDecodeError as err:
        raise SpecError(f"is not UTF-8 text ({err.reason}); give a YAML text file", shown) from None
    except OSError as err:
        raise SpecError(f"cannot be read ({err.strerror}); give a readable YAML file", shown) from None
    return parse_spec(text, path)


def parse_spec(text: str, path: str | Path = "<string>") -> Spec:
    """Validate spec text; ``path`` names it in messages and anchors relative model paths."""
    shown = str(path)
    root, data = _compose(text, shown)
    try:
        spec = Spec.model_validate(data)
    except ValidationError as err:
        raise _from_pydantic(err, root, shown) from None
    spec._path = Path(path)
    spec._root = root
    problems = _check_semantics(spec)
    if problems:
        raise _first_error(problems, root, shown)
    return spec


def _compose(text: str, shown: str) -> tuple[yaml.Node, dict]:
    """The node tree (for line numbers) and the plain data, from one parse."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else None
        what = ": ".join(p for p in (err.context, err.problem) if p)
        column = f" (column {mark.column + 1})" if mark is not None else ""
        raise SpecError(f"YAML syntax error: {what}{column}; the spec must be valid YAML", shown, line) from None
    except yaml.YAMLError as err:
        raise SpecError(f"YAML error: {err}; the spec must be valid YAML", shown) from None
    finally:
        loader.dispose()
    top_keys = ", ".join(Spec.model_fields)
    if root is None:
        raise SpecError(f"the spec is empty; write a mapping with the keys: {top_keys}", shown, 1)
    if not isinstance(root, yaml.MappingNode) or not isinstance(data, dict):
        raise SpecError(
            f"the top level is {_describe(data)}, not a mapping; write a mapping with the keys: {top_keys}",
            shown,
            root.start_mark.line + 1,
        )
    _check_duplicate_keys(root, (), shown)
    return root, data


def _check_duplicate_keys(node: yaml.Node, loc: Loc, shown: str) -> None:
    """PyYAML silently keeps the last of two equal keys; a spec that repeats a key is a mistake."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None:
                line = key_node.start_mark.line + 1
                if key in seen:
                    field = _format_loc((*loc, key))
                    raise SpecError(
                        f"key given twice (first on line {seen[key]}); give each key once", shown, line, field
                    )
                seen[key] = line
            _check_duplicate_keys(value_node, (*loc, key if key is not None else "?"), shown)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_duplicate_keys(item, (*loc, i), shown)


# ---------------------------------------------------------------------------------------------- locations


def _parse_field_path(field_path: str) -> Loc:
    """``template.params.dataflow[1]`` -> ('template', 'params', 'dataflow', 1)."""
    loc: list[str | int] = []
    for part in field_path.split("."):
        m = re.fullmatch(r"([^\[\]]*)((?:\[\d+\])*)", part)
        if m is None:
            loc.append(part)
            continue
        if m.group(1):
            loc.append(m.group(1))
        loc.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return tuple(loc)


def _format_loc(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _line_of(root: yaml.Node | None, loc: Loc) -> tuple[int | None, str]:
    """The 1-based line for ``loc`` and the field path to show.

    Walks the node tree as far as the path exists: a scalar reports its own line, a
    mapping or list the line of the key that introduces it, and a missing key the
    line of its parent's key (where it should have been written).
    """
    if root is None:
        return None, _format_loc(loc)
    node: yaml.Node = root
    line = root.start_mark.line + 1
    shown: list[str | int] = []
    for part in loc:
        if part == "[key]":  # pydantic: the problem is the mapping key itself; ``line`` is already the key's
            break
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if str(getattr(k, "value", None)) == str(part)), None)
            shown.append(part)
            if match is None:
                return line, _format_loc(tuple(shown))
            key_node, node = match
            line = key_node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            shown.append(part)
            node = node.value[part]
            line = node.start_mark.line + 1
        elif isinstance(part, str) and not part.isidentifier():
            continue  # pydantic's internal loc parts such as 'function-after[...]'
        else:
            shown.append(part)
            break
    if isinstance(node, yaml.ScalarNode):
        line = node.start_mark.line + 1
    return line, _format_loc(tuple(shown))


def _first_error(problems: list[tuple[Loc, str]], root: yaml.Node, shown: str) -> SpecError:
    """The earliest problem in the file, with a count of the rest."""
    located = []
    for order, (loc, message) in enumerate(problems):
        line, field = _line_of(root, loc)
        located.append((line or 0, order, field, message))
    located.sort(key=lambda item: (item[0], item[1]))
    line, _, field, message = located[0]
    if len(located) > 1:
        more = len(located) - 1
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return SpecError(message, shown, line or None, field)


# ---------------------------------------------------------------------------------------------- pydantic errors

_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _describe(value: Any) -> str:
    """How a YAML value reads to a user: ``'abc' (a string)``, ``a list``..."""
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int):
        return f"{value} (an integer)"
    if isinstance(value, float):
        return f"{value:g} (a number)"
    if isinstance(value, str):
        return f"{value!r} (a string)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"{value!r} (a {type(value).__name__})"


def _field_at(loc: Loc) -> tuple[type[BaseModel] | None, Any]:
    """The model that owns the last field of ``loc`` and that field's FieldInfo (None when not a model field)."""
    model: Any = Spec
    info = None
    owner: type[BaseModel] | None = None
    expect_key = False
    for part in loc:
        if expect_key:  # a dict key: the value type is the dict's value annotation
            expect_key = False
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return owner, None
        owner, info = model, model.model_fields[part]
        annotation = info.annotation
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if typing.get_origin(annotation) is dict:
            model, expect_key = typing.get_args(annotation)[1], True
        elif args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
            model = args[0]
        else:
            model = annotation
    return owner, info


def _allowed(loc: Loc) -> str:
    owner, info = _field_at(loc)
    if info is None:
        return ""
    choices = typing.get_args(info.annotation) if typing.get_origin(info.annotation) is Literal else ()
    if choices:
        return "choose one of: " + ", ".join(map(str, choices))
    return f"expected {info.description}" if info.description else ""


def _message_for(error: dict) -> str:
    kind, loc, value = error["type"], tuple(error["loc"]), error.get("input")
    ctx = error.get("ctx") or {}
    allowed = _allowed(loc)
    if kind == "extra_forbidden":
        model = _submodel(loc[:-1])
        keys = ", ".join(model.model_fields) if model is not None else ""
        return f"unknown key {loc[-1]!r}; allowed keys: {keys}"
    if kind == "missing":
        return "required key is missing" + (f"; {allowed}" if allowed else "")
    if kind == "literal_error":
        return f"{value!r} is not allowed; {allowed or 'expected ' + str(ctx.get('expected'))}"
    if kind in _EXPECTED:
        hint = ""
        if kind == "float_type" and isinstance(value, str) and _looks_numeric(value):
            hint = " (YAML reads 1e3 as text: write 1.0e3)"
        return f"got {_describe(value)}{hint}; {allowed or 'expected ' + _EXPECTED[kind]}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        bound = next(iter(ctx.values()), "?")
        return f"{value!r} is too {'small' if 'greater' in kind else 'large'}; must be {op} {bound}"
    if kind in ("too_short", "string_too_short"):
        return f"is empty; {allowed or 'give at least one item'}"
    return f"{error['msg']}; {allowed}" if allowed else str(error["msg"])


def _submodel(loc: Loc) -> type[BaseModel] | None:
    if not loc:
        return Spec
    _, info = _field_at(loc)
    if info is None:
        # a dict value (e.g. constraints.<metric>): the dict's value model
        _, parent = _field_at(loc[:-1])
        if parent is not None and typing.get_origin(parent.annotation) is dict:
            value_type = typing.get_args(parent.annotation)[1]
            return value_type if isinstance(value_type, type) and issubclass(value_type, BaseModel) else None
        return None
    candidates = [info.annotation, *typing.get_args(info.annotation)]
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _from_pydantic(err: ValidationError, root: yaml.Node, shown: str) -> SpecError:
    problems = [(tuple(e["loc"]), _message_for(e)) for e in err.errors()]
    return _first_error(problems, root, shown)


# ---------------------------------------------------------------------------------------------- semantics


def _parse_objective(text: str) -> tuple[Objective | None, str]:
    """An Objective from ``'min latency_ms'``, or None and what was wrong."""
    from hwmodels.base import METRICS

    parts = text.split()
    if len(parts) != 2 or parts[0] not in ("min", "max"):
        return None, f"{text!r} is not an objective; write 'min <metric>' or 'max <metric>'"
    direction, metric = parts
    if metric not in METRICS:
        return None, f"unknown metric {metric!r}; choose one of: {', '.join(METRICS)}"
    return Objective(metric, direction), ""


def _tech_names() -> list[str]:
    from hwmodels.catalogs import tech as catalog

    return list(catalog.tech_names())


def _tech_problem(tech: Any) -> str | None:
    """None when ``tech`` names a catalog technology (aliases like '28nm' included), else the message."""
    from hwmodels.catalogs import tech as catalog

    names = _tech_names()
    if tech in names:
        return None
    try:
        catalog.get_tech(tech)
        return None
    except (KeyError, ValueError, TypeError):
        return f"unknown technology {tech!r}; choose one of: {', '.join(names)}"


def _baseline_problem(name: str) -> str | None:
    """None when ``name`` is a GPU of the catalog (aliases like h100, a100 included), else the message."""
    from hwmodels.catalogs.gpu import UnknownGpuError, canonical_gpu_name

    try:
        canonical_gpu_name(name)
    except UnknownGpuError as err:
        return f"unknown baseline GPU {name!r}; {err.message.split('; ', 1)[1]}"
    return None


def _zoo_models() -> dict[str, Any] | None:
    """The zoo's models by name, or None when the zoo does not list them (then any name is passed on)."""
    try:
        from dse import zoo
    except ImportError:
        return None
    models = getattr(zoo, "MODELS", None)
    return dict(models) if isinstance(models, dict) and models else None


def _implied_params(spec: Spec, template_params: set[str]) -> dict[str, Any]:
    """Template params that come from elsewhere in the spec: ``tech`` (top level) and workload precision."""
    implied: dict[str, Any] = {}
    if "tech" in template_params and "tech" not in spec.template.params:
        implied["tech"] = spec.tech
    if "precision" in template_params:
        implied["precision"] = spec.workload.precision
    return implied


def _check_semantics(spec: Spec) -> list[tuple[Loc, str]]:
    """Everything the schema cannot say: names against registries, files, ranges, template rules."""
    problems: list[tuple[Loc, str]] = []
    if not spec.name.strip():
        problems.append((("name",), "is blank; expected a non-empty string naming the exploration"))
    _check_workload(spec, problems)
    tech_problem = _tech_problem(spec.tech)
    if tech_problem:
        problems.append((("tech",), tech_problem))
    _check_search(spec, problems)
    _check_surrogate(spec, problems)
    _check_objectives(spec, problems)
    _check_constraints(spec, problems)
    seen: set[str] = set()
    for i, name in enumerate(spec.baselines):
        if not name.strip():
            problems.append((("baselines", i), "is blank; expected a baseline name such as a100"))
        elif name in seen:
            problems.append((("baselines", i), f"{name!r} is listed twice; list each baseline once"))
        else:
            baseline_problem = _baseline_problem(name)
            if baseline_problem:
                problems.append((("baselines", i), baseline_problem))
        seen.add(name)
    _check_template(spec, problems, tech_ok=tech_problem is None)
    return problems


def _check_workload(spec: Spec, problems: list[tuple[Loc, str]]) -> None:
    w = spec.workload
    if w.precision not in PRECISION_BYTES:
        problems.append(
            (("workload", "precision"), f"{w.precision!r} is not allowed; choose one of: {', '.join(PRECISION_BYTES)}")
        )
    model = w.model.strip()
    suffix = Path(model).suffix.lower()
    _check_model_options(w.options, suffix, problems)
    if not model:
        problems.append((("workload", "model"), "is blank; give a zoo model name, an .onnx path or a .csv path"))
        return
    if suffix in MODEL_FILE_SUFFIXES:
        path = Path(model).expanduser()
        if not path.is_absolute():
            path = spec.base_dir / path
        if not path.is_file():
            problems.append(
                (
                    ("workload", "model"),
                    f"model file {model!r} not found (looked for {path}); give an existing .onnx or .csv file "
                    "(relative paths are relative to the spec's folder) or a zoo model name",
                )
            )
        else:
            w._model_path = path.resolve()
            w._model_sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        return
    zoo_models = _zoo_models()
    if "/" in model or "\\" in model or (suffix and zoo_models is not None and model not in zoo_models):
        problems.append(
            (("workload", "model"), f"{model!r} is not a supported model file; give an .onnx or a SCALE-Sim .csv file")
        )
        return
    if zoo_models is None:
        return
    if model not in zoo_models:
        problems.append(
            (
                ("workload", "model"),
                f"{model!r} is not a zoo model; choose one of: {', '.join(zoo_models)}, or give an .onnx/.csv path",
            )
        )
        return
    accepted = tuple(getattr(zoo_models[model], "options", ()) or ())
    for key in w.options:
        if key not in accepted:
            takes = ", ".join(o for o in accepted if o not in ("batch", "precision")) or "no options"
            problems.append((("workload", key), f"{model} does not take option {key!r}; it takes: {takes}"))


def _check_model_options(options: dict[str, Any], suffix: str, problems: list[tuple[Loc, str]]) -> None:
    """Zoo models take scalar options; ONNX files only ``symbolic_dims: {name: N}``; SCALE-Sim CSVs none."""
    for key, value in options.items():
        loc: Loc = ("workload", key)
        if suffix == ".csv":
            problems.append((loc, f"a SCALE-Sim topology takes no model options; remove {key}"))
        elif suffix == ".onnx" and key != ONNX_SYMBOLIC_DIMS:
            problems.append((loc, f"ONNX models take only {ONNX_SYMBOLIC_DIMS}: {{name: N}}; remove {key}"))
        elif suffix == ".onnx":
            if not isinstance(value, dict):
                problems.append((loc, f"got {_describe(value)}; expected a mapping of input dimension name to N"))
                continue
            for dim_name, size in value.items():
                if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                    problems.append(((*loc, dim_name), f"got {_describe(size)}; expected an integer >= 1"))
        elif not isinstance(value, SCALAR_TYPES):
            problems.append((loc, f"model option {key} is {_describe(value)}; give a single value (number or text)"))


def _check_surrogate(spec: Spec, problems: list[tuple[Loc, str]]) -> None:
    """A named surrogate model file must exist (``evaluator: surrogate`` without one is refused at run time)."""
    path = spec.surrogate_path
    if path is not None and not path.is_file():
        problems.append(
            (
                ("surrogate",),
                f"model file {spec.surrogate!r} not found (looked for {path}); give a file written "
                "by `dse surrogate train` (relative paths are relative to the spec's folder)",
            )
        )


def _check_search(spec: Spec, problems: list[tuple[Loc, str]]) -> None:
    s = spec.search
    if s.strategy != "grid" and s.budget is None:
        problems.append(
            (("search", "budget"), f"strategy {s.strategy} needs a budget; give budget: N (an integer >= 1)")
        )
    if s.population is not None and s.strategy != "nsga2":
        problems.append(
            (("search", "population"), f"population applies only to strategy nsga2, not {s.strategy}; remove it")
        )


def _check_objectives(spec: Spec, problems: list[tuple[Loc, str]]) -> None:
    seen: dict[str, int] = {}
    for i, text in enumerate(spec.objectives):
        objective, problem = _parse_objective(text)
        if objective is None:
            problems.append((("objectives", i), problem))
        elif objective.metric in seen:
            problems.append(
                (
                    ("objectives", i),
                    f"{objective.metric} already appears in objectives[{seen[objective.metric]}]; "
                    "give each metric once",
                )
            )
        else:
            seen[objective.metric] = i


def _check_constraints(spec: Spec, problems: list[tuple[Loc, str]]) -> None:
    from hwmodels.base import METRICS

    for metric, bound in spec.constraints.items():
        loc: Loc = ("constraints", metric)
        if metric not in METRICS:
            problems.append((loc, f"unknown metric {metric!r}; choose one of: {', '.join(METRICS)}"))
        elif bound.min is None and bound.max is None:
            problems.append((loc, "has no bound; give {min: x}, {max: x} or both"))
        elif bound.min is not None and bound.max is not None and bound.min > bound.max:
            problems.append((loc, f"min {bound.min:g} is above max {bound.max:g}; give min <= max"))


def _check_template(spec: Spec, problems: list[tuple[Loc, str]], tech_ok: bool) -> None:
    """Kind, mapper, every param value, then one instantiation to catch cross-field rules."""
    from dse import registry

    families = registry.families()
    kind = spec.template.kind
    if kind not in families:
        problems.append(
            (("template", "kind"), f"{kind!r} is not a template kind; choose one of: {', '.join(families)}")
        )
        return
    family = families[kind]
    if spec.template.mapper is not None and spec.template.mapper not in family.mappers:
        problems.append(
            (
                ("template", "mapper"),
                f"{spec.template.mapper!r} is not a mapper of {kind}; choose one of: {', '.join(family.mappers)}",
            )
        )
    template: Template = family.template()
    params = {p.name: p for p in template.params()}
    dims = []
    for name, raw in spec.template.params.items():
        loc: Loc = ("template", "params", name)
        if name not in params:
            problems.append((loc, f"{name!r} is not a parameter of {kind}; its parameters are: {', '.join(params)}"))
            continue
        if name == "precision":
            problems.append((loc, "precision is the workload's; set workload.precision instead"))
            continue
        if name == "tech" and "tech" in spec.model_fields_set:
            problems.append((loc, "tech is also set at the top level; give it in one place"))
            continue
        try:
            dim = dimension_from_spec(name, raw, params[name])
        except SpaceError as err:
            problems.append(((*loc, *err.loc), err.message))
            continue
        if name == "tech":
            for i, value in enumerate(dim.values or ()):
                tech_problem = _tech_problem(value)
                if tech_problem:
                    problems.append(((*loc, i) if len(dim.values) > 1 else loc, tech_problem))
        if spec.search.strategy == "grid" and not dim.has_grid:
            problems.append(
                (
                    loc,
                    "a float range needs `num` or `step` for grid search; add num: N or step: S, "
                    "or use strategy random, nsga2, tpe or gp",
                )
            )
        dims.append(dim)
    for name, loc in (("precision", ("workload", "precision")), ("tech", ("tech",))):
        if name in params and name not in spec.template.params and not any(loc == p[0] for p in problems):
            try:
                params[name].check(spec.workload.precision if name == "precision" else spec.tech)
            except TemplateError as err:
                problems.append((loc, f"{err} (for the {kind} template)"))
    if problems or not tech_ok:
        return
    first = {d.name: d.first_value() for d in dims}
    point = {**_implied_params(spec, set(params)), **first}
    try:
        template.instantiate(point)
    except TemplateError as err:
        problems.append(
            (_template_error_loc(spec, err.param), f"{err} (at the first grid point: {_show_point(first)})")
        )


def _template_error_loc(spec: Spec, param: str | None) -> Loc:
    if param is not None and param in spec.template.params:
        return ("template", "params", param)
    if param == "tech":
        return ("tech",)
    if param == "precision":
        return ("workload", "precision")
    return ("template", "params") if spec.template.params else ("template",)


def _show_point(point: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items()) or "all defaults"
