"""LLM serving and Composition-of-Experts metrics of a mapped RDU (node) run.

Why separate: the section plan gives the time of one graph run; serving turns it into what an operator
reads. For a ``prefill`` step the run is the time to first token (TTFT) and batch x prompt tokens / run the
token rate; for a ``decode`` step the run is the time per output token (TPOT) and batch / run (x the
pipeline's micro-batches) the rate. The footprint per tier is what the plan placed there (weights, KV caches)
plus the weights no op reads in this step (embedding table, idle experts), stored in the slowest tier.

Composition of Experts (``coe_experts`` in the graph's meta): every expert lives in the slowest tier (DDR);
HBM caches as many experts as its capacity holds beside the active one's KV caches; a request that finds its
expert absent waits for the copy, expert bytes / DDR bandwidth of the node (the sockets copy their shards in
parallel). Under the uniform request mix the miss probability is 1 - cached / experts, so a request of
``coe_output_tokens`` tokens takes miss x switch + tokens x TPOT (prefill left out: it is the same on every
system and small next to 128 decode steps).
"""

from __future__ import annotations

from hwmodels.rdu.cost import SectionProblem


def coe_tokens_per_s(
    experts: int, cached: int, switch_s: float, out_tokens: int, tpot_s: float, batch: int = 1, in_flight: int = 1
) -> float:
    """Throughput under a uniform request mix: a request misses its expert with probability 1 - cached/experts
    and then waits ``switch_s``; it generates ``out_tokens`` at ``tpot_s`` each (the one CoE formula, also
    used for the GPU-node side of ``benchmarks/rdu_sn40l_compare.py``)."""
    miss = max(0.0, 1.0 - min(max(1, cached), experts) / experts)
    return batch * out_tokens * in_flight / (miss * switch_s + out_tokens * tpot_s)


def footprint_bytes(problem: SectionProblem, tiers: dict[str, str]) -> dict[str, int]:
    """Bytes resident per tier: placed items by the plan, unread weights in the slowest tier."""
    graph = problem.graph
    out = {"sram": 0, "hbm": 0, "ddr": 0}
    for item in problem.placeables:
        out[tiers[item.name]] += item.nbytes
    read = {w for op in graph.ops for w in op.weights}
    idle = sum(t.nbytes for name, t in graph.tensors.items() if t.kind == "weight" and name not in read)
    out["ddr" if problem.tier_bytes["ddr"] > 0 else "hbm"] += idle
    return out


def serving_metrics(problem: SectionProblem, tiers: dict[str, str], seconds: float, in_flight: int) -> dict[str, float]:
    """tokens_per_s, ttft_ms or tpot_ms, footprint per tier, and the CoE figures when the graph is a CoE."""
    meta = problem.graph.meta
    if "llm" not in meta or seconds <= 0:
        return {}
    batch = int(meta.get("batch", 1) or 1)
    tokens = int(meta["tokens_per_step"])
    foot = footprint_bytes(problem, tiers)
    values = {
        "tokens_per_s": tokens * in_flight / seconds,
        "footprint_sram_mb": foot["sram"] / 1e6,
        "footprint_hbm_gb": foot["hbm"] / 1e9,
        "footprint_ddr_gb": foot["ddr"] / 1e9,
    }
    values["ttft_ms" if meta["phase"] == "prefill" else "tpot_ms"] = seconds * 1e3
    if "coe_experts" in meta and meta["phase"] == "decode":
        experts, out_tokens = int(meta["coe_experts"]), int(meta["coe_output_tokens"])
        expert_bytes = problem.graph.weight_bytes
        arch = problem.arch  # the node view: capacities and bandwidths of all sockets
        kv_bytes = sum(p.nbytes for p in problem.placeables if not p.name.startswith("weights:"))
        cached = max(1, int((arch.hbm_gb * 1e9 - kv_bytes) // expert_bytes)) if arch.hbm_gb > 0 else 1
        switch_s = expert_bytes / (arch.ddr_gbps * 1e9) if arch.ddr_gb > 0 else 0.0
        values.update(
            switch_ms=switch_s * 1e3,
            coe_tokens_per_s=coe_tokens_per_s(experts, cached, switch_s, out_tokens, seconds, batch, in_flight),
            footprint_ddr_gb=experts * expert_bytes / 1e9,  # every expert's copy in DDR
        )
    return values
