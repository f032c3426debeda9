"""RDU section mapping by bounds: the threshold bound and knapsack against enumeration, plans against brute force."""

from __future__ import annotations

import math
import random
import time

import numpy as np
import pytest

from dse.zoo import build
from dse.zoo.transformers import gpt2
from hwmodels.catalogs.rdu import LINK_ENERGY_PJ_PER_BIT
from hwmodels.rdu.cost import plan_cost
from hwmodels.rdu.model import RduModel
from hwmodels.rdu.node import link_bytes
from mappers.rdu.bruteforce import brute_force
from mappers.rdu.exact import solve_exact
from mappers.rdu.placement import place_by_gain
from mappers.rdu.problem import build_problem
from mappers.rdu.sections import RduSectionMapper, clear_cache
from mappers.rdu.threshold import ThresholdBounds, exact_section
from tests.test_rdu_node import enumerated_section_compute, random_arch, random_chain, rdu


def _problems(seed: int, count: int):
    rng = random.Random(seed)
    problems = [build_problem(random_chain(rng, rng.randint(2, 6)), random_arch(rng), "latency") for _ in range(count)]
    problems += [
        build_problem(gpt2(elem_bytes=2, phase=phase, num_layers=1, seq_len=64), rdu(pcus=p, pmus=m), "latency")
        for phase, p, m in (("prefill", 8, 64), ("decode", 16, 8), ("prefill", 128, 40))
    ]
    return problems


def test_threshold_bound_and_knapsack_agree_with_enumeration() -> None:
    """The threshold bound never exceeds a section's optimum; the knapsack finds it (or proves nothing fits)."""
    checked = 0
    for problem in _problems(11, 15):
        bounds = ThresholdBounds(problem)
        for cap in sorted({1, 3, problem.arch.pmus // 2, problem.arch.pmus}):
            lower = bounds.lower(cap)
            for a in range(problem.n):
                for b in range(a, min(problem.n, a + 4)):
                    if math.prod(len(problem.options[i]) for i in range(a, b + 1)) > 20_000:
                        continue
                    optimum = enumerated_section_compute(problem, a, b, cap)
                    assert lower[a, b] <= optimum * (1 + 1e-9)
                    value, choice, fits = exact_section(problem, bounds, a, b, cap)
                    if math.isfinite(optimum):
                        assert value <= optimum * (1 + 1e-9)  # a lower bound even when the other resource breaks
                        if fits:
                            opts = [problem.options[i][o] for i, o in zip(range(a, b + 1), choice)]
                            chosen = sum(o.fill_ps for o in opts) + max(o.steady_ps for o in opts)
                            assert chosen == pytest.approx(optimum, rel=1e-12)
                    checked += 1
    assert checked > 300


def test_threshold_bound_is_tight_on_a_transformer_layer() -> None:
    problem = build_problem(build("bert_base", precision="bf16", num_layers=1), rdu(), "latency")
    bounds = ThresholdBounds(problem)
    value, _, fits = exact_section(problem, bounds, 0, problem.n - 1, problem.arch.pmus)
    assert fits and bounds.lower(problem.arch.pmus)[0, problem.n - 1] >= 0.99 * value


def test_plans_match_brute_force_on_random_graphs_and_chips() -> None:
    rng = random.Random(5)
    cases = optimal = 0
    while cases < 30:
        problem = build_problem(random_chain(rng, rng.randint(2, 4)), random_arch(rng), "latency")
        try:
            _, best = brute_force(problem, max_plans=30_000)
        except ValueError:
            continue
        solution = solve_exact(problem, gap_tolerance=0.0)
        assert solution.cost.feasible and solution.lower_ps <= best.latency_ps <= solution.cost.latency_ps
        assert plan_cost(problem, solution.plan).latency_ps == solution.cost.latency_ps
        optimal += solution.cost.latency_ps == best.latency_ps
        cases += 1
    assert optimal >= 27  # the realised covers almost always hold the optimum itself


def test_mapper_proves_brute_force_optimum_with_zero_tolerance() -> None:
    rng = random.Random(9)
    for _ in range(6):
        graph, arch = random_chain(rng, 3), random_arch(rng)
        problem = build_problem(graph, arch, "latency")
        try:
            _, best = brute_force(problem, max_plans=30_000)
        except ValueError:
            continue
        solver = RduSectionMapper(gap_tolerance=0.0).map(graph, arch).solver
        assert solver["status"] == "OPTIMAL" and solver["latency_ps"] == best.latency_ps


def test_placement_keeps_capacities_and_fills_sram_first() -> None:
    graph = gpt2(elem_bytes=2, phase="decode", num_layers=2, kv_len=256)
    for arch in (rdu(), rdu(sram_mb=8), rdu(sram_mb=8, hbm_gb=0.01)):
        problem = build_problem(graph, arch, "latency")
        solution = solve_exact(problem)
        tiers = place_by_gain(problem, solution.plan.starts, solution.plan.choice)
        plan = type(solution.plan)(solution.plan.starts, solution.plan.choice, tiers)
        cost = plan_cost(problem, plan)
        assert cost.feasible, cost.why
        placed = {t: sum(p.nbytes for p in problem.placeables if tiers[p.name] == t) for t in ("hbm", "ddr")}
        assert all(placed[t] <= problem.tier_bytes[t] for t in placed)


@pytest.mark.parametrize(
    "graph",
    [
        build("bert_base", precision="bf16", num_layers=2),
        gpt2(elem_bytes=2, phase="decode", num_layers=2, kv_len=512),
    ],
    ids=["bert-2L", "gpt2-decode-2L"],
)
def test_default_mapper_is_within_one_percent_on_transformers(graph) -> None:
    solver = RduSectionMapper().map(graph, rdu()).solver
    assert solver["bound"] <= solver["latency_ps"]
    assert solver["gap"] <= 0.01 and solver["status"] in ("OPTIMAL", "WITHIN_TOLERANCE")


def test_exact_mapping_is_deterministic() -> None:
    graph = gpt2(elem_bytes=2, phase="decode", num_layers=1, kv_len=256)
    problem = build_problem(graph, rdu(sram_mb=64), "latency")
    first, second = solve_exact(problem), solve_exact(problem)
    assert first.plan == second.plan and first.lower_ps == second.lower_ps
    assert np.isfinite(first.lower_ps)


def test_link_energy_is_paid_per_byte_moved_between_sockets() -> None:
    graph = gpt2(elem_bytes=2, phase="decode", num_layers=1, kv_len=256)
    model = RduModel()
    one = model.evaluate(RduSectionMapper().map(graph, rdu()), rdu())
    assert "link" not in one.energy_breakdown_pj
    for parallelism in ("tensor", "pipeline"):
        arch = rdu(sockets=4, parallelism=parallelism)
        metrics = model.evaluate(RduSectionMapper().map(graph, arch), arch)
        moved = link_bytes(graph, arch)
        assert moved > 0
        assert metrics.energy_breakdown_pj["link"] == pytest.approx(moved * 8 * LINK_ENERGY_PJ_PER_BIT.value)
    # a ring all-reduce of each residual-feeding projection moves 2 (S - 1) x its output over the links
    assert link_bytes(graph, rdu(sockets=4)) > link_bytes(graph, rdu(sockets=2))


def test_section_mapper_does_not_depend_on_the_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded machine must not change the answer: the same mapping with a clock that jumps 1000 s per read."""
    graph = gpt2(elem_bytes=2, phase="decode", num_layers=1, kv_len=256)
    arch = rdu(sram_mb=64)
    mapper = RduSectionMapper(max_steps=3)
    clear_cache()
    quiet = mapper.map(graph, arch).solver
    assert quiet["steps"] == 3  # the refinement ran: a wall-clock limit would have cut it below
    ticks = iter(range(10**9))
    monkeypatch.setattr(time, "perf_counter", lambda: 1000.0 * next(ticks))
    clear_cache()
    loaded = mapper.map(graph, arch).solver
    clear_cache()
    for key in ("plan", "latency_ps", "bound", "steps", "covers", "status"):
        assert loaded[key] == quiet[key], key
