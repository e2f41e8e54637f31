"""``dlperf memory --params P``: GPU memory of training, whole and per GPU."""

from __future__ import annotations

import argparse

from ..core._validate import describe
from ..core.errors import InvalidParameter
from ..core.memory import (
    GRADIENT_CONVENTIONS,
    OPTIMIZERS,
    PRECISIONS,
    parse_count,
    training_memory,
)
from . import Command, int_arg


def params_arg(text: str) -> float:
    """A parameter count: ``125000000``, ``1.3e9``, ``7B``, ``350M`` (parsed by the core)."""
    try:
        return parse_count(text)
    except InvalidParameter:
        raise argparse.ArgumentTypeError(
            f"'params' must be a number such as 7e9 or 7B (got {describe(text)})"
        ) from None


params_arg.__name__ = "params"


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--params", type=params_arg, required=True, help="number of parameters: 7e9, 7B, 350M"
    )
    p.add_argument("--optimizer", default="adamw", help=f"{' | '.join(OPTIMIZERS)} (adamw)")
    p.add_argument(
        "--precision", default="mixed-fp16", help=f"{' | '.join(PRECISIONS)} (mixed-fp16)"
    )
    p.add_argument("--layers", type=int_arg("layers"), help="transformer layers")
    p.add_argument("--hidden", type=int_arg("hidden"), help="hidden size")
    p.add_argument("--seq-len", type=int_arg("seq-len"), help="sequence length")
    p.add_argument(
        "--batch", type=int_arg("batch"), help="samples per optimizer step on one model replica"
    )
    p.add_argument("--heads", type=int_arg("heads"), help="attention heads")
    p.add_argument(
        "--checkpointing", default="none", help="none | selective | every | sqrt | every-K (none)"
    )
    p.add_argument(
        "--accumulation-steps",
        type=int_arg("accumulation-steps"),
        default=1,
        help="micro-batches per optimizer step (1)",
    )
    p.add_argument(
        "--data-parallel", type=int_arg("data-parallel"), default=1, help="data-parallel GPUs (1)"
    )
    p.add_argument("--zero", type=int_arg("zero"), default=0, help="ZeRO stage 0-3 (0)")
    p.add_argument(
        "--tensor-parallel",
        type=int_arg("tensor-parallel"),
        default=1,
        help="tensor-parallel GPUs (1)",
    )
    p.add_argument(
        "--pipeline-parallel",
        type=int_arg("pipeline-parallel"),
        default=1,
        help="pipeline stages (1)",
    )
    p.add_argument(
        "--sequence-parallel",
        action="store_true",
        help="split LayerNorm/dropout activations across tensor-parallel GPUs too",
    )
    p.add_argument(
        "--attention",
        default="eager",
        help="eager | sdpa | flash2 | flash1 (eager keeps the s x s probabilities; eager)",
    )
    p.add_argument("--kv-heads", type=int_arg("kv-heads"), help="K/V heads (GQA; = heads)")
    p.add_argument("--ffn", type=int_arg("ffn"), help="MLP hidden size (4 x hidden)")
    p.add_argument("--gated-mlp", action="store_true", help="SwiGLU MLP (Llama)")
    p.add_argument(
        "--vocab", type=int_arg("vocab"), help="vocabulary: count the LM head and the loss"
    )
    p.add_argument("--no-dropout", action="store_true", help="no dropout masks")
    p.add_argument("--gpu", default=None, help="GPU name or alias, to say whether it fits")
    p.add_argument(
        "--convention",
        default="fp32-grads",
        help=f"gradient bytes: {' | '.join(GRADIENT_CONVENTIONS)} (fp32-grads; zero-paper: "
        "16-bit gradients, the ZeRO paper's Figure 1)",
    )


def _run(a: argparse.Namespace) -> object:
    return training_memory(
        a.params,
        optimizer=a.optimizer,
        precision=a.precision,
        layers=a.layers,
        hidden=a.hidden,
        seq_len=a.seq_len,
        batch=a.batch,
        heads=a.heads,
        checkpointing=a.checkpointing,
        accumulation_steps=a.accumulation_steps,
        data_parallel=a.data_parallel,
        zero=a.zero,
        tensor_parallel=a.tensor_parallel,
        pipeline_parallel=a.pipeline_parallel,
        sequence_parallel=a.sequence_parallel,
        gpu=a.gpu,
        convention=a.convention,
        attention=a.attention,
        dropout=not a.no_dropout,
        kv_heads=a.kv_heads,
        ffn=a.ffn,
        gated_mlp=a.gated_mlp,
        vocab=a.vocab,
    )


COMMANDS = [
    Command(
        "memory",
        "bytes of weights, gradients, optimizer states and activations when training, per GPU",
        _configure,
        _run,
        order=70,
    )
]
