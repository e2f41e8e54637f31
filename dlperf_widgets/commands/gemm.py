"""``dlperf gemm M N K``: cost, bounds, tiles, waves and alignment of one GEMM."""

from __future__ import annotations

import argparse

from ..core.alignment import LIBRARIES
from ..core.assumptions import DEFAULT_CACHE, DEFAULT_CONTEXT, TIMING_CONTEXT_DESCRIPTIONS
from ..core.gemm import gemm
from . import Command, float_arg, int_arg


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("m", type=int_arg("m"), help="rows of A and C")
    p.add_argument("n", type=int_arg("n"), help="columns of B and C")
    p.add_argument("k", type=int_arg("k"), help="columns of A, rows of B")
    p.add_argument("--dtype", default="fp16", help="fp16, bf16, tf32, fp32, fp8, int8, ... (fp16)")
    p.add_argument("--gpu", default="A100", help="GPU name or alias (A100)")
    p.add_argument("--tile", default="auto", help="auto or HEIGHTxWIDTH, e.g. 256x128 (auto)")
    p.add_argument(
        "--blocks-per-sm",
        type=int_arg("blocks-per-sm"),
        default=1,
        help="thread blocks resident per SM (1)",
    )
    p.add_argument("--batch", type=int_arg("batch"), default=1, help="batched GEMMs (1)")
    p.add_argument(
        "--beta",
        type=float_arg("beta"),
        default=0.0,
        help="C = alpha*A*B + beta*C; non-zero beta also reads C (0)",
    )
    p.add_argument(
        "--library",
        default="current",
        choices=LIBRARIES,
        help="current: cuBLAS >= 11.0 / cuDNN >= 7.6.3; legacy: older (current)",
    )
    p.add_argument(
        "--context",
        default=DEFAULT_CONTEXT,
        help="timing context of the predicted time: "
        + "; ".join(f"{name}: {text}" for name, text in TIMING_CONTEXT_DESCRIPTIONS.items())
        + f" ({DEFAULT_CONTEXT}: what 'dlperf time' measures)",
    )
    p.add_argument(
        "--cache",
        default=DEFAULT_CACHE,
        help="cold: operands come from DRAM; warm: they were just used, so a working set "
        f"that fits in L2 is read from L2 ({DEFAULT_CACHE})",
    )
    p.add_argument(
        "--quantize",
        default="none",
        help="FP8 only: the activation's quantisation as a framework's FP8 layer runs it: "
        "none, per-tensor, per-row or block (none)",
    )


def _run(a: argparse.Namespace) -> object:
    return gemm(
        a.m,
        a.n,
        a.k,
        dtype=a.dtype,
        gpu=a.gpu,
        tile=a.tile,
        blocks_per_sm=a.blocks_per_sm,
        batch=a.batch,
        beta=a.beta,
        library=a.library,
        context=a.context,
        cache=a.cache,
        quantize=a.quantize,
    )


COMMANDS = [
    Command("gemm", "model one GEMM C = alpha*A*B + beta*C on a GPU", _configure, _run, order=20)
]
