"""RDU figures: fused (CP-SAT sections) vs unfused on the SN40L-like preset, and the same workloads on GPUs.

Workloads (bf16, batch 1): GPT-2 small prefill (128 tokens) and decode (one token, 1024 cached), BERT-base
(128 tokens), one Mamba block and one Hyena block (L = 1024, d_model = 768). Prints

1. fused vs unfused: latency, speedup (with and without the section-switch time, which is an assumption),
   SRAM / HBM / DDR traffic, utilisation of the PCUs' peak, PCU occupancy, solver status, gap and time;
2. the SSM-RDU extension on Mamba and Hyena (fused, with and without ``ssm_ext``);
3. the RDU against the H100 and A100 models of the GPU family, beside SN40L's and SSM-RDU's published
   ratios, with the reasons ours differ.

Run: ``.venv/bin/python benchmarks/rdu_bench.py [--time-limit 10]`` (a few minutes on two cores).
"""

from __future__ import annotations

import argparse
import time

from dse.evaluate import PointEvaluator
from dse.graph import Graph
from dse.zoo.ssm import hyena, mamba
from dse.zoo.transformers import bert_base, gpt2
from hwmodels.catalogs.rdu import PUBLISHED_RATIOS
from mappers.rdu.sections import clear_cache

ELEM_BYTES = 2  # bf16


def workloads() -> dict[str, Graph]:
    return {
        "gpt2-prefill": gpt2(elem_bytes=ELEM_BYTES, phase="prefill", seq_len=128),
        "gpt2-decode": gpt2(elem_bytes=ELEM_BYTES, phase="decode", kv_len=1024),
        "bert-base": bert_base(elem_bytes=ELEM_BYTES, seq_len=128),
        "mamba-block": mamba(elem_bytes=ELEM_BYTES, seq_len=1024),
        "hyena-block": hyena(elem_bytes=ELEM_BYTES, seq_len=1024),
    }


def run_rdu(graph: Graph, time_limit_s: float, ssm_ext: bool = False) -> dict:
    point = {"preset": "sn40l", "precision": "bf16", "ssm_ext": ssm_ext}
    unfused = PointEvaluator(graph, "rdu", "unfused")(point)
    sections = PointEvaluator(graph, "rdu", "sections", mapper_options={"time_limit_s": time_limit_s})
    clear_cache()
    started = time.perf_counter()
    fused = sections.trace(point)  # the model's pricing of the sections is a few ms of the solver's seconds
    wall = time.perf_counter() - started
    return {
        "arch": fused.arch,
        "unfused": unfused,
        "fused": fused.metrics,
        "solver": fused.mapping.solver,
        "wall_s": wall,
    }


def run_gpu(graph: Graph, gpu: str) -> float:
    return PointEvaluator(graph, "gpu", "tile")({"gpu": gpu, "precision": "bf16"})["latency_ms"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=10.0, help="CP-SAT seconds per workload")
    args = parser.parse_args()

    graphs = workloads()
    results = {name: run_rdu(g, args.time_limit) for name, g in graphs.items()}
    print("RDU (SN40L-like preset, bf16, batch 1): fused CP-SAT sections vs unfused one-op sections")
    header = (
        f"{'workload':<13} {'ops':>4} {'unfused ms':>10} {'fused ms':>9} {'speedup':>7} {'w/o switch':>10} "
        f"{'sect':>4} {'SRAM MB':>8} {'HBM MB':>7} {'DDR MB':>7} {'util':>6} {'occup':>6} {'status':>8} "
        f"{'gap':>6} {'solve s':>7}"
    )
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        u, f, s = r["unfused"], r["fused"], r["solver"]
        reconfig_u, reconfig_f = u.info["reconfig_ms"], f.info["reconfig_ms"]
        no_switch = (u["latency_ms"] - reconfig_u) / max(1e-12, f["latency_ms"] - reconfig_f)
        print(
            f"{name:<13} {len(graphs[name].ops):>4} {u['latency_ms']:>10.4f} {f['latency_ms']:>9.4f} "
            f"{u['latency_ms'] / f['latency_ms']:>6.2f}x {no_switch:>9.2f}x {f.info['sections']:>4} "
            f"{f.info['sram_mb']:>8.1f} {f.info['hbm_mb']:>7.1f} {f.info['ddr_mb']:>7.1f} "
            f"{f['utilization']:>6.3f} {f.info['pcu_occupancy']:>6.3f} {s['status']:>8} {s['gap']:>6.3f} "
            f"{r['wall_s']:>7.1f}"
        )
    print("  unfused traffic (MB, SRAM/HBM/DDR):")
    for name, r in results.items():
        u = r["unfused"]
        print(f"    {name:<13} {u.info['sram_mb']:>8.1f} {u.info['hbm_mb']:>8.1f} {u.info['ddr_mb']:>8.1f}")
    print(
        f"  published: SN40L operator fusion {PUBLISHED_RATIOS['sn40l_fusion_speedup_low'].value:g}x-"
        f"{PUBLISHED_RATIOS['sn40l_fusion_speedup_high'].value:g}x over unfused on its benchmarks"
    )

    print("\nSSM-RDU extensions (fused, SN40L-like): baseline RDU vs ssm_ext=True")
    ssm = {}
    long_blocks = {
        "mamba-L16k": mamba(elem_bytes=ELEM_BYTES, seq_len=16384),
        "hyena-L16k": hyena(elem_bytes=ELEM_BYTES, seq_len=16384),
    }
    for name, published in (
        ("mamba-block", "ssm_rdu_mamba_vs_rdu"),
        ("hyena-block", "ssm_rdu_hyena_vs_rdu"),
        ("mamba-L16k", "ssm_rdu_mamba_vs_rdu"),
        ("hyena-L16k", "ssm_rdu_hyena_vs_rdu"),
    ):
        graph = graphs.get(name) or long_blocks[name]
        base = results[name] if name in results else run_rdu(graph, args.time_limit)
        ext = run_rdu(graph, args.time_limit, ssm_ext=True)
        base_ms, ext_ms = base["fused"]["latency_ms"], ext["fused"]["latency_ms"]
        unf_base, unf_ext = base["unfused"]["latency_ms"], ext["unfused"]["latency_ms"]
        if name in graphs:
            ssm[name] = ext_ms
        area_share = ext["fused"].info["area_breakdown_mm2"]["ssm_ext"] / ext["fused"]["area_mm2"]
        print(
            f"  {name:<12} fused {base_ms:.4f} -> {ext_ms:.4f} ms ({base_ms / ext_ms:.2f}x); unfused "
            f"{unf_base:.4f} -> {unf_ext:.4f} ms ({unf_base / unf_ext:.2f}x); area +{100 * area_share:.2f}% "
            f"| published {PUBLISHED_RATIOS[published].value:g}x"
        )

    print("\nRDU (fused) vs GPU models (GPU family, bf16, epilogue fusion, no flash attention)")
    print(f"{'workload':<13} {'RDU ms':>9} {'H100 ms':>9} {'A100 ms':>9} {'H100/RDU':>9} {'A100/RDU':>9}")
    for name, g in graphs.items():
        rdu_ms = ssm.get(name, results[name]["fused"]["latency_ms"])
        h100, a100 = run_gpu(g, "h100"), run_gpu(g, "a100")
        tag = " (ssm_ext)" if name in ssm else ""
        print(f"{name:<13} {rdu_ms:>9.4f} {h100:>9.4f} {a100:>9.4f} {h100 / rdu_ms:>8.2f}x {a100 / rdu_ms:>8.2f}x{tag}")
    print(
        f"  published: SN40L {PUBLISHED_RATIOS['sn40l_coe_vs_dgx_h100'].value:g}x over DGX H100 (CoE inference, "
        f"8 sockets vs 8 GPUs); SSM-RDU Hyena {PUBLISHED_RATIOS['ssm_rdu_hyena_vs_gpu'].value:g}x and Mamba "
        f"{PUBLISHED_RATIOS['ssm_rdu_mamba_vs_gpu'].value:g}x over A100"
    )
    print(
        "  why ours differ: (1) the published CoE ratio is for switching between many 7B experts whose weights\n"
        "  stream from DDR/HBM, not one small GPT-2 whose weights sit in the SN40L's SRAM; (2) our GPU model runs\n"
        "  batch-1 kernels back to back with launch gaps, which is what makes small-graph decode slow on the GPU;\n"
        "  (3) the unfused cost and so the fusion speedup hinge on the assumed 10 us section switch (the\n"
        "  'w/o switch' column removes it); (4) in our cost model the FFT and the scan rarely bound a fused\n"
        "  section, the big projections do: the sequential scan hides its recurrence by interleaving its\n"
        "  D x S = 24,576 channel-states until it holds > 256 PCUs, which no fused section gives it, and an FFT\n"
        "  only halves (one pass per butterfly level instead of two); so ssm_ext moves Mamba by 1.00x and Hyena\n"
        "  by 1.00-1.13x, far below SSM-RDU's 1.75x / 1.95x. The model was not tuned to the published ratios."
    )


if __name__ == "__main__":
    main()
