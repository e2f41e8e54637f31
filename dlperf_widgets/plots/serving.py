"""Serving and profiles: the SLO sweep and a profile's timeline strip.

- :func:`plot_slo`: time to first token and time per output token against the decode batch
  (the model's prediction, from :func:`~dlperf_widgets.core.serving.serving_slo`), with the
  two SLOs as dashed lines and the largest batch meeting both marked.
- :func:`plot_profile_timeline`: the GPU's kernels of a profile as a strip (measured), one
  row per kind of kernel, so gaps, copies and communication show at a glance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._artists import Artists
from .style import COLORS, OKABE_ITO, new_axes, style_axes

__all__ = ["KIND_COLORS", "plot_profile_timeline", "plot_slo", "update_slo"]

KIND_COLORS = {
    "gemm": COLORS["math"],
    "convolution": OKABE_ITO["sky_blue"],
    "elementwise": COLORS["memory"],
    "memcpy": OKABE_ITO["vermillion"],
    "memset": OKABE_ITO["yellow"],
    "communication": OKABE_ITO["bluish_green"],
    "other": "#888888",
}


def plot_slo(result: Any, ax: Any = None) -> Artists:
    """TTFT and TPOT (ms) against batch on log-x axes; returns ``ttft``, ``tpot`` (lines),
    ``slos`` (two dashed lines), ``best`` (the chosen batch's marker) and ``title``."""
    if ax is None:
        ax = new_axes((6.4, 3.6))
    else:
        style_axes(ax)
    b = np.asarray(result.batches, dtype=float)
    (ttft,) = ax.plot(b, np.asarray(result.ttft_s) * 1e3, "o-", color=COLORS["model"],
                      label="time to first token")  # fmt: skip
    (tpot,) = ax.plot(b, np.asarray(result.tpot_s) * 1e3, "s-", color=COLORS["memory"],
                      label="time per output token")  # fmt: skip
    slos = [
        ax.axhline(result.ttft_slo_s * 1e3, ls="--", color=COLORS["model"], lw=1),
        ax.axhline(result.tpot_slo_s * 1e3, ls="--", color=COLORS["memory"], lw=1),
    ]
    best = ax.axvline(result.best_batch or np.nan, color=COLORS["ridge"], lw=2, alpha=0.6)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    vals = np.concatenate([np.asarray(result.ttft_s), np.asarray(result.tpot_s),
                           [result.ttft_slo_s, result.tpot_slo_s]]) * 1e3  # fmt: skip
    ax.set_ylim(*_decades(vals))
    ax.set_xlim(b.min() / 1.5, b.max() * 1.5)
    ax.set_xlabel("decode batch (sequences)")
    ax.set_ylabel("predicted time (ms)")
    ax.legend(fontsize=8, loc="upper left")
    title = ax.set_title(
        f"largest batch meeting both SLOs: {result.best_batch or 'none'}", fontsize=9
    )
    return Artists(ax=ax, ttft=ttft, tpot=tpot, slos=slos, best=best, title=title)


def update_slo(artists: Artists, result: Any) -> bool:
    """Move the lines of :func:`plot_slo` to ``result`` in place; True when the y-range had to
    grow (or shrink by more than a decade), so the caller redraws the axes in full."""
    ttft = np.asarray(result.ttft_s) * 1e3
    tpot = np.asarray(result.tpot_s) * 1e3
    b = np.asarray(result.batches, dtype=float)
    artists.ttft.set_data(b, ttft)
    artists.tpot.set_data(b, tpot)
    artists.slos[0].set_ydata([result.ttft_slo_s * 1e3] * 2)
    artists.slos[1].set_ydata([result.tpot_slo_s * 1e3] * 2)
    artists.best.set_xdata([result.best_batch or np.nan] * 2)
    artists.title.set_text(f"largest batch meeting both SLOs: {result.best_batch or 'none'}")
    values = np.concatenate([ttft, tpot, [result.ttft_slo_s * 1e3, result.tpot_slo_s * 1e3]])
    want = _decades(values)
    x_lo, x_hi = artists.ax.get_xlim()
    changed = not np.allclose(artists.ax.get_ylim(), want) or b.min() < x_lo or b.max() > x_hi
    if changed:
        artists.ax.set_ylim(*want)
        artists.ax.set_xlim(b.min() / 1.5, b.max() * 1.5)
    return changed


def _decades(values: np.ndarray) -> tuple[float, float]:
    """Whole decades around ``values`` (with a margin of 1.5x), so that the y-range, and with
    it the axes' full redraw, changes only when a curve crosses a decade."""
    lo = 10.0 ** np.floor(np.log10(float(values.min()) / 1.5))
    hi = 10.0 ** np.ceil(np.log10(float(values.max()) * 1.5))
    return float(lo), float(hi)


def plot_profile_timeline(report: Any, ax: Any = None) -> Artists:
    """One row per kernel kind, a bar per kernel over the profile's span (ms from its first
    kernel); returns ``rows`` (kind -> BrokenBarHCollection) and ``title``."""
    if ax is None:
        ax = new_axes((6.4, 3.0))
    else:
        style_axes(ax)
    ks = report.kernels
    t0 = min(k.start_s for k in ks)
    kinds = [k for k in KIND_COLORS if any(r.kind == k for r in ks)]
    rows = {}
    for y, kind in enumerate(kinds):
        spans = [((r.start_s - t0) * 1e3, max(r.time_s * 1e3, 1e-4)) for r in ks
                 if r.kind == kind]  # fmt: skip
        rows[kind] = ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=KIND_COLORS[kind])
    ax.set_yticks(range(len(kinds)))
    ax.set_yticklabels(kinds, fontsize=8)
    ax.set_ylim(len(kinds) - 0.5, -0.5)
    ax.set_xlabel("time since the first kernel (ms, measured)")
    ax.grid(False, axis="y")
    title = ax.set_title(
        f"{report.name}: GPU busy {report.gpu_busy_s / report.span_s:.0%} of the span",
        fontsize=9,
    )
    return Artists(ax=ax, rows=rows, title=title)
