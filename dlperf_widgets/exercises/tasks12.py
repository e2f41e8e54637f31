"""Tasks of exercises/12_low_precision_exercises.ipynb: FP8 scales, the bytes of a
block-scaled format, and an FP8 layer sized for alignment, time and memory."""

from __future__ import annotations

from typing import Any

from ._check import Mistake, Params, Task, first_design


def _fp8_scale(p: Params, **change: Any) -> float:
    from ..core.scaling import fp8_scale

    q = {**p, **change}
    return float(fp8_scale(q["amax"], q["format"], margin=q["margin"]))


def _hidden_problem(p: Params, h: int) -> str:
    """'' when an FP8 Linear layer of h x h weights is aligned for Tensor Cores, math-bound
    on ``tokens`` tokens, within the time budget and within the weight-memory budget."""
    from ..core.dtypes import dtype
    from ..core.gemm import gemm

    d = dtype(p["dtype"])
    multiple = 16 // d.bytes_per_element  # 16-byte alignment of the rows
    if h % multiple:
        return (
            f"{h} is not a multiple of {multiple}: one-byte FP8 needs dimensions in multiples "
            "of 16 elements (16 bytes) for the Tensor Core kernels."
        )
    weight_bytes = h * h * d.bytes_per_element
    if weight_bytes > p["weight_budget_bytes"]:
        return (
            f"h = {h} needs {weight_bytes / 2**20:.0f} MiB of FP8 weights, over the "
            f"{p['weight_budget_bytes'] / 2**20:.0f} MiB budget; take a smaller h."
        )
    g = gemm(p["tokens"], h, h, dtype=p["dtype"], gpu=p["gpu"])
    if g.limiter != "math":
        return (
            f"at h = {h} the GEMM is {g.limiter}-bound (intensity "
            f"{g.arithmetic_intensity:.0f} < ops:byte {g.ops_per_byte:.0f}): too small to "
            "use FP8's math rate; take a larger h."
        )
    if g.predicted_time_s > p["budget_s"]:
        return (
            f"at h = {h} the model predicts {g.predicted_time_s * 1e6:.0f} us, over the "
            f"{p['budget_s'] * 1e6:.0f} us budget; take a smaller h."
        )
    return ""


def _largest_hidden(p: Params) -> int:
    return first_design(_hidden_problem, p, range(1 << 14, 0, -16), "hidden size")


def _block_bytes(p: Params, **change: Any) -> float:
    """Bytes of ``params`` weights stored in a block-scaled format, the block scales included
    (the one FP32 scale per tensor of NVFP4 is negligible and left out)."""
    from ..core.scaling import block_format

    q = {**p, **change}
    return q["params"] * block_format(q["format"]).bits_per_element / 8


TASKS = [
    Task(
        id="12.fp8_scale",
        question="per-tensor scale that maps the tensor's amax onto FP8 E4M3's largest value",
        kind="number",
        params={"amax": 3.5, "format": "fp8_e4m3", "margin": 0},
        expected=_fp8_scale,
        rel_tol=1e-6,
        mistakes=(
            Mistake(
                "E5M2's max",
                lambda p: _fp8_scale(p, format="fp8_e5m2"),
                "that uses E5M2's largest value (57344); the tensor is cast to E4M3, whose "
                "largest value is 448.",
            ),
            Mistake(
                "inverted",
                lambda p: 1 / _fp8_scale(p),
                "the scale multiplies the tensor before the cast, so it is max / amax, not "
                "amax / max.",
            ),
            Mistake(
                "FP16's max",
                lambda p: 65504 / p["amax"],
                "65504 is FP16's largest value; E4M3 stops at 448.",
            ),
        ),
        hint="scale = 448 / amax: after multiplying, the largest magnitude lands on 448.",
    ),
    Task(
        id="12.block_bytes",
        question="bytes of the model's weights stored in NVFP4, block scales included",
        kind="number",
        unit="B",
        params={"params": 70e9, "format": "nvfp4"},
        expected=_block_bytes,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "scales left out",
                lambda p: p["params"] * 4 / 8,
                "that counts the 4-bit elements only: every block of 16 also stores an 8-bit "
                "E4M3 scale, half a bit more per element.",
            ),
            Mistake(
                "MX block",
                lambda p: _block_bytes(p, format="mxfp4"),
                "that is MXFP4's share (one 8-bit scale per 32 elements); NVFP4 has one per 16.",
            ),
            Mistake(
                "bits, not bytes",
                lambda p: _block_bytes(p) * 8,
                "that is a count of bits; divide by 8 for bytes.",
            ),
        ),
        hint="bytes = parameters x (4 + 8 / 16) bits / 8.",
    ),
    Task(
        id="12.fp8_hidden",
        question="hidden size h of an FP8 h x h Linear layer meeting alignment, math-bound, "
        "time and weight budgets",
        kind="design",
        params={
            "tokens": 8192,
            "dtype": "fp8_e4m3",
            "gpu": "H100-SXM",
            "budget_s": 200e-6,
            "weight_budget_bytes": 16 * 2**20,
        },
        expected=_largest_hidden,
        validate=_hidden_problem,
        mistakes=(
            Mistake(
                "FP16 rule",
                lambda p: 4100,
                "4100 is a multiple of 4 but not of 16: the FP16 habit of 8 elements is 16 "
                "bytes; one-byte FP8 needs multiples of 16 elements.",
            ),
        ),
        hint="try multiples of 16 with gemm(tokens, h, h, dtype='fp8_e4m3'): read limiter "
        "and predicted_time_s, and count h*h bytes of weights.",
    ),
]
