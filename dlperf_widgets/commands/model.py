"""``dlperf model transformer ...``: a whole network's operations and runtime by class."""

from __future__ import annotations

import argparse

from ..core.network import transformer
from . import Command, int_arg


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("architecture", choices=["transformer"], help="network family (transformer)")
    p.add_argument("--layers", type=int_arg("layers"), default=24, help="transformer blocks (24)")
    p.add_argument("--hidden", type=int_arg("hidden"), default=1024, help="hidden size (1024)")
    p.add_argument("--heads", type=int_arg("heads"), default=16, help="attention heads (16)")
    p.add_argument("--seq-len", type=int_arg("seq-len"), default=512, help="sequence length (512)")
    p.add_argument("--batch", type=int_arg("batch"), default=8, help="batch size (8)")
    p.add_argument("--vocab", type=int_arg("vocab"), default=30522, help="vocabulary (30522)")
    p.add_argument(
        "--ffn-mult",
        type=int_arg("ffn-mult"),
        default=4,
        help="feed-forward width as a multiple of hidden (4)",
    )
    p.add_argument("--dtype", default="fp16", help="fp16, bf16, tf32, fp32, ... (fp16)")
    p.add_argument("--gpu", default="A100", help="GPU name or alias (A100)")
    p.add_argument("--forward-only", action="store_true", help="inference: no backward passes")


def _run(a: argparse.Namespace) -> object:
    return transformer(
        a.layers,
        a.hidden,
        a.heads,
        a.seq_len,
        a.batch,
        a.vocab,
        a.ffn_mult,
        dtype=a.dtype,
        gpu=a.gpu,
        backward=not a.forward_only,
    )


COMMANDS = [
    Command(
        "model",
        "model a whole network: every operation, and FLOPs and runtime by operation class",
        _configure,
        _run,
        order=40,
    ),
]
