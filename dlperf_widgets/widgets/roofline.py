"""Roofline: several GEMMs on one log-log roofline of a chosen GPU and dtype."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from ..core._validate import describe
from ..core.assumptions import DEFAULT_CONTEXT
from ..core.errors import InvalidParameter
from ..core.gemm import GemmResult, gemm
from ..core.gpus import Gpu
from ..core.results import format_quantity
from ..plots.roofline import fit_points, plot_roofline, set_measured, set_points, update_roof
from ._base import Explorer, context_dropdown, context_note, gpu_dropdown, parse_int, widgets

__all__ = ["Roofline"]

# The two GEMMs of NVIDIA's slides "NN Performance optimization" ("Math and Memory
# bounds"): one memory-bound, one math-bound on V100 in FP16.
DEFAULT_GEMMS = ("8192x128x8192", "8192x8192x8192")
MAX_OPS = 20

_LINE = re.compile(r"^\s*(?:(?P<name>[^:]+):)?\s*(?P<dims>.+?)\s*$")


def _parse_gemms(text: str) -> list[tuple[str, int, int, int]]:
    """Lines of ``[name:] M x N x K`` (``;`` also separates) -> (name, m, n, k)."""
    items = [s for s in re.split(r"[;\n]", text) if s.strip()]
    if not items:
        raise InvalidParameter("'GEMMs' must list at least one GEMM as M x N x K (got nothing)")
    if len(items) > MAX_OPS:
        raise InvalidParameter(f"'GEMMs' must list at most {MAX_OPS} GEMMs (got {len(items)})")
    out = []
    for i, item in enumerate(items, 1):
        match = _LINE.match(item)
        dims = re.split(r"\s*[x×*,]\s*|\s+", match.group("dims").strip()) if match else []
        if len(dims) != 3:
            raise InvalidParameter(
                f"'GEMMs' entry {i} must be M x N x K, e.g. 8192x128x8192 (got {describe(item.strip())})"
            )
        try:
            m, n, k = (parse_int(d, v) for d, v in zip("MNK", dims, strict=False))
        except InvalidParameter as exc:
            raise InvalidParameter(f"'GEMMs' entry {i}: {exc}") from None
        name = (match.group("name") or "").strip() if match else ""
        out.append((name or f"{m}x{n}x{k}", m, n, k))
    return out


def _as_text(gemms: Sequence[Any] | str) -> str:
    if isinstance(gemms, str):
        return gemms
    lines = []
    for g in gemms:
        if isinstance(g, str):
            lines.append(g)
        else:
            lines.append("x".join(str(int(v)) for v in g))
    return "\n".join(lines)


class Roofline(Explorer):
    """Several GEMMs on one roofline of a GPU for one dtype; the ridge point is marked.

    ``gemms`` is a list of ``(M, N, K)`` tuples or ``'[name:] MxNxK'`` strings; the text
    box takes one per line. ``.result`` is the tuple of
    :class:`~dlperf_widgets.core.gemm.GemmResult` shown, in order. With ``traces=True``,
    every shipped measurement of a GEMM on the same GPU in the same dtype is drawn as a
    hollow diamond at its intensity and achieved throughput
    (:func:`dlperf_widgets.live.traces.measured_gemms`): how far real GEMMs sit below the
    datasheet roof.
    """

    result: tuple[GemmResult, ...]

    def __init__(
        self,
        gpu: str | Gpu = "V100",
        dtype: str = "fp16",
        gemms: Sequence[Any] | str = DEFAULT_GEMMS,
        traces: bool = True,
        context: str = DEFAULT_CONTEXT,
    ) -> None:
        super().__init__()
        if not isinstance(traces, bool):
            raise InvalidParameter(f"'traces' must be True or False (got {describe(traces)})")
        self._use_traces = traces
        self._measured: dict[str, Any] = {}
        gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
        g = self._gpu(gpu_dd.value)
        text = _as_text(gemms)
        for _, m, n, k in _parse_gemms(text):  # validate the arguments once, loudly
            gemm(m, n, k, dtype=dtype, gpu=g, context=context)
        controls = {
            "gpu": gpu_dd,
            "dtype": widgets.Dropdown(
                options=g.dtypes(),
                value=gemm(1, 1, 1, dtype=dtype, gpu=g).dtype,
                description="dtype",
            ),
            "gemms": widgets.Textarea(
                value=text,
                description="GEMMs",
                placeholder="one per line: [name:] M x N x K",
                continuous_update=False,
                layout=widgets.Layout(width="360px", height="80px"),
            ),
            # the timing context of the predicted times (core.assumptions.TIMING_CONTEXTS)
            "context": context_dropdown(context),
        }
        self._artists: Any = None
        self._names: list[str] = []
        self._setup(controls, rows=[["gpu", "dtype", "context"], ["gemms"]])

    def _compute(self) -> tuple[GemmResult, ...]:
        c = self.controls
        g = self._gpu(c["gpu"].value)
        parsed = _parse_gemms(c["gemms"].value)
        results = tuple(
            gemm(m, n, k, dtype=c["dtype"].value, gpu=g, context=c["context"].value)
            for _, m, n, k in parsed
        )
        self._labels = [name for name, *_ in parsed]
        self._measured = {}
        if self._use_traces:
            from ..live.traces import measured_gemms

            self._measured = measured_gemms(g, results[0].dtype)
        return results

    @property
    def measured(self) -> dict[str, Any]:
        """The shipped measurements drawn on the roofline (see ``measured_gemms``)."""
        return self._measured

    def _render(self, result: tuple[GemmResult, ...], changed: set[str]) -> None:
        self.output.value = _table_html(result, self._labels)
        meas = self._measured
        count = int(meas["flops"].size) if meas else 0
        if count:
            self.output.value += (
                f"<div class='dlperf-note'>Hollow diamonds: {count} GEMMs measured on a real "
                f"{html.escape(result[0].gpu)} ({html.escape(', '.join(meas['traces']))}): "
                "measurements, not the model. Real GEMMs sit below the datasheet roof.</div>"
            )
        view = self.view
        g = self._gpu(self.controls["gpu"].value)
        labels = [
            f"{name}: {r.arithmetic_intensity:.1f} FLOP/B"
            for name, r in zip(self._labels, result, strict=False)
        ]
        ai = meas["flops"] / meas["bytes"] if count else []
        achieved = meas["flops"] / meas["measured_time_s"] if count else []
        if self._artists is None:
            self._artists = plot_roofline(g, result[0].dtype, view.ax, ops=result, labels=labels)
            set_measured(self._artists, ai, achieved)
            view.set_dynamic(self._dynamic())
            view.redraw(full=True)
            return
        grown = False
        if changed & {"gpu", "dtype"}:
            grown = update_roof(self._artists, g, result[0].dtype)
        grown = fit_points(self._artists, result) or grown
        set_points(self._artists, result, labels)
        set_measured(self._artists, ai, achieved)
        view.set_dynamic(self._dynamic(), keep_background=True)
        view.redraw(full=grown)

    def _dynamic(self) -> list[Any]:
        a = self._artists
        return [
            a.roof,
            a.ridge,
            a.ridge_label,
            a.peak_label,
            a.title,
            a.measured,
            a.errorbars,
            *a.points,
            *a.labels,
        ]


def _table_html(results: Sequence[GemmResult], names: Sequence[str]) -> str:
    r0 = results[0]
    head = (
        f"<div class='dlperf-summary'>{html.escape(r0.gpu)}, {html.escape(r0.dtype)}: ridge "
        f"(ops:byte) at <b>{r0.ops_per_byte:.1f}</b> FLOP/B, peak "
        f"{html.escape(format_quantity(r0.peak_flops_per_s, 'FLOP/s'))}; predicted times for "
        f"{context_note(r0.context)}</div>"
    )
    cols = ("GEMM", "M x N x K", "AI (FLOP/B)", "limiter", "predicted", "time")
    th = "".join(f"<th style='text-align:right;padding:1px 6px'>{c}</th>" for c in cols)
    rows = []
    for name, r in zip(names, results, strict=False):
        cells = (
            name,
            f"{r.m} x {r.n} x {r.k}",
            f"<span class='dlperf-ai'>{r.arithmetic_intensity:.1f}</span>",
            r.limiter,
            format_quantity(r.predicted_flops_per_s, "FLOP/s"),
            format_quantity(r.predicted_time_s, "s"),
        )
        rows.append(
            "<tr>"
            + "".join(
                f"<td style='text-align:right;padding:1px 6px'>{c if i == 2 else html.escape(c)}</td>"
                for i, c in enumerate(cells)
            )
            + "</tr>"
        )
    return (
        f"{head}<table class='dlperf-result dlperf-roofline'><tr>{th}</tr>{''.join(rows)}</table>"
    )
