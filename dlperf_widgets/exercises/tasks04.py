"""Tasks of exercises/04_tensor_cores_and_alignment_exercises.ipynb: padding a vocabulary under
a memory budget, when padding pays, and a published measurement to debug."""

from __future__ import annotations

from ..core.alignment import next_multiple
from ..core.dtypes import dtype
from ..core.errors import InvalidParameter
from ..core.gemm import gemm, gemm_flops
from ..core.gpus import gpu
from ..core.results import format_quantity
from ._check import Mistake, Params, Task

MAX_CANDIDATES = 100_000
"""Most padded vocabulary sizes a check tries (each one a GEMM prediction)."""


def _speedup(p: Params) -> float:
    def t(k: int) -> float:
        return gemm(p["m"], p["n"], k, dtype=p["dtype"], gpu=p["gpu"]).predicted_time_s

    return t(p["k"]) / t(p["k_padded"])


def _helps(p: Params) -> str:
    # "Helps" = the model predicts at least a 10 % shorter time after padding.
    return "yes" if _speedup(p) > 1.1 else "no"


TASKS = [
    Task(
        id="04.speedup",
        question="predicted time with K = k divided by the time with K = k_padded",
        kind="number",
        params={"m": 4096, "n": 4096, "k": 4095, "k_padded": 4096, "dtype": "fp16", "gpu": "A100"},
        expected=_speedup,
        rel_tol=0.05,
        mistakes=(
            Mistake(
                "proportional to work",
                lambda p: p["k"] / p["k_padded"],
                "the work barely changes; what changes is whether the operands can be loaded "
                "16 bytes at a time.",
            ),
            Mistake(
                "upside down",
                lambda p: 1 / _speedup(p),
                "time before ÷ time after: the padded GEMM is the faster one.",
            ),
        ),
        hint="run gemm() for both K and divide the predicted_time_s.",
    ),
    Task(
        id="04.helps_batch1",
        question="does padding K help the batch-1 GEMM by 10 % or more? 'yes' or 'no'",
        kind="choice",
        choices=("yes", "no"),
        params={"m": 4096, "n": 1, "k": 4095, "k_padded": 4096, "dtype": "fp16", "gpu": "A100"},
        expected=_helps,
        mistakes=(
            Mistake(
                "yes",
                lambda p: "yes",
                "with N = 1 the GEMM is memory-bound: it waits for bytes, and faster "
                "Tensor Core loads change nothing. Alignment pays only when math-bound.",
            ),
            Mistake(
                "no",
                lambda p: "no",
                "with these sizes the GEMM is math-bound, so alignment does matter.",
            ),
        ),
    ),
]


# -- design: pad a vocabulary under a memory budget -----------------------------------------
VOCAB = {
    "vocab": 33708,
    "hidden": 1024,
    "tokens": 8192,
    "dtype": "fp16",
    "gpu": "A100",
    "budget_bytes": 69.5e6,
    "time_tolerance": 0.01,
}


def _vocab_time(p: Params, v: int) -> float:
    # The output layer as a GEMM: M = tokens, N = vocabulary, K = hidden.
    return gemm(p["tokens"], v, p["hidden"], dtype=p["dtype"], gpu=p["gpu"]).predicted_time_s


def _vocab_candidates(p: Params) -> list[int]:
    """Aligned sizes from the vocabulary up to the memory budget."""
    step = dtype(p["dtype"]).tensor_core_multiple
    top = int(p["budget_bytes"] // (p["hidden"] * dtype(p["dtype"]).bytes_per_element))
    candidates = range(next_multiple(p["vocab"], step), top + 1, step)
    if len(candidates) > MAX_CANDIDATES:  # counted before any list is built
        raise InvalidParameter(
            f"'budget_bytes' must leave at most {MAX_CANDIDATES} aligned vocabulary sizes to "
            f"try (got {len(candidates)})"
        )
    return list(candidates)


def _vocab_ok(p: Params, v: int) -> tuple[bool, str]:
    step = dtype(p["dtype"]).tensor_core_multiple
    if v < p["vocab"]:
        return False, f"{v} rows cannot hold {p['vocab']} words: padding only adds rows."
    weights = v * p["hidden"] * dtype(p["dtype"]).bytes_per_element
    if weights > p["budget_bytes"]:
        return False, (
            f"{v} rows of {p['hidden']} weights take {weights:,} B, over the "
            f"{p['budget_bytes']:,.0f} B budget: pad less."
        )
    if v % step:
        return False, (
            f"{v} is not a multiple of {step}: {p['dtype']} Tensor Cores want dimensions "
            f"that are multiples of 16 bytes ({step} elements)."
        )
    candidates = _vocab_candidates(p)
    best = min(_vocab_time(p, c) for c in candidates)
    t = _vocab_time(p, v)
    if t > best * (1 + p["time_tolerance"]):
        return False, (
            f"aligned and within budget, but predicted {format_quantity(t, 's')} against "
            f"{format_quantity(best, 's')} for the best size in the budget."
        )
    return True, (
        f"{v} rows: predicted {format_quantity(t, 's')} (unpadded "
        f"{format_quantity(_vocab_time(p, p['vocab']), 's')}), "
        f"{format_quantity(weights, 'B')} of weights."
    )


def _vocab_design(p: Params) -> int:
    for v in _vocab_candidates(p):
        if _vocab_ok(p, v)[0]:
            return v
    raise ValueError("no aligned vocabulary size fits the budget")


# -- debugging: a published measurement of a memory-bound GEMM ------------------------------
# A row of Baidu DeepBench's V100 results shipped in dlperf_widgets/live/data/deepbench_v100.csv
# (measured_gemms('V100', 'fp16')): 40 x 8457 x 1760, FP16 inputs, beta = 1.
DEEPBENCH_ROW = {"m": 40, "n": 8457, "k": 1760, "dtype": "fp16", "gpu": "V100", "beta": 1.0}
FIXES = ("pad n", "batch 8x more rows", "fp32")


def _fix_rate(p: Params, fix: str) -> float:
    """Predicted FLOP/s of useful work after the fix (padding is not useful work)."""
    m, n, dt = p["m"], p["n"], p["dtype"]
    if fix == "pad n":
        n = next_multiple(p["n"], dtype(dt).tensor_core_multiple)
    elif fix == "batch 8x more rows":
        m = 8 * p["m"]
    else:
        dt = "fp32"
    t = gemm(m, n, p["k"], dtype=dt, gpu=p["gpu"], beta=p["beta"]).predicted_time_s
    return float(gemm_flops(m, p["n"], p["k"])) / t


def _best_fix(p: Params) -> str:
    return max(FIXES, key=lambda f: _fix_rate(p, f))


TASKS += [
    Task(
        id="04.vocab_design",
        question=(
            "a padded vocabulary size: holds every word, weights within budget_bytes, and "
            "a predicted time within time_tolerance of the best size in the budget"
        ),
        kind="design",
        params=VOCAB,
        expected=_vocab_design,
        validate=_vocab_ok,
        mistakes=(
            Mistake(
                "rounded down",
                lambda p: (
                    p["vocab"]
                    // dtype(p["dtype"]).tensor_core_multiple
                    * dtype(p["dtype"]).tensor_core_multiple
                ),
                "padding adds unused rows; it never drops words: round up.",
            ),
            Mistake(
                "a power of two",
                lambda p: 2 ** int(p["vocab"] - 1).bit_length(),
                "a power of two is aligned, but it nearly doubles the weights: the budget "
                "allows only a few hundred extra rows.",
            ),
        ),
        hint="round the vocabulary up to a multiple of 16 bytes' worth of elements, then "
        "check the weights against the budget.",
    ),
    Task(
        id="04.trace_fix",
        question=(
            "the measured GEMM reaches a small share of the V100's peak: which change raises "
            "its useful FLOP/s the most, 'pad n', 'batch 8x more rows' or 'fp32'?"
        ),
        kind="choice",
        choices=FIXES,
        params=DEEPBENCH_ROW,
        expected=_best_fix,
        mistakes=(
            Mistake(
                "pad n",
                lambda p: "pad n",
                "padding N to a multiple of 8 lets Tensor Cores load 16 bytes at a time, but "
                "with M = 40 the GEMM waits for its weights, not for the math: check its "
                "limiter before aligning.",
            ),
            Mistake(
                "fp32",
                lambda p: "fp32",
                "FP32 doubles the bytes of every operand; a memory-bound GEMM gets slower.",
            ),
        ),
        hint="find the limiter first: is the GEMM waiting for math or for bytes?",
    ),
]


# -- debugging: did an unaligned GEMM use Tensor Cores? --------------------------------------
# DeepBench measured 5128 x 9124 x 4096 with FP16 inputs and FP32 math on a V100; N = 9124 is
# not a multiple of 8. Its rows are in deepbench_v100.csv (measured_gemms('V100', 'fp16')).
UNALIGNED_ROW = {"m": 5128, "n": 9124, "k": 4096, "dtype": "fp16", "gpu": "V100"}


def _measured_rate(p: Params) -> float:
    """Median measured FLOP/s of the shipped measurements of this GEMM."""
    import numpy as np

    from ..live.traces import measured_gemms

    t = measured_gemms(p["gpu"], p["dtype"])
    sel = (t["m"] == p["m"]) & (t["n"] == p["n"]) & (t["k"] == p["k"]) & (t["batch"] == 1)
    if not sel.any():
        raise ValueError(f"no shipped measurement of {p['m']}x{p['n']}x{p['k']} on {p['gpu']}")
    return float(np.median(t["flops"][sel] / t["measured_time_s"][sel]))


def _used_tensor_cores(p: Params) -> str:
    # Without Tensor Cores, FP16 inputs with FP32 math run on the FP32 CUDA cores: a measured
    # rate above their peak can only come from Tensor Cores.
    return "yes" if _measured_rate(p) > gpu(p["gpu"]).peak_flops("fp32") else "no"


TASKS += [
    Task(
        id="04.trace_tensor_cores",
        question="did the measured GEMM with N = 9124 run on Tensor Cores? 'yes' or 'no'",
        kind="choice",
        choices=("yes", "no"),
        params=UNALIGNED_ROW,
        expected=_used_tensor_cores,
        mistakes=(
            Mistake(
                "no",
                lambda p: "no",
                "compare the measured FLOP/s with the FP32 CUDA-core peak: no path but the "
                "Tensor Cores reaches that rate. Alignment makes Tensor Cores efficient; "
                "this library ran them on an unaligned N anyway.",
            ),
            Mistake(
                "yes",
                lambda p: "yes",
                "the measured rate does not exceed what the FP32 CUDA cores can do, so the "
                "measurement alone does not show Tensor Cores at work.",
            ),
        ),
    ),
]
