"""``dlperf time gemm|layer|device``: measure on the present GPU (or the CPU), beside the model.

``dlperf time gemm M N K`` times C = A @ B; ``dlperf time layer KIND`` one pass of a layer
with the options of ``dlperf layer``; ``dlperf time device`` shows what would be timed.
PyTorch is needed (the ``live`` extra); without it the command says how to install it.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..core._validate import describe
from ..core.layers import LAYER_KINDS as MODEL_LAYER_KINDS
from . import Command, UsageError, float_arg, int_arg

_TARGETS = ("gemm", "layer", "device")
# the kinds the timer runs (live.timing.LAYER_KINDS; repeated here so that building the
# parser does not import the measurement layer)
TIMED_LAYER_KINDS = ("linear", "conv2d", "batchnorm", "relu", "attention")


def _common(p: argparse.ArgumentParser, with_dtype: bool = True) -> None:
    # --json is also accepted after the target's words (the parent parser only sees it
    # before them); SUPPRESS keeps the parent's value when it is not given here.
    p.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print JSON instead of a table",
    )
    p.add_argument(
        "--device",
        default="auto",
        choices=("auto", "cpu", "cuda"),
        help="auto (a CUDA GPU if present, else the CPU), cpu or cuda (auto)",
    )
    if not with_dtype:
        return
    p.add_argument(
        "--dtype",
        default=None,
        help="fp16, bf16, tf32, fp32 or fp64 (fp16 on a GPU, fp32 on the CPU)",
    )
    p.add_argument(
        "--repeats",
        type=int_arg("repeats"),
        default=None,
        help="timed runs; the median is reported (GPU 20, CPU 5)",
    )
    p.add_argument(
        "--warmup", type=int_arg("warmup"), default=None, help="untimed runs first (GPU 5, CPU 1)"
    )
    p.add_argument(
        "--max-seconds",
        type=_seconds_arg,
        default=60.0,
        help="on the CPU, refuse work estimated longer than this and stop repeating after it "
        "(60; 'none' for no limit)",
    )
    p.add_argument(
        "--no-flush",
        action="store_true",
        help="do not flush the cache between runs (times from a warm cache)",
    )


def _layer_options() -> dict[str, tuple[str, str, list[str]]]:
    """Options of the timed kinds, as ``dlperf layer`` defines them (core.layers)."""
    found: dict[str, tuple[str, str, list[str]]] = {}
    for kind in TIMED_LAYER_KINDS:
        for o in MODEL_LAYER_KINDS[kind].options:
            if o.name == "training":
                continue
            typ, help_, kinds = found.get(o.name, (o.type, o.help, []))
            kinds.append(kind)
            found[o.name] = (typ, help_, kinds)
    return found


def _seconds_arg(text: str) -> float:
    """--max-seconds: a positive number of seconds, or 'none' (read as infinity) for no limit.

    0 once meant no limit, silently; a limit of zero seconds is now refused as one."""
    if text.strip().lower() == "none":
        return math.inf
    seconds = float_arg("max-seconds")(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(
            f"'max-seconds' must be a positive number, or 'none' for no limit (got {describe(text)})"
        )
    return seconds


def _configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="target", metavar="WHAT", parser_class=type(p))
    g = sub.add_parser("gemm", help="time C = A @ B (A: M x K, B: K x N)")
    g.add_argument("m", type=int_arg("m"), help="rows of A and C")
    g.add_argument("n", type=int_arg("n"), help="columns of B and C")
    g.add_argument("k", type=int_arg("k"), help="columns of A, rows of B")
    g.add_argument("--batch", type=int_arg("batch"), default=1, help="batched GEMMs (1)")
    _common(g)

    lay = sub.add_parser("layer", help="time one pass of a layer (options of `dlperf layer`)")
    lay.add_argument("kind", help="one of " + ", ".join(TIMED_LAYER_KINDS))
    lay.add_argument(
        "--phase",
        default="forward",
        choices=("forward", "backward"),
        help="forward, or backward = activation and weight gradients (forward)",
    )
    _common(lay)
    for name, (typ, help_, kinds) in _layer_options().items():
        flag = "--" + name.replace("_", "-")
        text = f"{help_} [{', '.join(kinds)}]"
        if typ == "bool":
            lay.add_argument(
                flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=text
            )
        elif typ in ("int", "optional_int"):
            lay.add_argument(
                flag, dest=name, type=int_arg(name.replace("_", "-")), default=None, help=text
            )
        else:
            lay.add_argument(flag, dest=name, default=None, help=text)

    dev = sub.add_parser("device", help="the device a measurement would run on")
    _common(dev, with_dtype=False)


def _run(a: argparse.Namespace) -> Any:
    target = getattr(a, "target", None)
    if target is None:
        raise UsageError(f"what to time is required: one of {', '.join(_TARGETS)}", "dlperf time")
    if target == "device":
        from ..live.device import detect_device

        return detect_device(a.device)
    timing: dict[str, Any] = {
        "dtype": a.dtype,
        "device": a.device,
        "repeats": a.repeats,
        "warmup": a.warmup,
        "flush_l2": not a.no_flush,
        "max_seconds": None if a.max_seconds == math.inf else a.max_seconds,
    }
    if target == "gemm":
        from ..live.timing import time_gemm

        return time_gemm(a.m, a.n, a.k, batch=a.batch, **timing)
    from ..live.timing import time_layer

    kind = a.kind.strip().lower()
    if kind not in TIMED_LAYER_KINDS:
        from ..core.errors import InvalidParameter

        raise InvalidParameter(
            f"'kind' must be one of {', '.join(TIMED_LAYER_KINDS)} (got {describe(a.kind)})"
        )
    allowed = {o.name for o in MODEL_LAYER_KINDS[kind].options}
    options: dict[str, Any] = {}
    for name in _layer_options():
        value = getattr(a, name, None)
        if value is None:
            continue
        if name not in allowed:
            raise UsageError(
                f"--{name.replace('_', '-')} is not an option of {kind} "
                f"(options: {', '.join('--' + n.replace('_', '-') for n in sorted(allowed - {'training'}))})",
                "dlperf time layer",
            )
        options[name] = value
    return time_layer(kind, phase=a.phase, **timing, **options)


COMMANDS = [
    Command(
        "time",
        "measure a GEMM or a layer on the present GPU (or the CPU) beside the model",
        _configure,
        _run,
        order=80,
    ),
]
