"""``dlperf gpus`` and ``dlperf gpu NAME``."""

from __future__ import annotations

import argparse

from ..core.gpus import Gpu, gpu, gpus
from ..core.results import format_quantity
from . import Command


def _gpus_table(result: list[Gpu]) -> str:
    header = ("name", "arch", "SMs", "memory", "bandwidth", "FP16/BF16 peak", "ops:byte (fp16)")
    rows = [header]
    for g in result:
        half = "fp16" if g.supports("fp16") else None
        rows.append(
            (
                g.name,
                g.architecture,
                str(g.sms),
                f"{g.memory_bytes / 2**30:g} GiB",
                format_quantity(g.memory_bandwidth_bytes_per_s, "B/s", 3),
                format_quantity(g.peak_flops(half), "FLOP/s", 4) if half else "-",
                f"{g.ops_per_byte(half):.1f}" if half else "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for j, r in enumerate(rows):
        cells = [
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _configure_gpus(p: argparse.ArgumentParser) -> None:
    pass


def _configure_gpu(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="GPU name or alias, e.g. V100, A100, H100-PCIe")


COMMANDS = [
    Command(
        "gpus",
        "list every GPU with its headline figures",
        _configure_gpus,
        lambda a: gpus(),
        render=_gpus_table,
        order=10,
    ),
    Command(
        "gpu",
        "one GPU: SMs, clocks, caches, memory, peaks and ops:byte per dtype",
        _configure_gpu,
        lambda a: gpu(a.name),
        order=11,
    ),
]
