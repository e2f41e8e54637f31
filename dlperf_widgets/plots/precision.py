"""Number formats on one log axis, and a gradient histogram against a format's range.

- :func:`plot_formats`: for each format, the subnormal range (thin) and the normal range
  (thick) of positive magnitudes, with its epsilon (relative precision) written beside it;
  a typed value is a vertical line.
- :func:`plot_loss_scaling`: a histogram of log2 gradient magnitudes after scaling by S,
  with the magnitudes the format flushes to zero, keeps as subnormals, or overflows
  shaded (NVIDIA slides "NN Performance optimization", "Mixed precision training").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.formats import number_format
from ._artists import Artists
from .style import COLORS, OKABE_ITO, log_axis, new_axes, style_axes

__all__ = [
    "FLOAT_FORMATS",
    "LOG2_RANGE",
    "MAGNITUDE_RANGE",
    "plot_formats",
    "plot_loss_scaling",
    "set_value",
    "update_loss_scaling",
]

# The floating-point formats of the slides' data-type comparison (FP64 would stretch the
# axis over 600 decades).
FLOAT_FORMATS = ("fp32", "tf32", "bf16", "fp16", "fp8_e5m2", "fp8_e4m3")
MAGNITUDE_RANGE = (1e-46, 1e40)


def plot_formats(
    formats: Sequence[Any] = FLOAT_FORMATS, ax: Any = None, *, value: float | None = None
) -> Artists:
    """Ranges of positive magnitudes of ``formats`` (names or FormatResults) on a log axis.

    Each format's epsilon (the gap above 1, its relative precision) is in its tick label.
    Returns :class:`Artists` with ``normal`` and ``subnormal`` (one line per format),
    ``value`` (a vertical line, hidden without a value) and ``title``.
    """
    fmts = [number_format(f) if isinstance(f, str) else f for f in formats]
    if ax is None:
        ax = new_axes((6.4, 3.4))
    else:
        style_axes(ax)
    ax.set_xscale("log")
    log_axis(ax.xaxis)
    ax.set_xlim(*MAGNITUDE_RANGE)
    normal, subnormal = [], []
    for i, f in enumerate(fmts):
        (sub,) = ax.plot(
            [f.min_subnormal, f.min_normal],
            [i, i],
            color=OKABE_ITO["sky_blue"],
            linewidth=3,
            solid_capstyle="butt",
        )
        (nor,) = ax.plot(
            [f.min_normal, f.max],
            [i, i],
            color=OKABE_ITO["blue"],
            linewidth=9,
            solid_capstyle="butt",
        )
        normal.append(nor)
        subnormal.append(sub)
    ax.set_ylim(len(fmts) - 0.5, -0.5)
    ax.set_yticks(range(len(fmts)))
    ax.set_yticklabels([f"{f.name}\neps {f.epsilon:.2g}" for f in fmts], fontsize=8)
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    ax.xaxis.set_major_locator(LogLocator(base=10, numticks=10))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"1e{round(math.log10(v))}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.grid(False, axis="y")
    ax.set_xlabel("magnitude |x| (log scale; thin: subnormal, thick: normal range)")
    ax.set_title("Range and precision of number formats")
    line = ax.axvline(1.0, color=COLORS["wasted"], linewidth=1.5, zorder=5)
    artists = Artists(ax=ax, normal=normal, subnormal=subnormal, value=line, title=ax.title)
    set_value(artists, value)
    return artists


def set_value(artists: Artists, value: float | None) -> None:
    """Move the value line to ``|value|`` (hidden for None, zero or out of range)."""
    line = artists.value
    if value is None or value == 0 or not math.isfinite(value):
        line.set_visible(False)
        return
    v = abs(value)
    line.set_xdata([v, v])
    line.set_visible(MAGNITUDE_RANGE[0] <= v <= MAGNITUDE_RANGE[1])


# The x axis of the gradient histogram: log2 of the magnitude, from far below FP8's
# smallest subnormal to above FP32's largest value.
LOG2_RANGE = (-64.0, 24.0)


def plot_loss_scaling(
    result: Any, log2_magnitudes: Any, log2_scale: float, ax: Any = None, *, bins: int = 80
) -> Artists:
    """Histogram of ``log2_magnitudes + log2_scale`` against ``result``'s format range.

    ``result`` is a :class:`~dlperf_widgets.core.loss_scaling.LossScaleResult` (its
    thresholds and fractions are shown); ``log2_magnitudes`` are log2 |gradient| samples
    before scaling. Returns :class:`Artists` with ``hist`` (a StepPatch), ``underflow``,
    ``subnormal`` and ``overflow`` (shaded spans) and ``title``.
    """
    if ax is None:
        ax = new_axes((6.4, 3.4))
    else:
        style_axes(ax)
    counts, edges = np.histogram(np.asarray(log2_magnitudes, dtype=float), bins=bins)
    share = counts / max(counts.sum(), 1) * 100
    hist = ax.stairs(share, edges, fill=True, color=OKABE_ITO["sky_blue"], alpha=0.9, zorder=2)
    under = ax.axvspan(LOG2_RANGE[0], 0, color=COLORS["wasted"], alpha=0.18, zorder=1)
    sub = ax.axvspan(0, 0, color=OKABE_ITO["yellow"], alpha=0.35, zorder=1)
    over = ax.axvspan(0, LOG2_RANGE[1], color=COLORS["wasted"], alpha=0.18, zorder=1)
    ax.set_xlim(*LOG2_RANGE)
    ax.set_ylim(0, max(float(share.max()) * 1.25, 1.0))
    ax.set_xlabel("log2 |gradient x scale| (log2 of a magnitude)")
    ax.set_ylabel("share of gradients (%)")
    artists = Artists(
        ax=ax,
        hist=hist,
        underflow=under,
        subnormal=sub,
        overflow=over,
        title=ax.title,
        edges=edges,
        share=share,
    )
    update_loss_scaling(artists, result, log2_scale)
    return artists


def _span(patch: Any, lo: float, hi: float) -> None:
    # axvspan is a Rectangle (matplotlib >= 3.9) in data x / axes y coordinates
    patch.set_x(lo)
    patch.set_width(hi - lo)


def update_loss_scaling(artists: Artists, result: Any, log2_scale: float) -> None:
    """Shift the histogram by ``log2_scale`` and show ``result``'s thresholds and shares."""
    artists.hist.set_data(artists.share, artists.edges + log2_scale)
    lo = math.log2(result.underflow_threshold) if result.underflow_threshold > 0 else LOG2_RANGE[0]
    sub_hi = math.log2(result.min_normal)
    hi = (
        math.log2(result.overflow_threshold)
        if math.isfinite(result.overflow_threshold)
        else LOG2_RANGE[1]
    )
    _span(artists.underflow, LOG2_RANGE[0], lo)
    _span(artists.subnormal, lo, sub_hi)
    _span(artists.overflow, hi, LOG2_RANGE[1])
    artists.ax.set_title(
        f"{result.format}, loss scale 2^{log2_scale:g}: {result.kept_fraction:.1%} kept\n"
        f"{result.underflow_fraction:.1%} flushed to zero, {result.subnormal_fraction:.1%} "
        f"subnormal, {result.overflow_fraction:.2%} overflow"
    )
