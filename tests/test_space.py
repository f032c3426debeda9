"""The design space: grids in spec order, deterministic type-correct samples, canonical points."""

from __future__ import annotations

import importlib.util
import itertools
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from dse.space import DesignSpace, Dimension, SpaceError, dimension_from_spec
from templates.base import Param, Template

INT = Param("n", "int", 1, low=1)
FLOAT = Param("x", "float", 1.0, low=0.001)
CHOICE = Param("mode", "str", "a", choices=("a", "b", "c"))
FLAG = Param("flag", "bool", False)


def dim(raw, param: Param = INT, name: str | None = None) -> Dimension:
    return dimension_from_spec(name or param.name, raw, param)


# ---------------------------------------------------------------------------------------------- grid values


def test_int_log_range_is_powers_of_two_including_the_top() -> None:
    d = dim({"log_range": [64, 4096]})
    assert d.grid_values() == (64, 128, 256, 512, 1024, 2048, 4096)
    assert all(type(v) is int for v in d.grid_values())
    assert dim({"log_range": [64, 1000]}).grid_values() == (64, 128, 256, 512)  # capped, 1000 not reached
    assert dim({"log_range": [3, 24]}).grid_values() == (3, 6, 12, 24)


def test_int_log_range_with_num_is_geometric_and_distinct() -> None:
    assert dim({"log_range": [1, 1000], "num": 4}).grid_values() == (1, 10, 100, 1000)
    assert dim({"log_range": [1, 3], "num": 10}).grid_values() == (1, 2, 3)  # rounding merges repeats


def test_int_linear_range_steps() -> None:
    assert dim({"range": [1, 5]}).grid_values() == (1, 2, 3, 4, 5)
    assert dim({"range": [8, 64], "step": 8}).grid_values() == (8, 16, 24, 32, 40, 48, 56, 64)
    assert dim({"range": [8, 60], "step": 8}).grid_values() == (8, 16, 24, 32, 40, 48, 56)
    assert dim({"range": [0, 100], "num": 5}, Param("n", "int", 0)).grid_values() == (0, 25, 50, 75, 100)


def test_float_ranges() -> None:
    assert dim({"range": [0.1, 0.5], "step": 0.1}, FLOAT).grid_values() == (0.1, 0.2, 0.3, 0.4, 0.5)
    assert dim({"range": [1, 2], "num": 3}, FLOAT).grid_values() == (1.0, 1.5, 2.0)
    assert dim({"log_range": [0.5, 4]}, FLOAT).grid_values() == (0.5, 1.0, 2.0, 4.0)
    assert dim({"log_range": [1, 100], "num": 3}, FLOAT).grid_values() == pytest.approx((1.0, 10.0, 100.0))
    no_grid = dim({"range": [1, 2]}, FLOAT)
    assert not no_grid.has_grid
    with pytest.raises(ValueError, match="needs `num` or `step`"):
        no_grid.grid_values()


def test_scalars_and_lists_are_typed_by_the_param() -> None:
    assert dim(32).values == (32,) and dim(32).is_fixed
    assert dim(32.0).values == (32,) and type(dim(32.0).values[0]) is int
    assert dim([1, 2], FLOAT).values == (1.0, 2.0) and all(type(v) is float for v in dim([1, 2], FLOAT).values)
    assert dim(["b", "a"], CHOICE).grid_values() == ("b", "a")  # spec order kept
    assert dim([True, False], FLAG).values == (True, False)
    assert not dim([1, 2]).is_fixed and not dim({"range": [1, 2]}).is_fixed


@pytest.mark.parametrize(
    ("raw", "param", "loc", "fragment"),
    [
        (None, INT, (), "has no value"),
        ([], INT, (), "empty list"),
        ([1, 1], INT, (1,), "listed twice"),
        ([1, "x"], INT, (1,), "must be a int"),
        ([1, {"a": 1}], INT, (1,), "an int value is needed"),
        (["a", "z"], CHOICE, (1,), "'z' is not allowed; choose one of: a, b, c"),
        (0, INT, (), "below the minimum 1"),
        ({"range": [5, 1]}, INT, ("range",), "is not below upper bound"),
        ({"range": [1, 5], "num": 3, "step": 1}, INT, ("num",), "either `step` or `num`"),
        ({"range": [1, 5], "step": -1}, INT, ("step",), "step must be a number > 0"),
        ({"log_range": [-1.0, 5]}, Param("x", "float", 1.0), ("log_range", 0), "must be > 0"),
        ({"range": [1, 5]}, FLAG, ("range",), "needs a numeric parameter"),
        ({"ranges": [1, 5]}, INT, ("ranges",), "unknown key 'ranges'"),
        ({"step": 2}, INT, (), "exactly one of"),
        ({"range": "1..5"}, INT, ("range",), "list of two numbers"),
        ({"range": [1, True]}, INT, ("range", 1), "is not a number"),
    ],
)
def test_bad_entries_say_where_inside_the_entry(raw, param: Param, loc: tuple, fragment: str) -> None:
    with pytest.raises(SpaceError) as info:
        dimension_from_spec(param.name, raw, param)
    assert info.value.loc == loc
    assert fragment in info.value.message


# ---------------------------------------------------------------------------------------------- the space


def space() -> DesignSpace:
    return DesignSpace(
        (
            dim([16, 32], name="rows"),
            dim(["a", "b", "c"], CHOICE),
            dim(25.6, FLOAT, name="bw"),
            dim({"log_range": [64, 256]}, name="sram"),
        )
    )


def test_grid_size_and_order() -> None:
    s = space()
    assert s.grid_size() == 2 * 3 * 1 * 3
    points = list(s.grid())
    assert len(points) == s.grid_size() and len({tuple(p.items()) for p in points}) == len(points)
    assert points[0] == {"rows": 16, "mode": "a", "bw": 25.6, "sram": 64}
    assert points[1] == {"rows": 16, "mode": "a", "bw": 25.6, "sram": 128}  # last dimension fastest
    assert points[3] == {"rows": 16, "mode": "b", "bw": 25.6, "sram": 64}
    assert points[-1] == {"rows": 32, "mode": "c", "bw": 25.6, "sram": 256}
    assert all(list(p) == ["rows", "mode", "bw", "sram"] for p in points)
    expected = [dict(zip(s.names, c)) for c in itertools.product([16, 32], "abc", [25.6], [64, 128, 256])]
    assert points == expected


def test_free_and_fixed() -> None:
    s = space()
    assert [d.name for d in s.free] == ["rows", "mode", "sram"]
    assert s.fixed == {"bw": 25.6}
    assert s.first_point() == {"rows": 16, "mode": "a", "bw": 25.6, "sram": 64}


def test_sampling_is_deterministic_and_type_correct() -> None:
    s = DesignSpace(
        (
            dim({"range": [1, 100]}, name="i"),
            dim({"range": [8, 64], "step": 8}, name="stepped"),
            dim({"log_range": [64, 4096]}, name="log_i"),
            dim({"range": [0.5, 2.0]}, FLOAT, name="f"),
            dim({"log_range": [0.01, 100]}, FLOAT, name="log_f"),
            dim(["a", "b"], CHOICE),
            dim([True, False], FLAG),
            dim(3, name="fixed"),
        )
    )
    first, again, other = s.sample(200, seed=7), s.sample(200, seed=7), s.sample(200, seed=8)
    assert first == again and first != other
    for p in first:
        assert list(p) == list(s.names)
        assert type(p["i"]) is int and 1 <= p["i"] <= 100
        assert type(p["stepped"]) is int and p["stepped"] % 8 == 0 and 8 <= p["stepped"] <= 64
        assert type(p["log_i"]) is int and 64 <= p["log_i"] <= 4096
        assert type(p["f"]) is float and 0.5 <= p["f"] <= 2.0
        assert type(p["log_f"]) is float and 0.01 <= p["log_f"] <= 100
        assert p["mode"] in ("a", "b") and type(p["flag"]) is bool and p["fixed"] == 3
        assert s.contains(p) and s.canonical(p) == p
    # log-uniform: about half the samples fall below the geometric midpoint
    below = sum(p["log_f"] < 1.0 for p in first) / len(first)
    assert 0.35 < below < 0.65
    assert {p["stepped"] for p in first} == set(range(8, 65, 8))


def test_log_int_sampling_reaches_both_ends() -> None:
    d = dim({"log_range": [1, 4]})
    rng = np.random.default_rng(0)
    assert {d.sample(rng) for _ in range(400)} == {1, 2, 3, 4}


def test_discrete_samples_have_no_duplicates() -> None:
    s = space()  # 2 * 3 * (64..256 sampled as every int: 193) = 1158 points
    assert s.sample_space_size() == 2 * 3 * 193
    for n in (10, 600, 1158):
        points = s.sample(n, seed=1)
        assert len(points) == n
        assert len({tuple(p.values()) for p in points}) == n
    assert len(s.sample(5000, seed=1)) == 1158  # the whole space once, no more
    small = DesignSpace((dim([1, 2, 3], name="a"), dim(["a", "b"], CHOICE)))
    points = small.sample(6, seed=0)
    assert sorted(tuple(p.values()) for p in points) == sorted(itertools.product([1, 2, 3], "ab"))
    assert small.sample(6, seed=0) == points and small.sample(6, seed=5) != points
    assert small.sample(0, seed=0) == []


def test_all_fixed_space_samples_its_one_point() -> None:
    s = DesignSpace((dim(4, name="a"), dim("b", CHOICE)))
    assert s.grid_size() == 1 and s.free == ()
    assert s.sample(3, seed=0) == [{"a": 4, "mode": "b"}]


def test_canonical_coerces_orders_and_fills_fixed() -> None:
    s = space()
    point = {"sram": np.int64(128), "mode": "b", "rows": 32.0}
    canon = s.canonical(point)
    assert canon == {"rows": 32, "mode": "b", "bw": 25.6, "sram": 128}
    assert list(canon) == ["rows", "mode", "bw", "sram"]
    assert type(canon["rows"]) is int and type(canon["sram"]) is int and type(canon["bw"]) is float
    with pytest.raises(ValueError, match="unknown parameter"):
        s.canonical({**canon, "cols": 3})
    with pytest.raises(ValueError, match="no value for 'rows'"):
        s.canonical({"mode": "a", "sram": 64})
    with pytest.raises(ValueError, match="rows: expected an int"):
        s.canonical({**canon, "rows": 32.5})
    assert type(DesignSpace((dim({"range": [1, 2]}, FLOAT, name="f"),)).canonical({"f": np.float32(1.5)})["f"]) is float


def test_contains() -> None:
    s = space()
    assert s.contains({"rows": 16, "mode": "a", "bw": 25.6, "sram": 100})  # inside the log range
    assert s.contains({"rows": 16, "mode": "a", "sram": 100})  # fixed values may be left out
    assert not s.contains({"rows": 24, "mode": "a", "sram": 100})  # not a listed value
    assert not s.contains({"rows": 16, "mode": "a", "sram": 300})  # above the range
    assert not s.contains({"rows": 16, "mode": "a", "sram": 100.5})  # not an int
    assert not s.contains({"rows": 16, "mode": "a", "bw": 12.8, "sram": 100})  # fixed value differs
    assert not s.contains({"rows": 16, "sram": 100})  # a free value missing
    assert not s.contains({"rows": 16, "mode": "a", "sram": 100, "other": 1})
    stepped = DesignSpace((dim({"range": [8, 64], "step": 8}, name="r"),))
    assert stepped.contains({"r": 24}) and not stepped.contains({"r": 25})


def test_grid_of_a_large_space_is_lazy() -> None:
    s = DesignSpace(tuple(dim({"range": [1, 100]}, name=f"p{i}") for i in range(6)))
    assert s.grid_size() == 100**6
    assert next(iter(s.grid())) == {f"p{i}": 1 for i in range(6)}
    assert len(s.sample(50, seed=0)) == 50
    assert math.isclose(s.sample_space_size(), 1e12)


# ---------------------------------------------------------------------------------------------- from a spec

ARCH_EXAMPLE = Path(__file__).resolve().parent / "specs" / "architecture_example.yaml"


class ArrayTemplate(Template):
    """Stand-in with the systolic parameters the ARCHITECTURE.md example names."""

    kind = "array"

    def params(self) -> list[Param]:
        return [
            Param("rows", "int", 32, low=1),
            Param("cols", "int", 32, low=1),
            Param("dataflow", "str", "os", choices=("ws", "os", "is")),
            Param("sram_kib", "int", None, low=1),
            Param("dram_gbps", "float", 25.6),
            Param("freq_mhz", "float", 1000.0),
        ]

    def instantiate(self, point):  # pragma: no cover - the space never instantiates
        raise NotImplementedError


def _check_architecture_space(s: DesignSpace) -> None:
    assert s.names == ("rows", "cols", "dataflow", "sram_kib", "dram_gbps", "freq_mhz")
    assert s.grid_size() == 4 * 4 * 3 * 7 == 336
    assert [d.name for d in s.free] == ["rows", "cols", "dataflow", "sram_kib"]
    assert s.fixed == {"dram_gbps": 25.6, "freq_mhz": 800.0} and type(s.fixed["freq_mhz"]) is float
    assert s.dim("sram_kib").grid_values()[0] == 64 and s.dim("sram_kib").grid_values()[-1] == 4096
    points = list(s.grid())
    assert len(points) == 336 and len({tuple(p.values()) for p in points}) == 336
    assert points[0] == {"rows": 16, "cols": 16, "dataflow": "ws", "sram_kib": 64, "dram_gbps": 25.6, "freq_mhz": 800.0}
    assert s.sample(20, seed=0) == s.sample(20, seed=0)


def test_architecture_example_space(monkeypatch: pytest.MonkeyPatch) -> None:
    from dse import registry

    fam = registry.Family(
        template=ArrayTemplate, mappers={"none": object}, hwmodel=object, surrogates=registry.SurrogateBasis("none")
    )
    monkeypatch.setattr(registry, "families", lambda: {"systolic": fam})
    data = yaml.safe_load(ARCH_EXAMPLE.read_text())
    spec = SimpleNamespace(template=SimpleNamespace(kind="systolic", params=data["template"]["params"]))
    _check_architecture_space(DesignSpace.from_spec(spec))


@pytest.mark.skipif(
    any(importlib.util.find_spec(f"{room}.systolic") is None for room in ("templates", "mappers", "hwmodels")),
    reason="the systolic family (template/mapper/model) is not all there",
)
def test_architecture_example_space_with_the_real_template() -> None:
    from dse.spec import load_spec

    space = DesignSpace.from_spec(load_spec(ARCH_EXAMPLE))
    assert space.grid_size() == 336
    assert [d.name for d in space.free] == ["rows", "cols", "dataflow", "sram_kib"]
