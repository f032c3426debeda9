"""The RDU closed form for surrogates: the bound's first covers realised, between the bound and the unfused plan."""

from __future__ import annotations

import pytest

from dse.registry import family
from dse.zoo.transformers import gpt2
from hwmodels.rdu.cost import plan_cost
from hwmodels.rdu.model import RduModel
from mappers.rdu.cover import RduCoverMapper
from mappers.rdu.exact import cover_plan, solve_exact
from mappers.rdu.heuristics import unfused_plan
from mappers.rdu.problem import build_problem
from surrogates.contract.features import ClosedForm
from tests.test_rdu_node import rdu


@pytest.mark.parametrize("point", [dict(sram_mb=64), dict(pcus=260, pmus=260), dict(hbm_gbps=4000)])
def test_cover_plan_lies_between_the_bound_and_the_unfused_plan_and_above_the_exact_plan(point) -> None:
    problem = build_problem(gpt2(elem_bytes=2, phase="decode", num_layers=1, kv_len=256), rdu(**point), "latency")
    cover = cover_plan(problem)
    exact = solve_exact(problem, max_steps=4)
    unfused = plan_cost(problem, unfused_plan(problem)).latency_ps
    assert cover.cost.feasible and cover.cost.latency_ps == plan_cost(problem, cover.plan).latency_ps
    # the exact mapper starts from these covers, so it is never slower; its refined bound is never weaker
    assert cover.lower_ps <= exact.lower_ps <= exact.cost.latency_ps <= cover.cost.latency_ps <= unfused
    # without the CP-SAT placement the same covers are never faster
    assert cover_plan(problem, place_within=-1.0).cost.latency_ps >= cover.cost.latency_ps


def test_closed_form_reports_its_plan_and_the_proven_bound_deterministically() -> None:
    graph = gpt2(elem_bytes=2, phase="decode", num_layers=1, kv_len=256)
    arch = rdu(pcus=260, pmus=260, sram_mb=130)
    rdu_family = family("rdu")
    assert rdu_family.mappers[rdu_family.surrogates.closed_form] is RduCoverMapper
    mapping = RduCoverMapper().map(graph, arch)
    metrics = RduModel().evaluate(mapping, arch)
    solver = mapping.solver
    assert 0 < solver["bound"] <= solver["value"] == solver["latency_ps"]
    assert metrics["latency_ms"] == pytest.approx(solver["value"] * 1e-9, rel=1e-12)
    again = ClosedForm(graph, "rdu", {"preset": "sn40l", "precision": "bf16"})(
        {"pcus": 260, "pmus": 260, "sram_mb": 130}
    )
    assert again.values == metrics.values
