"""Built-in model zoo: every model is a function returning a dse.graph.Graph.

All models are written with ``GraphBuilder`` so they yield exactly the IR the ONNX importer
produces. ``build(name, batch=..., precision=..., **options)`` is the one entry point the spec
loader and CLI use; it checks the name, the options and the precision and raises errors that
name what was wrong and what is allowed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dse.errors import UserError
from dse.graph import PRECISION_BYTES, Graph
from dse.zoo.cnn import MIN_RESOLUTION, mobilenet_v1, resnet18, resnet50, vgg16
from dse.zoo.llm import LLM_SHAPES, coe, llm, llm_params
from dse.zoo.mlp import jet_mlp
from dse.zoo.small_cnn import small_cnn
from dse.zoo.ssm import hyena, mamba
from dse.zoo.transformers import GPT2_PHASES, GPT2_VARIANTS, bert_base, gpt2


@dataclass(frozen=True)
class ZooModel:
    """One built-in model: how to build it, what it is, and the published figure it is checked against."""

    name: str
    build: Callable[..., Graph]  # build(batch=, elem_bytes=, **options) -> Graph
    doc: str  # one line: what it is, input size, source of the architecture
    published_gmacs: float | None  # at default size, with source in `source`
    source: str
    options: tuple[str, ...]  # keyword options build() accepts (batch included)


class UnknownModelError(KeyError, UserError):
    """A model name that is not in the zoo. A KeyError so ``name in MODELS``-style callers keep working."""

    def __init__(self, name: str):
        message = f"unknown zoo model {name!r}; the zoo has: {', '.join(names())}"
        UserError.__init__(self, message)
        self.name = name
        self.args = (name,)  # so the error pickles back into itself across worker processes

    def __str__(self) -> str:  # KeyError would otherwise print the repr of the message
        return UserError.__str__(self)


class ZooOptionError(ValueError, UserError):
    """An option, option value or precision a zoo model does not accept."""

    def __init__(self, message: str):
        UserError.__init__(self, message)

    def __str__(self) -> str:
        return UserError.__str__(self)


_CNN_OPTIONS = ("batch", "resolution")
_LLM_OPTIONS = ("batch", "phase", "seq_len", "kv_len", "num_layers")
_LLM_SOURCES = {
    "llama2_7b": "Touvron et al. 2023 (arXiv:2307.09288) Table 1; HF meta-llama/Llama-2-7b-hf config.json",
    "llama2_13b": "Touvron et al. 2023 (arXiv:2307.09288) Table 1; HF meta-llama/Llama-2-13b-hf config.json",
    "llama2_70b": "Touvron et al. 2023 (arXiv:2307.09288) Table 1, GQA with 8 KV heads; HF Llama-2-70b-hf config.json",
    "llama3_8b": "Grattafiori et al. 2024 (arXiv:2407.21783) Table 3; HF meta-llama/Meta-Llama-3-8B config.json",
    "mixtral_8x7b": "Jiang et al. 2024 (arXiv:2401.04088) Table 1; HF mistralai/Mixtral-8x7B-v0.1 config.json",
}

MODELS: dict[str, ZooModel] = {
    m.name: m
    for m in (
        ZooModel(
            "resnet18",
            resnet18,
            "ResNet-18 image classifier, 3x224x224 input, 1000 classes (He et al. 2016; torchvision layout)",
            1.82,
            "torchvision ResNet18_Weights.IMAGENET1K_V1: 1.81 GFLOPS (multiply-adds); He et al. 2016 Table 1: 1.8e9",
            _CNN_OPTIONS,
        ),
        ZooModel(
            "resnet50",
            resnet50,
            "ResNet-50 v1.5 image classifier, 3x224x224 input, 1000 classes (He et al. 2016; torchvision layout)",
            4.09,
            "torchvision ResNet50_Weights.IMAGENET1K_V1: 4.09 GFLOPS (multiply-adds); "
            "He et al. 2016 Table 1: 3.8e9 (v1, stride on the 1x1)",
            _CNN_OPTIONS,
        ),
        ZooModel(
            "mobilenet_v1",
            mobilenet_v1,
            "MobileNetV1 1.0 image classifier, 3x224x224 input, depthwise-separable convs (Howard et al. 2017)",
            0.569,
            "Howard et al. 2017 (arXiv:1704.04861) Table 8: 1.0 MobileNet-224, 569 million mult-adds",
            _CNN_OPTIONS,
        ),
        ZooModel(
            "vgg16",
            vgg16,
            "VGG-16 (configuration D) image classifier, 3x224x224 input, three FC layers (Simonyan & Zisserman 2015)",
            15.5,
            "torchvision VGG16_Weights.IMAGENET1K_V1: 15.47 GFLOPS (multiply-adds)",
            _CNN_OPTIONS,
        ),
        ZooModel(
            "jet_mlp",
            jet_mlp,
            "hls4ml jet-tagging MLP 16-64-32-32-5 (Dense+ReLU x3, Dense, Softmax), 16 input features",
            (16 * 64 + 64 * 32 + 32 * 32 + 32 * 5) / 1e9,
            "hls4ml tutorial part 1 / Duarte et al. 2018 (arXiv:1804.06913): 16-64-32-32-5 dense network",
            ("batch",),
        ),
        ZooModel(
            "small_cnn",
            small_cnn,
            "small FPGA CNN: 1x16x16 input, Conv3x3(8)+ReLU+MaxPool2, Conv3x3(16)+ReLU+MaxPool2, Dense(10), Softmax",
            (14 * 14 * 8 * 9 + 5 * 5 * 16 * 8 * 9 + 64 * 10) / 1e9,
            "closed form of the layer shapes (dse's own FPGA example network, no external source)",
            ("batch",),
        ),
        ZooModel(
            "bert_base",
            bert_base,
            "BERT-base encoder, 12 layers, hidden 768, 12 heads, FFN 3072, [B, 128, 768] embedded input "
            "(Devlin et al. 2019)",
            11.2,
            "closed form 12 x (S(4D^2 + 2DF) + 2S^2 D) at S=128 = 11.17 GMAC; "
            "commonly quoted as ~11.2 GMAC (22.4 GFLOP)",
            ("batch", "seq_len", "num_layers"),
        ),
        ZooModel(
            "gpt2",
            gpt2,
            "GPT-2 decoder (small/medium/large/xl), prefill of 128 tokens or one decode step over a KV cache "
            "(Radford et al. 2019; HF gpt2)",
            15.9,
            "forward ~ 2 N FLOPs per token (Kaplan et al. 2020, arXiv:2001.08361) with N = 124.4 M (HF gpt2 "
            "num_parameters) over 128 prefill tokens: ~15.9 GMAC",
            ("batch", "phase", "seq_len", "kv_len", "num_layers", "variant"),
        ),
        ZooModel(
            "mamba",
            mamba,
            "Mamba selective-SSM block, [B, 1024, 768] input, d_state 16, expand 2, d_conv 4 "
            "(Gu & Dao 2023, mamba_ssm mamba_simple.py)",
            None,
            "architecture: Gu & Dao 2023 (arXiv:2312.00752), state-spaces/mamba mamba_simple.Mamba; no published MACs",
            ("batch", "seq_len", "d_model", "d_state", "expand", "d_conv", "num_layers"),
        ),
        ZooModel(
            "hyena",
            hyena,
            "Hyena operator block, [B, 1024, 768] input, order 2, implicit filter width 64, FFT long convolution "
            "(Poli et al. 2023, safari HyenaOperator)",
            None,
            "architecture: Poli et al. 2023 (arXiv:2302.10866), HazyResearch/safari hyena.py; no published MACs",
            ("batch", "seq_len", "d_model", "order", "filter_order", "num_layers"),
        ),
        *(
            ZooModel(
                name,
                functools.partial(llm, name),
                f"{name} decoder serving step (prefill of seq_len tokens or one decode step over kv_len cached "
                f"tokens), hidden {shape.hidden}, {shape.layers} layers, {shape.heads} heads / {shape.kv_heads} KV "
                f"heads" + (f", {shape.experts} experts top-{shape.top_k}" if shape.experts > 1 else ""),
                None,
                f"{_LLM_SOURCES[name]}; {llm_params(name) / 1e9:.2f} B parameters in the graph; no weights",
                _LLM_OPTIONS,
            )
            for name, shape in LLM_SHAPES.items()
        ),
        ZooModel(
            "coe_llama2_7b",
            coe,
            "Composition of Experts: `experts` Llama-2-7B-shaped experts (default 150, as Samba-CoE), one serving "
            "step of the active one; requests pick an expert uniformly and generate `output_tokens` tokens",
            None,
            f"{_LLM_SOURCES['llama2_7b']}; Samba-CoE: Prabhakar et al. MICRO 2024 (arXiv 2405.07518), 150 experts",
            (*_LLM_OPTIONS, "experts", "output_tokens"),
        ),
    )
}

# Options whose value is a positive integer, with the smallest value that yields a valid graph.
_MIN_INT_OPTION = {
    "batch": 1,
    "resolution": MIN_RESOLUTION,
    "seq_len": 1,
    "kv_len": 1,
    "num_layers": 1,
    "d_model": 1,
    "d_state": 1,
    "expand": 1,
    "d_conv": 1,
    "order": 2,
    "filter_order": 1,
    "experts": 1,
    "output_tokens": 1,
}
_CHOICE_OPTION = {"phase": GPT2_PHASES, "variant": tuple(GPT2_VARIANTS)}


def names() -> list[str]:
    """Zoo model names, in the order they are listed in MODELS."""
    return list(MODELS)


def _check_option(model: str, option: str, value: Any) -> None:
    if option in _CHOICE_OPTION:
        allowed = _CHOICE_OPTION[option]
        if value not in allowed:
            raise ZooOptionError(f"zoo model {model!r}: {option}={value!r} is not one of {', '.join(allowed)}")
        return
    minimum = _MIN_INT_OPTION[option]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ZooOptionError(f"zoo model {model!r}: {option}={value!r} must be an integer >= {minimum}")


def build(name: str, *, batch: int = 1, precision: str = "int8", **options: Any) -> Graph:
    """Build zoo model ``name`` at the given batch, precision and size options.

    Raises UnknownModelError (a KeyError) for a name not in the zoo and ZooOptionError (a
    ValueError) for an option the model does not take, a bad option value or an unknown precision.
    """
    if name not in MODELS:
        raise UnknownModelError(name)
    model = MODELS[name]
    for option in options:
        if option not in model.options:
            raise ZooOptionError(
                f"zoo model {name!r} does not take option {option!r}; it takes: {', '.join(model.options)}"
            )
    if precision not in PRECISION_BYTES:
        raise ZooOptionError(
            f"zoo model {name!r}: unknown precision {precision!r}; allowed: {', '.join(PRECISION_BYTES)}"
        )
    for option, value in {"batch": batch, **options}.items():
        if not (option == "num_layers" and value is None):
            _check_option(name, option, value)
    graph = model.build(batch=batch, elem_bytes=PRECISION_BYTES[precision], **options)
    graph.meta.update(model=name, batch=batch, precision=precision, options=dict(options), source=model.source)
    return graph
