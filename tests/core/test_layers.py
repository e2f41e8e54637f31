"""Guards core/layers.py: layers mapped onto GEMM and memory passes (R06, R07, the
linear-layer mapping, implicit-GEMM convolution, recurrent and attention layers), the
catalogue of kinds that widgets and the CLI drive, and the errors for bad layers."""

from __future__ import annotations

import math

import pytest

from dlperf_widgets import layer as public_layer
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gemm import gemm, gemm_sweep
from dlperf_widgets.core.layers import LAYER_KINDS, LayerResult, layer


def test_r06_linear_batch_512_is_math_bound_at_315():
    """R06: 4096 outputs, 1024 inputs, batch 512, FP16 on V100: AI ~ 315 FLOP/B, arithmetic."""
    fwd = layer(
        "linear", batch=512, inputs=1024, outputs=4096, dtype="fp16", gpu="V100"
    ).pass_named("forward")
    assert round(fwd.arithmetic_intensity) == 315
    assert fwd.limiter == "math"


def test_r07_linear_batch_1_is_memory_bound_at_1():
    """R07: the same layer with batch 1: AI ~ 1 FLOP/B, limited by memory."""
    fwd = layer("linear", batch=1, inputs=1024, outputs=4096, dtype="fp16", gpu="V100").pass_named(
        "forward"
    )
    assert round(fwd.arithmetic_intensity) == 1
    assert fwd.limiter == "memory"


def test_linear_layer_gemm_mapping():
    """NVIDIA linear-layer guide: forward (M, N, K) = (outputs, batch, inputs); dgrad
    (inputs, batch, outputs); wgrad (inputs, outputs, batch)."""
    r = layer("linear", batch=64, inputs=1024, outputs=4096)
    dims = {p.pass_: (p.m, p.n, p.k) for p in r.passes}
    assert dims == {
        "forward": (4096, 64, 1024),
        "dgrad": (1024, 64, 4096),
        "wgrad": (1024, 4096, 64),
    }


def test_linear_batch_is_batch_times_sequence():
    """In a transformer the GEMM batch is batch x sequence length."""
    r = layer("linear", batch=8, seq_len=512, inputs=1024, outputs=4096)
    assert r.pass_named("forward").n == 8 * 512
    assert r.pass_named("wgrad").k == 8 * 512


def test_linear_passes_take_their_numbers_from_the_gemm_model():
    """A linear pass is the core GEMM: same FLOPs, bytes, limiter and predicted time."""
    r = layer("linear", batch=2048, inputs=4096, outputs=4096, gpu="A100")
    for p in r.passes:
        g = gemm(p.m, p.n, p.k, dtype="fp16", gpu="A100")
        assert p.flops == g.flops == 2 * p.m * p.n * p.k
        assert p.bytes == g.bytes
        assert p.limiter == g.limiter
        assert p.predicted_time_s == pytest.approx(g.predicted_time_s)


def test_split_k_never_slower_than_the_plain_gemm():
    """A weight gradient with few output tiles and a huge K may use split-K; the model
    takes it only when it is faster than the plain GEMM of the same shape."""
    r = layer("conv2d", batch=64, in_channels=64, out_channels=64, height=56, width=56)
    w = r.pass_named("wgrad")
    plain = gemm(w.m, w.n, w.k, dtype="fp16", gpu="A100")
    assert w.predicted_time_s <= plain.predicted_time_s
    assert w.flops == plain.flops


def test_training_false_keeps_only_the_forward_pass():
    """Inference has no gradient passes."""
    r = layer("linear", training=False)
    assert [p.pass_ for p in r.passes] == ["forward"]
    assert r.backward_time_s == 0


def test_conv2d_implicit_gemm_dimensions():
    """Convolution guide: forward M = N*P*Q, N = K, K = C*R*S; wgrad M = C*R*S, N = K,
    K = N*P*Q; dgrad M = N*H*W, N = C, K = K*R*S (stride 1)."""
    r = layer(
        "conv2d",
        batch=32,
        in_channels=64,
        out_channels=128,
        height=56,
        width=56,
        kernel_size=3,
        stride=1,
        padding=1,
    )
    assert (r.pass_named("forward").m, r.pass_named("forward").n, r.pass_named("forward").k) == (
        32 * 56 * 56,
        128,
        64 * 9,
    )
    assert (r.pass_named("dgrad").m, r.pass_named("dgrad").n, r.pass_named("dgrad").k) == (
        32 * 56 * 56,
        64,
        128 * 9,
    )
    assert (r.pass_named("wgrad").m, r.pass_named("wgrad").n, r.pass_named("wgrad").k) == (
        64 * 9,
        128,
        32 * 56 * 56,
    )


def test_conv2d_output_size_stride_padding_dilation():
    """P = floor((H + 2 pad - dil (R - 1) - 1) / stride) + 1: ResNet's stem 224 -> 112;
    a dilated 3x3 (dilation 2, no padding) on 32 -> 28."""
    stem = layer(
        "conv2d",
        batch=1,
        in_channels=4,
        out_channels=64,
        height=224,
        width=224,
        kernel_size=7,
        stride=2,
        padding=3,
    ).pass_named("forward")
    assert stem.m == 112 * 112
    dil = layer(
        "conv2d",
        batch=1,
        in_channels=8,
        out_channels=8,
        height=32,
        width=32,
        kernel_size=3,
        padding=0,
        dilation=2,
    ).pass_named("forward")
    assert dil.m == 28 * 28


def test_conv2d_groups_are_a_batched_gemm_with_the_right_flops():
    """With g groups each GEMM sees C/g and K/g channels: FLOPs = 2 N K P Q (C/g) R S."""
    r = layer(
        "conv2d",
        batch=8,
        in_channels=64,
        out_channels=128,
        height=28,
        width=28,
        kernel_size=3,
        padding=1,
        groups=4,
    )
    fwd = r.pass_named("forward")
    assert fwd.batch == 4
    assert (fwd.n, fwd.k) == (128 // 4, 64 // 4 * 9)
    assert fwd.flops == 2 * 8 * 128 * 28 * 28 * (64 // 4) * 9


def test_conv2d_bytes_are_the_real_tensors():
    """Implicit GEMM never builds the unrolled matrix: bytes = input + filter + output."""
    fwd = layer(
        "conv2d",
        batch=2,
        in_channels=16,
        out_channels=32,
        height=10,
        width=10,
        kernel_size=3,
        padding=1,
        dtype="fp16",
    ).pass_named("forward")
    assert fwd.bytes == 2 * (2 * 16 * 100 + 32 * 16 * 9 + 2 * 32 * 100)


def test_depthwise_conv_is_memory_limited_not_a_gemm():
    """Depthwise (groups = C) runs as a direct kernel: no GEMM shape, memory-limited, same FLOPs."""
    r = layer(
        "conv2d",
        batch=32,
        in_channels=64,
        out_channels=64,
        height=56,
        width=56,
        kernel_size=3,
        padding=1,
        groups=64,
    )
    fwd = r.pass_named("forward")
    assert fwd.k is None
    assert fwd.limiter == "memory"
    assert fwd.flops == 2 * 32 * 64 * 56 * 56 * 9
    assert fwd.op_class == "tensor_contraction"


def test_nchw_layout_adds_transposes_and_time():
    """Tensor Core convolutions want NHWC; NCHW pays a transpose around every pass."""
    kw = dict(batch=32, in_channels=64, out_channels=64, height=56, width=56)
    nhwc = layer("conv2d", layout="nhwc", **kw)
    nchw = layer("conv2d", layout="nchw", **kw)
    assert not any(p.op == "nchw_transpose" for p in nhwc.passes)
    assert sum(p.op == "nchw_transpose" for p in nchw.passes) == 3
    assert nchw.predicted_time_s > nhwc.predicted_time_s


@pytest.mark.parametrize(("kind", "gates"), [("lstm", 4), ("gru", 3)])
def test_recurrent_gate_gemms(kind, gates):
    """Gate GEMMs have M = gates x H; the input part is one GEMM over batch*seq columns, the
    recurrent part one GEMM per step; forward FLOPs = 2 seq batch G H (input + H)."""
    b, i, h, s = 64, 512, 1024, 20
    r = layer(kind, batch=b, input_size=i, hidden_size=h, seq_len=s)
    inp = r.pass_named("forward", "input_gates")
    rec = r.pass_named("forward", "recurrent_gates")
    assert (inp.m, inp.n, inp.k, inp.count) == (gates * h, b * s, i, 1)
    assert (rec.m, rec.n, rec.k, rec.count) == (gates * h, b, h, s)
    gemm_flops = sum(p.flops for p in r.passes if p.pass_ == "forward" and p.is_gemm)
    assert gemm_flops == 2 * s * b * gates * h * (i + h)
    # the backward GEMMs do twice the forward work
    back = sum(p.flops for p in r.passes if p.pass_ != "forward" and p.is_gemm)
    assert back == 2 * gemm_flops


def test_recurrent_step_time_is_total_over_count():
    """Per step and per sequence: the recurrent pass's time is count x one step's time."""
    r = layer("lstm", seq_len=10)
    r20 = layer("lstm", seq_len=20)
    assert r20.pass_named("forward", "recurrent_gates").predicted_time_s == pytest.approx(
        2 * r.pass_named("forward", "recurrent_gates").predicted_time_s
    )


def test_attention_forward_flops_match_the_textbook_formula():
    """Self-attention forward: 8 T h^2 (Q, K, V and output projections) + 4 B S^2 h
    (scores and context), T = B S tokens."""
    b, s, h, a = 4, 384, 768, 12
    r = layer("attention", batch=b, seq_len=s, hidden=h, heads=a)
    fwd = sum(p.flops for p in r.passes if p.pass_ == "forward" and p.is_gemm)
    assert fwd == 8 * b * s * h * h + 4 * b * s * s * h
    scores = r.pass_named("forward", "scores_qk")
    assert (scores.m, scores.n, scores.k, scores.batch) == (s, s, h // a, b * a)
    softmax = r.pass_named("forward", "attention_softmax")
    assert softmax.op_class == "statistical_normalization"
    assert softmax.flops == 5 * b * a * s * s


def test_attention_separate_qkv_is_three_gemms_of_the_same_work():
    """Separate projections: three GEMMs of h outputs (N = h) instead of one of 3h, on the
    same T = batch x seq_len tokens (M)."""
    kw = dict(batch=2, seq_len=128, hidden=512, heads=8)
    cat = layer("attention", qkv="concatenated", **kw).pass_named("forward", "qkv_projection")
    sep = layer("attention", qkv="separate", **kw).pass_named("forward", "q_k_v_projections")
    assert (cat.m, cat.n, cat.k, cat.count) == (2 * 128, 3 * 512, 512, 1)
    assert (sep.m, sep.n, sep.k, sep.count) == (2 * 128, 512, 512, 3)
    assert sep.flops == cat.flops


def _gemm_s(m, n, k, batch=1, dtype="fp16", gpu="A100"):
    """One GEMM's predicted time from the GEMM model, called directly."""
    return float(gemm_sweep(m, n, k, batch=batch, dtype=dtype, gpu=gpu).predicted_time_s)


def test_attention_gemms_are_the_gemm_model_summed_by_hand():
    """The attention layer's GEMM passes are the textbook GEMMs of the block, each priced by
    the GEMM model called directly: projections over T = batch x seq tokens (Q/K/V: 3h
    outputs, output projection: h, each with an input and a weight gradient), and per head
    Q K^T, P V with their two activation gradients each (Vaswani et al. 2017)."""
    b, s, h, a = 8, 512, 1024, 16
    t, d, bh = b * s, h // a, b * a
    r = layer("attention", batch=b, seq_len=s, hidden=h, heads=a, dtype="fp16", gpu="A100")
    by_hand = [
        (t, 3 * h, h, 1), (t, h, 3 * h, 1), (h, 3 * h, t, 1),  # QKV: forward, dgrad, wgrad
        (t, h, h, 1), (t, h, h, 1), (h, h, t, 1),  # output projection
        (s, s, d, bh), (s, d, s, bh), (d, s, s, bh),  # Q K^T, dQ = dS K, dK = dS^T Q
        (s, d, s, bh), (s, s, d, bh), (s, d, s, bh),  # P V, dP = dO V^T, dV = P^T dO
    ]  # fmt: skip
    gemms = [p for p in r.passes if p.is_gemm]
    assert sorted((p.m, p.n, p.k, p.batch) for p in gemms) == sorted(by_hand)
    expected = sum(_gemm_s(*shape) for shape in by_hand)
    assert sum(p.predicted_time_s for p in gemms) == pytest.approx(expected, rel=1e-12)
    assert sum(p.flops for p in gemms) == sum(2.0 * m * n * k * bt for m, n, k, bt in by_hand)


def test_attention_softmax_keeps_the_memory_limited_model():
    """The softmax over the batch x heads x S x S scores costs what core.memlimited's
    softmax of that many elements costs, forward and backward, with the same bytes (the
    figures the layer gave before it became a view of the kernel list, which were right)."""
    from dlperf_widgets.core.memlimited import memory_op

    b, s, h, a = 4, 384, 768, 12
    r = layer("attention", batch=b, seq_len=s, hidden=h, heads=a, dtype="fp16", gpu="A100")
    fwd, bwd = memory_op("softmax", elements=b * a * s * s, dtype="fp16", gpu="A100")
    assert r.pass_named("forward", "attention_softmax").predicted_time_s == pytest.approx(
        fwd.predicted_time_s, rel=1e-12
    )
    # the kernel list counts the backward's operations as the forward's (5 per element,
    # memlimited 4): memory-bound either way, the time differs in the sixth digit
    assert r.pass_named("backward", "attention_softmax").predicted_time_s == pytest.approx(
        bwd.predicted_time_s, rel=1e-4
    )
    assert r.pass_named("backward", "attention_softmax").bytes == bwd.bytes


def test_attention_in_fp32_is_gemms_plus_softmax_and_nothing_else():
    """Without mixed precision (FP32) the layer's time is its twelve GEMMs and the softmax's
    two passes, nothing more: the view adds no kernel the block does not run."""
    r = layer("attention", batch=2, seq_len=256, hidden=512, heads=8, dtype="fp32", gpu="A100")
    ops = {p.op for p in r.passes}
    assert ops == {"qkv_projection", "scores_qk", "attention_softmax", "context_pv",
                   "output_projection"}  # fmt: skip
    assert len(r.passes) == 14


def test_attention_keeps_its_weights_in_its_dtype():
    """Like every layer kind (and `dlperf time layer`, which runs it with weights in the
    dtype), the attention layer in FP16 runs its GEMMs and softmax and no cast of FP32
    master weights; a forward-only layer has the same forward passes."""
    h = 1024
    r = layer("attention", batch=8, seq_len=512, hidden=h, heads=16, dtype="fp16")
    assert not [p for p in r.passes if "cast" in p.op]
    assert len(r.passes) == 14
    inference = layer("attention", batch=8, seq_len=512, hidden=h, heads=16, training=False)
    assert {p.pass_ for p in inference.passes} == {"forward"}
    for op in ("qkv_projection", "scores_qk", "context_pv", "output_projection"):
        assert inference.pass_named("forward", op).predicted_time_s == pytest.approx(
            r.pass_named("forward", op).predicted_time_s, rel=1e-12
        )


def test_fp8_attention_casts_each_gemm_input():
    """An FP8 (E4M3) GEMM reads its input in FP8: each projection's input is cast from BF16
    first (read 2 B, write 1 B per element, as Transformer Engine's recipes do), and the
    attention core stays in 16 bits."""
    b, s, h = 2, 256, 512
    r = layer("attention", batch=b, seq_len=s, hidden=h, heads=8, dtype="fp8_e4m3", gpu="H100")
    cast = r.pass_named("forward", "qkv_projection.input_cast")
    assert cast.bytes == b * s * h * (2 + 1)
    assert r.pass_named("forward", "output_projection.input_cast").bytes == b * s * h * (2 + 1)
    assert not [p for p in r.passes if "weight_cast" in p.op]


def test_attention_layer_is_the_transformers_attention_block():
    """One description: the attention layer's passes have the same FLOPs and times as the
    attention block of the transformer's class breakdown (core.network.transformer, a view
    of the same kernel list), one layer of it."""
    from dlperf_widgets.core.network import transformer

    kw = dict(hidden=512, heads=8, seq_len=256, batch=4, dtype="fp16", gpu="A100")
    r = layer("attention", **kw)
    net = transformer(layers=1, vocab=1000, **kw)
    pairs = {
        "qkv_projection": "block.qkv_projection",
        "scores_qk": "block.scores_qk",
        "attention_softmax": "block.attention_softmax",
        "context_pv": "block.context_pv",
        "output_projection": "block.output_projection",
    }
    for mine, theirs in pairs.items():
        a = [p for p in r.passes if p.op == mine]
        b = [p for p in net.ops if p.op == theirs]
        assert sum(p.flops for p in a) == sum(p.flops for p in b), mine
        assert sum(p.predicted_time_s for p in a) == pytest.approx(
            sum(p.predicted_time_s for p in b), rel=1e-12
        ), mine


def test_attention_separate_projections_are_three_output_projections():
    """Separate Q, K and V: three GEMMs, each of the output projection's shape (T x h x h),
    priced by the GEMM model; the concatenated projection is faster on the same FLOPs."""
    b, s, h = 8, 512, 1024
    kw = dict(batch=b, seq_len=s, hidden=h, heads=16, dtype="fp16", gpu="A100")
    sep = layer("attention", qkv="separate", **kw)
    cat = layer("attention", qkv="concatenated", **kw)
    fwd = sep.pass_named("forward", "q_k_v_projections")
    assert fwd.predicted_time_s == pytest.approx(3 * _gemm_s(b * s, h, h), rel=1e-12)
    assert fwd.flops == cat.pass_named("forward", "qkv_projection").flops
    assert sep.predicted_time_s > cat.predicted_time_s


def test_attention_gemm_limiters_are_the_gemm_models():
    """Each GEMM pass says what limits it as the GEMM model does for that shape: a small
    layer's projections are too small to fill the GPU ('latency'), which a comparison of
    math and DRAM time alone would call math- or memory-bound."""
    b, s, h, a = 1, 64, 256, 4
    r = layer("attention", batch=b, seq_len=s, hidden=h, heads=a, dtype="fp16", gpu="A100")
    for p in r.passes:
        if p.is_gemm:
            expected = gemm_sweep(p.m, p.n, p.k, batch=p.batch, dtype="fp16", gpu="A100")
            assert p.limiter == str(expected.limiter), (p.op, p.pass_)
    assert r.pass_named("forward", "qkv_projection").limiter == "latency"


def test_attention_backward_runs_in_reverse_order():
    """The backward passes are listed in the order autograd runs them: the output
    projection's first, the Q/K/V projection's last."""
    r = layer("attention")
    back = [p.op.split(".")[0] for p in r.passes if p.pass_ != "forward"]
    assert back[0] == "output_projection" and back[-1] == "qkv_projection"
    assert back.index("context_pv") < back.index("attention_softmax") < back.index("scores_qk")


def test_embedding_and_vocab_projection():
    """An embedding lookup is a gather (no arithmetic); the vocabulary projection is a
    linear layer with outputs = vocabulary."""
    emb = layer("embedding", batch=8, seq_len=128, vocab=32000, hidden=512)
    assert emb.pass_named("forward").flops == 0
    assert emb.pass_named("forward").bytes == 2 * 8 * 128 * 512 * 2 + 8 * 8 * 128
    proj = layer("projection", batch=8, seq_len=128, hidden=512, vocab=32000)
    fwd = proj.pass_named("forward")
    assert (fwd.m, fwd.n, fwd.k) == (32000, 8 * 128, 512)


def test_every_kind_runs_with_its_defaults():
    """The catalogue a widget drives: every kind has options with defaults and help, and
    runs as is; its result is JSON-ready with the documented keys."""
    for name, spec in LAYER_KINDS.items():
        assert all(o.help for o in spec.options)
        r = layer(name)
        assert isinstance(r, LayerResult)
        d = r.to_dict()
        assert {"layer", "passes", "findings"} <= set(d)
        for p in d["passes"]:
            assert {
                "pass",
                "m",
                "n",
                "k",
                "flops",
                "bytes",
                "arithmetic_intensity",
                "limiter",
                "predicted_time_s",
                "class",
            } <= set(p)
        assert "passes" in str(r) or r.layer in str(r)


def test_public_name_is_the_core_function():
    """dlperf_widgets.layer is core.layers.layer."""
    assert public_layer is layer


def test_totals_add_up():
    """Layer totals are the sums over passes."""
    r = layer("attention")
    assert r.flops == pytest.approx(sum(p.flops for p in r.passes))
    assert r.predicted_time_s == pytest.approx(r.forward_time_s + r.backward_time_s)
    assert math.isclose(r.predicted_time_s, sum(p.predicted_time_s for p in r.passes))


@pytest.mark.parametrize(
    ("kind", "options", "needle"),
    [
        ("linear", {"batch": -3}, "'batch' must be a positive integer (got -3)"),
        ("linear", {"inputs": 0}, "'inputs' must be a positive integer (got 0)"),
        ("linear", {"outputs": 2.5}, "'outputs' must be a positive integer"),
        (
            "conv2d",
            {"height": 4, "width": 4, "kernel_size": 7, "padding": 1},
            "'kernel_size' must fit in the padded input 6x6",
        ),
        ("conv2d", {"in_channels": 6, "groups": 4}, "'groups' must divide"),
        ("conv2d", {"padding": -1}, "'padding' must be a non-negative integer"),
        ("conv2d", {"layout": "nhcw"}, "'layout' must be one of nhwc, nchw"),
        ("conv2d", {"kernel_size": (3, 3, 3)}, "'kernel_size' must be an integer or a pair"),
        ("attention", {"hidden": 1000, "heads": 16}, "'heads' must divide hidden (1000)"),
        ("attention", {"heads": 0}, "'heads' must be a positive integer (got 0)"),
        ("attention", {"seq_len": 2**23}, "'seq_len' must be"),
        ("attention", {"hidden": 2**21, "heads": 1}, "'hidden' must be"),
        ("attention", {"batch": 2**16, "seq_len": 2**11}, "'batch' x 'seq_len' must be at most"),
        ("attention", {"qkv": "split"}, "'qkv' must be one of concatenated, separate"),
        ("attention", {"dtype": "int8"}, "'dtype' must be one of fp32, tf32, fp16, bf16"),
        ("attention", {"dtype": "fp64"}, "for an attention layer (got 'fp64')"),
        ("lstm", {"seq_len": 0}, "'seq_len' must be a positive integer"),
        ("relu", {"kernel_size": 3}, "'kernel_size' is not an option of relu"),
        ("linear", {"training": "yes"}, "'training' must be True or False"),
        ("convolution", {}, "'kind' must be one of"),
    ],
)
def test_bad_layers_give_one_clear_sentence(kind, options, needle):
    """Bad layer parameters raise InvalidParameter naming parameter, rule and value."""
    with pytest.raises(InvalidParameter) as info:
        layer(kind, **options)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_gpu_that_lacks_the_dtype_is_refused():
    """bf16 on a V100 has no execution unit: the GPU's standard message."""
    with pytest.raises(InvalidParameter, match="'dtype'"):
        layer("linear", dtype="bf16", gpu="V100")


def test_first_layer_needs_no_input_gradient():
    """input_grad=False drops dgrad only: the weights still train (wgrad stays)."""
    base = dict(
        batch=32,
        in_channels=3,
        out_channels=64,
        height=224,
        width=224,
        kernel_size=7,
        stride=2,
        padding=3,
        gpu="A100",
    )
    full = layer("conv2d", **base)
    first = layer("conv2d", **base, input_grad=False)
    assert [p.pass_ for p in full.passes] == ["forward", "dgrad", "wgrad"]
    assert [p.pass_ for p in first.passes] == ["forward", "wgrad"]
    dgrad = next(p for p in full.passes if p.pass_ == "dgrad")
    assert first.predicted_time_s == pytest.approx(full.predicted_time_s - dgrad.predicted_time_s)
    lin = layer("linear", batch=64, inputs=512, outputs=512, input_grad=False)
    assert [p.pass_ for p in lin.passes] == ["forward", "wgrad"]


def test_cnn_first_conv_can_skip_dgrad():
    """cnn(input_grad=False): the first conv reads data and has no dgrad; later ones do."""
    from dlperf_widgets.core.network import cnn

    spec = [
        ("conv2d", {"out_channels": 64, "kernel_size": 7, "stride": 2}),
        ("conv2d", {"out_channels": 64}),
    ]

    def passes(net):
        return [(op.op, op.pass_) for op in net.ops if op.op.endswith("conv2d")]

    from_data = passes(cnn(spec, input_grad=False))
    assert [p for p in from_data if p[1] == "dgrad"] == [("1.conv2d", "dgrad")]
    assert len([p for p in from_data if p[1] == "wgrad"]) == 2
    block = passes(cnn(spec))  # a block from inside a network: every conv keeps its dgrad
    assert len([p for p in block if p[1] == "dgrad"]) == 2


def test_strided_conv_dgrad_equals_the_forward_work() -> None:
    """A stride-2 convolution's input gradient does the forward's multiply-adds, not more
    (exact count: each forward MAC has one partner in dgrad; 1x1 stride 2 was 4x before)."""
    for k, stride in ((1, 2), (3, 2), (7, 2), (3, 1)):
        r = layer(
            "conv2d",
            batch=2,
            in_channels=64,
            out_channels=128,
            height=56,
            width=56,
            kernel_size=k,
            stride=stride,
            padding=k // 2,
            layout="nhwc",
        )
        assert r.pass_named("dgrad").flops == r.pass_named("forward").flops
