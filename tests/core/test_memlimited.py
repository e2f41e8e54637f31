"""Guards core/memlimited.py: memory-limited ops, their counting convention, the
published intensities R08-R10, pass counts of batch norm, and the small-tensor regime."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gpus import gpu, gpu_names
from dlperf_widgets.core.memlimited import (
    ELEMENTWISE_OPS,
    MIN_KERNEL_TIME_S,
    memory_op,
    pool_output_size,
    saturation_bytes,
)

BIG = 2**26  # 64 Mi elements: far above the saturation size on every GPU


def test_r09_relu_fp16_intensity_is_a_quarter_and_memory_bound():
    """R09: ReLU in FP16 does 1 op per element over 2 B read + 2 B written = 0.25 FLOP/B."""
    fwd = memory_op("relu", elements=BIG, dtype="fp16", gpu="V100")[0]
    assert fwd.arithmetic_intensity == pytest.approx(0.25, abs=0.005)
    assert fwd.flops == BIG
    assert fwd.bytes == 4 * BIG
    assert fwd.limiter == "memory"


def test_relu_intensity_halves_in_fp32():
    """Same op count over twice the bytes: 1 / (4 B + 4 B) = 0.125 FLOP/B."""
    fwd = memory_op("relu", elements=BIG, dtype="fp32", gpu="A100")[0]
    assert fwd.arithmetic_intensity == pytest.approx(0.125)


def test_r08_max_pool_3x3_unit_stride_is_2_25():
    """R08: 3x3 max pooling at unit stride (output as large as the input) = 9 / 4 FLOP/B."""
    fwd = memory_op(
        "maxpool",
        shape=(32, 64, 56, 56),
        kernel_size=3,
        stride=1,
        padding=1,
        dtype="fp16",
        gpu="V100",
    )[0]
    assert fwd.arithmetic_intensity == pytest.approx(2.25, abs=0.005)
    assert fwd.limiter == "memory"


def test_r08_without_padding_tends_to_2_25_for_large_images():
    """Unpadded, the output is (H-2) x (W-2); for a large image the intensity is still 2.25."""
    fwd = memory_op(
        "maxpool", shape=(8, 64, 512, 512), kernel_size=3, stride=1, dtype="fp16", gpu="V100"
    )[0]
    assert fwd.arithmetic_intensity == pytest.approx(2.25, rel=0.01)
    assert fwd.arithmetic_intensity < 2.25


def test_r10_layer_norm_fp16_below_10_and_memory_bound():
    """R10: layer normalization in FP16 has an intensity below 10 FLOP/B: memory-bound."""
    for g in ("V100", "A100", "H100"):
        for p in memory_op("layernorm", shape=(8, 512, 1024), dtype="fp16", gpu=g):
            assert p.arithmetic_intensity < 10
            assert p.limiter == "memory"


def test_pooling_window_reuse_scales_the_flops():
    """Each output costs win_h * win_w operations: a 5x5 window does 25/9 of a 3x3's work."""
    shape = (4, 16, 64, 64)
    f3 = memory_op("avgpool", shape=shape, kernel_size=3, stride=1, padding=1)[0].flops
    f5 = memory_op("avgpool", shape=shape, kernel_size=5, stride=1, padding=2)[0].flops
    assert f5 / f3 == pytest.approx(25 / 9)


def test_pool_output_size_matches_pytorch_rule():
    """Output size = floor((H + 2p - k) / s) + 1: 112 -> 56 for a 3x3 window, stride 2, pad 1."""
    assert pool_output_size(112, 3, 2, 1) == 56
    assert pool_output_size(7, 7, 1, 0) == 1
    fwd = memory_op(
        "maxpool", shape=(1, 1, 112, 112), kernel_size=3, stride=2, padding=1, dtype="fp32"
    )[0]
    assert fwd.flops == 56 * 56 * 9
    assert fwd.bytes == (112 * 112 + 56 * 56) * 4


def test_pool_stride_defaults_to_the_window():
    """As in PyTorch, a pooling stride left out equals the window: 2x2 halves H and W."""
    fwd = memory_op("maxpool", shape=(1, 1, 8, 8), kernel_size=2)[0]
    assert fwd.flops == 4 * 4 * 4


def test_batchnorm_persistent_reads_input_once():
    """Memory-limited guide 3.1: non-persistent BN reads the input twice (3 tensor passes in
    forward, 5 in backward); persistent once (2 and 3). Time follows the bytes."""
    shape = (64, 256, 56, 56)
    non = memory_op("batchnorm", shape=shape, persistent=False, gpu="V100")
    per = memory_op("batchnorm", shape=shape, persistent=True, gpu="V100")
    n = 64 * 256 * 56 * 56
    assert [p.bytes for p in non] == [3 * 2 * n, 5 * 2 * n]
    assert [p.bytes for p in per] == [2 * 2 * n, 3 * 2 * n]
    # time follows the bytes once the fixed cost per kernel is taken off
    overhead = non[0].predicted_time_s - non[0].memory_time_s * (
        1 + (non[0].math_time_s / non[0].memory_time_s) ** 3
    ) ** (1 / 3)
    assert per[0].predicted_time_s - overhead == pytest.approx(
        (non[0].predicted_time_s - overhead) * 2 / 3, rel=1e-3
    )


def test_batchnorm_inference_is_one_pass():
    """At inference BN is a per-channel scale and shift: one read, one write, no backward."""
    passes = memory_op("batchnorm", shape=(8, 64, 32, 32), training=False)
    assert len(passes) == 1
    assert passes[0].bytes == 2 * 2 * 8 * 64 * 32 * 32


def test_add_and_residual_have_no_backward_kernel():
    """The gradient of a sum is the incoming gradient: no backward pass is modelled."""
    for kind in ("add", "residual"):
        passes = memory_op(kind, elements=1000)
        assert [p.pass_ for p in passes] == ["forward"]
        assert passes[0].bytes == 3 * 2 * 1000  # two inputs read, one output written


def test_dropout_counts_the_one_byte_mask():
    """Dropout writes a 1-byte mask per element in forward and reads it back in backward."""
    fwd, bwd = memory_op("dropout", elements=1000, dtype="fp16")
    assert fwd.bytes == 1000 * (2 + 2 + 1)
    assert bwd.bytes == 1000 * (2 + 2 + 1)


def test_small_tensors_do_not_saturate_bandwidth():
    """Below the saturation size, time almost stops shrinking (guide, Figures 1 and 3): the
    limiter is 'latency' and the fixed cost per kernel dominates; far above it, twice the
    data takes (nearly) twice as long."""
    tiny = memory_op("relu", elements=1000, gpu="A100")[0]
    tiny2 = memory_op("relu", elements=2000, gpu="A100")[0]
    assert tiny.limiter == "latency"
    assert tiny2.predicted_time_s / tiny.predicted_time_s < 1.01
    big = memory_op("relu", elements=BIG, gpu="A100")[0]
    big2 = memory_op("relu", elements=2 * BIG, gpu="A100")[0]
    assert big2.predicted_time_s / big.predicted_time_s == pytest.approx(2, rel=0.03)


def test_saturation_threshold_is_bandwidth_times_floor():
    """The documented threshold: bytes = achievable bandwidth x the fixed cost per kernel;
    just above it the op is memory-limited, just below it latency-limited."""
    from dlperf_widgets.core.calibration import achievable

    g = gpu("V100")
    sat = saturation_bytes(g)
    cal = achievable(g, "fp16")
    assert sat == pytest.approx(
        g.memory_bandwidth_bytes_per_s * cal.memory_fraction * cal.kernel_overhead_s
    )
    elements = int(sat / 4)  # relu fp16 moves 4 B per element
    assert memory_op("relu", elements=elements + 1000, gpu=g)[0].limiter == "memory"
    assert memory_op("relu", elements=elements - 1000, gpu=g)[0].limiter == "latency"


@settings(max_examples=40, deadline=None)
@given(
    op=st.sampled_from(sorted(ELEMENTWISE_OPS)),
    elements=st.integers(1, 2**30),
    g=st.sampled_from(gpu_names()),
    dt=st.sampled_from(["fp16", "fp32"]),
)
def test_elementwise_ops_are_never_math_bound(op, elements, g, dt):
    """Guide 2.1: activations and other element-wise ops are nearly always memory-bound."""
    if not gpu(g).supports(dt):
        return
    for p in memory_op(op, elements=elements, dtype=dt, gpu=g):
        assert p.limiter in ("memory", "latency")
        assert p.predicted_time_s >= MIN_KERNEL_TIME_S


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"kind": "relu"}, "'shape' or 'elements'"),
        ({"kind": "relu", "elements": 0}, "'elements' must be a positive integer"),
        ({"kind": "relu", "shape": (4, -1)}, "'shape' must be a positive integer"),
        ({"kind": "relu", "shape": "4,x"}, "'shape' must be comma-separated"),
        ({"kind": "maxpool", "shape": (1, 1, 4, 4), "kernel_size": 7}, "'kernel_size' must fit"),
        ({"kind": "maxpool", "shape": (4, 4)}, "at least 3 dimensions"),
        ({"kind": "swish", "elements": 4}, "'kind' must be one of"),
    ],
)
def test_bad_input_names_parameter_and_rule(kwargs, needle):
    """Bad input raises InvalidParameter with one sentence naming the parameter."""
    kind = kwargs.pop("kind")
    with pytest.raises(InvalidParameter, match=needle):
        memory_op(kind, **kwargs)
