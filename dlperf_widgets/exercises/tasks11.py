"""Tasks of exercises/11_llm_inference_exercises.ipynb."""

from __future__ import annotations

from ..core.gpus import gpu
from ..core.inference import kv_cache_bytes, llm, llm_inference, weight_bytes
from ._check import Mistake, Params, Task


def _linear_bits(p: Params) -> float:
    s = llm(p["model"])
    emb = (s.params - s.linear_params) * 2
    return 8 * (weight_bytes(s, "int4", group_size=p["group_size"]) - emb) / s.linear_params


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
                lambda p: int(gpu(p["gpu"]).memory_bytes // kv_cache_bytes(p["model"],
                                                                           context=p["context"])),
                "the weights take their share of the memory first.",
            ),
            Mistake(
                "decimal gigabytes",
                lambda p: int(
                    (80e9 - weight_bytes(p["model"])) // kv_cache_bytes(p["model"],
                                                                        context=p["context"])
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
        expected=lambda p: 1 / llm_inference(p["model"], gpu=p["gpu"], context=1).ideal_decode_step_s,
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
        id="11.ridge_batch",
        question="batch at which FP16 weights' intensity reaches the GPU's FP16 ops:byte",
        kind="number",
        unit="",
        params={"model": "llama-2-7b", "gpu": "H100-SXM"},
        expected=lambda p: llm_inference(p["model"], gpu=p["gpu"], context=1).ridge_batch,
        rel_tol=0.03,
        mistakes=(
            Mistake(
                "forgot the factor 2",
                lambda p: 2 * gpu(p["gpu"]).ops_per_byte("fp16"),
                "a multiply-add is 2 FLOPs: intensity = 2 × batch ÷ 2 bytes = batch.",
            ),
            Mistake(
                "one byte per weight",
                lambda p: gpu(p["gpu"]).ops_per_byte("fp16") / 2,
                "FP16 weights are 2 bytes each.",
            ),
        ),
        hint="2 × batch ÷ (2 bytes per weight) = ops:byte.",
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
]
