"""What a spec may say about its evaluator: the ``evaluator:`` names and each one's ``evaluator_options``.

Kept apart from the evaluator registry (``dse.evaluators``, which builds the evaluators and so sits
above the surrogates) so that the spec's checks and the hybrid's screening loop read the same option
dataclasses from below: an option is declared once, here, and checked by one function.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dse.errors import UserError


@dataclass(frozen=True)
class AnalyticalOptions:
    """``evaluator: analytical`` (every point mapped and evaluated exactly) takes no options."""


@dataclass(frozen=True)
class SurrogateOptions:
    """``evaluator: surrogate`` takes no options: the trained model is the spec's ``surrogate:`` file."""


@dataclass(frozen=True)
class HybridOptions:
    """``evaluator: hybrid``: the knobs of its screening loop (``surrogates.explorer.screening.HybridSweep``).

    ``initial_fraction`` of the candidates (at least ``initial_min``) is evaluated exactly first; each
    round evaluates up to ``batch_fraction`` more; exact evaluations stop at ``max_exact_fraction``.
    ``kappa`` scales the forest's spread into the optimistic bound; ``miss_quantile`` of the forest's
    pessimistic misses so far widens it. ``explore_share`` of each round goes to the least sure promising
    candidates (None: 0.25 on the layer basis, 0 otherwise). ``trees``: the screening forest's size.
    """

    initial_fraction: float = 0.05
    initial_min: int = 8
    batch_fraction: float = 0.02
    max_exact_fraction: float = 0.2
    kappa: float = 1.0
    miss_quantile: float = 0.9
    explore_share: float | None = None
    trees: int = 48


EvaluatorOptions = AnalyticalOptions | SurrogateOptions | HybridOptions

# the spec's ``evaluator:`` name -> its options; ``dse.evaluators`` pairs each name with its factory
EVALUATOR_OPTIONS: dict[str, type[EvaluatorOptions]] = {
    "analytical": AnalyticalOptions,
    "surrogate": SurrogateOptions,
    "hybrid": HybridOptions,
}


def evaluator_option_names(evaluator: str) -> dict[str, str]:
    """Option name -> 'type, default value' for one evaluator (what its ``evaluator_options`` take)."""
    options_class = EVALUATOR_OPTIONS[evaluator]
    hints = typing.get_type_hints(options_class)
    return {f.name: f"{_type_name(hints[f.name])}, default {f.default!r}" for f in dataclasses.fields(options_class)}


def parse_evaluator_options(evaluator: str, raw: Mapping[str, Any] | None) -> EvaluatorOptions:
    """The evaluator's options dataclass from the spec's ``evaluator_options``.

    An unknown option or a value of the wrong type is one UserError located at ``evaluator_options.<name>``
    listing what the evaluator takes (an integer stands for a float; true/false never for a number)."""
    options_class = EVALUATOR_OPTIONS[evaluator]
    hints = typing.get_type_hints(options_class)
    values: dict[str, Any] = {}
    for name, value in dict(raw or {}).items():
        if name not in hints:
            listing = "; ".join(f"{k} ({v})" for k, v in evaluator_option_names(evaluator).items()) or "none"
            raise UserError(
                f"evaluator {evaluator} has no option {name!r}; its options: {listing}",
                where=f"evaluator_options.{name}",
            )
        if not _fits(value, hints[name]):
            raise UserError(
                f"evaluator option {name}={value!r} must be {_type_name(hints[name])}",
                where=f"evaluator_options.{name}",
            )
        values[name] = float(value) if _takes_float(hints[name]) and value is not None else value
    return options_class(**values)


_UNION_TYPE = type(int | None)


def _allowed_types(hint: Any) -> tuple[type, ...]:
    return tuple(typing.get_args(hint)) if typing.get_origin(hint) in (typing.Union, _UNION_TYPE) else (hint,)


def _takes_float(hint: Any) -> bool:
    return float in _allowed_types(hint)


def _fits(value: Any, hint: Any) -> bool:
    """True when ``value`` may stand for a field annotated ``hint`` (int for float; a bool only for bool)."""
    for allowed in _allowed_types(hint):
        if allowed is type(None) and value is None:
            return True
        if isinstance(value, bool):
            if allowed is bool:
                return True
            continue
        if allowed is float and isinstance(value, (int, float)):
            return True
        if allowed is not type(None) and isinstance(value, allowed):
            return True
    return False


def _type_name(hint: Any) -> str:
    names = [("null" if t is type(None) else t.__name__) for t in _allowed_types(hint)]
    return " or ".join(n if n == "null" else f"{'an' if n[0] in 'aeiou' else 'a'} {n}" for n in names)
