#!/usr/bin/env python3
"""Fit the time model's physical constants to the shipped traces, and print the fit.

    python benchmarks/fit_calibration.py

For each architecture with a shipped trace, the model is run once with datasheet rates
(math and memory fractions 1, no overhead), which gives each GEMM's math time (tile, wave,
shape and alignment effects included) and memory time. The prediction with constants
(f_math per dtype, f_memory and the kernel overhead per architecture, the overlap exponent
p for every GPU) is then

    overhead + overlap(math / f_math, memory / f_memory; p)

and a grid search picks the constants with the least mean |log(predicted / measured)|
(capped at 1, so one odd row cannot pull the fit). These are the only numbers fitted: a
handful of constants per architecture, never a measured shape. The result is printed next
to the values in ``dlperf_widgets/core/data/achievable.csv``; copy them there by hand (with
the trace they were fitted to) when the traces change.

The fit ignores that the best tile can change when the constants change (it keeps the tiles
chosen at datasheet rates); ``benchmarks/model_error.py`` measures the real model.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dlperf_widgets.core.calibration import achievable
from dlperf_widgets.core.gemm import gemm_sweep
from dlperf_widgets.live.traces import list_traces, load_trace

P_GRID = (1.5, 2.0, 3.0, 4.0, np.inf)
MATH_GRID = np.round(np.arange(0.50, 1.0001, 0.01), 2)
MEMORY_GRID = np.round(np.arange(0.50, 1.0001, 0.05), 2)
OVERHEAD_GRID_US = np.arange(1.0, 10.01, 0.5)


def _overlap(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    if np.isinf(p):
        return np.maximum(a, b)
    return (a**p + b**p) ** (1.0 / p)


def _datasheet_times(trace_name: str) -> dict[str, tuple[np.ndarray, ...]]:
    """Per dtype: measured time, math and memory time at datasheet rates, and the ratio
    the achievable constants in force scale them by (undone here)."""
    tr = load_trace(trace_name)
    g = tr.model_gpu()
    out = {}
    for dt in sorted({r["dtype"] for r in tr.rows}):
        rows = [r for r in tr.rows if r["dtype"] == dt and r["op"] == "gemm"]
        m, n, k, b = (np.array([r[c] or 1 for r in rows]) for c in ("m", "n", "k", "batch"))
        beta = float(rows[0].get("beta") or 0.0)
        s = gemm_sweep(m, n, k, batch=b, dtype=dt, gpu=g, beta=beta)
        cal = achievable(g, dt)
        math = np.asarray(s.math_time_s) * cal.math_fraction
        memory = np.asarray(s.memory_time_s) * cal.memory_fraction
        measured = np.array([r["measured_time_s"] for r in rows])
        out[dt] = (measured, math, memory)
    return out


def _score(pred: np.ndarray, measured: np.ndarray) -> float:
    return float(np.mean(np.minimum(np.abs(np.log(pred / measured)), 1.0)))


def _math_bound(math: np.ndarray, memory: np.ndarray) -> np.ndarray:
    """Long, clearly math-bound GEMMs: these alone say what fraction of peak math sustains."""
    return (math > 2 * memory) & (math > 20e-6)


def fit_trace(data: dict[str, tuple[np.ndarray, ...]], p: float) -> tuple[float, dict]:
    """Coordinate descent: math fraction per dtype from the long math-bound GEMMs, then the
    memory fraction and kernel overhead from every GEMM; repeated until it settles."""
    picks = {dt: 0.8 for dt in data}
    f_mem, t0 = 0.8, 5e-6
    for _ in range(4):
        for dt, (measured, math, memory) in data.items():
            sel = _math_bound(math, memory)
            if not sel.any():
                continue
            scores = [
                _score(t0 + _overlap(math[sel] / fm, memory[sel] / f_mem, p), measured[sel])
                for fm in MATH_GRID
            ]
            picks[dt] = float(MATH_GRID[int(np.argmin(scores))])
        best = None
        for fmem in MEMORY_GRID:
            for t in OVERHEAD_GRID_US * 1e-6:
                total = sum(
                    _score(t + _overlap(math / picks[dt], memory / fmem, p), measured)
                    * len(measured)
                    for dt, (measured, math, memory) in data.items()
                )
                if best is None or total < best[0]:
                    best = (total, float(fmem), float(t))
        assert best is not None
        _, f_mem, t0 = best
    total = sum(
        _score(t0 + _overlap(math / picks[dt], memory / f_mem, p), measured) * len(measured)
        for dt, (measured, math, memory) in data.items()
    )
    return total, {"p": p, "memory_fraction": f_mem, "overhead_s": t0, "math_fraction": picks}


def main() -> int:
    data = {name: _datasheet_times(name) for name in list_traces()}
    # One overlap exponent for every GPU: the one with the least total error.
    results = {p: {name: fit_trace(d, p) for name, d in data.items()} for p in P_GRID}
    best_p = min(results, key=lambda p: sum(r[0] for r in results[p].values()))
    for p in P_GRID:
        total = sum(r[0] for r in results[p].values())
        print(f"overlap p = {p}: total score {total:.1f}{'  <- chosen' if p == best_p else ''}")
    for name, (_, fitted) in results[best_p].items():
        f_mem, t0 = fitted["memory_fraction"], fitted["overhead_s"]
        print(f"{name}: memory_fraction = {f_mem:.2f}, kernel overhead = {t0 * 1e6:.1f} us")
        for dt, (measured, math, memory) in data[name].items():
            fm = fitted["math_fraction"][dt]
            pred = t0 + _overlap(math / fm, memory / f_mem, best_p)
            err = np.abs(pred - measured) / measured
            print(
                f"  {dt:5s} math_fraction = {fm:.2f}   median error {np.median(err):.1%}, "
                f"p90 {np.percentile(err, 90):.1%} ({len(err)} GEMMs, "
                f"{int(_math_bound(math, memory).sum())} long math-bound)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
