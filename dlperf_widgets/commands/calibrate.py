"""``dlperf calibrate``: fit the time model's constants to the device at hand, and keep them."""

from __future__ import annotations

import argparse
from typing import Any

from . import Command, UsageError, float_arg


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--device",
        default="auto",
        choices=("auto", "cpu", "cuda"),
        help="the device to calibrate: the GPU when there is one, else the CPU (auto)",
    )
    p.add_argument("--dtype", default=None, help="fp16 on a GPU, fp32 on the CPU (default)")
    p.add_argument(
        "--max-seconds",
        type=float_arg("max-seconds"),
        default=60.0,
        help="time budget of the whole run, in seconds (60)",
    )
    p.add_argument(
        "--suite",
        default="full",
        choices=("full", "tiny"),
        help="full, or tiny: smaller shapes for a first look (full)",
    )
    p.add_argument(
        "--no-save",
        "--dry-run",
        dest="save",
        action="store_false",
        help="fit and report, but keep the model's constants as they are",
    )
    p.add_argument(
        "--reset",
        action="store_true",
        help="remove the local calibration: the model goes back to the shipped constants",
    )
    p.add_argument(
        "--show",
        action="store_true",
        help="say which local calibration the model uses (and where it is kept), then stop",
    )


def _run(a: argparse.Namespace) -> Any:
    # live.calibrate imports torch lazily; loaded here so the CLI starts fast.
    from ..live.calibrate import calibrate, calibration_status, reset_calibration

    if a.reset and a.show:
        raise UsageError("'--reset' and '--show' cannot be given together: choose one")
    if a.reset:
        return reset_calibration()
    if a.show:
        return calibration_status()
    return calibrate(
        device=a.device,
        dtype=a.dtype,
        max_seconds=a.max_seconds,
        save=a.save,
        suite=a.suite,
    )


COMMANDS = [
    Command(
        "calibrate",
        "time a one-minute suite on this machine's GPU (or CPU), fit the model's constants for "
        "it, report the error on shapes left out of the fit, and keep them as the local "
        "calibration",
        _configure,
        _run,
        order=78,
    )
]
