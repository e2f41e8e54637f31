"""Tile grids, wave schedules and the toast puzzle.

- :func:`plot_tiles`: the M x N output cut into thread-block tiles; tiles that stick out of
  the matrix are highlighted and the work they waste is hatched (tile quantization).
- :func:`plot_waves`: thread-block slots (SMs x blocks per SM) against waves; the idle
  slots of the tail wave are hatched (wave quantization).
- :func:`plot_toast`: the pan as a GPU, toast sides as thread blocks, minutes as waves.

NVIDIA slides "NN Performance optimization", "Tile Quantization", "Wave quantization",
"Making toast fast".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.results import format_quantity
from ..core.tiles import parse_tile
from ._artists import Artists
from .style import COLORS, OKABE_ITO, new_axes, nice_ceiling, style_axes

__all__ = [
    "plot_tiles",
    "plot_toast",
    "plot_waves",
    "update_tiles",
    "update_toast",
    "update_waves",
]

# Full tiles in two shades of one colour (a checkerboard, so neighbours stay apart even
# without grid lines), partial tiles in two shades of another.
_TILE_COLORS = ("#9CCFEF", "#56B4E9", "#F5C662", "#E69F00")
# Idle slot, then busy slots in alternating shades wave after wave.
_WAVE_COLORS = (COLORS["idle"], "#56B4E9", "#0072B2")
# Draw grid lines only while they stay readable.
_MAX_GRID_LINES = 80


def _listed(colors: tuple[str, ...]) -> Any:
    from matplotlib.colors import ListedColormap

    return ListedColormap(list(colors))


def _tile_classes(tw: Any) -> np.ndarray:
    """0/1: full tile (checkerboard shade), 2/3: a tile that reaches past the matrix edge."""
    tm, tn = parse_tile(tw.tile) or (0, 0)
    rows = np.arange(tw.tiles_m)[:, None]
    cols = np.arange(tw.tiles_n)[None, :]
    partial = ((rows + 1) * tm > tw.m) | ((cols + 1) * tn > tw.n)
    return 2 * partial + (rows + cols) % 2


def plot_tiles(tw: Any, ax: Any = None) -> Artists:
    """Draw the tile grid of a :class:`~dlperf_widgets.core.tiles.TileWave` (first batch).

    Returns :class:`Artists` with ``image`` (one cell per tile), ``grid`` (tile borders,
    ``None`` when there are too many), ``matrix`` (the M x N outline), ``waste`` (two
    hatched rectangles: the launched area outside the matrix) and ``title``.
    """
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle

    if ax is None:
        ax = new_axes((5.5, 4.2))
    else:
        style_axes(ax)
    ax.grid(False)
    artists = Artists(ax=ax, image=None, grid=None, matrix=None, waste=[], title=ax.title)
    artists.image = ax.imshow(
        np.zeros((1, 1)),
        cmap=_listed(_TILE_COLORS),
        vmin=-0.5,
        vmax=3.5,
        interpolation="nearest",
        origin="upper",
        aspect="auto",
    )
    artists.grid = LineCollection([], colors="white", linewidths=0.8)
    ax.add_collection(artists.grid)
    artists.matrix = ax.add_patch(
        Rectangle((0, 0), 1, 1, fill=False, edgecolor=COLORS["text"], linewidth=1.5, zorder=3)
    )
    for _ in range(2):
        artists.waste.append(
            ax.add_patch(
                Rectangle(
                    (0, 0),
                    0,
                    0,
                    facecolor="none",
                    edgecolor=COLORS["wasted"],
                    hatch="///",
                    linewidth=0,
                    zorder=2,
                )
            )
        )
    ax.set_xlabel("N: output columns (elements)")
    ax.set_ylabel("M: output rows (elements)")
    update_tiles(artists, tw)
    return artists


def update_tiles(artists: Artists, tw: Any) -> bool:
    """Redraw the tile grid of ``artists`` for a new TileWave, reusing every artist.

    Both axes span the same round size that holds the launched tiles, with equal aspect,
    so the grid keeps the output's shape and small changes keep the limits. Returns True
    when the axis limits changed.
    """
    tm, tn = parse_tile(tw.tile) or (1, 1)
    height, width = tw.tiles_m * tm, tw.tiles_n * tn
    img = artists.image
    img.set_data(_tile_classes(tw))
    img.set_extent((0, width, height, 0))
    if tw.tiles_m + tw.tiles_n <= _MAX_GRID_LINES:
        segs = [[(0, i * tm), (width, i * tm)] for i in range(1, tw.tiles_m)]
        segs += [[(j * tn, 0), (j * tn, height)] for j in range(1, tw.tiles_n)]
    else:
        segs = []
    artists.grid.set_segments(segs)
    artists.matrix.set_bounds(0, 0, tw.n, tw.m)
    # the launched area outside the matrix: a strip right of it and a strip below it
    artists.waste[0].set_bounds(tw.n, 0, width - tw.n, height)
    artists.waste[1].set_bounds(0, tw.m, tw.n, height - tw.m)
    ax = artists.ax
    side = nice_ceiling(max(width, height), fine=True)
    limits = ((0.0, side), (side, 0.0))
    changed = (tuple(ax.get_xlim()), tuple(ax.get_ylim())) != limits
    if changed:
        ax.set_xlim(*limits[0])
        ax.set_ylim(*limits[1])
        ax.set_aspect("equal", adjustable="box")
    batch = f" (one of {tw.batch} batches)" if tw.batch > 1 else ""
    ax.set_title(
        f"{tw.m} x {tw.n} output, {tw.tile} tiles: {tw.tiles_m} x {tw.tiles_n} tiles{batch}\n"
        f"tile efficiency {tw.tile_efficiency:.1%}"
    )
    return changed


# At most this many waves are drawn; a longer schedule shows its last waves, where the
# tail is.
MAX_WAVES_DRAWN = 200


def _wave_grid(tw: Any, first: int) -> np.ndarray:
    """Slot x wave grid from wave ``first`` on: 0 idle, 1 or 2 busy (shade alternates)."""
    busy_per_wave = np.full(tw.waves - first, tw.slots)
    if tw.tail_tiles:
        busy_per_wave[-1] = tw.tail_tiles
    slots = np.arange(tw.slots)[:, None]
    shade = 1 + (first + np.arange(tw.waves - first))[None, :] % 2
    return np.where(slots < busy_per_wave[None, :], shade, 0)


def plot_waves(tw: Any, ax: Any = None) -> Artists:
    """Draw which thread-block slot runs a tile in which wave.

    Returns :class:`Artists` with ``image`` (slots x waves), ``tail`` (hatched idle slots
    of the last wave), ``capacity`` (dashed line at the number of slots) and ``title``.
    """
    from matplotlib.patches import Rectangle

    if ax is None:
        ax = new_axes((6.4, 3.6))
    else:
        style_axes(ax)
    ax.grid(False)
    image = ax.imshow(
        np.zeros((1, 1)),
        cmap=_listed(_WAVE_COLORS),
        vmin=-0.5,
        vmax=2.5,
        interpolation="nearest",
        origin="lower",
        aspect="auto",
    )
    tail = ax.add_patch(
        Rectangle(
            (0, 0),
            0,
            0,
            facecolor="none",
            edgecolor=COLORS["wasted"],
            hatch="xx",
            linewidth=1,
            zorder=3,
        )
    )
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("wave (1 wave = one round of thread blocks)")
    ax.set_ylabel("thread-block slot (SM x block)")
    capacity = ax.axhline(0, color=COLORS["text"], linestyle="--", linewidth=1, zorder=4)
    artists = Artists(ax=ax, image=image, tail=tail, capacity=capacity, title=ax.title)
    update_waves(artists, tw)
    return artists


def update_waves(artists: Artists, tw: Any) -> bool:
    """Redraw the wave schedule of ``artists`` for a new TileWave, reusing every artist.

    The axes span a round number of waves and slots (1, 2 or 5 x 10**k) with a dashed line
    at the GPU's slot count, so small changes keep them. Returns True when the axis limits
    changed.
    """
    first = max(0, tw.waves - MAX_WAVES_DRAWN)
    artists.image.set_data(_wave_grid(tw, first))
    artists.image.set_extent((first + 0.5, tw.waves + 0.5, 0, tw.slots))
    if tw.tail_tiles:
        artists.tail.set_bounds(tw.waves - 0.5, tw.tail_tiles, 1, tw.slots - tw.tail_tiles)
        artists.tail.set_visible(True)
    else:
        artists.tail.set_visible(False)
    artists.capacity.set_ydata([tw.slots, tw.slots])
    ax = artists.ax
    limits = (
        (first + 0.5, first + nice_ceiling(tw.waves - first) + 0.5),
        (0.0, nice_ceiling(tw.slots)),
    )
    changed = (tuple(ax.get_xlim()), tuple(ax.get_ylim())) != limits
    if changed:
        ax.set_xlim(*limits[0])
        ax.set_ylim(*limits[1])
    idle = tw.slots - tw.tail_tiles if tw.tail_tiles else 0
    tail = f"; last wave: {tw.tail_tiles} busy, {idle} idle" if tw.tail_tiles else ""
    ax.set_title(
        f"{tw.tiles} tiles on {tw.slots} slots ({tw.sms} SMs x {tw.blocks_per_sm}): "
        f"{tw.waves} wave{'s' * (tw.waves != 1)}\n"
        f"wave efficiency {tw.wave_efficiency:.1%}{tail}"
    )
    return changed


_SLICE_COLORS = (
    OKABE_ITO["sky_blue"],
    OKABE_ITO["orange"],
    OKABE_ITO["bluish_green"],
    OKABE_ITO["reddish_purple"],
    OKABE_ITO["yellow"],
    OKABE_ITO["blue"],
    OKABE_ITO["vermillion"],
)


def plot_toast(result: Any, ax: Any = None) -> Artists:
    """The best toast schedule of a :class:`~dlperf_widgets.core.toast.ToastResult`.

    Rows are places in the pan (thread-block slots), columns are minutes (waves); each
    cell names the slice and the side it fries (``2B``: slice 2, side B). Returns
    :class:`Artists` with ``cells`` (one PolyCollection, a square per place and minute),
    ``texts`` (the cell names) and ``title``.
    """
    from matplotlib.collections import PolyCollection

    if ax is None:
        ax = new_axes((6.4, 3.0))
    else:
        style_axes(ax)
    ax.grid(False)
    ax.set_xlabel("time (minutes)")
    cells = PolyCollection([], edgecolors="white", linewidths=2)
    ax.add_collection(cells)
    artists = Artists(ax=ax, cells=cells, texts=[], title=ax.title)
    update_toast(artists, result)
    return artists


def update_toast(artists: Artists, result: Any) -> list[Any]:
    """Show a new toast schedule in ``artists``, reusing its cells and texts.

    The axes keep a round number of minutes (1, 2 or 5 x 10**k) and change only with the
    pan's size. Returns the text artists created (more cells than before), and sets
    ``artists.limits_changed``.
    """
    ax = artists.ax
    m = result.minutes_per_side
    verts, colors, labels = [], [], []
    for w, wave in enumerate(result.schedule):
        for slot in range(result.capacity):
            x0, y0 = w * m, slot
            verts.append([(x0, y0), (x0 + m, y0), (x0 + m, y0 + 1), (x0, y0 + 1)])
            if slot < len(wave):
                slice_no, side = wave[slot]
                colors.append(_SLICE_COLORS[(slice_no - 1) % len(_SLICE_COLORS)])
                labels.append((x0 + m / 2, y0 + 0.5, f"{slice_no}{chr(ord('A') + side - 1)}"))
            else:
                colors.append(COLORS["idle"])
    artists.cells.set_verts(verts)
    artists.cells.set_facecolors(colors)
    created = []
    while len(artists.texts) < len(labels):
        t = ax.text(0, 0, "", ha="center", va="center", fontsize=9)
        artists.texts.append(t)
        created.append(t)
    for i, t in enumerate(artists.texts):
        if i < len(labels):
            x, y, label = labels[i]
            t.set_position((x, y))
            t.set_text(label)
            t.set_visible(True)
        else:
            t.set_visible(False)
    limits = ((0.0, nice_ceiling(max(result.best_minutes, m))), (0.0, float(result.capacity)))
    changed = (tuple(ax.get_xlim()), tuple(ax.get_ylim())) != limits
    if changed:
        ax.set_xlim(*limits[0])
        ax.set_ylim(*limits[1])
        ax.set_yticks([i + 0.5 for i in range(result.capacity)])
        ax.set_yticklabels([f"place {i + 1}" for i in range(result.capacity)])
    artists.limits_changed = changed
    ax.set_title(
        f"{result.slices} slices, a pan for {result.capacity}, {result.sides} sides "
        f"(2B = slice 2, side B)\nbest {format_quantity(result.best_minutes)} min "
        f"(pan {result.pan_utilisation:.0%} busy), naive {format_quantity(result.naive_minutes)} min"
    )
    return created
