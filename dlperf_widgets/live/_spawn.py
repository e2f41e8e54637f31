"""Start a few spawned worker processes, collect one result from each, leave none behind.

Shared by the gloo demonstrations (:mod:`.distributed`, :mod:`.allreduce`). A worker is a
module-level function ``target(rank, world, store, *args, queue)`` that puts exactly one
tuple ``(rank, payload, ...)`` on the queue, with ``payload`` None and the last item an
error text when it failed. Rendezvous goes through a file in a temporary directory (no
network port to pick).
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from ..core.errors import DlperfError

__all__ = ["run_workers"]


def run_workers(target: Any, world: int, args: tuple[Any, ...], timeout_s: float) -> list[Any]:
    """Start ``world`` spawned processes ``target(rank, world, store, *args, queue)`` and
    collect one result each; raise DlperfError on a failure or after ``timeout_s``."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    results: list[Any] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "rendezvous")
        procs = [
            ctx.Process(target=target, args=(r, world, store, *args, queue), daemon=True)
            for r in range(world)
        ]
        for p in procs:
            p.start()
        deadline = time.perf_counter() + timeout_s
        try:
            while len(results) < world:
                if time.perf_counter() > deadline:
                    raise DlperfError(f"the gloo processes did not finish in {timeout_s:g} s")
                if not queue.empty():
                    results.append(queue.get())
                elif not any(p.is_alive() for p in procs) and queue.empty():
                    raise DlperfError("a gloo process exited without a result")
                else:
                    time.sleep(0.02)
        finally:
            for p in procs:
                p.join(timeout=10 if len(results) == world else 0.1)
            for p in procs:
                if p.is_alive():
                    p.terminate()
                    p.join(5)
                if p.is_alive():
                    p.kill()
                    p.join(5)
    failed = [r for r in results if r[1] is None]
    if failed:
        raise DlperfError(f"gloo process {failed[0][0]} failed: {failed[0][-1]}")
    return sorted(results, key=lambda r: r[0])
