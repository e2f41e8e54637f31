#!/usr/bin/env python3
"""How far the model's predicted GEMM times are from real GPUs: the headline figures.

    python benchmarks/model_error.py

Runs today's model on every GEMM of every shipped trace (published measurements and the
kit's own recordings, ``dlperf_widgets/live/data/``) and prints, by trace, GPU and dtype and
overall: the median, 90th-percentile and worst relative time error of the model and of the
plain roofline (datasheet peak and bandwidth), and the median of measured / predicted
(above 1: the model is too fast). Then the model's median error by measured-time band, to
show where the remaining error lives, and by GPU, dtype and timing context. Every row is
predicted in its own timing context and cache state. Last, how often the model picks the
tile cuBLAS launched (the NeuSight rows name it). Same figures as ``dlperf reconcile``.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dlperf_widgets.live.traces import (
    list_traces,
    load_trace,
    model_error_report,
    predict_rows,
    tile_agreement,
)

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
    measured, predicted, labels = [], [], []
    for name in list_traces():
        tr = load_trace(name)
        g = tr.model_gpu()
        rows = [r for r in tr.rows if r["op"] == "gemm" and r["m"]]
        predicted += predict_rows(rows, g)[0].tolist()
        measured += [r["measured_time_s"] for r in rows]
        labels += [(g.name, r["dtype"], r["context"]) for r in rows]
    t = np.array(measured)
    err = np.abs(np.array(predicted) - t) / t
    us = t * 1e6

    def line(label: str, sel: np.ndarray) -> None:
        print(
            f"  {label:<40} {int(sel.sum()):>5} GEMMs  median {np.median(err[sel]):6.1%}  "
            f"p90 {np.percentile(err[sel], 90):6.1%}"
        )

    print("\nmodel error by measured time:")
    for lo, hi in itertools.pairwise(BANDS_US):
        sel = (us >= lo) & (us < hi)
        if sel.any():
            line(f"{lo:g}-{hi:g} us", sel)
    print()
    print(tile_agreement())
    for i, what in enumerate(("GPU", "dtype", "timing context")):
        print(f"\nmodel error by {what}:")
        keys = np.array([lab[i] for lab in labels])
        for key in dict.fromkeys(keys.tolist()):
            line(str(key), keys == key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
