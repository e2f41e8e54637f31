"""Tasks of exercises/05_layer_checklists_exercises.ipynb: layers as GEMMs, their checklists."""

from __future__ import annotations

from typing import Any

from ..core.dtypes import dtype
from ..core.layers import layer
from ._check import Mistake, Params, Task

LIMITERS = ("math", "memory", "latency")


def _layer(p: Params) -> Any:
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


# -- design: layer sizes under a memory and a time budget ------------------------------------
def _all_math(lay: Any) -> str | None:
    """The first pass of a layer that is not math-bound, or None."""
    for p in lay.passes:
        if p.limiter != "math":
            return f"its {p.pass_} GEMM ({p.m}×{p.n}×{p.k}) is {p.limiter}-bound"
    return None


WIDTH = {
    "inputs": 1024,
    "batch": 512,
    "dtype": "fp16",
    "gpu": "A100",
    "min_outputs": 1024,
    "budget_bytes": 4 * 2**20,
    "time_budget_s": 45e-6,
}


def _width_ok(p: Params, h: int) -> tuple[bool, str]:
    size = dtype(p["dtype"]).bytes_per_element
    multiple = dtype(p["dtype"]).tensor_core_multiple
    if h < p["min_outputs"]:
        return False, f"the layer needs at least {p['min_outputs']} outputs (got {h})."
    if h % multiple:
        return False, f"{h} is not a multiple of {multiple}: Tensor Cores want it aligned."
    weights = h * p["inputs"] * size
    if weights > p["budget_bytes"]:
        return False, (
            f"{h} outputs × {p['inputs']} inputs take {weights:,} B of weights, over the "
            f"{p['budget_bytes']:,} B budget."
        )
    lay = layer(
        "linear", batch=p["batch"], inputs=p["inputs"], outputs=h, dtype=p["dtype"], gpu=p["gpu"]
    )
    if lay.predicted_time_s > p["time_budget_s"]:
        return False, (
            f"forward and backward are predicted to take {lay.predicted_time_s * 1e6:.1f} us, "
            f"over the {p['time_budget_s'] * 1e6:g} us budget: fewer outputs."
        )
    slow = _all_math(lay)
    if slow:
        return False, f"{slow}: more outputs raise the intensity."
    return True, (
        f"{h} outputs: {weights:,} B of weights, predicted "
        f"{lay.predicted_time_s * 1e6:.1f} us, every pass math-bound."
    )


def _width(p: Params) -> int:
    step = dtype(p["dtype"]).tensor_core_multiple
    for h in range(-(-p["min_outputs"] // step) * step, 65536 + 1, step):
        if _width_ok(p, h)[0]:
            return h
        if h * p["inputs"] * dtype(p["dtype"]).bytes_per_element > p["budget_bytes"]:
            break
    raise ValueError("no output width meets both budgets")


# -- design: a batch that puts every pass past the ridge -------------------------------------
BATCH = {"inputs": 4096, "outputs": 4096, "dtype": "fp16", "gpu": "A100", "budget_bytes": 4 * 2**20}


def _batch_ok(p: Params, b: int) -> tuple[bool, str]:
    multiple = dtype(p["dtype"]).tensor_core_multiple
    if b < 1:
        return False, f"the batch must be at least 1 (got {b})."
    if b % multiple:
        return False, (
            f"{b} is not a multiple of {multiple}: the batch is K of the weight-gradient "
            "GEMM, so it should be aligned too."
        )
    acts = b * (p["inputs"] + p["outputs"]) * dtype(p["dtype"]).bytes_per_element
    if acts > p["budget_bytes"]:
        return False, (
            f"a batch of {b} keeps {acts:,} B of input and output activations, over the "
            f"{p['budget_bytes']:,} B budget."
        )
    lay = layer(
        "linear",
        batch=b,
        inputs=p["inputs"],
        outputs=p["outputs"],
        dtype=p["dtype"],
        gpu=p["gpu"],
    )
    slow = _all_math(lay)
    if slow:
        return False, f"{slow}: a larger batch reuses each weight more."
    return True, f"a batch of {b}: every pass math-bound, {acts:,} B of activations."


def _batch(p: Params) -> int:
    step = dtype(p["dtype"]).tensor_core_multiple
    for b in range(step, 65536 + 1, step):
        if _batch_ok(p, b)[0]:
            return b
    raise ValueError("no batch meets the budget with every pass math-bound")


def _fwd_only(p: Params, h: int) -> bool:
    """Widths whose forward pass fits the time budget but whose training step does not."""
    if h * p["inputs"] * dtype(p["dtype"]).bytes_per_element > p["budget_bytes"]:
        return False
    lay = layer(
        "linear", batch=p["batch"], inputs=p["inputs"], outputs=h, dtype=p["dtype"], gpu=p["gpu"]
    )
    return lay.forward_time_s <= p["time_budget_s"] < lay.predicted_time_s


def _just_short(p: Params) -> list[int]:
    """Aligned batches up to 32 below the smallest valid one (still memory-bound)."""
    first = _batch(p)
    return [b for b in range(max(8, first - 32), first, 8) if not _batch_ok(p, b)[0]]


TASKS += [
    Task(
        id="05.width_design",
        question=(
            "an output width for the Linear layer: at least min_outputs, weights within "
            "budget_bytes, forward + backward within time_budget_s, every pass math-bound"
        ),
        kind="design",
        params=WIDTH,
        expected=_width,
        validate=_width_ok,
        mistakes=(
            Mistake(
                "forgot the backward pass",
                lambda p: [h for h in range(p["min_outputs"], 8193, 64) if _fwd_only(p, h)],
                "the forward pass alone fits the time budget, but training also runs the "
                "two backward GEMMs (dgrad and wgrad): about three times the forward time.",
            ),
        ),
        hint="the weights bound the width from above; try a few widths with layer(...).",
    ),
    Task(
        id="05.batch_design",
        question=(
            "a batch size that makes all three GEMMs of the Linear layer math-bound while "
            "its input and output activations fit in budget_bytes"
        ),
        kind="design",
        params=BATCH,
        expected=_batch,
        validate=_batch_ok,
        mistakes=(
            Mistake(
                "just short of the ridge",
                _just_short,
                "close: at that batch the GEMMs are still just on the memory side of the "
                "ridge (intensity below ops:byte); a few more samples per batch cross it.",
            ),
        ),
        hint="look at the limiter of every pass in layer('linear', ...).passes.",
    ),
]
