"""Guards live/memory_check.py: the memory model against real PyTorch tensors on the CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dlperf_widgets.live.memory_check import (  # noqa: E402
    measure_activations,
    measure_autocast_state,
    measure_training_state,
)


@pytest.mark.parametrize("precision", ["fp32", "mixed-bf16", "mixed-fp16"])
@pytest.mark.parametrize("optimizer", ["sgd", "sgd-momentum", "adam", "adamw"])
def test_state_bytes_equal_the_model_exactly(optimizer, precision):
    """R14 measured: after one optimizer step the bytes of parameters (FP32 master + 16-bit
    copy when mixed), FP32 gradients and per-parameter optimizer states equal the model's
    4/6 + 4 + 0/4/8 bytes per parameter exactly."""
    r = measure_training_state(optimizer=optimizer, precision=precision)
    assert r.matches
    assert r.weights_bytes == r.model_weights_bytes
    assert r.gradients_bytes == r.model_gradients_bytes == 4 * r.params
    assert r.optimizer_bytes == r.model_optimizer_bytes


def test_adam_bookkeeping_is_reported_apart():
    """Adam's per-tensor step counters (4 bytes each) are the only extra optimizer bytes."""
    r = measure_training_state(optimizer="adamw")
    assert r.optimizer_bookkeeping_bytes == 4 * r.param_tensors
    assert measure_training_state(optimizer="sgd-momentum").optimizer_bookkeeping_bytes == 0


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_autocast_keeps_fp32_state_and_temporary_16_bit_casts(dtype):
    """The torch.autocast workflow keeps FP32 weights and gradients (4 + 4 B/parameter, plus
    AdamW's 8): the model's FP32 accounting, not the 6-byte master-copy scheme. Autograd holds
    a 16-bit cast of a weight only where the backward needs it: the second Linear's weight
    (its input needs a gradient), not the first's (its input is data), 2 bytes each."""
    r = measure_autocast_state(dtype=dtype)
    assert r.matches
    assert r.weights_bytes == r.gradients_bytes == 4 * r.params
    assert r.optimizer_bytes == 8 * r.params
    assert r.weight_casts_bytes == 2 * 256 * 64


def test_autocast_measurement_rejects_a_bad_dtype():
    """One sentence naming the parameter, as everywhere in the kit."""
    with pytest.raises(ValueError, match="'dtype' must be one of"):
        measure_autocast_state(dtype="fp8")


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_transformer_activations_within_10_percent(dtype, dropout):
    """Bytes autograd saves for one transformer block (saved_tensors_hooks) are within 10 %
    of Korthikanti et al.'s count (mask bytes = element size on the CPU); the only excess
    is the LayerNorm statistics the formula leaves out."""
    r = measure_activations(64, 2, 64, 4, dtype=dtype, dropout=dropout)
    assert r.ratio == pytest.approx(1.0, abs=0.10)
    assert r.measured_bytes - r.layernorm_stats_bytes == r.model_bytes


def test_checkpoint_keeps_only_the_block_input():
    """Under torch.utils.checkpoint the block keeps only its input: s*b*h elements."""
    full = measure_activations(64, 2, 64, 4)
    ckpt = measure_activations(64, 2, 64, 4, checkpoint=True)
    assert ckpt.measured_bytes == ckpt.model_bytes == 64 * 2 * 64 * 4
    assert full.measured_bytes / ckpt.measured_bytes > 25


def test_activations_scale_with_sequence_like_the_formula():
    """Doubling the sequence length grows the measurement as the formula's s and s^2 terms."""
    a = measure_activations(32, 2, 64, 4, dropout=0.0)
    b = measure_activations(64, 2, 64, 4, dropout=0.0)
    assert b.measured_bytes / a.measured_bytes == pytest.approx(
        b.model_bytes / a.model_bytes, rel=0.01
    )


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("dropout", [True, False])
def test_block_model_is_the_papers_count_with_cpu_masks(dtype, dropout):
    """The kernel list's saved tensors for the measured block equal Korthikanti et al.'s
    closed form s*b*h*(16p + 2m) + a*s^2*b*(2p + m) with masks at the element size (m = p,
    PyTorch's CPU dropout), an independent count of the same tensors."""
    from dlperf_widgets.core.memory import transformer_activation_bytes
    from dlperf_widgets.live.memory_check import block_model_bytes

    p = 4 if dtype == "fp32" else 2
    layer, layer_input, _ = block_model_bytes(128, 2, 256, 8, dtype=dtype, dropout=dropout)
    paper = transformer_activation_bytes(
        128, 2, 256, 8, bytes_per_element=p, mask_bytes=p, dropout=dropout
    )
    assert layer == paper.total_bytes
    assert layer_input == paper.layer_input_bytes == 128 * 2 * 256 * p
