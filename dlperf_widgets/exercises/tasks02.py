"""Tasks of exercises/02_bounds_and_roofline_exercises.ipynb: ops:byte, limiters, intensity."""

from __future__ import annotations

import numpy as np

from ..core.dtypes import dtype
from ..core.gemm import arithmetic_intensity, gemm, gemm_bytes, gemm_flops, gemm_sweep
from ..core.gpus import gpu
from ._check import Mistake, Params, Task

FORGOT_2 = "a multiply-add is two FLOPs: a GEMM does 2·M·N·K of them."
BITS = "that looks like bits: divide by 8; sizes are in bytes (fp16 = 2 bytes)."


def _limiter(p: Params) -> str:
    return gemm(p["m"], p["n"], p["k"], dtype=p["dtype"], gpu=p["gpu"]).limiter


def _first_math_batch(p: Params, ignore_c: bool = False) -> int:
    """Smallest batch N for which the Linear layer's forward GEMM is math-bound."""
    n = np.arange(1, p["max_batch"] + 1)
    if ignore_c:
        size = dtype(p["dtype"]).bytes_per_element
        m, k = p["outputs"], p["inputs"]
        ai = gemm_flops(m, n, k) / (gemm_bytes(m, n, k, size) - m * n * size)
        math = ai > gpu(p["gpu"]).ops_per_byte(p["dtype"])
    else:
        s = gemm_sweep(p["outputs"], n, p["inputs"], dtype=p["dtype"], gpu=p["gpu"])
        math = np.asarray(s.limiter) == "math"
    if not math.any():
        raise ValueError("no batch size up to max_batch is math-bound")
    return int(n[np.argmax(math)])


def _linear_ai(p: Params) -> float:
    # Linear layer as a GEMM (forward): M = outputs, N = batch, K = inputs.
    return float(arithmetic_intensity(p["outputs"], p["batch"], p["inputs"], p["dtype"]))


def _relu_pass(p: Params):  # type: ignore[no-untyped-def]
    """The forward pass of a ReLU: one FLOP per element, one read and one write."""
    from ..core.memlimited import memory_op

    return memory_op("relu", elements=p["elements"], dtype=p["dtype"], gpu=p["gpu"])[0]


def _elementwise_note(p: Params) -> str:
    from ..core.memlimited import memory_op

    need = _relu_pass(p).ops_per_byte * _relu_pass(p).bytes / p["elements"]
    gelu = memory_op("gelu", elements=p["elements"], dtype=p["dtype"], gpu=p["gpu"])[0]
    return (
        f"ReLU does {_relu_pass(p).flops / p['elements']:.0f} FLOP per element and GELU "
        f"{gelu.flops / p['elements']:.0f} in the kit's count, far below {need:.0f}: for "
        "element-wise ops fusing (fewer bytes), not faster math, is what helps."
    )


# The lesson prints this layer at batch 512 (315 FLOP/B); the task asks for batch 64.
LESSON_BATCH = 512
LINEAR = {"outputs": 4096, "inputs": 1024, "batch": 64, "dtype": "fp16"}

TASKS = [
    Task(
        id="02.ops_per_byte",
        question="ops:byte ratio of the GPU (peak FLOP/s ÷ memory bandwidth in B/s)",
        kind="number",
        unit="FLOP/B",
        params={"gpu": "V100", "dtype": "fp16"},
        expected=lambda p: gpu(p["gpu"]).ops_per_byte(p["dtype"]),
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "bandwidth in GB/s",
                lambda p: gpu(p["gpu"]).ops_per_byte(p["dtype"]) * 1e9,
                "the bandwidth must be in bytes per second: 900 GB/s = 900e9 B/s.",
            ),
            Mistake(
                "FP32 CUDA-core peak",
                lambda p: (
                    gpu(p["gpu"]).peak_flops("fp32") / gpu(p["gpu"]).memory_bandwidth_bytes_per_s
                ),
                "use the peak of the data type asked for (FP16 on Tensor Cores), not FP32.",
            ),
            Mistake(
                "upside down",
                lambda p: 1 / gpu(p["gpu"]).ops_per_byte(p["dtype"]),
                "ops:byte is FLOP/s divided by B/s, not the other way round.",
            ),
        ),
        hint="peak FLOP/s for the dtype divided by the DRAM bandwidth in bytes per second.",
    ),
    Task(
        id="02.limiter_tall",
        question="what limits the GEMM: 'math', 'memory' or 'latency'?",
        kind="choice",
        choices=("math", "memory", "latency"),
        params={"m": 8192, "n": 128, "k": 8192, "dtype": "fp16", "gpu": "V100"},
        expected=_limiter,
        mistakes=(
            Mistake(
                "math",
                lambda p: "math",
                "compare the arithmetic intensity (about 124 FLOP/B) with the GPU's ops:byte "
                "ratio (about 139): below the ratio, memory sets the pace.",
            ),
            Mistake(
                "latency",
                lambda p: "latency",
                "a 8192-row output splits into far more tiles than the GPU has SMs, so "
                "parallelism is not the problem.",
            ),
        ),
    ),
    Task(
        id="02.limiter_small",
        question="what limits the GEMM: 'math', 'memory' or 'latency'?",
        kind="choice",
        choices=("math", "memory", "latency"),
        params={"m": 256, "n": 256, "k": 256, "dtype": "fp16", "gpu": "A100"},
        expected=_limiter,
        mistakes=(
            Mistake(
                "memory",
                lambda p: "memory",
                "start with step 3 of the procedure: how many thread blocks does a 256×256 "
                "output give, and how many SMs are waiting for work?",
            ),
            Mistake(
                "math",
                lambda p: "math",
                "before comparing intensity with ops:byte, count the thread blocks: a tiny "
                "output cannot keep 108 SMs busy.",
            ),
        ),
    ),
    Task(
        id="02.linear_ai",
        question=(
            "arithmetic intensity of the Linear layer's forward pass at a smaller batch "
            "(FLOP/B), estimated before computing"
        ),
        kind="number",
        unit="FLOP/B",
        params=LINEAR,
        expected=_linear_ai,
        rel_tol=0.005,
        mistakes=(
            Mistake(
                "scaled with the batch",
                lambda p: _linear_ai({**p, "batch": LESSON_BATCH}) * p["batch"] / LESSON_BATCH,
                "the intensity does not shrink in proportion to the batch: the weight's "
                "outputs × inputs bytes stay the same whatever the batch, and they dominate.",
            ),
            Mistake(
                "forgot the factor 2 (or 4-byte elements)",
                lambda p: _linear_ai(p) / 2,
                "half the right value: a multiply-add is two FLOPs, and an fp16 element is "
                "2 bytes, not 4.",
            ),
            Mistake("bits instead of bytes", lambda p: _linear_ai(p) / 8, BITS),
            Mistake(
                "ignored writing the output",
                lambda p: (
                    float(gemm_flops(p["outputs"], p["batch"], p["inputs"]))
                    / (
                        (p["outputs"] * p["inputs"] + p["inputs"] * p["batch"])
                        * dtype(p["dtype"]).bytes_per_element
                    )
                ),
                "the layer also writes its outputs × batch activations: count them.",
            ),
        ),
        hint="as a GEMM: M = outputs, N = batch, K = inputs; then FLOPs ÷ bytes.",
        explain=lambda p: (
            f"An {LESSON_BATCH // p['batch']}x smaller batch lowers the intensity only "
            f"{_linear_ai({**p, 'batch': LESSON_BATCH}) / _linear_ai(p):.1f}x: the weight's "
            "bytes do not shrink with it."
        ),
    ),
    Task(
        id="02.elementwise_flops",
        question=(
            "FLOPs per element an FP16 element-wise kernel (one read, one write per element) "
            "must do before the model calls it math-bound"
        ),
        kind="number",
        unit="FLOP",
        params={"elements": 2**24, "dtype": "fp16", "gpu": "V100"},
        expected=lambda p: _relu_pass(p).ops_per_byte * _relu_pass(p).bytes / p["elements"],
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "Tensor Core ratio",
                lambda p: (
                    gpu(p["gpu"]).ops_per_byte(p["dtype"]) * _relu_pass(p).bytes / p["elements"]
                ),
                "element-wise kernels run on the CUDA cores, not the Tensor Cores: use the "
                "ops:byte of the peak they can reach (the pass's ops_per_byte).",
            ),
            Mistake(
                "forgot the write",
                lambda p: _relu_pass(p).ops_per_byte * _relu_pass(p).bytes / p["elements"] / 2,
                "each element is read and written: 4 bytes cross memory per FP16 element.",
            ),
            Mistake(
                "per byte",
                lambda p: _relu_pass(p).ops_per_byte,
                "that is FLOPs per byte; the question asks FLOPs per element (several bytes).",
            ),
        ),
        hint="FLOPs per element = ops:byte of the CUDA cores × bytes moved per element.",
        explain=lambda p: _elementwise_note(p),
    ),
    Task(
        id="02.math_batch",
        question="smallest batch size at which the Linear layer's forward GEMM is math-bound",
        kind="integer",
        params={"outputs": 4096, "inputs": 1024, "dtype": "fp16", "gpu": "V100", "max_batch": 4096},
        # the check sweeps every batch up to max_batch: a million batch sizes at most
        limits={"max_batch": 2**20},
        expected=_first_math_batch,
        mistakes=(
            Mistake(
                "ignored writing the output",
                lambda p: _first_math_batch(p, ignore_c=True),
                "include the output activations (outputs × batch elements) in the bytes.",
            ),
            Mistake(
                "one too small",
                lambda p: _first_math_batch(p) - 1,
                "at that batch the intensity is still just below ops:byte: take the next one.",
            ),
        ),
        hint="write the intensity as a function of the batch N and solve AI(N) > ops:byte.",
    ),
]


# -- debugging a published measurement ------------------------------------------------------
# A row of the XLA matmul table shipped in dlperf_widgets/live/data/xla_h100-sxm.csv (read it
# with measured_gemms('H100-SXM', 'bf16')): 256 x 4096 x 4096 in BF16 on an H100 SXM.
MEASURED_ROW = {"m": 256, "n": 4096, "k": 4096, "dtype": "bf16", "gpu": "H100-SXM"}

# The fixes a learner may propose, each as the GEMM it turns the measured one into.
FIXES = ("more rows per call", "pad to a multiple of 64", "tf32")


def _fixed(p: Params, fix: str) -> dict:  # type: ignore[type-arg]
    q = dict(p)
    if fix == "more rows per call":  # e.g. 4x the tokens through the same weights
        q["m"] = 4 * p["m"]
    elif fix == "pad to a multiple of 64":
        q.update({d: -(-p[d] // 64) * 64 for d in ("m", "n", "k")})
    else:
        q["dtype"] = "tf32"
    return q


def _useful_rate(p: Params, fix: str) -> float:
    """Predicted FLOP/s of the work the learner wanted done (padding counts as waste)."""
    q = _fixed(p, fix)
    useful = float(gemm_flops(q["m"], p["n"], p["k"]))  # rows added by batching are useful
    if fix == "pad to a multiple of 64":
        useful = float(gemm_flops(p["m"], p["n"], p["k"]))
    t = gemm(q["m"], q["n"], q["k"], dtype=q["dtype"], gpu=q["gpu"]).predicted_time_s
    return useful / t


def _best_fix(p: Params) -> str:
    return max(FIXES, key=lambda f: _useful_rate(p, f))


TASKS += [
    Task(
        id="02.trace_limiter",
        question="what limits the measured GEMM: 'math', 'memory' or 'latency'?",
        kind="choice",
        choices=("math", "memory", "latency"),
        params=MEASURED_ROW,
        expected=_limiter,
        mistakes=(
            Mistake(
                "math",
                lambda p: "math",
                "a low share of peak does not make it math-bound: compare its arithmetic "
                "intensity with the GPU's ops:byte ratio.",
            ),
            Mistake(
                "latency",
                lambda p: "latency",
                "latency is the verdict for outputs too small to occupy the GPU; a 256×4096 "
                "output fills about one wave of tiles. Compare the intensity with ops:byte.",
            ),
        ),
    ),
    Task(
        id="02.trace_fix",
        question=(
            "which change raises the useful FLOP/s of the measured GEMM the most: "
            "'more rows per call', 'pad to a multiple of 64' or 'tf32'?"
        ),
        kind="choice",
        choices=FIXES,
        params=MEASURED_ROW,
        expected=_best_fix,
        mistakes=(
            Mistake(
                "pad",
                lambda p: "pad to a multiple of 64",
                "256 and 4096 are already multiples of 64: padding changes nothing when the "
                "operands are aligned. The GEMM waits for bytes; what raises the FLOPs per "
                "byte?",
            ),
            Mistake(
                "tf32",
                lambda p: "tf32",
                "TF32 has 4-byte operands and half the BF16 Tensor Core peak: more bytes and "
                "fewer FLOP/s, the opposite of what a memory-bound GEMM needs.",
            ),
        ),
        hint="reuse each weight for more rows: the intensity of a GEMM grows with its "
        "smallest dimension.",
    ),
]
