"""Record the standard measurement suite on the present NVIDIA GPU as a trace CSV.

    python benchmarks/record_gpu.py                 # full suite -> dlperf_widgets/live/data/
    python benchmarks/record_gpu.py --quick         # smaller sizes, fewer points
    python benchmarks/record_gpu.py --dry-run       # list the suite (works without a GPU)

The suite: square GEMMs; a K sweep across multiples of 8 (M = N = 4096); an N sweep across
the model's first wave boundary for this GPU (M = K = 4096); linear layers forward and
backward; 3x3 convolutions in NCHW and NHWC (``channels_last``); each in fp16, bf16 and
tf32 where the suite says so. Every row is timed with ``dlperf_widgets.live.timing``
(CUDA events, warm-up, L2 flushed between repeats, median) and stored beside the model's
prediction and a plain roofline's. The file starts with its provenance: GPU, driver, CUDA,
cuDNN and torch versions, and the date.

Afterwards the script prints (1) the model's median and worst relative error against the
measurements beside those of a plain roofline (max(FLOPs / peak, bytes / bandwidth), no
tile or wave effects), and (2) the 8192^3 bf16 GEMM rate of the kit's timer beside
``triton.testing.do_bench`` on the same GEMM, when triton is importable.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from dlperf_widgets.core.gemm import gemm_sweep
from dlperf_widgets.core.gpus import Gpu, gpu
from dlperf_widgets.core.layers import layer
from dlperf_widgets.live.reconcile import reconcile_gemm
from dlperf_widgets.live.traces import load_trace, reconcile_trace, write_trace

DATA = Path(__file__).resolve().parent.parent / "dlperf_widgets" / "live" / "data"
DTYPES = ("fp16", "bf16", "tf32")


def n_sweep_values(
    g: Gpu, m: int = 4096, k: int = 4096, step: int = 64, half_width: int = 16
) -> list[int]:
    """N values around the first size where the model's wave count goes from 1 to 2."""
    ns = np.arange(step, 16384 + step, step)
    model = gemm_sweep(m, ns, k, dtype="fp16", gpu=g)
    waves = np.asarray(model.waves)
    jump = int(np.argmax(waves > waves[0])) if (waves > waves[0]).any() else len(ns) // 2
    lo, hi = max(0, jump - half_width), min(len(ns), jump + half_width)
    return [int(x) for x in ns[lo:hi]]


def build_suite(g: Gpu, quick: bool = False) -> list[dict[str, Any]]:
    """The measurements to make, as keyword dicts (``suite``, ``op`` and the op's options)."""
    items: list[dict[str, Any]] = []
    squares = (1024, 2048, 4096, 8192) if quick else (1024, 2048, 4096, 8192, 16384)
    for dt in DTYPES:
        for s in squares:
            items.append({"suite": "square", "op": "gemm", "dtype": dt, "m": s, "n": s, "k": s})
    k_step = 4 if quick else 1
    for kk in range(4064, 4129, k_step):
        items.append(
            {"suite": "k_sweep", "op": "gemm", "dtype": "fp16", "m": 4096, "n": 4096, "k": kk}
        )
    ns = n_sweep_values(g)
    for nn in ns[:: 2 if quick else 1]:
        items.append(
            {"suite": "n_sweep", "op": "gemm", "dtype": "fp16", "m": 4096, "n": nn, "k": 4096}
        )
    linears = ((4096, 4096, 4096), (8192, 1024, 4096)) if not quick else ((4096, 4096, 4096),)
    for dt in DTYPES:
        for batch, inputs, outputs in linears:
            for phase in ("forward", "backward"):
                items.append(
                    {
                        "suite": "linear",
                        "op": "linear",
                        "dtype": dt,
                        "phase": phase,
                        "batch": batch,
                        "inputs": inputs,
                        "outputs": outputs,
                    }
                )
    convs = ((64, 64, 64, 56), (64, 256, 256, 14)) if not quick else ((32, 64, 64, 56),)
    for dt in DTYPES:
        for batch, cin, cout, hw in convs:
            for layout in ("nchw", "nhwc"):
                items.append(
                    {
                        "suite": "conv2d",
                        "op": "conv2d",
                        "dtype": dt,
                        "phase": "forward",
                        "batch": batch,
                        "in_channels": cin,
                        "out_channels": cout,
                        "height": hw,
                        "width": hw,
                        "kernel_size": 3,
                        "padding": 1,
                        "layout": layout,
                    }
                )
    return items


def _driver_version() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def provenance(info: Any, torch: Any, repeats: int, warmup: int) -> dict[str, str]:
    return {
        "gpu": info.model_gpu or "",
        "device_name": info.name,
        "compute_capability": info.compute_capability,
        "sms": str(info.sms),
        "match": info.match,
        "driver": _driver_version(),
        "cuda": str(torch.version.cuda),
        "cudnn": str(torch.backends.cudnn.version()),
        "torch": str(torch.__version__),
        "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "timer": (
            f"dlperf_widgets.live.timing: CUDA events, {warmup} warm-up and {repeats} timed "
            f"runs, median, L2 flushed between runs"
        ),
    }


def _layer_roofline(
    kind: str, phase: str, opts: dict[str, Any], dt: str, g: Gpu
) -> tuple[float, float]:
    """(model time, plain roofline time) of a layer pass: the roofline sums, over the
    pass's operations, max(FLOPs / peak, bytes / bandwidth)."""
    res = layer(kind, dtype=dt, gpu=g, findings=False, **opts)
    passes = [p for p in res.passes if (p.pass_ == "forward") == (phase == "forward")]
    peak, bw = g.peak_flops(dt), g.memory_bandwidth_bytes_per_s
    roof = sum(max(p.flops / peak, p.bytes / bw) for p in passes)
    model = res.forward_time_s if phase == "forward" else res.backward_time_s
    return model, roof


def measure(item: dict[str, Any], g: Gpu, repeats: int, warmup: int) -> dict[str, Any]:
    from dlperf_widgets.live.timing import time_gemm, time_layer

    row: dict[str, Any] = {
        "suite": item["suite"],
        "op": item["op"],
        "dtype": item["dtype"],
        "repeats": repeats,
        "warmup": warmup,
    }
    if item["op"] == "gemm":
        t = time_gemm(
            item["m"],
            item["n"],
            item["k"],
            dtype=item["dtype"],
            device="cuda",
            repeats=repeats,
            warmup=warmup,
        )
        rec = reconcile_gemm(item["m"], item["n"], item["k"], dtype=item["dtype"], gpu=g)
        row.update(
            phase="forward",
            m=t.m,
            n=t.n,
            k=t.k,
            batch=t.batch,
            predicted_time_s=rec.predicted_time_s,
            roofline_time_s=rec.roofline_time_s,
        )
    else:
        opts = {k: v for k, v in item.items() if k not in ("suite", "op", "dtype", "phase")}
        t = time_layer(
            item["op"],
            dtype=item["dtype"],
            device="cuda",
            phase=item["phase"],
            repeats=repeats,
            warmup=warmup,
            **opts,
        )
        model, roof = _layer_roofline(item["op"], item["phase"], opts, item["dtype"], g)
        row.update(
            phase=item["phase"],
            params=";".join(f"{k}={v}" for k, v in opts.items()),
            predicted_time_s=model,
            roofline_time_s=roof,
        )
    row.update(
        measured_time_s=t.measured_time_s,
        flops=t.flops,
        bytes=t.bytes,
        measured_flops_per_s=t.measured_flops_per_s,
    )
    return row


def compare_with_do_bench(torch: Any, repeats: int, warmup: int) -> None:
    """The kit's timer and triton.testing.do_bench on the 8192^3 bf16 GEMM."""
    from dlperf_widgets.live.timing import time_gemm

    try:
        from triton.testing import do_bench
    except ImportError:
        print("triton is not importable: skipping the do_bench comparison")
        return
    size = 8192
    ours = time_gemm(
        size,
        size,
        size,
        dtype="bf16",
        device="cuda",
        repeats=max(repeats, 50),
        warmup=max(warmup, 10),
    )
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(size, size, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(size, size, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
    ms = do_bench(lambda: torch.matmul(a, b, out=c), warmup=25, rep=200, return_mode="median")
    theirs = 2.0 * size**3 / (ms / 1e3)
    diff = ours.measured_flops_per_s / theirs - 1.0
    print(
        f"8192^3 bf16 GEMM: dlperf timer {ours.measured_flops_per_s / 1e12:.1f} TFLOP/s, "
        f"triton do_bench {theirs / 1e12:.1f} TFLOP/s ({diff:+.1%})"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--out", type=Path, default=None, help="CSV path (default: the package data folder)"
    )
    p.add_argument("--quick", action="store_true", help="smaller suite")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--dry-run", action="store_true", help="print the suite and exit")
    p.add_argument("--gpu", default=None, help="database GPU for --dry-run (default H100)")
    args = p.parse_args(argv)

    if args.dry_run:
        g = gpu(args.gpu or "H100")
        suite = build_suite(g, args.quick)
        for item in suite:
            print(" ".join(f"{k}={v}" for k, v in item.items()))
        print(f"{len(suite)} measurements planned for {g.name}")
        return 0

    import torch

    from dlperf_widgets.live.device import detect_device

    if not torch.cuda.is_available():
        print("record_gpu.py needs a CUDA GPU (try --dry-run to see the suite)", file=sys.stderr)
        return 2
    info = detect_device("cuda")
    if info.gpu is None:
        print(f"the model has no entry for {info.name}; cannot record predictions", file=sys.stderr)
        return 2
    g = info.gpu
    suite = build_suite(g, args.quick)
    print(f"{info.description}: {len(suite)} measurements")
    rows = []
    start = time.perf_counter()
    for i, item in enumerate(suite, 1):
        row = measure(item, g, args.repeats, args.warmup)
        rows.append(row)
        err = (
            f"{row['measured_time_s'] / row['predicted_time_s'] - 1:+.1%}"
            if row.get("predicted_time_s")
            else "-"
        )
        print(
            f"[{i}/{len(suite)}] {item['suite']:<8} {item['dtype']:<5} "
            f"{row['measured_time_s'] * 1e3:9.4f} ms  measured/model-1 {err}",
            flush=True,
        )
    slug = re.sub(r"[^a-z0-9]+", "_", (info.model_gpu or info.name).lower()).strip("_")
    out = args.out or DATA / f"{slug}_{_dt.date.today():%Y%m%d}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_trace(out, provenance(info, torch, args.repeats, args.warmup), rows)
    print(f"wrote {out} ({len(rows)} rows, {time.perf_counter() - start:.0f} s)")

    trace = load_trace(out)
    for suite_name in [None, *trace.suites]:
        rec = reconcile_trace(trace, suite=suite_name)
        if rec.summary is None:
            continue
        s = rec.summary
        print(
            f"{suite_name or 'all':<8} n={s.count:<3} model error median {s.model_median_error:.1%} "
            f"worst {s.model_worst_error:.1%} | plain roofline median "
            f"{s.roofline_median_error:.1%} worst {s.roofline_worst_error:.1%}"
        )
    compare_with_do_bench(torch, args.repeats, args.warmup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
