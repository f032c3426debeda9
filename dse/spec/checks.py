"""Cross-field checks: everything the schema cannot say about a spec.

Names against the registries and catalogs (template kinds, mappers and their options, metrics,
technologies, GPUs, zoo models), model files, ranges against the template's parameters, and one
instantiation of the first grid point to catch the template's cross-field rules. Each problem is
a (field location, message) pair; the loader reports the first in the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dse import registry, zoo
from dse.errors import UserError
from dse.evaluator_options import parse_evaluator_options
from dse.graph import PRECISION_BYTES
from dse.space import SCALAR_TYPES, SpaceError, dimension_from_spec
from dse.spec.messages import Loc, describe, parse_field_path
from dse.spec.schema import (
    MODEL_FILE_SUFFIXES,
    ONNX_MAX_DETECTIONS,
    ONNX_OPTIONS,
    ONNX_SYMBOLIC_DIMS,
    Spec,
    implied_params,
    parse_objective,
)
from dse.workload import confined_path
from hwmodels.accuracy.data import ACCURACY_METRICS
from hwmodels.base import METRICS
from hwmodels.catalogs.actions import ActionTableError, check_price_name
from hwmodels.catalogs.gpu import UnknownGpuError, canonical_baseline_name
from templates.base import Template, TemplateError


def _tech_problem(tech: Any) -> str | None:
    """None when ``tech`` names a catalog technology (aliases like '28nm' included) or a published
    per-action table (``hwmodels.catalogs.actions``), else the message."""
    try:
        check_price_name(tech)
        return None
    except ActionTableError as err:
        return str(err)


def _baseline_problem(name: str) -> str | None:
    """None when ``name`` is a GPU of the catalog (aliases like h100, a100 included) or a node preset
    (dgx_h100, dgx_a100), else the message."""
    try:
        canonical_baseline_name(name)
    except UnknownGpuError as err:
        return f"unknown baseline GPU {name!r}; {err.message.split('; ', 1)[1]}"
    return None


def _zoo_models() -> dict[str, Any] | None:
    """The zoo's models by name, or None when the zoo does not list them (then any name is passed on)."""
    models = getattr(zoo, "MODELS", None)
    return dict(models) if isinstance(models, dict) and models else None


def check_semantics(spec: Spec) -> list[tuple[Loc, str]]:
    """Everything the schema cannot say: names against registries, files, ranges, template rules."""
    problems: list[tuple[Loc, str]] = []
    if not spec.name.strip():
        problems.append((("name",), "is blank; expected a non-empty string naming the exploration"))
    _check_workload(spec, problems)
    _check_workload_data(spec, problems)
    tech_problem = _tech_problem(spec.tech)
    if tech_problem:
        problems.append((("tech",), tech_problem))
    _check_search(spec, problems)
    _check_surrogate(spec, problems)
    _check_evaluator_options(spec, problems)
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
    if w.models is not None:
        _check_workload_models(spec, problems)
        return
    if w.model is None:
        problems.append(
            (
                ("workload", "model"),
                "required key is missing; expected a zoo model name, an .onnx path or a SCALE-Sim .csv path "
                "(or workload.models: a list of {model, rate})",
            )
        )
        return
    model = (w.model or "").strip()
    suffix = Path(model).suffix.lower()
    _check_model_options(w.options, suffix, problems)
    if not model:
        problems.append((("workload", "model"), "is blank; give a zoo model name, an .onnx path or a .csv path"))
        return
    if suffix in MODEL_FILE_SUFFIXES:
        try:
            path = confined_path(model, spec.base_dir)
        except UserError as err:
            problems.append((("workload", "model"), err.message))
            return
        if not path.is_file():
            problems.append(
                (
                    ("workload", "model"),
                    f"model file {model!r} not found (looked for {path}); give an existing .onnx or .csv file "
                    "(relative paths are relative to the spec's folder) or a zoo model name",
                )
            )
        else:
            w.attach_model_file(path)
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


def _check_workload_data(spec: Spec, problems: list[tuple[Loc, str]]) -> None:
    """``workload.data``: an .npz next to a trained .onnx model, for a family with an accuracy model; accuracy
    metrics need it. Its content (arrays, shapes, labels against the model) is checked where it is read, by the
    family's accuracy model when the evaluator is built (``dse.session.build_evaluator``)."""
    w = spec.workload
    # a blank objective names nothing here: _check_objectives reports it
    named_objectives = [o.split()[-1] for o in spec.objectives if o.split()]
    named = [m for m in [*named_objectives, *spec.constraints] if m in ACCURACY_METRICS]
    if w.data is None:
        if named:
            loc: Loc = ("objectives",) if any(named[0] in o for o in spec.objectives) else ("constraints", named[0])
            problems.append((loc, f"{named[0]} needs workload.data (an .npz with x and y) and a trained .onnx model"))
        return
    loc = ("workload", "data")
    if w.source != "onnx":
        problems.append(
            (
                loc,
                "accuracy data needs a trained .onnx workload.model; a zoo model's weights are seeded, so its "
                "accuracy would not be meaningful",
            )
        )
        return
    with_accuracy = [kind for kind, fam in registry.families().items() if fam.accuracy is not None]
    if spec.template.kind not in with_accuracy:
        problems.append(
            (loc, f"accuracy is emulated for the {', '.join(with_accuracy)} templates, not {spec.template.kind}")
        )
        return
    try:
        path = confined_path(w.data, spec.base_dir)
    except UserError as err:
        problems.append((loc, err.message))
        return
    if not path.is_file():
        problems.append((loc, f"data file {w.data!r} not found (looked for {path}); give an .npz with arrays x and y"))
        return
    w.attach_data_file(path)


def _check_workload_models(spec: Spec, problems: list[tuple[Loc, str]]) -> None:
    """``workload.models``: zoo models only, each named once, with the options its model takes."""
    zoo_models = _zoo_models() or {}
    seen: set[str] = set()
    for i, entry in enumerate(spec.workload.models or ()):
        loc: Loc = ("workload", "models", i, "model")
        if entry.model not in zoo_models:
            problems.append((loc, f"{entry.model!r} is not a zoo model; choose one of: {', '.join(zoo_models)}"))
            continue
        if entry.model in seen:
            problems.append((loc, f"{entry.model!r} is listed twice; list each model once"))
        seen.add(entry.model)
        accepted = tuple(getattr(zoo_models[entry.model], "options", ()) or ())
        for key in entry.options:
            if key not in accepted or not isinstance(entry.options[key], SCALAR_TYPES):
                takes = ", ".join(o for o in accepted if o not in ("batch", "precision")) or "no options"
                problems.append(((*loc[:-1], key), f"{entry.model} does not take option {key!r}; it takes: {takes}"))
    if spec.workload.options:
        problems.append((("workload", next(iter(spec.workload.options))), "with models, give options per model"))


def _check_model_options(options: dict[str, Any], suffix: str, problems: list[tuple[Loc, str]]) -> None:
    """Zoo models take scalar options; ONNX files ``symbolic_dims: {name: N}`` and ``max_detections: N``;
    SCALE-Sim CSVs none."""
    for key, value in options.items():
        loc: Loc = ("workload", key)
        if suffix == ".csv":
            problems.append((loc, f"a SCALE-Sim topology takes no model options; remove {key}"))
        elif suffix == ".onnx" and key not in ONNX_OPTIONS:
            problems.append(
                (
                    loc,
                    f"ONNX models take only {ONNX_SYMBOLIC_DIMS}: {{name: N}} and {ONNX_MAX_DETECTIONS}: N; "
                    f"remove {key}",
                )
            )
        elif key == ONNX_MAX_DETECTIONS:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                problems.append((loc, f"got {describe(value)}; expected an integer >= 1 (the most boxes kept)"))
        elif suffix == ".onnx":
            if not isinstance(value, dict):
                problems.append((loc, f"got {describe(value)}; expected a mapping of input dimension name to N"))
                continue
            for dim_name, size in value.items():
                if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                    problems.append(((*loc, dim_name), f"got {describe(size)}; expected an integer >= 1"))
        elif not isinstance(value, SCALAR_TYPES):
            problems.append((loc, f"model option {key} is {describe(value)}; give a single value (number or text)"))


def _check_surrogate(spec: Spec, problems: list[tuple[Loc, str]]) -> None:
    """A named surrogate model file must exist (``evaluator: surrogate`` without one is refused at run time)."""
    if spec.surrogate is not None:
        try:
            confined_path(spec.surrogate, spec.base_dir, "surrogate file")
        except UserError as err:
            problems.append((("surrogate",), err.message))
            return
    path = spec.surrogate_path
    if path is not None and not path.is_file():
        problems.append(
            (
                ("surrogate",),
                f"model file {spec.surrogate!r} not found (looked for {path}); give a file written "
                "by `dse surrogate train` (relative paths are relative to the spec's folder)",
            )
        )


def _check_evaluator_options(spec: Spec, problems: list[tuple[Loc, str]]) -> None:
    """``evaluator_options`` against the named evaluator's options dataclass (``dse.evaluator_options``)."""
    try:
        parse_evaluator_options(spec.evaluator, spec.evaluator_options)
    except UserError as err:
        problems.append((parse_field_path(err.where or "evaluator_options"), err.message))


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
        objective, problem = parse_objective(text)
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
    elif spec.template.mapper_options:
        _check_mapper_options(spec, spec.template.mapper or family.default_mapper, problems)
    template: Template = family.template()
    params = {p.name: p for p in template.params()}
    dims = []
    for name, raw in spec.template.params.items():
        loc: Loc = ("template", "params", name)
        if name not in params:
            problems.append((loc, f"{name!r} is not a parameter of {kind}; its parameters are: {', '.join(params)}"))
            continue
        if name == "precision" and not family.arch_precision:
            problems.append((loc, "precision is the workload's; set workload.precision instead"))
            continue
        if name == "precision" and "precision" in spec.workload.model_fields_set:
            problems.append((loc, "precision is also set as workload.precision; give it in one place"))
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
    point = {**implied_params(spec, set(params)), **first}
    try:
        template.instantiate(point)
    except TemplateError as err:
        problems.append(
            (_template_error_loc(spec, err.param), f"{err} (at the first grid point: {_show_point(first)})")
        )


def _check_mapper_options(spec: Spec, mapper: str, problems: list[tuple[Loc, str]]) -> None:
    """Option names against the mapper's own, then (all names known) the values, by building the mapper once."""
    kind = spec.template.kind
    allowed = registry.mapper_option_names(kind, mapper)
    all_known = True
    for name, value in spec.template.mapper_options.items():
        loc: Loc = ("template", "mapper_options", name)
        if name not in allowed:
            listing = ", ".join(f"{option} ({about})" for option, about in allowed.items()) or "none"
            problems.append(
                (loc, f"{name!r} is not an option of the {mapper} mapper of {kind}; its options: {listing}")
            )
            all_known = False
        elif not isinstance(value, SCALAR_TYPES):
            problems.append((loc, f"got {describe(value)}; give a single value (a number, text or true/false)"))
            all_known = False
    if not all_known:
        return
    try:
        registry.make_mapper(kind, mapper, spec.template.mapper_options)
    except UserError as err:
        where = err.where or ""
        loc = parse_field_path(where) if where.startswith("template.mapper_options") else ("template", "mapper_options")
        problems.append((loc, err.message))


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
