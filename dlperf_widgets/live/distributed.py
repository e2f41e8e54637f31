"""Data parallelism for real: two CPU processes, ``torch.distributed`` with gloo.

The slides "NN Performance optimization" ("Data with model parallelism"): every worker
holds the same model, trains on different data, and the workers exchange gradients.
:func:`data_parallel_check` starts ``world_size`` processes; each computes the gradients
of its slice of the batch, all-reduces them (sum, then divided by the number of workers)
and takes the same SGD step. It checks that

- the averaged gradients equal the gradients one process computes on the whole batch, and
  the parameters after a few steps equal single-process training (to float tolerance);
- the bytes each process sends per step match the ring all-reduce model of
  :mod:`dlperf_widgets.core.parallel`: 2 (n - 1) / n times the gradient bytes, which for
  two processes is the model's gradient bytes once. Sent bytes are read from the kernel's
  per-process I/O counter (``wchar`` in ``/proc/self/io``, Linux only) around the
  all-reduce, so they include gloo's small message headers. The gradients travel as one
  flat bucket, as ``DistributedDataParallel`` sends them.

The processes are started with the ``spawn`` method (:func:`._spawn.run_workers`),
rendezvous through a file in a temporary directory (no network port to pick), and are
joined, or terminated after ``timeout_s``, before the function returns.
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
from ..core.parallel import allreduce_bytes
from ..core.results import ResultMixin
from ._spawn import run_workers

__all__ = ["DataParallelResult", "data_parallel_check"]

_IN, _HIDDEN, _OUT = 32, 512, 4


@dataclass(frozen=True)
class DataParallelResult(ResultMixin):
    """Data-parallel training across processes vs one process, and the bytes sent."""

    world_size: int
    steps: int
    batch: int
    params: int
    gradient_bytes: int
    max_grad_difference: float
    max_param_difference: float
    matches_single_process: bool
    measured_sent_bytes_per_step: float | None
    model_sent_bytes_per_step: float
    sent_ratio: float | None
    elapsed_s: float

    _units: ClassVar[dict[str, str]] = {
        "gradient_bytes": "B",
        "measured_sent_bytes_per_step": "B",
        "model_sent_bytes_per_step": "B",
        "elapsed_s": "s",
    }

    def _title(self) -> str:
        return f"Data parallel over {self.world_size} gloo processes, {self.steps} steps"


def _wchar() -> int | None:
    try:
        with open("/proc/self/io") as fh:
            for line in fh:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _build(torch: Any) -> tuple[Any, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(_IN, _HIDDEN), torch.nn.Tanh(), torch.nn.Linear(_HIDDEN, _OUT)
    )
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def _data(torch: Any, batch: int, steps: int) -> list[tuple[Any, Any]]:
    g = torch.Generator().manual_seed(1)
    return [
        (torch.randn(batch, _IN, generator=g), torch.randn(batch, _OUT, generator=g))
        for _ in range(steps)
    ]


def _flat_grads(torch: Any, model: Any) -> Any:
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def _worker(rank: int, world: int, store: str, steps: int, batch: int, queue: Any) -> None:
    """One data-parallel process (module level, so ``spawn`` can import it)."""
    if sys.platform.startswith("linux"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    try:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
        model, opt = _build(torch)
        data = _data(torch, batch, steps)
        share = batch // world
        sent: list[int] = []
        first_grads = None
        dist.all_reduce(torch.zeros(8))  # connect before measuring
        for x, y in data:
            opt.zero_grad()
            sl = slice(rank * share, (rank + 1) * share)
            torch.nn.functional.mse_loss(model(x[sl]), y[sl]).backward()
            grads = [p.grad for p in model.parameters()]
            dist.barrier()
            before = _wchar()
            # one flat bucket, as DistributedDataParallel does, summed over the workers
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat)
            after = _wchar()
            flat /= world  # mean of equal-sized shards = gradient of the whole batch
            offset = 0
            for g in grads:
                g.copy_(flat[offset : offset + g.numel()].view_as(g))
                offset += g.numel()
            if before is not None and after is not None:
                sent.append(after - before)
            if first_grads is None:
                first_grads = _flat_grads(torch, model).clone()
            opt.step()
        params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        queue.put((rank, first_grads.numpy(), params.numpy(), sent))
    except Exception as exc:  # report instead of hanging the parent
        queue.put((rank, None, None, repr(exc)))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def data_parallel_check(
    world_size: int = 2, *, steps: int = 3, batch: int = 32, timeout_s: float = 60.0
) -> DataParallelResult:
    """Train a small MLP on ``world_size`` gloo processes and on one; compare."""
    torch = require("torch", "the live data-parallel check")
    import numpy as np

    world = check_int("world_size", world_size, minimum=2, maximum=8, allow_array=False)
    n_steps = check_int("steps", steps, allow_array=False)
    b = check_int("batch", batch, allow_array=False)
    limit = check_number("timeout_s", timeout_s, minimum=0, strict=True)
    if b % world:
        raise InvalidParameter(f"'batch' must be a multiple of world_size ({world}) (got {b})")

    # Reference: one process, whole batch.
    model, opt = _build(torch)
    ref_first = None
    for x, y in _data(torch, b, n_steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        if ref_first is None:
            ref_first = _flat_grads(torch, model).clone().numpy()
        opt.step()
    ref_params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()
    n_params = int(ref_params.size)
    grad_bytes = n_params * 4

    start = time.perf_counter()
    results = run_workers(_worker, world, (n_steps, b), limit)
    elapsed = time.perf_counter() - start
    grad_diff = max(float(np.abs(r[1] - ref_first).max()) for r in results)
    param_diff = max(float(np.abs(r[2] - ref_params).max()) for r in results)
    sent = [s for r in results for s in r[3]]
    measured = float(np.median(sent)) if sent else None
    model_sent = float(allreduce_bytes(grad_bytes, world))
    return DataParallelResult(
        world_size=world,
        steps=n_steps,
        batch=b,
        params=n_params,
        gradient_bytes=grad_bytes,
        max_grad_difference=grad_diff,
        max_param_difference=param_diff,
        matches_single_process=bool(grad_diff < 1e-5 and param_diff < 1e-5),
        measured_sent_bytes_per_step=measured,
        model_sent_bytes_per_step=model_sent,
        sent_ratio=None if measured is None else measured / model_sent,
        elapsed_s=elapsed,
    )
