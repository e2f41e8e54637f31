"""Tasks of exercises/04_tensor_cores_and_alignment_exercises.ipynb: multiples and padding."""

from __future__ import annotations

from ..core.alignment import A100_MULTIPLES, next_multiple
from ..core.dtypes import dtype
from ..core.gemm import gemm
from ._check import Mistake, Params, Task


def _speedup(p: Params) -> float:
    def t(k: int) -> float:
        return gemm(p["m"], p["n"], k, dtype=p["dtype"], gpu=p["gpu"]).predicted_time_s

    return t(p["k"]) / t(p["k_padded"])


def _helps(p: Params) -> str:
    # "Helps" = the model predicts at least a 10 % shorter time after padding.
    return "yes" if _speedup(p) > 1.1 else "no"


TASKS = [
    Task(
        id="04.multiple",
        question="multiple of elements a dimension should have for Tensor Cores (16 bytes)",
        kind="integer",
        params={"dtype": "fp16"},
        expected=lambda p: dtype(p["dtype"]).tensor_core_multiple,
        mistakes=(
            Mistake(
                "bytes for elements",
                lambda p: 16,
                "the rule is 16 bytes; divide by the element size to get elements.",
            ),
            Mistake(
                "bits",
                lambda p: 128,
                "16 bytes is 128 bits; the question asks for elements of the dtype.",
            ),
        ),
        hint="16 bytes ÷ bytes per element of the dtype.",
    ),
    Task(
        id="04.pad_vocab",
        question="smallest vocabulary size >= vocab that meets the dtype's Tensor Core multiple",
        kind="integer",
        params={"vocab": 33708, "dtype": "fp16"},
        expected=lambda p: next_multiple(p["vocab"], dtype(p["dtype"]).tensor_core_multiple),
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
                "too generous",
                lambda p: [next_multiple(p["vocab"], m) for m in (32, 64, 128, 256)],
                "that size is aligned, but larger than needed: the smallest multiple of the "
                "Tensor Core rule will do.",
            ),
        ),
        hint="round vocab up to the next multiple of 8 (fp16).",
    ),
    Task(
        id="04.a100_multiple",
        question="multiple that runs an A100 Tensor Core GEMM most efficiently for the dtype",
        kind="integer",
        params={"dtype": "fp16"},
        expected=lambda p: A100_MULTIPLES[dtype(p["dtype"]).name],
        mistakes=(
            Mistake(
                "the minimum",
                lambda p: dtype(p["dtype"]).tensor_core_multiple,
                "that is the 16-byte minimum for any Tensor Core GPU; on A100 the table "
                "recommends a larger multiple (128 bytes).",
            ),
        ),
        hint="read the A100 row of the Tensor Core requirements table.",
    ),
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
