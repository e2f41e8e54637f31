"""Roofline plots: a GPU's roof for one dtype, and operations placed on it.

The roof is the smaller of the memory line (arithmetic intensity x bandwidth) and the math
peak; it bends at the GPU's ops:byte ratio (NVIDIA slides "NN Performance optimization",
"Math and Memory bounds"). Each operation sits at its arithmetic intensity and at the
throughput the core predicts for it, coloured by its limiter.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.gemm import attainable_flops_per_s
from ..core.gpus import Gpu
from ..core.gpus import gpu as _gpu
from ..core.results import format_quantity
from ._artists import Artists
from .style import COLORS, LIMITER_COLORS, log_axis, measured_markers, new_axes, style_axes

__all__ = [
    "AI_RANGE",
    "FLOPS_RANGE",
    "fit_points",
    "plot_gemm",
    "plot_roofline",
    "roof_points",
    "set_measured",
    "set_points",
    "update_roof",
]

# Arithmetic intensities the x axis spans (FLOP/B): from an FP64 element-wise operation to
# a very large INT4 GEMM; and throughputs the y axis spans (FLOP/s), from a small
# memory-bound operation to the largest peak in the GPU table.
AI_RANGE = (0.05, 1e5)
FLOPS_RANGE = (1e10, 5e16)


def roof_points(
    g: Gpu, dtype: str, ai_range: tuple[float, float] = AI_RANGE
) -> tuple[list[float], list[float]]:
    """Corners of the roof: memory line up to the ridge, then flat at the peak (from the core)."""
    ridge = g.ops_per_byte(dtype)
    lo, hi = ai_range
    xs = [lo, ridge, hi] if lo < ridge < hi else [lo, hi]
    ys = [float(y) for y in attainable_flops_per_s(np.array(xs), g, dtype)]
    return xs, ys


def plot_roofline(
    gpu: str | Gpu,
    dtype: str = "fp16",
    ax: Any = None,
    *,
    ops: Sequence[Any] = (),
    labels: Sequence[str] | None = None,
    ai_range: tuple[float, float] = AI_RANGE,
    flops_range: tuple[float, float] = FLOPS_RANGE,
) -> Artists:
    """Draw ``gpu``'s roof for ``dtype``, its ridge point, and ``ops`` on it.

    ``ops`` are core results with ``arithmetic_intensity``, ``predicted_flops_per_s`` and
    ``limiter`` (a :class:`~dlperf_widgets.core.gemm.GemmResult`, for instance). The axes
    span ``ai_range`` x ``flops_range`` (widened to fit the peak and the operations), the
    same for every GPU, so that rooflines of two GPUs compare at a glance.
    Returns :class:`Artists` with ``roof``, ``ridge``, ``ridge_label``, ``peak_label``,
    ``title``, ``points``, ``labels``, ``errorbars`` (one vertical bar per operation that
    carries an error band: FLOPs over ``time_high_s`` to FLOPs over ``time_low_s``) and
    ``measured`` (hollow markers for measurements, empty until :func:`set_measured` fills
    them).
    """
    if ax is None:
        ax = new_axes()
    else:
        style_axes(ax)
    ax.set_xscale("log")
    ax.set_yscale("log")
    log_axis(ax.xaxis)
    log_axis(ax.yaxis)
    (roof,) = ax.plot([], [], color=COLORS["roof"], linewidth=2, label="roof", zorder=2)
    ridge_line = ax.axvline(1.0, color=COLORS["ridge"], linestyle="--", linewidth=1, zorder=1)
    ridge_label = ax.text(1, 1, "", color=COLORS["ridge"], fontsize=9, va="bottom", ha="left")
    measured = measured_markers(ax, 4, alpha=0.45, zorder=1.5)
    # Error bars of the model's points: the throughput at either end of each prediction's
    # band (core.uncertainty), where a result carries one.
    from matplotlib.collections import LineCollection

    errorbars = LineCollection([], colors=COLORS["model"], linewidths=1.6, alpha=0.7, zorder=3.8)
    ax.add_collection(errorbars)
    peak_label = ax.text(ai_range[1] / 1.2, 1, "", fontsize=9, ha="right", va="bottom")
    ax.set_xlim(*ai_range)
    ax.set_ylim(*flops_range)
    ax.set_xlabel("arithmetic intensity (FLOP/B)")
    ax.set_ylabel("throughput (FLOP/s)")
    artists = Artists(
        ax=ax,
        roof=roof,
        ridge=ridge_line,
        ridge_label=ridge_label,
        peak_label=peak_label,
        title=ax.title,
        points=[],
        labels=[],
        measured=measured,
        errorbars=errorbars,
        flops_range=flops_range,
    )
    update_roof(artists, gpu, dtype)
    if ops:
        fit_points(artists, ops)
        # Labels are placed where the points will be drawn: a figure with a layout engine
        # (constrained layout) moves its axes at the first draw, so lay it out first.
        engine = ax.figure.get_layout_engine()
        if engine is not None:
            engine.execute(ax.figure)
        set_points(artists, ops, labels)
    return artists


def update_roof(artists: Artists, gpu: str | Gpu, dtype: str) -> bool:
    """Move the roof, ridge and labels of ``artists`` to ``gpu`` / ``dtype``.

    Returns True when the y axis had to grow to show the peak (a full redraw is due).
    """
    g = _gpu(gpu)
    ax = artists.ax
    lo, hi = ax.get_xlim()
    xs, ys = roof_points(g, dtype, (lo, hi))
    peak = g.peak_flops(dtype)
    ridge = g.ops_per_byte(dtype)
    artists.roof.set_data(xs, ys)
    artists.ridge.set_xdata([ridge, ridge])
    ymin, ymax = ax.get_ylim()
    artists.ridge_label.set_position((ridge * 1.15, ymin * 2))
    artists.ridge_label.set_text(f"ridge: ops:byte {ridge:.1f} FLOP/B")
    artists.peak_label.set_position((hi / 1.2, peak * 1.15))
    artists.peak_label.set_text(f"peak {format_quantity(peak, 'FLOP/s', 3)}")
    ax.set_title(f"Roofline: {g.name}, {dtype}")
    if peak * 4 > ymax:
        ax.set_ylim(ymin, peak * 5)
        return True
    return False


def fit_points(artists: Artists, ops: Sequence[Any]) -> bool:
    """Set the bottom of the y axis to show every operation; True when it changed.

    The bottom goes below the default range only as far as the lowest operation needs,
    and back once no operation needs it.
    """
    ax = artists.ax
    ymin, ymax = ax.get_ylim()
    # an op without FLOPs (a copy) has no place on a log axis: it cannot set its bottom
    rates = (r.predicted_flops_per_s for r in ops if r.predicted_flops_per_s > 0)
    low = min(rates, default=artists.flops_range[0])
    want = min(artists.flops_range[0], low / 3)
    if want != ymin:
        ax.set_ylim(want, ymax)
        artists.ridge_label.set_y(want * 2)
        return True
    return False


def set_measured(artists: Artists, ai: Any, flops_per_s: Any) -> None:
    """Show measurements (arithmetic intensity, achieved FLOP/s) as hollow markers; empty
    arrays remove them. They are drawn apart from the model's filled points."""
    artists.measured.set_data(np.asarray(ai, dtype=float), np.asarray(flops_per_s, dtype=float))


def _frac(v: float, lo: float, hi: float) -> float:
    """Where ``v`` lies between ``lo`` and ``hi`` on a log axis (0..1)."""
    import math

    if v <= 0 or lo <= 0:
        return 0.0
    return (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))


def _point_label(result: Any) -> str:
    return (
        f"{result.arithmetic_intensity:.1f} FLOP/B, "
        f"{format_quantity(result.predicted_flops_per_s, 'FLOP/s', 3)} ({result.limiter})"
    )


# Where a point's label may go, as offsets (points) of its anchor from the point: beside it
# below or above, on either side, then one line further away. The first free one is used.
_LABEL_SPOTS = ((8, -16), (8, 6), (-8, -16), (-8, 6), (8, -30), (8, 20), (-8, -30), (-8, 20))
_LABEL_FONT = 9.0
_MARKER_HALF = 5.0  # half the width of a point's marker (markersize 8 plus its edge), points


@functools.lru_cache(maxsize=512)
def _text_size(text: str) -> tuple[float, float, float]:
    """Width, height (descent included) and descent of ``text`` as a label at the labels'
    font size, in points, with the labels' box padding around it. Heights are a line's
    (matplotlib lays out one line of text with the height and descent of "lp"), from the
    font's own metrics, the same whatever the backend."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    if not text:
        return 0.0, 0.0, 0.0
    measure = TextToPath().get_text_width_height_descent
    font = FontProperties(size=_LABEL_FONT)
    w, _, _ = measure(text, font, ismath=False)
    _, h, d = measure("lp", font, ismath=False)
    pad = 0.15 * _LABEL_FONT  # the light box around a point's label (boxstyle pad)
    return float(w) + 2 * pad, float(h) + 2 * pad, float(d) + pad


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """Area shared by two boxes (x0, y0, x1, y1)."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def _text_box(ax: Any, t: Any, scale: float) -> tuple[float, ...] | None:
    """Display box of one of the roof's text labels (data position, its alignment)."""
    text = t.get_text()
    if not text:
        return None
    w, h, d = (v * scale for v in _text_size(text))
    x, y = ax.transData.transform(t.get_position())
    left = {"left": x, "right": x - w, "center": x - w / 2}[t.get_horizontalalignment()]
    bottom = y if t.get_verticalalignment() == "bottom" else y - d
    return (left, bottom, left + w, bottom + h)


def _free_spots(
    artists: Artists,
    ops: Sequence[Any],
    labels: Sequence[str],
    order: Sequence[int],
    preferred: dict[int, tuple[int, int]],
) -> dict[int, tuple[int, int]]:
    """An offset for every label that keeps it off the other labels, the points, the roof's
    own labels and the edges of the axes, where the plot leaves room; labels are placed in x
    order, each at its preferred spot when that is free, else at the least crowded one."""
    ax = artists.ax
    scale = ax.figure.dpi / 72.0
    pts = [ax.transData.transform((r.arithmetic_intensity, r.predicted_flops_per_s)) for r in ops]
    half = _MARKER_HALF * scale
    taken = [(px - half, py - half, px + half, py + half) for px, py in pts]
    for t in (artists.peak_label, artists.ridge_label):
        box = _text_box(ax, t, scale)
        if box is not None:
            taken.append(box)
    frame = ax.bbox.extents
    out: dict[int, tuple[int, int]] = {}
    for i in order:
        w, h, d = (v * scale for v in _text_size(labels[i]))
        if w == 0:
            out[i] = preferred[i]
            continue
        px, py = pts[i]
        own = taken[i]
        best, best_cost = preferred[i], float("inf")
        for dx, dy in (preferred[i], *(s for s in _LABEL_SPOTS if s != preferred[i])):
            left = px + dx * scale - (w if dx < 0 else 0.0)
            bottom = py + dy * scale - d
            box = (left, bottom, left + w, bottom + h)
            inside = _overlap(box, frame)
            cost = 4 * (w * (h + d) - inside)  # outside the axes weighs most
            cost += sum(_overlap(box, other) for other in taken if other is not own)
            if cost < best_cost:
                best, best_cost = (dx, dy), cost
            if cost == 0:
                break
        out[i] = best
        dx, dy = best
        left = px + dx * scale - (w if dx < 0 else 0.0)
        taken.append((left, py + dy * scale - d, left + w, py + dy * scale - d + h))
    return out


def set_points(
    artists: Artists,
    ops: Sequence[Any],
    labels: Sequence[str] | None = None,
    *,
    animated: bool = False,
) -> list[Any]:
    """Place ``ops`` on a drawn roofline, reusing its point and label artists.

    Artists are added or removed only when the number of operations changes; otherwise
    their data, colour and text are updated in place. Returns the new artists (those a
    caller that blits must register), empty when none were created.
    """
    ax = artists.ax
    ops = list(ops)
    labels = list(labels) if labels is not None else [_point_label(r) for r in ops]
    created: list[Any] = []
    while len(artists.points) > len(ops):
        artists.points.pop().remove()
        artists.labels.pop().remove()
    while len(artists.points) < len(ops):
        (p,) = ax.plot([], [], "o", markersize=8, markeredgecolor="white", zorder=4)
        t = ax.annotate(
            "",
            (1, 1),
            xytext=(8, -16),
            textcoords="offset points",
            fontsize=9,
            zorder=3.5,  # under the points, over the roof and the measurements
            annotation_clip=False,
            # a light box keeps a label readable over the roof and measured points
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
            # a thin leader ties a label moved away from a crowded point back to it
            # (patchA None: the line runs under the label's box instead of being clipped to
            # it, which costs a Bezier split per label on every draw)
            arrowprops={
                "arrowstyle": "-",
                "color": "0.55",
                "lw": 0.6,
                "shrinkA": 0,
                "shrinkB": 5,
                "patchA": None,
            },
        )
        for a in (p, t):
            a.set_animated(animated)
        artists.points.append(p)
        artists.labels.append(t)
        created += [p, t]
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    # labels of neighbours (in x order) alternate below and above their points
    order = sorted(range(len(ops)), key=lambda i: ops[i].arithmetic_intensity)
    rank = {i: j for j, i in enumerate(order)}
    spot: dict[int, tuple[int, int]] = {}
    for i, (p, t, r, text) in enumerate(
        zip(artists.points, artists.labels, ops, labels, strict=False)
    ):
        x, y = r.arithmetic_intensity, r.predicted_flops_per_s
        color = LIMITER_COLORS.get(r.limiter, COLORS["roof"])
        p.set_data([x], [y])
        p.set_markerfacecolor(color)
        t.xy = (x, y)
        # keep the label inside the axes: above a point near the bottom, left of one
        # near the right edge (positions in decades, where the axes are logarithmic)
        low = _frac(y, y0, y1) < 0.15
        high = _frac(y, y0, y1) > 0.85
        right = _frac(x, x0, x1) > 0.6
        above = low or (rank[i] % 2 == 1 and not high)
        spot[i] = (-8 if right else 8, 6 if above else -16)
        t.set_text(text)
        t.set_color(color)
    for i, (dx, dy) in _free_spots(artists, ops, labels, order, spot).items():
        t = artists.labels[i]
        t.set_position((dx, dy))
        t.set_horizontalalignment("right" if dx < 0 else "left")
    bars = []
    for r in ops:
        low, high = getattr(r, "time_low_s", None), getattr(r, "time_high_s", None)
        if low and high and np.isfinite(low) and np.isfinite(high):
            x = r.arithmetic_intensity
            bars.append([(x, r.flops / high), (x, r.flops / low)])
    if getattr(artists, "errorbars", None) is not None:
        artists.errorbars.set_segments(bars)
    return created


def plot_gemm(result: Any, ax: Any = None) -> Artists:
    """The roofline of ``result.gpu`` / ``result.dtype`` with the GEMM ``result`` on it."""
    return plot_roofline(result.gpu, result.dtype, ax, ops=[result])
