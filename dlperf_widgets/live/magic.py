"""The ``%%dlperf_time`` cell magic: time a cell's code on the present device.

``%load_ext dlperf_widgets`` registers it. The cell runs in the notebook's namespace, first
``--warmup`` times untimed, then ``--repeats`` times timed (CUDA events on a GPU,
``perf_counter`` on the CPU), with the cache flushed between repeats; the cell shows the
median and the spread. Because the cell runs several times, it should not change state
that the next run depends on (appending to a list, stepping an optimizer).

    %%dlperf_time --repeats 20 --warmup 5 --flops 2.2e12
    y = a @ b
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from .._limits import TimeLimitExceeded, time_limit
from ..core._validate import describe
from ..core.errors import DlperfError
from ..display import error_html
from .device import DEVICES
from .timing import time_callable

__all__ = ["dlperf_time_cell", "parse_options"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise DlperfError(message)


def _parser() -> argparse.ArgumentParser:
    from ..commands import float_arg, int_arg

    p = _Parser(prog="%%dlperf_time", add_help=False, allow_abbrev=False)
    p.add_argument("--repeats", type=int_arg("repeats"), default=None)
    p.add_argument("--warmup", type=int_arg("warmup"), default=None)
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.add_argument("--no-flush", action="store_true")
    p.add_argument("--flops", type=float_arg("flops"), default=None)
    p.add_argument("--bytes", type=float_arg("bytes"), default=None)
    p.add_argument("--label", default="cell")
    p.add_argument("--max-seconds", type=_seconds, default=CELL_SECONDS)
    return p


CELL_SECONDS = 120.0
"""Longest the magic lets a cell's runs take in all (``--max-seconds``): past it the cell
is stopped with one line instead of blocking the kernel. Repeats stop after half of it (on
the CPU, as ``time_callable``'s budget), so a cell that runs in reasonable time is never cut."""


def _seconds(text: str) -> float:
    from ..commands import float_arg

    seconds = float_arg("max-seconds")(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(
            f"'max-seconds' must be a positive number (got {describe(text)})"
        )
    return seconds


def parse_options(line: str) -> argparse.Namespace:
    """The magic's options from its line (raises :class:`DlperfError` on bad words)."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise DlperfError(f"could not split the magic's line into words: {exc}") from None
    return _parser().parse_args(words)


def dlperf_time_cell(line: str, cell: str | None = None) -> Any:
    """%%dlperf_time [--repeats N] [--warmup N] [--device auto|cpu|cuda] [--no-flush]
    [--flops F] [--bytes B] [--label TEXT] [--max-seconds S]: time the cell's code (median of the repeats)."""
    try:
        opts = parse_options(line)
    except DlperfError as exc:
        return error_html(str(exc))
    if not cell or not cell.strip():
        return error_html("'cell' must hold the code to time (got an empty cell)")
    namespace: dict[str, Any]
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:  # pragma: no cover - the magic only exists inside IPython
        shell = None
    namespace = shell.user_ns if shell is not None else {}
    try:
        code = compile(cell, "<%%dlperf_time cell>", "exec")
    except SyntaxError as exc:
        return error_html(f"the cell is not valid Python: {exc}")

    def run_cell() -> None:
        exec(code, namespace)

    try:
        with time_limit(opts.max_seconds):
            return time_callable(
                run_cell,
                device=opts.device,
                repeats=opts.repeats,
                warmup=opts.warmup,
                flush_l2=not opts.no_flush,
                flops=opts.flops,
                bytes=opts.bytes,
                label=opts.label,
                # repeats stop at half the limit, so the last one ends before the hard stop
                max_seconds=opts.max_seconds / 2,
            )
    except TimeLimitExceeded:
        return error_html(
            f"the cell ran for more than {opts.max_seconds:g} s and was stopped; give "
            "--max-seconds a larger limit or time a smaller piece of work"
        )
    except DlperfError as exc:
        return error_html(str(exc))
