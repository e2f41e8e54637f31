"""Guards core/sparsity.py: 2:4 magnitude pruning, the pattern check, and R18's speed-ups."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.calibration import overlap_time
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gemm import gemm
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.core.sparsity import (
    amdahl_speedup,
    check_2_4,
    compressed_weight_fraction,
    prune_2_4,
    sparse_fraction_for_speedup,
    sparse_gemm,
)


def test_r18_two_of_every_four_are_zero():
    """R18: after pruning, exactly 2 of every 4 consecutive weights (along the inputs) are 0,
    and the kept ones are the two largest in magnitude (checked against a per-group loop)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 128)).astype(np.float32)
    r = prune_2_4(w)
    groups = r.weights.reshape(64, 32, 4)
    assert ((groups == 0).sum(axis=-1) == 2).all()
    assert r.valid and check_2_4(r.weights) and not check_2_4(w)
    assert r.kept_fraction == 0.5 and r.weights.dtype == np.float32
    for row in range(0, 64, 7):
        for g in range(32):
            block = w[row, 4 * g : 4 * g + 4]
            keep = sorted(np.argsort(-np.abs(block), kind="stable")[:2])
            expected = np.zeros(4, np.float32)
            expected[keep] = block[keep]
            np.testing.assert_array_equal(r.weights[row, 4 * g : 4 * g + 4], expected)


def test_pruning_along_another_axis_and_ties():
    """axis=0 prunes down the columns; equal magnitudes keep the earlier weights."""
    w = np.ones((8, 3))
    r = prune_2_4(w, axis=0)
    np.testing.assert_array_equal(r.mask[:, 0], [True, True, False, False] * 2)
    assert check_2_4(r.weights, axis=0)
    assert r.kept_l1_fraction == 0.5


def test_r18_sparse_rate_is_twice_dense():
    """R18 / the slides' FMA table: sparse Tensor Cores run at 2x the dense rate (A100)."""
    a100 = gpu("A100")
    for dt in ("fp16", "bf16", "tf32", "int8"):
        assert a100.peak_flops(dt, sparse=True) == pytest.approx(2 * a100.peak_flops(dt))


def test_math_bound_gemm_doubles_memory_bound_does_not():
    """A math-bound GEMM (8192^3, FP16, A100) runs 2x faster; a memory-bound one
    (8192 x 8 x 8192, whose memory time exceeds even its tile-quantized math time) gains
    nothing."""
    big = sparse_gemm(8192, 8192, 8192)
    # nearly 2x: the fixed cost per kernel and the memory time do not shrink
    assert big.limiter == "math" and big.gemm_speedup == pytest.approx(2.0, rel=0.01)
    dense = gemm(8192, 8, 8192)
    assert dense.memory_time_s > dense.math_time_s  # memory-bound in the dense model
    small = sparse_gemm(8192, 8, 8192)
    assert small.gemm_speedup == pytest.approx(1.0, rel=1e-3)


def test_r18_up_to_30_percent_end_to_end():
    """R18: 'up to ~30 %' end to end. Amdahl: with 2x GEMMs a 30 % faster step needs 46 %
    of the time in sparsifiable, math-bound GEMMs; half the time gives 33 %; 100 % gives 2x."""
    assert sparse_fraction_for_speedup(1.3, 2.0) == pytest.approx(0.4615, abs=1e-4)
    assert amdahl_speedup(0.4615, 2.0) == pytest.approx(1.30, abs=1e-3)
    assert amdahl_speedup(0.5, 2.0) == pytest.approx(4 / 3)
    assert amdahl_speedup(1.0, 2.0) == 2.0 and amdahl_speedup(0.0, 2.0) == 1.0
    f = np.linspace(0, 1, 11)
    assert np.all(np.diff(amdahl_speedup(f, 2.0)) > 0)
    r = sparse_gemm(8192, 8192, 8192, runtime_fraction=0.4615)
    assert r.end_to_end_speedup == pytest.approx(1.30, abs=1e-3)


def test_bad_input():
    """Sizes not divisible by 4, GPUs without sparse Tensor Cores and fractions outside [0, 1]."""
    with pytest.raises(InvalidParameter, match=r"multiple of 4 elements along axis -1 .*got 6"):
        prune_2_4(np.ones((2, 6)))
    with pytest.raises(InvalidParameter, match="sparse"):
        sparse_gemm(1024, 1024, 1024, gpu="V100")
    with pytest.raises(InvalidParameter, match="'fraction'"):
        amdahl_speedup(1.5, 2.0)


def test_compressed_weights_speed_up_a_weight_streaming_gemv():
    """2:4-compressed FP16 weights take 36 of every 64 bits (two 16-bit values and two 2-bit
    indices per group of 4): 56.25 % of the dense bytes, 62.5 % for INT8. A batch-1 GEMV
    that streams its weights then moves that fraction of its weight bytes (here recomputed
    from the sizes and the A100's achievable bandwidth), plus the kernel's fixed cost,
    while the default credits nothing."""
    assert compressed_weight_fraction("fp16") == pytest.approx(36 / 64)
    assert compressed_weight_fraction("int8") == pytest.approx(20 / 32)
    dense = gemm(8192, 1, 8192)
    assert dense.memory_time_s > dense.math_time_s
    r = sparse_gemm(8192, 1, 8192, compressed_weights=True)
    bw = gpu("A100").memory_bandwidth_bytes_per_s * dense.memory_fraction
    memory = (8192 * 8192 * 2 * 36 / 64 + (8192 + 8192) * 2) / bw
    expected = dense.kernel_overhead_s + overlap_time(dense.math_time_s / 2, memory)
    assert r.sparse_time_s == pytest.approx(expected)
    assert 1.5 < r.gemm_speedup < 1.78  # the fixed cost per kernel does not shrink
    assert sparse_gemm(8192, 1, 8192).gemm_speedup == pytest.approx(1.0, rel=1e-3)
    with pytest.raises(InvalidParameter, match="'compressed_weights' must be True or False"):
        sparse_gemm(8192, 1, 8192, compressed_weights="yes")
