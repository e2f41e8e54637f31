"""GemmExplorer: M, N, K, dtype, GPU, tile -> cost, bounds, limiter, time, roofline point."""

from __future__ import annotations

import html
from typing import Any

from ..core.alignment import LIBRARIES
from ..core.assumptions import CACHE_STATES, DEFAULT_CACHE, DEFAULT_CONTEXT
from ..core.gemm import GemmResult, gemm
from ..core.gpus import Gpu
from ..core.results import format_quantity
from ..core.tiles import parse_tile
from ..plots.roofline import fit_points, plot_roofline, set_points, update_roof
from ._base import Explorer, context_dropdown, context_note, gpu_dropdown, parse_int, widgets

__all__ = ["GemmExplorer"]

# Slider range for M, N and K; larger values passed as arguments widen it.
SLIDER_MAX = 32768


def _dim_slider(name: str, value: int) -> Any:
    return widgets.IntSlider(
        value=value,
        min=1,
        max=max(SLIDER_MAX, value),
        step=1,
        description=name,
        continuous_update=True,
        layout=widgets.Layout(width="360px"),
    )


class GemmExplorer(Explorer):
    """One GEMM C = A @ B (A: M x K, B: K x N) on one GPU, explained.

    Shows FLOPs, bytes, arithmetic intensity, the GPU's ops:byte ratio, the limiter, tiles,
    waves and the predicted time, and places the GEMM on the GPU's roofline. ``.result``
    is the :class:`~dlperf_widgets.core.gemm.GemmResult` now shown.

    >>> GemmExplorer(m=8192, n=128, k=8192, dtype="fp16", gpu="V100")  # doctest: +SKIP
    """

    result: GemmResult

    def __init__(
        self,
        m: int = 8192,
        n: int = 128,
        k: int = 8192,
        *,
        dtype: str = "fp16",
        gpu: str | Gpu = "A100",
        tile: str = "auto",
        library: str = "current",
        context: str = DEFAULT_CONTEXT,
        cache: str = DEFAULT_CACHE,
    ) -> None:
        super().__init__()
        m, n, k = parse_int("M", m), parse_int("N", n), parse_int("K", k)
        first = gemm(
            m, n, k, dtype=dtype, gpu=gpu, tile=tile, library=library, context=context, cache=cache
        )  # validates
        gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
        g = self._gpu(gpu_dd.value)
        controls = {
            "m": _dim_slider("M", first.m),
            "n": _dim_slider("N", first.n),
            "k": _dim_slider("K", first.k),
            "dtype": widgets.Dropdown(options=g.dtypes(), value=first.dtype, description="dtype"),
            "gpu": gpu_dd,
            "tile": widgets.Text(
                value=str(tile),
                description="tile",
                placeholder="auto or 256x128",
                continuous_update=False,
            ),
            "library": widgets.Dropdown(
                options=list(LIBRARIES), value=first.library, description="library"
            ),
            # how the predicted time is timed (core.assumptions.TIMING_CONTEXTS)
            "context": context_dropdown(first.context),
            # whether the operands start in DRAM or in L2 (core.assumptions.CACHE_STATES)
            "cache": widgets.Dropdown(
                options=list(CACHE_STATES), value=first.cache, description="L2 cache"
            ),
        }
        self._artists: Any = None
        self._setup(
            controls,
            rows=[["m", "n", "k"], ["dtype", "gpu", "tile", "library"], ["context", "cache"]],
        )

    # -- Explorer --------------------------------------------------------------------------
    def _compute(self) -> GemmResult:
        c = self.controls
        tile_text = c["tile"].value.strip() or "auto"
        parse_tile(tile_text)  # the core's rule and message for the tile box
        m = parse_int("M", c["m"].value)
        n = parse_int("N", c["n"].value)
        k = parse_int("K", c["k"].value)
        return gemm(
            m,
            n,
            k,
            dtype=c["dtype"].value,
            gpu=self._gpu(c["gpu"].value),
            tile=tile_text,
            library=c["library"].value,
            context=c["context"].value,
            cache=c["cache"].value,
        )

    def _render(self, result: GemmResult, changed: set[str]) -> None:
        self.output.value = _summary_html(result)
        view = self.view
        g = self._gpu(self.controls["gpu"].value)
        if self._artists is None:
            self._artists = plot_roofline(g, result.dtype, view.ax, ops=[result])
            a = self._artists
            view.set_dynamic(
                [
                    a.roof,
                    a.ridge,
                    a.ridge_label,
                    a.peak_label,
                    a.title,
                    a.errorbars,
                    *a.points,
                    *a.labels,
                ]
            )
            view.redraw(full=True)
            return
        # the axes stay put; only the roof (GPU, dtype) and the point move
        grown = False
        if changed & {"gpu", "dtype"}:
            grown = update_roof(self._artists, g, result.dtype)
        grown = fit_points(self._artists, [result]) or grown
        set_points(self._artists, [result])
        view.redraw(full=grown)


def _summary_html(r: GemmResult) -> str:
    bound = {"math": "math-bound", "memory": "memory-bound", "latency": "latency-bound"}[r.limiter]
    compare = ">" if r.arithmetic_intensity > r.ops_per_byte else "<="
    head = (
        "<div class='dlperf-summary' style='margin-bottom:6px'>"
        f"arithmetic intensity <b><span class='dlperf-ai'>{r.arithmetic_intensity:.1f}</span></b>"
        f" FLOP/B {compare} ops:byte <span class='dlperf-opb'>{r.ops_per_byte:.1f}</span>"
        f" FLOP/B: <b class='dlperf-limiter'>{html.escape(bound)}</b>; predicted "
        f"<b class='dlperf-time'>{html.escape(format_quantity(r.predicted_time_s, 's'))}</b>"
        f" ({context_note(r.context)}, {html.escape(r.cache)} L2)"
        f" <span class='dlperf-band'>({html.escape(r.band_text())}; the bar on the point)</span>"
        "</div>"
    )
    return head + r._repr_html_()
