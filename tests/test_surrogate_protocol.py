"""The three surrogate families satisfy the one ``Surrogate`` protocol, and the learned target is one pair."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from surrogates.contract.model import ContractSurrogate
from surrogates.layer.model import LayerSurrogate
from surrogates.learning import from_target, to_target
from surrogates.protocol import SURROGATE_CLASSES, Surrogate
from surrogates.systolic.model import SurrogateModel

METHODS = [name for name, value in vars(Surrogate).items() if not name.startswith("_") and callable(value)]
METHODS += [name for name, value in vars(Surrogate).items() if isinstance(value, classmethod)]
FIELDS = list(Surrogate.__annotations__)


def unfitted(cls: type) -> Surrogate:
    """An instance of each family without fitting one (the protocol is about shape, not numbers)."""
    if cls is SurrogateModel:
        return SurrogateModel("gb", None, None)
    if cls is ContractSurrogate:
        return ContractSurrogate("rf", "systolic", [], None, {})
    return LayerSurrogate("rf", "systolic", None, {})


def test_every_family_is_listed():
    assert set(SURROGATE_CLASSES) == {SurrogateModel, ContractSurrogate, LayerSurrogate}
    assert set(METHODS) == {"fit", "predict_frame", "predict_designs", "save", "check_schema"}
    assert set(FIELDS) == {"kind", "level", "schema", "versions", "trained_on", "metrics"}


@pytest.mark.parametrize("cls", SURROGATE_CLASSES, ids=lambda cls: cls.__name__)
def test_family_satisfies_the_protocol(cls):
    assert isinstance(unfitted(cls), Surrogate)
    assert set(FIELDS) <= {f.name for f in dataclasses.fields(cls)}
    assert isinstance(inspect.getattr_static(cls, "fit"), classmethod)
    for name in METHODS:
        wanted = inspect.signature(getattr(Surrogate, name)).parameters
        given = inspect.signature(getattr(cls, name)).parameters
        assert list(given)[: len(wanted)] == list(wanted), f"{cls.__name__}.{name} takes {list(given)}"
        for extra in list(given)[len(wanted) :]:
            assert given[extra].default is not inspect.Parameter.empty, f"{cls.__name__}.{name}: {extra} is required"


def test_the_learned_target_inverts_and_keeps_the_two_old_forms():
    """One pair for every family: with offset 1 it is log((v + 1) / (b + 1)) (per op and per layer), with
    offset 0 the contract's log(v / b) with 0 where both are 0; both forms agree bit for bit with the old code."""
    rng = np.random.default_rng(3)
    value = np.concatenate([[0.0, 0.0, 1.0, np.nan], rng.lognormal(5, 4, 200)])
    base = np.concatenate([[0.0, 3.0, 0.0, 2.0], rng.lognormal(5, 4, 200)])
    assert np.array_equal(to_target(value, base), np.log((value + 1.0) / (base + 1.0)), equal_nan=True)
    ratio = to_target(value, base)
    old_inverse = np.maximum(np.exp(ratio) * (base + 1.0) - 1.0, 0.0)
    assert np.array_equal(from_target(ratio, base), old_inverse, equal_nan=True)
    assert to_target(0.0, 0.0, offset=0.0) == 0.0
    assert np.isfinite(to_target(1.0, 0.0, offset=0.0))
    fine = np.isfinite(value) & (value > 0) & (base > 0)
    assert np.allclose(from_target(to_target(value, base, 0.0), base, 0.0)[fine], value[fine], rtol=1e-12)
