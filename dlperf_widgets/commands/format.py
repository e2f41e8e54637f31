"""``dlperf format NAME``: bit layout and limits of a number format."""

from __future__ import annotations

import argparse

from ..core.formats import FORMAT_NAMES, number_format
from . import Command


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help=f"format name or alias: {', '.join(FORMAT_NAMES)}")


def _run(a: argparse.Namespace) -> object:
    return number_format(a.name)


COMMANDS = [
    Command(
        "format",
        "bits, range, smallest numbers and epsilon of a number format (fp16, bf16, fp8, ...)",
        _configure,
        _run,
        order=60,
    )
]
