"""The calibrated constants (core/calibration.py, data/achievable.csv) and the calibrated
time model they feed: achievable fractions, a fixed cost per kernel, imperfect overlap,
per-architecture misalignment and the thin-output kernel."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.assumptions import OVERLAP_EXPONENT
from dlperf_widgets.core.calibration import FIELDS, achievable, overlap_time
from dlperf_widgets.core.gemm import gemm, gemm_sweep
from dlperf_widgets.core.gpus import _read_csv, custom_gpu, gpu, gpu_names


def test_every_row_documents_its_basis_and_source():
    """Each calibration row says how it was obtained and where from; figures are physical
    (fractions in (0, 1], overheads positive and of the order of microseconds)."""
    archs = {gpu(n).architecture for n in gpu_names()}
    for row in _read_csv("achievable.csv"):
        assert row["basis"] in ("fitted", "published", "default"), row
        assert row["source"], row
        if row["target"] != "default":
            assert row["target"] in archs or row["target"] in gpu_names(), row
        for name in ("math_fraction", "memory_fraction", "misaligned_efficiency"):
            if row[name]:
                assert 0 < float(row[name]) <= 1, row
        if row["kernel_overhead_us"]:
            assert 0.5 <= float(row["kernel_overhead_us"]) <= 20, row


def test_fitted_rows_name_a_shipped_trace():
    """A 'fitted' constant names the shipped trace it was fitted to."""
    from dlperf_widgets.live.traces import list_traces

    shipped = set(list_traces())
    for row in _read_csv("achievable.csv"):
        if row["basis"] == "fitted":
            assert any(name in row["source"] for name in shipped), row


def test_lookup_takes_the_most_specific_row():
    """H100 bf16 uses Hopper's fitted figures; an A100 (no trace shipped) the documented
    defaults, and says so; the T4's power-limited clock puts it below an RTX 3090."""
    h100 = achievable("H100-SXM", "bf16")
    # 97 % in a tile at the clock a 700 W board holds under long Tensor Core work: its
    # 1590 MHz base clock, against the 1830 MHz the datasheet Tensor Core peak implies
    assert h100.basis == "fitted" and h100.clock_fraction == pytest.approx(1590 / 1830)
    assert h100.math_fraction == pytest.approx(0.97 * 1590 / 1830)
    assert "xla_h100-sxm" in h100.sources["math_fraction"]
    a100 = achievable("A100", "fp16")
    assert a100.basis == "default" and a100.sources["math_fraction"].startswith("default")
    assert achievable("T4", "fp16").math_fraction < achievable("RTX-3090", "fp16").math_fraction
    assert FIELDS[-2:] == ("misaligned_efficiency", "misaligned_mn_efficiency")
    assert achievable("V100", "fp32").unit == "cuda"


def test_overlap_time_lies_between_max_and_sum():
    """The combined time is never below the larger term nor above the sum; equal terms give
    2^(1/p) of one; a zero term leaves the other unchanged (vectorised)."""
    a = np.array([1.0, 2.0, 0.0, 3.0])
    b = np.array([1.0, 0.5, 4.0, 3.0])
    t = overlap_time(a, b)
    assert np.all(t >= np.maximum(a, b)) and np.all(t <= a + b)
    assert t[0] == pytest.approx(2 ** (1 / OVERLAP_EXPONENT))
    assert t[2] == 4.0
    assert overlap_time(0.0, 0.0) == 0.0


def test_large_aligned_gemm_runs_at_the_achievable_fraction():
    """8192^3 on each GPU: the model's throughput sits just under math_fraction x peak (wave
    and overlap losses are small there) and never above it."""
    for name in ("V100", "A100", "H100-SXM", "H200", "B200", "T4"):
        r = gemm(8192, 8192, 8192, dtype="fp16", gpu=name)
        frac = achievable(name, "fp16").math_fraction
        assert r.predicted_flops_per_s <= frac * r.peak_flops_per_s
        assert r.predicted_flops_per_s >= 0.9 * frac * r.peak_flops_per_s


def test_roofline_time_is_the_guides_arithmetic():
    """roofline_time_s = max(FLOPs / datasheet peak, bytes / datasheet bandwidth), and the
    prediction is never faster than it."""
    s = gemm_sweep(np.array([256, 4096, 8192]), 4096, np.array([64, 4096, 256]), gpu="H100-SXM")
    g = gpu("H100-SXM")
    ideal = np.maximum(s.flops / g.peak_flops("fp16"), s.bytes / g.memory_bandwidth_bytes_per_s)
    np.testing.assert_allclose(s.roofline_time_s, ideal)
    assert np.all(s.predicted_time_s > s.roofline_time_s)


def test_misalignment_penalty_differs_by_architecture():
    """K off the 16-byte multiple: about 2x on Volta (slides), 1.46x on Hopper (the
    published H100 K = 10922 vs 10944 measurement the Hopper row cites) with both kernels at
    the same clock; from an idle H100 the slower kernel also outlasts the boost burst of its
    700 W board, so it pays a little more."""
    v = (
        gemm(4096, 4096, 4097, gpu="V100").predicted_time_s
        / gemm(4096, 4096, 4096, gpu="V100").predicted_time_s
    )
    h = (
        gemm(4096, 4096, 10922, gpu="H100-SXM", sustained=True).predicted_time_s
        / gemm(4096, 4096, 10944, gpu="H100-SXM", sustained=True).predicted_time_s
    )
    from_idle = (
        gemm(4096, 4096, 10922, gpu="H100-SXM").predicted_time_s
        / gemm(4096, 4096, 10944, gpu="H100-SXM").predicted_time_s
    )
    assert v == pytest.approx(2.0, rel=0.05)
    assert h == pytest.approx(1.46, rel=0.03)
    assert h < from_idle < 1.1 * h


def test_thin_fp32_outputs_sit_on_the_memory_roofline():
    """FP32 thin outputs with a huge K (DeepBench's 512 x 8 x 500000 on V100): the matrix-
    vector kernel streams the big operand, so memory sets the time; the old smallest-tile
    model made math set it, 2.2x too slow."""
    r = gemm(512, 8, 500_000, dtype="fp32", gpu="V100", beta=1.0)
    assert r.tile == "gemv" and r.time_limiter == "memory"
    achievable_bw = gpu("V100").memory_bandwidth_bytes_per_s * r.memory_fraction
    assert r.predicted_time_s == pytest.approx(r.bytes / achievable_bw, rel=0.05)


def test_thin_kernel_is_taken_only_when_faster():
    """A thin output is offered the matrix-vector kernel; a square one never is; forcing a
    tile turns the thin kernel off."""
    assert gemm(4096, 1, 4096, gpu="A100").tile == "gemv"
    assert gemm(4096, 4096, 4096, gpu="A100").tile != "gemv"
    assert gemm(4096, 8, 4096, gpu="A100", tile="64x64").tile == "64x64"


def test_int8_on_t4_is_what_a_plain_call_gets():
    """cublasGemmEx int8 on ordinary layouts reaches about 23 TOPS on a T4, not 130."""
    r = gemm(8192, 8192, 8192, dtype="int8", gpu="T4")
    assert r.predicted_flops_per_s / 1e12 == pytest.approx(23, rel=0.1)


def test_custom_gpu_gets_the_documented_defaults():
    """A GPU the data file does not name takes its architecture's rows (fitted on Hopper),
    and an architecture without rows takes the documented defaults, and says so."""
    g = custom_gpu(
        "lab-card",
        architecture="hopper",
        sms=100,
        boost_clock_mhz=1500,
        memory_bandwidth_bytes_per_s=2e12,
    )
    cal = achievable(g, "bf16")
    h100 = achievable("H100-SXM", "bf16")  # the same issue efficiency; no power limit given
    assert cal.clock_fraction == 1.0
    assert cal.math_fraction == pytest.approx(h100.math_fraction / h100.clock_fraction)
    other = custom_gpu(
        "lab-card-2",
        architecture="ampere_ga100",
        sms=10,
        boost_clock_mhz=1000,
        memory_bandwidth_bytes_per_s=1e12,
    )
    assert achievable(other, "fp16").basis == "default"
