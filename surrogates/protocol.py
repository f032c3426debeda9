"""One contract for the three surrogate families, and the one door to them.

``Surrogate`` is what the systolic op/design model (``surrogates.systolic.model.SurrogateModel``), the
design-level contract model (``surrogates.contract.model.ContractSurrogate``) and the layer-level contract
model (``surrogates.layer.model.LayerSurrogate``) already share, so the CLI, training and the explorer use
any of them the same way: fitted on a dataset frame, it predicts the designs of a frame and whole designs of
a graph, saves itself and, once loaded, checks its features against this code. ``fit_surrogate`` picks the
family a dataset calls for, ``load_surrogate`` reads a saved one of any family.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pandas as pd

from dse.errors import UserError
from surrogates.contract.model import ContractSurrogate, is_contract
from surrogates.layer.model import LayerSurrogate, is_layer
from surrogates.learning import read_model_file
from surrogates.systolic.model import SurrogateModel


@runtime_checkable
class Surrogate(Protocol):
    """A fitted surrogate model of any family."""

    kind: str  # the regressor kind (``learning.MODEL_KINDS``)
    level: str  # what a row is: "op", "design", "contract" or "layer"
    schema: dict[str, Any]  # the features it was fitted on, checked on load
    versions: dict[str, str]  # the library versions it was fitted with
    trained_on: list[str]  # the workloads of its training data
    metrics: dict[str, Any]  # its measured accuracy

    @classmethod
    def fit(cls, data: pd.DataFrame, kind: str, seed: int = 0) -> Surrogate:
        """Fit on a dataset frame of this family's rows."""
        ...

    def predict_frame(self, data: pd.DataFrame) -> pd.DataFrame:
        """Per-design predictions for the designs of a dataset frame (``workload``, ``design`` and metrics)."""
        ...

    def predict_designs(
        self, graph: Any, template_kind: str, points: Sequence[Mapping[str, Any]], fixed: Any, ops: Any = None
    ) -> pd.DataFrame:
        """Metrics of whole designs of ``graph``, one row per point."""
        ...

    def save(self, path: str | Path) -> Path:
        """Write the model to ``path`` (``learning.save_model``); ``load_surrogate`` reads it back."""
        ...

    def check_schema(self, where: str) -> None:
        """Refuse (UserError at ``where``) a model whose features differ from this code's."""
        ...


SURROGATE_CLASSES: tuple[type[Surrogate], ...] = (SurrogateModel, ContractSurrogate, LayerSurrogate)


def fit_surrogate(data: pd.DataFrame, kind: str, seed: int = 0, level: str = "op") -> Surrogate:
    """The surrogate a dataset calls for: the contract model for contract rows, the layer model for layer
    rows, else the systolic one (at ``level`` op or design)."""
    if is_layer(data):
        return LayerSurrogate.fit(data, kind, seed)
    if is_contract(data):
        return ContractSurrogate.fit(data, kind, seed)
    return SurrogateModel.fit(data, kind, seed, level)


def load_surrogate(path: str | Path) -> Surrogate:
    """A saved surrogate of any family, its schema checked against this code's."""
    model = read_model_file(path)
    if not isinstance(model, SURROGATE_CLASSES):
        raise UserError("is not a dse surrogate model; train one with `dse surrogate train`", where=str(path))
    model.check_schema(str(path))
    return model
