"""Guards live/distributed.py: two gloo processes vs one process, and the bytes they send."""

from __future__ import annotations

import multiprocessing
import sys
import time

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from dlperf_widgets.live.distributed import data_parallel_check  # noqa: E402

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed unavailable")


def test_two_gloo_processes_equal_one_process():
    """All-reduced (averaged) gradients equal single-process gradients on the whole batch,
    parameters stay equal after 3 SGD steps, each process sends the model's gradient bytes
    (ring all-reduce over 2 ranks: 2(n-1)/n = 1 times them) within 5 %, all under a minute,
    and no child process is left behind."""
    start = time.perf_counter()
    r = data_parallel_check(2, steps=3, timeout_s=60)
    assert time.perf_counter() - start < 60
    assert r.matches_single_process
    assert r.max_grad_difference < 1e-6 and r.max_param_difference < 1e-6
    assert r.model_sent_bytes_per_step == r.gradient_bytes == 4 * r.params
    if sys.platform.startswith("linux"):
        assert r.sent_ratio == pytest.approx(1.0, abs=0.05)
    assert multiprocessing.active_children() == []
