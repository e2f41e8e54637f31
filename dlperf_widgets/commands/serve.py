"""``dlperf serve WHAT``: serving an LLM: the paged KV cache, the SLO sweep, speculative
decoding, mixture of experts, tensor-parallel decode, split-KV attention, energy per token."""

from __future__ import annotations

import argparse
from typing import Any

from ..core import serving as sv
from ..core.workload import PRECISIONS
from . import Command, float_arg, int_arg

WHATS = {
    "kv": "how many sequences fit the paged KV cache",
    "slo": "TTFT and TPOT as the batch grows, and the largest batch meeting both SLOs",
    "speculative": "speculative decoding: expected tokens, cost and speed-up",
    "moe": "mixture of experts: total vs active weights, experts hit per step",
    "tp": "tensor-parallel decode at 1, 2, 4, 8 GPUs",
    "splitkv": "decode attention with and without split-KV (FlashDecoding)",
    "energy": "joules per token as the batch grows",
}


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=list(WHATS), metavar="WHAT",
                   help="; ".join(f"{k}: {v}" for k, v in WHATS.items()))  # fmt: skip
    p.add_argument("--model", default=None, help="model name (llama-2-7b; moe: mixtral-8x7b)")
    p.add_argument("--gpu", default="A100", help="GPU name or alias (A100)")
    p.add_argument("--precision", default="fp16", help=f"{' | '.join(PRECISIONS)} (fp16)")
    p.add_argument("--batch", type=int_arg("batch"), default=1, help="sequences decoded (1)")
    p.add_argument("--context", type=int_arg("context"), default=None,
                   help="cached tokens per sequence (1024; splitkv: 32768)")  # fmt: skip
    p.add_argument("--prompt-len", type=int_arg("prompt-len"), default=512, help="(512)")
    p.add_argument("--output-len", type=int_arg("output-len"), default=256, help="(256)")
    p.add_argument("--max-model-len", type=int_arg("max-model-len"), default=None,
                   help="tokens reserved per sequence without paging (prompt + output)")  # fmt: skip
    p.add_argument("--block-size", type=int_arg("block-size"), default=16, help="(16)")
    p.add_argument("--chunk", type=int_arg("chunk"), default=512, help="prefill chunk (512)")
    p.add_argument("--ttft", type=float_arg("ttft"), default=0.5, help="TTFT SLO in s (0.5)")
    p.add_argument("--tpot", type=float_arg("tpot"), default=0.05, help="TPOT SLO in s (0.05)")
    p.add_argument("--draft", default="llama-2-7b", help="draft model (llama-2-7b)")
    p.add_argument("--acceptance", type=float_arg("acceptance"), default=0.8, help="(0.8)")
    p.add_argument("--draft-len", type=int_arg("draft-len"), default=4, help="(4)")
    p.add_argument("--tp", type=int_arg("tp"), default=1, help="tensor-parallel GPUs (1)")
    p.add_argument("--power", type=float_arg("power"), default=None,
                   help="board power in W (the datasheet limit)")  # fmt: skip


def _run(a: argparse.Namespace) -> Any:
    ctx = a.context if a.context is not None else (32768 if a.what == "splitkv" else 1024)
    if a.what == "kv":
        return sv.kv_budget(a.model or "llama-2-7b", a.gpu, precision=a.precision,
                            block_size=a.block_size, prompt_len=a.prompt_len,
                            output_len=a.output_len, max_model_len=a.max_model_len,
                            tensor_parallel=a.tp)  # fmt: skip
    if a.what == "slo":
        return sv.serving_slo(a.model or "llama-2-7b", a.gpu, prompt_len=a.prompt_len,
                              output_len=a.output_len, chunk=a.chunk, ttft_slo_s=a.ttft,
                              tpot_slo_s=a.tpot, precision=a.precision,
                              tensor_parallel=a.tp)  # fmt: skip
    if a.what == "speculative":
        return sv.speculative(a.model or "llama-2-70b", a.draft, a.gpu,
                              acceptance=a.acceptance, draft_len=a.draft_len, batch=a.batch,
                              context=ctx, precision=a.precision)  # fmt: skip
    if a.what == "moe":
        return sv.moe_decode(a.model or "mixtral-8x7b", batch=a.batch, expert_parallel=a.tp)
    if a.what == "tp":
        return sv.tensor_parallel_inference(a.model or "llama-2-70b", a.gpu, batch=a.batch,
                                            context=ctx, precision=a.precision)  # fmt: skip
    if a.what == "splitkv":
        return sv.split_kv(a.model or "llama-2-7b", a.gpu, batch=a.batch, context=ctx,
                           tensor_parallel=a.tp)  # fmt: skip
    return sv.energy_per_token(a.model or "llama-2-7b", a.gpu, batches=(1, 8, 64, 256),
                               context=ctx, precision=a.precision, tensor_parallel=a.tp,
                               power_w=a.power)  # fmt: skip


def _render(result: Any) -> str:
    if isinstance(result, list):
        head = ["TP", "weights/GPU", "KV/GPU", "all-reduces", "step", "speed-up"]
        rows = [[str(r.tensor_parallel), f"{r.weights_bytes_per_gpu / 2**30:.2f} GiB",
                 f"{r.kv_bytes_per_gpu / 2**30:.2f} GiB", str(r.all_reduces_per_step),
                 f"{r.step_s * 1e3:.3g} ms", f"{r.speedup:.2f}x"] for r in result]  # fmt: skip
        return sv._fmt_table("tensor-parallel decode (the model's prediction)", head, rows)
    table = getattr(result, "table", None)
    return table() if callable(table) else str(result)


COMMANDS = [
    Command(
        "serve",
        "LLM serving: paged KV cache, SLOs, speculative decoding, MoE, TP, split-KV, energy",
        _configure,
        _run,
        render=_render,
        order=76,
    )
]
