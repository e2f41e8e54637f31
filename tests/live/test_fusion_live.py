"""Guards live/fusion.py and live/decode.py: the fusion, attention-memory and decode models
against real PyTorch on the CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dlperf_widgets.core.fusion import attention  # noqa: E402
from dlperf_widgets.core.inference import kv_cache_bytes, llm  # noqa: E402
from dlperf_widgets.live.decode import TINY_MODEL, measure_decode  # noqa: E402
from dlperf_widgets.live.fusion import (  # noqa: E402
    attention_saved_memory,
    compare_compile,
    count_eager_ops,
)


def _epilogue(x, b, r, w):
    y = torch.nn.functional.gelu(x + b)
    return torch.nn.functional.layer_norm(y + r, (x.shape[-1],), w)


def _args():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(32, 128, generator=g), torch.randn(128, generator=g),
            torch.randn(32, 128, generator=g), torch.randn(128, generator=g))  # fmt: skip


def test_eager_chain_launches_one_kernel_per_op():
    """Eagerly, bias-add, GELU, residual add and LayerNorm are four aten kernels."""
    assert count_eager_ops(_epilogue, *_args()) == ["add", "gelu", "add", "native_layer_norm"]


@pytest.mark.slow
def test_torch_compile_fuses_the_chain_into_one_kernel():
    """Measured: TorchInductor turns the four-op chain into a single generated kernel that
    computes the same values, and the measurement keeps that kernel's source (GELU's erf
    in it) for a reader to inspect."""
    r = compare_compile(_epilogue, *_args(), repeats=3)
    assert r.eager_kernel_count == 4
    assert r.compiled_kernel_count == 1
    assert "gelu" in r.compiled_kernels[0] and "layer_norm" in r.compiled_kernels[0]
    # the generated source the notebook reads back is the code that defines that kernel,
    # kept out of the printed table
    assert r.compiled_kernels[0] in r.generated_code and "erf" in r.generated_code
    assert "generated_code" not in str(r)


def test_sdpa_saves_exactly_what_the_attention_model_predicts():
    """Measured with saved_tensors_hooks: explicit attention keeps the N x N probabilities;
    SDPA keeps the output and an FP32 log-sum-exp. The difference equals the core's
    saved_bytes_standard - saved_bytes_flash (FP32: 4-byte elements)."""
    m = attention_saved_memory(256, head_dim=32, heads=4, batch=2)
    model = attention(256, head_dim=32, heads=4, batch=2, dtype="fp32")
    assert m.outputs_match
    assert m.saved_bytes_difference == model.saved_bytes_standard - model.saved_bytes_flash


def test_decoder_weights_and_cache_match_the_core():
    """A real Llama-style decoder built from an LlmSpec has exactly spec.params parameters,
    and its KV cache tensors hold exactly kv_cache_bytes (GQA with 2 K/V heads)."""
    m = measure_decode(TINY_MODEL, batch=2, context=32, steps=2)
    assert m.params_measured == llm(TINY_MODEL).params
    assert m.weight_bytes_measured == m.weight_bytes_model
    assert m.kv_cache_bytes_measured == 2 * kv_cache_bytes(TINY_MODEL, context=32, batch=2)
    assert m.decode_step_s > 0


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: measure_decode(dtype="fp8"), "'dtype' must be one of fp32, bf16"),
        (lambda: measure_decode(context=8, steps=8), "'steps' must be an integer between"),
        (lambda: attention_saved_memory(0), "'seq_len' must be"),
    ],
)
def test_measurements_reject_bad_input(call, message):
    """Bad arguments to the measurements give the kit's one-sentence error, before any work."""
    from dlperf_widgets.core.errors import InvalidParameter

    with pytest.raises(InvalidParameter, match=message):
        call()
