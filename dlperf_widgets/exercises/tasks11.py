"""Tasks of exercises/11_llm_inference_exercises.ipynb."""

from __future__ import annotations

from ..core.gpus import gpu
from ..core.inference import kv_cache_bytes, llm, llm_inference, weight_bytes
from ._check import Mistake, Params, Task, first_design


def _linear_bits(p: Params) -> float:
    s = llm(p["model"])
    emb = (s.params - s.linear_params) * 2
    return 8 * (weight_bytes(s, "int4", group_size=p["group_size"]) - emb) / s.linear_params


def _batch_problem(p: Params, batch: int) -> str:
    """'' when the decode step's MLP up-projection GEMM (N = batch) is math-bound and the
    FP16 weights plus the KV caches of ``batch`` sequences fit the GPU (what
    ``llm_inference(...).fits`` compares, without modelling the whole step)."""
    from ..core.gemm import gemm

    s = llm(p["model"])
    g = gemm(s.ffn, batch, s.hidden, dtype="fp16", gpu=p["gpu"])
    if g.limiter != "math":
        return (
            f"at batch {batch} the {s.ffn}x{batch}x{s.hidden} GEMM is still {g.limiter}-bound "
            f"(intensity {g.arithmetic_intensity:.0f} < ops:byte {g.ops_per_byte:.0f}): "
            "every weight byte needs more tokens to work on; take a larger batch."
        )
    need = weight_bytes(s) + batch * kv_cache_bytes(s, context=p["context"])
    have = gpu(p["gpu"]).memory_bytes
    if need > have:
        return (
            f"at batch {batch} the weights and KV caches need {need / 2**30:.1f} GiB, more "
            f"than the {have / 2**30:.1f} GiB of the GPU; take a smaller batch."
        )
    return ""


def _smallest_math_batch(p: Params) -> int:
    return first_design(_batch_problem, p, range(8, 1 << 14, 8), "batch")


def _measured(p: Params) -> tuple[float, float, float]:
    """The published measurement of this GEMM: (time, FLOPs, bytes)."""
    from ..live.traces import measured_gemms

    t = measured_gemms(p["gpu"], p["dtype"])
    sel = (t["m"] == p["m"]) & (t["n"] == p["n"]) & (t["k"] == p["k"]) & (t["batch"] == 1)
    if not sel.any():
        raise ValueError(
            f"no published {p['dtype']} measurement of {p['m']}x{p['n']}x{p['k']} on {p['gpu']}"
        )
    i = int(sel.nonzero()[0][0])
    return float(t["measured_time_s"][i]), float(t["flops"][i]), float(t["bytes"][i])


def _shares(p: Params) -> tuple[float, float]:
    """Achieved shares of the datasheet math peak and of the DRAM bandwidth."""
    time_s, flops, nbytes = _measured(p)
    g = gpu(p["gpu"])
    return (
        flops / time_s / g.peak_flops(p["dtype"]),
        nbytes / time_s / g.memory_bandwidth_bytes_per_s,
    )


def _measured_limiter(p: Params) -> str:
    """The resource the kernel uses the larger share of; when it reaches neither a tenth of
    the peak nor of the bandwidth, the time is the fixed cost of running a kernel."""
    math_share, memory_share = _shares(p)
    if max(math_share, memory_share) < 0.1:
        return "fixed cost per kernel"
    return "math" if math_share >= memory_share else "memory"


TASKS = [
    Task(
        id="11.kv_per_token",
        question="KV-cache bytes per token of one sequence (FP16)",
        kind="number",
        unit="B",
        params={"model": "llama-3-8b"},
        expected=lambda p: kv_cache_bytes(p["model"], context=1),
        mistakes=(
            Mistake(
                "query heads",
                lambda p: 2 * llm(p["model"]).layers * llm(p["model"]).hidden * 2,
                "Llama-3-8B uses grouped-query attention: count its 8 K/V heads, not the 32 "
                "query heads.",
            ),
            Mistake(
                "forgot V",
                lambda p: kv_cache_bytes(p["model"], context=1) / 2,
                "the cache holds keys and values: a factor 2.",
            ),
        ),
        hint="2 × layers × K/V heads × head size × 2 bytes.",
    ),
    Task(
        id="11.max_batch",
        question="largest number of 4096-token sequences whose KV cache fits beside the weights",
        kind="integer",
        params={"model": "llama-2-13b", "gpu": "A100-SXM4-80GB", "context": 4096},
        expected=lambda p: llm_inference(p["model"], gpu=p["gpu"], context=p["context"]).max_batch,
        mistakes=(
            Mistake(
                "ignored the weights",
                lambda p: int(
                    gpu(p["gpu"]).memory_bytes // kv_cache_bytes(p["model"], context=p["context"])
                ),
                "the weights take their share of the memory first.",
            ),
            Mistake(
                "decimal gigabytes",
                lambda p: int(
                    (80e9 - weight_bytes(p["model"]))
                    // kv_cache_bytes(p["model"], context=p["context"])
                ),
                "the A100-80GB has 80 GiB (80 × 2**30 bytes), not 80e9.",
            ),
        ),
        hint="(capacity − weight bytes) ÷ KV bytes per sequence, rounded down.",
    ),
    Task(
        id="11.ideal_tokens_per_s",
        question="ideal decode tokens/s at batch 1 (all weights at datasheet bandwidth)",
        kind="number",
        unit="",
        params={"model": "llama-2-7b", "gpu": "A100-SXM4-80GB"},
        expected=lambda p: (
            1 / llm_inference(p["model"], gpu=p["gpu"], context=1).ideal_decode_step_s
        ),
        rel_tol=0.03,
        mistakes=(
            Mistake(
                "parameters as bytes",
                lambda p: gpu(p["gpu"]).memory_bandwidth_bytes_per_s / llm(p["model"]).params,
                "each FP16 weight is 2 bytes.",
            ),
            Mistake(
                "seconds per token",
                lambda p: llm_inference(p["model"], gpu=p["gpu"], context=1).ideal_decode_step_s,
                "that is the time per token; tokens/s is its inverse.",
            ),
        ),
        hint="bandwidth (B/s) ÷ bytes of the weights read per step.",
    ),
    Task(
        id="11.decode_batch",
        question="decode batch that makes the MLP GEMM math-bound while the KV caches fit",
        kind="design",
        params={"model": "llama-2-7b", "gpu": "H100-SXM", "context": 128},
        expected=_smallest_math_batch,
        validate=_batch_problem,
        mistakes=(
            Mistake(
                "one byte per weight",
                lambda p: round(gpu(p["gpu"]).ops_per_byte("fp16") / 2),
                "FP16 weights are 2 bytes each: at batch B the intensity is about "
                "2·B FLOPs per 2 bytes = B, so B must reach the ops:byte ratio itself.",
            ),
        ),
        hint="sweep the batch with gemm(ffn, batch, hidden) and llm_inference(batch=...).fits.",
    ),
    Task(
        id="11.int4_bits",
        question="bits stored per weight: int4 with one FP16 scale per group",
        kind="number",
        unit="",
        params={"model": "llama-2-7b", "group_size": 64},
        expected=_linear_bits,
        rel_tol=0.001,
        mistakes=(
            Mistake("no scales", lambda p: 4.0, "each group also stores a 16-bit scale."),
            Mistake(
                "group of 128",
                lambda p: 4 + 16 / 128,
                "this task's groups hold 64 weights: 16 / 64 bits of scale per weight.",
            ),
        ),
        hint="4 + 16 ÷ group size.",
    ),
    Task(
        id="11.measured_limiter",
        question="what limits this published GEMM measurement",
        kind="choice",
        choices=("math", "memory", "fixed cost per kernel"),
        params={"gpu": "H100-SXM", "dtype": "bf16", "m": 256, "n": 256, "k": 256},
        expected=_measured_limiter,
        mistakes=(
            Mistake(
                "memory",
                lambda p: (
                    "memory"
                    if _measured_limiter(p) == "fixed cost per kernel"
                    else _measured_limiter(p)
                ),
                "it reaches only a few percent of the DRAM bandwidth too: neither resource "
                "is busy; the microseconds are the fixed cost of running a kernel. Batch "
                "the small GEMMs or fuse them.",
            ),
            Mistake(
                "math",
                lambda p: (
                    "math"
                    if _measured_limiter(p) == "fixed cost per kernel"
                    else _measured_limiter(p)
                ),
                "it reaches well under a tenth of the math peak: the Tensor Cores mostly "
                "wait; compare the achieved shares of both resources.",
            ),
        ),
        hint="achieved FLOP/s ÷ peak and achieved B/s ÷ bandwidth: which share is larger, "
        "and does either reach a tenth?",
    ),
]
