#!/usr/bin/env python3
"""Write dlperf_widgets/core/data/error_bands.csv: the model's error bands, from the traces.

    python tools/make_error_bands.py            # write the file
    python tools/make_error_bands.py --check    # exit 1 if the file differs from a rebuild

Runs today's model on every GEMM of every shipped trace (``dlperf_widgets/live/data/``,
:func:`dlperf_widgets.live.error_bands.trace_residuals`), groups the ratios measured /
predicted by regime (architecture, dtype class, what sets the predicted time, predicted-time
band) and writes the ends of each regime's band and its median, with
:func:`dlperf_widgets.core.uncertainty.fit_bands`. Run it again whenever the model, its
calibrated constants or the shipped traces change; ``tests/core/test_uncertainty.py``
fails while the file is stale. A local calibration in the user's configuration folder is
never used here: the bands describe the shipped model.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# The bands describe the shipped constants: hide any local calibration of this machine.
os.environ["DLPERF_CONFIG_DIR"] = tempfile.mkdtemp(prefix="dlperf-bands-")

from dlperf_widgets import __version__  # noqa: E402
from dlperf_widgets.core.uncertainty import (  # noqa: E402
    COVERAGE,
    MIN_ROWS,
    SIZE_BANDS,
    band_rows_csv,
    fit_bands,
)
from dlperf_widgets.live.error_bands import trace_residuals  # noqa: E402

OUT = ROOT / "dlperf_widgets" / "core" / "data" / "error_bands.csv"
# The model's inputs whose change makes the bands stale; their digest is in the header.
MODEL_FILES = (
    "dlperf_widgets/core/gemm.py",
    "dlperf_widgets/core/calibration.py",
    "dlperf_widgets/core/assumptions.py",
    "dlperf_widgets/core/tiles.py",
    "dlperf_widgets/core/data/achievable.csv",
    "dlperf_widgets/core/data/gpus.csv",
    "dlperf_widgets/core/data/architectures.csv",
)


def model_digest() -> str:
    h = hashlib.sha256()
    for name in MODEL_FILES:
        path = ROOT / name
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()[:12]


def build() -> str:
    """The full text of error_bands.csv for today's model and traces."""
    res = trace_residuals()
    rows = fit_bands(
        res["architecture"],
        res["dtype_class"],
        res["bound"],
        res["predicted_time_s"],
        res["measured_time_s"],
        res["gpu"],
    )
    traces = sorted(set(res["trace"].tolist()))
    counts = ", ".join(f"{t} ({int((res['trace'] == t).sum())} GEMMs)" for t in traces)
    lo, hi = (1 - COVERAGE) / 2 * 100, (1 + COVERAGE) / 2 * 100
    head = f"""\
# Error bands of the GEMM model: how measured times scatter around predicted ones.
#
# Made by: python tools/make_error_bands.py (do not edit by hand; run it again whenever the
# model, data/achievable.csv or the shipped traces change).
# coverage: {COVERAGE * 100:.0f} % (the chance, at least, that a new measurement of a regime falls
#   inside its band: the ends are the order statistics of measured / predicted of rank
#   floor((n + 1) x {lo / 100:.2f}) and ceil((n + 1) x {hi / 100:.2f}), n the regime's rows, near its
#   {lo:.0f}th and {hi:.0f}th percentiles; see core/uncertainty.py band_limits)
# traces: {counts}
# model: dlperf_widgets {__version__}, digest {model_digest()} of {", ".join(Path(f).name for f in MODEL_FILES)}
# minimum rows per regime: {MIN_ROWS}
#
# Columns:
#   architecture   GPU architecture of the traced GPUs (architectures.csv); 'widest' is the
#                  band used where no row applies (no trace of the architecture in that
#                  dtype class, or a local calibration): the lowest low_ratio and the highest
#                  high_ratio of every row above it
#   dtype_class    tensor16 (fp16, bf16 on Tensor Cores), tensor32 (tf32), tensor8 (fp8,
#                  int8), cuda (CUDA cores); '*' any
#   bound          what sets the predicted time (the model's time_limiter): math, memory,
#                  latency (the fixed cost per kernel); '*' (with size '*'): the regimes of
#                  the class with fewer than the minimum rows, pooled (every row of the class
#                  when those are too few themselves)
#   size_band      the predicted time: {", ".join(SIZE_BANDS)}; '*' any
#   rows           measurements in the regime
#   low_ratio high_ratio   the band's ends, as ratios measured / predicted (see coverage)
#   median_ratio   the regime's median measured / predicted
#   gpus           the traced GPUs whose rows make the band
#
# Lookup (core/uncertainty.py): (architecture, dtype_class, bound, size_band), else the
# class's ('*', '*') row, else the 'widest' row.
"""
    return head + band_rows_csv(rows)


def main(argv: list[str]) -> int:
    text = build()
    if "--check" in argv:
        same = OUT.is_file() and OUT.read_text("utf-8") == text
        print("error_bands.csv is up to date" if same else "error_bands.csv is stale")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
