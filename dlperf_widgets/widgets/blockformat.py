"""BlockFormatExplorer: block-scaled formats (MXFP8, MXFP6, MXFP4, NVFP4, and FP8 with one
scale per tensor for contrast): bits per element, range, and what one outlier costs."""

from __future__ import annotations

import html
from typing import Any

from ..core.scaling import (
    BLOCK_FORMATS,
    SCALE_FORMATS,
    STUDY_BINADES,
    BlockStudyResult,
    block_format,
    block_outlier_study,
)
from ..plots.blockscale import plot_block_outlier, update_block_outlier
from ._base import Explorer, dropdown, parse_int, widgets

__all__ = ["BlockFormatExplorer"]

# Largest block size the text box takes: the study's tensor (1,024 values) keeps 4 blocks.
MAX_BLOCK = 256


class BlockFormatExplorer(Explorer):
    """Pick a block-scaled format, a block size and a scale format, and move one outlier.

    The table gives the format's layout (exact arithmetic: bits per element with the
    scale's share, the binades one block, the scales and one tensor span); the plot and the
    summary the relative rms error of the outlier's block-mates and of the rest of a tensor
    of 1,024 seeded normal values (simulated quantization: numpy round to nearest on the
    format's grid). Picking a format restores its published block size and scale format;
    changing them is a what-if. ``.result`` is the core's
    :class:`~dlperf_widgets.core.scaling.BlockStudyResult`.
    """

    result: BlockStudyResult
    _margins = {"left": 0.13, "right": 0.97, "bottom": 0.15, "top": 0.9}  # noqa: RUF012

    def __init__(
        self,
        format: str = "mxfp4",
        *,
        block_size: int | None = None,
        scale_format: str | None = None,
        outlier: float = 8.0,
    ) -> None:
        super().__init__()
        bf = block_format(format, block_size=block_size, scale_format=scale_format)
        key = block_format(format).name  # the published format's own name
        if bf.block_size:
            parse_int("block_size", bf.block_size, maximum=MAX_BLOCK)
        block_outlier_study(
            key, block_size=block_size, scale_format=scale_format, outlier_binades=outlier
        )  # validates the outlier
        top = float(STUDY_BINADES[-1])
        per_tensor = bf.block_size == 0
        controls = {
            "format": dropdown("format", list(BLOCK_FORMATS), key, description="format"),
            "block_size": widgets.Text(
                value="tensor" if per_tensor else str(bf.block_size),
                description="block size",
                continuous_update=False,
                disabled=per_tensor,
                layout=widgets.Layout(width="170px"),
            ),
            "scale_format": widgets.Dropdown(
                options=list(SCALE_FORMATS),
                value=bf.scale_format,
                description="scales",
                disabled=per_tensor,
                layout=widgets.Layout(width="210px"),
            ),
            "outlier": widgets.FloatSlider(
                value=float(outlier),
                min=0,
                max=max(top, float(outlier)),
                step=0.5,
                description="outlier (binades)",
                layout=widgets.Layout(width="360px"),
            ),
        }
        self._artists: Any = None
        self._setup(controls, rows=[["format", "block_size", "scale_format"], ["outlier"]])

    def _react(self, name: str, value: Any) -> None:
        if name != "format":
            return
        # a format brings its published block size and scale format
        bf = block_format(value)
        c = self.controls
        with self._hold():
            c["block_size"].value = "tensor" if bf.block_size == 0 else str(bf.block_size)
            c["block_size"].disabled = c["scale_format"].disabled = bf.block_size == 0
            c["scale_format"].value = bf.scale_format

    def _compute(self) -> BlockStudyResult:
        c = self.controls
        name = c["format"].value
        if block_format(name).block_size == 0:
            return block_outlier_study(name, outlier_binades=c["outlier"].value)
        return block_outlier_study(
            name,
            block_size=parse_int("block size", c["block_size"].value, maximum=MAX_BLOCK),
            scale_format=c["scale_format"].value,
            outlier_binades=c["outlier"].value,
        )

    def _render(self, result: BlockStudyResult, changed: set[str]) -> None:
        self.output.value = _summary(result)
        if self._artists is None:
            self._artists = plot_block_outlier(result, self.view.ax, title=False)
            a = self._artists
            self.view.set_dynamic([a.block, a.others, a.marker, a.where])
            self.view.redraw(full=True)
            return
        update_block_outlier(self._artists, result)
        self.view.redraw(full=False)


def _summary(r: BlockStudyResult) -> str:
    per_tensor = r.block_size >= r.elements
    grid = f"elements from ±{r.element_min_subnormal:.4g} to ±{r.element_max:g} times their scale"
    if per_tensor:
        layout = (
            f"<b>{r.bits_per_element:g}</b> bits per element ({r.element_format}, one 32-bit "
            f"scale for the whole tensor); {grid}. The tensor spans "
            f"{r.tensor_range_binades:.1f} binades (powers of two)"
        )
    else:
        tensor_scale = " plus a 32-bit scale per tensor" if r.tensor_scale_bits else ""
        layout = (
            f"<b>{r.bits_per_element:g}</b> bits per element ({r.element_format} + an "
            f"{r.scale_format} scale per {r.block_size}{tensor_scale}); {grid}. In binades "
            f"(powers of two), the element grid spans {r.block_range_binades:.1f}, the "
            f"scales {r.scale_range_binades:.1f}, one tensor {r.tensor_range_binades:.1f}"
        )
    block = "every other value" if per_tensor else "its block-mates"
    rows = [
        (
            "every other value: error" if per_tensor else "outlier's block-mates: error",
            r.block_error,
        ),
        ("  flushed to zero", r.block_flushed_fraction),
        *([] if r.other_blocks_error is None else [("other blocks: error", r.other_blocks_error)]),
        ("every value but the outlier: error", r.tensor_error),
        ("  the same without an outlier", r.baseline_tensor_error),
        ("the outlier itself: error", r.outlier_error),
    ]
    cells = "".join(
        f"<tr><th style='text-align:left;padding-left:{1.2 if k.startswith(' ') else 0}em'>"
        f"{html.escape(k.strip())}</th><td style='text-align:right'>{v:.1%}</td></tr>"
        for k, v in rows
    )
    return (
        f"<div class='dlperf-summary'><i>exact arithmetic</i>: {layout}.<br>"
        f"<i>simulated quantization</i> ({r.elements:,} seeded normal values, numpy round to "
        f"nearest on the format's grid): one outlier {r.outlier_binades:g} binades above "
        f"the others leaves {block} a relative rms error of "
        f"<b class='dlperf-block-error'>{r.block_error:.1%}</b>.</div>"
        f"<table class='dlperf-result dlperf-blockformat'>{cells}</table>"
    )
