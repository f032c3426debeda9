"""The torchvision model zoo, shapes only, against torch's own MAC count (issue 31).

tools/make_torchvision_exports.py exported each model once (random weights, both torch exporters) and
saved it as a user ships a model without its weight file: every tensor of 1 KiB or more points at an
absent external file. The importer must resolve every shape (Shape/Size over absent buffers, a Swin's
shape arithmetic) and cost exactly what ``torch.utils.flop_counter.FlopCounterMode`` counts, less the
work that never reads the input (Swin v2's position-bias MLP), which the importer folds as a constant.
Detection models' data-dependent box counts are bounded at their worst case; their MACs (backbone and
heads) do not depend on the count. The whole zoo is slow; the default suite imports the small ones.
``python tests/test_torchvision_zoo.py [model ...]`` prints the table (model, exporter, nodes, MACs ours and
torch's, import seconds) and the counts of equal, different and failed exports.
"""

from __future__ import annotations

import gzip
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import pytest

from dse.graph import GraphError
from dse.importers import load_onnx

FOLDER = Path(__file__).parent / "data" / "torchvision"
MANIFEST = json.loads((FOLDER / "manifest.json").read_text()) if (FOLDER / "manifest.json").is_file() else {}
EXPORTS = sorted(
    (name, exporter)
    for name, entry in MANIFEST.items()
    if not name.startswith("_")
    for exporter in ("torchscript", "dynamo")
    if "file" in entry.get(exporter, {})
)
# The default suite's sample (< 0.2 s each): convolutions both exporters, depthwise + squeeze-excite + hard-swish,
# channel shuffle, attention, a segmentation head, inception branches; the whole table is the slow suite.
DEFAULT = {
    ("resnet18", "torchscript"),
    ("resnet18", "dynamo"),
    ("mobilenet_v3_small", "torchscript"),
    ("shufflenet_v2_x1_0", "dynamo"),
    ("vit_b_32", "dynamo"),
    ("lraspp_mobilenet_v3_large", "dynamo"),
    ("googlenet", "dynamo"),
}

# What the importer still refuses, and why (each refusal names its node, as every refusal must): Mask and
# Keypoint R-CNN paste masks / keypoints into the image in a TorchScript loop over the detections whose
# per-iteration shapes depend on each box (no MACs inside, no static shape out); MViT's TorchScript export
# pools in a loop over a tensor sequence; Swin3D's TorchScript export slices its relative-position index by a
# window size computed from padded shapes that the folding does not resolve yet (both import by dynamo).
PASTE_LOOP = r"node 'Loop_\d+' \(Loop\): ONNX shape inference gives no concrete shape"
REFUSED = {
    ("maskrcnn_resnet50_fpn", "torchscript"): PASTE_LOOP,
    ("maskrcnn_resnet50_fpn_v2", "torchscript"): PASTE_LOOP,
    ("keypointrcnn_resnet50_fpn", "torchscript"): PASTE_LOOP,
    ("mvit_v1_b", "torchscript"): r"node '/blocks.0/attn/pool_k/SequenceEmpty' has op type 'SequenceEmpty'",
    ("mvit_v2_s", "torchscript"): r"node '/blocks.0/attn/pool_k/SequenceEmpty' has op type 'SequenceEmpty'",
    **{
        (name, "torchscript"): r"node '/features/features.0/features.0.1/attn/Slice_4' \(Slice\): ONNX shape"
        for name in ("swin3d_t", "swin3d_s")
    },
}


def import_export(name: str, exporter: str, tmp_path: Path):
    """The shapes-only export of ``name``, imported; its weight file is absent as shipped."""
    info = MANIFEST[name][exporter]
    path = tmp_path / info["file"].removesuffix(".gz")
    path.write_bytes(gzip.decompress((FOLDER / info["file"]).read_bytes()))
    logging.getLogger("dse.importers").setLevel(logging.ERROR)  # "weights missing" is expected here
    start = time.perf_counter()
    graph = load_onnx(path)
    return graph, time.perf_counter() - start


def expected_macs(name: str) -> int:
    entry = MANIFEST[name]
    return entry["torch_macs"] - entry.get("torch_weight_only_macs", 0)


def check(name: str, exporter: str, tmp_path: Path) -> None:
    if (name, exporter) in REFUSED:
        with pytest.raises(GraphError, match=REFUSED[name, exporter]):
            import_export(name, exporter, tmp_path)
        return
    graph, seconds = import_export(name, exporter, tmp_path)
    assert graph.meta["weights_missing"], "the export was meant to ship without its weight file"
    assert graph.meta["onnx_nodes"] == MANIFEST[name][exporter]["nodes"]
    assert graph.macs == expected_macs(name), f"{name} ({exporter}): ours {graph.macs}, torch {expected_macs(name)}"
    if MANIFEST[name]["group"] == "detection":
        assert graph.meta["data_dependent_bounds"], "a detection model's box counts are bounded, not refused"
    assert seconds < 60


@pytest.mark.skipif(not MANIFEST, reason="tests/data/torchvision/manifest.json is absent")
@pytest.mark.parametrize(("name", "exporter"), sorted(DEFAULT))
def test_small_zoo_models_match_torch(name: str, exporter: str, tmp_path: Path) -> None:
    check(name, exporter, tmp_path)


@pytest.mark.skipif(not MANIFEST, reason="tests/data/torchvision/manifest.json is absent")
@pytest.mark.parametrize(("name", "exporter"), [e for e in EXPORTS if e not in DEFAULT])
def test_zoo_model_matches_torch(name: str, exporter: str, tmp_path: Path) -> None:
    check(name, exporter, tmp_path)


def test_manifest_lists_failed_exports_with_their_reason() -> None:
    """An export torch itself cannot do is recorded with torch's error (one too slow to make, as skipped), never
    silently dropped."""
    if not MANIFEST:
        pytest.skip("tests/data/torchvision/manifest.json is absent")
    for name, entry in MANIFEST.items():
        if name.startswith("_"):
            continue
        for exporter in ("torchscript", "dynamo"):
            info = entry[exporter]
            assert sum(key in info for key in ("file", "error", "skipped")) == 1, (name, exporter)
            if "file" in info:
                assert (FOLDER / info["file"]).is_file()


def print_table(names: list[str]) -> int:
    """The zoo table, one export a row, and the counts; 1 when any export differs from torch or fails to import."""
    counts = {"equal": 0, "different": 0, "import refused": 0, "export failed": 0, "export skipped": 0}
    print(f"{'model':<38} {'exporter':<11} {'nodes':>6} {'ours MACs':>16} {'torch MACs':>16} {'import s':>8}")
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            for exporter in ("torchscript", "dynamo"):
                info = MANIFEST[name][exporter]
                if "file" not in info:
                    what = "export failed" if "error" in info else "export skipped"
                    counts[what] += 1
                    reason = (info.get("error") or info.get("skipped")).split(" <- ")[0]  # the innermost cause
                    print(f"{name:<38} {exporter:<11} {what}: {reason[:110]}{'...' if len(reason) > 110 else ''}")
                    continue
                try:
                    graph, seconds = import_export(name, exporter, Path(folder))
                except GraphError as err:  # the table goes on; the reason is the row
                    counts["import refused"] += 1
                    print(f"{name:<38} {exporter:<11} import refused: {str(err).split('.onnx: ')[-1][:200]}")
                    continue
                equal = graph.macs == expected_macs(name)
                counts["equal" if equal else "different"] += 1
                print(
                    f"{name:<38} {exporter:<11} {info['nodes']:>6} {graph.macs:>16,} {expected_macs(name):>16,} "
                    f"{seconds:>8.2f}{'' if equal else '  DIFFERENT'}"
                )
    models = len(names)
    print(f"{models} models, " + ", ".join(f"{count} exports {what}" for what, count in counts.items()))
    unexpected = counts["import refused"] - sum(key[0] in names for key in REFUSED)
    return int(counts["different"] + unexpected > 0)


if __name__ == "__main__":
    sys.exit(print_table(sys.argv[1:] or sorted(name for name in MANIFEST if not name.startswith("_"))))
