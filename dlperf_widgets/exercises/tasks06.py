"""Tasks of exercises/06_memory_limited_layers_exercises.ipynb: bytes, passes, small tensors."""

from __future__ import annotations

import math
from typing import Any

from ..core.dtypes import dtype
from ..core.gpus import gpu
from ._check import Mistake, Params, Task

LIMITERS = ("math", "memory", "latency")
BITS = "that looks like bits: divide by 8; sizes are in bytes (fp16 = 2 bytes)."


def _fwd(p: Params, **change: Any) -> Any:
    from ..core.memlimited import memory_op

    q = {**p, **change}
    opts = {k: v for k, v in q.items() if k != "kind"}
    return memory_op(q["kind"], **opts)[0]


def _tensor_bytes(p: Params) -> float:
    return math.prod(p["shape"]) * dtype(p["dtype"]).bytes_per_element


def _ideal_time(p: Params) -> float:
    return _fwd(p).bytes / gpu(p["gpu"]).memory_bandwidth_bytes_per_s


def _pool(p: Params, k: int) -> Any:
    shape = p["shape"]
    if k > min(shape[-2:]):
        raise ValueError(f"a {k}x{k} window is larger than the {shape[-2]}x{shape[-1]} image")
    return _fwd(
        {key: v for key, v in p.items() if key != "max_window"},
        kernel_size=k,
        stride=1,
        padding=k // 2,
        training=False,
    )


def _pool_limiter(p: Params, k: int) -> str:
    return str(_pool(p, k).limiter)


def _pool_limiter_tensor_cores(p: Params, k: int) -> str:
    """The verdict of a learner who compares with the Tensor Core ops:byte ratio."""
    ai = _pool(p, k).arithmetic_intensity
    return "math" if ai > gpu(p["gpu"]).ops_per_byte(p["dtype"]) else "memory"


def _largest_memory_window(p: Params, limiter: Any) -> int:
    """The largest odd window up to ``max_window`` whose forward pass is memory-bound (the
    model's limiter grows with the window: k² comparisons for the same bytes)."""
    best = 0
    for k in range(1, p["max_window"] + 1, 2):
        if k > min(p["shape"][-2:]):
            break
        if limiter(p, k) == "memory":
            best = k
        else:
            break
    if not best:
        raise ValueError("no window up to max_window is memory-bound")
    return best


BN = {"kind": "batchnorm", "shape": (32, 64, 56, 56), "dtype": "fp16", "gpu": "A100"}

TASKS = [
    Task(
        id="06.bn_bytes",
        question="bytes the forward pass of a non-persistent batch normalization moves",
        kind="number",
        unit="B",
        params={**BN, "persistent": False},
        expected=lambda p: _fwd(p).bytes,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "persistent",
                lambda p: _fwd(p, persistent=True).bytes,
                "that is the persistent, single-read kernel; the non-persistent one reads "
                "the input twice (statistics, then normalization) and writes once.",
            ),
            Mistake(
                "one pass",
                lambda p: _tensor_bytes(p),
                "the input is read (twice, here) and the output written: count every pass.",
            ),
            Mistake("bits", lambda p: _fwd(p).bytes * 8, BITS),
        ),
        hint="N·C·H·W elements × 2 bytes × the number of passes over the tensor.",
    ),
    Task(
        id="06.pool_window",
        question=(
            "largest odd window k of a k×k max pooling (stride 1, padding k // 2) whose "
            "forward pass the model still calls memory-bound"
        ),
        kind="integer",
        params={
            "kind": "maxpool",
            "shape": (32, 64, 56, 56),
            "dtype": "fp16",
            "gpu": "A100",
            "max_window": 63,
        },
        # the check prices every odd window up to max_window: a few hundred at most
        limits={"max_window": 511},
        expected=lambda p: _largest_memory_window(p, _pool_limiter),
        mistakes=(
            Mistake(
                "Tensor Core ratio",
                lambda p: _largest_memory_window(p, _pool_limiter_tensor_cores),
                "pooling compares values on the CUDA cores, not the Tensor Cores: compare "
                "its intensity with the pass's ops_per_byte, which is far lower than the "
                "GPU's FP16 ops:byte.",
            ),
            Mistake(
                "one too far",
                lambda p: _largest_memory_window(p, _pool_limiter) + 2,
                "at that window the model already calls the pass math-bound: take the odd "
                "window below.",
            ),
        ),
        hint="k² comparisons per output element, 4 bytes per element (one read, one write): "
        "find the largest odd k with k²/4 below the pass's ops_per_byte.",
        explain=lambda p: (
            "Everyday windows (2×2, 3×3) sit far below it: pooling is memory-bound in any "
            "real network."
        ),
    ),
    Task(
        id="06.relu_time",
        question=(
            "ideal time of a ReLU forward pass over the tensor at the full datasheet "
            "bandwidth, in seconds"
        ),
        kind="number",
        unit="s",
        params={"kind": "relu", "shape": (32, 64, 56, 56), "dtype": "fp16", "gpu": "A100"},
        # The guide's ideal (bytes / datasheet bandwidth); the model's predicted_time_s adds
        # the achievable share of the bandwidth and a fixed cost per kernel.
        expected=lambda p: _ideal_time(p),
        rel_tol=0.02,
        mistakes=(
            Mistake(
                "math time",
                lambda p: _fwd(p).math_time_s,
                "that is the math time; ReLU is memory-bound: bytes ÷ bandwidth.",
            ),
            Mistake(
                "forgot the write",
                lambda p: _ideal_time(p) / 2,
                "the output tensor is written as well: twice the bytes of the input.",
            ),
        ),
        hint="(input + output bytes) ÷ the GPU's memory bandwidth in B/s.",
    ),
    Task(
        id="06.small_limiter",
        question="what limits a ReLU over a 1×64×8×8 tensor?",
        kind="choice",
        choices=LIMITERS,
        params={"kind": "relu", "shape": (1, 64, 8, 8), "dtype": "fp16", "gpu": "A100"},
        expected=lambda p: _fwd(p).limiter,
        mistakes=(
            Mistake(
                "memory",
                lambda p: "memory",
                "8 KB cross DRAM in a few nanoseconds: far too little to saturate the "
                "bandwidth. Launch and ramp-up set the time, whatever the size.",
            ),
            Mistake("math", lambda p: "math", "ReLU does one comparison per element read."),
        ),
    ),
]


# -- estimation before measurement: a ReLU at two sizes --------------------------------------
SIZES = {"small": 2**16, "large": 2**22, "dtype": "fp32", "gpu": "A100"}


def _relu_bytes(p: Params, elements: int) -> float:
    return _fwd({"kind": "relu", "dtype": p["dtype"], "gpu": p["gpu"]}, elements=elements).bytes


def _bytes_ratio(p: Params) -> float:
    return _relu_bytes(p, p["large"]) / _relu_bytes(p, p["small"])


TASKS += [
    Task(
        id="06.predict_ratio",
        question=(
            "predicted time of a ReLU over `large` elements divided by the time over `small` "
            "elements, if both stream at the same bandwidth"
        ),
        kind="number",
        params=SIZES,
        expected=_bytes_ratio,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "upside down",
                lambda p: 1 / _bytes_ratio(p),
                "the larger tensor takes longer: divide the large time by the small one.",
            ),
            Mistake(
                "difference of the exponents",
                lambda p: math.log2(p["large"]) - math.log2(p["small"]),
                "2**22 / 2**16 is 2**6 = 64, not 6: subtracting exponents gives the power of "
                "two, not the ratio.",
            ),
        ),
        hint="a memory-bound kernel's time follows its bytes; how many times more bytes?",
    ),
    Task(
        id="06.gap_reason",
        question=(
            "timed without flushing the cache, why can the measured ratio come out above "
            "the bytes ratio: 'cache', 'fixed cost per call' or 'math'?"
        ),
        kind="choice",
        choices=("cache", "fixed cost per call", "math"),
        params={},
        expected=lambda p: "cache",
        mistakes=(
            Mistake(
                "fixed cost per call",
                lambda p: "fixed cost per call",
                "a fixed cost adds the same time to both runs, so it pulls the ratio below "
                "the bytes ratio, not above it.",
            ),
            Mistake(
                "math",
                lambda p: "math",
                "ReLU does one comparison per element it reads: the math never sets its pace.",
            ),
        ),
        explain=lambda p: (
            "The small tensor fits in the processor's cache and is read from there again on "
            "every repeat; the large one does not, so only it pays the DRAM bandwidth."
        ),
    ),
]


# -- critique: the fixed cost the kit adds to every kernel -----------------------------------


def _saturation(p: Params) -> float:
    from ..core.memlimited import saturation_bytes

    return float(saturation_bytes(p["gpu"], p["dtype"]))


def _overhead_s(p: Params) -> float:
    from ..core.calibration import achievable

    return float(achievable(gpu(p["gpu"]), p["dtype"]).kernel_overhead_s)


TASKS.append(
    Task(
        id="06.saturation_bytes",
        question=(
            "bytes a memory-bound kernel must move before moving them takes longer than "
            "the kit's fixed cost per kernel"
        ),
        kind="number",
        unit="B",
        params={"gpu": "A100", "dtype": "fp16"},
        expected=_saturation,
        rel_tol=0.02,
        mistakes=(
            Mistake(
                "datasheet bandwidth",
                lambda p: gpu(p["gpu"]).memory_bandwidth_bytes_per_s * _overhead_s(p),
                "the kit streams at the achievable share of the bandwidth, not the "
                "datasheet figure: multiply by the memory fraction too.",
            ),
        ),
        hint="achievable bandwidth (datasheet × memory fraction) × fixed cost per kernel; "
        "`achievable(gpu(...), 'fp16')` in dlperf_widgets.core.calibration has both.",
        explain=lambda p: (
            f"Below about {_saturation(p) / 2**20:.0f} MiB moved, the fixed cost is more than "
            "half of the kit's time for a kernel, so that time is only as good as one constant."
        ),
    )
)
