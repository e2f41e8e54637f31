"""Fp8ScalingExplorer and StepTimeCalculator: FP8 per-tensor scaling, and one training step
on N GPUs with its MFU."""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from ..core._validate import describe
from ..core.formats import number_format
from ..core.gpus import Gpu
from ..core.scaleout import SCHEDULES, StepResult, step_time
from ..core.scaling import FP8_FORMATS, Fp8ScalingResult, fp8_quantize
from ..plots.scaleout import (
    plot_fp8_scaling,
    plot_step_timeline,
    update_fp8_scaling,
    update_step_timeline,
)
from ._base import Explorer, dropdown, gpu_dropdown, parse_int, widgets
from .precision import parse_float

__all__ = ["Fp8ScalingExplorer", "StepTimeCalculator"]

# Samples of the tensor shown (seeded): enough for a smooth histogram and fractions to
# 1e-4, few enough that a cast and a histogram take a few milliseconds.
_SAMPLES = 20_000


def _with(options: list[int], value: Any) -> list[int]:
    """``options`` plus ``value`` (already validated by the core), in order."""
    return sorted({*options, int(value)})


class Fp8ScalingExplorer(Explorer):
    """A tensor's magnitudes after scaling, against FP8 E4M3 or E5M2.

    The tensor has log-normal magnitudes (``log2_mean``, ``log2_std``) and random signs,
    plus optionally one outlier ``outlier`` binades above its largest value. *Current*
    scaling maps its amax to the format's max (less ``margin`` binades); *delayed* scaling
    uses the amax of earlier steps, ``growth`` binades below (tensor grew) or above (it
    shrank) today's. ``.result`` is the core's
    :class:`~dlperf_widgets.core.scaling.Fp8ScalingResult`.
    """

    result: Fp8ScalingResult
    _margins = {"left": 0.1, "right": 0.97, "bottom": 0.16, "top": 0.88}  # noqa: RUF012

    def __init__(
        self,
        format: str = "fp8_e4m3",
        *,
        recipe: str = "current",
        margin: int = 0,
        growth: float = 0.0,
        log2_mean: float = -12.0,
        log2_std: float = 3.0,
        outlier: float = 0.0,
    ) -> None:
        super().__init__()
        fp8_quantize([1.0], format, margin=margin)  # validates format and margin
        slider = widgets.Layout(width="330px")
        controls = {
            "format": widgets.Dropdown(
                # the core's canonical name: "E5M2" and "fp8_E5M2" mean fp8_e5m2
                options=list(FP8_FORMATS),
                value=number_format(format).name,
                description="format",
            ),
            "recipe": dropdown("recipe", ["current", "delayed"], recipe, description="recipe"),
            "margin": widgets.IntSlider(
                value=margin, min=0, max=8, description="margin", layout=slider
            ),
            "growth": widgets.FloatSlider(
                value=growth,
                min=-4,
                max=8,
                step=0.5,
                description="amax growth",
                layout=slider,
            ),
            "log2_mean": widgets.Text(
                value=f"{log2_mean:g}",
                description="log2 mean",
                continuous_update=False,
                layout=widgets.Layout(width="170px"),
            ),
            "log2_std": widgets.Text(
                value=f"{log2_std:g}",
                description="log2 std",
                continuous_update=False,
                layout=widgets.Layout(width="170px"),
            ),
            "outlier": widgets.FloatSlider(
                value=outlier,
                min=0,
                max=16,
                step=1,
                description="outlier (binades)",
                layout=slider,
            ),
        }
        self._tensor_key: tuple[float, float, float] | None = None
        self._tensor: np.ndarray = np.zeros(1)
        self._artists: Any = None
        self._setup(
            controls,
            rows=[["format", "recipe"], ["margin", "growth"], ["log2_mean", "log2_std", "outlier"]],
        )

    def _values(self) -> np.ndarray:
        c = self.controls
        mean = parse_float("log2 mean", c["log2_mean"].value)
        std = parse_float("log2 std", c["log2_std"].value, positive=True)
        key = (mean, std, float(c["outlier"].value))
        if key != self._tensor_key:
            rng = np.random.default_rng(0)
            x = rng.choice([-1.0, 1.0], _SAMPLES) * np.exp2(rng.normal(mean, std, _SAMPLES))
            if key[2] > 0:
                x[0] = np.abs(x).max() * 2.0 ** key[2]
            self._tensor, self._tensor_key = x, key
        return self._tensor

    def _compute(self) -> Fp8ScalingResult:
        c = self.controls
        x = self._values()
        history = None
        if c["recipe"].value == "delayed":
            history = [float(np.abs(x).max()) * 2.0 ** -float(c["growth"].value)]
        return fp8_quantize(
            x,
            c["format"].value,
            recipe=c["recipe"].value,
            amax_history=history,
            margin=c["margin"].value,
        )

    def _render(self, result: Fp8ScalingResult, changed: set[str]) -> None:
        self.output.value = (
            f"<div class='dlperf-summary'>scale <b>{result.scale:.4g}</b>: "
            f"<b class='dlperf-saturated'>{result.saturation_fraction:.2%}</b> saturated, "
            f"<b class='dlperf-underflow'>{result.underflow_fraction:.2%}</b> flushed to zero, "
            f"rms relative error {result.rms_relative_error:.3f}</div>" + result._repr_html_()
        )
        if self._artists is None:
            self._artists = plot_fp8_scaling(result, self.view.ax)
            a = self._artists
            self.view.set_dynamic([a.hist, a.underflow, a.subnormal, a.overflow, a.amax, a.title])
            self.view.redraw(full=True)
            return
        update_fp8_scaling(self._artists, result)
        self.view.redraw(full=False)


# Model presets: (layers, hidden, heads, seq_len, vocab) of well-known shapes
_MODELS = {
    "7B (Llama-2-like)": (32, 4096, 32, 4096, 32000),
    "13B": (40, 5120, 40, 4096, 32000),
    "70B-like (MHA)": (80, 8192, 64, 4096, 32000),
    "GPT-3 175B": (96, 12288, 96, 2048, 51200),
}


class StepTimeCalculator(Explorer):
    """One training step of a GPT-style model on N GPUs: its time, tokens/s and MFU, and a
    timeline of one GPU's compute and communication.

    Controls: model, GPU, dtype, number of GPUs, tensor and pipeline parallelism (data
    parallelism fills the rest), schedule, global batch, micro-batch, ZeRO stage, and
    whether gradient traffic overlaps the backward pass. ``.result`` is the core's
    :class:`~dlperf_widgets.core.scaleout.StepResult`.
    """

    result: StepResult
    _figsize = (6.4, 2.9)
    _margins = {"left": 0.12, "right": 0.97, "bottom": 0.47, "top": 0.88}  # noqa: RUF012

    def __init__(
        self,
        model: str = "7B (Llama-2-like)",
        *,
        gpu: str | Gpu = "H100",
        dtype: str = "bf16",
        gpus: int = 64,
        tensor_parallel: int = 1,
        pipeline_parallel: int = 1,
        schedule: str = "1f1b",
        global_batch: int = 512,
        micro_batch: int = 1,
        zero: int = 1,
        overlap: bool = True,
    ) -> None:
        super().__init__()
        if model not in _MODELS:
            from ..core.errors import InvalidParameter

            raise InvalidParameter(
                f"'model' must be one of {', '.join(_MODELS)} (got {describe(model)})"
            )
        step_time(
            **self._shape(model),
            gpu=gpu,
            dtype=dtype,
            gpus=gpus,
            tensor_parallel=tensor_parallel,
            pipeline_parallel=pipeline_parallel,
            schedule=schedule,
            global_batch=global_batch,
            micro_batch=micro_batch,
            zero=zero,
            overlap=overlap,
        )  # validates the arguments
        gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
        small = widgets.Layout(width="170px")
        powers = [1, 2, 4, 8, 16, 32, 64]
        controls = {
            "model": widgets.Dropdown(options=list(_MODELS), value=model, description="model"),
            "gpu": gpu_dd,
            "dtype": dropdown(
                "dtype", self._gpu(gpu_dd.value).dtypes(), dtype, description="dtype"
            ),
            "gpus": widgets.Text(
                value=str(gpus), description="GPUs", continuous_update=False, layout=small
            ),
            # a value the core accepted joins the usual options (tensor_parallel=32 is valid)
            "tensor_parallel": widgets.Dropdown(
                options=_with(powers[:5], tensor_parallel),
                value=int(tensor_parallel),
                description="tensor par.",
                layout=small,
            ),
            "pipeline_parallel": widgets.Dropdown(
                options=_with(powers, pipeline_parallel),
                value=int(pipeline_parallel),
                description="pipeline par.",
                layout=small,
            ),
            "schedule": dropdown("schedule", list(SCHEDULES), schedule, description="schedule"),
            "global_batch": widgets.Text(
                value=str(global_batch),
                description="global batch",
                continuous_update=False,
                layout=small,
            ),
            "micro_batch": widgets.Dropdown(
                options=_with([1, 2, 4, 8, 16], micro_batch),
                value=int(micro_batch),
                description="micro-batch",
                layout=small,
            ),
            "zero": widgets.Dropdown(
                options=[0, 1, 2, 3], value=int(zero), description="ZeRO", layout=small
            ),
            "overlap": widgets.Checkbox(value=overlap, description="overlap gradients"),
        }
        self._artists: Any = None
        self._setup(
            controls,
            rows=[
                ["model", "gpu", "dtype"],
                ["gpus", "tensor_parallel", "pipeline_parallel", "schedule"],
                ["global_batch", "micro_batch", "zero", "overlap"],
            ],
        )

    @staticmethod
    def _shape(model: str) -> dict[str, int]:
        layers, hidden, heads, seq_len, vocab = _MODELS[model]
        return dict(layers=layers, hidden=hidden, heads=heads, seq_len=seq_len, vocab=vocab)

    def _compute(self) -> StepResult:
        c = self.controls
        return step_time(
            **self._shape(c["model"].value),
            gpu=self._gpu(c["gpu"].value),
            dtype=c["dtype"].value,
            gpus=parse_int("GPUs", c["gpus"].value, maximum=1 << 20),
            tensor_parallel=c["tensor_parallel"].value,
            pipeline_parallel=c["pipeline_parallel"].value,
            schedule=c["schedule"].value,
            chunks=2 if c["schedule"].value == "interleaved" else 1,
            global_batch=parse_int("global batch", c["global_batch"].value, maximum=1 << 24),
            micro_batch=c["micro_batch"].value,
            zero=c["zero"].value,
            overlap=c["overlap"].value,
        )

    def _render(self, result: StepResult, changed: set[str]) -> None:
        r = result
        parts = [
            ("compute (every kernel)", r.compute_s),
            ("tensor-parallel comm", r.tensor_parallel_s),
            ("pipeline sends", r.pipeline_p2p_s),
            ("pipeline bubble", r.bubble_s),
            ("gradient traffic, exposed", r.data_parallel_exposed_s),
            ("waiting for launches", r.launch_exposed_s),
        ]
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td style='text-align:right'>{v * 1e3:.1f} ms</td>"
            f"<td style='text-align:right'>{v / r.step_s:.0%}</td></tr>"
            for k, v in parts
        )
        self.output.value = (
            f"<div class='dlperf-summary'>DP {r.data_parallel} × TP {r.tensor_parallel} × PP "
            f"{r.pipeline_parallel}, {r.micro_batches} micro-batches: step "
            f"<b>{r.step_s * 1e3:.0f} ms</b>, {r.tokens_per_s:,.0f} tokens/s, "
            f"MFU <b class='dlperf-mfu'>{r.mfu:.1%}</b> (model prediction, every kernel); "
            f"memory: <b class='dlperf-fits'>{html.escape(r.feasibility)}</b></div>"
            f"<table class='dlperf-result dlperf-step'>{rows}</table>"
        )
        if self._artists is None:
            self._artists = plot_step_timeline(r, self.view.ax)
            # the legend below the axes never changes: its pixels are kept and pasted
            # (FigureView), not laid out again on every full draw
            self.view.set_dynamic([self._artists.legend])
        else:
            update_step_timeline(self._artists, r)
        self.view.redraw(full=True)
