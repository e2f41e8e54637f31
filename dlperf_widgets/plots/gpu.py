"""A GPU's dense peak throughput per data type, for one GPU or side by side for several."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.dtypes import DTYPES
from ..core.gpus import Gpu
from ..core.gpus import gpu as _gpu
from ._artists import Artists
from .style import SERIES, log_axis, new_axes, si, style_axes

__all__ = ["PEAK_RANGE", "plot_gpu_peaks", "update_gpu_peaks"]

# The x axis (FLOP/s) is the same for every GPU of the table, so that two cards compare.
PEAK_RANGE = (1e11, 1e17)


def _as_gpus(gpus: Gpu | str | Sequence[Gpu | str]) -> list[Gpu]:
    if isinstance(gpus, (Gpu, str)):
        gpus = [gpus]
    return [_gpu(g) for g in gpus]


def plot_gpu_peaks(gpus: Gpu | str | Sequence[Gpu | str], ax: Any = None) -> Artists:
    """Horizontal bars of the dense peak FLOP/s of each dtype, one row per dtype.

    Several GPUs are drawn as grouped bars in the palette's order; a dtype a GPU does not
    run has no bar. Returns :class:`Artists` with ``bars`` (one list of Rectangles per
    GPU), ``values`` (one list of Texts per GPU: the peak in FLOP/s with an SI prefix,
    at each bar's end), ``legend`` and
    ``title``.
    """
    gs = _as_gpus(gpus)
    if ax is None:
        ax = new_axes((6.4, 3.6))
    else:
        style_axes(ax)
    names = list(DTYPES)
    ax.set_xscale("log")
    log_axis(ax.xaxis)
    ax.set_xlim(*PEAK_RANGE)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_yticks(np.arange(len(names)))
    ax.set_yticklabels(names)
    ax.grid(False, axis="y")
    ax.set_xlabel("dense peak throughput (FLOP/s)")
    artists = Artists(ax=ax, bars=[], values=[], legend=None, title=ax.title)
    update_gpu_peaks(artists, gs)
    return artists


def update_gpu_peaks(artists: Artists, gpus: Gpu | str | Sequence[Gpu | str]) -> list[Any]:
    """Show ``gpus`` in the artists of :func:`plot_gpu_peaks`, reusing its bars and texts.

    Returns the artists created (when there are more GPUs than before), empty otherwise.
    """
    from matplotlib.patches import Rectangle

    gs = _as_gpus(gpus)
    ax = artists.ax
    names = list(DTYPES)
    created: list[Any] = []
    while len(artists.bars) > len(gs):
        for a in artists.bars.pop() + artists.values.pop():
            a.remove()
    while len(artists.bars) < len(gs):
        i = len(artists.bars)
        bars = [
            ax.add_patch(Rectangle((PEAK_RANGE[0], 0), 0, 0, color=SERIES[i % len(SERIES)]))
            for _ in names
        ]
        texts = [ax.text(1, 0, "", va="center", fontsize=8) for _ in names]
        artists.bars.append(bars)
        artists.values.append(texts)
        created += bars + texts
    height = 0.8 / len(gs)
    for i, g in enumerate(gs):
        offset = (i - (len(gs) - 1) / 2) * height
        for row, (bar, text, d) in enumerate(
            zip(artists.bars[i], artists.values[i], names, strict=False)
        ):
            if not g.supports(d):
                bar.set_visible(False)
                text.set_visible(False)
                continue
            peak = g.peak_flops(d)
            y = row + offset
            bar.set_bounds(PEAK_RANGE[0], y - height * 0.46, peak - PEAK_RANGE[0], height * 0.92)
            bar.set_label(g.name if row == 0 else "_nolegend_")
            bar.set_visible(True)
            text.set_position((peak * 1.08, y))
            text.set_text(si(peak))
            text.set_visible(True)
    if artists.legend is not None:
        artists.legend.remove()
        artists.legend = None
    if len(gs) > 1:
        handles = [Rectangle((0, 0), 1, 1, color=SERIES[i % len(SERIES)]) for i in range(len(gs))]
        artists.legend = ax.legend(handles, [g.name for g in gs], loc="upper right")
    ax.set_title("Dense peak per data type" + (f": {gs[0].name}" if len(gs) == 1 else ""))
    return created
