"""Import figures for real exports: ops before/after folding, import time, MACs (ours vs closed form).

Builds every model from a config (random init; nothing downloaded), exports it with both torch.onnx
exporters, imports it with dse.importers.load_onnx and prints one table row per model/exporter,
including a 12-layer GPT-2-small (d=768, seq 128; target: import < 5 s on 2 cores).
Run: .venv/bin/python benchmarks/onnx_import_speed.py [--quick]
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
import warnings
from pathlib import Path

import onnx
import torch
import transformers
from torch import nn

from dse.importers import load_onnx


class LastHidden(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).last_hidden_state


def closed_form(layers: int, seq: int, d: int, ff: int, heads: int, kv_heads: int, gated: bool) -> int:
    kv = d * kv_heads // heads
    return layers * (seq * (2 * d * d + 2 * d * kv + (3 if gated else 2) * d * ff) + 2 * seq * seq * d)


def models(quick: bool):
    tiny = dict(layers=2, d=64, heads=4)
    yield (
        "gpt2-tiny",
        transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000),
        16,
        (2, 64, 256, 4, 4, False),
    )
    yield (
        "bert-tiny",
        transformers.BertConfig(
            num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4, vocab_size=1000
        ),
        16,
        (2, 64, 128, 4, 4, False),
    )  # noqa: E501
    yield (
        "llama-tiny-gqa",
        transformers.LlamaConfig(
            num_hidden_layers=2,
            hidden_size=64,
            intermediate_size=128,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=1000,
        ),
        16,
        (2, 64, 128, 4, 2, True),
    )  # noqa: E501
    del tiny
    if not quick:
        yield "gpt2-small-12L", transformers.GPT2Config(), 128, (12, 768, 3072, 12, 12, False)


def main() -> None:
    quick = "--quick" in sys.argv
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    print(
        f"{'model':16} {'exporter':11} {'nodes':>6} {'folded':>6} {'IR ops':>6} {'import s':>9} "
        f"{'MACs (ours)':>14} {'closed form':>14}"
    )  # noqa: E501
    with tempfile.TemporaryDirectory() as folder:
        for name, config, seq, shape in models(quick):
            torch.manual_seed(0)
            model = LastHidden(transformers.AutoModel.from_config(config)).eval()
            ids = torch.randint(0, 1000, (1, seq))
            for exporter in ("torchscript", "dynamo"):
                path = Path(folder) / f"{name}-{exporter}.onnx"
                try:
                    torch.onnx.export(
                        model,
                        (ids,),
                        str(path),
                        dynamo=exporter == "dynamo",
                        opset_version=18 if exporter == "dynamo" else 17,
                        verbose=False,
                    )  # noqa: E501
                except Exception as err:  # noqa: BLE001 - an exporter limit is a row of the table
                    print(f"{name:16} {exporter:11} export fails upstream: {str(err).splitlines()[0][:60]}")  # noqa: E501
                    continue
                nodes = len(onnx.load(str(path), load_external_data=False).graph.node)
                start = time.perf_counter()
                graph = load_onnx(path, precision="fp32")
                seconds = time.perf_counter() - start
                expected = closed_form(shape[0], seq, shape[1], shape[2], shape[3], shape[4], shape[5])
                folded = sum(graph.meta["folded_nodes"].values())
                mark = "==" if graph.macs == expected else "!="
                print(
                    f"{name:16} {exporter:11} {nodes:6d} {folded:6d} {len(graph.ops):6d} {seconds:9.2f} "
                    f"{graph.macs:14,d} {mark} {expected:,d}"
                )  # noqa: E501


if __name__ == "__main__":
    main()
