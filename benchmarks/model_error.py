#!/usr/bin/env python3
"""How far the model's predicted GEMM times are from real GPUs: the headline figures.

    python benchmarks/model_error.py

Runs today's model on every GEMM of every shipped trace (published measurements and the
kit's own recordings, ``dlperf_widgets/live/data/``) and prints, by trace, GPU and dtype and
overall: the median, 90th-percentile and worst relative time error of the model and of the
plain roofline (datasheet peak and bandwidth), and the median of measured / predicted
(above 1: the model is too fast). Then the model's median error by measured-time band, to
show where the remaining error lives. Same figures as ``dlperf reconcile``.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dlperf_widgets.core.gemm import gemm_sweep
from dlperf_widgets.live.traces import list_traces, load_trace, model_error_report

BANDS_US = (0, 10, 50, 200, 1000, np.inf)


def main() -> int:
    report = model_error_report()
    print(report)
    o = report.overall
    print(
        f"\nheadline: model median {o.model_median_error:.1%}, p90 {o.model_p90_error:.1%}; "
        f"plain roofline median {o.roofline_median_error:.1%} "
        f"({o.roofline_median_error / o.model_median_error:.1f}x the model's)"
    )
    measured, errors = [], []
    for name in list_traces():
        tr = load_trace(name)
        for r in tr.rows:
            if r["op"] != "gemm" or not r["m"]:
                continue
            s = gemm_sweep(
                r["m"],
                r["n"],
                r["k"],
                dtype=r["dtype"],
                gpu=tr.model_gpu(),
                batch=r["batch"] or 1,
                beta=r.get("beta") or 0.0,
            )
            t = r["measured_time_s"]
            measured.append(t)
            errors.append(abs(float(s.predicted_time_s) - t) / t)
    us = np.array(measured) * 1e6
    err = np.array(errors)
    print("\nmodel median error by measured time:")
    for lo, hi in itertools.pairwise(BANDS_US):
        sel = (us >= lo) & (us < hi)
        if sel.any():
            print(
                f"  {lo:>5g}-{hi:<5g} us  {int(sel.sum()):>4} GEMMs  median {np.median(err[sel]):.1%}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
