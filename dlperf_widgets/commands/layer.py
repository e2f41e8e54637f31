"""``dlperf layer KIND [options]``: one layer's GEMM and memory passes, and its checklist."""

from __future__ import annotations

import argparse
from typing import Any

from ..core.layers import LAYER_KINDS, layer
from . import Command, int_arg


def _options() -> dict[str, tuple[str, str, list[str]]]:
    """Every option of every kind: name -> (type, help, kinds that take it)."""
    found: dict[str, tuple[str, str, list[str]]] = {}
    for spec in LAYER_KINDS.values():
        for o in spec.options:
            if o.name == "training":
                continue
            typ, help_, kinds = found.get(o.name, (o.type, o.help, []))
            kinds.append(spec.name)
            found[o.name] = (typ, help_, kinds)
    return found


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", help="one of " + ", ".join(LAYER_KINDS))
    p.add_argument("--dtype", default="fp16", help="fp16, bf16, tf32, fp32, fp8, int8, ... (fp16)")
    p.add_argument("--gpu", default="A100", help="GPU name or alias (A100)")
    p.add_argument(
        "--forward-only",
        action="store_true",
        help="model inference: no dgrad, wgrad or backward passes",
    )
    for name, (typ, help_, kinds) in _options().items():
        flag = "--" + name.replace("_", "-")
        where = "all kinds" if len(kinds) == len(LAYER_KINDS) - 1 else ", ".join(kinds[:6])
        if len(kinds) > 6:
            where += ", ..."
        text = f"{help_} [{where}]"
        if typ == "bool":
            p.add_argument(
                flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=text
            )
        elif typ in ("int", "optional_int"):
            p.add_argument(
                flag, dest=name, type=int_arg(name.replace("_", "-")), default=None, help=text
            )
        else:
            p.add_argument(flag, dest=name, default=None, help=text)


def _run(a: argparse.Namespace) -> object:
    kind = a.kind.strip().lower()
    options: dict[str, Any] = {
        name: getattr(a, name) for name in _options() if getattr(a, name) is not None
    }
    if a.forward_only:
        options["training"] = False
    return layer(kind, dtype=a.dtype, gpu=a.gpu, **options)


COMMANDS = [
    Command(
        "layer",
        "model one layer: GEMM passes (forward, dgrad, wgrad), memory passes, checklist findings",
        _configure,
        _run,
        order=30,
    ),
]
