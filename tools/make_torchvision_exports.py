"""Make the shapes-only torchvision exports and their torch MAC counts that tests/test_torchvision_zoo.py reads.

Run once, in a venv with a torchvision that imports (PyPI's torchvision does not import beside the CPU
torch the test extra uses; torch 2.14.1 with torchvision 0.29.1 does), NOT the project's venv:

    python -m venv /work/tvenv && /work/tvenv/bin/pip install torch==2.14.1 torchvision==0.29.1 onnx onnxscript
    /work/tvenv/bin/python tools/make_torchvision_exports.py tests/data/torchvision [model ...]

Every model is built with random weights (nothing is downloaded), exported by both torch exporters
(TorchScript ``dynamo=False`` and ``dynamo=True``), and saved the way a user ships a model without its
weight file: every tensor of 1 KiB or more is external data in a file that is then not there. The ONNX
protobuf is gzipped. The torch count is ``FlopCounterMode``'s (2 FLOPs per MAC), with a formula added for
the CPU scaled-dot-product-attention kernel, which the counter has none for. ``manifest.json`` records per
model and exporter: the file, its ONNX node count, torch's MACs, the input shape, or the export's error
(the innermost cause torch gives), or ``skipped`` for an export slower than ``--timeout`` seconds. The
script resumes: a model the manifest has is not exported again unless ``--again`` (``--exporter`` redoes
one exporter and keeps the other's entry). It imports nothing from dse: it runs in the torchvision venv
only. ``python tests/test_torchvision_zoo.py`` prints the table of our MACs against torch's.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import logging
import re
import signal
import sys
import tempfile
import time
import warnings
from pathlib import Path

import onnx
import torch
import torchvision
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

# Models whose default input differs from 224x224 (inception needs 299; the others are fixed-size ViTs).
INPUT_SIZES = {"inception_v3": 299}
# The detection models the issue names first, then the rest: their box counts are data-dependent (bounded on import).
DETECTION = (
    "ssdlite320_mobilenet_v3_large",
    "retinanet_resnet50_fpn",
    "fasterrcnn_mobilenet_v3_large_320_fpn",
    "ssd300_vgg16",
    "fcos_resnet50_fpn",
    "retinanet_resnet50_fpn_v2",
    "fasterrcnn_mobilenet_v3_large_fpn",
    "fasterrcnn_resnet50_fpn",
    "fasterrcnn_resnet50_fpn_v2",
    "maskrcnn_resnet50_fpn",
    "maskrcnn_resnet50_fpn_v2",
    "keypointrcnn_resnet50_fpn",
)
DETECTION_SIZES = {
    "ssdlite320_mobilenet_v3_large": 320,
    "fasterrcnn_mobilenet_v3_large_320_fpn": 320,
    "ssd300_vgg16": 300,
}
# Video classifiers: clip shape (frames, height, width) from their weights' own transforms.
VIDEO_CLIPS = {
    "r3d_18": (16, 112, 112),
    "mc3_18": (16, 112, 112),
    "r2plus1d_18": (16, 112, 112),
    "s3d": (16, 224, 224),
    "mvit_v1_b": (16, 224, 224),
    "mvit_v2_s": (16, 224, 224),
    "swin3d_t": (16, 224, 224),
    "swin3d_s": (16, 224, 224),
    "swin3d_b": (16, 224, 224),
}
EXTERNAL_THRESHOLD = 1024  # bytes: onnx.save_model's default for external data; larger tensors go to the absent file
EXPORTERS = ("torchscript", "dynamo")
EXPORT_TIMEOUT_S = 300  # an export slower than this on the 2-core machine is recorded as skipped, not waited for


class ExportTimeout(Exception):
    """An export ran past --timeout seconds."""


def _raise_timeout(signum, frame) -> None:
    raise ExportTimeout


def error_message(err: BaseException) -> str:
    """The first line of the innermost cause: torch's dynamo exporter wraps the real reason in a generic one."""
    chain = [err]
    while (chain[-1].__cause__ or chain[-1].__context__) is not None and len(chain) < 20:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    reasons = []
    for link in (chain[-1], err) if len(chain) > 1 else (err,):
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(link)).strip()  # torch colours its messages
        reasons.append(f"{type(link).__name__}: {(text.splitlines() or [''])[0][:240]}")
    return " <- ".join(reasons)


def _cpu_sdpa_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    """torch's own SDPA formula for the CPU flash kernel the counter has no entry for."""
    return sdpa_flop_count(query, key, value)


CUSTOM_FLOPS = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_sdpa_flops}


@contextlib.contextmanager
def every_box_kept(model: torch.nn.Module):
    """Score thresholds 0 and NMS IoU thresholds 1 in every detection stage while torch counts.

    The importer costs a data-dependent count at its worst case (every candidate kept, up to the model's own
    top-k and detections-per-image caps); with random weights torch's run keeps fewer (NMS suppresses
    overlapping proposals, no class passes a 0.05 score), so a two-stage model's RoI heads would run on
    fewer boxes than the bound. Counting torch with every box kept compares like with like; the exported
    graph keeps the model's own thresholds (they are constants in it, not its structure).
    """
    saved = []
    for module in model.modules():
        for attribute, keep_all in (("score_thresh", 0.0), ("nms_thresh", 1.0)):
            if isinstance(getattr(module, attribute, None), float):
                saved.append((module, attribute, getattr(module, attribute)))
                setattr(module, attribute, keep_all)
    try:
        yield
    finally:
        for module, attribute, value in saved:
            setattr(module, attribute, value)


def torch_macs(model: torch.nn.Module, example: torch.Tensor) -> tuple[int, int]:
    """FlopCounterMode's count / 2, and the part of it spent in leaf modules that never read the input.

    Weight-only work (Swin v2's position-bias MLP runs on a buffer) is a constant an accelerator computes
    once, and the importer folds it; it is recorded apart so the test compares like with like. A module
    reads the input when one of its tensor arguments requires grad: only the input does (weights are
    frozen), and grad stays on so nn.MultiheadAttention takes its decomposed (counted) path.
    """
    weight_only: set[str] = set()
    hooks = []
    for module_name, module in model.named_modules():
        if next(module.children(), None) is not None:
            continue

        def mark(module, args, kwargs, module_name=module_name):
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
            if tensors and not any(t.requires_grad for t in tensors):
                weight_only.add(module_name)

        hooks.append(module.register_forward_pre_hook(mark, with_kwargs=True))
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    with every_box_kept(model), FlopCounterMode(display=False, custom_mapping=CUSTOM_FLOPS) as counter:
        model(example.clone().requires_grad_(True))
    for hook in hooks:
        hook.remove()
    for parameter in model.parameters():  # frozen weights would send nn.MultiheadAttention down its fused
        parameter.requires_grad_(True)  # fast path, which the TorchScript exporter refuses
    per_module = counter.get_flop_counts()
    root = type(model).__name__  # the counter names modules by the root's type and their path below it
    constant = sum(sum(per_module.get(f"{root}.{name}", {}).values()) for name in weight_only)
    return counter.get_total_flops() // 2, constant // 2


class DetectionOutputs(torch.nn.Module):
    """A detection model as one tensor in, a tuple of tensors out (boxes, scores, labels, and masks or keypoints
    where the model has them, of image 0: every head's output is kept, so no head is pruned from the export)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor):
        return tuple(self.model(list(images))[0].values())


def build(name: str) -> tuple[torch.nn.Module, torch.Tensor, str]:
    """The model with random weights, an example input and its group (classification, segmentation, detection)."""
    torch.manual_seed(0)
    if name in DETECTION:
        size = DETECTION_SIZES.get(name, 512)
        kwargs = {"weights": None, "weights_backbone": None}
        model = DetectionOutputs(torchvision.models.get_model(name, **kwargs))
        return model.eval(), torch.rand(1, 3, size, size), "detection"
    if name in VIDEO_CLIPS:
        model = torchvision.models.get_model(name, weights=None)
        return model.eval(), torch.randn(1, 3, *VIDEO_CLIPS[name]), "video"
    segmentation = torchvision.models.list_models(torchvision.models.segmentation)
    group = "segmentation" if name in segmentation else "classification"
    kwargs = {"weights": None}
    if group == "segmentation":
        kwargs["weights_backbone"] = None
        kwargs["aux_loss"] = False
    if name in ("googlenet", "inception_v3"):
        kwargs["aux_logits"] = False
        kwargs["init_weights"] = False
    size = INPUT_SIZES.get(name, 224)
    return torchvision.models.get_model(name, **kwargs).eval(), torch.randn(1, 3, size, size), group


def export(model: torch.nn.Module, example: torch.Tensor, exporter: str) -> onnx.ModelProto:
    """One torch exporter's graph, made in a temporary folder that is then deleted with every weight file in it
    (a model over 2 GB gets one external file per tensor, named after the tensor)."""
    with warnings.catch_warnings(), tempfile.TemporaryDirectory(prefix="tv-export-") as folder:
        warnings.simplefilter("ignore")
        logging.getLogger("torch").setLevel(logging.ERROR)
        kwargs = {"dynamo": exporter == "dynamo", "opset_version": 18 if exporter == "dynamo" else 17}
        if exporter == "torchscript":
            kwargs.update(input_names=["images"], dynamic_axes={"images": {0: "batch"}})
        path = Path(folder) / "model.onnx"
        # grad stays on: under no_grad nn.MultiheadAttention takes a fused fast path the TorchScript exporter refuses
        torch.onnx.export(model, (example,), str(path), verbose=False, **kwargs)
        return onnx.load(str(path), load_external_data=True)


def save_shapes_only(model_proto: onnx.ModelProto, path: Path) -> None:
    """Every tensor of EXTERNAL_THRESHOLD bytes or more points at ``<name>.weights``, which is not written."""
    location = path.name.removesuffix(".onnx.gz") + ".weights"
    offset = 0
    for tensor in model_proto.graph.initializer:
        nbytes = len(tensor.raw_data) if tensor.HasField("raw_data") else tensor.ByteSize()
        if nbytes < EXTERNAL_THRESHOLD:
            continue
        if not tensor.HasField("raw_data"):
            array = onnx.numpy_helper.to_array(tensor)
            tensor.CopyFrom(onnx.numpy_helper.from_array(array, tensor.name))
            nbytes = len(tensor.raw_data)
        tensor.ClearField("raw_data")
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(nbytes))):
            tensor.external_data.add(key=key, value=value)
        offset += nbytes
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(model_proto.SerializeToString())  # mtime 0: the same model gives the same bytes


def one_model(
    name: str,
    folder: Path,
    timeout_s: int = EXPORT_TIMEOUT_S,
    exporters: tuple[str, ...] = EXPORTERS,
    old: dict | None = None,
) -> dict:
    """Export ``name`` with ``exporters``; the manifest entry for it (``old``'s other exporters kept)."""
    model, example, group = build(name)
    macs, weight_only = torch_macs(model, example)
    entry: dict = {
        "group": group,
        "input": list(example.shape),
        "torch_macs": macs,
        "torch_weight_only_macs": weight_only,
    }
    entry.update({exporter: info for exporter, info in (old or {}).items() if exporter in EXPORTERS})
    for exporter in exporters:
        path = folder / f"{name}.{exporter}.onnx.gz"
        start = time.perf_counter()
        signal.signal(signal.SIGALRM, _raise_timeout)
        signal.alarm(timeout_s)
        try:
            proto = export(model, example, exporter)
        except ExportTimeout:  # too slow for this machine: recorded as skipped, not as torch's failure
            entry[exporter] = {"skipped": f"export took over {timeout_s} s on the 2-core machine"}
            print(f"  {name} {exporter}: {entry[exporter]['skipped']}", flush=True)
            continue
        except Exception as err:  # an export torch itself cannot do: recorded, not fatal
            if "ExportTimeout" in error_message(err):  # the timeout, wrapped by one of torch's passes
                entry[exporter] = {"skipped": f"export took over {timeout_s} s on the 2-core machine"}
                print(f"  {name} {exporter}: {entry[exporter]['skipped']}", flush=True)
                continue
            entry[exporter] = {"error": error_message(err)}
            print(f"  {name} {exporter}: export failed: {entry[exporter]['error']}", flush=True)
            continue
        finally:
            signal.alarm(0)
        save_shapes_only(proto, path)
        entry[exporter] = {"file": path.name, "nodes": len(proto.graph.node), "bytes": path.stat().st_size}
        print(
            f"  {name} {exporter}: {len(proto.graph.node)} nodes, {path.stat().st_size // 1024} KiB, "
            f"{time.perf_counter() - start:.1f} s",
            flush=True,
        )
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument(
        "models", nargs="*", help="default: every classification and segmentation model, DETECTION and VIDEO_CLIPS"
    )
    parser.add_argument("--recount", action="store_true", help="only recount torch's MACs of exported models")
    parser.add_argument("--again", action="store_true", help="re-export models the manifest already has")
    parser.add_argument("--exporter", choices=EXPORTERS, help="with --again: re-export with this exporter only")
    parser.add_argument("--timeout", type=int, default=EXPORT_TIMEOUT_S, help="seconds per export before skipping")
    args = parser.parse_intermixed_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    names = args.models or [
        *torchvision.models.list_models(torchvision.models),
        *torchvision.models.list_models(torchvision.models.segmentation),
        *DETECTION,
        *VIDEO_CLIPS,
    ]
    manifest_path = args.folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    versions = {"torch": torch.__version__, "torchvision": torchvision.__version__, "onnx": onnx.__version__}
    manifest["_versions"] = versions
    if args.recount:  # torch's counts again, for the models already exported (no export)
        for name in [n for n in names if n in manifest]:
            model, example, _ = build(name)
            manifest[name]["torch_macs"], manifest[name]["torch_weight_only_macs"] = torch_macs(model, example)
            print(name, manifest[name]["torch_macs"], manifest[name]["torch_weight_only_macs"], flush=True)
        manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
        return 0
    for name in names:
        if name in manifest and not args.again:
            continue  # made by an earlier run: the script resumes where it stopped
        print(name, flush=True)
        exporters = (args.exporter,) if args.exporter else EXPORTERS
        manifest[name] = one_model(name, args.folder, args.timeout, exporters, manifest.get(name))
        manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
