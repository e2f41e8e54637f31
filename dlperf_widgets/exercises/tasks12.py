"""Tasks of exercises/12_low_precision_and_scale_exercises.ipynb: FP8 scales, block formats,
MFU, pipeline bubbles, all-reduce time, and FP8 alignment."""

from __future__ import annotations

from typing import Any

from ._check import Mistake, Params, Task, first_design


def _fp8_scale(p: Params, **change: Any) -> float:
    from ..core.scaling import fp8_scale

    q = {**p, **change}
    return float(fp8_scale(q["amax"], q["format"], margin=q["margin"]))


def _mfu(p: Params, **change: Any) -> float:
    from ..core.mfu import mfu

    q = {**p, **change}
    return mfu(q["tokens_per_s"], q["params"], gpus=q["gpus"], gpu=q["gpu"], dtype=q["dtype"]).mfu


def _peak(p: Params, **kw: Any) -> float:
    from ..core.gpus import gpu

    return gpu(p["gpu"]).peak_flops(p["dtype"], **kw)


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


def _bubble_s(p: Params) -> float:
    return p["compute_s"] * (p["stages"] - 1) / p["micro_batches"]


def _bigger_loss(p: Params) -> str:
    """The larger of the two idle times of a step: the 1F1B bubble ((p - 1) micro-batch
    slots of compute_s / m each) and the non-overlapped gradient all-reduce."""
    return "pipeline bubble" if _bubble_s(p) >= _allreduce(p) else "all-reduce"


def _allreduce(p: Params) -> float:
    from ..core.scaleout import allreduce_time

    return float(allreduce_time(p["size_bytes"], p["ranks"], bandwidth_bytes_per_s=p["bandwidth"]))


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
        id="12.mfu",
        question="MFU of the run (model FLOPs 6 N per token, dense BF16 peak)",
        kind="number",
        params={"tokens_per_s": 60_000, "params": 7e9, "gpus": 8, "gpu": "H100", "dtype": "bf16"},
        expected=_mfu,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "forward only",
                lambda p: _mfu(p) / 3,
                "training counts forward and backward: 6 N FLOPs per token, not 2 N.",
            ),
            Mistake(
                "sparse peak",
                lambda p: p["tokens_per_s"] * 6 * p["params"] / (p["gpus"] * _peak(p, sparse=True)),
                "that divides by the 2:4 sparse peak; MFU uses the dense peak.",
            ),
            Mistake(
                "one GPU",
                lambda p: _mfu(p) * p["gpus"],
                "the tokens/s are for all 8 GPUs together: divide by 8 GPUs' peak.",
            ),
            Mistake(
                "FP8 peak",
                lambda p: _mfu(p, dtype="fp8_e4m3"),
                "the run computes in BF16: divide by the BF16 peak (989 TFLOP/s).",
            ),
        ),
        hint="MFU = tokens/s x 6 N / (GPUs x peak).",
    ),
    Task(
        id="12.bubble",
        question="share of the step each stage idles (1F1B, p stages, m micro-batches)",
        kind="number",
        params={"stages": 8, "micro_batches": 24},
        expected=lambda p: (p["stages"] - 1) / (p["micro_batches"] + p["stages"] - 1),
        rel_tol=1e-3,
        mistakes=(
            Mistake(
                "bubble over ideal",
                lambda p: (p["stages"] - 1) / p["micro_batches"],
                "(p - 1) / m is the bubble relative to the useful time; the share of the "
                "whole step is (p - 1) / (m + p - 1).",
            ),
            Mistake(
                "p over m + p",
                lambda p: p["stages"] / (p["micro_batches"] + p["stages"]),
                "the pipeline fills in p - 1 slots, not p.",
            ),
        ),
        hint="fill and drain cost p - 1 micro-batch slots out of m + p - 1.",
    ),
    Task(
        id="12.allreduce",
        question="seconds for a ring all-reduce of the gradients (latency ignored)",
        kind="number",
        unit="s",
        params={"size_bytes": 14e9, "ranks": 8, "bandwidth": 450e9},
        expected=_allreduce,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "half the ring",
                lambda p: _allreduce(p) / 2,
                "that is a reduce-scatter alone; an all-reduce adds the all-gather: "
                "2 (n - 1) / n x S bytes per GPU.",
            ),
            Mistake(
                "size over bandwidth",
                lambda p: p["size_bytes"] / p["bandwidth"],
                "each GPU sends 2 (n - 1) / n times the gradient bytes, not once.",
            ),
        ),
        hint="time = 2 (n - 1) / n x S / B with B the one-way link bandwidth.",
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
    Task(
        id="12.step_loss",
        question="which costs the step more: the pipeline bubble or the exposed all-reduce",
        kind="choice",
        choices=("pipeline bubble", "all-reduce"),
        params={
            "compute_s": 1.2,
            "stages": 8,
            "micro_batches": 8,
            "size_bytes": 14e9,
            "ranks": 8,
            "bandwidth": 450e9,
        },
        expected=_bigger_loss,
        mistakes=(
            Mistake(
                "blamed the network",
                lambda p: "all-reduce" if _bigger_loss(p) == "pipeline bubble" else _bigger_loss(p),
                "the all-reduce is about 2 (n - 1) / n x S / B, a fraction of a second at "
                "NVLink speed, while 8 stages with only 8 micro-batches idle (p - 1) / m of "
                "the compute time: more micro-batches shrink the bubble.",
            ),
            Mistake(
                "blamed the pipeline",
                lambda p: "pipeline bubble" if _bigger_loss(p) == "all-reduce" else _bigger_loss(p),
                "with this many micro-batches the bubble is small; the gradient all-reduce "
                "takes longer: overlap it with the backward pass.",
            ),
        ),
        hint="bubble = compute x (p - 1) / m; all-reduce = 2 (n - 1) / n x S / B.",
    ),
]
