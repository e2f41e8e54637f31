"""Tasks of exercises/13_scale_out_exercises.ipynb: MFU, the pipeline bubble, how large a
model's gradients may be for their all-reduce to hide, and where a step's time goes."""

from __future__ import annotations

from typing import Any

from ._check import Mistake, Params, Task


def _mfu(p: Params, **change: Any) -> float:
    from ..core.mfu import mfu

    q = {**p, **change}
    return mfu(q["tokens_per_s"], q["params"], gpus=q["gpus"], gpu=q["gpu"], dtype=q["dtype"]).mfu


def _peak(p: Params, **kw: Any) -> float:
    from ..core.gpus import gpu

    return gpu(p["gpu"]).peak_flops(p["dtype"], **kw)


def _ring_s(size_bytes: float, ranks: int, bandwidth: float) -> float:
    from ..core.scaleout import allreduce_time

    return float(allreduce_time(size_bytes, ranks, bandwidth_bytes_per_s=bandwidth))


def _stage_allreduce(p: Params) -> float:
    """The exposed all-reduce of one GPU: its pipeline stage's share of the gradients, over the
    data-parallel replicas of that stage."""
    return _ring_s(p["size_bytes"] / p["stages"], p["ranks"], p["bandwidth"])


def _bubble_s(p: Params) -> float:
    return p["compute_s"] * (p["stages"] - 1) / p["micro_batches"]


def _bigger_loss(p: Params) -> str:
    """The larger of the two idle times of a step: the 1F1B bubble ((p - 1) micro-batch
    slots of compute_s / m each) and the non-overlapped gradient all-reduce."""
    return "pipeline bubble" if _bubble_s(p) >= _stage_allreduce(p) else "all-reduce"


def _bus_bandwidth(q: Params) -> float:
    """The all-reduce's bus bandwidth across servers: NCCL's rings, one per network port,
    each leaving the server through a different port (core.topology), with ``nics_per_node``
    ports of ``nic_bandwidth`` per server of ``gpus_per_node`` GPUs and NVLink inside."""
    from ..core.topology import topology_bandwidth

    n, npn = q["ranks"], q["gpus_per_node"]
    return topology_bandwidth("all-reduce", n, npn, npn, q["nics_per_node"], q["nvlink_bandwidth"],
                              q["nic_bandwidth"])  # fmt: skip


def _hidden_params(p: Params, **change: Any) -> float:
    """The most parameters whose gradients (``grad_bytes`` each) a ring all-reduce over
    ``ranks`` GPUs finishes within ``backward_s``, latency ignored: the ring sends
    2 (n - 1) / n x S bytes per GPU at the bus bandwidth B (notebook 13), so
    S = t x B x n / (2 (n - 1))."""
    q = {**p, **change}
    n = q["ranks"]
    size = q["backward_s"] * _bus_bandwidth(q) * n / (2 * (n - 1))
    return size / q["grad_bytes"]


TASKS = [
    Task(
        id="13.mfu",
        question="MFU of the run (model FLOPs 6 N per token, dense BF16 peak)",
        kind="number",
        params={"tokens_per_s": 60_000, "params": 7e9, "gpus": 8, "gpu": "H100", "dtype": "bf16"},
        expected=_mfu,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "forward only",
                lambda p: _mfu(p) / 3,
                "training counts forward and backward: 6 N FLOPs per token, not 2 N.",
            ),
            Mistake(
                "sparse peak",
                lambda p: p["tokens_per_s"] * 6 * p["params"] / (p["gpus"] * _peak(p, sparse=True)),
                "that divides by the 2:4 sparse peak; MFU uses the dense peak.",
            ),
            Mistake(
                "one GPU",
                lambda p: _mfu(p) * p["gpus"],
                "the tokens/s are for all 8 GPUs together: divide by 8 GPUs' peak.",
            ),
            Mistake(
                "FP8 peak",
                lambda p: _mfu(p, dtype="fp8_e4m3"),
                "the run computes in BF16: divide by the BF16 peak (989 TFLOP/s).",
            ),
        ),
        hint="MFU = tokens/s x 6 N / (GPUs x peak).",
    ),
    Task(
        id="13.bubble",
        question="share of the step each stage idles (1F1B, p stages, m micro-batches)",
        kind="number",
        params={"stages": 8, "micro_batches": 24},
        expected=lambda p: (p["stages"] - 1) / (p["micro_batches"] + p["stages"] - 1),
        rel_tol=1e-3,
        mistakes=(
            Mistake(
                "bubble over ideal",
                lambda p: (p["stages"] - 1) / p["micro_batches"],
                "(p - 1) / m is the bubble relative to the useful time; the share of the "
                "whole step is (p - 1) / (m + p - 1).",
            ),
            Mistake(
                "p over m + p",
                lambda p: p["stages"] / (p["micro_batches"] + p["stages"]),
                "the pipeline fills in p - 1 slots, not p.",
            ),
        ),
        hint="fill and drain cost p - 1 micro-batch slots out of m + p - 1.",
    ),
    Task(
        id="13.allreduce_budget",
        question="most parameters whose BF16 gradient all-reduce over the 64 GPUs hides behind "
        "the backward pass (latency ignored)",
        kind="number",
        params={
            "backward_s": 0.8,
            "ranks": 64,
            "gpus_per_node": 8,
            "nics_per_node": 8,
            "nic_bandwidth": 50e9,
            "nvlink_bandwidth": 450e9,
            "grad_bytes": 2,
        },
        expected=_hidden_params,
        rel_tol=0.02,
        mistakes=(
            Mistake(
                "factor 2 left out",
                lambda p: [
                    p["backward_s"] * _bus_bandwidth(p) / p["grad_bytes"],
                    _hidden_params(p) * p["grad_bytes"],
                ],
                "about twice the answer: either the ring's factor is missing (each GPU sends "
                "2 (n - 1) / n times the gradient bytes, about twice them for 64 GPUs) or that "
                "is a size in bytes (each BF16 gradient takes 2 bytes).",
            ),
            Mistake(
                "one port per server",
                lambda p: _hidden_params(p, nics_per_node=1),
                "that squeezes each server's traffic through one 50 GB/s port, one flat ring; "
                "NCCL runs one ring per port, each leaving the server through a different one, "
                "so the 8 ports carry it at once: 8 x 50 GB/s per server.",
            ),
            Mistake(
                "NVLink",
                lambda p: _hidden_params(p, nic_bandwidth=p["nvlink_bandwidth"]),
                "450 GB/s is NVLink inside a server; across servers the rings are bounded by "
                "the server's 8 InfiniBand ports, 8 x 50 GB/s.",
            ),
        ),
        hint="NCCL runs one ring per network port: the bus bandwidth across servers is 8 ports "
        "x 50 GB/s; solve 2 (n - 1) / n x S / B = backward time for S, then divide by 2 bytes "
        "per gradient.",
    ),
    Task(
        id="13.step_loss",
        question="which costs the step more: the pipeline bubble or the exposed all-reduce",
        kind="choice",
        choices=("pipeline bubble", "all-reduce"),
        params={
            "compute_s": 1.2,
            "stages": 8,
            "micro_batches": 8,
            "size_bytes": 14e9,
            "ranks": 8,
            "bandwidth": 50e9,
        },
        expected=_bigger_loss,
        mistakes=(
            Mistake(
                "blamed the network",
                lambda p: "all-reduce" if _bigger_loss(p) == "pipeline bubble" else _bigger_loss(p),
                "each GPU all-reduces only its stage's eighth of the gradients with its 7 "
                "replicas: 2 (n - 1) / n x (S / 8) / B, tens of milliseconds, while 8 stages "
                "with only 8 micro-batches idle (p - 1) / m of the compute time: more "
                "micro-batches shrink the bubble.",
            ),
            Mistake(
                "blamed the pipeline",
                lambda p: "pipeline bubble" if _bigger_loss(p) == "all-reduce" else _bigger_loss(p),
                "with this many micro-batches the bubble is small; the gradient all-reduce "
                "takes longer: overlap it with the backward pass.",
            ),
        ),
        hint="bubble = compute x (p - 1) / m; all-reduce = 2 (n - 1) / n x (S / stages) / B, "
        "with n the data-parallel replicas.",
    ),
]
