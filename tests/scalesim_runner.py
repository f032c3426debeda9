"""SCALE-Sim 3.0.0 next to our model on a few layers, for the validation tests and benchmarks.

The simulator driver itself (configs, topologies, runs, reports) is ``hwmodels.systolic.scalesim_run``;
this module adds our side: the equivalent template point, the layer graph and our per-layer figures.
"""

from __future__ import annotations

import math

from hwmodels.systolic.scalesim_run import (  # noqa: F401 - re-exported for the tests and benchmarks
    ScaleSimConfig,
    ScaleSimLayer,
    config_text,
    read_report,
    run_scalesim,
    topology_text,
)


# ---------------------------------------------------------------------------------------------------
# Our side: the same layer through the dse pipeline
# ---------------------------------------------------------------------------------------------------
def arch_point(cfg: ScaleSimConfig) -> dict:
    """The systolic template point equivalent to a SCALE-Sim config (int8 = SCALE-Sim's 1-byte word).

    CALC -> dram_mode 'unlimited' with the 10 words/cycle SCALE-Sim hard-codes for the initial fill;
    USER B words/cycle -> dram_mode 'per_operand' at B GB/s (int8, 1000 MHz).
    """
    calc = cfg.bw_mode == "CALC"
    return {
        "rows": cfg.rows,
        "cols": cfg.cols,
        "dataflow": cfg.dataflow,
        "ifmap_sram_kib": cfg.ifmap_kb,
        "filter_sram_kib": cfg.filter_kb,
        "ofmap_sram_kib": cfg.ofmap_kb,
        "dram_gbps": 10.0 if calc else float(cfg.user_bw),
        "freq_mhz": 1000.0,
        "precision": "int8",
        "dram_mode": "unlimited" if calc else "per_operand",
        "sparsity_support": cfg.sparsity_support,
        "sparse_rep": cfg.sparse_rep,
        "sparsity_optimized_mapping": cfg.optimized_mapping,
        "sparsity_block_size": cfg.block_size,
    }


def layer_graph(layers: list[ScaleSimLayer]):
    """One conv op per SCALE-Sim layer.

    SCALE-Sim's topologies are unpadded, but it sizes the output as ceil((H - R + stride) / stride),
    one more than floor when the stride does not divide H - R: its last window hangs over the edge
    (those addresses are never fetched). The same output comes from padding the bottom/right edge.
    """
    from dse.graph import GraphBuilder

    b = GraphBuilder("scalesim_layers")
    for ly in layers:
        x = b.input(f"{ly.name}_in", (1, ly.channels, ly.ifmap_h, ly.ifmap_w))
        p = math.ceil((ly.ifmap_h - ly.filt_h + ly.stride) / ly.stride)
        q = math.ceil((ly.ifmap_w - ly.filt_w + ly.stride) / ly.stride)
        pad_b = (p - 1) * ly.stride + ly.filt_h - ly.ifmap_h
        pad_r = (q - 1) * ly.stride + ly.filt_w - ly.ifmap_w
        b.conv(x, ly.num_filters, (ly.filt_h, ly.filt_w), stride=ly.stride, pad=(0, 0, pad_b, pad_r), name=ly.name)
    graph = b.build()
    from dse.importers.sparsity import parse_pattern, with_sparsity

    return with_sparsity(graph, {ly.name: parse_pattern(ly.sparsity) for ly in layers if ly.sparsity})


def predict(layers: list[ScaleSimLayer], cfg: ScaleSimConfig) -> list[dict]:
    """Our model's figures for each layer, under SCALE-Sim's report names."""
    from hwmodels.systolic.cost import gemm_cost
    from hwmodels.systolic.model import SystolicModel
    from mappers.systolic.fold import SystolicFoldMapper
    from templates.systolic import SystolicTemplate

    arch = SystolicTemplate().instantiate(arch_point(cfg))
    graph = layer_graph(layers)
    mapping = SystolicFoldMapper().map(graph, arch)
    SystolicModel().evaluate(mapping, arch)  # the full path must run; figures below are per layer
    out = []
    for ly in layers:
        plan = mapping.ops[ly.name].payload
        cost = gemm_cost(plan.gemm, arch)
        report = {}
        if cfg.sparsity_support and ly.sparsity:
            from hwmodels.systolic.sparse import scalesim_sparse_report

            sp = plan.sparse.pattern
            report = vars(scalesim_sparse_report(plan.sparse.dense, sp.n, sp.m, cfg.sparse_rep))
        out.append(
            {
                **report,
                "layer": ly.name,
                "total_cycles_incl_prefetch": cost.scalesim_total_cycles,
                "compute_cycles": cost.compute_cycles - 1,
                "dram_ifmap_reads": cost.ifmap_dram_reads,
                "dram_filter_reads": cost.filter_dram_reads,
                "dram_ofmap_writes": cost.ofmap_dram_writes,
            }
        )
    return out
