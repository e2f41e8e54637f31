"""Tasks of exercises/05_layer_checklists_exercises.ipynb: layers as GEMMs, their checklists."""

from __future__ import annotations

from typing import Any

from ._check import Mistake, Params, Task

LIMITERS = ("math", "memory", "latency")


def _layer(p: Params) -> Any:
    from ..core.layers import layer

    opts = {k: v for k, v in p.items() if k not in ("kind", "pass")}
    return layer(p["kind"], **opts)


def _pass(p: Params) -> Any:
    return _layer(p).pass_named(p["pass"])


def _suggested(p: Params) -> int:
    for f in _layer(p).findings:
        if f.parameter == "in_channels" and f.suggested_value is not None:
            return int(f.suggested_value)
    raise ValueError("the checklist suggests no channel padding for this layer")


LINEAR = {"kind": "linear", "batch": 512, "inputs": 1024, "outputs": 4096, "dtype": "fp16"}
CONV = {
    "kind": "conv2d",
    "batch": 32,
    "in_channels": 64,
    "out_channels": 64,
    "height": 56,
    "width": 56,
    "kernel_size": 3,
    "dtype": "fp16",
    "gpu": "A100",
}

TASKS = [
    Task(
        id="05.wgrad_k",
        question="K (the summed dimension) of the Linear layer's weight-gradient GEMM",
        kind="integer",
        params={**LINEAR, "pass": "wgrad"},
        expected=lambda p: _pass(p).k,
        mistakes=(
            Mistake(
                "a weight dimension",
                lambda p: [p["inputs"], p["outputs"]],
                "the weight gradient sums, for each weight, over every sample of the batch: "
                "K is the batch size, which is why the batch should be a multiple of 8 too.",
            ),
        ),
        hint="dW = dY·Xᵀ: which dimension disappears in the product?",
    ),
    Task(
        id="05.conv_k",
        question="K of the convolution's forward implicit GEMM",
        kind="integer",
        params={**CONV, "pass": "forward"},
        expected=lambda p: _pass(p).k,
        mistakes=(
            Mistake(
                "channels only",
                lambda p: p["in_channels"],
                "each output value sums over the input channels and over the filter window: "
                "C × R × S.",
            ),
            Mistake(
                "window only",
                lambda p: p["kernel_size"] ** 2,
                "each output value sums over the whole filter window in every input channel: "
                "C × R × S.",
            ),
        ),
        hint="implicit GEMM: M = N·P·Q, N = output channels, K = C·R·S.",
    ),
    Task(
        id="05.first_conv_channels",
        question="channel count to pad a 3-channel (RGB) first convolution to",
        kind="integer",
        params={
            **CONV,
            "in_channels": 3,
            "height": 224,
            "width": 224,
            "kernel_size": 7,
            "stride": 2,
            "padding": 3,
        },
        expected=_suggested,
        mistakes=(
            Mistake(
                "the general rule",
                lambda p: 8,
                "8 is the general FP16 rule; for the first layer cuDNN has special kernels "
                "that only need C = 4, which wastes less work on padding.",
            ),
        ),
        hint="the checklist's finding for in_channels names the value.",
    ),
    Task(
        id="05.limiter_batch1",
        question="what limits the Linear layer's forward pass at batch 1?",
        kind="choice",
        choices=LIMITERS,
        params={**LINEAR, "batch": 1, "gpu": "V100", "pass": "forward"},
        expected=lambda p: _pass(p).limiter,
        mistakes=(
            Mistake(
                "math",
                lambda p: "math",
                "at batch 1 every weight is read to do one multiply-add: the intensity is "
                "about 1 FLOP/B, far below the ops:byte ratio.",
            ),
        ),
    ),
    Task(
        id="05.depthwise",
        question="what limits a depthwise 3×3 convolution's forward pass?",
        kind="choice",
        choices=LIMITERS,
        params={**CONV, "groups": 64, "pass": "forward"},
        expected=lambda p: _pass(p).limiter,
        mistakes=(
            Mistake(
                "math",
                lambda p: "math",
                "each output reads only 9 inputs of its own channel: a few FLOPs per byte, so "
                "depthwise convolutions wait for memory despite their small FLOP count.",
            ),
        ),
    ),
]
