"""Predicted time or throughput of a GEMM as one dimension sweeps, with measurements.

Sweeping K across 4000..4200 shows the alignment dips (sizes that are multiples of 16
bytes are fast); sweeping N across 1..4096 shows the saw-tooth of tile and wave
quantization (NVIDIA slides "NN Performance optimization", "Optimality" and "Wave
quantization").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core._validate import describe
from ..core.errors import InvalidParameter
from ..core.uncertainty import COVERAGE
from ._artists import Artists
from .style import (
    COLORS,
    log_axis,
    measured_markers,
    new_axes,
    nice_ceiling,
    si_formatter,
    style_axes,
    time_unit,
)

__all__ = ["QUANTITIES", "measured_points", "plot_sweep", "sweep_dimension", "update_sweep"]

QUANTITIES = ("time", "throughput")
# Misaligned sizes get their own markers while the sweep is short enough to tell them apart.
_MAX_MARKED = 600


def sweep_dimension(sweep: Any) -> str:
    """Which of 'm', 'n', 'k' varies in ``sweep`` (the first that does; 'n' if none)."""
    for name in ("m", "n", "k"):
        values = np.asarray(getattr(sweep, name))
        if values.size > 1 and values.min() != values.max():
            return name
    return "n"


def measured_points(measured: Any) -> tuple[np.ndarray, np.ndarray]:
    """Measured points as two arrays (x, time in seconds).

    Accepts a sequence of ``(x, time_s)`` pairs, or a mapping with an ``x`` array (or
    ``m``, ``n``, ``k``) and a ``time_s`` array.
    """
    if measured is None:
        return np.empty(0), np.empty(0)
    if isinstance(measured, Mapping):
        xkey = next((key for key in ("x", "m", "n", "k") if key in measured), None)
        if xkey is None or "time_s" not in measured:
            raise InvalidParameter(
                "'measured' must be a sequence of (x, time_s) pairs or a dict with 'x' and "
                f"'time_s' arrays (got keys {sorted(map(str, measured))})"
            )
        x = np.asarray(measured[xkey], dtype=float).ravel()
        t = np.asarray(measured["time_s"], dtype=float).ravel()
    elif isinstance(measured, Sequence) or isinstance(measured, np.ndarray):
        try:
            arr = np.asarray(measured, dtype=float).reshape(-1, 2)
        except (TypeError, ValueError) as exc:
            raise InvalidParameter(
                "'measured' must be a sequence of (x, time_s) pairs or a dict with 'x' and "
                f"'time_s' arrays (got {type(measured).__name__})"
            ) from exc
        x, t = arr[:, 0], arr[:, 1]
    else:
        raise InvalidParameter(
            "'measured' must be a sequence of (x, time_s) pairs or a dict with 'x' and "
            f"'time_s' arrays (got {type(measured).__name__})"
        )
    if x.shape != t.shape:
        raise InvalidParameter(
            f"'measured' must have as many times as x values (got {x.size} x and {t.size} times)"
        )
    if not (np.isfinite(t).all() and (t > 0).all() and np.isfinite(x).all()):
        raise InvalidParameter("'measured' times must be positive finite numbers of seconds")
    return x, t


def plot_sweep(
    sweep: Any,
    ax: Any = None,
    *,
    quantity: str = "time",
    measured: Any = None,
    log: bool = False,
) -> Artists:
    """Draw a :class:`~dlperf_widgets.core.gemm.GemmSweep` along its varying dimension.

    ``quantity`` is 'time' (predicted time) or 'throughput' (predicted FLOP/s).
    ``measured`` times are overlaid as markers in the 'time' view (see
    :func:`measured_points`; a mapping may name them with a ``label``). The guide's ideal
    time (datasheet roofline) is a dotted line under the model's prediction. ``log`` draws
    both axes logarithmic, so that small sizes and their measurements spread out beside
    large ones. A shaded band around the model line is its error band (``time_low_s`` to
    ``time_high_s``: where measured GEMMs of the same regime fell, :mod:`~dlperf_widgets.core.uncertainty`).
    Returns :class:`Artists` with ``band`` (shaded area), ``model`` (line), ``misaligned``
    (markers or a line), ``ideal`` (line), ``measured`` (markers), ``legend`` and ``title``.
    """
    if ax is None:
        ax = new_axes()
    else:
        style_axes(ax)
    (model,) = ax.plot([], [], color=COLORS["model"], linewidth=1.4, label="model", zorder=2)
    (mis,) = ax.plot([], [], color=COLORS["misaligned"], zorder=3)
    (ideal,) = ax.plot(
        [], [], color=COLORS["roof"], linestyle=":", linewidth=1.2, label="ideal (roofline)"
    )
    meas = measured_markers(ax, 6, zorder=4)
    # The model's error band (core.uncertainty): where measured GEMMs of the same regime fell.
    band = ax.fill_between([], [], [], color=COLORS["model"], alpha=0.16, linewidth=0, zorder=1)
    artists = Artists(
        ax=ax,
        band=band,
        model=model,
        misaligned=mis,
        ideal=ideal,
        measured=meas,
        legend=None,
        title=ax.title,
    )
    update_sweep(artists, sweep, quantity=quantity, measured=measured, log=log)
    return artists


def update_sweep(
    artists: Artists,
    sweep: Any,
    *,
    quantity: str = "time",
    measured: Any = None,
    log: bool = False,
) -> bool:
    """Put a new sweep (and measurements) into the artists of :func:`plot_sweep`.

    A short sweep is one line through every size, with the sizes that miss the 16-byte
    alignment marked (the dips of the K sweep). A long one is two lines, aligned sizes and
    the others, so that the tile and wave saw-tooth of each stays visible.

    The y axis tops out at a round value (1, 2 or 5 x 10**k) so small changes keep it; with
    ``log`` both axes are logarithmic and the y axis starts at the decade below the lowest
    value shown. Returns True when an axis (limits or label) changed, False when only the data did.
    """
    if quantity not in QUANTITIES:
        raise InvalidParameter(
            f"'quantity' must be one of time, throughput (got {describe(quantity)})"
        )
    ax = artists.ax
    dim = sweep_dimension(sweep)
    shape = np.shape(sweep.predicted_time_s)
    x = np.asarray(np.broadcast_to(np.asarray(getattr(sweep, dim)), shape), dtype=float).ravel()
    mx, mt = measured_points(measured)
    if quantity == "time":
        y = np.asarray(sweep.predicted_time_s, dtype=float).ravel()
        top = max(float(y.max()), float(mt.max()) if mt.size else 0.0)
        unit, scale = time_unit(top)
        y = y / scale
        my = mt / scale
        ideal = np.asarray(sweep.roofline_time_s, dtype=float).ravel() / scale
        ylabel = f"{'time' if mt.size else 'predicted time'} ({unit})"
        low, high = _band(sweep, shape)
        low, high = low / scale, high / scale
    else:
        y = np.asarray(sweep.predicted_flops_per_s, dtype=float).ravel()
        mx, my = mx[:0], mt[:0]  # measurements are times: they appear in the 'time' view
        ideal = (
            np.asarray(sweep.flops, dtype=float).ravel()
            / np.asarray(sweep.roofline_time_s, dtype=float).ravel()
        )
        ylabel = "predicted throughput (FLOP/s)"
        flops = np.broadcast_to(np.asarray(sweep.flops, dtype=float), shape).ravel()
        t_low, t_high = _band(sweep, shape)
        low, high = flops / t_high, flops / t_low  # the slow end of the band is the low rate
    aligned = (
        np.broadcast_to(np.asarray(sweep.alignment_efficiency, dtype=float), shape).ravel() >= 1
    )
    mis = artists.misaligned
    if aligned.all() or not aligned.any():
        artists.model.set_data(x, y)
        artists.model.set_label("model")
        mis.set_data([], [])
    elif x.size <= _MAX_MARKED:
        artists.model.set_data(x, y)
        artists.model.set_label("model")
        mis.set_data(x[~aligned], y[~aligned])
        mis.set(linestyle="none", marker="o", markersize=3, linewidth=0)
        mis.set_label("model, not 16-byte aligned")
    else:
        artists.model.set_data(x[aligned], y[aligned])
        artists.model.set_label("model, 16-byte aligned sizes")
        mis.set_data(x[~aligned], y[~aligned])
        mis.set(linestyle="-", marker="none", linewidth=0.6, alpha=0.8)
        mis.set_label("model, other sizes")
    ideal = np.broadcast_to(ideal, x.shape)
    artists.ideal.set_data(x, ideal)
    # The band follows the model line (the aligned sizes when two lines are drawn).
    on = (
        slice(None)
        if artists.model.get_xdata() is None or len(artists.model.get_xdata()) == x.size
        else aligned
    )
    order = np.argsort(x[on], kind="stable")
    finite = np.isfinite(low[on][order]) & np.isfinite(high[on][order])
    if finite.all():
        artists.band.set_data(x[on][order], low[on][order], high[on][order])
        artists.band.set_label(f"model's {COVERAGE * 100:.0f} % band (measured scatter)")
    else:
        artists.band.set_data([], [], [])
        high = np.zeros_like(high)
    artists.measured.set_data(mx, my)
    label = measured.get("label") if isinstance(measured, Mapping) else None
    artists.measured.set_label(str(label) if label else "measured")
    ax.set_title(f"GEMM {_shape(sweep, dim)} ({sweep.dtype}) on {sweep.gpu}, {dim.upper()} swept")
    band_top = float(np.nanmax(high)) if np.isfinite(high).any() else 0.0
    top = max(float(y.max()), float(ideal.max()), float(my.max()) if my.size else 0.0, band_top)
    top *= 1.05
    xlim = (float(x.min()), float(x.max()) if x.max() > x.min() else float(x.min()) + 1)
    ylim = (0.0, nice_ceiling(top) if top > 0 else 1.0)
    scale = "log" if log else "linear"
    if log:
        shown_y = np.concatenate([y, ideal, my, low[np.isfinite(low)]])
        floor = float(shown_y[shown_y > 0].min()) if (shown_y > 0).any() else 1.0
        ylim = (10.0 ** np.floor(np.log10(floor)), ylim[1])
    xlabel = f"{dim.upper()} (elements)"
    changed = (
        tuple(ax.get_xlim()) != xlim
        or tuple(ax.get_ylim()) != ylim
        or ax.get_xlabel() != xlabel
        or ax.get_ylabel() != ylabel
        or ax.get_xscale() != scale
    )
    was_log = ax.get_xscale() == "log"
    if changed:
        ax.set_xscale(scale)
        ax.set_yscale(scale)
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if log:
            log_axis(ax.xaxis)
            log_axis(ax.yaxis)
            if quantity == "time":  # already in the unit of the label: plain decades
                ax.yaxis.set_major_formatter(_plain())
        else:
            if was_log:  # back from log axes: matplotlib's default linear ticks
                from matplotlib.ticker import AutoLocator, NullLocator, ScalarFormatter

                for axis in (ax.xaxis, ax.yaxis):
                    axis.set_major_locator(AutoLocator())
                    axis.set_minor_locator(NullLocator())
                ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.yaxis.set_major_formatter(_plain() if quantity == "time" else si_formatter())
    shown = [a for a in (artists.model, mis, artists.ideal, artists.measured) if len(a.get_xdata())]
    if artists.band.get_paths() and len(artists.band.get_paths()[0].vertices):
        shown.insert(1, artists.band)
    key = (log, *((id(a), a.get_label()) for a in shown))
    if artists.legend is None or getattr(artists, "legend_key", None) != key:
        if artists.legend is not None:
            artists.legend.remove()
        # on log axes the small sizes sit low at the left and the large ones high at the right
        artists.legend = ax.legend(handles=shown, loc="upper left" if log else "lower right")
        artists.legend_key = key
    return changed


def _band(sweep: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The sweep's band ends in seconds, flat (NaN where it has none)."""
    low = getattr(sweep, "time_low_s", None)
    high = getattr(sweep, "time_high_s", None)
    if low is None or high is None:
        nan = np.full(int(np.prod(shape)), np.nan)
        return nan, nan.copy()
    return (
        np.broadcast_to(np.asarray(low, dtype=float), shape).ravel(),
        np.broadcast_to(np.asarray(high, dtype=float), shape).ravel(),
    )


def _plain() -> Any:
    from matplotlib.ticker import ScalarFormatter

    return ScalarFormatter(useOffset=False)


def _shape(sweep: Any, dim: str) -> str:
    parts = []
    for name in ("m", "n", "k"):
        if name == dim:
            parts.append(name.upper())
        else:
            parts.append(str(int(np.asarray(getattr(sweep, name)).ravel()[0])))
    return " x ".join(parts)
