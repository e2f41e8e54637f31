"""Guards live/allreduce.py: real gloo all-reduces on CPU processes follow latency +
size / bandwidth, the measurement finishes in bounded time and leaves no process behind."""

from __future__ import annotations

import multiprocessing
import time

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from dlperf_widgets.core.errors import InvalidParameter  # noqa: E402
from dlperf_widgets.live.allreduce import measure_allreduce  # noqa: E402

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed unavailable")


def test_allreduce_time_grows_linearly_with_size():
    """Two gloo processes: time rises with the message (16 MiB takes several times 1 MiB),
    a straight line latency + size / bandwidth explains the fastest times (r^2 > 0.8),
    the bus bandwidth is a plausible memory-copy rate (0.05 to 100 GB/s), all in under
    90 s with no child process left."""
    start = time.perf_counter()
    r = measure_allreduce((1 << 20, 4 << 20, 16 << 20), repeats=5, timeout_s=90)
    assert time.perf_counter() - start < 90
    t1, _, t16 = r.times_s
    assert t16 > 3 * t1
    assert r.fit.r_squared > 0.8  # three sizes; a loaded 2-core machine adds scatter
    assert 0.05e9 < r.fit.bus_bandwidth_bytes_per_s < 100e9
    assert multiprocessing.active_children() == []


def test_bad_sizes_rejected_before_starting_processes():
    """Sizes that are not multiples of 4, or a single size, are one sentence, no processes."""
    with pytest.raises(InvalidParameter, match="'sizes_bytes'"):
        measure_allreduce((1000, 1002))
    with pytest.raises(InvalidParameter, match="'sizes_bytes'"):
        measure_allreduce((4096, 4096))
    assert multiprocessing.active_children() == []
