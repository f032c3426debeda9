"""Image classifiers: ResNet-18/50, MobileNetV1 and VGG-16 as NCHW graphs.

BatchNorm is folded into the preceding convolution (it becomes the conv's bias), as every
inference compiler does, so it costs no op. ReLUs, residual adds and poolings are real ops
because they cost vector-unit time and on-chip traffic. Padding follows torchvision.
"""

from __future__ import annotations

from dse.graph import Graph, GraphBuilder

MIN_RESOLUTION = 32  # every network here downsamples by 32


def _stem_input(b: GraphBuilder, batch: int, resolution: int) -> str:
    return b.input("image", (batch, 3, resolution, resolution))


def _classifier(b: GraphBuilder, x: str, num_classes: int = 1000) -> str:
    """Global average pool, flatten (a free view) and the final dense layer named like SCALE-Sim's ``FC``."""
    pooled = b.global_pool(x, mode="avg", name="AvgPool")
    n, c, _, _ = b.shape(pooled)
    b.reshape(pooled, (n, c))
    return b.linear(pooled, num_classes, name="FC")


def resnet18(batch: int = 1, elem_bytes: int = 1, resolution: int = 224) -> Graph:
    """ResNet-18 (He et al. 2016, torchvision layout) with SCALE-Sim's layer names.

    Block ``Conv{stage}_{i}`` has convs ``a`` and ``b``; the first block of stages 3-5 has a
    1x1 stride-2 shortcut ``Conv{stage}_s``.
    """
    b = GraphBuilder("resnet18", elem_bytes)
    x = _stem_input(b, batch, resolution)
    x = b.conv(x, 64, 7, stride=2, pad=3, name="Conv1", bias=True)
    x = b.relu(x, name="Conv1_relu")
    x = b.pool(x, 3, 2, pad=1, mode="max", name="Pool1")
    channels = 64
    for stage, (width, blocks) in enumerate(((64, 2), (128, 2), (256, 2), (512, 2)), start=2):
        for block in range(1, blocks + 1):
            stride = 2 if block == 1 and stage > 2 else 1
            prefix = f"Conv{stage}_{block}"
            y = b.conv(x, width, 3, stride=stride, pad=1, name=f"{prefix}a", bias=True)
            y = b.relu(y, name=f"{prefix}a_relu")
            y = b.conv(y, width, 3, stride=1, pad=1, name=f"{prefix}b", bias=True)
            shortcut = x
            if stride != 1 or channels != width:
                shortcut = b.conv(x, width, 1, stride=stride, pad=0, name=f"Conv{stage}_s", bias=True)
            x = b.add(y, shortcut, name=f"Res{stage}_{block}_add")
            x = b.relu(x, name=f"Res{stage}_{block}_relu")
            channels = width
    _classifier(b, x)
    return b.build()


def resnet50(batch: int = 1, elem_bytes: int = 1, resolution: int = 224) -> Graph:
    """ResNet-50 v1.5 (torchvision: the stride sits on the 3x3 conv) with SCALE-Sim-style names.

    Bottleneck ``Conv{stage}_{i}`` has convs ``a`` (1x1), ``b`` (3x3), ``c`` (1x1 expand); the
    first block of every stage has the projection shortcut ``Conv{stage}_s``.
    """
    b = GraphBuilder("resnet50", elem_bytes)
    x = _stem_input(b, batch, resolution)
    x = b.conv(x, 64, 7, stride=2, pad=3, name="Conv1", bias=True)
    x = b.relu(x, name="Conv1_relu")
    x = b.pool(x, 3, 2, pad=1, mode="max", name="Pool1")
    channels = 64
    for stage, (width, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3)), start=2):
        out_channels = 4 * width
        for block in range(1, blocks + 1):
            stride = 2 if block == 1 and stage > 2 else 1
            prefix = f"Conv{stage}_{block}"
            y = b.conv(x, width, 1, name=f"{prefix}a", bias=True)
            y = b.relu(y, name=f"{prefix}a_relu")
            y = b.conv(y, width, 3, stride=stride, pad=1, name=f"{prefix}b", bias=True)
            y = b.relu(y, name=f"{prefix}b_relu")
            y = b.conv(y, out_channels, 1, name=f"{prefix}c", bias=True)
            shortcut = x
            if stride != 1 or channels != out_channels:
                shortcut = b.conv(x, out_channels, 1, stride=stride, name=f"Conv{stage}_s", bias=True)
            x = b.add(y, shortcut, name=f"Res{stage}_{block}_add")
            x = b.relu(x, name=f"Res{stage}_{block}_relu")
            channels = out_channels
    _classifier(b, x)
    return b.build()


# (pointwise output channels, depthwise stride) for the 13 separable blocks of MobileNetV1 1.0.
_MOBILENET_V1_BLOCKS = (
    (64, 1),
    (128, 2),
    (128, 1),
    (256, 2),
    (256, 1),
    (512, 2),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (1024, 2),
    (1024, 1),
)


def mobilenet_v1(batch: int = 1, elem_bytes: int = 1, resolution: int = 224) -> Graph:
    """MobileNetV1 1.0 (Howard et al. 2017, Table 1) with Keras layer names.

    Each depthwise conv is a conv with groups = channels, as ONNX expresses it.
    """
    b = GraphBuilder("mobilenet_v1", elem_bytes)
    x = _stem_input(b, batch, resolution)
    x = b.conv(x, 32, 3, stride=2, pad=1, name="conv1", bias=True)
    x = b.relu(x, name="conv1_relu")
    for i, (out_channels, stride) in enumerate(_MOBILENET_V1_BLOCKS, start=1):
        channels = b.shape(x)[1]
        x = b.conv(x, channels, 3, stride=stride, pad=1, groups=channels, name=f"conv_dw_{i}", bias=True)
        x = b.relu(x, name=f"conv_dw_{i}_relu")
        x = b.conv(x, out_channels, 1, name=f"conv_pw_{i}", bias=True)
        x = b.relu(x, name=f"conv_pw_{i}_relu")
    _classifier(b, x)
    return b.build()


def vgg16(batch: int = 1, elem_bytes: int = 1, resolution: int = 224) -> Graph:
    """VGG-16, configuration D (Simonyan & Zisserman 2015) with Caffe layer names.

    The classifier flattens the final feature map as the original fixed-input network does
    (512 * (resolution/32)^2 inputs to fc6; 25088 at 224).
    """
    b = GraphBuilder("vgg16", elem_bytes)
    x = _stem_input(b, batch, resolution)
    for stage, (width, convs) in enumerate(((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)), start=1):
        for i in range(1, convs + 1):
            x = b.conv(x, width, 3, pad=1, name=f"conv{stage}_{i}", bias=True)
            x = b.relu(x, name=f"relu{stage}_{i}")
        x = b.pool(x, 2, 2, mode="max", name=f"pool{stage}")
    n, c, h, w = b.shape(x)
    b.reshape(x, (n, c * h * w))
    x = b.relu(b.linear(x, 4096, name="fc6"), name="relu6")
    x = b.relu(b.linear(x, 4096, name="fc7"), name="relu7")
    b.linear(x, 1000, name="fc8")
    return b.build()
