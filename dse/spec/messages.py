"""Spec mistakes as one line each: ``<file>:<line>: <field.path>: <what was wrong>; <what is allowed>``.

The line comes from walking the composed YAML node tree along the offending field's path;
pydantic's validation errors are reworded into the same form here.
"""

from __future__ import annotations

import re
import typing
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ValidationError

from dse.errors import UserError

Loc = tuple[str | int, ...]


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


# ---------------------------------------------------------------------------------------------- locations


def parse_field_path(field_path: str) -> Loc:
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


def format_loc(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def line_of(root: yaml.Node | None, loc: Loc) -> tuple[int | None, str]:
    """The 1-based line for ``loc`` and the field path to show.

    Walks the node tree as far as the path exists: a scalar reports its own line, a
    mapping or list the line of the key that introduces it, and a missing key the
    line of its parent's key (where it should have been written).
    """
    if root is None:
        return None, format_loc(loc)
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
                return line, format_loc(tuple(shown))
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
    return line, format_loc(tuple(shown))


def first_error(problems: list[tuple[Loc, str]], root: yaml.Node, shown: str) -> SpecError:
    """The earliest problem in the file, with a count of the rest."""
    located = []
    for order, (loc, message) in enumerate(problems):
        line, field = line_of(root, loc)
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


def describe(value: Any) -> str:
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


def _field_at(top: type[BaseModel], loc: Loc) -> tuple[type[BaseModel] | None, Any]:
    """The model that owns the last field of ``loc`` and that field's FieldInfo (None when not a model field)."""
    model: Any = top
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


def _allowed(top: type[BaseModel], loc: Loc) -> str:
    owner, info = _field_at(top, loc)
    if info is None:
        return ""
    choices = typing.get_args(info.annotation) if typing.get_origin(info.annotation) is Literal else ()
    if choices:
        return "choose one of: " + ", ".join(map(str, choices))
    return f"expected {info.description}" if info.description else ""


def _message_for(top: type[BaseModel], error: dict) -> str:
    kind, loc, value = error["type"], tuple(error["loc"]), error.get("input")
    ctx = error.get("ctx") or {}
    allowed = _allowed(top, loc)
    if kind == "extra_forbidden":
        model = _submodel(top, loc[:-1])
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
        return f"got {describe(value)}{hint}; {allowed or 'expected ' + _EXPECTED[kind]}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        bound = next(iter(ctx.values()), "?")
        return f"{value!r} is too {'small' if 'greater' in kind else 'large'}; must be {op} {bound}"
    if kind in ("too_short", "string_too_short"):
        return f"is empty; {allowed or 'give at least one item'}"
    if kind == "value_error":  # a validator's own message already says what is allowed
        return str(ctx.get("error") or error["msg"]).removeprefix("Value error, ")
    return f"{error['msg']}; {allowed}" if allowed else str(error["msg"])


def _submodel(top: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    if not loc:
        return top
    _, info = _field_at(top, loc)
    if info is None:
        # a dict value (e.g. constraints.<metric>): the dict's value model
        _, parent = _field_at(top, loc[:-1])
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


def error_from_pydantic(err: ValidationError, top: type[BaseModel], root: yaml.Node, shown: str) -> SpecError:
    """The first of pydantic's errors for model ``top``, reworded and located like every other spec error."""
    problems = [(tuple(e["loc"]), _message_for(top, e)) for e in err.errors()]
    return first_error(problems, root, shown)
