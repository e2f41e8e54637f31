"""FP8 scaling, pipeline schedules and a training step's timeline.

- :func:`plot_fp8_scaling`: the histogram of log2 |x * scale| of a tensor against an FP8
  format's range (flushed to zero, subnormal, saturated shaded), for a
  :class:`~dlperf_widgets.core.scaling.Fp8ScalingResult`.
- :func:`plot_pipeline_schedule`: which stage runs which micro-batch's forward (F) and
  backward (B) when, for a :class:`~dlperf_widgets.core.scaleout.ScheduleResult`; the gaps
  are the bubble.
- :func:`plot_step_timeline`: one GPU's training step from a
  :class:`~dlperf_widgets.core.scaleout.StepResult`, compute on one lane and communication
  on the other.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.formats import number_format
from ._artists import Artists
from .precision import _span
from .style import COLORS, OKABE_ITO, new_axes, style_axes, time_unit

__all__ = [
    "FP8_LOG2_RANGE",
    "plot_fp8_scaling",
    "plot_pipeline_schedule",
    "plot_step_timeline",
    "update_fp8_scaling",
    "update_pipeline_schedule",
    "update_step_timeline",
]

# log2 of scaled magnitudes shown: below E5M2's smallest subnormal (2**-16) to above its
# largest value (2**15.8)
FP8_LOG2_RANGE = (-28.0, 20.0)


def plot_fp8_scaling(result: Any, ax: Any = None, *, bins: int = 96) -> Artists:
    """Histogram of log2 |x * scale| with the format's underflow / subnormal / saturation
    zones. ``hist`` is recomputed by :func:`update_fp8_scaling` from ``result.scaled``."""
    if ax is None:
        ax = new_axes((6.4, 3.4))
    else:
        style_axes(ax)
    edges = np.linspace(*FP8_LOG2_RANGE, bins + 1)
    hist = ax.stairs(np.zeros(bins), edges, fill=True, color=OKABE_ITO["sky_blue"], zorder=2)
    under = ax.axvspan(FP8_LOG2_RANGE[0], 0, color=COLORS["wasted"], alpha=0.18, zorder=1)
    sub = ax.axvspan(0, 0, color=OKABE_ITO["yellow"], alpha=0.35, zorder=1)
    over = ax.axvspan(0, FP8_LOG2_RANGE[1], color=COLORS["wasted"], alpha=0.18, zorder=1)
    amax = ax.axvline(0, color=COLORS["roof"], linewidth=1.2, linestyle="--", zorder=3)
    ax.set_xlim(*FP8_LOG2_RANGE)
    ax.set_ylim(0, 10)
    ax.set_xlabel("log2 |x × scale|  (red: flushed to zero or saturated; yellow: subnormal)")
    ax.set_ylabel("share of values (%)")
    artists = Artists(
        ax=ax,
        hist=hist,
        underflow=under,
        subnormal=sub,
        overflow=over,
        amax=amax,
        title=ax.title,
        edges=edges,
    )
    update_fp8_scaling(artists, result)
    return artists


def update_fp8_scaling(artists: Artists, result: Any) -> None:
    """Show ``result``: its scaled values' histogram, its format's zones and its fractions."""
    scaled = np.abs(np.asarray(result.scaled, dtype=float))
    logs = np.log2(scaled[scaled > 0])
    lo, hi = FP8_LOG2_RANGE
    counts, _ = np.histogram(np.clip(logs, lo, hi - 1e-9), bins=artists.edges)
    share = counts / max(result.count, 1) * 100
    artists.hist.set_data(share, artists.edges)
    f = number_format(result.format)
    zero_at = math.log2(f.underflow_threshold)
    _span(artists.underflow, lo, zero_at)
    _span(artists.subnormal, zero_at, math.log2(f.min_normal))
    _span(artists.overflow, math.log2(f.overflow_threshold), hi)
    top = math.log2(result.scale_amax * result.scale) if result.scale_amax > 0 else lo
    artists.amax.set_xdata([top, top])
    artists.ax.set_title(
        f"{result.format}, {result.recipe} scaling, scale {result.scale:.3g}: "
        f"{result.saturation_fraction:.2%} saturated, {result.underflow_fraction:.2%} to zero",
        fontsize=10,
    )


_KIND_COLOR = {"F": COLORS["math"], "B": COLORS["memory"]}
# Ops labelled with their micro-batch up to this many (beyond, the labels are unreadable and
# drawing them is most of the figure's time).
LABEL_OPS = 256


def plot_pipeline_schedule(
    result: Any,
    ax: Any = None,
    *,
    label: bool = True,
    label_ops: int = LABEL_OPS,
    fit: str = "exact",
) -> Artists:
    """Stages (rows) against time: forward passes in blue, backward in orange, each
    labelled with its micro-batch (up to ``label_ops`` ops); the white gaps are the
    pipeline bubble, the dashed line the end of the step. Interleaved chunks are told apart
    by shade (chunk 0 darkest). ``fit='round'`` ends the time axis at a round time above
    the step (it then stays put while the step changes a little)."""
    if ax is None:
        ax = new_axes((6.4, 0.45 * result.stages + 1.2))
    else:
        style_axes(ax)
    ax.grid(False, axis="y")
    ax.set_xlabel("time (one micro-batch's forward through a stage = 1)")
    ax.set_ylabel("stage")
    end = ax.axvline(0, color=COLORS["roof"], linewidth=1.0, linestyle="--", zorder=3)
    artists = Artists(
        ax=ax,
        bars=[],
        texts=[],
        end=end,
        title=ax.title,
        label=label,
        label_ops=label_ops,
        fit=fit,
        layout=None,
    )
    update_pipeline_schedule(artists, result)
    return artists


def _round_up(t: float) -> float:
    """The smallest of 1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10**k at or above ``t``."""
    decade = 10.0 ** math.floor(math.log10(t))
    return next(f * decade for f in (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if f * decade >= t)


def update_pipeline_schedule(artists: Artists, result: Any) -> None:
    """Replace the bars (and labels) by ``result``'s ops and retitle."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    ax = artists.ax
    for a in (*artists.bars, *artists.texts):
        a.remove()
    v = getattr(result, "chunks", 1)
    chunks = getattr(result, "op_chunks", ()) or (0,) * len(result.ops)
    # one compound path of rectangles per (kind, chunk): a few artists however many ops
    spans: dict[tuple[str, int], list[tuple[int, float, float]]] = {}
    for (s, _i, k, start, end), c in zip(result.ops, chunks, strict=True):
        spans.setdefault((k, c), []).append((s, start, end))
    bars = []
    codes = [Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY]
    for (k, c), rows in spans.items():
        a = np.asarray(rows, dtype=float)
        y0, y1, x0, x1 = a[:, 0] - 0.4, a[:, 0] + 0.4, a[:, 1], a[:, 2]
        verts = np.stack(
            [np.c_[x0, y0], np.c_[x0, y1], np.c_[x1, y1], np.c_[x1, y0], np.c_[x0, y0]], axis=1
        ).reshape(-1, 2)
        patch = PathPatch(
            Path(verts, codes * len(rows)),
            facecolor=_KIND_COLOR[k],
            alpha=1.0 - 0.55 * c / max(v - 1, 1),
            edgecolor="white",
            linewidth=0.5 if len(result.ops) <= 512 else 0.15,
        )
        ax.add_artist(patch)  # not add_patch: its data-limit walk over every rectangle is slow
        bars.append(patch)
    texts = []
    if artists.label and len(result.ops) <= artists.label_ops:
        for s, i, k, start, end in result.ops:
            texts.append(
                ax.text(
                    (start + end) / 2,
                    s,
                    f"{k}{i}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white",
                )
            )
    artists.bars, artists.texts = bars, texts
    artists.end.set_xdata([result.total_time] * 2)
    # the axes change only when the stages do or the step outgrows (or shrinks well below)
    # a round time, so a widget can redraw the bars alone
    t = result.total_time
    xmax = t
    if artists.fit == "round":
        xmax = artists.layout[1] if artists.layout else 0.0
        if not 0.4 * xmax <= t <= xmax:
            xmax = _round_up(1.25 * t)  # headroom: a slider moved on keeps the axis
    layout = (result.stages, xmax)
    if layout != artists.layout:
        artists.layout = layout
        ax.set_ylim(result.stages - 0.5, -0.5)
        # at most 8 stage numbers: tick labels are most of a full redraw's time
        ax.set_yticks(range(0, result.stages, -(-result.stages // 8)))
        ax.set_xlim(0, xmax)
    extra = f" × {v} chunks" if result.schedule == "interleaved" else ""
    ax.set_title(
        f"{result.schedule}: {result.stages} stages{extra}, {result.micro_batches} "
        f"micro-batches: bubble {result.bubble_fraction:.0%} of the step",
        fontsize=10,
    )


_PHASE_COLORS = {
    "forward": COLORS["math"],
    "backward": OKABE_ITO["sky_blue"],
    "pipeline fill": COLORS["idle"],
    "pipeline drain": COLORS["idle"],
    "tensor/pipeline comm": COLORS["memory"],
    "gradient all-reduce": COLORS["wasted"],
    # one colour per series: ZeRO-3's gathers are not the gradient all-reduce
    "ZeRO-3 traffic": OKABE_ITO["reddish_purple"],
    "waiting for launches": OKABE_ITO["yellow"],
    "optimizer": OKABE_ITO["bluish_green"],
}
_LANES = ("compute", "network")


def plot_step_timeline(result: Any, ax: Any = None) -> Artists:
    """One GPU's training step: compute (forward, backward, bubble) on the top lane and
    communication on the bottom lane; overlapped gradient traffic sits under the backward
    pass, the exposed part sticks out past the compute."""
    if ax is None:
        ax = new_axes((6.4, 2.8))
    else:
        style_axes(ax)
    ax.set_ylim(1.6, -0.6)
    ax.set_yticks(range(len(_LANES)))
    ax.set_yticklabels(list(_LANES))
    ax.grid(False, axis="y")
    from matplotlib.patches import Patch

    handles = [Patch(color=c, label=k) for k, c in _PHASE_COLORS.items() if k != "pipeline drain"]
    legend = ax.legend(
        handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.42), ncol=3, fontsize=8
    )
    artists = Artists(ax=ax, bars=[], legend=legend, title=ax.title)
    update_step_timeline(artists, result)
    return artists


def update_step_timeline(artists: Artists, result: Any) -> None:
    """Replace the bars by ``result``'s timeline and retitle."""
    ax = artists.ax
    for b in artists.bars:
        b.remove()
    artists.bars = []
    end = max((s + d for _, _, s, d in result.timeline), default=result.step_s)
    unit, scale = time_unit(end)
    by: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for lane, label, start, dur in result.timeline:
        by.setdefault((lane, label), []).append((start / scale, dur / scale))
    for (lane, label), xr in by.items():
        y = _LANES.index(lane)
        artists.bars.append(
            ax.broken_barh(
                xr,
                (y - 0.35, 0.7),
                facecolors=_PHASE_COLORS.get(label, COLORS["idle"]),
                edgecolor="white",
                linewidth=0.3,
            )
        )
    ax.set_xlim(0, end / scale * 1.02)
    ax.set_xlabel(f"time in the step ({unit})")
    ax.set_title(
        f"{result.gpus} × {result.gpu}: step {result.step_s / scale:.3g} {unit}, "
        f"MFU {result.mfu:.1%}",
        fontsize=10,
    )
