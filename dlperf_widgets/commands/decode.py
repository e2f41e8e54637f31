"""``dlperf decode MODEL``: LLM serving on one GPU: time to first token, tokens/s, memory."""

from __future__ import annotations

import argparse

from ..core.inference import KV_DTYPES, MODELS, WEIGHT_DTYPES, llm_inference
from . import Command, int_arg


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help=f"{' | '.join(MODELS)}")
    p.add_argument("--gpu", default="A100", help="GPU name or alias (A100)")
    p.add_argument(
        "--batch", type=int_arg("batch"), default=1, help="sequences decoded together (1)"
    )
    p.add_argument(
        "--context", type=int_arg("context"), default=2048, help="tokens cached per sequence (2048)"
    )
    p.add_argument(
        "--prompt-len", type=int_arg("prompt-len"), default=None, help="prompt tokens (= context)"
    )
    p.add_argument("--weight-dtype", default="fp16", help=f"{' | '.join(WEIGHT_DTYPES)} (fp16)")
    p.add_argument("--kv-dtype", default="fp16", help=f"{' | '.join(KV_DTYPES)} (fp16)")
    p.add_argument(
        "--group-size",
        type=int_arg("group-size"),
        default=128,
        help="weights per FP16 scale for int8/int4 (128)",
    )
    p.add_argument(
        "--kernels",
        action="store_true",
        help="show which kernels take the decode step's time (a table and its categories)",
    )


def _run(a: argparse.Namespace) -> object:
    result = llm_inference(
        a.model,
        gpu=a.gpu,
        batch=a.batch,
        context=a.context,
        prompt_len=a.prompt_len,
        weight_dtype=a.weight_dtype,
        kv_dtype=a.kv_dtype,
        group_size=a.group_size,
    )
    if a.kernels and result.priced is not None:
        return result.priced.breakdown()
    return result


COMMANDS = [
    Command(
        "decode",
        "LLM inference on one GPU: prefill time, decode tokens/s, KV cache and memory",
        _configure,
        _run,
        order=75,
    )
]
