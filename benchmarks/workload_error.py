"""The kernel-by-kernel model against published whole-workload measurements, by kind.

Prices every row of ``dlperf_widgets/live/data/workloads/e2e_workloads.csv`` (training
throughput and step times, prefill times, decode rates, attention kernel times, training
memory; each with its source) and prints the median, 90th-percentile and worst relative
error per kind, the rows more than 2x off, and each row with ``--rows``. Also times the pricing of a 96-layer
model's training step (target: under 50 ms).

    python benchmarks/workload_error.py [--rows] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dlperf_widgets.core.workload import LlmSpec, price, workload
from dlperf_widgets.live.workloads import workload_error_report


def _pricing_ms(repeats: int = 20) -> float:
    """Median time to build and price a GPT-3-175B-shaped training step (96 layers)."""
    spec = LlmSpec("gpt-175b", 96, 12288, 96, 96, 128, 49152, 51200, gated_mlp=False)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        w = workload(spec, batch=1, seq=2048, micro_batches=64, tensor_parallel=8,
                     pipeline_parallel=8, data_parallel=8)  # fmt: skip
        price(w, "A100-SXM4-80GB", timing="eager")
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--json", action="store_true", help="print JSON")
    a = ap.parse_args()
    report = workload_error_report()
    ms = _pricing_ms()
    if a.json:
        print(json.dumps({**report.to_dict(), "pricing_96_layers_ms": ms}, indent=2))
        return
    print(report)
    print(f"  pricing a 96-layer training step: {ms:.1f} ms (median of 20)")
    if a.rows:
        print(f"\n  {'id':20} {'kind':9} {'measured':>10} {'model':>10}  measured/model")
        for r in report.rows:
            print(f"  {r.id:20} {r.kind:9} {r.measured:10.4g} {r.predicted:10.4g}  "
                  f"{r.measured_over_predicted:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
