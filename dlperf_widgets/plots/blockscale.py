"""What one outlier costs a block-scaled format.

:func:`plot_block_outlier` draws, for a
:class:`~dlperf_widgets.core.scaling.BlockStudyResult`, the relative rms error of the
outlier's block-mates and of the other blocks against the outlier's size (binades
above the other values), with the study's own outlier marked. The curves come from the
result's sweep; nothing is computed here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._artists import Artists
from .style import COLORS, OKABE_ITO, new_axes, style_axes

__all__ = ["ERROR_RANGE", "plot_block_outlier", "update_block_outlier"]

# Relative rms errors shown: below FP8 E4M3's rounding error (about 2**-5) up to a flushed
# block (1) with room for its label.
ERROR_RANGE = (5e-3, 2.0)


def _clip(values: Any) -> np.ndarray:
    return np.clip(np.asarray(values, dtype=float), *ERROR_RANGE)


def plot_block_outlier(result: Any, ax: Any = None, *, title: bool = True) -> Artists:
    """Error against outlier size: block-mates (vermillion), the other blocks (blue; none
    with one scale per tensor),
    the study's outlier as a dashed line with its points. ``block``, ``others``, ``marker``, ``where`` (and the title naming the format, unless ``title=False``: a
    widget says it beside the plot) change with :func:`update_block_outlier`."""
    if ax is None:
        ax = new_axes((6.4, 3.4))
    else:
        style_axes(ax)
    ax.set_yscale("log")
    (block,) = ax.plot([], [], color=COLORS["wasted"], linewidth=1.8, label="outlier's block-mates")
    (others,) = ax.plot([], [], color=COLORS["math"], linewidth=1.8, label="other blocks")
    (marker,) = ax.plot([], [], "o", color=OKABE_ITO["black"], markersize=5, zorder=4)
    where = ax.axvline(0, color=COLORS["roof"], linestyle="--", linewidth=1.0, zorder=3)
    ax.set_xlim(0, 24)
    ax.set_ylim(*ERROR_RANGE)
    ax.set_xlabel("outlier size (binades above the other values)")
    ax.set_ylabel("relative rms error")
    ax.legend(loc="lower right", fontsize=8)
    artists = Artists(
        ax=ax, block=block, others=others, marker=marker, where=where, title=ax.title, titled=title
    )
    if not title:
        ax.set_title("one outlier in a tensor (simulated quantization)", fontsize=10)
    update_block_outlier(artists, result)
    return artists


def update_block_outlier(artists: Artists, result: Any) -> None:
    """Show ``result``: its sweep's two curves, its outlier and a title naming the format."""
    x = np.asarray(result.sweep_binades, dtype=float)
    artists.block.set_data(x, _clip(result.sweep_block_error))
    others = np.asarray(result.sweep_other_blocks_error, dtype=float)
    artists.others.set_data(x[: others.size], _clip(others))
    b = result.outlier_binades
    points = [result.block_error]
    if result.other_blocks_error is not None:
        points.append(result.other_blocks_error)
    artists.marker.set_data([b] * len(points), _clip(points))
    artists.where.set_xdata([b, b])
    if b > artists.ax.get_xlim()[1]:
        artists.ax.set_xlim(0, b)
    if artists.titled:
        blocks = (
            "one scale per tensor"
            if result.block_size >= result.elements
            else f"blocks of {result.block_size}, {result.scale_format} scales"
        )
        artists.ax.set_title(
            f"{result.element_format} in {blocks}: {result.bits_per_element:g} bits per "
            "element (simulated)",
            fontsize=10,
        )
