"""Hostile input to the analytical core: only the kit's errors, one sentence, no silent wraps."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hostile_support import HOSTILE_NUMBERS, assert_kit_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlperf_widgets.core import custom_gpu, gemm, gemm_sweep, gpu, register_gpu
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.formats import decode, simulate_cast
from dlperf_widgets.core.gemm import arithmetic_intensity
from dlperf_widgets.core.layers import layer
from dlperf_widgets.core.memory import transformer_activation_bytes
from dlperf_widgets.core.network import cnn
from dlperf_widgets.core.parallel import allgather_bytes, allreduce_bytes, reduce_scatter_bytes
from dlperf_widgets.core.toast import toast

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

sizes = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([2**28, 2**40, 2**40 + 1, 2**62, 2**63, 10**100]),
)


@FAST
@given(m=sizes, n=sizes, k=sizes)
def test_gemm_accepts_or_refuses_any_size_without_wrapping(m, n, k):
    """gemm() either answers with finite, consistent numbers or refuses with the kit's message.

    Before the size cap, gemm(2**28, 2**28, 2**28) wrapped int64 and called a huge GEMM
    latency-bound; at 2**62 it reported 0 tiles and inf/NaN efficiencies.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy overflow warnings count as failures
        result = None

        def call():
            nonlocal result
            result = gemm(m, n, k)

        assert_kit_error(call)
    if result is not None:
        assert result.flops == pytest.approx(2.0 * m * n * k)
        assert math.isfinite(result.predicted_time_s) and result.predicted_time_s > 0
        assert result.tiles > 0


def test_huge_gemm_is_refused_not_called_latency_bound():
    """The exact case of the report: 2**28 cubed is refused, not modelled as 'latency'."""
    with pytest.raises(InvalidParameter, match=r"m\*n\*k\*batch"):
        gemm(2**28, 2**28, 2**28)
    assert gemm(2**20, 2**20, 2**20).limiter == "math"


@pytest.mark.parametrize(
    "value",
    [2**63, 1e30, 10**100, 10**5000, [1e30]],
    ids=["2**63", "1e30", "1e100", "1e5000", "[1e30]"],
)
def test_oversized_values_name_the_cap_and_the_real_value(value):
    """1e30 inside a list was reported as -9223372036854775808 (an int64 wrap)."""
    call = (
        (lambda: gemm_sweep(value, 64, 64))
        if isinstance(value, list)
        else (lambda: gemm(value, 64, 64))
    )
    message = assert_kit_error(call)
    assert message is not None and "2**40" in message
    assert "-9223372036854775808" not in message


@pytest.mark.parametrize("args", [(0, 0, 0), (-4, 64, 64), (64, 64, 1.5)])
def test_arithmetic_intensity_validates(args):
    """arithmetic_intensity(0, 0, 0) divided by zero; negative sizes gave negative intensity."""
    with pytest.raises(InvalidParameter, match=r"'[mnk]' must be a positive integer"):
        arithmetic_intensity(*args)


@pytest.mark.parametrize("name", ["V100", "a100-sxm4-80gb", "NVIDIA H100 PCIe"])
def test_register_gpu_cannot_replace_a_built_in(name):
    """A custom GPU named like a built-in (any spelling gpu() accepts) silently replaced it."""
    before = gpu(name)
    fake = custom_gpu(
        name, architecture="volta", sms=1, boost_clock_mhz=100, memory_bandwidth_bytes_per_s=1e9
    )
    with pytest.raises(InvalidParameter, match="'name' must not be a built-in"):
        register_gpu(fake)
    assert gpu(name) == before


def test_register_gpu_does_not_overwrite_a_custom_gpu():
    """Re-registering a custom name with other figures overwrote the first; the same is fine."""
    first = custom_gpu(
        "hostile-toy",
        architecture="ampere_ga100",
        sms=8,
        boost_clock_mhz=1000,
        memory_bandwidth_bytes_per_s=1e11,
    )
    register_gpu(first)
    register_gpu(first)  # re-running a cell
    other = custom_gpu(
        "Hostile_Toy",
        architecture="ampere_ga100",
        sms=80,
        boost_clock_mhz=1000,
        memory_bandwidth_bytes_per_s=1e12,
    )
    with pytest.raises(InvalidParameter, match="registered custom GPU"):
        register_gpu(other)
    assert gpu("hostile-toy").sms == 8


@pytest.mark.parametrize(
    "call",
    [
        lambda: layer("conv2d", kernel_size="9" * 5000),
        lambda: layer("relu", shape="2," + "9" * 5000),
        lambda: layer("conv2d", kernel_size=None),
        lambda: layer("relu", shape="2,3", elements=100),
        lambda: cnn(None),
        lambda: decode([256, 1.5], "fp8_e4m3"),
        lambda: allreduce_bytes(1e9, 0),
        lambda: reduce_scatter_bytes(1e9, 0),
        lambda: allgather_bytes(1e9, 0),
        lambda: transformer_activation_bytes(2048, 1, 4096, 32, sequence_parallel="no"),
        lambda: simulate_cast([1e6], "fp16", saturate="no"),
    ],
    ids=[
        "kernel-5000-digits",
        "shape-5000-digits",
        "kernel-None",
        "shape-and-elements",
        "cnn-None",
        "decode-fraction",
        "allreduce-0-ranks",
        "reduce-scatter-0-ranks",
        "allgather-0-ranks",
        "sequence-parallel-string",
        "saturate-string",
    ],
)
def test_helpers_refuse_with_the_kits_error(call):
    """Each of these escaped as ValueError/TypeError/ZeroDivisionError or was silently accepted."""
    with pytest.raises(InvalidParameter):
        call()
    assert assert_kit_error(call) is not None


def test_strict_booleans_keep_their_meaning():
    """saturate=False sends 1e6 to inf in fp16; 'no' used to mean True (65504)."""
    assert np.isinf(simulate_cast([1e6], "fp16", saturate=False).values[0])
    assert simulate_cast([1e6], "fp16", saturate=np.bool_(True)).values[0] == 65504.0


def test_toast_with_huge_inputs_answers_quickly():
    """toast(1e8 slices) built the whole schedule (minutes, GBs); now times only."""
    r = None

    def call():
        nonlocal r
        r = toast(10**8, 2)

    assert_kit_error(call, seconds=1.0)
    assert r is not None and r.best_minutes == 10**8 and r.schedule == ()
    assert len(toast(3, 2).schedule) == 3


@pytest.mark.parametrize(
    "value", HOSTILE_NUMBERS, ids=[f"v{i}" for i in range(len(HOSTILE_NUMBERS))]
)
@pytest.mark.parametrize(
    "entry",
    [
        lambda v: gemm(v, 64, 64),
        lambda v: gemm(64, 64, 64, batch=v),
        lambda v: arithmetic_intensity(64, v, 64),
        lambda v: toast(v, 2),
        lambda v: toast(3, v),
        lambda v: layer("linear", batch=v, inputs=64, outputs=64),
        lambda v: layer("conv2d", kernel_size=v),
        lambda v: layer("attention", seq_len=v, hidden=64, heads=4),
        lambda v: layer("attention", batch=4, hidden=v, heads=4),
        lambda v: layer("attention", heads=v),
        lambda v: transformer_activation_bytes(v, 1, 64, 4),
        lambda v: allreduce_bytes(v, 4),
        lambda v: cnn([{"kind": "conv2d", "out_channels": v}], height=8, width=8),
    ],
    ids=[
        "gemm-m",
        "gemm-batch",
        "ai",
        "toast-slices",
        "toast-capacity",
        "linear",
        "conv",
        "attention-seq",
        "attention-hidden",
        "attention-heads",
        "activations",
        "allreduce",
        "cnn",
    ],
)
def test_public_entries_with_hostile_values(entry, value):
    """Every value of the hostile list: an answer or the kit's one-sentence error, quickly."""
    assert_kit_error(lambda: entry(value))


@pytest.mark.parametrize(
    "call",
    [
        lambda s: gemm(64, 64, 64, dtype=s),
        lambda s: gemm(64, 64, 64, tile=s),
        lambda s: gpu(s),
        lambda s: custom_gpu(
            "x", architecture=s, sms=1, boost_clock_mhz=1, memory_bandwidth_bytes_per_s=1
        ),
    ],
    ids=["dtype", "tile", "gpu", "architecture"],
)
def test_a_megabyte_of_text_is_not_echoed(call):
    """An error message echoed a 1 MB input whole; now it quotes a short excerpt."""
    message = assert_kit_error(lambda: call("x" * 1_000_000))
    assert message is not None and len(message) < 400
