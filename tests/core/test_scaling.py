"""Guards core/scaling.py: FP8 per-tensor scaling (current and delayed) bit-exact against
PyTorch's float8 casts, and the block-scaled MX / NVFP4 formats against an independent
reference (PyTorch casts where PyTorch has the element type, a search over every FP4 code
where it does not)."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.formats import decode, number_format
from dlperf_widgets.core.scaling import (
    block_format,
    block_quantize,
    fp8_quantize,
    fp8_scale,
)

TORCH = {"fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}


def _tensor(seed: int = 0, n: int = 8192) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # gradient-like: log-normal magnitudes over many binades, random signs
    return rng.choice([-1.0, 1.0], n) * np.exp2(rng.normal(-20, 4, n))


@pytest.mark.parametrize("fmt", list(TORCH))
@pytest.mark.parametrize("margin", [0, 2])
def test_current_scaling_is_bit_exact_against_torch(fmt, margin):
    """(x * scale).to(float8).float() / scale in PyTorch equals fp8_quantize's values."""
    torch = pytest.importorskip("torch")
    x = _tensor()
    r = fp8_quantize(x, fmt, margin=margin)
    fmax = number_format(fmt).max
    assert r.scale == fmax / np.abs(x).max() / 2**margin
    t = torch.from_numpy(x * r.scale).to(getattr(torch, TORCH[fmt])).double().numpy() / r.scale
    np.testing.assert_array_equal(r.values, t)
    assert r.saturated == 0  # the amax maps inside the range


@pytest.mark.parametrize("fmt", list(TORCH))
def test_delayed_scaling_saturates_what_torch_clamps(fmt):
    """A delayed scale from a history 8x smaller than today's amax saturates exactly the
    values whose scaled magnitude passes the format's max (torch with a clamp agrees)."""
    torch = pytest.importorskip("torch")
    x = _tensor(1)
    amax = np.abs(x).max()
    r = fp8_quantize(x, fmt, recipe="delayed", amax_history=[amax / 8, amax / 16])
    assert r.scale_amax == amax / 8 and r.scale == fp8_scale(amax / 8, fmt)
    fmax = number_format(fmt).max
    scaled = torch.from_numpy(x * r.scale).clamp(-fmax, fmax)
    t = scaled.to(getattr(torch, TORCH[fmt])).double().numpy() / r.scale
    np.testing.assert_array_equal(r.values, t)
    assert r.saturated == int((np.abs(x * r.scale) > number_format(fmt).overflow_threshold).sum())
    assert r.saturated > 0
    recent = fp8_quantize(
        x, fmt, recipe="delayed", amax_history=[amax / 8, amax / 16], amax_compute="most_recent"
    )
    assert recent.scale == fp8_scale(amax / 16, fmt) and recent.saturated > r.saturated


def test_e5m2_trades_precision_for_range():
    """E5M2 spans 32 binades to E4M3's 18: on a wide tensor it flushes fewer values to zero;
    on a narrow one (all within a factor 4 of amax) E4M3's extra mantissa bit halves the
    error, and both stay within half an epsilon (2**-4, 2**-3)."""
    x = _tensor(2)
    e4, e5 = fp8_quantize(x, "fp8_e4m3"), fp8_quantize(x, "fp8_e5m2")
    assert e5.underflow_fraction < e4.underflow_fraction
    narrow = np.random.default_rng(2).uniform(0.25, 1.0, 4096)
    n4, n5 = fp8_quantize(narrow, "fp8_e4m3"), fp8_quantize(narrow, "fp8_e5m2")
    assert n4.rms_relative_error < 0.6 * n5.rms_relative_error
    assert n4.max_relative_error <= 2**-4 and n5.max_relative_error <= 2**-3


def _fp4_reference(v: np.ndarray) -> np.ndarray:
    """Round to E2M1 by searching its 16 codes: nearest, ties to the even code, clamp."""
    grid = np.unique(np.abs(decode(np.arange(16), "fp4_e2m1")))  # 0 .. 6
    a = np.minimum(np.abs(v), grid[-1])
    d = np.abs(a[:, None] - grid[None, :])
    best = d.min(axis=1, keepdims=True)
    ties = np.isclose(d, best, rtol=0, atol=0)
    codes = np.arange(len(grid))
    # among tied neighbours take the one whose mantissa bit is 0 (even code index)
    pick = np.where(ties & (codes % 2 == 0), codes, np.where(ties, codes + 100, 999)).min(axis=1)
    pick = np.where(pick >= 100, pick - 100, pick)
    return np.copysign(grid[pick], v)


def _mx_reference(x: np.ndarray, k: int, emax: int, element_cast) -> np.ndarray:
    """OCP MX v1.0 section 6.3 written out per block with Python's math."""
    import math

    out = np.zeros_like(x)
    for start in range(0, x.size, k):
        blk = x[start : start + k]
        amax = np.abs(blk).max()
        if amax == 0:
            continue
        shared = math.floor(math.log2(amax)) - emax
        scale = 2.0**shared
        out[start : start + k] = element_cast(blk / scale) * scale
    return out


def test_mxfp8_matches_the_spec_with_torch_element_casts():
    """MXFP8 (E4M3, blocks of 32, E8M0 scales) equals the spec's algorithm with PyTorch
    doing the element casts."""
    torch = pytest.importorskip("torch")
    x = _tensor(3, 4096)

    def cast(v):
        t = torch.from_numpy(np.clip(v, -448, 448)).to(torch.float8_e4m3fn)
        return t.double().numpy()

    r = block_quantize(x, "mxfp8_e4m3")
    np.testing.assert_array_equal(r.values, _mx_reference(x, 32, 8, cast))
    # every scale is a power of two that PyTorch's E8M0 type stores exactly
    s = torch.from_numpy(r.scales).to(torch.float8_e8m0fnu).double().numpy()
    np.testing.assert_array_equal(s, r.scales)


def test_mxfp4_matches_the_spec_with_a_code_search():
    """MXFP4 (E2M1 elements, blocks of 32) equals the spec's algorithm with the FP4
    rounding done by searching all 16 codes (PyTorch cannot cast to FP4)."""
    x = _tensor(4, 2048)
    r = block_quantize(x, "mxfp4")
    np.testing.assert_array_equal(r.values, _mx_reference(x, 32, 2, _fp4_reference))


def test_nvfp4_two_level_scaling_by_hand():
    """NVFP4: tensor scale amax/(6*448), E4M3 block scales (torch cast), E2M1 elements."""
    torch = pytest.importorskip("torch")
    x = _tensor(5, 1024)
    r = block_quantize(x, "nvfp4")
    ts = np.abs(x).max() / (6 * 448)
    assert r.tensor_scale == ts
    blocks = x.reshape(-1, 16)
    dec = np.abs(blocks).max(axis=1) / 6 / ts
    stored = torch.from_numpy(dec).to(torch.float8_e4m3fn).double().numpy()
    scale = stored * ts
    ref = _fp4_reference((blocks / scale[:, None]).ravel()).reshape(-1, 16) * scale[:, None]
    np.testing.assert_array_equal(r.values, ref.ravel())


def test_bits_per_element_and_blocks():
    """Bits per element with the scale shares: 8.25, 4.25, 4.5; partial blocks padded."""
    assert block_format("mxfp8").bits_per_element == 8.25
    assert block_format("mxfp4").bits_per_element == 4.25
    assert block_format("nvfp4").bits_per_element == 4.5
    r = block_quantize(np.arange(1, 41, dtype=float), "mxfp4")
    assert (r.blocks, r.count, len(r.values)) == (2, 40, 40)


def test_block_scaling_beats_one_scale_with_an_outlier():
    """One outlier 1e6 x the rest: per-tensor FP8 loses most small values to underflow,
    MXFP8 keeps them (the outlier only coarsens its own block)."""
    x = np.random.default_rng(6).normal(0, 1e-3, 4096)
    x[0] = 1e6 * np.abs(x).max()
    per_tensor = fp8_quantize(x, "fp8_e4m3")
    mx = block_quantize(x, "mxfp8_e4m3")
    assert per_tensor.underflow_fraction > 0.5
    assert mx.underflow_fraction < 0.01


def test_bad_input_is_one_sentence():
    """Bad arguments raise InvalidParameter naming the parameter and the value."""
    with pytest.raises(InvalidParameter, match="'format' must be one of fp8_e4m3"):
        fp8_quantize([1.0], "fp16")
    with pytest.raises(InvalidParameter, match="'amax_history'"):
        fp8_quantize([1.0], recipe="delayed")
    with pytest.raises(InvalidParameter, match="'recipe'"):
        fp8_quantize([1.0], recipe="lagging")
    with pytest.raises(InvalidParameter, match="'values' must be finite"):
        fp8_quantize([1.0, float("nan")])
    with pytest.raises(InvalidParameter, match="'format' must be one of mxfp8_e4m3"):
        block_quantize([1.0], "mxfp3")
    with pytest.raises(InvalidParameter, match="'amax'"):
        fp8_scale(-1.0)
