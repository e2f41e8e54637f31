"""Guards the block-scaled formats of core/scaling.py beyond the published layouts: FP6
elements (MXFP6), other block sizes and scale formats (what-ifs), FP8 with one scale per
tensor for contrast, and the one-outlier study the BlockFormatExplorer shows. References are
independent: grids written out from the OCP MX specification's tables, the spec's algorithm
per block in plain Python, closed forms for which values flush to zero."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.formats import number_format
from dlperf_widgets.core.scaling import (
    BLOCK_FORMATS,
    block_format,
    block_outlier_study,
    block_quantize,
    fp8_quantize,
)


def _grid(subnormal_step: float, mantissa_bits: int, exponents: range) -> np.ndarray:
    """Non-negative values of a float format without specials, in code order: the
    subnormals k x step, then (1 + f / 2**m) x 2**e for every exponent and fraction."""
    sub = [k * subnormal_step for k in range(2**mantissa_bits)]
    normal = [
        (1 + f / 2**mantissa_bits) * 2.0**e for e in exponents for f in range(2**mantissa_bits)
    ]
    return np.array(sub + normal)


# OCP MX v1.0, section 5.3: E2M3 (bias 1) subnormals 0.125 apart, normals 2**0 .. 2**2;
# E3M2 (bias 3) subnormals 0.0625 apart, normals 2**-2 .. 2**4; E2M1 0.5, 2**0 .. 2**2.
GRIDS = {
    "fp6_e2m3": _grid(0.125, 3, range(0, 3)),
    "fp6_e3m2": _grid(0.0625, 2, range(-2, 5)),
    "fp4_e2m1": _grid(0.5, 1, range(0, 3)),
}


def _round_on_grid(v: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Nearest grid value, ties to the even code (even index), clamped to the largest."""
    a = np.minimum(np.abs(v), grid[-1])
    d = np.abs(a[:, None] - grid[None, :])
    best = d.min(axis=1, keepdims=True)
    codes = np.arange(len(grid))
    tied = d == best
    pick = np.where(tied & (codes % 2 == 0), codes, np.where(tied, codes + 1000, 9999)).min(axis=1)
    pick = np.where(pick >= 1000, pick - 1000, pick)
    return np.copysign(grid[pick], v)


def _mx_reference(x: np.ndarray, k: int, element: str) -> np.ndarray:
    """OCP MX v1.0 section 6.3 per block: shared exponent floor(log2 amax) - emax."""
    grid = GRIDS[element]
    emax = math.floor(math.log2(grid[-1]))
    out = np.zeros_like(x)
    for start in range(0, x.size, k):
        blk = x[start : start + k]
        amax = np.abs(blk).max()
        if amax:
            scale = 2.0 ** (math.floor(math.log2(amax)) - emax)
            out[start : start + k] = _round_on_grid(blk / scale, grid) * scale
    return out


def test_fp6_layouts_match_the_spec_tables():
    """FP6 E2M3: max 7.5, min normal 1, min subnormal 0.125; E3M2: 28, 0.25, 0.0625 (OCP MX
    v1.0 table in section 5.3.2); 6 bits each, no infinities or NaN."""
    e2m3, e3m2 = number_format("fp6_e2m3"), number_format("fp6_e3m2")
    assert (e2m3.max, e2m3.min_normal, e2m3.min_subnormal, e2m3.bits) == (7.5, 1.0, 0.125, 6)
    assert (e3m2.max, e3m2.min_normal, e3m2.min_subnormal, e3m2.bits) == (28.0, 0.25, 0.0625, 6)
    assert not (e2m3.has_inf or e2m3.has_nan or e3m2.has_inf or e3m2.has_nan)


@pytest.mark.parametrize(
    ("fmt", "element"), [("mxfp6_e2m3", "fp6_e2m3"), ("mxfp6_e3m2", "fp6_e3m2")]
)
def test_mxfp6_matches_the_spec_algorithm(fmt, element):
    """MXFP6 (blocks of 32, E8M0 scales) equals the spec's per-block algorithm with the
    element rounding done by a search over the written-out grid."""
    x = np.random.default_rng(3).standard_normal(2048) * np.exp2(np.arange(2048) % 40 - 20)
    np.testing.assert_array_equal(block_quantize(x, fmt).values, _mx_reference(x, 32, element))


@pytest.mark.parametrize("k", [8, 16, 64, 256])
def test_other_block_sizes_follow_the_same_algorithm(k):
    """MXFP4 with blocks of k (a what-if) is the spec's algorithm with blocks of k."""
    x = np.random.default_rng(k).standard_normal(4096)
    r = block_quantize(x, "mxfp4", block_size=k)
    np.testing.assert_array_equal(r.values, _mx_reference(x, k, "fp4_e2m1"))
    assert r.blocks == 4096 // k


def test_bits_per_element():
    """Element bits plus the scale's share: MXFP8 8.25, MXFP6 6.25, MXFP4 4.25 (8-bit E8M0
    per 32), NVFP4 4.5 (8-bit E4M3 per 16, plus an FP32 scale per tensor), per-tensor FP8 8;
    what-ifs: MXFP4 in blocks of 64 4.125; MXFP4 with E4M3 scales per 16 is NVFP4's 4.5."""
    expect = {"mxfp8_e4m3": 8.25, "mxfp8_e5m2": 8.25, "mxfp6_e2m3": 6.25, "mxfp6_e3m2": 6.25,
              "mxfp4": 4.25, "nvfp4": 4.5, "fp8_per_tensor": 8.0}  # fmt: skip
    assert {f: block_format(f).bits_per_element for f in BLOCK_FORMATS} == expect
    assert block_format("nvfp4").tensor_scale_bits == 32
    assert block_format("mxfp4").tensor_scale_bits == 0
    assert block_format("mxfp4", block_size=64).bits_per_element == 4.125
    what_if = block_format("mxfp4", block_size=16, scale_format="fp8_e4m3")
    assert what_if.bits_per_element == 4.5 and not what_if.standard
    assert block_format("mxfp4", block_size=32, scale_format="e8m0").standard


def test_ranges_in_binades():
    """A block of E2M1 spans log2(6 / 0.5) = 3.58 binades; E8M0 scales 2**-127..2**127 span
    254; E4M3 scales 2**-9..448 span 17.81; one tensor holds their sum; a per-tensor scale
    adds nothing to E4M3's own 17.81."""
    mx, nv, pt = block_format("mxfp4"), block_format("nvfp4"), block_format("fp8_per_tensor")
    assert mx.block_range_binades == pytest.approx(math.log2(12))
    assert mx.scale_range_binades == 254
    assert nv.scale_range_binades == pytest.approx(math.log2(448) + 9)
    assert nv.tensor_range_binades == pytest.approx(math.log2(12) + math.log2(448) + 9)
    assert pt.scale_range_binades == 0
    assert pt.tensor_range_binades == pytest.approx(math.log2(448) + 9)


def test_e4m3_scales_on_mxfp4_blocks_of_16_are_nvfp4():
    """NVFP4 is E2M1 in blocks of 16 under E4M3 scales: the what-if reproduces it."""
    x = np.random.default_rng(9).standard_normal(1024) * 1e-3
    what_if = block_quantize(x, "mxfp4", block_size=16, scale_format="fp8_e4m3")
    np.testing.assert_array_equal(what_if.values, block_quantize(x, "nvfp4").values)


def test_per_tensor_fp8_is_transformer_engines_recipe():
    """One FP32 scale per tensor (amax onto 448) gives fp8_quantize's current scaling."""
    x = np.random.default_rng(4).standard_normal(4096) * np.exp2(np.arange(4096) % 24 - 12)
    r = block_quantize(x, "fp8_per_tensor")
    np.testing.assert_allclose(r.values, fp8_quantize(x, "fp8_e4m3").values, rtol=1e-12)
    assert r.blocks == 1 and r.block_size == 4096


def test_outlier_flushes_the_block_mates_by_the_closed_form():
    """MXFP4 with an outlier b binades above the rest: the block's scale is
    2**(floor(log2 outlier) - 2) and a block-mate flushes to zero when its magnitude is at
    most a quarter of it (half E2M1's smallest subnormal; the tie goes to the even code 0).
    The other blocks do not see the outlier: their error equals the no-outlier error."""
    for b in (0.0, 3.0, 6.5, 12.0):
        r = block_outlier_study("mxfp4", outlier_binades=b)
        x = np.random.default_rng(0).standard_normal(1024)
        outlier = np.abs(x[1:]).max() * 2.0**b
        scale = 2.0 ** (math.floor(math.log2(outlier)) - 2)
        assert r.block_flushed_fraction == pytest.approx(np.mean(np.abs(x[1:32]) <= scale / 4))
        # with E8M0 scales the blocks are independent: the other blocks' error is the one
        # they have without any outlier, and the whole tensor's mixes the two
        q = block_quantize(x, "mxfp4").values[32:]
        assert r.other_blocks_error == pytest.approx(
            np.linalg.norm(q - x[32:]) / np.linalg.norm(x[32:]), rel=1e-12
        )
        mates, others = r.block_error * np.linalg.norm(x[1:32]), np.linalg.norm(q - x[32:])
        assert r.tensor_error == pytest.approx(
            math.hypot(mates, others) / np.linalg.norm(x[1:]), rel=1e-12
        )


def test_one_scale_per_tensor_loses_small_values_only_past_its_range():
    """Per-tensor FP8 E4M3 maps the outlier to 448: a value flushes when 448 |x| / outlier
    is at most 2**-10 (half the smallest subnormal). With the outlier 8 binades up few do;
    at 20 binades, past E4M3's 17.8-binade range, most do, in the outlier's 'block' (the
    whole tensor) and in the tensor alike."""
    x = np.random.default_rng(0).standard_normal(1024)
    for b in (8.0, 20.0):
        r = block_outlier_study("fp8_per_tensor", outlier_binades=b)
        outlier = np.abs(x[1:]).max() * 2.0**b
        assert r.block_flushed_fraction == pytest.approx(
            np.mean(448 * np.abs(x[1:]) / outlier <= 2.0**-10)
        )
        assert r.block_error == r.tensor_error and r.other_blocks_error is None
        assert r.sweep_other_blocks_error.size == 0
    assert block_outlier_study("fp8_per_tensor", outlier_binades=20).block_flushed_fraction > 0.5


def test_nvfp4s_tensor_scale_lets_a_huge_outlier_reach_the_other_blocks():
    """NVFP4's E4M3 block scales span 17.8 binades below the tensor's amax: an outlier 24
    binades up pushes the other blocks' scales below E4M3's range and their values flush,
    while MXFP4's E8M0 scales keep the other blocks as they were."""
    nv = block_outlier_study("nvfp4", outlier_binades=24)
    mx = block_outlier_study("mxfp4", outlier_binades=24)
    assert nv.other_blocks_error > 0.9
    assert mx.other_blocks_error == pytest.approx(mx.sweep_other_blocks_error[0])
    assert mx.other_blocks_error == pytest.approx(mx.sweep_other_blocks_error[-1])
    assert nv.sweep_other_blocks_error[0] < 0.2


def test_the_outlier_itself_saturates_under_power_of_two_scales():
    """E8M0 rounds the scale down to a power of two: the outlier lands in [4, 8) in E2M1
    units, where the grid holds only 4 and 6 (values above 6 are clamped), an error up to
    25 % (1 - 6/8); with exact FP32 block scales it lands on 6 exactly."""
    x = np.abs(np.random.default_rng(0).standard_normal(1024)[1:]).max()
    for b in (2.3, 8.9, 15.0):
        r = block_outlier_study("mxfp4", outlier_binades=b)
        outlier = x * 2.0**b
        scale = 2.0 ** (math.floor(math.log2(outlier)) - 2)
        stored = _round_on_grid(np.array([outlier / scale]), GRIDS["fp4_e2m1"])[0] * scale
        assert r.outlier_error == pytest.approx(abs(stored - outlier) / outlier)
        assert 0 <= r.outlier_error <= 0.25
    exact = block_outlier_study("mxfp4", scale_format="fp32", outlier_binades=8.9)
    assert exact.outlier_error == pytest.approx(0.0, abs=1e-15)


def test_bad_input_is_one_sentence():
    """A block size on a per-tensor format, a block as large as the study's tensor, a
    negative outlier and an unknown scale format each raise one sentence naming the
    parameter."""
    with pytest.raises(
        InvalidParameter, match="'block_size' must be left unset for fp8_per_tensor"
    ):
        block_format("fp8_per_tensor", block_size=32)
    with pytest.raises(InvalidParameter, match="'block_size' must be below the study's 1,024"):
        block_outlier_study("mxfp4", block_size=1024)
    with pytest.raises(InvalidParameter, match="'outlier_binades' must be"):
        block_outlier_study("mxfp4", outlier_binades=-1)
    with pytest.raises(InvalidParameter, match="'scale_format' must be one of e8m0"):
        block_quantize([1.0], "mxfp4", scale_format="ue5m3")
    with pytest.raises(InvalidParameter, match="'block_size' must be"):
        block_format("mxfp4", block_size=0)
