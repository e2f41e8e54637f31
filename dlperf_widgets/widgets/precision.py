"""FormatExplorer and LossScalingExplorer: number formats, and why FP16 needs loss scaling."""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

from ..core._validate import describe
from ..core.errors import InvalidParameter
from ..core.formats import CastResult, FormatResult, number_format, simulate_cast
from ..core.loss_scaling import (
    SSD_LIKE_LOG2_MEAN,
    SSD_LIKE_LOG2_STD,
    LossScaleResult,
    loss_scale_effect,
)
from ..plots.precision import (
    FLOAT_FORMATS,
    plot_formats,
    plot_loss_scaling,
    set_value,
    update_loss_scaling,
)
from ._base import Explorer, parse_int, widgets

__all__ = ["FormatExplorer", "LossScalingExplorer"]


def parse_float(field: str, text: Any, *, positive: bool = False) -> float:
    """A text box's content as a finite float, or InvalidParameter naming the field."""
    rule = "a positive number" if positive else "a finite number"
    try:
        value = float(str(text).strip().replace("_", ""))
    except ValueError:
        raise InvalidParameter(f"'{field}' must be {rule} (got {describe(text)})") from None
    if not math.isfinite(value) or (positive and value <= 0):
        raise InvalidParameter(f"'{field}' must be {rule} (got {describe(text)})")
    return value


class FormatExplorer(Explorer):
    """Number formats on one log axis (range) with their epsilon (precision); type a value
    to see what each format stores and the relative error.

    ``.result`` is a dict: format name -> :class:`~dlperf_widgets.core.formats.CastResult`
    of the typed value; ``.formats`` the :class:`~dlperf_widgets.core.formats.FormatResult`
    of each format shown.
    """

    result: dict[str, CastResult]
    _margins = {"left": 0.17, "right": 0.97, "bottom": 0.15, "top": 0.9}  # noqa: RUF012

    def __init__(self, value: float | str = 0.1, formats: tuple[str, ...] = FLOAT_FORMATS) -> None:
        super().__init__()
        self.formats: list[FormatResult] = [number_format(f) for f in formats]
        parse_float("value", value)
        controls = {
            "value": widgets.Text(value=str(value), description="value", continuous_update=False),
        }
        self._artists: Any = None
        self._setup(controls)

    def _compute(self) -> dict[str, CastResult]:
        v = parse_float("value", self.controls["value"].value)
        return {f.name: simulate_cast([v], f.name) for f in self.formats}

    def _render(self, result: dict[str, CastResult], changed: set[str]) -> None:
        v = parse_float("value", self.controls["value"].value)
        self.output.value = _cast_table(v, self.formats, result)
        if self._artists is None:
            self._artists = plot_formats(self.formats, self.view.ax, value=v)
            self.view.set_dynamic([self._artists.value])
            self.view.redraw(full=True)
            return
        set_value(self._artists, v)
        self.view.redraw(full=False)


def _status(c: CastResult) -> str:
    for field, word in (
        ("overflow", "overflow"),
        ("underflow", "flushed to zero"),
        ("subnormal", "subnormal"),
        ("precision_loss", "rounded"),
        ("exact", "exact"),
    ):
        if getattr(c, field):
            return word
    return "-"


def _cast_table(v: float, formats: list[FormatResult], casts: dict[str, CastResult]) -> str:
    cols = ("format", "bits (e/m)", "max", "min normal", "epsilon", "stored", "rel. error", "")
    th = "".join(f"<th style='text-align:right;padding:1px 6px'>{c}</th>" for c in cols)
    rows = []
    for f in formats:
        c = casts[f.name]
        stored = float(np.asarray(c.values).ravel()[0])
        cells = (
            f.name,
            f"{f.bits} ({f.exponent_bits}/{f.mantissa_bits})",
            f"{f.max:.4g}",
            f"{f.min_normal:.4g}",
            f"{f.epsilon:.3g}",
            f"{stored:.8g}",
            f"{c.max_relative_error:.3g}",
            _status(c),
        )
        rows.append(
            f"<tr class='dlperf-format-{html.escape(f.name)}'>"
            + "".join(
                f"<td style='text-align:right;padding:1px 6px'>{html.escape(x)}</td>" for x in cells
            )
            + "</tr>"
        )
    head = f"<div class='dlperf-summary'>value <b>{v:.10g}</b> stored in each format</div>"
    return f"{head}<table class='dlperf-result dlperf-formats'><tr>{th}</tr>{''.join(rows)}</table>"


# Seeded sample of log2 gradient magnitudes for the histogram's shape; the fractions
# shown come from the core's exact log-normal model with the same parameters.
_SAMPLES = 40_000


class LossScalingExplorer(Explorer):
    """Gradient magnitudes against a format's range; a loss-scale slider shifts them.

    Magnitudes are log-normal like the SSD histogram of NVIDIA's mixed-precision slides
    (log2 mean -25, std 6 by default): in FP16 without scaling a large share flushes to
    zero; multiplying the loss by 2**k shifts the histogram right by k. ``.result`` is the
    core's :class:`~dlperf_widgets.core.loss_scaling.LossScaleResult`.
    """

    result: LossScaleResult
    _margins = {"left": 0.1, "right": 0.97, "bottom": 0.15, "top": 0.85}  # noqa: RUF012

    def __init__(
        self,
        log2_scale: int = 0,
        *,
        format: str = "fp16",
        log2_mean: float = SSD_LIKE_LOG2_MEAN,
        log2_std: float = SSD_LIKE_LOG2_STD,
    ) -> None:
        super().__init__()
        loss_scale_effect(2.0**log2_scale, format=format, log2_mean=log2_mean, log2_std=log2_std)
        controls = {
            "log2_scale": widgets.IntSlider(
                value=parse_int("log2(scale)", log2_scale, minimum=-8, maximum=32),
                min=-8,
                max=32,
                description="log2(scale)",
                layout=widgets.Layout(width="380px"),
            ),
            "format": widgets.Dropdown(
                options=["fp16", "bf16", "fp8_e5m2", "fp8_e4m3"],
                value=number_format(format).name,
                description="format",
            ),
            "log2_mean": widgets.Text(
                value=f"{log2_mean:g}",
                description="log2 mean",
                continuous_update=False,
                layout=widgets.Layout(width="180px"),
            ),
            "log2_std": widgets.Text(
                value=f"{log2_std:g}",
                description="log2 std",
                continuous_update=False,
                layout=widgets.Layout(width="180px"),
            ),
        }
        self._artists: Any = None
        self._sample_key: tuple[float, float] | None = None
        self._setup(controls, rows=[["log2_scale", "format"], ["log2_mean", "log2_std"]])

    def _params(self) -> tuple[float, float]:
        c = self.controls
        return (
            parse_float("log2 mean", c["log2_mean"].value),
            parse_float("log2 std", c["log2_std"].value, positive=True),
        )

    def _compute(self) -> LossScaleResult:
        mean, std = self._params()
        c = self.controls
        return loss_scale_effect(
            2.0 ** c["log2_scale"].value, format=c["format"].value, log2_mean=mean, log2_std=std
        )

    def _render(self, result: LossScaleResult, changed: set[str]) -> None:
        mean, std = self._params()
        k = self.controls["log2_scale"].value
        self.output.value = (
            f"<div class='dlperf-summary'>scale 2^{k} = {2.0**k:g}: "
            f"<b class='dlperf-kept'>{result.kept_fraction:.2%}</b> of gradients survive in "
            f"{html.escape(result.format)}</div>" + result._repr_html_()
        )
        view = self.view
        if self._artists is None or self._sample_key != (mean, std):
            samples = np.random.default_rng(0).normal(mean, std, _SAMPLES)
            view.ax.cla()
            self._artists = plot_loss_scaling(result, samples, k, view.ax)
            self._sample_key = (mean, std)
            a = self._artists
            view.set_dynamic([a.hist, a.underflow, a.subnormal, a.overflow, a.title])
            view.redraw(full=True)
            return
        update_loss_scaling(self._artists, result, k)
        view.redraw(full=False)
