"""Where a priced step's time goes: one stacked bar of its categories.

:func:`plot_time_categories` draws a :class:`~dlperf_widgets.core.workload.WorkloadTime`
(or its :class:`~dlperf_widgets.core.workload.TimeBreakdown`, or anything with
``categories`` and ``step_s``, such as the ``priced`` step of a decode or training result)
as one horizontal bar split into GEMMs, attention, memory-bound kernels, the optimizer,
exposed communication, the pipeline bubble and exposed launches, in that order.
"""

from __future__ import annotations

from typing import Any

from ._artists import Artists
from .style import COLORS, OKABE_ITO, new_axes, style_axes, time_unit

__all__ = ["CATEGORY_COLORS", "plot_time_categories", "update_time_categories"]

CATEGORY_COLORS = {
    "GEMMs": COLORS["math"],
    "attention": OKABE_ITO["sky_blue"],
    "memory-bound": COLORS["memory"],
    "optimizer": OKABE_ITO["bluish_green"],
    "exposed communication": OKABE_ITO["reddish_purple"],
    "pipeline bubble": COLORS["idle"],
    "exposed launch": OKABE_ITO["vermillion"],
}


def plot_time_categories(result: Any, ax: Any = None) -> Artists:
    """One stacked bar of the step's time by category (see the module docstring)."""
    if ax is None:
        ax = new_axes((6.4, 1.8))
    else:
        style_axes(ax)
    ax.set_yticks([])
    ax.grid(False, axis="y")
    artists = Artists(ax=ax, bars=[], labels=[], legend=None)
    update_time_categories(artists, result)
    return artists


def update_time_categories(artists: Artists, result: Any) -> None:
    """Redraw the bar for ``result`` (segments in CATEGORY_COLORS' order, empty ones left out)."""
    ax = artists.ax
    for a in (*artists.bars, *artists.labels):
        a.remove()
    if artists.legend is not None:
        artists.legend.remove()
    artists.bars, artists.labels = [], []
    unit, scale = time_unit(result.step_s)
    left = 0.0
    for name, color in CATEGORY_COLORS.items():
        width = result.categories.get(name, 0.0) / scale
        if width <= 0:
            continue
        bar = ax.barh(0, width, left=left, color=color, edgecolor="white", label=name)
        artists.bars.append(bar.patches[0])
        if width > 0.08 * result.step_s / scale:
            share = result.categories[name] / result.step_s
            artists.labels.append(
                ax.text(
                    left + width / 2,
                    0,
                    f"{share:.0%}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white",
                )
            )
        left += width
    ax.set_xlim(0, max(left, 1e-12) * 1.02)
    ax.set_ylim(-0.6, 0.6)
    ax.set_xlabel(f"time in the step ({unit})")
    artists.legend = ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.55), ncol=4,
                               fontsize=8, frameon=False)  # fmt: skip
