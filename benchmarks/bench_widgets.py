"""Latency of every widget: time from a control change to the finished new output.

Each case moves one control of a widget many times, the way a learner drags a slider or
types into a box. A control change runs the whole update synchronously inside the change
notification (core call, HTML, figure redraw, PNG encode and the Image widget's new
value), so the time around the assignment is the time to the finished output. The kernel
then only has to send the message. Run headless:

    MPLBACKEND=Agg python benchmarks/bench_widgets.py [--repeat 40]

and read p50 / p95 per widget (target: p95 <= 50 ms) and how many updates needed a full
redraw versus a redraw of the changed artists only. 'cpu p95' is the CPU time of the
update itself: when it is far below the wall-clock p95, other processes were competing
for the CPU while the benchmark ran (load average is printed too).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("MPLBACKEND", "Agg")

from dlperf_widgets.core.fusion import CHAINS as FUSION_CHAINS
from dlperf_widgets.core.gpus import gpu, gpu_names
from dlperf_widgets.live.profile import shipped_profiles
from dlperf_widgets.widgets import (
    BlockFormatExplorer,
    DimensionSweep,
    FormatExplorer,
    Fp8ScalingExplorer,
    FusionExplorer,
    GemmExplorer,
    GpuCard,
    InferenceExplorer,
    LayerChecklist,
    LossScalingExplorer,
    MemoryCalculator,
    NetworkBreakdown,
    PipelineExplorer,
    Roofline,
    ServingExplorer,
    SparsityExplorer,
    StepTimeCalculator,
    TileExplorer,
    TraceExplorer,
    WaveExplorer,
)


def _cycle(values: Sequence[Any], n: int) -> list[Any]:
    return [values[i % len(values)] for i in range(n)]


def cases(n: int) -> list[tuple[str, Callable[[], Any], list[tuple[str, Any]]]]:
    """(label, widget factory, [(control, value), ...]) for every widget."""
    names = gpu_names()
    a100, v100 = gpu("A100").name, gpu("V100").name
    return [
        (
            "GemmExplorer: drag N",
            lambda: GemmExplorer(gpu="V100"),
            [("n", 64 + 97 * i) for i in range(n)],
        ),
        (
            "GemmExplorer: drag K",
            lambda: GemmExplorer(gpu="V100"),
            [("k", 4000 + i) for i in range(n)],
        ),
        (
            "GemmExplorer: pick GPU",
            lambda: GemmExplorer(gpu="V100"),
            [("gpu", g) for g in _cycle(names, n)],
        ),
        (
            "GemmExplorer: pick dtype",
            lambda: GemmExplorer(gpu="A100"),
            [("dtype", d) for d in _cycle(["fp16", "tf32", "fp32", "bf16", "int8", "fp64"], n)],
        ),
        (
            "GemmExplorer: type tile",
            lambda: GemmExplorer(gpu="A100"),
            [("tile", t) for t in _cycle(["256x128", "128x128", "abc", "64x64", "auto"], n)],
        ),
        ("GpuCard: pick GPU", lambda: GpuCard("V100"), [("gpu", g) for g in _cycle(names, n)]),
        (
            "GpuCard: pick comparison",
            lambda: GpuCard("A100"),
            [("compare", g) for g in _cycle(names, n)],
        ),
        ("Roofline: pick GPU", lambda: Roofline("V100"), [("gpu", g) for g in _cycle(names, n)]),
        (
            "Roofline: edit GEMMs",
            lambda: Roofline("V100"),
            [
                ("gemms", f"8192x{64 * (i + 1)}x8192\n4096x{i + 1}x1024\n8192x8192x8192")
                for i in range(n)
            ],
        ),
        ("TileExplorer: drag M", lambda: TileExplorer(), [("m", 100 + 37 * i) for i in range(n)]),
        (
            "TileExplorer: pick tile",
            lambda: TileExplorer(m=3000, n=2000),
            [("tile", t) for t in _cycle(["256x128", "128x256", "128x128", "64x64", "128x64"], n)],
        ),
        (
            "WaveExplorer: drag SMs",
            lambda: WaveExplorer(),
            [("sms", 1 + (i % 80)) for i in range(n)],
        ),
        (
            "WaveExplorer: drag M (A100)",
            lambda: WaveExplorer("A100, 4096 x 4096, 256x128"),
            [("m", 1024 + 256 * i) for i in range(n)],
        ),
        (
            "WaveExplorer: toast slices",
            lambda: WaveExplorer("toast puzzle"),
            [("slices", 1 + (i % 12)) for i in range(n)],
        ),
        (
            "DimensionSweep: K sweep, type 'to'",
            lambda: DimensionSweep(),
            [("stop", str(4100 + 10 * i)) for i in range(n)],
        ),
        (
            "DimensionSweep: K sweep, type M",
            lambda: DimensionSweep(),
            [("m", str(512 + 64 * i)) for i in range(n)],
        ),
        (
            "DimensionSweep: N 1..4096, type K",
            lambda: DimensionSweep(preset="N 1..4096: tiles and waves (A100)"),
            [("k", str(1024 + 128 * i)) for i in range(n)],
        ),
        (
            "DimensionSweep: N 1..4096, pick GPU",
            lambda: DimensionSweep(preset="N 1..4096: tiles and waves (A100)"),
            [("gpu", g) for g in _cycle([a100, v100, gpu("H100").name, gpu("T4").name], n)],
        ),
        (
            "LayerChecklist: type batch",
            lambda: LayerChecklist(),
            [("opt:batch", str(256 + 8 * i)) for i in range(n)],
        ),
        (
            "LayerChecklist: type conv channels",
            lambda: LayerChecklist("conv2d"),
            [("opt:in_channels", str(3 + i)) for i in range(n)],
        ),
        (
            "FormatExplorer: type a value",
            lambda: FormatExplorer(),
            [("value", f"{1.7**i:g}") for i in range(-n // 2, n - n // 2)],
        ),
        (
            "LossScalingExplorer: drag scale",
            lambda: LossScalingExplorer(),
            [("log2_scale", i % 30) for i in range(n)],
        ),
        (
            "MemoryCalculator: data parallel",
            lambda: MemoryCalculator(zero=3),
            [("data_parallel", 1 + i) for i in range(n)],
        ),
        (
            "MemoryCalculator: optimizer",
            lambda: MemoryCalculator(),
            [("optimizer", o) for o in _cycle(["adamw", "sgd", "adam8bit", "sgd-momentum"], n)],
        ),
        (
            "NetworkBreakdown: drag layers",
            lambda: NetworkBreakdown(),
            [("layers", 1 + i) for i in range(n)],
        ),
        (
            "NetworkBreakdown: drag seq len",
            lambda: NetworkBreakdown(),
            [("seq_len", 128 + 64 * i) for i in range(n)],
        ),
        (
            "SparsityExplorer: drag seed",
            lambda: SparsityExplorer(),
            [("seed", i % 100) for i in range(n)],
        ),
        (
            "SparsityExplorer: drag N",
            lambda: SparsityExplorer(),
            [("n", 256 + 128 * i) for i in range(n)],
        ),
        (
            "FusionExplorer: elements",
            lambda: FusionExplorer(),
            [("elements", str(4096 * (1 + 37 * i))) for i in range(n)],
        ),
        (
            "FusionExplorer: chain",
            lambda: FusionExplorer(),
            [("preset", c) for c in _cycle(list(FUSION_CHAINS), n)],
        ),
        (
            "InferenceExplorer: batch",
            lambda: InferenceExplorer(),
            [("batch", str(1 + 7 * i)) for i in range(n)],
        ),
        (
            "InferenceExplorer: model",
            lambda: InferenceExplorer(),
            [("model", m) for m in _cycle(["llama-2-70b", "llama-3-8b", "mistral-7b"], n)],
        ),
        (
            "InferenceExplorer: context",
            lambda: InferenceExplorer(gpu="H100"),
            [("context", str(256 * (1 + i))) for i in range(n)],
        ),
        (
            "Fp8ScalingExplorer: drag amax growth",
            lambda: Fp8ScalingExplorer(recipe="delayed"),
            [("growth", -4 + 0.5 * (i % 25)) for i in range(n)],
        ),
        (
            "Fp8ScalingExplorer: type log2 std",
            lambda: Fp8ScalingExplorer(),
            [("log2_std", str(1 + 0.25 * (i % 20))) for i in range(n)],
        ),
        (
            "BlockFormatExplorer: drag outlier",
            lambda: BlockFormatExplorer(),
            [("outlier", 0.5 * (i % 49)) for i in range(n)],
        ),
        (
            # each layout's sweep is quantized on its first visit (the core keeps the last few)
            "BlockFormatExplorer: pick format",
            lambda: BlockFormatExplorer(),
            [
                ("format", f)
                for f in _cycle(["nvfp4", "mxfp8_e4m3", "fp8_per_tensor", "mxfp6_e2m3", "mxfp4"], n)
            ],
        ),
        (
            "BlockFormatExplorer: type block size",
            lambda: BlockFormatExplorer(),
            [("block_size", str(b)) for b in _cycle([8, 16, 24, 32, 64, 128, 256, 48], n)],
        ),
        (
            "PipelineExplorer: drag micro-batches (1F1B)",
            lambda: PipelineExplorer(),
            [("micro_batches", 1 + i % 32) for i in range(n)],
        ),
        (
            "PipelineExplorer: drag chunks (interleaved, 8 x 32)",
            lambda: PipelineExplorer(8, 32, "interleaved"),
            [("chunks", 2 + i % 3) for i in range(n)],
        ),
        (
            "PipelineExplorer: drag stages (GPipe, m = 16)",
            lambda: PipelineExplorer(micro_batches=16, schedule="gpipe"),
            [("stages", 1 + i % 16) for i in range(n)],
        ),
        (
            "StepTimeCalculator: type GPUs",
            lambda: StepTimeCalculator(),
            [("gpus", str(g)) for g in _cycle([8, 16, 32, 64, 128, 256, 512, 1024], n)],
        ),
        (
            "StepTimeCalculator: pick pipeline",
            lambda: StepTimeCalculator(gpus=512, global_batch=1024),
            [("pipeline_parallel", p) for p in _cycle([1, 2, 4, 8, 16, 32, 64], n)],
        ),
        (
            "ServingExplorer: type TPOT target",
            lambda: ServingExplorer(),
            [("tpot_ms", str(30 + i)) for i in range(n)],
        ),
        (
            "ServingExplorer: type chunk",
            lambda: ServingExplorer(),
            [("chunk", str(128 + 32 * i)) for i in range(n)],
        ),
        (
            "ServingExplorer: type prompt length",
            lambda: ServingExplorer(),
            [("prompt_len", str(512 + 64 * i)) for i in range(n)],
        ),
        (
            # each shipped trace is read and drawn on its first visit (2 of the moves), then
            # shown from the widget's kept drawing
            "TraceExplorer: switch traces",
            lambda: TraceExplorer(),
            [("trace", t) for t in _cycle(list(shipped_profiles())[::-1], n)],
        ),
    ]


def _pct(values: list[float], q: float) -> float:
    """The q-th percentile in milliseconds (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] * 1e3


def run(repeat: int, only: str = "") -> list[tuple[str, float, float, float, float, int, int]]:
    rows = []
    for label, factory, moves in cases(repeat):
        if only.lower() not in label.lower():
            continue
        widget = factory()
        view = widget.view
        full0, blit0 = view.full_draws, view.blits
        times, cpu = [], []
        gc.collect()
        for name, value in moves:
            control = widget.controls[name]
            t0, c0 = time.perf_counter(), time.thread_time()
            control.value = value
            times.append(time.perf_counter() - t0)
            cpu.append(time.thread_time() - c0)
        rows.append(
            (
                label,
                _pct(times, 50),
                _pct(times, 95),
                max(times) * 1e3,
                _pct(cpu, 95),
                view.full_draws - full0,
                view.blits - blit0,
            )
        )
        widget.close()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=40, help="moves per case (40)")
    parser.add_argument("--target-ms", type=float, default=50.0, help="p95 target (50 ms)")
    parser.add_argument("--only", default="", help="run the cases whose label contains this")
    args = parser.parse_args(argv)
    import matplotlib

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"python {platform.python_version()}, matplotlib {matplotlib.__version__}, "
        f"{os.cpu_count()} CPUs, backend {matplotlib.get_backend()}, load average {load:.2f}"
    )
    rows = run(args.repeat, args.only)
    width = max(len(r[0]) for r in rows)
    print(
        f"{'widget: control'.ljust(width)}  {'p50 ms':>7}  {'p95 ms':>7}  {'max ms':>7}  "
        f"{'cpu p95':>7}  {'full':>4}  {'blit':>4}"
    )
    worst = 0.0
    for label, p50, p95, top, cpu95, full, blit in rows:
        worst = max(worst, p95)
        print(
            f"{label.ljust(width)}  {p50:7.1f}  {p95:7.1f}  {top:7.1f}  {cpu95:7.1f}  "
            f"{full:4d}  {blit:4d}"
        )
    ok = worst <= args.target_ms
    print(
        f"worst p95 {worst:.1f} ms: {'within' if ok else 'OVER'} the {args.target_ms:g} ms target"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
