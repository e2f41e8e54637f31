"""``dlperf model transformer ...`` or ``dlperf model --module pkg.mod:factory``: a whole
network's operations and runtime by class.

``--module`` names a function (``package.module:function``) that returns
``(model, example_input)``, a ``torch.nn.Module`` and a tensor or tuple of tensors; the
model runs once on the CPU under the dispatcher recorder of :mod:`dlperf_widgets.live.modules`
and every operation is priced on the GPU. ``dlperf_widgets.live.examples:gpt2`` is GPT-2
small built from its configuration.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from ..core._validate import describe
from ..core.errors import InvalidParameter
from ..core.network import transformer
from . import Command, UsageError, int_arg


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "architecture",
        nargs="?",
        choices=["transformer"],
        help="network family (transformer); or give --module",
    )
    p.add_argument(
        "--module",
        metavar="PKG.MOD:FACTORY",
        help="analyse a PyTorch model: a function returning (model, example_input), "
        "e.g. dlperf_widgets.live.examples:gpt2",
    )
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
    p.add_argument(
        "--dtype", default=None, help="fp16, bf16, tf32, fp32, ... (fp16; a module: its own)"
    )
    p.add_argument("--gpu", default="A100", help="GPU name or alias (A100)")
    p.add_argument("--forward-only", action="store_true", help="inference: no backward passes")


def load_factory(spec: str) -> tuple[Any, tuple[Any, ...]]:
    """Call the ``package.module:function`` named by ``spec``; its model and inputs."""
    mod_name, sep, func_name = spec.partition(":")
    if not sep or not mod_name or not func_name.isidentifier():
        raise InvalidParameter(
            f"'module' must look like package.module:function (got {describe(spec)})"
        )
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise InvalidParameter(
            f"'module' must name an importable Python module (got {describe(mod_name)}: {exc})"
        ) from None
    factory = getattr(mod, func_name, None)
    if not callable(factory):
        raise InvalidParameter(
            f"'module' must name a function of {mod_name} (got {describe(func_name)})"
        )
    try:
        made = factory()
    except TypeError as exc:
        raise InvalidParameter(
            f"'module' must name a function callable with no arguments (got {spec}: {exc})"
        ) from None
    if not (isinstance(made, tuple) and len(made) == 2):
        raise InvalidParameter(
            f"'module' must name a function returning (model, example_input) "
            f"(got {type(made).__name__} from {spec})"
        )
    model, inputs = made
    return model, inputs if isinstance(inputs, tuple) else (inputs,)


def _run(a: argparse.Namespace) -> object:
    if a.module is not None:
        if a.architecture is not None:
            raise UsageError("give either an architecture or --module, not both")
        from ..live.modules import analyze_module

        model, inputs = load_factory(a.module)
        return analyze_module(model, *inputs, dtype=a.dtype, gpu=a.gpu, training=not a.forward_only)
    if a.architecture is None:
        raise UsageError("'architecture' must be given (transformer) unless --module is")
    return transformer(
        a.layers,
        a.hidden,
        a.heads,
        a.seq_len,
        a.batch,
        a.vocab,
        a.ffn_mult,
        dtype=a.dtype or "fp16",
        gpu=a.gpu,
        backward=not a.forward_only,
    )


COMMANDS = [
    Command(
        "model",
        "model a whole network (a transformer, or any PyTorch model with --module): every "
        "operation, and FLOPs and runtime by operation class",
        _configure,
        _run,
        order=40,
    ),
]
