"""Tasks of exercises/09_measure_for_real_exercises.ipynb: predict, measure, compare."""

from __future__ import annotations

from ..core.dtypes import dtype
from ..core.gemm import gemm, gemm_bytes, gemm_flops
from ..core.gpus import gpu
from ._check import Mistake, Params, Task

GEMM = {"m": 512, "n": 512, "k": 512, "dtype": "fp32"}


def _flops(p: Params) -> float:
    return float(gemm_flops(p["m"], p["n"], p["k"]))


def _bytes(p: Params) -> float:
    return float(gemm_bytes(p["m"], p["n"], p["k"], dtype(p["dtype"]).bytes_per_element))


def _time(p: Params) -> float:
    t = p["time_s"]
    if t is None:
        raise ValueError("pass the measured time: check(..., time_s=...)")
    return float(t)


TINY = {"m": 64, "n": 64, "k": 64, "dtype": "fp16", "gpu": "A100"}


def _tiny(p: Params):  # type: ignore[no-untyped-def]
    return gemm(p["m"], p["n"], p["k"], dtype=p["dtype"], gpu=p["gpu"])


def _gap_reason(p: Params) -> str:
    """What sets the model's time: the fixed cost per kernel when it exceeds both the math
    and the memory time, otherwise the longer of those two."""
    r = _tiny(p)
    if r.kernel_overhead_s > max(r.math_time_s, r.memory_time_s):
        return "fixed cost per call"
    return "math peak" if r.math_time_s >= r.memory_time_s else "memory bandwidth"


CONTEXTS = {"m": 256, "n": 256, "k": 256, "dtype": "bf16", "gpu": "H100-SXM"}


def _in_context(p: Params, context: str) -> float:
    r = gemm(p["m"], p["n"], p["k"], dtype=p["dtype"], gpu=p["gpu"], context=context)
    return float(r.predicted_time_s)


TASKS = [
    Task(
        id="09.model_time",
        question="the model's predicted time for the GEMM on the GPU, in seconds",
        kind="number",
        unit="s",
        params={"m": 8192, "n": 8192, "k": 8192, "dtype": "fp16", "gpu": "A100"},
        expected=lambda p: (
            gemm(p["m"], p["n"], p["k"], dtype=p["dtype"], gpu=p["gpu"]).predicted_time_s
        ),
        rel_tol=0.05,
        mistakes=(
            Mistake(
                "used the sparse peak",
                lambda p: _flops(p) / gpu(p["gpu"]).peak_flops(p["dtype"], sparse=True),
                "that uses the 2:4 sparse peak; a dense GEMM runs at the dense rate.",
            ),
            Mistake(
                "FLOPs, not time",
                lambda p: _flops(p),
                "that is the FLOP count; time = FLOPs ÷ FLOP/s.",
            ),
        ),
        hint="a large square GEMM is math-bound: about FLOPs ÷ peak FLOP/s.",
    ),
    Task(
        id="09.achieved_flops",
        question="achieved FLOP/s of the measured GEMM",
        kind="number",
        unit="FLOP/s",
        params={**GEMM, "time_s": None},
        expected=lambda p: _flops(p) / _time(p),
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "forgot the factor 2",
                lambda p: _flops(p) / 2 / _time(p),
                "a multiply-add is two FLOPs: the GEMM does 2·M·N·K.",
            ),
            Mistake(
                "FLOPs, not FLOP/s",
                lambda p: _flops(p),
                "that is the FLOP count; divide by the measured time to get FLOP/s.",
            ),
            Mistake(
                "upside down",
                lambda p: _time(p) / _flops(p),
                "FLOP/s is FLOPs divided by seconds.",
            ),
        ),
        hint="2·M·N·K ÷ the median time in seconds.",
    ),
    Task(
        id="09.achieved_bandwidth",
        question="achieved bytes per second (A and B read once, C written once)",
        kind="number",
        unit="B/s",
        params={**GEMM, "time_s": None},
        expected=lambda p: _bytes(p) / _time(p),
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "ignored writing C",
                lambda p: (
                    (_bytes(p) - p["m"] * p["n"] * dtype(p["dtype"]).bytes_per_element) / _time(p)
                ),
                "C is written to memory too: count M·N elements for it.",
            ),
            Mistake(
                "fp16 size",
                lambda p: _bytes(p) / 2 / _time(p),
                "this GEMM runs in fp32: 4 bytes per element.",
            ),
            Mistake(
                "bits",
                lambda p: _bytes(p) * 8 / _time(p),
                "that looks like bits per second; give bytes per second.",
            ),
        ),
        hint="(M·K + K·N + M·N) × 4 bytes ÷ the median time.",
    ),
    Task(
        id="09.overhead_share",
        question="share of the model's predicted time of the small GEMM that is the fixed "
        "cost per kernel",
        kind="number",
        unit="fraction",
        params=TINY,
        expected=lambda p: _tiny(p).kernel_overhead_s / _tiny(p).predicted_time_s,
        rel_tol=0.02,
        mistakes=(
            Mistake(
                "the ideal's share",
                lambda p: _tiny(p).roofline_time_s / _tiny(p).predicted_time_s,
                "that is the roofline ideal's share; the question asks for the fixed cost "
                "per kernel (kernel_overhead_s).",
            ),
            Mistake(
                "roofline only",
                lambda p: 0.0,
                "the roofline ideal has no fixed cost, but the calibrated prediction adds "
                "one per kernel: read kernel_overhead_s.",
            ),
        ),
        hint="kernel_overhead_s ÷ predicted_time_s of gemm(64, 64, 64, dtype='fp16', gpu='A100').",
    ),
    Task(
        id="09.gap_reason",
        question="why a tiny GEMM reaches a far lower FLOP/s than a large one",
        kind="choice",
        choices=("fixed cost per call", "memory bandwidth", "math peak"),
        params=TINY,
        expected=_gap_reason,
        mistakes=(
            Mistake(
                "memory",
                lambda p: "memory bandwidth",
                "a 64³ GEMM moves only about 24 KB, a few nanoseconds of DRAM time; the "
                "microseconds go to the fixed cost of every call.",
            ),
            Mistake(
                "math",
                lambda p: "math peak",
                "its half a million FLOPs take well under a microsecond even at a "
                "fraction of the peak; the fixed cost per call is larger.",
            ),
        ),
        hint="compare kernel_overhead_s with math_time_s and memory_time_s.",
    ),
    Task(
        id="09.context_gap",
        question="how much longer the model's time for the GEMM is when it is timed eagerly "
        "from the host than when it runs back to back in a CUDA graph, in seconds",
        kind="number",
        unit="s",
        params=CONTEXTS,
        expected=lambda p: _in_context(p, "eager") - _in_context(p, "back-to-back"),
        rel_tol=0.02,
        mistakes=(
            Mistake(
                "kernel, not eager",
                lambda p: _in_context(p, "kernel") - _in_context(p, "back-to-back"),
                "that is the gap between a kernel timed alone and one back to back; timed "
                "eagerly, the host's launch overhead comes on top (context='eager').",
            ),
            Mistake(
                "the eager time itself",
                lambda p: _in_context(p, "eager"),
                "that is the whole eager time; subtract the back-to-back time from it.",
            ),
            Mistake(
                "microseconds",
                lambda p: (_in_context(p, "eager") - _in_context(p, "back-to-back")) * 1e6,
                "that looks like microseconds; give the gap in seconds.",
            ),
        ),
        hint="gemm(..., context='eager').predicted_time_s minus the same with "
        "context='back-to-back'.",
    ),
]
