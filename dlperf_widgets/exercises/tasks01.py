"""Tasks of exercises/01_gemm_and_intensity_exercises.ipynb: specs, FLOPs, bytes, intensity."""

from __future__ import annotations

from collections.abc import Callable

from ..core.dtypes import dtype
from ..core.gemm import arithmetic_intensity, gemm_bytes, gemm_flops
from ..core.gpus import gpu
from ._check import Mistake, Params, Task

GEMM = {"m": 8192, "n": 128, "k": 8192, "dtype": "fp16"}


def _flops(p: Params) -> float:
    return float(gemm_flops(p["m"], p["n"], p["k"]))


def _bytes(p: Params, size: float | None = None, c_passes: int = 1) -> float:
    b = dtype(p["dtype"]).bytes_per_element if size is None else size
    m, n, k = p["m"], p["n"], p["k"]
    ab = float(gemm_bytes(m, n, k, b)) - m * n * b  # A and B only
    return ab + c_passes * m * n * b


def _other_sizes(p: Params) -> list[float]:
    own = dtype(p["dtype"]).bytes_per_element
    return [s for s in (1, 2, 4, 8) if s != own]


def _wrong_size(fn: Callable[[Params, float], float]) -> Mistake:
    """The answers computed with every element size but the right one."""
    return Mistake(
        "wrong dtype size",
        lambda p: [fn(p, s) for s in _other_sizes(p)],
        "check the element size: an fp16 or bf16 value is 2 bytes, fp32 and tf32 4, int8 1.",
    )


FORGOT_2 = (
    "a multiply-add is two floating-point operations (a multiply and an add): "
    "a GEMM does 2·M·N·K FLOPs."
)
BITS = "that looks like bits: divide by 8; sizes here are in bytes (fp16 = 16 bits = 2 bytes)."
NO_C = "don't forget C: the M×N result is written to memory once, besides reading A and B."

TASKS = [
    Task(
        id="01.flops",
        question="FLOPs of the GEMM C = A·B with A: M×K and B: K×N",
        kind="number",
        unit="FLOP",
        params=GEMM,
        expected=_flops,
        rel_tol=0.001,
        mistakes=(
            Mistake("forgot the factor 2", lambda p: _flops(p) / 2, FORGOT_2),
            Mistake(
                "counted outputs",
                lambda p: p["m"] * p["n"],
                "that is the number of outputs; each needs K multiply-adds.",
            ),
        ),
        hint="count the multiply-adds (one per output element per step along K), then FLOPs.",
    ),
    Task(
        id="01.bytes",
        question="bytes the GEMM moves to and from memory (A and B read once, C written once)",
        kind="number",
        unit="B",
        params=GEMM,
        expected=lambda p: _bytes(p),
        rel_tol=0.001,
        mistakes=(
            Mistake("ignored writing C", lambda p: _bytes(p, c_passes=0), NO_C),
            Mistake("bits instead of bytes", lambda p: _bytes(p) * 8, BITS),
            Mistake(
                "read C too",
                lambda p: _bytes(p, c_passes=2),
                "with beta = 0 the old C is never read: count C once, for the write.",
            ),
            _wrong_size(lambda p, s: _bytes(p, size=s)),
        ),
        hint="(M·K + K·N + M·N) elements, times the size of one element in bytes.",
    ),
    Task(
        id="01.intensity",
        question="arithmetic intensity of the GEMM (FLOPs per byte moved)",
        kind="number",
        unit="FLOP/B",
        params=GEMM,
        expected=lambda p: float(arithmetic_intensity(p["m"], p["n"], p["k"], p["dtype"])),
        rel_tol=0.002,
        mistakes=(
            Mistake(
                "forgot the factor 2 (or 4-byte elements)",
                lambda p: _flops(p) / 2 / _bytes(p),
                "half the right value: a multiply-add is two FLOPs, and an fp16 element is "
                "2 bytes, not 4.",
            ),
            Mistake("ignored writing C", lambda p: _flops(p) / _bytes(p, c_passes=0), NO_C),
            Mistake("bits instead of bytes", lambda p: _flops(p) / (8 * _bytes(p)), BITS),
            Mistake(
                "upside down",
                lambda p: _bytes(p) / _flops(p),
                "intensity is FLOPs divided by bytes, not bytes by FLOPs.",
            ),
            _wrong_size(lambda p, s: _flops(p) / _bytes(p, size=s)),
        ),
        hint="divide the FLOPs by the bytes of the two previous tasks.",
        explain=lambda p: "Compare it with the GPU's ops:byte ratio to see what limits it.",
    ),
    Task(
        id="01.peak",
        question="dense peak FLOP/s from SMs × clock × FMA/clock/SM × 2",
        kind="number",
        unit="FLOP/s",
        params={"gpu": "A100", "dtype": "fp16"},
        expected=lambda p: gpu(p["gpu"]).peak_flops(p["dtype"]),
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "forgot the factor 2",
                lambda p: gpu(p["gpu"]).peak_flops(p["dtype"]) / 2,
                "the FMA rate counts multiply-adds; each is 2 FLOPs, so multiply by 2.",
            ),
            Mistake(
                "used the sparse peak",
                lambda p: gpu(p["gpu"]).peak_flops(p["dtype"], sparse=True),
                "that is the 2:4 sparse rate; the question asks for the dense peak.",
            ),
            Mistake(
                "clock in MHz",
                lambda p: gpu(p["gpu"]).peak_flops(p["dtype"]) * 1e-6,
                "the clock must be in cycles per second: 1410 MHz = 1.41e9 per second.",
            ),
        ),
        hint="SMs × clock (Hz) × multiply-adds per clock per SM × 2.",
    ),
    Task(
        id="01.memory_time",
        question="time to move the GEMM's bytes through DRAM at the full bandwidth, in seconds",
        kind="number",
        unit="s",
        params={**GEMM, "gpu": "V100"},
        # The guide's ideal memory time (datasheet bandwidth); gemm().memory_time_s is at the
        # achievable bandwidth and may add split-K traffic.
        expected=lambda p: _bytes(p) / gpu(p["gpu"]).memory_bandwidth_bytes_per_s,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "math time",
                lambda p: _flops(p) / gpu(p["gpu"]).peak_flops(p["dtype"]),
                "that is FLOPs ÷ FLOP/s, the math time; the memory time is bytes ÷ (B/s).",
            ),
            Mistake(
                "upside down",
                lambda p: gpu(p["gpu"]).memory_bandwidth_bytes_per_s / _bytes(p),
                "time is bytes divided by bytes per second.",
            ),
            Mistake(
                "ignored writing C",
                lambda p: _bytes(p, c_passes=0) / gpu(p["gpu"]).memory_bandwidth_bytes_per_s,
                NO_C,
            ),
        ),
        hint="bytes (task 01.bytes) ÷ memory bandwidth in bytes per second.",
    ),
]
