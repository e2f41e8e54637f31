"""Tasks of exercises/07_mixed_precision_and_sparsity_exercises.ipynb: formats, scaling, 2:4."""

from __future__ import annotations

import math
from typing import Any

from ._check import Mistake, Params, Task


def _fmt(name: str) -> Any:
    from ..core.formats import number_format

    return number_format(name)


def _scale_exponent(p: Params, threshold: str = "min_subnormal") -> int:
    """Smallest k for which gradient x 2**k reaches the format's ``threshold``."""
    limit = getattr(_fmt(p["format"]), threshold)
    return max(0, math.ceil(math.log2(limit / p["gradient"])))


def _e2e(p: Params) -> float:
    from ..core.sparsity import amdahl_speedup, sparse_gemm

    s = sparse_gemm(p["m"], p["n"], p["k"], dtype=p["dtype"], gpu=p["gpu"]).gemm_speedup
    return float(amdahl_speedup(p["fraction"], s))


TASKS = [
    Task(
        id="07.fp16_max",
        question="largest finite value of the format",
        kind="number",
        params={"format": "fp16"},
        expected=lambda p: _fmt(p["format"]).max,
        rel_tol=1e-6,
        mistakes=(
            Mistake(
                "integer range",
                lambda p: 2 ** _fmt(p["format"]).storage_bits - 1,
                "that is the largest 16-bit unsigned integer; a float spends bits on the "
                "exponent and the sign: (2 - 2**-10) × 2**15.",
            ),
        ),
        hint="(2 - epsilon) × 2**(largest exponent).",
    ),
    Task(
        id="07.bf16_epsilon",
        question="gap between 1 and the next larger number in the format",
        kind="number",
        params={"format": "bf16"},
        expected=lambda p: _fmt(p["format"]).epsilon,
        rel_tol=1e-6,
        mistakes=(
            Mistake(
                "FP16's",
                lambda p: _fmt("fp16").epsilon,
                "that is FP16's epsilon (10 significand bits); BF16 keeps only 7.",
            ),
            Mistake(
                "counted the implicit bit",
                lambda p: _fmt(p["format"]).epsilon / 2,
                "epsilon is 2**-(stored significand bits); the leading 1 is not stored.",
            ),
        ),
        hint="2 to the power minus the number of stored significand bits.",
    ),
    Task(
        id="07.scale_exponent",
        question="smallest k such that gradient × 2**k is at least the smallest FP16 subnormal",
        kind="integer",
        params={"gradient": 1e-8, "format": "fp16"},
        expected=_scale_exponent,
        mistakes=(
            Mistake(
                "normal range",
                lambda p: _scale_exponent(p, "min_normal"),
                "subnormal numbers count too: the smallest positive FP16 value is 2**-24, "
                "not the smallest normal 2**-14.",
            ),
            Mistake(
                "one short",
                lambda p: _scale_exponent(p) - 1,
                "with that scale the gradient is still below 2**-24: one more doubling.",
            ),
        ),
        hint="solve gradient × 2**k >= 2**-24 for the smallest whole k.",
    ),
    Task(
        id="07.sparse_end_to_end",
        question="whole-step speed-up when GEMMs taking this fraction of the time use 2:4 sparsity",
        kind="number",
        params={"m": 8192, "n": 8192, "k": 8192, "dtype": "fp16", "gpu": "A100", "fraction": 0.6},
        expected=_e2e,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "used the sparse peak for everything",
                lambda p: 2.0,
                "2× is the sparse Tensor Core peak for the GEMMs alone; the rest of the step "
                "does not speed up (Amdahl's law).",
            ),
            Mistake(
                "added the fraction",
                lambda p: 1 + p["fraction"],
                "speed-ups don't add: time = (1 - f) + f / 2 of the original.",
            ),
        ),
        hint="1 / ((1 - f) + f / s) with s the GEMM speed-up.",
    ),
]
