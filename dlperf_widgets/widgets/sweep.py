"""DimensionSweep: predicted time or throughput of a GEMM as one of M, N, K sweeps."""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from ..core._validate import describe
from ..core.assumptions import DEFAULT_CONTEXT
from ..core.errors import InvalidParameter
from ..core.gemm import GemmSweep, gemm_sweep
from ..core.gpus import Gpu
from ..core.results import format_quantity
from ..core.tiles import parse_tile
from ..plots.sweep import QUANTITIES, measured_points, plot_sweep, update_sweep
from ._base import (
    Explorer,
    context_dropdown,
    context_note,
    dropdown,
    gpu_dropdown,
    parse_int,
    widgets,
)

__all__ = ["DimensionSweep"]

# Most sizes one sweep may hold: keeps an update well inside the kit's latency budget.
MAX_POINTS = 20000

PRESETS = {
    "K 4000..4200: alignment (V100)": {
        "dim": "k",
        "start": 4000,
        "stop": 4200,
        "step": 1,
        "m": 1024,
        "n": 1024,
        "k": 4096,
        "gpu": "V100-SXM2-16GB",
        "dtype": "fp16",
    },
    "N 1..4096: tiles and waves (A100)": {
        "dim": "n",
        "start": 1,
        "stop": 4096,
        "step": 1,
        "m": 4096,
        "n": 4096,
        "k": 4096,
        "gpu": "A100-SXM4-80GB",
        "dtype": "fp16",
    },
    "custom": {},
}


def _text(name: str, value: Any, width: str = "150px") -> Any:
    return widgets.Text(
        value=str(value),
        description=name,
        continuous_update=False,
        layout=widgets.Layout(width=width),
    )


class DimensionSweep(Explorer):
    """Predicted time (or throughput) of a GEMM while one dimension sweeps a range.

    K from 4000 to 4200 (V100, M = N = 1024, FP16) shows the alignment dips: sizes that are
    multiples of 8 run at full Tensor Core speed. N from 1 to 4096 (A100, M = K = 4096)
    shows the saw-tooth of tile and wave quantization. The dotted line is the guide's ideal
    (datasheet roofline) time, the solid one the model's prediction; ``log`` (a checkbox)
    draws both axes logarithmic, for sweeps over decades of sizes. ``measured`` overlays
    measured times: a sequence of ``(x, time_s)`` pairs or a dict with ``x`` and ``time_s``
    arrays (see :meth:`set_measured`). Without them, and with ``traces=True``, the shipped
    recorded and published measurements of the same GPU, dtype and fixed sizes are overlaid
    (:func:`dlperf_widgets.live.traces.measured_along`). ``.result`` is the core's
    :class:`~dlperf_widgets.core.gemm.GemmSweep`.
    """

    result: GemmSweep
    _presets = PRESETS

    def __init__(
        self,
        dim: str = "k",
        start: int = 4000,
        stop: int = 4200,
        *,
        step: int = 1,
        m: int = 1024,
        n: int = 1024,
        k: int = 4096,
        dtype: str = "fp16",
        gpu: str | Gpu = "V100",
        tile: str = "auto",
        quantity: str = "time",
        measured: Any = None,
        preset: str | None = None,
        traces: bool = True,
        log: bool = False,
        context: str = DEFAULT_CONTEXT,
    ) -> None:
        super().__init__()
        if not isinstance(traces, bool):
            raise InvalidParameter(f"'traces' must be True or False (got {describe(traces)})")
        if not isinstance(log, bool):
            raise InvalidParameter(f"'log' must be True or False (got {describe(log)})")
        self._use_traces = traces
        self._trace_points: dict[str, Any] | None = None
        values: dict[str, Any] = dict(
            dim=dim, start=start, stop=stop, step=step, m=m, n=n, k=k, gpu=gpu, dtype=dtype
        )
        if preset is not None:
            if preset not in PRESETS:
                from ..core._validate import check_choice

                check_choice("preset", preset, PRESETS)
            values.update(PRESETS[preset])
        else:
            preset = "custom"
        dim_name = str(values["dim"]).lower()
        if dim_name not in ("m", "n", "k"):
            raise InvalidParameter(f"'dim' must be one of m, n, k (got {describe(values['dim'])})")
        if quantity not in QUANTITIES:
            raise InvalidParameter(
                f"'quantity' must be one of time, throughput (got {describe(quantity)})"
            )
        gpu_dd, self._custom_gpus = gpu_dropdown(values["gpu"])
        g = self._gpu(gpu_dd.value)
        self._measured = measured_points(measured)
        controls = {
            "preset": widgets.Dropdown(options=list(PRESETS), value=preset, description="preset"),
            "dim": widgets.Dropdown(
                options=[("M", "m"), ("N", "n"), ("K", "k")],
                value=dim_name,
                description="sweep",
                layout=widgets.Layout(width="160px"),
            ),
            "start": _text("from", values["start"]),
            "stop": _text("to", values["stop"]),
            "step": _text("step", values["step"]),
            "m": _text("M", values["m"]),
            "n": _text("N", values["n"]),
            "k": _text("K", values["k"]),
            "dtype": dropdown("dtype", g.dtypes(), dtype, description="dtype"),
            "gpu": gpu_dd,
            "tile": _text("tile", tile),
            "quantity": widgets.Dropdown(
                options=list(QUANTITIES), value=quantity, description="show"
            ),
            "log": widgets.Checkbox(value=log, description="log axes", indent=False),
            # the timing context of the predicted times (core.assumptions.TIMING_CONTEXTS)
            "context": context_dropdown(context),
        }
        if values["dtype"] in g.dtypes():
            controls["dtype"].value = values["dtype"]
        self._artists: Any = None
        self._setup(
            controls,
            rows=[
                ["preset", "dim", "start", "stop", "step"],
                ["m", "n", "k", "tile"],
                ["dtype", "gpu", "quantity"],
                ["context", "log"],
            ],
        )
        self._sync_disabled()

    def _sync_disabled(self) -> None:
        for name in ("m", "n", "k"):
            self.controls[name].disabled = name == self.controls["dim"].value

    @property
    def measured(self) -> tuple[np.ndarray, np.ndarray]:
        """The overlaid measurements as (x, time in seconds) arrays."""
        return self._measured

    def set_measured(self, measured: Any) -> None:
        """Overlay measured times: ``[(x, time_s), ...]`` or ``{'x': ..., 'time_s': ...}``.

        ``None`` removes them. Bad data raises InvalidParameter (this is a Python call,
        not a text box).
        """
        self._measured = measured_points(measured)
        self.update({"measured"})

    def _react(self, name: str, value: Any) -> None:
        if name in ("dim", "preset"):
            self._sync_disabled()

    def _compute(self) -> GemmSweep:
        c = self.controls
        dim = c["dim"].value
        start = parse_int("from", c["start"].value)
        stop = parse_int("to", c["stop"].value)
        step = parse_int("step", c["step"].value)
        if stop < start:
            raise InvalidParameter(
                f"'to' must be at least 'from' ({start}) (got {describe(c['stop'].value)})"
            )
        count = (stop - start) // step + 1
        if count > MAX_POINTS:
            raise InvalidParameter(
                f"'step' must leave at most {MAX_POINTS:,} sizes between 'from' and 'to' "
                f"(got {count:,})"
            )
        dims = {}
        for name in ("m", "n", "k"):
            if name != dim:
                dims[name] = parse_int(name.upper(), c[name].value)
        tile = c["tile"].value.strip() or "auto"
        parse_tile(tile)
        dims[dim] = np.arange(start, stop + 1, step, dtype=np.int64)
        result = gemm_sweep(
            dims["m"],
            dims["n"],
            dims["k"],
            dtype=c["dtype"].value,
            gpu=self._gpu(c["gpu"].value),
            tile=tile,
            context=c["context"].value,
        )
        self._trace_points = None
        if self._use_traces and not self._measured[0].size:
            from ..live.traces import measured_along

            fixed = {name: (dims[name] if name != dim else 0) for name in ("m", "n", "k")}
            found = measured_along(
                result.gpu, result.dtype, dim, fixed["m"], fixed["n"], fixed["k"], start, stop
            )
            if found["x"].size:
                found["label"] = f"measured ({', '.join(found['traces'])})"
                self._trace_points = found
        return result

    def _render(self, result: GemmSweep, changed: set[str]) -> None:
        c = self.controls
        self.output.value = _summary_html(result, c["dim"].value)
        quantity = c["quantity"].value
        measured: dict[str, Any] | None = None
        if self._measured[0].size:
            measured = {"x": self._measured[0], "time_s": self._measured[1]}
        elif self._trace_points is not None:
            measured = self._trace_points
            self.output.value += (
                f"<div class='dlperf-note'>Diamonds: {self._trace_points['x'].size} "
                f"GEMM(s) measured on a real {html.escape(result.gpu)} "
                f"({html.escape(', '.join(self._trace_points['traces']))}; see "
                "<code>dlperf_widgets.live.traces</code>): measurements, not the model.</div>"
            )
        view = self.view
        log = bool(c["log"].value)
        if self._artists is None:
            self._artists = plot_sweep(
                result, view.ax, quantity=quantity, measured=measured, log=log
            )
            full = True
        else:
            full = update_sweep(
                self._artists, result, quantity=quantity, measured=measured, log=log
            )
        a = self._artists
        # lines, legend and title are redrawn on the kept axes unless an axis moved
        view.set_dynamic(
            [a.band, a.model, a.misaligned, a.ideal, a.measured, a.legend, a.title],
            keep_background=not full,
        )
        view.redraw(full=full)


def _summary_html(s: GemmSweep, dim: str) -> str:
    x = np.broadcast_to(np.asarray(getattr(s, dim)), np.shape(s.predicted_time_s)).ravel()
    t = np.asarray(s.predicted_time_s).ravel()
    aligned = np.broadcast_to(np.asarray(s.alignment_efficiency), t.shape).ravel() >= 1
    fast, slow = int(np.argmin(t)), int(np.argmax(t))
    name = dim.upper()
    return (
        "<div class='dlperf-summary'>"
        f"{len(s):,} sizes of {name}; fastest {name} = <b class='dlperf-fastest'>{x[fast]}</b> "
        f"({html.escape(format_quantity(t[fast], 's'))}), slowest {name} = {x[slow]} "
        f"({html.escape(format_quantity(t[slow], 's'))}); "
        f"{int((~aligned).sum()):,} of {t.size:,} sizes miss the 16-byte alignment; "
        f"predicted times for {context_note(s.context)}. "
        f"Shaded: {_band_note(s)}.</div>"
    )


def _band_note(s: GemmSweep) -> str:
    """What the shaded band rests on: the distinct sentences along the sweep (at most 3)."""
    used = [s.band_basis[i] for i in dict.fromkeys(np.asarray(s.band_index).ravel().tolist())]
    more = f"; and {len(used) - 3} more" if len(used) > 3 else ""
    return html.escape("; ".join(used[:3]) + more)
