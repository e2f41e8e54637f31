"""The command layer behind both the ``dlperf`` CLI and the ``%dlperf`` magic.

Each module in this package defines ``COMMANDS``, a list of :class:`Command`. A command
adds its arguments to an argparse parser and turns the parsed namespace into a core result
object; the front ends decide how to show it (text, JSON, HTML). Modules are discovered at
run time, so a new command is a new module and nothing else changes.
"""

from __future__ import annotations

import argparse
import importlib
import math
import pkgutil
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core._validate import MAX_SIZE, describe
from ..core.errors import DlperfError

__all__ = [
    "Command",
    "UsageError",
    "build_parser",
    "commands",
    "execute",
    "float_arg",
    "int_arg",
]


class UsageError(DlperfError, ValueError):
    """Bad command-line words (unknown option, missing argument, unparsable number)."""

    def __init__(self, message: str, prog: str = "dlperf") -> None:
        # argparse echoes unknown words whole; a message stays one short line.
        message = " ".join(message.split())
        if len(message) > 300:
            message = f"{message[:240]}... ({len(message)} characters)"
        super().__init__(message)
        self.prog = prog


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], Any]
    render: Callable[[Any], str] | None = None  # plain-text output; default str(result)
    order: int = 50


# A word argparse must read as a negative number, not an option: argparse's own pattern knows
# -3 and -.5 but not -1e3, -1_000 or -inf, which it then reported as unknown options.
_NEGATIVE_NUMBER = re.compile(
    r"^-(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$|^-(?:inf|infinity|nan)$", re.IGNORECASE
)
_REQUIRED = re.compile(r"^the following arguments are required: (.+)$")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing usage and exiting."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def error(self, message: str) -> None:  # type: ignore[override]
        required = _REQUIRED.match(message)
        if required:  # name the first missing argument, in the kit's template
            names = [n.strip().lstrip("-").replace("-", "_") for n in required.group(1).split(",")]
            message = f"'{names[0]}' must be given ({message})"
        raise UsageError(message, self.prog)


def int_arg(name: str) -> Callable[[str], int]:
    """argparse type: an integer, with the kit's message when it is not one."""

    def parse(text: str) -> int:
        clean = text.strip().replace("_", "")
        if clean.lstrip("+-").isdigit() and len(clean) <= 19:
            return int(clean)  # exact, however it is written
        try:
            value = float(clean) if len(clean) <= 40 else float("nan")
        except ValueError:
            value = float("nan")
        if value.is_integer():
            if abs(value) <= MAX_SIZE:
                return int(value)
            raise argparse.ArgumentTypeError(
                f"'{name}' must be an integer no larger than 2**40 (got {describe(text)})"
            )
        if clean.lstrip("+-").isdigit():  # more digits than any size
            raise argparse.ArgumentTypeError(
                f"'{name}' must be an integer no larger than 2**40 (got {describe(text)})"
            )
        raise argparse.ArgumentTypeError(f"'{name}' must be an integer (got {describe(text)})")

    parse.__name__ = name
    return parse


def float_arg(name: str) -> Callable[[str], float]:
    """argparse type: a number, with the kit's message when it is not one."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"'{name}' must be a number (got {describe(text)})"
            ) from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(
                f"'{name}' must be a finite number (got {describe(text)})"
            )
        return value

    parse.__name__ = name
    return parse


def commands() -> list[Command]:
    found: list[Command] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.extend(getattr(module, "COMMANDS", []))
    return sorted(found, key=lambda c: (c.order, c.name))


def build_parser(prog: str = "dlperf") -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        allow_abbrev=False,
        description="Ask the dlperf_widgets performance model about GPUs, GEMMs, layers and memory.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"dlperf_widgets {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for cmd in commands():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help, allow_abbrev=False)
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")
        cmd.configure(p)
        p.set_defaults(_command=cmd)
    return parser


def execute(argv: Sequence[str], prog: str = "dlperf") -> tuple[Command, Any, bool]:
    """Parse ``argv`` and run the command: (command, result, json wanted).

    Raises :class:`UsageError` for bad words and :class:`DlperfError` for bad values.
    ``--help`` and ``--version`` raise ``SystemExit(0)`` after printing, as argparse does.
    """
    parser = build_parser(prog)
    args = parser.parse_args(list(argv))
    cmd: Command | None = getattr(args, "_command", None)
    if cmd is None:
        raise UsageError(
            f"a command is required: one of {', '.join(c.name for c in commands())}", prog
        )
    return cmd, cmd.run(args), bool(args.json)
