"""Guards core/scaleout.py: pipeline bubbles (formula vs an op-by-op simulation), ring
collective times, the latency/bandwidth fit, and the step-time model's bookkeeping."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gemm import gemm
from dlperf_widgets.core.scaleout import (
    allgather_time,
    allreduce_time,
    fit_latency_bandwidth,
    interconnect,
    pipeline_bubble,
    pipeline_schedule,
    step_time,
)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize(("p", "m"), [(2, 1), (4, 4), (4, 16), (8, 3), (6, 11)])
def test_simulated_bubble_equals_formula(schedule, p, m):
    """The idle share of the simulated schedule is (p - 1) / (m + p - 1) for GPipe and 1F1B."""
    r = pipeline_schedule(p, m, schedule, forward_time=1.0, backward_time=2.0)
    assert r.bubble_fraction == pytest.approx((p - 1) / (m + p - 1))
    assert r.total_time == pytest.approx((m + p - 1) * 3.0)
    assert pipeline_bubble(p, m, schedule) == pytest.approx(r.bubble_fraction)


def test_1f1b_holds_fewer_micro_batches():
    """GPipe keeps all m micro-batches' activations alive, 1F1B at most p (Narayanan 2021)."""
    assert pipeline_schedule(4, 16, "gpipe").max_in_flight == 16
    assert pipeline_schedule(4, 16, "1f1b").max_in_flight == 4


def test_schedule_respects_dependencies():
    """Every forward starts after the previous stage's forward of the same micro-batch, every
    backward after the next stage's backward; no stage runs two ops at once."""
    r = pipeline_schedule(4, 6, "1f1b")
    end = {(k, s, i): e for s, i, k, _, e in r.ops}
    for s, i, k, start, _ in r.ops:
        if k == "F" and s > 0:
            assert start >= end[("F", s - 1, i)]
        if k == "B":
            assert start >= end[("B", s + 1, i)] if s < 3 else start >= end[("F", s, i)]
    for s in range(4):
        spans = sorted((o[3], o[4]) for o in r.ops if o[0] == s)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


def test_interleaving_divides_the_bubble():
    """Interleaved with v chunks: (p - 1) / (v m + p - 1) (Narayanan 2021, section 2.2.2)."""
    assert pipeline_bubble(8, 8, "interleaved", chunks=4) == pytest.approx(7 / (32 + 7))
    assert pipeline_bubble(8, 8, "1f1b", chunks=4) == pytest.approx(7 / 15)


def test_ring_allreduce_time():
    """1 GB over 8 GPUs on NVLink4 (450 GB/s one way): 2*7/8 GB / 450 GB/s + 14 hops x 3 us."""
    t = allreduce_time(1e9, 8, link="NVLink4")
    assert t == pytest.approx(1.75e9 / 450e9 + 14 * 3e-6)
    assert allgather_time(1e9, 8, link="NVLink4") == pytest.approx(0.875e9 / 450e9 + 7 * 3e-6)
    assert allreduce_time(1e9, 1, link="NVLink4") == 0.0
    assert interconnect("ndr").bandwidth_bytes_per_s == 50e9


def test_fit_recovers_latency_and_bandwidth():
    """Times made from a = 50 us and 2 GB/s bus bandwidth over 4 ranks come back from the fit."""
    sizes = np.logspace(3, 8, 12)
    times = allreduce_time(sizes, 4, bandwidth_bytes_per_s=2e9, latency_s=50e-6 / 6)
    f = fit_latency_bandwidth(sizes, times, ranks=4)
    assert f.latency_s == pytest.approx(50e-6, rel=1e-6)
    assert f.bus_bandwidth_bytes_per_s == pytest.approx(2e9, rel=1e-9)
    assert f.r_squared == pytest.approx(1.0)


def test_fit_lets_small_messages_set_the_latency():
    """The saved gloo measurement of notebook 13 (2 CPU processes: 250 us at 4 KiB, 12.6 ms
    at 16 MiB) once gave an unweighted fit a latency of -207 us; weighted by 1 / t the fit
    keeps a positive latency below the smallest time, and it predicts every size within
    its relative residuals (here under 40 %)."""
    sizes = np.array([4096, 262144, 1048576, 2097152, 4194304, 8388608, 16777216])
    times = np.array([250.2, 254.5, 779.4, 873.4, 2625.4, 5359.0, 12593.7]) * 1e-6
    unweighted_intercept = np.polyfit(sizes, times, 1)[1]
    assert unweighted_intercept < 0  # the failure this weighting fixes
    f = fit_latency_bandwidth(sizes, times, ranks=2)
    assert 0 < f.latency_s < times[0]
    pred = f.latency_s + f.time_per_byte_s * sizes
    assert np.all(np.abs(pred / times - 1) < 0.4)


def test_step_time_adds_up():
    """step = compute + critical-path communication + bubble + exposed gradient traffic +
    exposed launches, and the compute holds at least the GEMM model's time of the GEMMs."""
    r = step_time(
        layers=4,
        hidden=1024,
        heads=16,
        seq_len=512,
        vocab=32000,
        global_batch=16,
        micro_batch=2,
        gpus=16,
        tensor_parallel=2,
        pipeline_parallel=2,
        gpu="A100",
    )
    assert r.data_parallel == 4 and r.micro_batches == 2
    total = r.compute_s + r.tensor_parallel_s + r.pipeline_p2p_s + r.bubble_s
    assert r.step_s == pytest.approx(total + r.data_parallel_exposed_s + r.launch_exposed_s)
    # one MLP-up GEMM of the stage, checked against gemm(): tokens x (4h / tp) x h
    up = gemm(1024, 2048, 1024, dtype="fp16", gpu="A100").predicted_time_s
    assert r.compute_s > r.micro_batches * 2 * up  # 2 layers per stage, each has one
    assert 0 < r.mfu < 1


def test_overlap_and_zero3():
    """Overlap hides gradient traffic behind compute. ZeRO-3 moves 3 Psi per pass against the
    all-reduce's 2 Psi (Rajbhandari et al. 2020, section 7), and FSDP gathers the weights and
    reduce-scatters the gradients for every micro-batch: 1.5 m times the all-reduce (within
    5 %: for these 1 GB messages over 4 servers' NICs the all-reduce's latency terms, ring or
    tree, differ by a few percent from the gathers')."""
    kw = dict(layers=8, hidden=2048, heads=16, seq_len=1024, global_batch=64, gpus=32, gpu="H100")
    on, off = step_time(overlap=True, **kw), step_time(overlap=False, **kw)
    assert off.data_parallel_exposed_s == off.data_parallel_s
    assert on.data_parallel_exposed_s < off.data_parallel_exposed_s
    z3 = step_time(zero=3, overlap=False, **kw)
    assert z3.micro_batches == 2
    assert z3.data_parallel_s == pytest.approx(1.5 * 2 * off.data_parallel_s, rel=0.05)


def test_bad_input():
    """Inconsistent layouts are one sentence naming the parameter."""
    with pytest.raises(InvalidParameter, match="'gpus' must be a multiple"):
        step_time(gpus=12, tensor_parallel=8)
    with pytest.raises(InvalidParameter, match="'global_batch' must be a multiple"):
        step_time(gpus=64, global_batch=100)
    with pytest.raises(InvalidParameter, match="'link'"):
        allreduce_time(1e6, 2, link="carrier pigeon")
    with pytest.raises(InvalidParameter, match="'schedule'"):
        pipeline_schedule(4, 4, "zigzag")


def test_step_reports_memory_feasibility_beside_mfu():
    """A 70B-like model on 512 H100s with TP 4 x PP 1 and ZeRO-1 keeps a quarter of the FP32
    weights and gradients per GPU: 70e9 / 4 x 8 B = 130 GiB before activations, so the step
    does not fit an 80 GiB GPU and says so next to its MFU; TP 8 x PP 4 fits."""
    shape = dict(layers=80, hidden=8192, heads=64, seq_len=4096, vocab=32000,
                 global_batch=1024, gpus=512, gpu="H100")  # fmt: skip
    tp4 = step_time(tensor_parallel=4, pipeline_parallel=1, **shape)
    states = tp4.params / 4 * 8  # FP32 weights and gradients of this GPU's shard
    assert tp4.memory_bytes > states > 120 * 2**30
    assert not tp4.fits and "does not fit" in str(tp4) and "MFU" in str(tp4)
    pp4 = step_time(tensor_parallel=8, pipeline_parallel=4, **shape)
    assert pp4.fits and pp4.memory_bytes < tp4.memory_bytes / 2
