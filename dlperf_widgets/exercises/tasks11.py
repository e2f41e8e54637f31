"""Tasks of exercises/11_llm_inference_exercises.ipynb."""

from __future__ import annotations

import dataclasses

from ..core.gpus import gpu
from ..core.inference import kv_cache_bytes, llm, llm_inference, weight_bytes
from ._check import Mistake, Params, Task, first_design


def _linear_bits(p: Params) -> float:
    s = llm(p["model"])
    emb = (s.params - s.linear_params) * 2
    return 8 * (weight_bytes(s, "int4", group_size=p["group_size"]) - emb) / s.linear_params


def _with_kv_heads(p: Params, kv_heads: int):  # type: ignore[no-untyped-def]
    s = llm(p["model"])
    return dataclasses.replace(s, kv_heads=kv_heads, name=f"{s.name} with {kv_heads} K/V heads")


def _kv_candidates(p: Params) -> list[int]:
    """The GQA group sizes the model's query heads allow, most K/V heads first."""
    heads = llm(p["model"]).heads
    return [k for k in range(heads, 0, -1) if heads % k == 0]


def _kv_heads_problem(p: Params, kv_heads: int) -> str:
    """'' when ``kv_heads`` divides the query heads and the FP16 weights (their K and V
    projections shrink with it) plus ``batch`` KV caches of ``context`` tokens fit."""
    heads = llm(p["model"]).heads
    if kv_heads > heads or heads % kv_heads:
        return (
            f"{kv_heads} K/V heads cannot serve {heads} query heads: each K/V head must "
            f"serve the same number of query heads, so it must divide {heads}."
        )
    spec = _with_kv_heads(p, kv_heads)
    need = weight_bytes(spec) + kv_cache_bytes(spec, context=p["context"], batch=p["batch"])
    have = gpu(p["gpu"]).memory_bytes
    if need > have:
        return (
            f"with {kv_heads} K/V heads the weights and {p['batch']} caches of "
            f"{p['context']} tokens need {need / 2**30:.1f} GiB, more than the "
            f"{have / 2**30:.0f} GiB of the GPU; take fewer K/V heads."
        )
    return ""


def _prefill_decode(p: Params) -> float:
    """Tokens per second while prefilling the prompt over tokens per second of decode, one
    sequence: prompt / time to first token, against 1 / decode step."""
    r = llm_inference(p["model"], gpu=p["gpu"], context=p["prompt_len"], prompt_len=p["prompt_len"])
    return p["prompt_len"] / r.time_to_first_token_s * r.decode_step_s


def _prefill_note(p: Params) -> str:
    r = llm_inference(p["model"], gpu=p["gpu"], context=p["prompt_len"], prompt_len=p["prompt_len"])
    rate = r.prefill_flops / r.time_to_first_token_s
    return (
        f"Prefill runs at {rate / 1e12:.0f} TFLOP/s ({rate / gpu(p['gpu']).peak_flops('fp16'):.0%} "
        f"of the FP16 peak); decode is {r.decode_limiter}-bound, reading every weight for one "
        f"token per step. The ratio sits near the GPU's ops:byte ({r.ops_per_byte:.0f}): each "
        "weight costs 2 FLOPs per prefilled token (paced by the peak) and 2 bytes per decode "
        "step (paced by the bandwidth)."
    )


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
        id="11.kv_heads_design",
        question=(
            "a number of K/V heads for the model that divides its query heads and lets "
            "the weights and every sequence's KV cache fit the GPU"
        ),
        kind="design",
        params={"model": "llama-3-8b", "gpu": "H100-SXM", "context": 8192, "batch": 64},
        expected=lambda p: first_design(_kv_heads_problem, p, _kv_candidates(p), "K/V heads"),
        validate=_kv_heads_problem,
        mistakes=(
            Mistake(
                "no grouping",
                lambda p: llm(p["model"]).heads,
                "one K/V head per query head (no grouped-query attention) multiplies the "
                "cache by the group size: it no longer fits. Share each K/V head among "
                "several query heads.",
            ),
        ),
        hint="KV bytes = 2 × layers × K/V heads × head size × 2 bytes × context × batch.",
        explain=lambda p: (
            f"{llm(p['model']).name} itself uses {llm(p['model']).kv_heads}: "
            + (
                "a valid choice too."
                if not _kv_heads_problem(p, llm(p["model"]).kv_heads)
                else "too many for this batch and context."
            )
        ),
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
        explain=lambda p: (
            "It is an upper bound: activations, the runtime's workspace and memory "
            "fragmentation also take their share, so fewer sequences fit in practice."
        ),
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
    Task(
        id="11.prefill_decode",
        question=(
            "tokens per second while prefilling a prompt ÷ tokens per second of decode, "
            "for one sequence (estimate, then check with the model)"
        ),
        kind="number",
        unit="",
        params={"model": "llama-2-7b", "gpu": "A100-SXM4-80GB", "prompt_len": 1024},
        expected=_prefill_decode,
        # an estimate: within 10 % of the model's figure counts (the ops:byte reasoning
        # lands there; the model adds each phase's achievable fractions and fixed costs)
        rel_tol=0.1,
        mistakes=(
            Mistake(
                "same step time",
                lambda p: float(p["prompt_len"]),
                "that assumes a prefill pass costs what a decode step costs: it does not, "
                "it does prompt_len times the math, and math is what limits it.",
            ),
            Mistake(
                "upside down",
                lambda p: 1 / _prefill_decode(p),
                "upside down: prefill produces tokens far faster than decode.",
            ),
        ),
        hint="prefill: prompt_len tokens in time_to_first_token_s; decode: one token per "
        "decode_step_s (llm_inference).",
        explain=_prefill_note,
    ),
]
