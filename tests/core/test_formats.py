"""Guards core/formats.py: limits derived from bit layouts, and casts bit-identical to torch."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.formats import FORMAT_NAMES, decode, number_format, simulate_cast

TORCH_NAMES = {
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
}


@pytest.mark.parametrize(
    ("name", "np_type"), [("fp64", np.float64), ("fp32", np.float32), ("fp16", np.float16)]
)
def test_limits_match_numpy_finfo(name, np_type):
    """IEEE formats: max, smallest normal/subnormal, epsilon and field widths equal numpy.finfo."""
    f, fi = number_format(name), np.finfo(np_type)
    assert f.max == float(fi.max)
    assert f.min_normal == float(fi.smallest_normal)
    assert f.min_subnormal == float(fi.smallest_subnormal)
    assert f.epsilon == float(fi.eps)
    assert (f.exponent_bits, f.mantissa_bits, f.bits) == (fi.nexp, fi.nmant, fi.bits)


@pytest.mark.parametrize("name", list(TORCH_NAMES))
def test_limits_match_torch_finfo(name):
    """BF16 and FP8: max, smallest normal and epsilon equal torch.finfo; the smallest
    subnormal survives a torch cast while half of it rounds to zero."""
    torch = pytest.importorskip("torch")
    f = number_format(name)
    td = getattr(torch, TORCH_NAMES[name])
    fi = torch.finfo(td)
    assert (f.max, f.min_normal, f.epsilon, f.bits) == (fi.max, fi.smallest_normal, fi.eps, fi.bits)
    t = torch.tensor([f.min_subnormal, f.min_subnormal / 2], dtype=torch.float32).to(td).float()
    assert t.tolist() == [f.min_subnormal, 0.0]


def test_published_figures():
    """Values printed in the FP8 paper and the IEEE/bfloat16 specs: 448, 57344, 65504, TF32 = 19 bits."""
    assert number_format("fp8_e4m3").max == 448
    assert number_format("e5m2").max == 57344
    assert number_format("half").max == 65504
    assert number_format("fp16").min_subnormal == 2.0**-24
    tf32 = number_format("tf32")
    assert (tf32.bits, tf32.storage_bits, tf32.exponent_bits, tf32.mantissa_bits) == (19, 32, 8, 10)
    assert tf32.min_normal == number_format("fp32").min_normal  # FP32's range
    assert tf32.epsilon == number_format("fp16").epsilon  # FP16's precision
    assert number_format("int8").max == 127 and number_format("int8").min == -128


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp8_e4m3", "fp8_e5m2"])
def test_limits_agree_with_enumerating_every_code(name):
    """Closed-form limits equal the extremes found by decoding every bit pattern of the format."""
    f = number_format(name)
    values = decode(np.arange(2**f.storage_bits), name)
    finite = values[np.isfinite(values)]
    positive = finite[finite > 0]
    assert finite.max() == f.max
    assert positive.min() == f.min_subnormal
    assert positive[positive >= 2.0**f.min_exponent].min() == f.min_normal
    assert np.isinf(values).any() == f.has_inf


@pytest.mark.parametrize("name", list(TORCH_NAMES))
def test_decode_matches_torch_bit_reinterpretation(name):
    """decode() reads every 8/16-bit pattern as torch does (values, infinities and NaN)."""
    torch = pytest.importorskip("torch")
    f = number_format(name)
    codes = np.arange(2**f.storage_bits)
    if f.storage_bits == 16:
        raw = torch.from_numpy(codes.astype(np.uint16).view(np.int16))
    else:
        raw = torch.from_numpy(codes.astype(np.uint8))
    expected = raw.view(getattr(torch, TORCH_NAMES[name])).to(torch.float64).numpy()
    np.testing.assert_array_equal(decode(codes, name), expected)


def _edge_cases(name: str) -> np.ndarray:
    """Every representable value, every midpoint between neighbours (ties), and just around."""
    f = number_format(name)
    vals = decode(np.arange(2**f.storage_bits), name)
    pos = np.unique(vals[np.isfinite(vals) & (vals >= 0)])
    mids = (pos[:-1] + pos[1:]) / 2
    top = np.array(
        [f.max, f.overflow_threshold, f.overflow_threshold * 1.001, 1e30, np.inf, np.nan]
    )
    low = np.array(
        [f.underflow_threshold, f.underflow_threshold * 1.001, f.underflow_threshold * 0.999]
    )
    x = np.concatenate(
        [
            pos,
            mids,
            np.nextafter(mids.astype(np.float32), np.float32(np.inf)),
            np.nextafter(mids.astype(np.float32), np.float32(0)),
            top,
            low,
        ]
    )
    return np.concatenate([x, -x]).astype(np.float32)


@pytest.mark.parametrize("name", list(TORCH_NAMES))
def test_cast_is_bit_identical_to_torch(name):
    """simulate_cast == tensor.to(dtype) bit for bit: random float32 bit patterns (all
    magnitudes), every tie, subnormals, overflow, infinities, NaN and signed zeros."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    random_bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([random_bits.view(np.float32), _edge_cases(name), np.float32([0.0, -0.0])])
    ours = simulate_cast(x, name).values.astype(np.float32)
    theirs = torch.from_numpy(x).to(getattr(torch, TORCH_NAMES[name])).float().numpy()
    same = (ours.view(np.uint32) == theirs.view(np.uint32)) | (np.isnan(ours) & np.isnan(theirs))
    assert same.all(), x[~same][:5]


def test_fp8_e4m3_saturates_like_torch():
    """Torch's float8_e4m3fn cast saturates: 1000 and inf become 448, NaN stays NaN."""
    torch = pytest.importorskip("torch")
    x = np.float32([1000.0, np.inf, -np.inf, 470.0, 463.0, np.nan])
    theirs = torch.from_numpy(x).to(torch.float8_e4m3fn).float().numpy()
    r = simulate_cast(x, "fp8_e4m3")
    np.testing.assert_array_equal(r.values[:5], theirs[:5])
    assert np.isnan(r.values[5]) and np.isnan(theirs[5])
    assert r.overflow == 2  # 1000 and 470; infinities are counted as non-finite input
    assert r.values[0] == 448


def test_fp32_and_fp16_from_float64_match_numpy():
    """Rounding from float64 (one rounding, ties to even) equals numpy's astype."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(100_000) * np.exp2(rng.uniform(-30, 20, 100_000))
    for name, t in (("fp32", np.float32), ("fp16", np.float16)):
        with np.errstate(over="ignore"):  # values beyond FP16's range become inf on purpose
            reference = x.astype(t).astype(np.float64)
        np.testing.assert_array_equal(simulate_cast(x, name).values, reference)


def test_tf32_matches_bit_trick_rounding():
    """TF32 (no torch dtype) equals a second, independent rounding: add half an ulp of the
    10-bit significand plus the tie-to-even bit to the FP32 pattern and clear 13 bits."""
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[np.isfinite(x)]
    u = x.view(np.uint32).astype(np.uint64)
    lsb = (u >> 13) & 1
    rounded = ((u + 0xFFF + lsb) & ~np.uint64(0x1FFF)).astype(np.uint32).view(np.float32)
    ours = simulate_cast(x, "tf32").values.astype(np.float32)
    assert (ours.view(np.uint32) == rounded.view(np.uint32)).all()


def test_int8_matches_torch_round_and_clamp():
    """INT8 with a scale rounds half to even and saturates: equal to torch.round (ties to
    even) followed by clamping to [-128, 127], on exact ties and out-of-range values."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    scale = 0.0625  # a power of two: x / scale is exact in float32 and float64 alike
    ties = (np.arange(-140, 140) + 0.5) * scale
    x = np.concatenate([rng.uniform(-20, 20, 10_000), ties]).astype(np.float32)
    t = torch.from_numpy(x)
    q = torch.clamp(torch.round(t / scale), -128, 127).numpy()
    r = simulate_cast(x, "int8", scale=scale)
    np.testing.assert_array_equal(r.values, q.astype(np.float64) * scale)
    # 127.5 rounds to 128 (even): past the top; -128.5 rounds to -128 (even): still inside
    assert r.overflow == int(((x / scale) >= 127.5).sum() + ((x / scale) < -128.5).sum())


def test_counts_partition_the_input():
    """Every finite value is exactly one of exact / precision loss / underflow / overflow."""
    x = np.array([1.0, 1.0 + 2**-12, 1e-9, 2.0**-24, 1e6, 0.0, np.nan, np.inf])
    r = simulate_cast(x, "fp16")
    assert (r.exact, r.precision_loss, r.underflow, r.overflow, r.non_finite) == (3, 1, 1, 1, 2)
    assert r.subnormal == 1  # 2**-24 is FP16's smallest subnormal
    assert r.exact + r.precision_loss + r.underflow + r.overflow + r.non_finite == r.count


def test_cli_keys_and_aliases():
    """The FormatResult carries the documented JSON keys; aliases resolve to canonical names."""
    d = number_format("bfloat16").to_dict()
    for key in (
        "name",
        "bits",
        "exponent_bits",
        "mantissa_bits",
        "max",
        "min_normal",
        "min_subnormal",
        "epsilon",
    ):
        assert key in d
    assert d["name"] == "bf16"
    assert set(FORMAT_NAMES) >= {"fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8"}


def test_bad_input_is_one_clear_sentence():
    """Unknown format names and a scale on a float format raise InvalidParameter naming them."""
    with pytest.raises(InvalidParameter, match=r"'format' must be one of .*\(got 'fp17'\)"):
        number_format("fp17")
    with pytest.raises(InvalidParameter, match="'scale' must be 1"):
        simulate_cast([1.0], "fp16", scale=2.0)
    with pytest.raises(InvalidParameter, match="'values'"):
        simulate_cast(["a"], "fp16")
