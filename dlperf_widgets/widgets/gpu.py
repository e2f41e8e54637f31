"""GpuCard: a GPU's figures, peaks per dtype and ops:byte; two GPUs side by side."""

from __future__ import annotations

import html
from typing import Any

from ..core.dtypes import DTYPES
from ..core.gpus import Gpu, peak_unit
from ..core.results import format_quantity
from ..plots.gpu import plot_gpu_peaks, update_gpu_peaks
from ._base import Explorer, gpu_dropdown, widgets

__all__ = ["GpuCard"]

_NONE = "(none)"


class GpuCard(Explorer):
    """A GPU's spec card: SMs, clocks, L2, memory, bandwidth, peak FLOP/s and ops:byte per
    dtype, and a bar chart of the peaks. Pick a second GPU to compare side by side.

    ``.result`` is the :class:`~dlperf_widgets.core.gpus.Gpu` shown first; ``.other`` the
    one it is compared with (or ``None``).
    """

    result: Gpu

    def __init__(self, gpu: str | Gpu = "A100", compare: str | Gpu | None = None) -> None:
        super().__init__()
        gpu_dd, custom = gpu_dropdown(gpu)
        other_names: list[str] = [_NONE, *gpu_dd.options]
        other_value = _NONE
        if compare is not None:
            other_dd, more = gpu_dropdown(compare)
            custom.update(more)
            other_value = other_dd.value
            other_dd.close()
            if other_value not in other_names:
                other_names.append(other_value)
                gpu_dd.options = [*gpu_dd.options, other_value]
        self._custom_gpus = custom
        self.other: Gpu | None = None
        controls = {
            "gpu": gpu_dd,
            "compare": widgets.Dropdown(
                options=other_names, value=other_value, description="compare with"
            ),
        }
        self._artists: Any = None
        self._setup(controls)

    def _compute(self) -> Gpu:
        other = self.controls["compare"].value
        self.other = None if other == _NONE else self._gpu(other)
        return self._gpu(self.controls["gpu"].value)

    def _render(self, result: Gpu, changed: set[str]) -> None:
        shown = [result] + ([self.other] if self.other is not None else [])
        self.output.value = _card_html(shown)
        view = self.view
        if self._artists is None:
            self._artists = plot_gpu_peaks(shown, view.ax)
            view.set_dynamic(self._dynamic())
            view.redraw(full=True)
            return
        # bars, values, legend and title are all dynamic: the axes never change
        update_gpu_peaks(self._artists, shown)
        view.set_dynamic(self._dynamic(), keep_background=True)
        view.redraw(full=False)

    def _dynamic(self) -> list[Any]:
        a = self._artists
        out = [a.title] + [x for group in a.bars + a.values for x in group]
        return out + ([a.legend] if a.legend is not None else [])


def _card_html(gs: list[Gpu]) -> str:
    """One column per GPU: figures, then peak and ops:byte for every dtype either runs."""

    def cell(text: str) -> str:
        return f"<td style='text-align:right;padding:1px 8px'>{html.escape(text)}</td>"

    rows: list[tuple[str, list[str]]] = [
        ("architecture", [g.architecture for g in gs]),
        ("SMs", [str(g.sms) for g in gs]),
        ("boost clock", [f"{g.boost_clock_mhz:g} MHz" for g in gs]),
        ("L2 cache", [f"{g.l2_bytes / 2**20:g} MiB" for g in gs]),
        ("memory", [f"{g.memory_bytes / 2**30:g} GiB" for g in gs]),
        ("memory bandwidth", [format_quantity(g.memory_bandwidth_bytes_per_s, "B/s") for g in gs]),
    ]
    for d in DTYPES:
        if not any(g.supports(d) for g in gs):
            continue
        rows.append(
            (
                f"peak {d}",
                [
                    f"{format_quantity(g.peak_flops(d), peak_unit(d))} ({g.unit_for(d)})"
                    if g.supports(d)
                    else "-"
                    for g in gs
                ],
            )
        )
        rows.append(
            (
                f"ops:byte {d}",
                [f"{g.ops_per_byte(d):.1f} FLOP/B" if g.supports(d) else "-" for g in gs],
            )
        )
    head = "".join(
        f"<th style='text-align:right;padding:1px 8px'>{html.escape(g.name)}</th>" for g in gs
    )
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th>{''.join(cell(v) for v in vals)}</tr>"
        for k, vals in rows
    )
    return f"<table class='dlperf-result dlperf-gpu-card'><tr><th></th>{head}</tr>{body}</table>"
