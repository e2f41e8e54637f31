"""Guards live/allreduce.py: real gloo all-reduces on CPU processes follow latency +
size / bandwidth, the measurement finishes in bounded time and leaves no process behind."""

from __future__ import annotations

import multiprocessing
import time

import numpy as np
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
    # five sizes, not three: the relative-error fit counts every size alike, so one noisy
    # point among three (gloo's 4 MiB time varies 2x here) could sink r^2 on its own
    r = measure_allreduce((1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20), repeats=5, timeout_s=90)
    assert time.perf_counter() - start < 90
    t1, t16 = r.times_s[0], r.times_s[-1]
    assert t16 > 3 * t1
    # a straight line explains the times: r^2 of a least-squares line computed here, apart
    # from the kit's fit (which weights each size by 1 / t, so that on a loaded 2-core
    # machine the scatter of the smallest messages alone can pull its own r^2 down)
    sizes = np.asarray(r.sizes_bytes, dtype=float)
    times = np.asarray(r.times_s, dtype=float)
    slope, intercept = np.polyfit(sizes, times, 1)
    residual = times - (intercept + slope * sizes)
    assert 1 - (residual**2).sum() / ((times - times.mean()) ** 2).sum() > 0.8
    assert 0 < r.fit.r_squared <= 1
    assert 0.05e9 < r.fit.bus_bandwidth_bytes_per_s < 100e9
    assert multiprocessing.active_children() == []


def test_bad_sizes_rejected_before_starting_processes():
    """Sizes that are not multiples of 4, or a single size, are one sentence, no processes."""
    with pytest.raises(InvalidParameter, match="'sizes_bytes'"):
        measure_allreduce((1000, 1002))
    with pytest.raises(InvalidParameter, match="'sizes_bytes'"):
        measure_allreduce((4096, 4096))
    assert multiprocessing.active_children() == []
