"""MemoryCalculator: weights, gradients, optimizer states and activations per GPU."""

from __future__ import annotations

from typing import Any

from ..core._validate import describe
from ..core.errors import InvalidParameter
from ..core.gpus import Gpu
from ..core.memory import OPTIMIZERS, PRECISIONS, MemoryResult, training_memory
from ..core.memory import parse_count as _parse
from ..plots.breakdown import plot_memory, update_memory
from ._base import Explorer, dropdown, gpu_dropdown, parse_int, widgets

__all__ = ["MemoryCalculator"]

_NONE = "(none)"


def parse_count(field: str, text: Any) -> float:
    """'7e9', '7B', '350M', '1.5 T' -> a positive number of parameters (a sane range)."""
    value = _parse(str(text), field)
    if not (value > 0 and value < 1e16):
        raise InvalidParameter(
            f"'params' must be a positive number such as 7e9, 7B or 350M (got {describe(text)})"
        )
    return value


def _optional_int(field: str, text: str) -> int | None:
    return None if not str(text).strip() else parse_int(field, text)


class MemoryCalculator(Explorer):
    """Training memory per GPU as a stacked bar against the chosen GPU's memory.

    Controls: parameters, precision, optimizer, checkpointing, gradient accumulation,
    data / tensor / pipeline parallelism and ZeRO stage, and (for activations) the
    transformer's layers, hidden size, sequence length, batch, heads and attention
    implementation (eager keeps the s x s probabilities; SDPA does not). Bytes per
    parameter follow NVIDIA's slides "NN Performance optimization" ("GPU memory").
    ``.result`` is the core's :class:`~dlperf_widgets.core.memory.MemoryResult`.
    """

    result: MemoryResult
    _figsize = (6.4, 2.6)
    _margins = {"left": 0.04, "right": 0.97, "bottom": 0.22, "top": 0.85}  # noqa: RUF012

    def __init__(
        self,
        params: float | str = 7e9,
        *,
        optimizer: str = "adamw",
        precision: str = "mixed-fp16",
        layers: int | None = 32,
        hidden: int | None = 4096,
        seq_len: int | None = 2048,
        batch: int | None = 8,
        heads: int | None = 32,
        checkpointing: str = "none",
        accumulation_steps: int = 1,
        data_parallel: int = 1,
        zero: int = 0,
        tensor_parallel: int = 1,
        pipeline_parallel: int = 1,
        gpu: str | Gpu | None = "A100",
        attention: str = "eager",
    ) -> None:
        super().__init__()
        n = parse_count("params", params)
        training_memory(
            n,
            optimizer=optimizer,
            precision=precision,
            layers=layers,
            hidden=hidden,
            seq_len=seq_len,
            batch=batch,
            heads=heads,
            checkpointing=checkpointing,
            accumulation_steps=accumulation_steps,
            data_parallel=data_parallel,
            zero=zero,
            tensor_parallel=tensor_parallel,
            pipeline_parallel=pipeline_parallel,
            gpu=gpu,
            attention=attention,
        )  # validates the arguments
        if gpu is None:
            gpu_dd, self._custom_gpus = gpu_dropdown("A100")
            gpu_dd.options = [_NONE, *gpu_dd.options]
            gpu_dd.value = _NONE
        else:
            gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
            chosen = gpu_dd.value
            gpu_dd.options = [_NONE, *gpu_dd.options]
            gpu_dd.value = chosen

        def text(name: str, value: Any, width: str = "170px") -> Any:
            return widgets.Text(
                value="" if value is None else str(value),
                description=name,
                continuous_update=False,
                layout=widgets.Layout(width=width),
            )

        def count(name: str, value: int, maximum: int) -> Any:
            return widgets.BoundedIntText(
                value=parse_int(name, value, maximum=maximum),
                min=1,
                max=maximum,
                description=name,
                layout=widgets.Layout(width="170px"),
            )

        controls = {
            "params": text("params", params if isinstance(params, str) else f"{n:g}"),
            "precision": dropdown(
                "precision", list(PRECISIONS), precision, description="precision"
            ),
            "optimizer": dropdown(
                "optimizer", list(OPTIMIZERS), optimizer, description="optimizer"
            ),
            "gpu": gpu_dd,
            "layers": text("layers", layers),
            "hidden": text("hidden", hidden),
            "seq_len": text("seq len", seq_len),
            "batch": text("batch", batch),
            "heads": text("heads", heads),
            "attention": dropdown(
                "attention",
                ["eager", "sdpa", "flash2", "flash1"],
                attention,
                description="attention",
            ),
            "checkpointing": dropdown(
                "checkpointing",
                ["none", "selective", "sqrt", "every"],
                checkpointing,
                description="checkpointing",
            ),
            "accumulation_steps": count("accumulation", accumulation_steps, 1024),
            "data_parallel": count("data par.", data_parallel, 65536),
            "zero": widgets.Dropdown(
                options=[0, 1, 2, 3],
                value=zero,
                description="ZeRO",
                layout=widgets.Layout(width="170px"),
            ),
            "tensor_parallel": count("tensor par.", tensor_parallel, 1024),
            "pipeline_parallel": count("pipeline par.", pipeline_parallel, 1024),
        }
        self._artists: Any = None
        self._setup(
            controls,
            rows=[
                ["params", "precision", "optimizer", "gpu"],
                ["layers", "hidden", "seq_len", "batch", "heads"],
                ["attention", "checkpointing", "accumulation_steps", "zero"],
                ["data_parallel", "tensor_parallel", "pipeline_parallel"],
            ],
        )

    def _compute(self) -> MemoryResult:
        c = self.controls
        g = c["gpu"].value
        return training_memory(
            parse_count("params", c["params"].value),
            optimizer=c["optimizer"].value,
            precision=c["precision"].value,
            layers=_optional_int("layers", c["layers"].value),
            hidden=_optional_int("hidden", c["hidden"].value),
            seq_len=_optional_int("seq len", c["seq_len"].value),
            batch=_optional_int("batch", c["batch"].value),
            heads=_optional_int("heads", c["heads"].value),
            checkpointing=c["checkpointing"].value,
            accumulation_steps=c["accumulation_steps"].value,
            data_parallel=c["data_parallel"].value,
            zero=c["zero"].value,
            tensor_parallel=c["tensor_parallel"].value,
            pipeline_parallel=c["pipeline_parallel"].value,
            gpu=None if g == _NONE else self._gpu(g),
            attention=c["attention"].value,
        )

    def _render(self, result: MemoryResult, changed: set[str]) -> None:
        fits = {True: "fits", False: "does not fit", None: "no GPU chosen"}[result.fits]
        self.output.value = (
            f"<div class='dlperf-summary'>per GPU: <b class='dlperf-per-gpu'>"
            f"{result.per_gpu_bytes / 2**30:.2f}</b> GiB ({fits})</div>" + result._repr_html_()
        )
        view = self.view
        if self._artists is None:
            self._artists = plot_memory(result, view.ax)
            a = self._artists
            view.set_dynamic([*a.parts, a.limit, a.title])
            view.redraw(full=True)
            return
        view.redraw(full=update_memory(self._artists, result))
