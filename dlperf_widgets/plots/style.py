"""One look for every figure of the kit.

- Colours: the Okabe-Ito palette (Okabe and Ito, "Color Universal Design", 2008), which
  stays distinguishable under the common forms of colour blindness. Each colour has a role
  (math-bound, memory-bound, ...), so a colour means the same thing in every figure.
- Figures have an opaque light background and dark text, so they read the same inside a
  light or a dark notebook theme.
- Log axes get plain tick labels with SI prefixes ("10T", not mathtext), which are both
  easier to read and much faster to draw.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

from .._optional import require

__all__ = [
    "COLORS",
    "LIMITER_COLORS",
    "OKABE_ITO",
    "RC",
    "SERIES",
    "TIME_UNITS",
    "log_axis",
    "measured_markers",
    "new_axes",
    "nice_ceiling",
    "si",
    "si_formatter",
    "style_axes",
    "style_context",
    "time_unit",
]

# Okabe-Ito, in their published order.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}

# Roles -> colours, used by every plot function.
COLORS = {
    "math": OKABE_ITO["blue"],
    "memory": OKABE_ITO["orange"],
    "latency": OKABE_ITO["reddish_purple"],
    "roof": "#333333",
    "ridge": OKABE_ITO["bluish_green"],
    "useful": OKABE_ITO["sky_blue"],
    "wasted": OKABE_ITO["vermillion"],
    "idle": "#D9D9D9",
    "measured": OKABE_ITO["vermillion"],
    "model": OKABE_ITO["blue"],
    "misaligned": OKABE_ITO["vermillion"],
    "grid": "#CCCCCC",
    "text": "#222222",
    "background": "#FFFFFF",
}
LIMITER_COLORS = {"math": COLORS["math"], "memory": COLORS["memory"], "latency": COLORS["latency"]}


def measured_markers(ax: Any, size: float = 6, **kw: Any) -> Any:
    """An empty line of hollow diamonds for measurements, so they never look like the
    model's lines and filled points (same style in every plot)."""
    (line,) = ax.plot(
        [],
        [],
        "D",
        color=COLORS["measured"],
        markerfacecolor="none",
        markersize=size,
        markeredgewidth=size / 4,
        label="measured",
        **kw,
    )
    return line


# A cycle for series that have no role (several GPUs, several operations).
SERIES = [
    OKABE_ITO["blue"],
    OKABE_ITO["orange"],
    OKABE_ITO["bluish_green"],
    OKABE_ITO["reddish_purple"],
    OKABE_ITO["sky_blue"],
    OKABE_ITO["vermillion"],
    OKABE_ITO["yellow"],
    OKABE_ITO["black"],
]

RC: dict[str, Any] = {
    "figure.facecolor": COLORS["background"],
    "axes.facecolor": COLORS["background"],
    "savefig.facecolor": COLORS["background"],
    "text.color": COLORS["text"],
    "axes.labelcolor": COLORS["text"],
    "axes.edgecolor": "#555555",
    "xtick.color": COLORS["text"],
    "ytick.color": COLORS["text"],
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": COLORS["grid"],
    "grid.linewidth": 0.6,
}


def _rc() -> dict[str, Any]:
    cycler = require("cycler", "figures").cycler
    rc = dict(RC)
    rc["axes.prop_cycle"] = cycler(color=SERIES)
    return rc


@contextlib.contextmanager
def style_context() -> Iterator[None]:
    """Matplotlib rc settings of the kit, for artists created inside the block."""
    mpl = require("matplotlib", "figures")
    with mpl.rc_context(_rc()):
        yield


def new_axes(figsize: tuple[float, float] = (6.4, 3.6)) -> Any:
    """A new pyplot Axes in the kit's style (for plot functions called with ``ax=None``)."""
    plt = require("matplotlib.pyplot", "figures")
    with style_context():
        _fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    style_axes(ax)
    return ax


def style_axes(ax: Any) -> None:
    """Apply the kit's look to an existing Axes (one made outside :func:`style_context`)."""
    ax.set_facecolor(COLORS["background"])
    ax.figure.set_facecolor(COLORS["background"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(True, color=COLORS["grid"], linewidth=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(colors=COLORS["text"], labelsize=9)
    ax.xaxis.label.set_color(COLORS["text"])
    ax.yaxis.label.set_color(COLORS["text"])
    ax.title.set_color(COLORS["text"])
    # fewer, rounder ticks: easier to read, and tick labels are most of a redraw's cost
    if ax.get_xscale() == "linear":
        ax.locator_params(axis="x", nbins=6)
    if ax.get_yscale() == "linear":
        ax.locator_params(axis="y", nbins=6)


_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]
_SMALL = [(1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]


def _si(value: float) -> str:
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else ""
    a = abs(value)
    for scale, prefix in _PREFIXES:
        if a >= scale:
            return f"{value / scale:.3g}{prefix}"
    for scale, prefix in _SMALL:
        if a >= scale * 0.9999:
            return f"{value / scale:.3g}{prefix}"
    return f"{value:.3g}"


def si(value: float) -> str:
    """1.25e14 -> '125T', 0.25 -> '250m': three significant digits and an SI prefix."""
    return _si(value)


def si_formatter() -> Any:
    """A tick formatter writing 1e13 as '10T' and 0.25 as '250m' (no mathtext)."""
    ticker = require("matplotlib.ticker", "figures")
    return ticker.FuncFormatter(lambda v, _pos: _si(v))


def log_axis(axis: Any) -> None:
    """Decade ticks with SI labels and no minor tick labels on a log axis."""
    ticker = require("matplotlib.ticker", "figures")
    axis.set_major_locator(ticker.LogLocator(base=10, numticks=12))
    axis.set_major_formatter(si_formatter())
    axis.set_minor_locator(ticker.NullLocator())


# Seconds shown in the unit that suits their size (display only: no model arithmetic).
TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def time_unit(seconds: float) -> tuple[str, float]:
    """('ms', 1e-3) for 0.004: the unit in which ``seconds`` reads as a number >= 1."""
    s = abs(float(seconds))
    for name, scale in TIME_UNITS:
        if s >= scale:
            return name, scale
    return TIME_UNITS[-1]


def nice_ceiling(value: float, fine: bool = False) -> float:
    """The smallest of 1, 2, 5 x 10**k that is >= ``value``: an axis limit that stays put
    while the data moves a little (so a widget can redraw only the data). ``fine`` uses the
    ladder 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 instead, wasting at most a fifth of the axis."""
    v = float(value)
    if v <= 1:
        return 1.0
    exp = math.floor(math.log10(v))
    steps = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if fine else (1, 2, 5, 10)
    for step in steps:
        limit = step * 10.0**exp
        if limit >= v * (1 - 1e-12):
            return limit
    return 10.0 ** (exp + 1)
