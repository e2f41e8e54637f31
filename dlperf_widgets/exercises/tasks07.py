"""Tasks of exercises/07_mixed_precision_and_sparsity_exercises.ipynb: formats, scaling, 2:4."""

from __future__ import annotations

import math
from typing import Any

from ._check import Mistake, Params, Task, first_design


def _fmt(name: str) -> Any:
    from ..core.formats import number_format

    return number_format(name)


def _scale_exponent(p: Params, threshold: str = "min_subnormal") -> int:
    """Smallest k for which gradient x 2**k reaches the format's ``threshold``."""
    limit = getattr(_fmt(p["format"]), threshold)
    return max(0, math.ceil(math.log2(limit / p["gradient"])))


def _sparse(p: Params, m: int) -> Any:
    from ..core.sparsity import sparse_gemm

    return sparse_gemm(m, p["n"], p["k"], dtype=p["dtype"], gpu=p["gpu"])


def _sparse_problem(p: Params, m: int) -> str:
    """'' when 2:4 sparsity speeds the M-token GEMM up enough and it fits the time budget."""
    r = _sparse(p, m)
    if r.gemm_speedup < p["min_speedup"]:
        return (
            f"at M = {m} the GEMM speeds up only {r.gemm_speedup:.2f}x: too few tokens, so "
            "it is memory-bound and the doubled math rate hardly helps; take more tokens."
        )
    if r.sparse_time_s > p["budget_s"]:
        return (
            f"at M = {m} the sparse GEMM takes {r.sparse_time_s * 1e6:.0f} us, over the "
            f"{p['budget_s'] * 1e6:.0f} us budget; take fewer tokens."
        )
    return ""


def _smallest_sparse_batch(p: Params) -> int:
    return first_design(_sparse_problem, p, range(8, 1 << 16, 8), "number of tokens")


def _overflow_fix(p: Params) -> str:
    """Values beyond FP16's largest finite number need BF16's range; values below its
    smallest subnormal need loss scaling."""
    fp16 = _fmt("fp16")
    if p["amax"] > fp16.max:
        return "bf16"
    if p["gradient"] < fp16.min_subnormal:
        return "loss scaling"
    return "nothing"


def _e2e(p: Params) -> float:
    from ..core.sparsity import amdahl_speedup, sparse_gemm

    s = sparse_gemm(p["m"], p["n"], p["k"], dtype=p["dtype"], gpu=p["gpu"]).gemm_speedup
    return float(amdahl_speedup(p["fraction"], s))


TASKS = [
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
    Task(
        id="07.sparse_batch",
        question="tokens M per 2:4 sparse GEMM (N = K = 4096) giving at least the speed-up "
        "within the time budget",
        kind="design",
        params={
            "n": 4096,
            "k": 4096,
            "dtype": "fp16",
            "gpu": "A100",
            "min_speedup": 1.5,
            "budget_s": 100e-6,
        },
        expected=_smallest_sparse_batch,
        validate=_sparse_problem,
        mistakes=(
            Mistake(
                "decode-sized batch",
                lambda p: 16,
                "with 16 tokens the GEMM is memory-bound: sparsity halves the math, not the "
                "weight traffic, so it gains almost nothing; the design needs enough tokens "
                "to cross the ridge.",
            ),
        ),
        hint="sweep M with sparse_gemm and read gemm_speedup and sparse_time_s.",
        explain=lambda p: (
            "It is math-bound enough to gain from the sparse rate and fits the budget."
        ),
    ),
    Task(
        id="07.overflow_fix",
        question="a FP16 run's activations reach this amax: which fix",
        kind="choice",
        choices=("loss scaling", "bf16", "nothing"),
        params={"amax": 1.2e5, "gradient": 1e-3},
        expected=_overflow_fix,
        mistakes=(
            Mistake(
                "scaled the loss",
                lambda p: "loss scaling",
                "loss scaling moves small gradients up; it does nothing for forward values "
                "above FP16's largest number (65504). BF16 has FP32's exponent range.",
            ),
            Mistake(
                "nothing",
                lambda p: "nothing",
                "1.2e5 is above FP16's largest finite value: it becomes inf.",
            ),
        ),
        hint="compare amax with FP16's largest value and the gradient with its smallest.",
    ),
]
