"""``dlperf fuse OPS`` and ``dlperf attention N``: kernel fusion and FlashAttention's traffic."""

from __future__ import annotations

import argparse

from ..core.fusion import CHAINS, FUSABLE_OPS, attention, fusion_chain
from . import Command, int_arg


def _configure_fuse(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "ops",
        help=f"comma-separated chain, e.g. 'bias,gelu', of: {', '.join(FUSABLE_OPS)}; "
        f"or a preset: {' | '.join(CHAINS)}",
    )
    p.add_argument(
        "--elements", type=int_arg("elements"), required=True, help="values in each tensor"
    )
    p.add_argument("--dtype", default="fp16", help="fp16, bf16, fp32, ... (fp16)")
    p.add_argument("--gpu", default="A100", help="GPU name or alias (A100)")


def _run_fuse(a: argparse.Namespace) -> object:
    return fusion_chain(a.ops, elements=a.elements, dtype=a.dtype, gpu=a.gpu)


def _configure_attention(p: argparse.ArgumentParser) -> None:
    p.add_argument("seq_len", type=int_arg("seq_len"), help="sequence length N")
    p.add_argument("--head-dim", type=int_arg("head-dim"), default=64, help="head size d (64)")
    p.add_argument("--heads", type=int_arg("heads"), default=16, help="attention heads (16)")
    p.add_argument("--batch", type=int_arg("batch"), default=1, help="sequences (1)")
    p.add_argument("--dtype", default="fp16", help="fp16, bf16, fp32 (fp16)")
    p.add_argument("--gpu", default="A100", help="GPU name or alias (A100)")
    p.add_argument(
        "--sram-bytes",
        type=int_arg("sram-bytes"),
        default=None,
        help="on-chip memory one block tiles into, M of the paper (102400)",
    )


def _run_attention(a: argparse.Namespace) -> object:
    return attention(
        a.seq_len,
        head_dim=a.head_dim,
        heads=a.heads,
        batch=a.batch,
        dtype=a.dtype,
        gpu=a.gpu,
        sram_bytes=a.sram_bytes,
    )


COMMANDS = [
    Command(
        "fuse",
        "bytes, kernels and time of a chain of element-wise ops, unfused vs fused",
        _configure_fuse,
        _run_fuse,
        order=44,
    ),
    Command(
        "attention",
        "HBM traffic, saved memory and time of attention, standard vs FlashAttention",
        _configure_attention,
        _run_attention,
        order=45,
    ),
]
