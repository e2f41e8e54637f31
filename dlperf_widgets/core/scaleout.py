"""Training on many GPUs: pipeline bubbles, collective times, and the time of one step.

- **Pipeline bubble** (Huang et al. 2019, "GPipe"; Narayanan et al. 2021, "Efficient
  Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", section 2.2): with
  p stages and m micro-batches each stage idles for p - 1 micro-batch slots while the
  pipeline fills and drains, a fraction (p - 1) / (m + p - 1) of the step. GPipe (all
  forwards, then all backwards) and 1F1B (one forward, one backward, after p - 1 warm-up
  forwards) have the same bubble; 1F1B keeps at most p micro-batches of activations alive
  instead of m. The interleaved schedule gives each GPU v chunks of layers, which divides
  the bubble's slots by v: (p - 1) / (v m + p - 1), for v times the pipeline messages.
  The paper writes the bubble over the ideal time m (t_f + t_b) instead: (p - 1) / (v m)
  (equal to (p - 1) / m for GPipe and 1F1B). The first stage of the interleaved schedule
  holds p (1 + (p - 1) / (p v)) micro-batches' worth of activations (Korthikanti et al.
  2022, "Reducing Activation Recomputation in Large Transformer Models").
  :func:`pipeline_schedule` simulates the schedules op by op (the pictures, and a second
  computation of the bubble and of the activations held in the tests).
- **Collectives** on the ring algorithm (Patarasuk & Yuan 2009; Thakur et al. 2005): an
  all-reduce of S bytes over n ranks is a reduce-scatter and an all-gather, 2 (n - 1)
  steps, each sending S / n bytes: time 2 (n - 1) alpha + 2 (n - 1)/n S / B with alpha the
  per-message latency and B the link's one-way bandwidth. Between servers NCCL runs one ring
  per NIC, so a group with k GPUs in each server moves at k NICs' bandwidth per server, not
  one (:mod:`.topology`).
- **Overlap.** Data-parallel gradients are all-reduced in buckets while the backward pass
  still runs (Li et al. 2020, "PyTorch Distributed: Experiences on Accelerating Data
  Parallel Training", section 3.2.3), so only the part that outlasts the backward pass of
  the last micro-batch is exposed. ZeRO-3 / FSDP moves 3 Psi elements instead of 2 Psi
  (Rajbhandari et al. 2020, section 7; :mod:`.parallel`), its all-gathers prefetched during
  the forward and backward passes.
- **Tensor parallelism** (Shoeybi et al. 2019, "Megatron-LM", section 3): two all-reduces of
  the b x s x h activation per layer forward and two backward, on the critical path.

:func:`step_time` combines them for a transformer on N = data x tensor x pipeline GPUs as a
view of the step's kernel list (:mod:`.workload`): every GEMM, attention, memory-bound,
optimizer and collective kernel, priced one by one, with the memory the step needs beside
its MFU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ._validate import (
    MAX_PRODUCT,
    as_floats,
    check_choice,
    check_int,
    check_number,
    check_product,
    describe,
)
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gpus import Gpu
from .gpus import gpu as _gpu
from .links import Interconnect, default_links, interconnect, interconnect_names, server_link
from .parallel import allgather_bytes, allreduce_bytes
from .results import ResultMixin
from .topology import group_per_node, topology_bandwidth
from .workload import PRECISIONS, LlmSpec, WorkloadTime, llm, price, workload

__all__ = [
    "COLLECTIVES",
    "SCHEDULES",
    "AllreduceFit",
    "CollectiveResult",
    "Interconnect",
    "ScheduleResult",
    "StepResult",
    "allgather_time",
    "allreduce_time",
    "collective",
    "fit_latency_bandwidth",
    "interconnect",
    "interconnect_names",
    "pipeline_bubble",
    "pipeline_schedule",
    "step_time",
]

SCHEDULES = ("gpipe", "1f1b", "interleaved")


def _network_server_link(li: Interconnect, intra_link: Any) -> Interconnect:
    """The link inside the servers that ``li`` (a network link) connects."""
    if intra_link is not None:
        return interconnect(intra_link)
    return server_link(li)


def _bandwidth_latency(
    link: Any,
    bandwidth: Any,
    latency: Any,
    op: str = "all-reduce",
    ranks: int = 1,
    gpus_per_node: Any = None,
    nics_per_node: Any = None,
    intra_link: Any = None,
) -> tuple[float, float]:
    """One-way (bus) bandwidth and per-step latency of a ring collective.

    An NVLink or PCIe link: one server, every rank on that link. A network link: the ranks
    fill servers of ``gpus_per_node`` GPUs (8 unless given), the rings run over NVLink
    inside a server and through every NIC between servers (:mod:`.topology`; NCCL's one ring
    per NIC), ``nics_per_node`` NICs per server (one per GPU unless given; 1 is the flat
    count of one ring through a single NIC per server).
    """
    if link is not None:
        li = interconnect(link)
        network = li.kind == "infiniband"
        if not network:
            for name, value in (("gpus_per_node", gpus_per_node), ("nics_per_node", nics_per_node),
                                ("intra_link", intra_link)):  # fmt: skip
                if value is not None:
                    raise InvalidParameter(
                        f"'{name}' applies to a network link between servers, not to {li.name} "
                        f"(got {describe(value)})"
                    )
            return li.bandwidth_bytes_per_s, li.latency_s
        npn = check_int("gpus_per_node", 8 if gpus_per_node is None else gpus_per_node,
                        maximum=1024, allow_array=False)  # fmt: skip
        nics = check_int("nics_per_node", npn if nics_per_node is None else nics_per_node,
                         maximum=1024, allow_array=False)  # fmt: skip
        if ranks <= npn:
            raise InvalidParameter(
                f"'ranks' must exceed gpus_per_node ({npn}) for a collective over {li.name} "
                f"between servers of {npn} GPUs; pass gpus_per_node=1 for one GPU per server "
                f"(got {ranks})"
            )
        intra = _network_server_link(li, intra_link)
        k = group_per_node(ranks, 1, npn)
        bw = topology_bandwidth(op, ranks, k, npn, nics, intra.bandwidth_bytes_per_s,
                                li.bandwidth_bytes_per_s)  # fmt: skip
        return bw, max(li.latency_s, intra.latency_s)
    if bandwidth is None:
        raise InvalidParameter("'link' or 'bandwidth_bytes_per_s' must be given (got neither)")
    for name, value in (("gpus_per_node", gpus_per_node), ("nics_per_node", nics_per_node),
                        ("intra_link", intra_link)):  # fmt: skip
        if value is not None:
            raise InvalidParameter(
                f"'{name}' needs a network link, not a bandwidth (got {describe(value)})"
            )
    # at least 1 B/s: a subnormal bandwidth made every time overflow to inf
    bw = check_number("bandwidth_bytes_per_s", bandwidth, minimum=1)
    lat = check_number("latency_s", 0.0 if latency is None else latency, minimum=0, maximum=1e6)
    return bw, lat


def _ring_time(
    size_bytes: Any, ranks: int, link: Any, bandwidth: Any, latency: Any, passes: int,
    topology: dict[str, Any] | None = None,
) -> Any:  # fmt: skip
    """``passes`` rounds of n - 1 ring steps, each sending S / n bytes (1: all-gather or
    reduce-scatter; 2: all-reduce)."""
    n = check_int("ranks", ranks, allow_array=False)
    op = "all-reduce" if passes == 2 else "all-gather"
    bw, lat = _bandwidth_latency(link, bandwidth, latency, op, n, **(topology or {}))
    s = as_floats("size_bytes", size_bytes, "non-negative")
    if (s < 0).any() or not np.isfinite(s).all() or (s > MAX_PRODUCT).any():
        raise InvalidParameter(
            f"'size_bytes' must be non-negative finite numbers no larger than 2**62 (got {describe(size_bytes)})"
        )
    t = passes * ((n - 1) * lat + allgather_bytes(s, n) / bw) if n > 1 else np.zeros_like(s)
    return float(t) if np.ndim(t) == 0 else t


def allreduce_time(
    size_bytes: Any,
    ranks: int,
    *,
    link: str | Interconnect | None = None,
    bandwidth_bytes_per_s: float | None = None,
    latency_s: float | None = None,
    gpus_per_node: int | None = None,
    nics_per_node: int | None = None,
    intra_link: str | Interconnect | None = None,
) -> Any:
    """Ring all-reduce time: 2 (n - 1) alpha + 2 (n - 1)/n S / B (vectorised over S).

    B is ``bandwidth_bytes_per_s``, or the one-way bandwidth of ``link``. Over a network
    link (InfiniBand) the ranks fill servers of ``gpus_per_node`` GPUs (8) and B is the bus
    bandwidth of NCCL's rings through every NIC, ``nics_per_node`` per server (one per
    GPU): min(k b, k B_nvl / (k - 1)) for k GPUs per server (:mod:`.topology`), with
    ``intra_link`` (the NVLink found with that network) inside the server.
    """
    topo = {"gpus_per_node": gpus_per_node, "nics_per_node": nics_per_node,
            "intra_link": intra_link}  # fmt: skip
    return _ring_time(size_bytes, ranks, link, bandwidth_bytes_per_s, latency_s, 2, topo)


def allgather_time(
    size_bytes: Any,
    ranks: int,
    *,
    link: str | Interconnect | None = None,
    bandwidth_bytes_per_s: float | None = None,
    latency_s: float | None = None,
    gpus_per_node: int | None = None,
    nics_per_node: int | None = None,
    intra_link: str | Interconnect | None = None,
) -> Any:
    """Ring all-gather (or reduce-scatter) time: (n - 1) alpha + (n - 1)/n S / B, with B as
    in :func:`allreduce_time`."""
    topo = {"gpus_per_node": gpus_per_node, "nics_per_node": nics_per_node,
            "intra_link": intra_link}  # fmt: skip
    return _ring_time(size_bytes, ranks, link, bandwidth_bytes_per_s, latency_s, 1, topo)


@dataclass(frozen=True)
class CollectiveResult(ResultMixin):
    """One ring collective: bytes each rank sends, the bus bandwidth, and the time.

    Inside a server (an NVLink or PCIe ``link``) ``gpus_per_node`` and ``nics_per_node``
    are 0. Over a network link they give the servers and their NICs, and
    ``bandwidth_bytes_per_s`` is the bus bandwidth of the rings through every NIC.
    """

    kind: str
    size_bytes: float
    ranks: int
    link: str
    sent_bytes_per_rank: float
    bandwidth_bytes_per_s: float
    latency_s: float
    time_s: float
    gpus_per_node: int = 0
    nics_per_node: int = 0

    _units: ClassVar[dict[str, str]] = {
        "size_bytes": "B",
        "sent_bytes_per_rank": "B",
        "bandwidth_bytes_per_s": "B/s",
        "latency_s": "s",
        "time_s": "s",
    }

    def _title(self) -> str:
        where = self.link
        if self.gpus_per_node:
            where = (f"{self.link} between servers of {self.gpus_per_node} GPUs, "
                     f"{self.nics_per_node} NIC(s) each")  # fmt: skip
        return f"Ring {self.kind} of {self.size_bytes:,.0f} B over {self.ranks} ranks on {where}"


COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter")


def collective(
    size_bytes: float,
    ranks: int,
    *,
    link: str | Interconnect = "NVLink4",
    kind: str = "all-reduce",
    gpus_per_node: int | None = None,
    nics_per_node: int | None = None,
) -> CollectiveResult:
    """Bytes and time of one ring collective of ``size_bytes`` over ``ranks`` on ``link``.

    Over a network link (InfiniBand) the ranks fill servers of ``gpus_per_node`` GPUs (8)
    with ``nics_per_node`` NICs each (one per GPU), priced as NCCL runs it, one ring per
    NIC (:func:`allreduce_time`); ``nics_per_node=1`` is the flat count of one ring through
    a single NIC per server.
    """
    # at most 2**62 bytes (4.6 EB), the kit's largest product of sizes: the bytes sent stay finite
    size = check_number("size_bytes", size_bytes, minimum=0, maximum=float(MAX_PRODUCT))
    n = check_int("ranks", ranks, maximum=1 << 20, allow_array=False)
    kind = check_choice("kind", kind, COLLECTIVES)
    li = interconnect(link)
    op = "all-reduce" if kind == "all-reduce" else "all-gather"
    bw, lat = _bandwidth_latency(li, None, None, op, n, gpus_per_node, nics_per_node)
    passes = 2 if kind == "all-reduce" else 1
    sent = allreduce_bytes(size, n) if passes == 2 else allgather_bytes(size, n)
    t = passes * ((n - 1) * lat + allgather_bytes(size, n) / bw) if n > 1 else 0.0
    network = li.kind == "infiniband"
    npn = (8 if gpus_per_node is None else int(gpus_per_node)) if network else 0
    nics = (npn if nics_per_node is None else int(nics_per_node)) if network else 0
    return CollectiveResult(
        kind=kind,
        size_bytes=size,
        ranks=n,
        link=li.name,
        sent_bytes_per_rank=float(sent),
        bandwidth_bytes_per_s=bw,
        latency_s=lat,
        time_s=float(t),
        gpus_per_node=npn,
        nics_per_node=nics,
    )


@dataclass(frozen=True)
class AllreduceFit(ResultMixin):
    """Fit of all-reduce times to latency + size / bandwidth, least squares on relative error.

    ``time_per_byte_s`` is the slope; ``bus_bandwidth_bytes_per_s`` converts it into the
    one-way link bandwidth the ring model implies, 2 (n - 1)/n / slope (NCCL's "bus
    bandwidth"); ``r_squared`` (weighted like the fit) says how well a straight line explains
    the times.
    """

    ranks: int
    latency_s: float
    time_per_byte_s: float
    algorithm_bandwidth_bytes_per_s: float
    bus_bandwidth_bytes_per_s: float
    r_squared: float
    points: int

    _units: ClassVar[dict[str, str]] = {
        "latency_s": "s",
        "algorithm_bandwidth_bytes_per_s": "B/s",
        "bus_bandwidth_bytes_per_s": "B/s",
    }

    def _title(self) -> str:
        return f"All-reduce over {self.ranks} ranks: latency + size / bandwidth"


def fit_latency_bandwidth(size_bytes: Any, times_s: Any, ranks: int = 2) -> AllreduceFit:
    """Fit t = a + b S to measured all-reduce times (at least two distinct sizes), each
    residual weighted by 1 / t so that small messages set the latency a."""
    n = check_int("ranks", ranks, minimum=2, allow_array=False)
    s = as_floats("size_bytes", size_bytes, "non-negative finite numbers").ravel()
    t = as_floats("times_s", times_s, "positive finite numbers").ravel()
    if not (np.isfinite(s).all() and (s >= 0).all() and (s <= MAX_PRODUCT).all()):
        bad = s[~(np.isfinite(s) & (s >= 0) & (s <= MAX_PRODUCT))][0]
        raise InvalidParameter(
            f"'size_bytes' must be non-negative finite numbers no larger than 2**62 "
            f"(got {describe(float(bad))})"
        )
    if s.size != t.size or s.size < 2 or np.unique(s).size < 2:
        raise InvalidParameter(
            f"'size_bytes' must hold at least two different sizes, one per time (got {s.size} "
            f"sizes for {t.size} times)"
        )
    if not (np.isfinite(t).all() and (t > 0).all()):
        bad = t[~(np.isfinite(t) & (t > 0))][0]
        raise InvalidParameter(
            f"'times_s' must be positive finite numbers (got {describe(float(bad))})"
        )
    # Least squares on relative errors (weights 1 / t): an unweighted fit lets the largest
    # messages, whose absolute errors are largest, set the intercept, and a noisy large
    # message can then drive the latency negative. Weighted, each size counts alike and the
    # small messages, whose time is mostly latency, set it.
    w = 1.0 / t
    b, a = np.polyfit(s, t, 1, w=w)
    pred = a + b * s
    tw = float((w * w * t).sum() / (w * w).sum())  # weighted mean of t
    ss_res = float(((w * (t - pred)) ** 2).sum())
    ss_tot = float(((w * (t - tw)) ** 2).sum())
    slope = max(float(b), 1e-300)
    return AllreduceFit(
        ranks=n,
        latency_s=float(a),
        time_per_byte_s=float(b),
        algorithm_bandwidth_bytes_per_s=1.0 / slope,
        bus_bandwidth_bytes_per_s=float(allreduce_bytes(1.0, n)) / slope,
        r_squared=1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0,
        points=int(s.size),
    )


# -- pipeline schedules -------------------------------------------------------------------


def pipeline_bubble(
    stages: int, micro_batches: Any, schedule: str = "1f1b", chunks: int = 1
) -> Any:
    """Share of a step a pipeline stage is idle: (p - 1) / (v m + p - 1).

    ``chunks`` (v) applies to the interleaved schedule only; GPipe and 1F1B have v = 1.
    """
    p = check_int("stages", stages, allow_array=False)
    m = check_int("micro_batches", micro_batches)
    schedule = check_choice("schedule", schedule, SCHEDULES)
    v = check_int("chunks", chunks, allow_array=False)
    if schedule != "interleaved":
        v = 1
    bubble = (p - 1) / (v * np.asarray(m, dtype=np.float64) + p - 1)
    return float(bubble) if bubble.ndim == 0 else bubble


@dataclass(frozen=True)
class ScheduleResult(ResultMixin):
    """A pipeline schedule simulated op by op (unit times by default).

    ``ops`` is a tuple of (stage, micro_batch, kind 'F' or 'B', start, end), ``op_chunks``
    the layer chunk of each op (0 unless interleaved; chunk c of stage s is virtual stage
    c x p + s). ``bubble_fraction`` is the simulated idle share of stage-time;
    ``formula_bubble_fraction`` the closed form of that share, (p - 1) / (v m + p - 1);
    ``formula_bubble_over_ideal`` the bubble over the ideal time m (t_f + t_b), the form
    Narayanan et al. 2021 write, (p - 1) / (v m). ``max_in_flight`` is the most micro-batch
    chunks whose activations one stage holds at once; ``activations_per_stage`` the peak of
    each stage in micro-batches' worth of that stage's activations (a chunk holds 1 / v of
    them), ``peak_activations`` their maximum (stage 0). ``sends_per_micro_batch`` counts
    the point-to-point transfers of one micro-batch (activations forward, gradients
    backward) over the v p - 1 virtual-stage boundaries. Exact arithmetic on unit op times,
    no communication time.
    """

    schedule: str
    stages: int
    micro_batches: int
    chunks: int
    forward_time: float
    backward_time: float
    total_time: float
    bubble_fraction: float
    formula_bubble_fraction: float
    formula_bubble_over_ideal: float
    max_in_flight: int
    peak_activations: float
    activations_per_stage: tuple[float, ...]
    sends_per_micro_batch: int
    ops: tuple[tuple[int, int, str, float, float], ...] = field(default=(), repr=False)
    op_chunks: tuple[int, ...] = field(default=(), repr=False)

    _hidden: ClassVar[tuple[str, ...]] = ("ops", "op_chunks")

    def _title(self) -> str:
        extra = f" ({self.chunks} chunks per stage)" if self.schedule == "interleaved" else ""
        return (
            f"{self.schedule} pipeline{extra}: {self.stages} stages, "
            f"{self.micro_batches} micro-batches"
        )


def _stage_order(schedule: str, s: int, p: int, m: int, v: int) -> list[tuple[str, int, int]]:
    """The (kind, micro-batch, chunk) ops stage ``s`` runs, in its order.

    GPipe: every forward, then every backward. 1F1B (Narayanan et al. 2021, section 2.2.1,
    PipeDream-Flush): p - s - 1 warm-up forwards, then one forward and one backward in
    turn, then the remaining backwards. Interleaved (section 2.2.2, as Megatron-LM's
    ``forward_backward_pipelining_with_interleaving`` orders it): micro-batches go in
    groups of p through chunk 0, then chunk 1, ...; backwards walk the chunks in reverse;
    2 (p - s - 1) + (v - 1) p warm-up forwards (all of them when m = p), then 1F1B.
    """
    if schedule == "gpipe":
        return [("F", i, 0) for i in range(m)] + [("B", i, 0) for i in range(m)]
    if schedule == "1f1b":
        warm = min(p - s - 1, m)
        order = [("F", i, 0) for i in range(warm)]
        for i in range(m - warm):
            order += [("F", warm + i, 0), ("B", i, 0)]
        return order + [("B", i, 0) for i in range(m - warm, m)]
    total = m * v

    def op(kind: str, k: int) -> tuple[str, int, int]:
        group, r = divmod(k, p * v)
        chunk = r // p
        return (kind, group * p + r % p, chunk if kind == "F" else v - 1 - chunk)

    warm = total if m == p else min(2 * (p - s - 1) + (v - 1) * p, total)
    order = [op("F", k) for k in range(warm)]
    for k in range(total - warm):
        order += [op("F", warm + k), op("B", k)]
    return order + [op("B", k) for k in range(total - warm, total)]


# Ops a simulation may run (2 p m v): GPipe over 64 stages and 256 micro-batches.
_MAX_OPS = 2 * 64 * 256


def pipeline_schedule(
    stages: int,
    micro_batches: int,
    schedule: str = "1f1b",
    *,
    chunks: int = 1,
    forward_time: float = 1.0,
    backward_time: float = 2.0,
) -> ScheduleResult:
    """Simulate GPipe, 1F1B or interleaved 1F1B: each stage runs its ops in order, as soon
    as their input is ready (a forward needs the previous virtual stage's forward of the
    same micro-batch, a backward the next one's backward). The backward pass costs about
    twice the forward (two GEMMs per forward GEMM), hence the default times, which are
    per micro-batch for a stage's whole share of the layers (a chunk takes 1 / v of them).

    ``chunks`` (v, at least 2) applies to the interleaved schedule, which needs the
    micro-batches in whole groups of p (Megatron-LM's rule: m a multiple of p).
    """
    p = check_int("stages", stages, maximum=64, allow_array=False)
    m = check_int("micro_batches", micro_batches, maximum=256, allow_array=False)
    schedule = check_choice("schedule", schedule, SCHEDULES)
    v = check_int("chunks", chunks, maximum=16, allow_array=False)
    tf = check_number("forward_time", forward_time, minimum=0, strict=True)
    tb = check_number("backward_time", backward_time, minimum=0, strict=True)
    if schedule != "interleaved":
        v = 1
    else:
        if v < 2:
            raise InvalidParameter(
                f"'chunks' must be at least 2 for the interleaved schedule (got {v})"
            )
        if m % p:
            raise InvalidParameter(
                f"'micro_batches' must be a multiple of 'stages' ({p}) for the interleaved "
                f"schedule (got {m})"
            )
        if 2 * p * m * v > _MAX_OPS:
            raise InvalidParameter(
                f"'chunks' x 'stages' x 'micro_batches' must be at most {_MAX_OPS // 2:,} "
                f"for a simulation (got {v} x {p} x {m})"
            )
    tf_c, tb_c = tf / v, tb / v
    last = v * p - 1  # the last virtual stage
    orders = [_stage_order(schedule, s, p, m, v) for s in range(p)]
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * p
    pos = [0] * p
    ops: list[tuple[int, int, str, float, float]] = []
    op_chunks: list[int] = []
    remaining = 2 * p * m * v
    while remaining:
        progressed = False
        for s in range(p):
            while pos[s] < len(orders[s]):
                kind, i, c = orders[s][pos[s]]
                j = c * p + s
                if kind == "F":
                    dep = done.get(("F", j - 1, i)) if j > 0 else 0.0
                else:
                    dep = done.get(("B", j + 1, i)) if j < last else done.get(("F", j, i))
                if dep is None:
                    break
                start = max(free[s], dep)
                end = start + (tf_c if kind == "F" else tb_c)
                done[(kind, j, i)] = end
                free[s] = end
                ops.append((s, i, kind, start, end))
                op_chunks.append(c)
                pos[s] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise RuntimeError("pipeline schedule deadlocked")
    total = max(free)
    busy = p * m * (tf + tb)
    # a stage's ops were appended in its own order, which is its time order
    live, peaks = [0] * p, [0] * p
    for s, _, kind, _, _ in ops:
        live[s] += 1 if kind == "F" else -1
        peaks[s] = max(peaks[s], live[s])
    return ScheduleResult(
        schedule=schedule,
        stages=p,
        micro_batches=m,
        chunks=v,
        forward_time=tf,
        backward_time=tb,
        total_time=total,
        bubble_fraction=1.0 - busy / (p * total),
        formula_bubble_fraction=pipeline_bubble(p, m, schedule, v),
        formula_bubble_over_ideal=(p - 1) / (v * m),
        max_in_flight=max(peaks),
        peak_activations=max(peaks) / v,
        activations_per_stage=tuple(k / v for k in peaks),
        sends_per_micro_batch=2 * last,
        ops=tuple(ops),
        op_chunks=tuple(op_chunks),
    )


# -- one training step on N GPUs -------------------------------------------------------------


@dataclass(frozen=True)
class StepResult(ResultMixin):
    """The predicted time of one training step on N GPUs, what it is made of, its MFU, and
    whether it fits in memory.

    A view of the step's kernel list (:func:`.workload.workload`, priced by
    :func:`.workload.price` with eager launches, as training frameworks run). Times are per
    step on one GPU (the slowest pipeline stage). ``compute_s``: every compute kernel of all
    micro-batches and the optimizer; ``tensor_parallel_s`` (tensor, sequence, context and
    expert parallel collectives) and ``pipeline_p2p_s``: communication on the critical path;
    ``bubble_s``: pipeline fill and drain; ``data_parallel_s``: the gradient all-reduce (or
    ZeRO-3 traffic), of which ``data_parallel_exposed_s`` is not hidden behind compute;
    ``launch_exposed_s``: time the GPU waits for the host. ``memory_bytes``: what one GPU
    holds at the step's peak (:func:`.workload.workload_memory`); ``fits`` compares it
    with the GPU's memory. ``timeline`` lists (lane, label, start_s, duration_s) for a
    picture of one GPU's step.
    """

    gpu: str
    dtype: str
    gpus: int
    data_parallel: int
    tensor_parallel: int
    pipeline_parallel: int
    schedule: str
    micro_batches: int
    micro_batch: int
    global_batch: int
    params: float
    tokens_per_step: int
    model_flops_per_step: float
    compute_s: float
    tensor_parallel_s: float
    pipeline_p2p_s: float
    bubble_s: float
    data_parallel_s: float
    data_parallel_exposed_s: float
    launch_exposed_s: float
    step_s: float
    tokens_per_s: float
    mfu: float
    memory_bytes: float
    capacity_bytes: float
    fits: bool
    feasibility: str
    intra_link: str
    inter_link: str
    timeline: tuple[tuple[str, str, float, float], ...] = field(default=(), repr=False)
    priced: WorkloadTime | None = field(default=None, repr=False, compare=False)

    _units: ClassVar[dict[str, str]] = {
        "model_flops_per_step": "FLOP",
        "compute_s": "s",
        "tensor_parallel_s": "s",
        "pipeline_p2p_s": "s",
        "bubble_s": "s",
        "data_parallel_s": "s",
        "data_parallel_exposed_s": "s",
        "launch_exposed_s": "s",
        "step_s": "s",
        "memory_bytes": "iB",
        "capacity_bytes": "iB",
    }
    _hidden: ClassVar[tuple[str, ...]] = ("timeline", "priced")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in super().to_dict().items() if k != "priced"}

    def _title(self) -> str:
        return (
            f"Training step on {self.gpus} x {self.gpu} (DP {self.data_parallel}, "
            f"TP {self.tensor_parallel}, PP {self.pipeline_parallel}): MFU {self.mfu:.1%}; "
            f"{self.feasibility}"
        )


def step_time(
    *,
    layers: int = 32,
    hidden: int = 4096,
    heads: int = 32,
    seq_len: int = 4096,
    vocab: int = 32000,
    ffn_mult: int = 4,
    global_batch: int = 512,
    micro_batch: int = 1,
    gpus: int = 64,
    tensor_parallel: int = 1,
    pipeline_parallel: int = 1,
    schedule: str = "1f1b",
    chunks: int = 1,
    zero: int = 1,
    overlap: bool = True,
    gpu: str | Gpu = "H100",
    dtype: str = "bf16",
    gpus_per_node: int = 8,
    intra_link: str | None = None,
    inter_link: str | None = None,
    grad_bytes: int = 2,
    model: str | LlmSpec | None = None,
    attention: str = "flash2",
    recompute: str = "none",
    sequence_parallel: bool | None = None,
    nics_per_node: int | None = None,
) -> StepResult:
    """Predict one training step of a GPT-style model on ``gpus`` GPUs, its MFU and memory.

    ``gpus`` = data x tensor x pipeline parallel; ``global_batch`` sequences per step are
    split over the data-parallel replicas and run as micro-batches of ``micro_batch``.
    Tensor-parallel groups sit inside a server (``intra_link``); data-parallel and
    pipeline traffic crosses servers (``inter_link``) once a group spans more than
    ``gpus_per_node`` GPUs. ``zero=3`` models ZeRO-3 / FSDP (weights gathered forward and
    backward, gradients reduce-scattered, every micro-batch); ``overlap`` hides gradient
    traffic behind compute. ``grad_bytes=2``: gradients are all-reduced in 16 bits, as
    PyTorch DDP does for BF16 parameters (Megatron-LM can reduce them in FP32: pass 4).
    ``model`` (a name or :class:`.workload.LlmSpec`) replaces the GPT shape given by
    ``layers`` ... ``ffn_mult`` (GQA, gated MLPs); ``attention``, ``recompute`` and
    ``sequence_parallel`` are :func:`.workload.workload`'s options. ``dtype='fp8'`` trains
    with FP8 GEMMs. Between servers a group uses every NIC next to its GPUs,
    ``nics_per_node`` per server (one per GPU unless given; :mod:`.topology`).
    """
    L = check_int("layers", layers, maximum=1024, allow_array=False)
    h = check_int("hidden", hidden, maximum=1 << 17, allow_array=False)
    a = check_int("heads", heads, maximum=1024, allow_array=False)
    s = check_int("seq_len", seq_len, maximum=1 << 20, allow_array=False)
    V = check_int("vocab", vocab, maximum=1 << 22, allow_array=False)
    f = check_int("ffn_mult", ffn_mult, maximum=64, allow_array=False)
    B = check_int("global_batch", global_batch, maximum=1 << 24, allow_array=False)
    mb = check_int("micro_batch", micro_batch, maximum=1 << 16, allow_array=False)
    N = check_int("gpus", gpus, maximum=1 << 20, allow_array=False)
    tp = check_int("tensor_parallel", tensor_parallel, maximum=1024, allow_array=False)
    pp = check_int("pipeline_parallel", pipeline_parallel, maximum=1024, allow_array=False)
    schedule = check_choice("schedule", schedule, SCHEDULES)
    v = check_int("chunks", chunks, maximum=64, allow_array=False)
    zero = check_int("zero", zero, minimum=0, maximum=3, allow_array=False)
    npn = check_int("gpus_per_node", gpus_per_node, maximum=1024, allow_array=False)
    gbytes = check_int("grad_bytes", grad_bytes, maximum=8, allow_array=False)
    if not isinstance(overlap, bool):
        raise InvalidParameter(f"'overlap' must be True or False (got {describe(overlap)})")
    if model is None:
        if h % a:
            raise InvalidParameter(f"'heads' must divide hidden ({h}) (got {a})")
        spec = LlmSpec(name=f"GPT {L}L h{h}", layers=L, hidden=h, heads=a, kv_heads=a,
                       head_dim=h // a, ffn=f * h, vocab=V, gated_mlp=False, rotary=False)  # fmt: skip
    else:
        spec = llm(model)
    L, h, a, V = spec.layers, spec.hidden, spec.heads, spec.vocab
    if N % (tp * pp):
        raise InvalidParameter(
            f"'gpus' must be a multiple of tensor_parallel x pipeline_parallel ({tp * pp}) "
            f"(got {N})"
        )
    dp = N // (tp * pp)
    if a % tp or h % tp or V % tp:
        raise InvalidParameter(
            f"'tensor_parallel' must divide heads ({a}), hidden ({h}) and vocab ({V}) (got {tp})"
        )
    vv = v if schedule == "interleaved" else 1
    if L % (pp * vv):
        raise InvalidParameter(
            f"'pipeline_parallel' x chunks must divide layers ({L}) (got {pp} x {vv})"
        )
    if B % (dp * mb):
        raise InvalidParameter(
            f"'global_batch' must be a multiple of data_parallel x micro_batch ({dp} x {mb}) "
            f"(got {B})"
        )
    g = _gpu(gpu)
    d = _dtype(dtype)
    g.peak_flops(d)  # the GPU must run the dtype: the standard message otherwise
    m = B // (dp * mb)
    precision = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "fp4_e2m1": "fp4"}.get(d.name, d.name)
    if precision not in PRECISIONS:
        raise InvalidParameter(
            f"'dtype' must be one of {', '.join(PRECISIONS)} for training (got {describe(dtype)})"
        )
    # The largest GEMM of the layer: attention's scores (micro_batch x heads, seq_len x
    # seq_len x head dim) or a linear layer (tokens x the widest of ffn, vocab x hidden).
    # Checked here, so that the message names step_time's own parameters, not a GEMM's 'm'.
    check_product(
        ("micro_batch", "seq_len", "hidden", "max(seq_len,ffn,vocab)"),
        (mb, s, h, max(s, spec.ffn, V)),
    )
    w = workload(spec, phase="training", batch=mb, seq=s, micro_batches=m, precision=precision,
                 attention=attention, recompute=recompute, data_parallel=dp, zero=zero,
                 tensor_parallel=tp, sequence_parallel=sequence_parallel, pipeline_parallel=pp,
                 pipeline_chunks=vv, grad_bytes=gbytes)  # fmt: skip
    pr = price(w, g, timing="eager", gpus_per_node=npn, intra_link=intra_link,
               inter_link=inter_link, overlap=overlap, nics_per_node=nics_per_node)  # fmt: skip
    intra, inter = default_links(g)
    if intra_link is not None:
        intra = interconnect(intra_link)
    if inter_link is not None:
        inter = interconnect(inter_link)

    ks = w.kernels
    each = pr.times_s * w.column("count")
    group = w.column("group")
    passes = w.column("pass_")
    tp_t = float(each[np.isin(group, ["tp", "cp", "ep"])].sum())
    p2p = float(each[group == "pp"].sum())
    dp_t = float(each[group == "dp"].sum())
    dp_exposed = pr.overlapped_exposed_s
    compute = np.array([k.kind != "collective" for k in ks])
    fwd = float(each[compute & (passes == "forward")].sum()) / m
    bwd = float(each[compute & np.isin(passes, ["backward", "recompute"])].sum()) / m
    opt = float(each[compute & (passes == "optimizer")].sum())
    comm_f = float(each[~compute & (passes == "forward") & (group != "dp")].sum()) / m
    comm_b = float(each[~compute & (passes == "backward") & (group != "dp")].sum()) / m
    bubble = pr.bubble_s
    step = pr.step_s
    tokens_step = B * s
    flops = w.model_flops * N  # PaLM's model FLOPs of the whole step, on all GPUs

    timeline: list[tuple[str, str, float, float]] = []
    t = 0.0
    if pp > 1:
        timeline.append(("compute", "pipeline fill", t, bubble / 2))
        t += bubble / 2
    # one entry per micro-batch pass; past 32 micro-batches, groups of them (same total)
    grp = max(1, -(-m // 32))
    for i in range(0, m, grp):
        k = min(grp, m - i)
        for label, comp, comm in (("forward", fwd, comm_f), ("backward", bwd, comm_b)):
            timeline.append(("compute", label, t, k * comp))
            t += k * comp
            if comm > 0:
                timeline.append(("network", "tensor/pipeline comm", t, k * comm))
                t += k * comm
    if pp > 1:
        timeline.append(("compute", "pipeline drain", t, bubble / 2))
        t += bubble / 2
    if opt > 0:
        timeline.append(("compute", "optimizer", t, opt))
        t += opt
    if pr.launch_exposed_s > 0:
        timeline.append(("compute", "waiting for launches", t, pr.launch_exposed_s))
        t += pr.launch_exposed_s
    if dp_t > 0:
        start = max(0.0, t - opt - pr.launch_exposed_s - (dp_t - dp_exposed))
        label = "gradient all-reduce" if zero < 3 else "ZeRO-3 traffic"
        timeline.append(("network", label, start, dp_t))
    return StepResult(
        gpu=g.name,
        dtype=d.name,
        gpus=N,
        data_parallel=dp,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        schedule=schedule,
        micro_batches=m,
        micro_batch=mb,
        global_batch=B,
        params=w.params,
        tokens_per_step=tokens_step,
        model_flops_per_step=flops,
        compute_s=pr.device_time_s,
        tensor_parallel_s=tp_t,
        pipeline_p2p_s=p2p,
        bubble_s=bubble,
        data_parallel_s=dp_t,
        data_parallel_exposed_s=dp_exposed,
        launch_exposed_s=pr.launch_exposed_s,
        step_s=step,
        tokens_per_s=tokens_step / step,
        mfu=pr.mfu,
        memory_bytes=pr.memory_bytes,
        capacity_bytes=pr.capacity_bytes,
        fits=pr.fits,
        feasibility=pr.feasibility,
        intra_link=intra.name,
        inter_link=inter.name,
        timeline=tuple(timeline),
        priced=pr,
    )
