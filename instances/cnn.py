"""Convolutional workloads at the granularity of a compiler's graph.

Conventions (all CNNs):
  * a convolution with its (folded) batch norm and activation is ONE op; a
    residual add is fused into the convolution before it, which then also reads
    the shortcut tensor (1 extra flop per output element);
  * a convolution's weight tensor is its kernel, `k*k*cin/groups*cout`
    elements; the per-channel shift of a folded batch norm is left out (as in
    the spec's example, ResNet-50 conv1.weight = 9408 bytes at int8), a real
    bias (VGG, U-Net, fully connected layers) is counted;
  * shapes follow the papers at 224x224x3 input (U-Net: 572x572x1), NHWC,
    batch `batch`, `width` bytes per element.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memplace.instances.graph import ELEMENTWISE_FLOPS, GraphBuilder


@dataclass(frozen=True)
class Feature:
    """A feature map: its tensor index and its shape (per image)."""

    tensor: int
    h: int
    w: int
    c: int

    @property
    def elements(self) -> int:
        return self.h * self.w * self.c


class CNN:
    """Shape bookkeeping for convolutional networks on top of `GraphBuilder`."""

    def __init__(self, name: str, batch: int, width: int, source: str):
        if batch < 1:
            raise ValueError(f"batch size must be >= 1, got {batch}")
        self.batch = batch
        self.g = GraphBuilder(name, width, source, {"batch": batch, "width": width})

    def image(self, h: int, w: int, c: int) -> Feature:
        return Feature(self.g.input("image", self.batch * h * w * c), h, w, c)

    def conv(self, name: str, x: Feature, cout: int, k: int, stride: int = 1,
             groups: int = 1, pad: int | None = None, bias: bool = False,
             shortcut: Feature | None = None) -> Feature:
        """Convolution (+ folded BN + activation, + fused residual add of `shortcut`)."""
        pad = k // 2 if pad is None else pad
        h = (x.h + 2 * pad - k) // stride + 1
        w = (x.w + 2 * pad - k) // stride + 1
        fan_in = k * k * (x.c // groups)
        out = self.batch * h * w * cout
        flops = 2.0 * out * fan_in + (out if shortcut is not None else 0)
        weights = {"weight": fan_in * cout + (cout if bias else 0)}
        reads = [x.tensor] + ([shortcut.tensor] if shortcut is not None else [])
        kind = "depthwise_conv" if groups == x.c and groups > 1 else "conv"
        return Feature(self.g.op(name, kind, flops, reads, out, weights), h, w, cout)

    def pool(self, name: str, x: Feature, k: int, stride: int, pad: int = 0) -> Feature:
        """Max pooling: one comparison per window element and output element."""
        h = (x.h + 2 * pad - k) // stride + 1
        w = (x.w + 2 * pad - k) // stride + 1
        out = self.batch * h * w * x.c
        return Feature(self.g.op(name, "pool", float(out * k * k), [x.tensor], out), h, w, x.c)

    def global_pool(self, name: str, x: Feature) -> Feature:
        """Global average pooling: one add per input element."""
        out = self.batch * x.c
        flops = float(self.batch * x.elements)
        return Feature(self.g.op(name, "pool", flops, [x.tensor], out), 1, 1, x.c)

    def fc(self, name: str, x: Feature, n: int, activation: str | None = None) -> Feature:
        """Fully connected layer with bias (+ fused activation), over the flattened input."""
        fan_in = x.elements
        out = self.batch * n
        flops = 2.0 * out * fan_in
        if activation is not None:
            flops += ELEMENTWISE_FLOPS[activation] * out
        t = self.g.op(name, "fc", flops, [x.tensor], out, {"weight": fan_in * n + n})
        return Feature(t, 1, 1, n)

    def scale(self, name: str, x: Feature, s: Feature) -> Feature:
        """Channel-wise multiply of `x` by the per-channel vector `s` (squeeze-excite)."""
        out = self.batch * x.elements
        return Feature(self.g.elementwise(name, "mul", [x.tensor, s.tensor], out), x.h, x.w, x.c)

    def up_conv(self, name: str, x: Feature, cout: int) -> Feature:
        """2x2 transposed convolution, stride 2, with bias (U-Net's up-convolution)."""
        h, w = 2 * x.h, 2 * x.w
        out = self.batch * h * w * cout
        flops = 2.0 * self.batch * x.h * x.w * x.c * 4 * cout
        weights = {"weight": 4 * x.c * cout + cout}
        return Feature(self.g.op(name, "upsample", flops, [x.tensor], out, weights), h, w, cout)

    def crop_concat(self, name: str, skip: Feature, x: Feature) -> Feature:
        """Centre-crop `skip` to `x`'s size and concatenate channels: reads only the crop."""
        crop = self.batch * x.h * x.w * skip.c * self.g.width
        out = self.batch * x.h * x.w * (skip.c + x.c)
        t = self.g.op(name, "concat", 0.0, [(skip.tensor, crop), x.tensor], out)
        return Feature(t, x.h, x.w, skip.c + x.c)

    def to_dict(self) -> dict[str, Any]:
        return self.g.to_dict()


# ---------------------------------------------------------------------- ResNet
RESNET_SOURCE = (
    "He, Zhang, Ren, Sun: Deep Residual Learning for Image Recognition, CVPR 2016 "
    "(Table 1, bottleneck blocks); stride on the 3x3 conv as in the v1.5 variant")
RESNET_BLOCKS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}


def resnet(depth: int, batch: int = 1, width: int = 1) -> dict[str, Any]:
    """ResNet-50/101/152: each bottleneck is 3 ops (the last fuses the residual add),
    plus a projection conv where the shape changes."""
    net = CNN(f"resnet{depth}", batch, width, RESNET_SOURCE)
    x = net.image(224, 224, 3)
    x = net.conv("conv1", x, 64, 7, stride=2)
    x = net.pool("maxpool", x, 3, 2, pad=1)
    for stage, (blocks, mid) in enumerate(zip(RESNET_BLOCKS[depth], (64, 128, 256, 512)), start=1):
        for b in range(blocks):
            stride = 2 if b == 0 and stage > 1 else 1
            name = f"layer{stage}.{b}"
            y = net.conv(f"{name}.conv1", x, mid, 1)
            y = net.conv(f"{name}.conv2", y, mid, 3, stride=stride)
            shortcut = x
            if b == 0:
                shortcut = net.conv(f"{name}.downsample", x, 4 * mid, 1, stride=stride)
            x = net.conv(f"{name}.conv3", y, 4 * mid, 1, shortcut=shortcut)
    x = net.global_pool("avgpool", x)
    net.fc("fc", x, 1000)
    return net.to_dict()


# ---------------------------------------------------------------------- VGG
VGG16_SOURCE = ("Simonyan, Zisserman: Very Deep Convolutional Networks for Large-Scale "
                "Image Recognition, ICLR 2015 (configuration D)")
VGG16_CONFIG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M",
                512, 512, 512, "M", 512, 512, 512, "M")


def vgg16(batch: int = 1, width: int = 1) -> dict[str, Any]:
    """VGG-16: 13 convs (with bias and ReLU), 5 max pools, 3 fully connected layers."""
    net = CNN("vgg16", batch, width, VGG16_SOURCE)
    x = net.image(224, 224, 3)
    conv, pool = 0, 0
    for item in VGG16_CONFIG:
        if item == "M":
            pool += 1
            x = net.pool(f"pool{pool}", x, 2, 2)
        else:
            conv += 1
            x = net.conv(f"conv{conv}", x, int(item), 3, bias=True)
    x = net.fc("fc6", x, 4096, activation="relu")
    x = net.fc("fc7", x, 4096, activation="relu")
    net.fc("fc8", x, 1000)
    return net.to_dict()


# ---------------------------------------------------------------------- MobileNetV2, EfficientNet-B0
MOBILENETV2_SOURCE = ("Sandler, Howard, Zhu, Zhmoginov, Chen: MobileNetV2: Inverted Residuals "
                      "and Linear Bottlenecks, CVPR 2018 (Table 2)")
EFFICIENTNET_SOURCE = ("Tan, Le: EfficientNet: Rethinking Model Scaling for Convolutional "
                       "Neural Networks, ICML 2019 (Table 1, B0; SE ratio 0.25, swish)")
# Blocks as (expansion, kernel, first stride, output channels, repeats). MobileNetV2's
# table reads (t, c, n, s), and its depthwise kernels are all 3x3.
MOBILENETV2_BLOCKS = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 3, 2, 32, 3), (6, 3, 2, 64, 4),
                      (6, 3, 1, 96, 3), (6, 3, 2, 160, 3), (6, 3, 1, 320, 1))
EFFICIENTNET_B0_BLOCKS = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                          (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))


def mobilenetv2(batch: int = 1, width: int = 1) -> dict[str, Any]:
    """MobileNetV2 (width multiplier 1.0): inverted residual blocks of expand 1x1,
    depthwise 3x3, project 1x1 (with the residual add fused when shapes match)."""
    net = CNN("mobilenetv2", batch, width, MOBILENETV2_SOURCE)
    return _inverted_residuals(net, "conv0", MOBILENETV2_BLOCKS, "conv_last", squeeze_excite=False)


def efficientnet_b0(batch: int = 1, width: int = 1) -> dict[str, Any]:
    """EfficientNet-B0: MBConv blocks of expand, depthwise, squeeze-excite (pool, two
    fully connected layers, channel scale) and project (+ fused residual add)."""
    net = CNN("efficientnet-b0", batch, width, EFFICIENTNET_SOURCE)
    return _inverted_residuals(net, "stem", EFFICIENTNET_B0_BLOCKS, "head", squeeze_excite=True)


def _inverted_residuals(net: CNN, stem: str, blocks: tuple[tuple[int, ...], ...], head: str,
                        squeeze_excite: bool) -> dict[str, Any]:
    """The MobileNetV2/EfficientNet body on a 224x224 image: a 3x3 stride-2 stem conv of 32
    channels, `blocks` of (expansion, kernel, first stride, output channels, repeats), each
    block expand 1x1 (unless the expansion is 1), depthwise, squeeze-excite (pool, two fully
    connected layers, channel scale) when asked, project 1x1 (+ fused residual add where the
    shapes match); then a 1x1 conv to 1280 channels, global pooling and the classifier."""
    x = net.conv(stem, net.image(224, 224, 3), 32, 3, stride=2)
    i = 0
    for expand, k, s, c, n in blocks:
        for r in range(n):
            stride = s if r == 0 else 1
            name = f"block{i}"
            y = x
            if expand != 1:
                y = net.conv(f"{name}.expand", y, expand * x.c, 1)
            y = net.conv(f"{name}.depthwise", y, y.c, k, stride=stride, groups=y.c)
            if squeeze_excite:
                squeezed = net.global_pool(f"{name}.se.pool", y)
                squeezed = net.fc(f"{name}.se.reduce", squeezed, max(1, x.c // 4), activation="swish")
                squeezed = net.fc(f"{name}.se.expand", squeezed, y.c, activation="sigmoid")
                y = net.scale(f"{name}.se.scale", y, squeezed)
            residual = x if stride == 1 and x.c == c else None
            x = net.conv(f"{name}.project", y, c, 1, shortcut=residual)
            i += 1
    x = net.conv(head, x, 1280, 1)
    x = net.global_pool("avgpool", x)
    net.fc("classifier", x, 1000)
    return net.to_dict()


# ---------------------------------------------------------------------- U-Net
UNET_SOURCE = ("Ronneberger, Fischer, Brox: U-Net: Convolutional Networks for Biomedical "
               "Image Segmentation, MICCAI 2015 (Fig. 1: 572x572 input, unpadded 3x3 convs)")


def unet(batch: int = 1, width: int = 1) -> dict[str, Any]:
    """The original U-Net: unpadded convs, 2x2 max pools, 2x2 up-convolutions, the
    skip connection centre-cropped and concatenated, a 1x1 conv to 2 classes."""
    net = CNN("unet", batch, width, UNET_SOURCE)
    x = net.image(572, 572, 1)
    skips = []
    for level, c in enumerate((64, 128, 256, 512)):
        x = net.conv(f"down{level}.conv1", x, c, 3, pad=0, bias=True)
        x = net.conv(f"down{level}.conv2", x, c, 3, pad=0, bias=True)
        skips.append(x)
        x = net.pool(f"down{level}.pool", x, 2, 2)
    x = net.conv("bottom.conv1", x, 1024, 3, pad=0, bias=True)
    x = net.conv("bottom.conv2", x, 1024, 3, pad=0, bias=True)
    for level, c in reversed(list(enumerate((64, 128, 256, 512)))):
        x = net.up_conv(f"up{level}.upconv", x, c)
        x = net.crop_concat(f"up{level}.concat", skips[level], x)
        x = net.conv(f"up{level}.conv1", x, c, 3, pad=0, bias=True)
        x = net.conv(f"up{level}.conv2", x, c, 3, pad=0, bias=True)
    net.conv("head", x, 2, 1, pad=0, bias=True)
    return net.to_dict()
