"""All-reduce time against message size, measured on CPU processes with gloo.

:func:`measure_allreduce` starts ``world_size`` processes (``spawn``, one thread each,
rendezvous through a file), and in each times ``torch.distributed.all_reduce`` of float32
tensors of several sizes: a warm-up call, then ``repeats`` timed calls per size with a
barrier before each, the fastest kept (on a shared machine the fastest call is the one
least disturbed by other processes; the spread of the others is noise, not all-reduce). Rank 0's times are fitted to latency + size /
bandwidth (:func:`dlperf_widgets.core.scaleout.fit_latency_bandwidth`), the alpha-beta
model of :mod:`dlperf_widgets.core.scaleout`, so the fit's two numbers are this machine's
"link": shared memory and loopback TCP between processes instead of NVLink.

The processes are joined, or terminated after ``timeout_s``, before the function returns.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from .._optional import require
from ..core._validate import check_int, check_number
from ..core.errors import InvalidParameter
from ..core.results import ResultMixin
from ..core.scaleout import AllreduceFit, fit_latency_bandwidth
from ._spawn import run_workers

__all__ = ["AllreduceMeasurement", "measure_allreduce"]

DEFAULT_SIZES = (4 << 10, 256 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20)


@dataclass(frozen=True)
class AllreduceMeasurement(ResultMixin):
    """Fastest all-reduce time per message size on gloo CPU processes, and their fit."""

    world_size: int
    repeats: int
    sizes_bytes: tuple[int, ...]
    times_s: tuple[float, ...]
    fit: AllreduceFit
    elapsed_s: float
    where: str

    _units: ClassVar[dict[str, str]] = {"elapsed_s": "s"}
    _hidden: ClassVar[tuple[str, ...]] = ("fit",)

    def _title(self) -> str:
        return f"All-reduce on {self.world_size} gloo processes ({self.where})"

    def _rows(self) -> list[tuple[str, str]]:
        rows = super()._rows()
        for s, t in zip(self.sizes_bytes, self.times_s, strict=True):
            rows.append((f"{s:>10,} B", f"{t * 1e6:9.1f} us"))
        rows.append(("fitted latency", f"{self.fit.latency_s * 1e6:.1f} us"))
        rows.append(
            ("fitted bus bandwidth", f"{self.fit.bus_bandwidth_bytes_per_s / 1e9:.2f} GB/s")
        )
        rows.append(("fit r^2", f"{self.fit.r_squared:.4f}"))
        return rows


def _worker(
    rank: int, world: int, store: str, sizes: tuple[int, ...], repeats: int, queue: Any
) -> None:
    """One process (module level, so ``spawn`` can import it)."""
    if sys.platform.startswith("linux"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    try:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
        times = []
        for size in sizes:
            x = torch.ones(size // 4, dtype=torch.float32)
            dist.all_reduce(x)  # warm-up: connections and buffers
            samples = []
            for _ in range(repeats):
                dist.barrier()
                t0 = time.perf_counter()
                dist.all_reduce(x)
                samples.append(time.perf_counter() - t0)
            times.append(min(samples))
        queue.put((rank, times, ""))
    except Exception as exc:  # report instead of hanging the parent
        queue.put((rank, None, repr(exc)))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def measure_allreduce(
    sizes_bytes: Any = DEFAULT_SIZES,
    *,
    world_size: int = 2,
    repeats: int = 10,
    timeout_s: float = 60.0,
) -> AllreduceMeasurement:
    """Time all-reduces of ``sizes_bytes`` (multiples of 4, at most 64 MiB) on gloo processes
    and fit latency + size / bandwidth. About 3-5 s on a 2-core machine with the defaults,
    most of it starting the processes."""
    require("torch", "the live all-reduce measurement")
    world = check_int("world_size", world_size, minimum=2, maximum=8, allow_array=False)
    reps = check_int("repeats", repeats, maximum=100, allow_array=False)
    limit = check_number("timeout_s", timeout_s, minimum=0, strict=True)
    sizes = tuple(int(s) for s in check_int("sizes_bytes", list(sizes_bytes), minimum=4))
    if len(set(sizes)) < 2 or any(s % 4 or s > 64 << 20 for s in sizes):
        raise InvalidParameter(
            "'sizes_bytes' must be at least two different multiples of 4 up to 64 MiB "
            f"(got {list(sizes_bytes)!r})"
        )
    start = time.perf_counter()
    results = run_workers(_worker, world, (sizes, reps), limit)
    times = tuple(float(t) for t in results[0][1])
    return AllreduceMeasurement(
        world_size=world,
        repeats=reps,
        sizes_bytes=sizes,
        times_s=times,
        fit=fit_latency_bandwidth(sizes, times, ranks=world),
        elapsed_s=time.perf_counter() - start,
        where=f"this machine, {os.cpu_count()} CPU cores, float32 tensors",
    )
