"""Tasks of exercises/15_reading_a_profile_exercises.ipynb (on the shipped GPU traces)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ._check import Mistake, Params, Task


@lru_cache(maxsize=4)
def _report(name: str, gpu: str = "") -> Any:
    from ..live.profile import explain, shipped_profiles

    return explain(shipped_profiles()[name], gpu or None)


def _share(p: Params, kind: str) -> float:
    r = _report(p["trace"])
    return sum(k.time_s for k in r.kernels if k.kind == kind) / r.kernel_time_s


TASKS = [
    Task(
        id="15.busy_share",
        question="share of the span (first to last kernel) the GPU is busy, 0-1",
        kind="number",
        params={"trace": "v100_cnn_training"},
        expected=lambda p: _report(p["trace"]).gpu_busy_s / _report(p["trace"]).span_s,
        mistakes=(
            Mistake(
                "percent",
                lambda p: 100 * _report(p["trace"]).gpu_busy_s / _report(p["trace"]).span_s,
                "give a fraction between 0 and 1, not a percentage.",
            ),
        ),
        hint="union of kernel intervals ÷ (end of the last kernel − start of the first).",
    ),
    Task(
        id="15.copy_share",
        question="share of the GPU's kernel time spent in host-device copies, 0-1",
        kind="number",
        params={"trace": "a100_alexnet_forward"},
        expected=lambda p: _share(p, "memcpy"),
        rel_tol=0.02,
        mistakes=(
            Mistake(
                "share of the span",
                lambda p: (
                    sum(k.time_s for k in _report(p["trace"]).kernels if k.kind == "memcpy")
                    / _report(p["trace"]).span_s
                ),
                "divide by the kernels' total time, not the 12.9 s span (mostly host pauses).",
            ),
        ),
        hint="sum the durations of the gpu_memcpy events and divide by all GPU events' time.",
    ),
    Task(
        id="15.pinned_time",
        question="seconds the pageable copies would take at the PCIe 4 link's 32 GB/s",
        kind="number",
        params={"trace": "a100_alexnet_forward"},
        expected=lambda p: sum(
            k.predicted_s
            for k in _report(p["trace"]).kernels
            if k.kind == "memcpy" and "Pageable" in k.name
        ),
        rel_tol=0.05,
        mistakes=(
            Mistake(
                "measured time",
                lambda p: sum(
                    k.time_s
                    for k in _report(p["trace"]).kernels
                    if k.kind == "memcpy" and "Pageable" in k.name
                ),
                "that is what the copies took; the question is the link's time for their bytes.",
            ),
        ),
        hint="bytes of the pageable copies (args['bytes']) ÷ 32e9.",
    ),
    Task(
        id="15.top_fix",
        question="the fix ranked first on the 128-GPU job's trace (first word)",
        kind="choice",
        choices=("pin", "pad", "batch", "fuse", "capture"),
        params={"trace": "distributed_recsys_rank0"},
        expected=lambda p: _report(p["trace"]).findings[0].fix.split()[0],
        mistakes=(
            Mistake(
                "fuse",
                lambda p: "fuse",
                "fusion recovers about 4 ms here; the GPU waits longer on kernel launches.",
            ),
        ),
        hint="explain(trace).findings[0].",
    ),
    Task(
        id="15.comm_overlap",
        question="share of the communication kernels' time that overlaps computation, 0-1",
        kind="number",
        params={"trace": "distributed_recsys_rank0"},
        expected=lambda p: (
            _report(p["trace"]).communication_overlapped_s / _report(p["trace"]).communication_s
        ),
        rel_tol=0.02,
        mistakes=(
            Mistake(
                "exposed share",
                lambda p: (
                    1
                    - _report(p["trace"]).communication_overlapped_s
                    / _report(p["trace"]).communication_s
                ),
                "that is the exposed share; the question asks for the hidden (overlapped) one.",
            ),
        ),
        hint="overlap = comm + compute − union(comm, compute), over the comm time.",
    ),
]
