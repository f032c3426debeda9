"""ResNet-50, BERT-base and GPT-2 decode on H100 and A100 from the GPU model, next to published figures.

Why: the GPU baselines a design is compared against are only credible if the model lands near what the
vendors publish. Published figures are quoted with their source; where none was found the row says so
(no number is made up). For GPT-2 decode the comparator is the bandwidth bound (bytes moved per token /
datasheet bandwidth), which no implementation can beat.

    .venv/bin/python benchmarks/gpu_baselines.py
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from dse import zoo
from dse.evaluate import PointEvaluator
from hwmodels.catalogs.gpu import NODES

ROOT = Path(__file__).resolve().parents[1]

TRT_BERT = (
    "NVIDIA/TensorRT demo/BERT/README.md (TensorRT 8.4.3, commit 007c34702bc7), 'Inference performance: "
    "NVIDIA A100 (40GB)', BERT Base, average latency"
)


@dataclass(frozen=True)
class Case:
    model: str
    options: dict
    batch: int
    precision: str
    gpu: str
    published_ms: float | None = None
    source: str = ""


CASES = (
    Case("resnet50", {}, 1, "int8", "h100_sxm"),
    Case("resnet50", {}, 1, "int8", "a100_40gb"),
    Case("resnet50", {}, 128, "int8", "h100_sxm"),
    Case("resnet50", {}, 128, "int8", "a100_40gb"),
    Case("bert_base", {}, 1, "fp16", "h100_sxm"),
    Case("bert_base", {}, 1, "fp16", "a100_40gb", 0.67, f"{TRT_BERT}, seq 128, batch 1, FP16"),
    Case("bert_base", {}, 1, "int8", "a100_40gb", 0.58, f"{TRT_BERT}, seq 128, batch 1, INT8"),
    Case("bert_base", {}, 8, "fp16", "a100_40gb", 1.38, f"{TRT_BERT}, seq 128, batch 8, FP16"),
    Case("bert_base", {}, 128, "fp16", "h100_sxm"),
    Case("bert_base", {}, 128, "fp16", "a100_40gb", 16.14, f"{TRT_BERT}, seq 128, batch 128, FP16"),
    Case("bert_base", {}, 128, "int8", "a100_40gb", 8.18, f"{TRT_BERT}, seq 128, batch 128, INT8"),
    Case("gpt2", {"phase": "decode"}, 1, "fp16", "h100_sxm"),
    Case("gpt2", {"phase": "decode"}, 1, "fp16", "a100_40gb"),
    Case("gpt2", {"phase": "decode"}, 32, "fp16", "h100_sxm"),
    Case("gpt2", {"phase": "decode"}, 32, "fp16", "a100_40gb"),
    Case("bert_base", {}, 128, "fp16", "a100_80gb"),
    Case("bert_base", {}, 128, "fp16", "dgx_a100"),
    Case("bert_base", {}, 128, "fp16", "dgx_h100"),
    Case("gpt2", {"phase": "decode"}, 32, "fp16", "dgx_h100"),
)


def evaluate(case: Case):
    graph = zoo.build(case.model, batch=case.batch, precision=case.precision, **case.options)
    node = NODES.get(case.gpu)
    point = {"gpu": node.gpu if node else case.gpu, "precision": case.precision}
    if node is not None:
        point.update(gpus=int(node.gpus.value), nvlink_gbps=node.nvlink_gbps.value)
    trace = PointEvaluator(graph, "gpu", "tile").trace(point)
    return graph, trace.arch, trace.metrics


def main() -> int:
    print(
        "GPU model vs published figures (tuning: 'cal' = constants fitted to measurements of that GPU, "
        "'cat' = catalog assumptions; dgx_* = 8 GPUs tensor-parallel over NVLink)"
    )
    header = (
        f"{'workload':<22} {'batch':>5} {'prec':<5} {'gpu':<10} {'model ms':>9} {'inf/s':>9} {'mJ/inf':>8} "
        f"{'published ms':>12} {'model/pub':>9} tuning  bound / source"
    )
    print(header)
    sources: list[str] = []
    for case in CASES:
        graph, arch, metrics = evaluate(case)
        v = metrics.values
        name = case.model + ("-decode" if case.options.get("phase") == "decode" else "")
        published = f"{case.published_ms:12.3f}" if case.published_ms else f"{'—':>12}"
        ratio = f"{v['latency_ms'] / case.published_ms:9.2f}" if case.published_ms else f"{'':>9}"
        note = ""
        if case.source:
            if case.source not in sources:
                sources.append(case.source)
            note = f"[{sources.index(case.source) + 1}]"
        elif case.options.get("phase") == "decode":
            bound_ms = v["dram_mb"] * 1e6 / (arch.bytes_per_s * arch.gpus) * 1e3
            note = f"bandwidth bound {bound_ms:.3f} ms ({v['dram_mb']:.0f} MB / {arch.gpus} x {arch.mem_gbps:g} GB/s)"
        else:
            note = "no published figure found for this configuration"
        print(
            f"{name:<22} {case.batch:>5} {case.precision:<5} {case.gpu:<10} {v['latency_ms']:9.3f} "
            f"{v['throughput_ips']:9.0f} {v['energy_mj']:8.2f} {published} {ratio} "
            f"{'cal' if arch.calibrated else 'cat':<6}  {note}"
        )
    for i, source in enumerate(sources, 1):
        print(f"[{i}] {source}")
    print("BERT-base: sequence length 128; GPT-2: small, one decode step against a 1024-token KV cache.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
