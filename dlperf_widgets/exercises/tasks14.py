"""Tasks of exercises/14_serving_llms_exercises.ipynb."""

from __future__ import annotations

from ..core.serving import (
    expected_accepted_tokens,
    experts_hit,
    kv_budget,
    serving_slo,
)
from ._check import Mistake, Params, Task, first_design


def _kv(p: Params, **kw: object):  # type: ignore[no-untyped-def]
    args = {k: p[k] for k in ("prompt_len", "output_len") if k in p}
    return kv_budget(p["model"], p["gpu"], **{**args, **kw})


def _chunk_problem(p: Params, chunk: int) -> str:
    """'' when ``batch`` decodes with prompts of ``prompt_len`` meet both SLOs at this chunk."""
    if chunk > p["prompt_len"]:
        return f"a chunk longer than the {p['prompt_len']}-token prompt is the whole prompt."
    r = serving_slo(p["model"], p["gpu"], prompt_len=p["prompt_len"], output_len=256,
                    chunk=chunk, ttft_slo_s=p["ttft_s"], tpot_slo_s=p["tpot_s"],
                    batches=[p["batch"]])  # fmt: skip
    ttft, tpot = float(r.ttft_s[0]), float(r.tpot_s[0])
    if tpot > p["tpot_s"]:
        return (
            f"with {chunk}-token chunks every step takes {tpot * 1e3:.1f} ms, over the TPOT "
            "target: take a smaller chunk."
        )
    if ttft > p["ttft_s"]:
        return (
            f"with {chunk}-token chunks the prompt needs {-(-p['prompt_len'] // chunk)} steps, "
            f"{ttft * 1e3:.0f} ms to the first token, over the TTFT target: take a larger chunk."
        )
    return ""


TASKS = [
    Task(
        id="14.kv_blocks",
        question="KV blocks of 16 tokens vLLM-style sizing leaves for the cache",
        kind="integer",
        params={"model": "llama-2-7b", "gpu": "A100-SXM4-80GB"},
        expected=lambda p: _kv(p).blocks,
        mistakes=(
            Mistake(
                "whole card",
                lambda p: int(
                    (_kv(p).kv_budget_bytes + 0.1 * _kv(p).capacity_bytes) // _kv(p).block_bytes
                ),
                "the engine uses 0.9 of the card (gpu_memory_utilization); the rest is reserve.",
            ),
            Mistake(
                "no workspace",
                lambda p: int(
                    (_kv(p).kv_budget_bytes + _kv(p).workspace_bytes) // _kv(p).block_bytes
                ),
                "keep the 1 GiB workspace out of the cache too.",
            ),
        ),
        hint="(0.9 × capacity − weights − activations − workspace) ÷ (16 × KV bytes per token).",
    ),
    Task(
        id="14.paged_sequences",
        question="requests of prompt_len + output_len tokens that fit the paged cache",
        kind="integer",
        params={
            "model": "opt-13b",
            "gpu": "A100-SXM4-40GB",
            "prompt_len": 500,
            "output_len": 190,
        },
        expected=lambda p: _kv(p).sequences_paged,
        mistakes=(
            Mistake(
                "tokens, not blocks",
                lambda p: int(_kv(p).blocks * 16 // (p["prompt_len"] + p["output_len"])),
                "a sequence holds whole blocks: 690 tokens take ceil(690 / 16) = 44 blocks.",
            ),
        ),
        hint="blocks ÷ ceil((prompt + output) / 16), rounded down.",
    ),
    Task(
        id="14.chunk_for_slo",
        question="a prefill chunk (tokens) that meets both SLOs for the running batch",
        kind="design",
        params={
            "model": "llama-2-7b",
            "gpu": "A100-SXM4-80GB",
            "prompt_len": 2048,
            "batch": 16,
            "ttft_s": 0.4,
            "tpot_s": 0.05,
        },
        expected=lambda p: first_design(_chunk_problem, p, range(64, 2049, 64), "chunk"),
        validate=_chunk_problem,
        mistakes=(
            Mistake(
                "whole prompt",
                lambda p: p["prompt_len"],
                "one 2048-token chunk makes every decode step a full prefill: TPOT explodes.",
            ),
        ),
        hint="try serving_slo(..., chunk=c, batches=[16]) for a few chunk sizes.",
    ),
    Task(
        id="14.spec_tokens",
        question="expected tokens per target pass, acceptance a and draft length k",
        kind="number",
        params={"acceptance": 0.7, "draft_len": 3},
        expected=lambda p: expected_accepted_tokens(p["acceptance"], p["draft_len"]),
        mistakes=(
            Mistake(
                "no bonus token",
                lambda p: expected_accepted_tokens(p["acceptance"], p["draft_len"]) - 1,
                "the target always adds one token of its own (the correction or the bonus).",
            ),
            Mistake(
                "a times k",
                lambda p: p["acceptance"] * p["draft_len"] + 1,
                "a drafted token counts only if all before it were accepted: 1 + a + a² + a³.",
            ),
        ),
        hint="(1 − a^(k+1)) / (1 − a).",
    ),
    Task(
        id="14.experts_hit",
        question="experts a Mixtral layer reads per decode step at this batch (uniform routing)",
        kind="number",
        params={"batch": 3, "experts": 8, "top_k": 2},
        expected=lambda p: experts_hit(p["batch"], p["experts"], p["top_k"]),
        mistakes=(
            Mistake(
                "batch times k",
                lambda p: p["batch"] * p["top_k"],
                "tokens often pick the same experts: count the expected distinct ones.",
            ),
        ),
        hint="E × (1 − (1 − k/E)^B).",
    ),
    Task(
        id="14.out_of_blocks",
        question="sequences of 4096 tokens (2048 in, 2048 out) that fit before blocks run out",
        kind="integer",
        params={
            "model": "llama-2-13b",
            "gpu": "A100-SXM4-40GB",
            "prompt_len": 2048,
            "output_len": 2048,
        },
        expected=lambda p: _kv(p).sequences_paged,
        mistakes=(
            Mistake(
                "prompt only",
                lambda p: _kv(p, output_len=0).sequences_paged,
                "the cache grows with every generated token: size it for prompt + output.",
            ),
        ),
        hint="kv_budget(model, gpu, prompt_len=..., output_len=...).sequences_paged.",
    ),
]
