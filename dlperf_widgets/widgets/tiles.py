"""TileExplorer and WaveExplorer: tile quantization and wave quantization, drawn."""

from __future__ import annotations

import html
from typing import Any, ClassVar

from ..core.gpus import Gpu, gpu
from ..core.tiles import TILE_SHAPES, TileWave, parse_tile, tile_wave
from ..core.toast import ToastResult, toast
from ..plots.tiles import (
    plot_tiles,
    plot_toast,
    plot_waves,
    update_tiles,
    update_toast,
    update_waves,
)
from ._base import Explorer, gpu_dropdown, parse_int, widgets

__all__ = ["TileExplorer", "WaveExplorer"]

TILE_NAMES = [f"{a}x{b}" for a, b in TILE_SHAPES]
DIM_MAX = 32768


def _slider(name: str, value: int, maximum: int, width: str = "340px") -> Any:
    return widgets.IntSlider(
        value=value,
        min=1,
        max=max(maximum, value),
        description=name,
        layout=widgets.Layout(width=width),
    )


def _tile_dropdown(tile: Any) -> Any:
    shape = parse_tile(tile)
    if shape is None:
        shape = TILE_SHAPES[0]
    name = f"{shape[0]}x{shape[1]}"
    options = TILE_NAMES if name in TILE_NAMES else [*TILE_NAMES, name]
    return widgets.Dropdown(options=options, value=name, description="tile")


def _tilewave_html(tw: TileWave, extra: str = "") -> str:
    return f"<div class='dlperf-summary'>{extra}</div>" + tw._repr_html_()


class TileExplorer(Explorer):
    """The M x N output matrix cut into thread-block tiles.

    Tiles that reach past the matrix edge are highlighted and the work they waste is
    hatched; the tile efficiency (useful / computed output elements) comes from the core.
    The default, a 257 x 256 output with 128x128 tiles, launches six blocks of which two
    do almost nothing (the tile-quantization figure of NVIDIA's "NN Performance
    optimization" slides). ``.result`` is the :class:`~dlperf_widgets.core.tiles.TileWave`.
    """

    result: TileWave
    _figsize = (5.6, 4.4)
    _margins: ClassVar[dict[str, float]] = {
        "left": 0.14,
        "right": 0.97,
        "bottom": 0.12,
        "top": 0.86,
    }

    def __init__(
        self,
        m: int = 257,
        n: int = 256,
        *,
        tile: str | tuple[int, int] = "128x128",
        gpu: str | Gpu = "A100",
        blocks_per_sm: int = 1,
    ) -> None:
        super().__init__()
        m, n = parse_int("M", m), parse_int("N", n)
        gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
        tile_dd = _tile_dropdown(tile)
        tile_wave(
            m, n, tile=tile_dd.value, sms=self._gpu(gpu_dd.value).sms, blocks_per_sm=blocks_per_sm
        )  # validates
        controls = {
            "m": _slider("M", m, DIM_MAX),
            "n": _slider("N", n, DIM_MAX),
            "tile": tile_dd,
            "gpu": gpu_dd,
            "blocks_per_sm": widgets.BoundedIntText(
                value=parse_int("blocks/SM", blocks_per_sm, maximum=32),
                min=1,
                max=32,
                description="blocks/SM",
                layout=widgets.Layout(width="160px"),
            ),
        }
        self._artists: Any = None
        self._setup(controls, rows=[["m", "n"], ["tile", "gpu", "blocks_per_sm"]])

    def _compute(self) -> TileWave:
        c = self.controls
        return tile_wave(
            parse_int("M", c["m"].value),
            parse_int("N", c["n"].value),
            tile=c["tile"].value,
            sms=self._gpu(c["gpu"].value).sms,
            blocks_per_sm=parse_int("blocks/SM", c["blocks_per_sm"].value, maximum=32),
        )

    def _render(self, result: TileWave, changed: set[str]) -> None:
        self.output.value = _tilewave_html(
            result,
            f"tile efficiency <b class='dlperf-tile-eff'>{result.tile_efficiency:.1%}</b> "
            f"({result.tiles_m} x {result.tiles_n} tiles of {html.escape(result.tile)})",
        )
        view = self.view
        if self._artists is None:
            self._artists = plot_tiles(result, view.ax)
            a = self._artists
            view.set_dynamic([a.image, a.grid, a.matrix, *a.waste, a.title])
            view.redraw(full=True)
            return
        if changed <= {"gpu", "blocks_per_sm"}:
            # the grid does not depend on the GPU: only the table changed
            return
        view.redraw(full=update_tiles(self._artists, result))


PRESETS = {
    "8 SMs, 12 blocks": {"m": 768, "n": 512, "tile": "256x128", "sms": 8, "blocks_per_sm": 1},
    "A100, 4096 x 4096, 256x128": {
        "m": 4096,
        "n": 4096,
        "tile": "256x128",
        "sms": 108,
        "blocks_per_sm": 1,
    },
    "A100, 108 tiles (one full wave)": {
        "m": 2304,
        "n": 1536,
        "tile": "256x128",
        "sms": 108,
        "blocks_per_sm": 1,
    },
    "A100, 109 tiles (a 1-tile tail)": {
        "m": 109 * 256,
        "n": 128,
        "tile": "256x128",
        "sms": 108,
        "blocks_per_sm": 1,
    },
    "toast puzzle": {"slices": 3, "capacity": 2},
    "custom": {},
}
TOAST = "toast puzzle"


class WaveExplorer(Explorer):
    """Tiles scheduled onto SMs wave by wave; the tail wave's idle slots are hatched.

    Presets: the 8-SM GPU running 12 thread blocks (two waves, 75 % busy) from NVIDIA's
    "NN Performance optimization" slides, A100 cases (a full wave of 108 tiles vs 109),
    and the toast puzzle (3 slices, a pan for 2, one minute a side: 3 minutes, not 4),
    the same quantization in a kitchen. ``.result`` is a
    :class:`~dlperf_widgets.core.tiles.TileWave`, or a
    :class:`~dlperf_widgets.core.toast.ToastResult` for the toast.
    """

    result: TileWave | ToastResult
    _presets = PRESETS
    _margins: ClassVar[dict[str, float]] = {"left": 0.1, "right": 0.97, "bottom": 0.14, "top": 0.85}

    def __init__(
        self,
        preset: str | None = "8 SMs, 12 blocks",
        *,
        m: int | None = None,
        n: int | None = None,
        tile: str = "256x128",
        sms: int | None = None,
        gpu: str | Gpu | None = None,
        blocks_per_sm: int | None = None,
        slices: int = 3,
        capacity: int = 2,
    ) -> None:
        super().__init__()
        preset = preset or "custom"
        if preset not in PRESETS:
            from ..core._validate import check_choice

            preset = check_choice("preset", preset, PRESETS)  # its canonical spelling
        values = {
            "m": 768,
            "n": 512,
            "tile": tile,
            "sms": 8,
            "blocks_per_sm": 1,
            "slices": slices,
            "capacity": capacity,
        }
        values.update(PRESETS[preset])
        if gpu is not None:
            values["sms"] = self._sms_of(gpu)
        # Values given explicitly win over the preset's (a preset never silently drops them).
        for key, given in (("m", m), ("n", n), ("sms", sms), ("blocks_per_sm", blocks_per_sm)):
            if given is not None:
                values[key] = given
        if any(v is not None for v in (m, n, sms, gpu, blocks_per_sm)) and preset != TOAST:
            preset = "custom"
        vm, vn = parse_int("M", values["m"]), parse_int("N", values["n"])
        tile_dd = _tile_dropdown(values["tile"])
        tile_wave(
            vm, vn, tile=tile_dd.value, sms=values["sms"], blocks_per_sm=values["blocks_per_sm"]
        )
        toast(values["slices"], values["capacity"])
        controls = {
            "preset": widgets.Dropdown(options=list(PRESETS), value=preset, description="preset"),
            "m": _slider("M", vm, DIM_MAX),
            "n": _slider("N", vn, DIM_MAX),
            "tile": tile_dd,
            "sms": _slider("SMs", int(values["sms"]), 160, "300px"),
            "blocks_per_sm": widgets.BoundedIntText(
                value=parse_int("blocks/SM", values["blocks_per_sm"], maximum=32),
                min=1,
                max=32,
                description="blocks/SM",
                layout=widgets.Layout(width="160px"),
            ),
            "slices": _slider("slices", int(values["slices"]), 12, "300px"),
            "capacity": _slider("pan holds", int(values["capacity"]), 8, "300px"),
        }
        self._artists: Any = None
        self._mode: str | None = None
        self._setup(
            controls,
            rows=[["preset"], ["m", "n"], ["tile", "sms", "blocks_per_sm"], ["slices", "capacity"]],
        )
        self._show_groups()

    @staticmethod
    def _sms_of(g: str | Gpu) -> int:
        return gpu(g).sms

    def _is_toast(self) -> bool:
        return self.controls["preset"].value == TOAST

    def _show_groups(self) -> None:
        toast_mode = self._is_toast()
        for name in ("m", "n", "tile", "sms", "blocks_per_sm"):
            self.controls[name].layout.display = "none" if toast_mode else None
        for name in ("slices", "capacity"):
            self.controls[name].layout.display = None if toast_mode else "none"

    def _react(self, name: str, value: Any) -> None:
        if name == "preset":
            self._show_groups()

    def _leaves_preset(self, name: str) -> bool:
        return not self._is_toast()

    def _compute(self) -> TileWave | ToastResult:
        c = self.controls
        if self._is_toast():
            return toast(c["slices"].value, c["capacity"].value)
        return tile_wave(
            parse_int("M", c["m"].value),
            parse_int("N", c["n"].value),
            tile=c["tile"].value,
            sms=parse_int("SMs", c["sms"].value),
            blocks_per_sm=parse_int("blocks/SM", c["blocks_per_sm"].value, maximum=32),
        )

    def _render(self, result: TileWave | ToastResult, changed: set[str]) -> None:
        view = self.view
        if isinstance(result, ToastResult):
            self.output.value = (
                f"<div class='dlperf-summary'>best <b class='dlperf-toast-best'>"
                f"{result.best_minutes:g}</b> min vs naive {result.naive_minutes:g} min; "
                f"the pan is busy {result.pan_utilisation:.0%} of the time</div>"
                + result._repr_html_()
            )
            if self._mode != "toast":
                view.ax.cla()
                view.set_dynamic([])
                self._artists, self._mode = plot_toast(result, view.ax), "toast"
                full = True
            else:
                update_toast(self._artists, result)
                full = self._artists.limits_changed
            a = self._artists
            view.set_dynamic([a.cells, *a.texts, a.title], keep_background=not full)
            view.redraw(full=full)
            return
        self.output.value = _tilewave_html(
            result,
            f"{result.tiles} tiles, {result.waves} wave{'s' * (result.waves != 1)}: wave "
            f"efficiency <b class='dlperf-wave-eff'>{result.wave_efficiency:.1%}</b>",
        )
        if self._mode != "waves" or self._artists is None:
            view.ax.cla()
            self._artists = plot_waves(result, view.ax)
            self._mode = "waves"
            a = self._artists
            view.set_dynamic([a.image, a.tail, a.capacity, a.title])
            view.redraw(full=True)
            return
        view.redraw(full=update_waves(self._artists, result))
