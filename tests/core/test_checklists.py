"""Guards core/checklists.py: each checklist flags a violating layer with a concrete fix
(and predicted times before and after where the model can tell) and leaves the fixed
layer alone; R19 and R20; memory-bound layers are reported as such."""

from __future__ import annotations

from dlperf_widgets.core.layers import layer
from dlperf_widgets.core.network import cnn


def _by(findings, parameter):
    return [f for f in findings if f.parameter == parameter]


def _warnings(findings, parameter):
    return [f for f in _by(findings, parameter) if f.severity in ("warning", "error")]


# -- fully connected ------------------------------------------------------------------------


def test_fc_batch_not_multiple_of_8_is_flagged_with_the_fix_and_times():
    """Guide 2.2: FP16 batch, inputs and outputs multiples of 8; batch 500 -> pad to 504,
    which the model predicts to be faster."""
    bad = layer("linear", batch=500, inputs=1024, outputs=4096)
    (f,) = _warnings(bad.findings, "batch")
    assert (f.value, f.suggested_value) == (500, 504)
    assert f.predicted_time_s_after < f.predicted_time_s_before
    assert f.predicted_time_s_before == bad.predicted_time_s
    good = layer("linear", batch=504, inputs=1024, outputs=4096)
    assert not _warnings(good.findings, "batch")


def test_fc_tf32_multiple_is_4():
    """TF32 needs multiples of 4: 1020 inputs pass in TF32 but not in FP16."""
    assert not _warnings(layer("linear", inputs=1020, dtype="tf32").findings, "inputs")
    assert _warnings(layer("linear", inputs=1020, dtype="fp16").findings, "inputs")


def test_r19_512_vs_520_matters_more_than_5120_vs_5128():
    """R19: padding costs most for small sizes. The checklist warns for 520 (18.75 % of a
    128-wide tile wasted) but only informs for 5128, and the model's per-FLOP slowdown of
    520 over 512 exceeds that of 5128 over 5120 (square layers, V100)."""
    warn = layer("linear", batch=4096, inputs=4096, outputs=520)
    info = layer("linear", batch=4096, inputs=4096, outputs=5128)
    assert _warnings(warn.findings, "outputs")
    assert not _warnings(info.findings, "outputs")
    assert _by(info.findings, "outputs")  # still mentioned, as advice

    def per_flop(n):
        p = layer("linear", batch=n, inputs=n, outputs=n, gpu="V100").pass_named("forward")
        return p.predicted_time_s / p.flops

    assert per_flop(520) / per_flop(512) > per_flop(5128) / per_flop(5120)


def test_memory_bound_fc_is_reported_as_such():
    """Guide 2.1/2.3: tweaks help only math-bound layers; batch 1 is memory-bound, so its
    alignment advice is demoted to info and a finding says why."""
    r = layer("linear", batch=1, inputs=1024, outputs=4096, gpu="V100")
    assert not [f for f in r.findings if f.severity != "info"]
    assert any("memory-bound" in f.message for f in r.findings)
    big = layer("linear", batch=512, inputs=1024, outputs=4096, gpu="V100")
    assert not any("memory-bound" in f.message for f in big.findings)


def test_sequence_padding_for_token_count():
    """With a sequence, batch x seq_len is the GEMM batch: seq 127 x batch 1 is flagged on
    seq_len; seq 127 x batch 8 (1016 tokens, a multiple of 8) is not."""
    assert _by(layer("linear", batch=1, seq_len=127).findings, "seq_len")
    assert not _by(layer("linear", batch=8, seq_len=127).findings, "seq_len")


# -- convolution ------------------------------------------------------------------------------


def test_r20_first_layer_c3_is_padded_to_4():
    """R20: a first layer with C = 3 is padded to C = 4 (specialized NHWC kernels); the
    model predicts the padded layer to be faster; C = 4 is not flagged."""
    kw = dict(batch=32, out_channels=64, height=224, width=224, kernel_size=7, stride=2, padding=3)
    bad = layer("conv2d", in_channels=3, **kw)
    (f,) = _warnings(bad.findings, "in_channels")
    assert f.suggested_value == 4
    assert f.predicted_time_s_after < f.predicted_time_s_before
    good = layer("conv2d", in_channels=4, **kw)
    assert not _by(good.findings, "in_channels")


def test_conv_channels_multiple_of_8_fp16_and_4_tf32():
    """Guide 2.2 for convolutions: input and output channels multiples of 8 (FP16), 4 (TF32)."""
    kw = dict(batch=64, height=56, width=56)
    bad = layer("conv2d", in_channels=60, out_channels=124, **kw)
    assert _warnings(bad.findings, "in_channels")[0].suggested_value == 64
    assert _warnings(bad.findings, "out_channels")[0].suggested_value == 128
    good = layer("conv2d", in_channels=64, out_channels=128, **kw)
    assert not _warnings(good.findings, "in_channels")
    assert not _warnings(good.findings, "out_channels")
    tf32 = layer("conv2d", in_channels=60, out_channels=126, dtype="tf32", **kw)
    assert not [f for f in _by(tf32.findings, "in_channels") if "not a multiple" in f.message]
    assert [f for f in _by(tf32.findings, "out_channels") if "not a multiple" in f.message]


def test_nchw_gets_the_channels_last_fix():
    """Slides, "Convolutions": NHWC is faster; NCHW gets a finding with the channels_last
    code and a predicted gain; NHWC gets none."""
    bad = layer("conv2d", layout="nchw")
    (f,) = _by(bad.findings, "layout")
    assert "channels_last" in f.fix
    assert f.predicted_time_s_after < f.predicted_time_s_before
    assert not _by(layer("conv2d", layout="nhwc").findings, "layout")


def test_grouped_conv_channels_per_group():
    """With groups, each group's channel count must be aligned: 96/4 = 24 is fine, 100/4 = 25 not."""
    assert not _warnings(
        layer("conv2d", in_channels=96, out_channels=96, groups=4).findings, "in_channels"
    )
    assert _by(layer("conv2d", in_channels=100, out_channels=96, groups=4).findings, "in_channels")


def test_depthwise_in_memory_limited_layer_is_flagged():
    """Hierarchical-model advice: depthwise convolutions are memory-limited; prefer dense
    convolutions there. A dense convolution gets no such finding."""
    dw = layer("conv2d", in_channels=64, out_channels=64, groups=64)
    assert _warnings(dw.findings, "groups")
    assert not _by(layer("conv2d").findings, "groups")


# -- recurrent --------------------------------------------------------------------------------


def test_recurrent_minibatch_and_hidden_sizes():
    """Guide 2.2 for recurrent layers: minibatch and hidden sizes multiples of 8 (FP16)."""
    bad = layer("lstm", batch=60, hidden_size=1020, input_size=1024)
    assert _by(bad.findings, "batch")[0].suggested_value == 64
    assert _by(bad.findings, "hidden_size")[0].suggested_value == 1024
    good = layer("lstm", batch=64, hidden_size=1024, input_size=1024)
    assert not [
        f
        for f in good.findings
        if f.parameter in ("hidden_size", "input_size") and f.severity != "info"
    ]
    assert not [f for f in _by(good.findings, "batch") if f.suggested_value is not None]


def test_recurrent_step_gemm_memory_bound_is_reported():
    """The per-step GEMM has N = minibatch: small minibatches are memory-bound, and the
    finding says a larger minibatch is the lever."""
    r = layer("gru", batch=16, hidden_size=1024)
    assert any("minibatch" in f.fix for f in r.findings)


# -- transformer ------------------------------------------------------------------------------


def test_vocab_33708_padded_to_33712_is_faster():
    """Slides, "Transformers": vocabulary a multiple of 8 (projection with 1024 inputs and
    batch 5120): 33708 -> 33712 with a predicted gain; 33712 is not flagged."""
    bad = layer("projection", batch=5120, seq_len=1, hidden=1024, vocab=33708, gpu="V100")
    (f,) = _warnings(bad.findings, "vocab")
    assert (f.value, f.suggested_value) == (33708, 33712)
    assert f.predicted_time_s_after < f.predicted_time_s_before
    good = layer("projection", batch=5120, seq_len=1, hidden=1024, vocab=33712, gpu="V100")
    assert not _warnings(good.findings, "vocab")


def test_batch_padding_for_weight_gradient():
    """Slides, "Transformers": pad the batch for the weight gradient; the finding says the
    batch is K of the wgrad GEMM, and the padded batch has a faster wgrad."""
    bad = layer("linear", batch=4092, inputs=1024, outputs=4096, gpu="V100")
    (f,) = _warnings(bad.findings, "batch")
    assert "weight-gradient" in f.message
    good = layer("linear", batch=4096, inputs=1024, outputs=4096, gpu="V100")
    assert good.pass_named("wgrad").predicted_time_s < bad.pass_named("wgrad").predicted_time_s


def test_attention_sequence_heads_and_qkv():
    """Pad the sequence length, keep head sizes aligned, concatenate Q, K and V."""
    bad = layer("attention", seq_len=500, hidden=1024, heads=12 + 4, qkv="separate")
    assert _by(bad.findings, "seq_len")[0].suggested_value == 504
    (q,) = _by(bad.findings, "qkv")
    assert q.predicted_time_s_after < q.predicted_time_s_before
    good = layer("attention", seq_len=512, hidden=1024, heads=16, qkv="concatenated")
    assert not _by(good.findings, "seq_len")
    assert not _by(good.findings, "qkv")
    assert not _by(good.findings, "heads")
    odd_heads = layer("attention", hidden=768, heads=16)  # head size 48 is fine
    assert not _by(odd_heads.findings, "heads")
    bad_heads = layer("attention", hidden=1020, heads=4)  # head size 255
    assert _by(bad_heads.findings, "heads")


# -- memory-limited -----------------------------------------------------------------------------


def test_memory_limited_layers_get_no_parameter_tweaks():
    """Memory-limited guide: no parameter tweak helps; the advice is to reduce passes."""
    for kind in ("relu", "gelu", "layernorm", "softmax", "maxpool"):
        r = layer(kind)
        assert not [f for f in r.findings if f.severity != "info"], kind
        assert any("fuse" in f.fix for f in r.findings)


def test_non_persistent_batchnorm_gets_the_persistent_fix():
    """Persistent BN reads the input once: the fix saves the second read."""
    bad = layer("batchnorm", persistent=False)
    (f,) = _by(bad.findings, "persistent")
    assert f.predicted_time_s_after < f.predicted_time_s_before
    assert not _by(layer("batchnorm", persistent=True).findings, "persistent")


def test_tiny_tensor_is_reported_below_saturation():
    """A tensor too small to saturate bandwidth is reported as such."""
    assert _by(layer("relu", elements=1000).findings, "shape")
    assert not _by(layer("relu", elements=2**26).findings, "shape")


# -- hierarchical models ------------------------------------------------------------------------


def test_hierarchical_advice_on_a_small_cnn():
    """Slides' recommendations for hierarchical models: depthwise in a memory-limited stage,
    SE there, LayerNorm there, BN folding, a non-ReLU activation after conv-BN, and
    PixelShuffle for a large upsampling; the clean variant gets none of the warnings."""
    bad = cnn(
        [
            {"kind": "conv2d", "out_channels": 32, "stride": 2},
            "batchnorm",
            {"kind": "conv2d", "out_channels": 32, "groups": "depthwise"},
            "batchnorm",
            "gelu",
            "se",
            "layernorm",
            {"kind": "upsample", "factor": 4},
        ],
        batch=16,
        height=128,
        width=128,
    )
    text = " ".join(f.message + f.fix for f in bad.findings)
    for needle in (
        "Depthwise",
        "Squeeze-and-excitation",
        "LayerNorm",
        "folded",
        "ReLU",
        "PixelShuffle",
    ):
        assert needle in text, needle
    fold = next(f for f in bad.findings if "folded" in f.message)
    assert fold.predicted_time_s_before > 0 and fold.predicted_time_s_after == 0
    good = cnn(
        [
            {"kind": "conv2d", "out_channels": 32, "stride": 2},
            "batchnorm",
            "relu",
            {"kind": "conv2d", "out_channels": 32},
            "batchnorm",
            "relu",
        ],
        batch=16,
        height=128,
        width=128,
    )
    assert not [f for f in good.findings if f.severity == "warning"]
