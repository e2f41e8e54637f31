"""The residuals error bands are learned from: every shipped GEMM beside today's model.

For each GEMM row of the shipped traces (``live/data/``) the model is run with the trace's
GPU, dtype, beta, timing context and cache state (as :func:`~dlperf_widgets.live.traces.model_error_report` does), and
the row's regime is recorded: the GPU's architecture, the dtype class, what sets the
predicted time (``time_limiter``) and the predicted time. ``tools/make_error_bands.py``
turns them into ``core/data/error_bands.csv`` with :func:`~dlperf_widgets.core.uncertainty.fit_bands`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..core.dtypes import dtype as _dtype
from ..core.uncertainty import dtype_class
from .traces import Trace, list_traces, load_trace, sweep_rows

__all__ = ["trace_residuals"]


def trace_residuals(traces: Iterable[str | Trace] | None = None) -> dict[str, Any]:
    """Arrays, one entry per shipped GEMM measurement: ``trace``, ``gpu``, ``architecture``,
    ``dtype``, ``dtype_class``, ``bound``, ``predicted_time_s``, ``measured_time_s``."""
    chosen = list_traces() if traces is None else list(traces)
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "trace",
            "gpu",
            "architecture",
            "dtype",
            "dtype_class",
            "bound",
            "predicted_time_s",
            "measured_time_s",
        )
    }
    for item in chosen:
        tr = item if isinstance(item, Trace) else load_trace(item)
        g = tr.model_gpu()
        rows = [
            r
            for r in tr.rows
            if r["op"] == "gemm" and r["m"] and r["n"] and r["k"] and r["measured_time_s"]
        ]
        # each row run as reconcile runs it: its own beta, timing context, cache state and
        # activation quantisation (traces.sweep_rows)
        for idx, dt, s in sweep_rows(rows, g):
            d = _dtype(dt)
            unit = g.unit_for(d) if g.supports(d) else "cuda"
            cols["trace"] += [tr.name] * len(idx)
            cols["gpu"] += [g.name] * len(idx)
            cols["architecture"] += [g.architecture] * len(idx)
            cols["dtype"] += [d.name] * len(idx)
            cols["dtype_class"] += [dtype_class(unit, d.name)] * len(idx)
            cols["bound"] += np.asarray(s.time_limiter).astype(str).tolist()
            cols["predicted_time_s"] += np.asarray(s.predicted_time_s, dtype=float).tolist()
            cols["measured_time_s"] += [float(rows[i]["measured_time_s"]) for i in idx]
    out: dict[str, Any] = {k: np.asarray(v) for k, v in cols.items()}
    out["predicted_time_s"] = out["predicted_time_s"].astype(np.float64)
    out["measured_time_s"] = out["measured_time_s"].astype(np.float64)
    return out
