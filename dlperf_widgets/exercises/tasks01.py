"""Tasks of exercises/01_gemm_and_intensity_exercises.ipynb: a GEMM that crosses the ridge
under a memory budget, a prediction to test on the learner's own machine, the memory time."""

from __future__ import annotations

import numpy as np

from ..core.dtypes import dtype
from ..core.gemm import arithmetic_intensity, gemm_bytes, gemm_flops
from ..core.gpus import gpu
from ..core.results import format_quantity
from ._check import Mistake, Params, Task

GEMM = {"m": 8192, "n": 128, "k": 8192, "dtype": "fp16"}
NO_C = "don't forget C: the M×N result is written to memory once, besides reading A and B."

# -- design: a batch N that crosses the ridge and fits a memory budget ----------------------
RIDGE = {"m": 8192, "k": 8192, "dtype": "fp16", "gpu": "A100", "budget_bytes": 200e6}


def _ridge_ok(p: Params, n: int) -> tuple[bool, str]:
    """N is valid when the GEMM's intensity (the guide's arithmetic) exceeds the GPU's
    ops:byte ratio and A, B and C together fit in the byte budget."""
    if n < 1:
        return False, f"N must be at least 1 (got {n})."
    size = dtype(p["dtype"]).bytes_per_element
    ai = float(arithmetic_intensity(p["m"], n, p["k"], p["dtype"]))
    ratio = gpu(p["gpu"]).ops_per_byte(p["dtype"])
    nbytes = float(gemm_bytes(p["m"], n, p["k"], size))
    if nbytes > p["budget_bytes"]:
        return False, (
            f"N = {n} needs {format_quantity(nbytes, 'B')} for A, B and C, over the "
            f"{format_quantity(p['budget_bytes'], 'B')} budget: B and C grow with N, "
            "take a smaller N."
        )
    if ai <= ratio:
        return False, (
            f"at N = {n} the intensity is {ai:.1f} FLOP/B, not above the ops:byte ratio "
            f"({ratio:.1f}): the GEMM is still on the memory side of the ridge; take a larger N."
        )
    return True, (
        f"N = {n} gives {ai:.1f} FLOP/B (> ops:byte {ratio:.1f}) and needs "
        f"{format_quantity(nbytes, 'B')}."
    )


def _ridge_n(p: Params) -> int:
    """The smallest valid N (any valid N passes the check)."""
    n = np.arange(1, 65537)
    ai = arithmetic_intensity(p["m"], n, p["k"], p["dtype"])
    nbytes = gemm_bytes(p["m"], n, p["k"], dtype(p["dtype"]).bytes_per_element)
    ok = (ai > gpu(p["gpu"]).ops_per_byte(p["dtype"])) & (nbytes <= p["budget_bytes"])
    if not ok.any():
        raise ValueError("no N up to 65536 crosses the ridge within the budget")
    return int(n[np.argmax(ok)])


# -- estimation before measurement ----------------------------------------------------------
SCALE = {"small": 256, "large": 512}


def _cube_flops(n: int) -> float:
    return float(gemm_flops(n, n, n))


def _flop_ratio(p: Params) -> float:
    return _cube_flops(p["large"]) / _cube_flops(p["small"])


def _flops(p: Params) -> float:
    return float(gemm_flops(p["m"], p["n"], p["k"]))


def _bytes(p: Params, c_passes: int = 1) -> float:
    b = dtype(p["dtype"]).bytes_per_element
    m, n, k = p["m"], p["n"], p["k"]
    ab = float(gemm_bytes(m, n, k, b)) - m * n * b  # A and B only
    return ab + c_passes * m * n * b


TASKS = [
    Task(
        id="01.ridge_batch",
        question=(
            "a batch N for the M×N×K GEMM that is above the GPU's ops:byte ratio and whose "
            "A, B and C fit in budget_bytes (any such N)"
        ),
        kind="design",
        params=RIDGE,
        expected=_ridge_n,
        validate=_ridge_ok,
        mistakes=(
            Mistake(
                "N equal to the ratio",
                lambda p: int(np.ceil(gpu(p["gpu"]).ops_per_byte(p["dtype"]))),
                "the intensity of an M×N×K GEMM is a little below N, because B and C cost "
                "bytes too: N must clear the ops:byte ratio with some margin.",
            ),
        ),
        hint="write the intensity as a function of N, and the bytes of A, B and C as another.",
    ),
    Task(
        id="01.predict_ratio",
        question=(
            "predicted time of the large×large×large GEMM divided by the time of the "
            "small×small×small one, if both run at the same FLOP rate"
        ),
        kind="number",
        params=SCALE,
        expected=_flop_ratio,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "linear in the size",
                lambda p: p["large"] / p["small"],
                "at the same FLOP rate the time follows the FLOPs, 2·n³: doubling n does "
                "eight times the work, not twice.",
            ),
            Mistake(
                "ratio of the areas",
                lambda p: (p["large"] / p["small"]) ** 2,
                "that is the ratio of the outputs' areas; each output element also takes n "
                "multiply-adds, so the work grows with n³.",
            ),
        ),
        hint="divide the FLOPs of the two GEMMs.",
    ),
    Task(
        id="01.gap_reason",
        question=(
            "which cost stays the same whatever the GEMM's size, and so weighs more on the "
            "small one?"
        ),
        kind="choice",
        choices=("fixed cost per call", "FLOPs", "bytes"),
        params={},
        expected=lambda p: "fixed cost per call",
        mistakes=(
            Mistake(
                "FLOPs",
                lambda p: "FLOPs",
                "the FLOPs grow with n³: they are what your prediction already counts.",
            ),
            Mistake(
                "bytes",
                lambda p: "bytes",
                "the bytes grow with n², so they shrink relative to the FLOPs as n grows, but "
                "they do not stay the same: look for the cost that does not grow at all.",
            ),
        ),
        explain=lambda p: (
            "Launching a kernel (or, on a CPU, calling into the library and starting its "
            "threads) costs the same for any size, so it is a larger share of the small "
            "GEMM's time and pulls the measured ratio below the FLOP ratio."
        ),
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
        hint="bytes (A, B read once, C written once) ÷ memory bandwidth in bytes per second.",
    ),
]


# -- critique: the kit's byte count assumes every operand crosses DRAM once ---------------------
NO_REUSE = {"m": 8192, "n": 8192, "k": 8192, "dtype": "fp16", "gpu": "A100"}


def _no_reuse_ratio(p: Params, *, with_c: bool = True) -> float:
    """Bytes when every output tile reads its own slabs of A (tile rows x K) and B (K x tile
    columns) from DRAM, nothing shared between tiles through the L2, over the kit's count
    (A and B once, C once). The tile is the one the model picks (gemm().tile)."""
    from ..core.gemm import gemm

    r = gemm(p["m"], p["n"], p["k"], dtype=p["dtype"], gpu=p["gpu"])
    rows, cols = (int(x) for x in r.tile.split("x"))
    size = dtype(p["dtype"]).bytes_per_element
    tiles = -(-p["m"] // rows) * -(-p["n"] // cols)
    reads = tiles * (rows + cols) * p["k"] * size
    c = p["m"] * p["n"] * size if with_c else 0.0
    return float((reads + c) / gemm_bytes(p["m"], p["n"], p["k"], size))


TASKS.append(
    Task(
        id="01.no_reuse_bytes",
        question=(
            "DRAM bytes if no output tile shared its operands with another, as a multiple "
            "of the kit's count"
        ),
        kind="number",
        unit="",
        params=NO_REUSE,
        expected=_no_reuse_ratio,
        rel_tol=0.005,
        mistakes=(
            Mistake(
                "forgot C",
                lambda p: _no_reuse_ratio(p, with_c=False),
                "close: the C tiles are still written once each; add the M×N output.",
            ),
            Mistake(
                "upside down",
                lambda p: 1 / _no_reuse_ratio(p),
                "upside down: without reuse the traffic is larger than the kit's count.",
            ),
        ),
        hint="tiles = ceil(M / rows) × ceil(N / columns); each reads (rows + columns) × K "
        "elements; add C; divide by gemm_bytes(M, N, K, 2).",
        explain=lambda p: (
            "Real kernels land between the two: thread blocks running at the same time "
            "share A and B slabs through the L2 cache, so the kit's once-each count is a "
            "lower bound, not a measurement; Nsight Compute's DRAM byte counters show where "
            "a real kernel lands."
        ),
    )
)
