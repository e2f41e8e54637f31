"""Guards the three composite kernels analyze_module prices as GEMMs: torch._grouped_mm
(mixture-of-experts layers), mkldnn_rnn_layer (the CPU's LSTM) and
_native_multi_head_attention (nn.MultiheadAttention's inference fast path). Each is checked
against a FLOP count written out by hand from the operation's shapes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dlperf_widgets.live.modules import analyze_module  # noqa: E402


def _gemm_flops(result, passes=None):
    return sum(
        p.flops
        for p in result.ops
        if p.op_class == "tensor_contraction" and (passes is None or p.pass_ in passes)
    )


class _Experts(torch.nn.Module):
    """Tokens already sorted by expert, each expert's rows multiplied by its own weights."""

    def __init__(self, experts: int, k: int, n: int) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(experts, k, n, dtype=torch.bfloat16))

    def forward(self, x, offs):  # type: ignore[no-untyped-def]
        return torch._grouped_mm(x, self.w, offs=offs)


def test_grouped_mm_counts_each_token_once():
    """A (tokens, K) x (experts, K, N) grouped GEMM does 2 x tokens x K x N FLOPs forward,
    not experts times as many, and is no longer listed as unpriced."""
    tokens, k, n, experts = 64, 32, 48, 4
    x = torch.randn(tokens, k, dtype=torch.bfloat16)
    offs = torch.tensor([16, 32, 48, 64], dtype=torch.int32)
    r = analyze_module(_Experts(experts, k, n), x, offs, training=False)
    assert "_grouped_mm" not in r.unpriced_ops
    assert _gemm_flops(r) == pytest.approx(2 * tokens * k * n)


def test_lstm_on_the_cpu_path_is_priced():
    """nn.LSTM on the CPU (oneDNN's mkldnn_rnn_layer): forward 2 x T x B x 4H x (I + H)
    FLOPs (the input and recurrent products of the four gates), backward twice that."""
    t, b, i, h = 7, 3, 16, 32
    lstm = torch.nn.LSTM(i, h, batch_first=True)
    r = analyze_module(lstm, torch.randn(b, t, i, requires_grad=True))
    assert not any(op.startswith("mkldnn_rnn_layer") for op in r.unpriced_ops)
    fwd = 2 * t * b * 4 * h * (i + h)
    assert _gemm_flops(r, ("forward",)) == pytest.approx(fwd)
    assert _gemm_flops(r) == pytest.approx(3 * fwd)


def test_mha_fast_path_is_priced():
    """nn.MultiheadAttention in eval mode without gradients runs one fused operation; it costs
    the QKV projection 2 B L 3E E, the scores and context 2 x 2 B L^2 E, and the output
    projection 2 B L E E, as the slow path's separate GEMMs."""
    bsz, seq, embed, heads = 2, 10, 32, 4
    mha = torch.nn.MultiheadAttention(embed, heads, batch_first=True).eval()
    q = torch.randn(bsz, seq, embed)
    r = analyze_module(mha, q, q, q, training=False)
    assert "_native_multi_head_attention" not in r.unpriced_ops
    expected = 2 * bsz * seq * 3 * embed * embed + 4 * bsz * seq * seq * embed
    expected += 2 * bsz * seq * embed * embed
    assert _gemm_flops(r) == pytest.approx(expected)


def _memory_passes(result):
    """The memory-bound kernels priced inside the fast path's one operation, by label."""
    inside = "_native_multi_head_attention."
    return {p.op.split(inside)[1]: p for p in result.ops if inside in p.op}


def test_mha_fast_path_prices_its_softmax_and_copies():
    """Beside its GEMMs the fast path runs memory-bound kernels (PyTorch's
    native_multi_head_attention): the bias add and scaling of Q, K, V (read and write 3 B L E
    values, 4 operations per triple), the softmax over B H L^2 scores (read and write them,
    5 operations each), the copy of the context back to (B, L, E) order, and, as
    need_weights is on by default, the probabilities summed over heads (read B H L^2, write
    B L^2) and divided by H. FP32 here: 4 B per value, counted by hand."""
    bsz, seq, embed, heads = 2, 10, 32, 4
    mha = torch.nn.MultiheadAttention(embed, heads, batch_first=True).eval()
    q = torch.randn(bsz, seq, embed)
    r = analyze_module(mha, q, q, q, training=False)
    mem = _memory_passes(r)
    rows, scores, averaged = bsz * seq * embed, bsz * heads * seq * seq, bsz * seq * seq
    assert mem["bias_rescale"].bytes == 6 * rows * 4
    assert mem["bias_rescale"].flops == 4 * rows
    assert mem["softmax"].bytes == 2 * scores * 4
    assert mem["softmax"].flops == 5 * scores
    assert mem["softmax"].op_class == "statistical_normalization"
    assert mem["transform_0213"].bytes == 2 * rows * 4
    assert mem["sum"].bytes == (scores + averaged) * 4
    assert mem["divide"].bytes == 2 * averaged * 4
    assert not r.unpriced_ops
    with torch.no_grad():
        lean = analyze_module(mha, q, q, q, need_weights=False, training=False)
    assert set(_memory_passes(lean)) == {"bias_rescale", "softmax", "transform_0213"}


def test_mha_fast_path_softmax_reads_its_mask():
    """With a key-padding mask, nn.MultiheadAttention passes it on as a floating-point (B, L)
    mask; the fast path turns it into a boolean mask (read 4 B, write 1 B per value) and the
    masked softmax reads that byte beside the scores."""
    bsz, seq, embed, heads = 2, 10, 32, 4
    mha = torch.nn.MultiheadAttention(embed, heads, batch_first=True).eval()
    q = torch.randn(bsz, seq, embed)
    pad = torch.zeros(bsz, seq, dtype=torch.bool)
    pad[:, -2:] = True
    r = analyze_module(mha, q, q, q, key_padding_mask=pad, need_weights=False, training=False)
    mem = _memory_passes(r)
    scores = bsz * heads * seq * seq
    assert mem["mask_to_bool"].bytes == bsz * seq * (4 + 1)
    assert mem["softmax"].bytes == 2 * scores * 4 + bsz * seq
