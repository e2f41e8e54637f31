"""Speed of the vectorised core: how long the GEMM model takes for many shapes at once.

Run: python benchmarks/bench_core.py [--shapes 1000000] [--repeats 5]
Prints the median and best wall time per call and the time per shape.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dlperf_widgets.core import gemm, gemm_sweep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    m = rng.integers(1, 16384, args.shapes)
    n = rng.integers(1, 16384, args.shapes)
    k = rng.integers(1, 16384, args.shapes)

    cases = {
        "gemm_sweep, tile=auto (8 tiles searched)": dict(tile="auto"),
        "gemm_sweep, tile=256x128": dict(tile="256x128"),
    }
    print(f"{args.shapes:,} random GEMM shapes on A100, fp16; {args.repeats} repeats")
    for label, kw in cases.items():
        gemm_sweep(m[:1000], n[:1000], k[:1000], gpu="A100", **kw)  # warm-up
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            gemm_sweep(m, n, k, gpu="A100", **kw)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        print(
            f"  {label:42s} median {med * 1e3:7.1f} ms  best {min(times) * 1e3:7.1f} ms"
            f"  ({med / args.shapes * 1e9:.0f} ns/shape)"
        )

    t0 = time.perf_counter()
    for i in range(1000):
        gemm(int(m[i]), int(n[i]), int(k[i]), gpu="A100")
    per = (time.perf_counter() - t0) / 1000
    print(f"  {'gemm() scalar, with findings':42s} {per * 1e6:7.1f} us per call")


if __name__ == "__main__":
    main()
