"""``dlperf explain TRACE``: a PyTorch profiler trace of a GPU run, its timeline, the model's
price of its kernels, and the guide's fixes ranked by the time they would recover."""

from __future__ import annotations

import argparse
from typing import Any

from . import Command, int_arg


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", help="a .json or .json.gz trace, or the name of a shipped one")
    p.add_argument("--gpu", default=None, help="price on this GPU (default: the trace's own)")
    p.add_argument("--top", type=int_arg("top"), default=10, help="kernels listed (10)")


def _run(a: argparse.Namespace) -> Any:
    from ..live.profile import explain, shipped_profiles

    shipped = shipped_profiles()
    source = shipped.get(a.trace, a.trace)
    return explain(source, a.gpu, top=a.top)


COMMANDS = [
    Command(
        "explain",
        "explain a PyTorch profiler trace: timeline, priced kernels, fixes ranked by time",
        _configure,
        _run,
        order=77,
    )
]
