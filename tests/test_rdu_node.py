"""RDU at node scale: the proven section lower bound, multi-socket nodes, LLM serving and CoE metrics, LLM zoo."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from dse.graph import Graph, GraphBuilder
from dse.zoo import build
from dse.zoo.llm import llm, llm_params
from dse.zoo.transformers import gpt2
from hwmodels.rdu.model import RduModel
from hwmodels.rdu.node import link_ps, node_view
from mappers.rdu import bound as bound_module
from mappers.rdu.bound import SectionBounds, latency_lower_bound
from mappers.rdu.bruteforce import brute_force
from mappers.rdu.problem import build_problem
from mappers.rdu.sections import RduSectionMapper
from templates.rdu import RduTemplate
from tests.test_rdu import small_graph


def rdu(**point):
    return RduTemplate().instantiate({"preset": "sn40l", "precision": "bf16", **point})


@pytest.mark.parametrize(
    "point",
    [
        dict(reconfig_us=0.05),
        dict(reconfig_us=2.0, sram_mb=0.5, pmus=8),
        dict(reconfig_us=0.05, hbm_gb=0.0004),
        dict(reconfig_us=0.2, pcus=4),
    ],
)
def test_lower_bound_never_exceeds_the_brute_force_optimum(point: dict) -> None:
    arch = rdu(**{"pcus": 8, "pmus": 8, "sram_mb": 2, **point})
    for residual in (True, False):
        problem = build_problem(small_graph(with_residual=residual), arch, "latency")
        _, best = brute_force(problem)
        bound = latency_lower_bound(problem)
        assert 0 < bound <= best.latency_ps
        mapping = RduSectionMapper(time_limit_s=20, gap_tolerance=0.0).map(problem.graph, arch)
        assert mapping.solver["status"] == "OPTIMAL" and mapping.solver["latency_ps"] == best.latency_ps


def random_chain(rng: random.Random, n_ops: int) -> Graph:
    """A random chain of linears, gelus and adds of random widths and token counts."""
    b = GraphBuilder("random", elem_bytes=2)
    h = b.input("x", (1, rng.choice([1, 8, 64, 256]), rng.choice([64, 256, 1024])))
    for i in range(n_ops):
        kind = rng.choice(["linear", "gelu", "add"]) if i else "linear"
        if kind == "linear":
            h = b.linear(h, rng.choice([64, 256, 512, 2048]), name=f"op{i}")
        elif kind == "gelu":
            h = b.elementwise("gelu", h, name=f"op{i}")
        else:
            h = b.add(h, h, name=f"op{i}")
    b.output(h)
    return b.build()


def random_arch(rng: random.Random):
    return rdu(
        pcus=rng.choice([2, 4, 8, 16]),
        pmus=rng.choice([4, 8, 16]),
        sram_mb=rng.choice([0.25, 1, 4]),
        reconfig_us=rng.choice([0.02, 0.2, 2.0]),
        hbm_gb=rng.choice([0.0004, 1.0]),
    )


def test_lower_bound_holds_on_random_graphs_and_chips() -> None:
    rng = random.Random(7)
    cases = 0
    while cases < 40:
        problem = build_problem(random_chain(rng, rng.randint(2, 4)), random_arch(rng), "latency")
        try:
            _, best = brute_force(problem, max_plans=30_000)
        except ValueError:
            continue  # too many plans to enumerate
        assert 0 < latency_lower_bound(problem) <= best.latency_ps
        cases += 1


def enumerated_section_compute(problem, first: int, last: int, pmu_cap: int) -> float:
    """A section's least compute by enumerating every option combination that fits (small sections only)."""
    best = math.inf
    for opts in itertools.product(*problem.options[first : last + 1]):
        if sum(o.pcus for o in opts) <= problem.arch.pcus and sum(o.pmus for o in opts) <= pmu_cap:
            best = min(best, sum(o.fill_ps for o in opts) + max(o.steady_ps for o in opts))
    return best


def test_section_compute_relaxation_never_exceeds_the_exact_section_compute() -> None:
    rng = random.Random(3)
    problems = [build_problem(random_chain(rng, rng.randint(2, 6)), random_arch(rng), "latency") for _ in range(15)]
    problems += [
        build_problem(gpt2(elem_bytes=2, phase="prefill", num_layers=1, seq_len=64), rdu(pcus=p, pmus=64), "latency")
        for p in (8, 128)
    ]
    for problem in problems:
        bounds = SectionBounds(problem)
        for cap in sorted({1, 4, problem.arch.pmus}):
            lower = bounds.compute_lb(cap)
            for a in range(problem.n):
                for b in range(a, min(problem.n, a + 4)):
                    if math.prod(len(problem.options[i]) for i in range(a, b + 1)) <= 20_000:
                        exact = enumerated_section_compute(problem, a, b, cap)
                        assert lower[a, b] <= exact * (1 + 1e-9)  # float prefix sums; the path rounds down


def test_pcu_area_term_tightens_the_compute_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = build_problem(gpt2(elem_bytes=2, phase="prefill", num_layers=1, seq_len=64), rdu(pcus=32), "latency")
    with_area = SectionBounds(problem).compute_lb(problem.arch.pmus)
    monkeypatch.setattr(bound_module, "THETAS", (1.0,))  # the one-op bound on max(steady) alone
    one_op = SectionBounds(problem).compute_lb(problem.arch.pmus)
    finite = np.isfinite(one_op)
    assert np.all(with_area[finite] >= one_op[finite] - 1e-6) and np.any(with_area[finite] > 1.05 * one_op[finite])


def test_bound_proves_bert_layer_quickly() -> None:
    graph = build("bert_base", precision="bf16", num_layers=1)
    mapping = RduSectionMapper(time_limit_s=1, gap_tolerance=0.01).map(graph, rdu())
    solver = mapping.solver
    assert solver["bound"] <= solver["latency_ps"]
    assert solver["status"] in ("OPTIMAL", "WITHIN_TOLERANCE", "FEASIBLE") and 0 <= solver["gap"] < 1


# These tests check how the node model prices a plan (area, links, serving metrics), which holds for any plan the
# section mapper returns: a short deterministic solve is enough (optimality is checked against brute force elsewhere).
METRICS_SOLVE_S = 0.1


def test_tensor_parallel_node_is_faster_and_pays_the_link() -> None:
    graph = llm("llama2_7b", elem_bytes=2, phase="decode", num_layers=1, kv_len=512)
    one, node = rdu(), rdu(sockets=8)
    assert node_view(node).pcus == 8 * one.pcus and node_view(node).hbm_gb == 8 * one.hbm_gb
    model = RduModel()
    single = model.evaluate(RduSectionMapper(time_limit_s=METRICS_SOLVE_S).map(graph, one), one)
    eight = model.evaluate(RduSectionMapper(time_limit_s=METRICS_SOLVE_S).map(graph, node), node)
    assert eight["area_mm2"] == pytest.approx(8 * single["area_mm2"])
    link, parts = link_ps(graph, node)
    assert parts["allreduce"] > 0 and parts["allgather"] > 0  # o_proj/down_proj reduce; lm_head gathers
    slow_link, _ = link_ps(graph, rdu(sockets=8, link_gbps=10))
    assert slow_link > link
    assert eight["tpot_ms"] == pytest.approx(eight["latency_ms"])
    assert eight.info["link_ms"]["allreduce"] == pytest.approx(parts["allreduce"] * 1e-9)


def test_pipeline_node_multiplies_throughput_by_its_stages() -> None:
    graph = llm("llama2_7b", elem_bytes=2, phase="decode", num_layers=1, kv_len=256, batch=2)
    arch = rdu(sockets=4, parallelism="pipeline")
    metrics = RduModel().evaluate(RduSectionMapper(time_limit_s=METRICS_SOLVE_S).map(graph, arch), arch)
    assert metrics["tokens_per_s"] == pytest.approx(4 * 2 / (metrics["latency_ms"] * 1e-3))
    assert metrics.info["link_ms"]["pipeline_hops"] > 0


def test_serving_and_coe_metrics() -> None:
    arch = rdu()
    prefill = build("llama2_7b", precision="bf16", phase="prefill", seq_len=64, num_layers=1)
    metrics = RduModel().evaluate(RduSectionMapper(time_limit_s=METRICS_SOLVE_S).map(prefill, arch), arch)
    assert metrics["ttft_ms"] == pytest.approx(metrics["latency_ms"])
    assert metrics["tokens_per_s"] == pytest.approx(64 / (metrics["latency_ms"] * 1e-3))
    placed = metrics["footprint_sram_mb"] * 1e6 + (metrics["footprint_hbm_gb"] + metrics["footprint_ddr_gb"]) * 1e9
    assert placed == pytest.approx(prefill.weight_bytes, rel=1e-6)  # prefill: every weight once, no KV input
    coe = build("coe_llama2_7b", precision="bf16", phase="decode", num_layers=1, experts=10, output_tokens=16)
    node = rdu(sockets=2)
    m = RduModel().evaluate(RduSectionMapper(time_limit_s=METRICS_SOLVE_S).map(coe, node), node)
    assert m["switch_ms"] == pytest.approx(coe.weight_bytes / (2 * node.ddr_gbps * 1e9) * 1e3)
    assert m["footprint_ddr_gb"] == pytest.approx(10 * coe.weight_bytes / 1e9)
    # a one-layer expert is small: HBM caches all ten, no switch is paid under the mix
    assert m["coe_tokens_per_s"] == pytest.approx(16 / (16 * m["tpot_ms"] * 1e-3))


@pytest.mark.parametrize(
    "model, published",
    [("llama2_7b", 6_738_415_616), ("llama2_70b", 68_976_648_192), ("mixtral_8x7b", 46_702_792_704)],
)
def test_llm_graphs_hold_the_published_parameter_counts(model: str, published: int) -> None:
    # HF num_parameters(); our norms are layernorm ops with a beta as well as a gamma (2 x hidden per norm more)
    graph = build(model, precision="bf16", phase="decode", num_layers=2)
    assert graph.weight_bytes == 2 * llm_params(model, num_layers=2)
    assert llm_params(model) == pytest.approx(published, rel=1e-4)


def test_gqa_and_moe_shapes() -> None:
    g70 = llm("llama2_70b", phase="decode", num_layers=1, kv_len=128)
    assert g70.tensors["layer0.k_cache"].shape == (8, 128, 128)  # 8 KV heads of 128
    mix = llm("mixtral_8x7b", phase="decode", num_layers=1, batch=1)
    experts_run = {op.name.split(".")[1] for op in mix.ops if ".expert" in op.name}
    assert experts_run == {"expert0", "expert1"}  # top-2 of 8 for one token
    assert mix.weight_bytes == 2 * llm_params("mixtral_8x7b", num_layers=1)
