"""FusionExplorer: a chain of memory-bound ops, unfused vs fused, on a roofline."""

from __future__ import annotations

import html
from typing import Any

from ..core.fusion import CHAINS, FusionResult, fusion_chain, parse_chain
from ..core.gpus import Gpu
from ..core.results import format_quantity
from ..plots.roofline import fit_points, plot_roofline, set_points, update_roof
from ._base import Explorer, dropdown, gpu_dropdown, parse_int, widgets

__all__ = ["FusionExplorer"]

_CUSTOM = "custom"
_DTYPES = ("fp16", "bf16", "fp32")
# Largest tensor the text box accepts (2**34 values, 32 GiB in FP16).
_MAX_ELEMENTS = 1 << 34


class FusionExplorer(Explorer):
    """Pick a chain of element-wise / normalisation ops (or a transformer block's preset) and
    see its DRAM bytes, kernels and time run op by op vs fused into one kernel.

    Each unfused kernel and the fused kernel are points on the GPU's roofline. ``.result``
    is the core's :class:`~dlperf_widgets.core.fusion.FusionResult`.
    """

    result: FusionResult

    def __init__(
        self,
        ops: str = "after attention: bias, dropout, residual, LayerNorm",
        *,
        elements: int = 8 * 2048 * 1024,
        dtype: str = "fp16",
        gpu: str | Gpu = "A100",
    ) -> None:
        super().__init__()
        fusion_chain(ops, elements=elements, dtype=dtype, gpu=gpu)  # validate once, loudly
        gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
        preset = ops if isinstance(ops, str) and ops in CHAINS else _CUSTOM
        text = ", ".join(parse_chain(ops))
        controls = {
            "preset": widgets.Dropdown(
                options=[*CHAINS, _CUSTOM],
                value=preset,
                description="chain",
                layout=widgets.Layout(width="420px"),
            ),
            "ops": widgets.Text(
                value=text,
                description="ops",
                continuous_update=False,
                layout=widgets.Layout(width="420px"),
            ),
            "elements": widgets.Text(
                value=str(elements),
                description="elements",
                continuous_update=False,
                layout=widgets.Layout(width="220px"),
            ),
            "dtype": dropdown("dtype", _DTYPES, dtype, description="dtype"),
            "gpu": gpu_dd,
        }
        self._artists: Any = None
        self._setup(controls, rows=[["preset"], ["ops"], ["elements", "dtype", "gpu"]])

    def _on_change(self, change: dict[str, Any]) -> None:
        name = self._names.get(id(change["owner"]), "")
        if name == "preset" and change["new"] in CHAINS:
            with self._hold():
                self.controls["ops"].value = ", ".join(CHAINS[change["new"]])
            self.update({"preset", "ops"})
            return
        if name == "ops" and not self._holding:
            with self._hold():
                self.controls["preset"].value = _CUSTOM
        super()._on_change(change)

    def _leaves_preset(self, name: str) -> bool:
        """Only editing the ops by hand leaves a preset chain; size, dtype and GPU keep it."""
        return name == "ops"

    def _refresh_dtypes(self, gpu_name: str) -> None:
        """The dtype list is the element-wise formats, whatever the GPU."""

    def _compute(self) -> FusionResult:
        c = self.controls
        return fusion_chain(
            c["ops"].value,
            elements=parse_int("elements", c["elements"].value, maximum=_MAX_ELEMENTS),
            dtype=c["dtype"].value,
            gpu=self._gpu(c["gpu"].value),
        )

    def _render(self, result: FusionResult, changed: set[str]) -> None:
        self.output.value = _summary_html(result)
        ops = [*result.passes, result.fused]
        labels = [p.op for p in result.passes] + ["fused"]
        view = self.view
        g = self._gpu(self.controls["gpu"].value)
        if self._artists is None:
            self._artists = plot_roofline(g, result.dtype, view.ax, ops=ops, labels=labels)
            view.set_dynamic(self._dynamic())
            view.redraw(full=True)
            return
        grown = False
        if changed & {"gpu", "dtype"}:
            grown = update_roof(self._artists, g, result.dtype)
        grown = fit_points(self._artists, ops) or grown
        set_points(self._artists, ops, labels)
        view.set_dynamic(self._dynamic(), keep_background=True)
        view.redraw(full=grown)

    def _dynamic(self) -> list[Any]:
        a = self._artists
        return [a.roof, a.ridge, a.ridge_label, a.peak_label, a.title, *a.points, *a.labels]


def _summary_html(r: FusionResult) -> str:
    rows = (
        ("kernels", str(r.kernels_unfused), str(r.kernels_fused)),
        ("DRAM bytes", format_quantity(r.bytes_unfused, "B"), format_quantity(r.bytes_fused, "B")),
        (
            "ideal time (datasheet)",
            format_quantity(r.ideal_time_unfused_s, "s"),
            format_quantity(r.ideal_time_fused_s, "s"),
        ),
        (
            "predicted time",
            format_quantity(r.time_unfused_s, "s"),
            format_quantity(r.time_fused_s, "s"),
        ),
        (
            "with launch overhead",
            format_quantity(r.eager_time_unfused_s, "s"),
            format_quantity(r.eager_time_fused_s, "s"),
        ),
    )
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(a)}</th>"
        f"<td style='text-align:right;padding:1px 8px'>{html.escape(b)}</td>"
        f"<td style='text-align:right;padding:1px 8px'>{html.escape(c)}</td></tr>"
        for a, b, c in rows
    )
    return (
        f"<div class='dlperf-summary'>fused: <b class='dlperf-speedup'>{r.speedup:.2f}x</b> "
        f"faster, {100 * r.bytes_saved_fraction:.0f} % less DRAM traffic</div>"
        "<table class='dlperf-result dlperf-fusion'><tr><th></th><th>unfused</th>"
        f"<th>fused</th></tr>{body}</table>"
    )
