"""Guards core/mfu.py: PaLM's FLOP count and MFU, Megatron-LM's formula as a second
derivation, HFU with recomputation, and the published-runs table."""

from __future__ import annotations

import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.mfu import (
    megatron_flops_per_iteration,
    mfu,
    published_mfu,
    transformer_flops_per_token,
    transformer_params,
)


def test_palm_540b_mfu():
    """PaLM (Chowdhery et al. 2022, section 4.1 and appendix B): 540B parameters, 118 layers,
    48 heads of 256 (H x Q = 12,288, not d = 18,432, in the attention term), seq 2048,
    238.3k tokens/s on 6144 TPU v4 chips of 275 TFLOP/s -> MFU 46.2 %, to the paper's digit."""
    r = mfu(
        238.3e3,
        540.35e9,
        layers=118,
        hidden=18432,
        seq_len=2048,
        attention_width=48 * 256,
        gpus=6144,
        peak_flops_per_s=275e12,
    )
    assert round(r.mfu, 3) == 0.462


@pytest.mark.parametrize(("L", "h", "s", "V"), [(96, 12288, 2048, 51200), (24, 1024, 512, 30522)])
def test_palm_and_megatron_formulas_agree(L, h, s, V):
    """6N + 12Lhs per token (N = 12 L h^2, plus the logit layer's 6Vh) equals Narayanan
    et al.'s 72 B s l h^2 (1 + s/6h + V/12lh) per iteration; with recomputation 96 (...)
    equals our HFU count."""
    b = 8
    n = transformer_params(L, h)
    per_token = transformer_flops_per_token(n, layers=L, hidden=h, seq_len=s) + 6 * V * h
    assert per_token * b * s == pytest.approx(megatron_flops_per_iteration(b, s, L, h, V))
    full = transformer_flops_per_token(n, layers=L, hidden=h, seq_len=s, recompute="full")
    assert (full + 6 * V * h) * b * s == pytest.approx(
        megatron_flops_per_iteration(b, s, L, h, V, recompute=True)
    )


@pytest.mark.parametrize(
    ("L", "h", "a", "s", "b", "V"), [(2, 256, 4, 128, 4, 1000), (4, 1024, 16, 512, 2, 32000)]
)
def test_formula_equals_the_kits_op_by_op_count(L, h, a, s, b, V):
    """The tensor contractions of core.network.transformer (every GEMM of every layer,
    forward and backward, counted op by op) add up to 6N + 12Lhs + 6Vh per token, and
    mfu(flops_per_token=...) with that count gives the same MFU as the formula."""
    from dlperf_widgets.core.network import transformer

    net = transformer(layers=L, hidden=h, heads=a, seq_len=s, batch=b, vocab=V)
    gemm_flops = sum(p.flops for p in net.ops if p.op_class == "tensor_contraction")
    n = transformer_params(L, h)
    formula = transformer_flops_per_token(n, layers=L, hidden=h, seq_len=s) + 6 * V * h
    assert gemm_flops / (b * s) == pytest.approx(formula, rel=1e-12)
    counted = mfu(1e4, flops_per_token=gemm_flops / (b * s), gpu="A100")
    by_formula = mfu(1e4, n + V * h, layers=L, hidden=h, seq_len=s, gpu="A100")
    assert counted.mfu == pytest.approx(by_formula.mfu, rel=1e-12)


def test_hfu_exceeds_mfu_only_with_recomputation():
    """HFU = MFU without recomputation; full recomputation adds a forward pass (x 4/3)."""
    kw = dict(layers=32, hidden=4096, seq_len=2048, gpus=8, gpu="H100")
    plain = mfu(2e4, 6.4e9, **kw)
    assert plain.hfu == plain.mfu
    full = mfu(2e4, 6.4e9, recompute="full", **kw)
    assert full.hfu / full.mfu == pytest.approx(4 / 3)
    sel = mfu(2e4, 6.4e9, recompute="selective", **kw)
    assert plain.hfu < sel.hfu < full.hfu
    assert plain.peak_flops_per_s == pytest.approx(989.4e12, rel=0.001)


def test_published_runs_table():
    """The table holds PaLM's 46.2 % / 57.8 % and Llama 3's 38-43 % on H100, each sourced."""
    rows = {r.run: r for r in published_mfu()}
    assert rows["PaLM 540B"].mfu == 0.462 and rows["PaLM 540B"].hfu == 0.578
    h100 = [r.mfu for r in published_mfu() if r.hardware == "H100" and r.mfu]
    assert min(h100) == 0.38 and max(h100) == 0.43
    assert all(r.source for r in published_mfu())


def test_bad_input():
    """Bad arguments raise one sentence naming the parameter."""
    with pytest.raises(InvalidParameter, match="'tokens_per_s' must be a positive number"):
        mfu(0, 1e9)
    with pytest.raises(InvalidParameter, match="'recompute'"):
        transformer_flops_per_token(1e9, recompute="some")
    with pytest.raises(InvalidParameter, match="'dtype'"):
        mfu(1e3, 1e9, gpu="V100", dtype="fp8")
    with pytest.raises(InvalidParameter, match="'params' or 'flops_per_token'"):
        mfu(1e3)
