"""Tasks of exercises/12_low_precision_and_scale_exercises.ipynb: FP8 scales, block formats,
MFU, pipeline bubbles, all-reduce time, and FP8 alignment."""

from __future__ import annotations

from typing import Any

from ._check import Mistake, Params, Task


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


def _bits(p: Params) -> float:
    from ..core.scaling import block_format

    return block_format(p["format"]).bits_per_element


def _allreduce(p: Params) -> float:
    from ..core.scaleout import allreduce_time

    return float(
        allreduce_time(p["size_bytes"], p["ranks"], bandwidth_bytes_per_s=p["bandwidth"])
    )


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
        id="12.nvfp4_bits",
        question="bits per element of NVFP4, counting each element's share of its block scale",
        kind="number",
        unit="bits",
        params={"format": "nvfp4"},
        expected=_bits,
        rel_tol=1e-6,
        mistakes=(
            Mistake("element only", lambda p: 4.0, "the 8-bit block scale is stored too."),
            Mistake(
                "MX block size",
                lambda p: 4.25,
                "4.25 is MXFP4 (one 8-bit scale per 32 elements); NVFP4 has one per 16.",
            ),
            Mistake(
                "whole scale per element",
                lambda p: 12.0,
                "the scale is shared by the 16 elements of a block: 8 / 16 bits each.",
            ),
        ),
        hint="4-bit elements plus an 8-bit E4M3 scale shared by 16 of them.",
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
        id="12.fp8_alignment",
        question="is a Linear layer with 4100 input features ready for FP8 Tensor Cores",
        kind="choice",
        choices=("yes", "no"),
        params={"features": 4100},
        expected=lambda p: "yes" if p["features"] % 16 == 0 else "no",
        mistakes=(
            Mistake(
                "FP16 rule",
                lambda p: "yes" if p["features"] % 4 == 0 else "no",
                "the rule is 16 bytes, not 8 elements: one-byte FP8 needs multiples of 16.",
            ),
        ),
        hint="16 bytes of one-byte elements: is 4100 a multiple of 16?",
    ),
]
