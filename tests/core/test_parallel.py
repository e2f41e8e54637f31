"""Guards core/parallel.py: the ZeRO paper's memory and communication figures, ring
collectives, tensor- and pipeline-parallel traffic, and their use in training_memory."""

from __future__ import annotations

import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.memory import training_memory
from dlperf_widgets.core.parallel import (
    allgather_bytes,
    allreduce_bytes,
    pipeline_parallel_comm_bytes,
    reduce_scatter_bytes,
    tensor_parallel_comm_bytes,
    zero_communication_elements,
    zero_model_state_bytes,
)


@pytest.mark.parametrize(("stage", "gb"), [(0, 120), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1(stage, gb):
    """ZeRO paper, Figure 1: a 7.5B-parameter model on 64 GPUs with mixed-precision Adam
    (K = 12) needs 120 GB per GPU, 31.4 GB (P_os), 16.6 GB (P_os+g), 1.9 GB (P_os+g+p)."""
    assert zero_model_state_bytes(7.5e9, stage, 64) / 1e9 == pytest.approx(gb, abs=0.05)


def test_zero_formulas():
    """4Psi + K Psi/Nd, 2Psi + (2+K)Psi/Nd and (4+K)Psi/Nd, written out once more."""
    psi, nd, k = 1e9, 16, 12
    assert zero_model_state_bytes(psi, 1, nd) == 4 * psi + k * psi / nd
    assert zero_model_state_bytes(psi, 2, nd) == 2 * psi + (2 + k) * psi / nd
    assert zero_model_state_bytes(psi, 3, nd) == (4 + k) * psi / nd


def test_zero_communication_volume():
    """ZeRO paper, section 7: 2 Psi per step for DP and stages 1-2, 3 Psi (1.5x) for stage 3."""
    assert [zero_communication_elements(1e9, s) for s in range(4)] == [2e9, 2e9, 2e9, 3e9]


def test_ring_collectives():
    """Ring all-reduce = reduce-scatter + all-gather = 2(n-1)/n S; tends to 2S."""
    s = 1000.0
    assert allreduce_bytes(s, 2) == s
    assert allreduce_bytes(s, 8) == reduce_scatter_bytes(s, 8) + allgather_bytes(s, 8) == 1750
    assert allreduce_bytes(s, 10**6) == pytest.approx(2 * s, rel=1e-5)


def test_training_memory_dp_traffic_matches_zero_in_fp32():
    """With equal byte sizes (FP32: 4 B weights and gradients) the per-GPU traffic of
    training_memory is the paper's 2 Psi (stages 0-2) and 3 Psi (stage 3) elements, times
    4 bytes and the ring factor (n-1)/n."""
    psi, n = 1e8, 64
    ring = (n - 1) / n
    for stage in range(4):
        r = training_memory(psi, precision="fp32", data_parallel=n, zero=stage)
        expected = zero_communication_elements(psi, stage) * 4 * ring
        assert r.data_parallel_comm_bytes == pytest.approx(expected)


def test_tensor_parallel_traffic():
    """Megatron-LM: 2 all-reduces of b*s*h activations forward and 2 backward per layer
    (6 with recomputation)."""
    act = 2048 * 8 * 4096 * 2
    assert tensor_parallel_comm_bytes(32, act, 8) == 32 * 4 * allreduce_bytes(act, 8)
    assert tensor_parallel_comm_bytes(32, act, 8, recompute=True) == 32 * 6 * allreduce_bytes(
        act, 8
    )
    assert tensor_parallel_comm_bytes(32, act, 1) == 0
    r = training_memory(
        7e9, layers=32, hidden=4096, seq_len=2048, batch=8, heads=32, tensor_parallel=8
    )
    assert r.tensor_parallel_comm_bytes == pytest.approx(32 * 4 * allreduce_bytes(act, 8))


def test_pipeline_parallel_traffic():
    """A middle stage sends every micro-batch's activation forward and gradient backward."""
    act = 1024.0
    assert pipeline_parallel_comm_bytes(act, 4, micro_batches=8) == 2 * 8 * act
    assert pipeline_parallel_comm_bytes(act, 2, micro_batches=8) == 8 * act
    r = training_memory(1e9, pipeline_parallel=2)
    assert r.pipeline_parallel_comm_bytes is None  # layer sizes unknown
    assert r.communication_bytes_per_step is None


def test_bad_input():
    """Stage outside 0..3 and a non-positive size are InvalidParameter with the value."""
    with pytest.raises(
        InvalidParameter, match=r"'stage' must be an integer between 0 and 3 \(got 5\)"
    ):
        zero_model_state_bytes(1e9, 5, 8)
    with pytest.raises(InvalidParameter, match="'params'"):
        zero_model_state_bytes(0, 1, 8)


@pytest.mark.parametrize(("stage", "gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_training_memory_reproduces_zero_figure_1_with_its_convention(stage, gb):
    """ZeRO paper, Figure 1 (7.5B parameters, 64 GPUs, mixed-precision Adam, 16-bit
    gradients): training_memory with convention='zero-paper' prints the paper's figures
    exactly at one decimal, and agrees with zero_model_state_bytes to the byte."""
    r = training_memory(
        7.5e9, optimizer="adam", data_parallel=64, zero=stage, convention="zero-paper"
    )
    assert round(r.per_gpu_bytes / 1e9, 1) == gb
    assert r.per_gpu_bytes == zero_model_state_bytes(7.5e9, stage, 64)


@pytest.mark.parametrize("stage", range(4))
def test_both_zero_functions_agree_under_the_fp32_gradient_convention(stage):
    """The default of training_memory (FP32 gradients, Megatron-LM's 18 B/parameter with
    BF16 weights) and zero_model_state_bytes(convention='fp32-grads') give the same bytes;
    at stage 1 that is Megatron-LM's distributed-optimizer figure 6 + 12/d per parameter."""
    psi, nd = 7.5e9, 64
    r = training_memory(psi, optimizer="adamw", data_parallel=nd, zero=stage)
    assert r.per_gpu_bytes == pytest.approx(
        zero_model_state_bytes(psi, stage, nd, convention="fp32-grads")
    )
    if stage == 1:
        assert r.per_gpu_bytes == pytest.approx((6 + 12 / nd) * psi)


def test_convention_is_checked_and_sets_gradient_bytes():
    """A misspelt convention is one clear error; 'zero-paper' keeps 2-byte gradients in mixed
    precision and 4-byte ones in FP32 training (the working precision)."""
    with pytest.raises(InvalidParameter, match=r"'convention' must be one of"):
        training_memory(1e9, convention="deepspeed")
    with pytest.raises(InvalidParameter, match=r"'convention' must be one of"):
        zero_model_state_bytes(1e9, 1, 8, convention="x")
    assert training_memory(1e9, convention="zero-paper").gradients_bytes_per_param == 2
    assert training_memory(1e9, precision="fp32", convention="zero-paper").gradients_bytes == 4e9
