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
        id="06.pool_ai",
        question="arithmetic intensity of 3×3 max pooling at stride 1 (FLOP/B)",
        kind="number",
        unit="FLOP/B",
        params={
            "kind": "maxpool",
            "shape": (32, 64, 56, 56),
            "kernel_size": 3,
            "stride": 1,
            "padding": 1,
            "dtype": "fp16",
            "gpu": "V100",
        },
        expected=lambda p: _fwd(p).arithmetic_intensity,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "forgot the write",
                lambda p: 2 * _fwd(p).arithmetic_intensity,
                "the output is written too: each element costs a read and a write.",
            ),
            Mistake("bits", lambda p: _fwd(p).arithmetic_intensity / 8, BITS),
        ),
        hint="9 comparisons per output; one element read and one written, 2 bytes each.",
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
