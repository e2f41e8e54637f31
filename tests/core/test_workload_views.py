"""Guards the helpers of core/workload.py that other modules' views read from the kernel
list (the dropout masks a layer saves, used by the CPU memory check; the attention block,
used by the attention layer)."""

from __future__ import annotations

import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.workload import LlmSpec, dropout_mask_elements, workload


def test_dropout_mask_elements_count_the_masks_one_layer_saves():
    """Eager attention with dropout keeps three masks per layer (the probabilities', a s^2 b
    elements, and one after each residual branch, s b h each); a fused kernel drops in
    place, leaving the two s b h masks; no dropout, none."""
    s, b, h, a = 128, 2, 256, 8
    spec = LlmSpec("t", 2, h, a, a, h // a, 4 * h, 1000, gated_mlp=False, rotary=False)

    def masks(**kw):  # type: ignore[no-untyped-def]
        return dropout_mask_elements(workload(spec, phase="training", batch=b, seq=s, **kw))

    assert masks(attention="eager", dropout=True) == 2 * s * b * h + a * s * s * b
    assert masks(attention="flash2", dropout=True) == 2 * s * b * h
    assert masks(attention="eager", dropout=False) == 0
    with pytest.raises(InvalidParameter, match="'workload' must be a Workload"):
        dropout_mask_elements("llama")


def test_attention_block_keeps_the_projections_and_the_attention_core():
    """attention_block: a Llama-like layer's Q/K/V projection (grouped K and V heads),
    rotary embedding, fused attention and output projection, with their casts and
    gradients; never the norms, the MLP, the head or the optimizer. Its model FLOPs are the
    block's: 2 T (q + 2 kv) h + 2 T h q for the projections forward, plus fused attention's
    4 x (causal half of T x s pairs) x head dim x heads, three times over with the backward
    pass (2 GEMMs each for a linear layer, 2.5 x for the fused kernel), plus the rotary
    embedding and, under autocast, the weight casts of mixed precision (one operation per
    element); a 16-bit model without autocast casts nothing per forward."""
    from dlperf_widgets.core.workload import attention_block, forward_name

    s, b, h, a, kv = 256, 2, 512, 8, 2
    d = h // a
    spec = LlmSpec("t", 2, h, a, kv, d, 1024, 1000)
    w = workload(spec, phase="training", batch=b, seq=s, attention="flash2", autocast=True)
    block = attention_block(w)
    names = {forward_name(k.name) for k in block.kernels}
    assert names == {"qkv_proj", "rotary", "flash2", "o_proj"}
    assert {k.pass_ for k in block.kernels} == {"forward", "backward"}
    assert set(block.kernels) <= set(w.kernels)
    t = b * s
    proj = 2.0 * t * (a * d + 2 * kv * d) * h + 2.0 * t * h * (a * d)
    attn = 4.0 * (b * s * s * a / 2) * d
    rotary = 6.0 * t * (a * d + kv * d) * 2  # 6 operations per element, counted for 2 layers
    # BF16 autocast casts each FP32 weight once forward, and its gradient once backward
    casts = 2 * 2 * ((a * d + 2 * kv * d) * h + h * (a * d))
    expected = 3 * 2 * proj + (1 + 2.5) * 2 * attn + 2 * rotary + casts
    assert block.model_flops == pytest.approx(expected, rel=1e-12)
    sixteen_bit = attention_block(workload(spec, phase="training", batch=b, seq=s,
                                           attention="flash2"))  # fmt: skip
    assert sixteen_bit.model_flops == pytest.approx(expected - casts, rel=1e-12)
    with pytest.raises(InvalidParameter, match="'workload' must be a Workload"):
        attention_block("llama")
