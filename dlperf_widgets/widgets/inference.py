"""InferenceExplorer: serving an LLM on one GPU: speed, first token, memory and roofline."""

from __future__ import annotations

import html
from typing import Any

from ..core.gpus import Gpu
from ..core.inference import KV_DTYPES, MODELS, WEIGHT_DTYPES, DecodeResult, llm_inference
from ..core.results import format_quantity
from ..plots.roofline import fit_points, plot_roofline, set_points, update_roof
from ._base import Explorer, gpu_dropdown, parse_int, widgets

__all__ = ["InferenceExplorer"]

_PART_COLORS = {"weights": "#0072B2", "KV cache": "#E69F00"}


class InferenceExplorer(Explorer):
    """Model, GPU, batch, context, KV and weight dtypes -> tokens/s per user and in total,
    time to first token, a memory bar against the GPU's capacity, and the decode step on
    the roofline. ``.result`` is the core's
    :class:`~dlperf_widgets.core.inference.DecodeResult`.
    """

    result: DecodeResult

    def __init__(
        self,
        model: str = "llama-2-7b",
        *,
        gpu: str | Gpu = "A100",
        batch: int = 1,
        context: int = 2048,
        weight_dtype: str = "fp16",
        kv_dtype: str = "fp16",
    ) -> None:
        super().__init__()
        first = llm_inference(
            model,
            gpu=gpu,
            batch=batch,
            context=context,
            weight_dtype=weight_dtype,
            kv_dtype=kv_dtype,
        )  # validates the arguments
        gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
        controls = {
            "model": widgets.Dropdown(options=list(MODELS), value=first.model, description="model"),
            "gpu": gpu_dd,
            "batch": widgets.Text(
                value=str(batch),
                description="batch",
                continuous_update=False,
                layout=widgets.Layout(width="180px"),
            ),
            "context": widgets.Text(
                value=str(context),
                description="context",
                continuous_update=False,
                layout=widgets.Layout(width="180px"),
            ),
            "weight_dtype": widgets.Dropdown(
                options=list(WEIGHT_DTYPES), value=first.weight_dtype, description="weights"
            ),
            "kv_dtype": widgets.Dropdown(
                options=list(KV_DTYPES), value=first.kv_dtype, description="KV cache"
            ),
        }
        self._artists: Any = None
        self._setup(
            controls, rows=[["model", "gpu"], ["batch", "context"], ["weight_dtype", "kv_dtype"]]
        )

    def _compute(self) -> DecodeResult:
        c = self.controls
        return llm_inference(
            c["model"].value,
            gpu=self._gpu(c["gpu"].value),
            batch=parse_int("batch", c["batch"].value, maximum=1 << 16),
            context=parse_int("context", c["context"].value, maximum=1 << 22),
            weight_dtype=c["weight_dtype"].value,
            kv_dtype=c["kv_dtype"].value,
        )

    def _render(self, result: DecodeResult, changed: set[str]) -> None:
        self.output.value = _summary_html(result)
        view = self.view
        g = self._gpu(self.controls["gpu"].value)
        label = [f"decode, batch {result.batch}"]
        if self._artists is None:
            self._artists = plot_roofline(g, "fp16", view.ax, ops=[result], labels=label)
            view.set_dynamic(self._dynamic())
            view.redraw(full=True)
            return
        grown = update_roof(self._artists, g, "fp16") if "gpu" in changed else False
        grown = fit_points(self._artists, [result]) or grown
        set_points(self._artists, [result], label)
        view.set_dynamic(self._dynamic(), keep_background=True)
        view.redraw(full=grown)

    def _dynamic(self) -> list[Any]:
        a = self._artists
        return [a.roof, a.ridge, a.ridge_label, a.peak_label, a.title, *a.points, *a.labels]


def _memory_bar(r: DecodeResult) -> str:
    """A stacked bar of the memory parts, scaled so the GPU's capacity line stays in view."""
    fractions = r.memory_fractions
    total = sum(fractions.values())
    span = max(1.0, total) * 1.05  # the bar's full width, in capacities
    parts = "".join(
        f"<div title='{html.escape(k)}' style='width:{100 * f / span:.2f}%;"
        f"background:{_PART_COLORS.get(k, '#999')};height:100%'></div>"
        for k, f in fractions.items()
    )
    line = (
        f"<div class='dlperf-capacity' style='position:absolute;left:{100 / span:.2f}%;top:-3px;"
        "bottom:-3px;border-left:2px solid #D55E00'></div>"
    )
    legend = " · ".join(
        f"<span style='color:{_PART_COLORS.get(k, '#999')}'>■</span> {html.escape(k)} "
        f"{html.escape(format_quantity(v, 'iB', 3))}"
        for k, v in r.memory_parts.items()
    )
    fits = "fits" if r.fits else "<b style='color:#D55E00'>does not fit</b>"
    return (
        "<div class='dlperf-memory-bar' style='position:relative;display:flex;width:360px;"
        f"height:16px;background:#eee;margin:4px 0'>{parts}{line}</div>"
        f"<div style='font-size:90%'>{legend} · capacity "
        f"{html.escape(format_quantity(r.capacity_bytes, 'iB', 3))} (red line): {fits}; "
        f"at most {r.max_batch} sequences of {r.context} tokens</div>"
    )


def _summary_html(r: DecodeResult) -> str:
    return (
        f"<div class='dlperf-summary'><b class='dlperf-tokens-user'>"
        f"{r.tokens_per_s_per_user:,.1f}</b> tokens/s per user, "
        f"<b class='dlperf-tokens-total'>{r.tokens_per_s:,.0f}</b> in total; "
        f"first token after <b>{html.escape(format_quantity(r.time_to_first_token_s, 's', 3))}"
        f"</b> (model's prediction)</div>"
        f"<div>decode step {html.escape(format_quantity(r.decode_step_s, 's', 3))}, "
        f"{r.decode_limiter}-bound at {r.decode_arithmetic_intensity:.1f} FLOP/B "
        f"(ridge {r.ops_per_byte:.0f}; weights alone reach it at batch ~{r.ridge_batch:.0f})"
        f"</div>{_time_split(r)}{_memory_bar(r)}"
    )


def _time_split(r: DecodeResult) -> str:
    """Where the decode step's time goes, by kind of kernel (the priced kernel list)."""
    if r.priced is None:
        return ""
    step = r.priced.step_s
    parts = " · ".join(
        f"{html.escape(k)} {v / step:.0%}" for k, v in r.priced.categories.items() if v > 0
    )
    return f"<div class='dlperf-time-split' style='font-size:90%'>step time: {parts}</div>"
