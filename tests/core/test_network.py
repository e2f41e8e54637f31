"""Guards core/network.py: the transformer and CNN breakdowns, the R15 pattern (tensor
contractions hold ~all FLOPs but a much smaller share of runtime), and totals."""

from __future__ import annotations

import pytest

from dlperf_widgets import transformer as public_transformer
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.memlimited import OP_CLASSES
from dlperf_widgets.core.network import cnn, transformer

CONFIGS = [
    dict(layers=24, hidden=1024, heads=16, seq_len=512, batch=8, vocab=30522, gpu="V100"),
    dict(layers=12, hidden=768, heads=12, seq_len=128, batch=32, vocab=30522, gpu="A100"),
    dict(layers=48, hidden=1600, heads=25, seq_len=1024, batch=4, vocab=50257, gpu="H100"),
]


@pytest.mark.parametrize("cfg", CONFIGS)
def test_r15_contractions_hold_the_flops_not_the_runtime(cfg):
    """R15 (measured: 99.80 % FLOPs / 61.0 % runtime for contractions, 0.17 / 25.5 for
    normalizations, 0.03 / 13.5 element-wise): the model shows the same pattern: > 99 % of
    FLOPs in contractions, a clearly smaller runtime share, and the other two classes taking
    many times more of the runtime than of the FLOPs."""
    r = transformer(**cfg)
    c = r.by_class
    assert c["tensor_contraction"]["flops_share"] > 0.99
    assert c["tensor_contraction"]["runtime_share"] < 0.85
    for cls in ("statistical_normalization", "elementwise"):
        assert c[cls]["flops_share"] < 0.01
        assert c[cls]["runtime_share"] > 10 * c[cls]["flops_share"]
        assert c[cls]["runtime_share"] > 0.03


def test_class_shares_sum_to_one_and_totals_add_up():
    """Shares are fractions of the totals; the total time is the sum over operations."""
    r = transformer(layers=2, hidden=256, heads=4, seq_len=64, batch=4, vocab=1000)
    assert set(r.by_class) == set(OP_CLASSES)
    assert sum(v["flops_share"] for v in r.by_class.values()) == pytest.approx(1)
    assert sum(v["runtime_share"] for v in r.by_class.values()) == pytest.approx(1)
    assert r.total_time_s == pytest.approx(sum(p.predicted_time_s for p in r.ops))
    assert r.total_time_s == pytest.approx(r.forward_time_s + r.backward_time_s)


def test_contraction_flops_match_the_textbook_count():
    """Forward contraction FLOPs of a transformer = layers x (24 T h^2 + 4 B S^2 h) + the
    vocabulary projection 2 T h V (ffn_mult 4); training does three times that."""
    L, h, a, S, B, V = 3, 512, 8, 256, 4, 8000
    T = B * S
    fwd = L * (24 * T * h * h + 4 * B * S * S * h) + 2 * T * h * V
    r = transformer(L, h, a, S, B, V)
    assert r.by_class["tensor_contraction"]["flops"] == pytest.approx(3 * fwd)
    inf = transformer(L, h, a, S, B, V, backward=False)
    assert inf.by_class["tensor_contraction"]["flops"] == pytest.approx(fwd)
    assert {p.pass_ for p in inf.ops} == {"forward"}


def test_every_op_has_a_class_and_block_ops_repeat_per_layer():
    """Each op carries one of the three classes; ops of the repeated block count once per layer."""
    r = transformer(layers=6, hidden=256, heads=4, seq_len=64, batch=2, vocab=1000)
    assert all(p.op_class in OP_CLASSES for p in r.ops)
    qkv = next(p for p in r.ops if p.op == "block.qkv_projection" and p.pass_ == "forward")
    assert qkv.count == 6
    ln = next(p for p in r.ops if p.op == "block.ffn.layernorm" and p.pass_ == "forward")
    assert ln.op_class == "statistical_normalization"
    gelu = next(p for p in r.ops if p.op == "block.ffn.gelu")
    assert gelu.op_class == "elementwise"
    d = r.to_dict()
    assert {"ops", "by_class", "total_time_s"} <= set(d)
    assert {"class", "pass"} <= set(d["ops"][0])


def test_public_name_is_the_core_function():
    """dlperf_widgets.transformer is core.network.transformer."""
    assert public_transformer is transformer


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        (dict(hidden=1000, heads=16), "'heads' must divide hidden (1000)"),
        (dict(layers=0), "'layers' must be a positive integer (got 0)"),
        (dict(vocab=-5), "'vocab' must be a positive integer (got -5)"),
        (dict(backward="no"), "'backward' must be True or False"),
        (dict(seq_len=1 << 23), "'seq_len' must be an integer between 1 and 4194304"),
        (dict(batch=4096, seq_len=32768), "'batch' x 'seq_len' must be at most 67,108,864"),
        (dict(ffn_mult=2048), "'ffn_mult' x hidden must be at most 1,048,576"),
    ],
)
def test_bad_transformer_parameters(kwargs, needle):
    """Bad descriptions raise one clear sentence naming this function's own parameters
    (the kernel list's size limits included)."""
    with pytest.raises(InvalidParameter) as info:
        transformer(**kwargs)
    assert needle in str(info.value)


def test_cnn_tracks_shapes_through_the_layers():
    """A stride-2 conv halves 32 -> 16, a 2x2 pool halves again to 8; the linear layer then
    sees 64 x 8 x 8 inputs."""
    r = cnn(
        [
            {"kind": "conv2d", "out_channels": 64, "stride": 2},
            "batchnorm",
            "relu",
            {"kind": "maxpool", "kernel_size": 2},
            {"kind": "linear", "outputs": 10},
        ],
        batch=8,
        channels=4,
        height=32,
        width=32,
    )
    names = [p.op for p in r.ops if p.pass_ == "forward"]
    assert names == ["0.conv2d", "1.batchnorm", "2.relu", "3.maxpool", "4.linear"]
    conv = r.ops[0]
    assert (conv.m, conv.n, conv.k) == (8 * 16 * 16, 64, 4 * 9)
    fc = next(p for p in r.ops if p.op == "4.linear" and p.pass_ == "forward")
    assert (fc.m, fc.n, fc.k) == (10, 8, 64 * 8 * 8)
    assert r.by_class["tensor_contraction"]["flops_share"] > 0.9


def test_cnn_bad_layer():
    """Unknown kinds and missing required options are refused clearly."""
    with pytest.raises(InvalidParameter, match="'kind' must be one of"):
        cnn(["resblock"])
    with pytest.raises(InvalidParameter, match="'out_channels' must be given"):
        cnn(["conv2d"])


# -- the transformer is a view of the step's kernel list ----------------------------------


def _bert_step(**changes):
    from dlperf_widgets.core.workload import LlmSpec, price, workload

    kw = dict(layers=3, hidden=512, heads=8, seq_len=256, batch=4, vocab=8000)
    kw |= changes
    h = kw["hidden"]
    spec = LlmSpec("bert", kw["layers"], h, kw["heads"], kw["heads"], h // kw["heads"], 4 * h,
                   kw["vocab"], gated_mlp=False, tied_embeddings=True, rotary=False)  # fmt: skip
    w = workload(spec, phase="training", batch=kw["batch"], seq=kw["seq_len"],
                 precision="fp16", attention="eager", causal=False, dropout=True)  # fmt: skip
    return kw, price(w, "A100", timing="kernel", isolated=True)


def test_class_breakdown_is_the_priced_kernel_lists():
    """transformer() is the kernel list's class view: its by_class equals
    WorkloadTime.by_class() of the same step, and its total time is the sum of the forward
    and backward kernels' device times (the optimizer left out), each summed by hand."""
    kw, step = _bert_step()
    r = transformer(**kw, dtype="fp16", gpu="A100")
    want = step.by_class()
    for cls in OP_CLASSES:
        assert r.by_class[cls]["time_s"] == pytest.approx(want[cls]["time_s"], rel=1e-12)
        assert r.by_class[cls]["flops"] == pytest.approx(want[cls]["flops"], rel=1e-12)
    ks = step.workload.kernels
    by_hand = sum(
        float(t) * k.count
        for k, t in zip(ks, step.times_s, strict=True)
        if k.pass_ in ("forward", "backward")
    )
    assert r.total_time_s == pytest.approx(by_hand, rel=1e-12)
    assert r.total_time_s < step.device_time_s  # the optimizer is not in the view


def test_gemm_passes_are_the_gemm_model_summed_by_hand():
    """Every GEMM pass of the view costs what the kit's GEMM model gives for its shape,
    times its count: the forward FFN up-projection of BERT-large is T x 4h x h."""
    from dlperf_widgets.core.gemm import gemm

    r = transformer(layers=24, hidden=1024, heads=16, seq_len=512, batch=8, gpu="V100")
    up = next(p for p in r.ops if p.op == "block.ffn.up" and p.pass_ == "forward")
    assert (up.m, up.n, up.k, up.count) == (8 * 512, 4096, 1024, 24)
    one = gemm(8 * 512, 4096, 1024, dtype="fp16", gpu="V100").predicted_time_s
    assert up.predicted_time_s == pytest.approx(24 * one, rel=1e-9)
    gemms = [p for p in r.ops if p.m is not None]
    assert {p.pass_ for p in gemms} == {"forward", "dgrad", "wgrad"}
    for p in gemms:
        t = gemm(p.m, p.n, p.k, batch=p.batch, dtype="fp16", gpu="V100").predicted_time_s
        assert p.predicted_time_s == pytest.approx(p.count * t, rel=1e-9), p.op


def test_old_op_by_op_figures_where_they_agree():
    """The figures the earlier op-by-op description of BERT-large on a V100 gave, where it
    counted the same kernels the same way: 8.835 TFLOP of contractions' and the rest's
    arithmetic less its bias, scale and embedding operations (8.832 TFLOP), the FFN and
    projection GEMMs to the microsecond (the same GEMM model), and the contractions at
    about two thirds of the runtime (65.2 % then, the same pattern)."""
    r = transformer(layers=24, hidden=1024, heads=16, seq_len=512, batch=8, gpu="V100")
    contraction = r.by_class["tensor_contraction"]
    # 3 x (24 layers x (24 T h^2 + 4 B S^2 h) + 2 T h V): the old count's contractions
    T, h, S, B, V = 8 * 512, 1024, 512, 8, 30522
    assert contraction["flops"] == pytest.approx(3 * (24 * (24 * T * h * h + 4 * B * S * S * h)
                                                      + 2 * T * h * V))  # fmt: skip
    times = {(p.op, p.pass_): p.predicted_time_s for p in r.ops}
    assert times[("block.ffn.up", "forward")] == pytest.approx(8.47e-3, abs=0.01e-3)
    assert times[("head.projection", "dgrad")] == pytest.approx(6.02e-3, abs=0.01e-3)
    assert 0.6 < contraction["runtime_share"] < 0.7


def test_attention_gradient_gemms_move_their_batched_operands():
    """Eager attention's Q K^T and P V gradients are batched products of activations: each
    reads the output gradient and one operand and writes the other's gradient, for every
    (batch x head): 128 x (512 x 512 + 512 x 64 + 512 x 64) x 2 bytes per run."""
    r = transformer(layers=1, hidden=1024, heads=16, seq_len=512, batch=8, vocab=1000, gpu="V100")
    grads = [
        p for p in r.ops if p.op in ("block.scores_qk", "block.context_pv") and p.pass_ != "forward"
    ]
    assert len(grads) == 4
    for p in grads:
        assert p.bytes == 128 * (512 * 512 + 2 * 512 * 64) * 2


def test_forward_only_is_the_forward_pass_of_the_same_kernels():
    """backward=False keeps the forward kernels of a model stored in the dtype: no
    dropout, loss or weight casts, and the vocabulary projection over every position; its
    contraction FLOPs are a third of the training step's."""
    kw = dict(layers=2, hidden=256, heads=4, seq_len=64, batch=4, vocab=1000)
    train = transformer(**kw)
    fwd = transformer(**kw, backward=False)
    assert {p.pass_ for p in fwd.ops} == {"forward"}
    names = {p.op for p in fwd.ops}
    assert not any("dropout" in n or "weight_cast" in n or "cross_entropy" in n for n in names)
    head = next(p for p in fwd.ops if p.op == "head.projection")
    assert (head.m, head.n, head.k) == (4 * 64, 1000, 256)
    c = "tensor_contraction"
    assert 3 * fwd.by_class[c]["flops"] == pytest.approx(train.by_class[c]["flops"])
    assert fwd.backward_time_s == 0


def test_transformer_dtypes():
    """The step runs in the precisions of the kernel list; a dtype it has no recipe for
    (int8 training) is refused in one sentence, and a GPU without the dtype too."""
    assert transformer(2, 256, 4, 64, 2, 1000, dtype="fp8_e4m3", gpu="H100").dtype == "fp8_e4m3"
    with pytest.raises(InvalidParameter, match="'dtype' must be one of fp32, tf32"):
        transformer(2, 256, 4, 64, 2, 1000, dtype="int8")
    with pytest.raises(InvalidParameter):
        transformer(2, 256, 4, 64, 2, 1000, dtype="bf16", gpu="V100")
