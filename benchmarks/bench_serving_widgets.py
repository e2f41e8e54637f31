"""Update times of ServingExplorer and TraceExplorer (ms per control change, p50 and p95).

    MPLBACKEND=Agg python benchmarks/bench_serving_widgets.py [--repeat 30]

Measured on this machine, in one process, without a browser: the time from setting a control's
value to the new PNG being ready (core call, plot update, PNG encoding).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

os.environ.setdefault("MPLBACKEND", "Agg")

from dlperf_widgets.widgets import ServingExplorer, TraceExplorer


def timed(widget, control: str, values: list) -> np.ndarray:  # type: ignore[no-untyped-def]
    out = []
    for v in values:
        t0 = time.perf_counter()
        widget.controls[control].value = v
        out.append(time.perf_counter() - t0)
        assert not widget.error, widget.error
    return np.array(out) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    n = ap.parse_args().repeat
    cases = [
        ("ServingExplorer: type a TPOT target", ServingExplorer, "tpot_ms",
         [str(30 + i) for i in range(n)]),
        ("ServingExplorer: type a chunk size", ServingExplorer, "chunk",
         [str(128 + 32 * i) for i in range(n)]),
        ("ServingExplorer: type a prompt length", ServingExplorer, "prompt_len",
         [str(512 + 64 * i) for i in range(n)]),
        ("TraceExplorer: switch traces (cached after the first)", TraceExplorer, "trace",
         ["v100_cnn_training", "distributed_recsys_rank0", "a100_alexnet_forward"] * (n // 3)),
    ]  # fmt: skip
    for label, factory, control, values in cases:
        w = factory()
        ms = timed(w, control, values)
        print(
            f"{label:55} p50 {np.percentile(ms, 50):6.1f} ms  p95 {np.percentile(ms, 95):6.1f} ms"
        )
        w.close()


if __name__ == "__main__":
    main()
