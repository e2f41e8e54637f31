"""Bars for layers, networks, training memory and 2:4 pruning.

- :func:`plot_passes`: a layer's passes (forward, activation gradient, weight gradient,
  memory-limited passes) as bars of predicted time, coloured by limiter.
- :func:`plot_breakdown`: a network's operation classes, FLOPs share next to runtime share
  (NVIDIA slides "NN Performance optimization", "Transformer example").
- :func:`plot_memory`: training memory per GPU as one stacked bar, with the GPU's memory.
- :func:`plot_pruned`: a weight matrix after 2:4 pruning, pruned weights greyed out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._artists import Artists
from .style import COLORS, LIMITER_COLORS, OKABE_ITO, SERIES, new_axes, nice_ceiling, style_axes

__all__ = [
    "CLASS_LABELS",
    "plot_breakdown",
    "plot_memory",
    "plot_passes",
    "plot_pruned",
    "update_breakdown",
    "update_memory",
    "update_passes",
    "update_pruned",
]

CLASS_LABELS = {
    "tensor_contraction": "tensor contractions",
    "statistical_normalization": "normalizations",
    "elementwise": "element-wise",
}


def plot_passes(result: Any, ax: Any = None) -> Artists:
    """Horizontal bars of each pass's predicted time (µs) of a LayerResult.

    Returns :class:`Artists` with ``bars`` (one Rectangle per pass, coloured by limiter),
    ``labels`` (limiter and shape at each bar's end) and ``title``.
    """
    if ax is None:
        ax = new_axes((6.4, 3.6))
    else:
        style_axes(ax)
    passes = list(result.passes)
    y = np.arange(len(passes))
    container = ax.barh(y, np.zeros(len(passes)))
    labels = [ax.text(0, yy, "", va="center", fontsize=8) for yy in y]
    ax.set_yticks(y)
    ax.set_yticklabels(_pass_names(result), fontsize=8)
    ax.set_ylim(len(passes) - 0.5, -0.5)
    ax.grid(False, axis="y")
    ax.set_xlabel("predicted time (µs)")
    artists = Artists(ax=ax, bars=list(container.patches), labels=labels, title=ax.title)
    update_passes(artists, result)
    return artists


def _pass_names(result: Any) -> list[str]:
    return [f"{p.op} {p.pass_}" for p in result.passes]


def update_passes(artists: Artists, result: Any) -> bool:
    """Show ``result``'s pass times in the bars of :func:`plot_passes`.

    Returns True when the axes changed (a full redraw is due); raises ValueError when the
    passes are not the ones drawn (another layer type: draw anew).
    """
    ax = artists.ax
    passes = list(result.passes)
    names = _pass_names(result)
    if names != [t.get_text() for t in ax.get_yticklabels()]:
        raise ValueError("the passes differ from those drawn; call plot_passes")
    times = np.array([p.predicted_time_s for p in passes]) * 1e6
    for bar, text, t, p in zip(artists.bars, artists.labels, times, passes, strict=True):
        bar.set_width(t)
        bar.set_color(LIMITER_COLORS.get(p.limiter, COLORS["roof"]))
        shape = f"GEMM {p.m}x{p.n}x{p.k}" if p.is_gemm else "memory pass"
        text.set_x(t)
        text.set_text(f" {p.limiter}, {shape}")
    # room on the right of the longest bar for its label
    want = (0.0, nice_ceiling(max(float(times.max()), 1e-3) * 1.45, fine=True))
    changed = tuple(ax.get_xlim()) != want
    if changed:
        ax.set_xlim(*want)
    ax.set_title(f"{result.layer} in {result.dtype} on {result.gpu}: passes")
    return changed


def plot_breakdown(result: Any, ax: Any = None) -> Artists:
    """FLOPs share and runtime share (%) per operation class of a NetworkResult.

    Returns :class:`Artists` with ``flops`` and ``runtime`` (Rectangles, one per class),
    ``values`` (percent texts), ``legend`` and ``title``.
    """
    if ax is None:
        ax = new_axes((6.4, 3.2))
    else:
        style_axes(ax)
    classes = list(CLASS_LABELS)
    y = np.arange(len(classes))
    flops = ax.barh(y - 0.2, np.zeros(len(classes)), height=0.38, color=SERIES[0], label="FLOPs")
    runtime = ax.barh(
        y + 0.2, np.zeros(len(classes)), height=0.38, color=SERIES[1], label="runtime"
    )
    values = [
        ax.text(0, yy, "", va="center", fontsize=8) for yy in np.concatenate([y - 0.2, y + 0.2])
    ]
    ax.set_yticks(y)
    ax.set_yticklabels([CLASS_LABELS[c] for c in classes])
    ax.set_ylim(len(classes) - 0.5, -0.5)
    ax.set_xlim(0, 115)
    ax.grid(False, axis="y")
    ax.set_xlabel("share of the network (%)")
    legend = ax.legend(loc="lower right")
    artists = Artists(
        ax=ax,
        flops=list(flops.patches),
        runtime=list(runtime.patches),
        values=values,
        legend=legend,
        title=ax.title,
    )
    update_breakdown(artists, result)
    return artists


def update_breakdown(artists: Artists, result: Any) -> None:
    """Set the bars of :func:`plot_breakdown` to ``result``'s shares."""
    classes = list(CLASS_LABELS)
    n = len(classes)
    for i, c in enumerate(classes):
        share = result.by_class.get(c, {"flops_share": 0.0, "runtime_share": 0.0})
        for j, (bars, key) in enumerate(
            ((artists.flops, "flops_share"), (artists.runtime, "runtime_share"))
        ):
            pct = share[key] * 100
            bars[i].set_width(pct)
            text = artists.values[j * n + i]
            text.set_x(pct + 1)
            text.set_text(f"{pct:.2f} %")
    # the network's name can be long: break it after its kind ("transformer: ...")
    kind, _, rest = str(result.name).partition(": ")
    title = f"{kind} in {result.dtype} on {result.gpu}" + (f"\n{rest}" if rest else "")
    artists.ax.set_title(title, fontsize=9)


_MEMORY_PARTS = (
    ("per_gpu_weights_bytes", "weights", OKABE_ITO["blue"]),
    ("per_gpu_gradients_bytes", "gradients", OKABE_ITO["sky_blue"]),
    ("per_gpu_optimizer_bytes", "optimizer states", OKABE_ITO["orange"]),
    ("per_gpu_activations_bytes", "activations", OKABE_ITO["bluish_green"]),
)
GIB = 2**30


def plot_memory(result: Any, ax: Any = None) -> Artists:
    """Training memory per GPU (GiB) as one stacked bar, and the GPU's memory as a line.

    Returns :class:`Artists` with ``parts`` (Rectangles: weights, gradients, optimizer
    states, activations), ``limit`` (the GPU memory line), ``legend`` and ``title``.
    """
    from matplotlib.patches import Rectangle

    if ax is None:
        ax = new_axes((6.4, 2.6))
    else:
        style_axes(ax)
    parts = [
        ax.add_patch(Rectangle((0, -0.3), 0, 0.6, color=color, label=label))
        for _, label, color in _MEMORY_PARTS
    ]
    limit = ax.axvline(0, color=COLORS["text"], linestyle="--", linewidth=1.5, label="GPU memory")
    ax.set_ylim(-0.8, 0.8)
    ax.set_yticks([])
    ax.grid(False, axis="y")
    ax.set_xlabel("memory per GPU (GiB)")
    legend = ax.legend(handles=[*parts, limit], loc="upper left", ncol=5, fontsize=8)
    artists = Artists(ax=ax, parts=parts, limit=limit, legend=legend, title=ax.title)
    update_memory(artists, result)
    return artists


def update_memory(artists: Artists, result: Any) -> bool:
    """Stack ``result``'s per-GPU bytes; True when the x axis had to change."""
    left = 0.0
    for patch, (field, _, _) in zip(artists.parts, _MEMORY_PARTS, strict=True):
        width = getattr(result, field) / GIB
        patch.set_x(left)
        patch.set_width(width)
        left += width
    gpu_gib = (result.gpu_memory_bytes or 0) / GIB
    artists.limit.set_xdata([gpu_gib, gpu_gib])
    artists.limit.set_visible(bool(result.gpu_memory_bytes))
    ax = artists.ax
    want = (0.0, nice_ceiling(max(result.per_gpu_bytes / GIB, gpu_gib, 1.0) * 1.05))
    changed = tuple(ax.get_xlim()) != want
    if changed:
        ax.set_xlim(*want)
    fits = "" if result.fits is None else (" - fits" if result.fits else " - does not fit")
    where = f" on {result.gpu}" if result.gpu else ""
    ax.set_title(f"{result.per_gpu_bytes / GIB:.1f} GiB per GPU{where}{fits}")
    return changed


def plot_pruned(result: Any, ax: Any = None) -> Artists:
    """A weight matrix after 2:4 pruning (a PruneResult): |w| kept, pruned cells grey.

    Returns :class:`Artists` with ``image`` (magnitudes, pruned cells masked), ``groups``
    (lines between groups of 4 columns) and ``title``.
    """
    if ax is None:
        ax = new_axes((6.4, 3.4))
    else:
        style_axes(ax)
    ax.grid(False)
    from matplotlib import colormaps

    cmap = colormaps["viridis"].with_extremes(bad=COLORS["idle"])
    image = ax.imshow(np.zeros((1, 1)), cmap=cmap, interpolation="nearest", aspect="auto")
    ax.set_xlabel("input (column), groups of 4 along it")
    ax.set_ylabel("output (row)")
    from matplotlib.collections import LineCollection

    groups = LineCollection([], colors=COLORS["text"], linewidths=2)
    ax.add_collection(groups)
    artists = Artists(ax=ax, image=image, groups=groups, title=ax.title)
    update_pruned(artists, result)
    return artists


def update_pruned(artists: Artists, result: Any) -> None:
    """Show a new PruneResult in the artists of :func:`plot_pruned`."""
    weights = np.abs(np.asarray(result.weights, dtype=float))
    mask = np.asarray(result.mask, dtype=bool)
    shown = np.ma.masked_array(weights, mask=~mask)
    img = artists.image
    img.set_data(shown)
    rows, cols = weights.shape[-2:] if weights.ndim >= 2 else (1, weights.size)
    img.set_extent((-0.5, cols - 0.5, rows - 0.5, -0.5))
    img.set_clim(0, float(np.abs(np.asarray(result.weights)).max()) or 1.0)
    ax = artists.ax
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    artists.groups.set_segments(
        [[(x - 0.5, -0.5), (x - 0.5, rows - 0.5)] for x in range(4, cols, 4)]
    )
    ax.set_title(
        f"2:4 pruned: {result.kept_fraction:.0%} of weights kept, "
        f"{result.kept_l1_fraction:.0%} of their total magnitude"
    )
