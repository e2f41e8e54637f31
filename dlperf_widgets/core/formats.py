"""Number formats: what the bits of FP32, TF32, FP16, BF16, FP8 and INT8 can hold.

Every figure is derived from the bit layout (sign, exponent and significand widths, the
exponent bias and the rule for special values), never typed in: the slides "NN Performance
optimization" ("A note on data types") put it as *exponent -> dynamic range, significand ->
precision*. Layouts: IEEE 754 for FP64/FP32/FP16; bfloat16 and TF32 (an 8-bit exponent with
a 10-bit significand, stored in 32 bits) as in the NVIDIA A100 whitepaper; FP8 E4M3 and E5M2
as in Micikevicius et al. 2022, "FP8 Formats for Deep Learning" (E5M2 follows IEEE rules;
E4M3 has no infinities and only the all-ones pattern S.1111.111 is NaN, which buys one more
binade: largest value 448); FP6 E2M3 / E3M2 and FP4 E2M1 as in the OCP Microscaling Formats
(MX) Specification v1.0, sections 5.3.2 and 5.3.3 (no infinities or NaN; largest values 7.5,
28 and 6).

:func:`simulate_cast` rounds an array to a format in numpy (round to nearest, ties to
even; overflow to infinity or saturation as the format does; gradual underflow through the
subnormals to zero) and counts what was lost. It matches PyTorch's casts bit for bit where
PyTorch has the dtype (the tests check it). PyTorch's ``float8_e4m3fn`` cast *saturates*:
finite values beyond the range and infinities become +-448, NaN stays NaN (checked with
torch 2.13); E5M2, FP16 and BF16 overflow to infinity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ._validate import check_bool, check_int, check_number, closest, describe
from .errors import InvalidParameter
from .results import ResultMixin

__all__ = [
    "FORMAT_NAMES",
    "CastResult",
    "FormatResult",
    "decode",
    "format_names",
    "number_format",
    "simulate_cast",
]


@dataclass(frozen=True)
class _Layout:
    name: str
    kind: str  # "float" or "int"
    exponent_bits: int
    mantissa_bits: int  # stored significand bits (floats) or value bits (ints, no sign)
    storage_bits: int
    # "ieee": all-ones exponent = inf/NaN; "fn": only S.1..1.1..1 is NaN; "none": every
    # pattern is a number (FP4 E2M1, OCP MX spec 5.3.3); "int"
    specials: str
    overflow: str  # what a too-large value becomes: "inf" or "saturate"
    torch_dtype: str | None
    aliases: tuple[str, ...]
    description: str


_LAYOUTS: dict[str, _Layout] = {
    lay.name: lay
    for lay in (
        _Layout(
            "fp64",
            "float",
            11,
            52,
            64,
            "ieee",
            "inf",
            "float64",
            ("float64", "double", "f64"),
            "IEEE 754 double precision",
        ),
        _Layout(
            "fp32",
            "float",
            8,
            23,
            32,
            "ieee",
            "inf",
            "float32",
            ("float32", "float", "single", "f32"),
            "IEEE 754 single precision",
        ),
        _Layout(
            "tf32",
            "float",
            8,
            10,
            32,
            "ieee",
            "inf",
            None,
            ("tensorfloat32", "tensorfloat-32"),
            "TensorFloat-32: FP32 range, FP16 precision; FP32 in memory, rounded inside "
            "the Tensor Cores",
        ),
        _Layout(
            "fp16",
            "float",
            5,
            10,
            16,
            "ieee",
            "inf",
            "float16",
            ("float16", "half", "f16"),
            "IEEE 754 half precision",
        ),
        _Layout(
            "bf16",
            "float",
            8,
            7,
            16,
            "ieee",
            "inf",
            "bfloat16",
            ("bfloat16",),
            "bfloat16: FP32 range with an 8-bit significand",
        ),
        _Layout(
            "fp8_e4m3",
            "float",
            4,
            3,
            8,
            "fn",
            "saturate",
            "float8_e4m3fn",
            ("fp8", "e4m3", "float8_e4m3fn", "fp8-e4m3"),
            "FP8 E4M3 (no infinities, one NaN pattern): weights and activations",
        ),
        _Layout(
            "fp8_e5m2",
            "float",
            5,
            2,
            8,
            "ieee",
            "inf",
            "float8_e5m2",
            ("e5m2", "float8_e5m2", "fp8-e5m2"),
            "FP8 E5M2 (IEEE-like): gradients",
        ),
        # FP6 (OCP MX spec v1.0, section 5.3.2): no infinities or NaN; E2M3 (bias 1, values
        # to 7.5) and E3M2 (bias 3, values to 28), the elements of MXFP6
        _Layout(
            "fp6_e2m3",
            "float",
            2,
            3,
            6,
            "none",
            "saturate",
            None,
            ("e2m3", "float6_e2m3fn", "fp6-e2m3"),
            "FP6 E2M3 (no infinities, no NaN; values to 7.5): an element of MXFP6",
        ),
        _Layout(
            "fp6_e3m2",
            "float",
            3,
            2,
            6,
            "none",
            "saturate",
            None,
            ("e3m2", "float6_e3m2fn", "fp6-e3m2"),
            "FP6 E3M2 (no infinities, no NaN; values to 28): an element of MXFP6",
        ),
        _Layout(
            "fp4_e2m1",
            "float",
            2,
            1,
            4,
            "none",
            "saturate",
            None,
            ("fp4", "e2m1", "float4_e2m1fn", "fp4-e2m1"),
            "FP4 E2M1 (no infinities, no NaN; values 0 to 6): the elements of MXFP4 and NVFP4",
        ),
        _Layout(
            "int8",
            "int",
            0,
            7,
            8,
            "int",
            "saturate",
            "int8",
            ("i8", "char"),
            "8-bit two's-complement integer (symmetric quantisation)",
        ),
        _Layout(
            "int4",
            "int",
            0,
            3,
            4,
            "int",
            "saturate",
            None,
            ("i4",),
            "4-bit two's-complement integer, two per byte",
        ),
    )
}

FORMAT_NAMES: tuple[str, ...] = tuple(_LAYOUTS)

_LOOKUP: dict[str, str] = {}
for _lay in _LAYOUTS.values():
    _LOOKUP[_lay.name] = _lay.name
    for _alias in _lay.aliases:
        _LOOKUP[_alias] = _lay.name


def format_names() -> list[str]:
    return list(FORMAT_NAMES)


def _layout(name: Any) -> _Layout:
    if isinstance(name, FormatResult):
        name = name.name
    if isinstance(name, str):
        key = name.strip().lower().replace("torch.", "")
        if key in _LOOKUP:
            return _LAYOUTS[_LOOKUP[key]]
        hint = closest(key, _LOOKUP) if len(key) <= 100 else []
        extra = (
            f"; did you mean {', '.join(dict.fromkeys(_LOOKUP[h] for h in hint))}?" if hint else ""
        )
    else:
        extra = ""
    raise InvalidParameter(
        f"'format' must be one of {', '.join(FORMAT_NAMES)} (got {describe(name)}){extra}"
    )


@dataclass(frozen=True)
class FormatResult(ResultMixin):
    """A number format's layout and the limits that follow from it.

    ``bits`` counts the bits that carry the value (sign + exponent + significand; 19 for
    TF32), ``storage_bits`` what one element takes in memory. ``mantissa_bits`` is the
    stored significand (the leading 1 of normal numbers is implicit). ``epsilon`` is the
    gap between 1 and the next larger number, ``2**-mantissa_bits``. ``overflow_threshold``
    is the smallest magnitude that rounds past ``max`` (to infinity, or saturated to
    ``max``); ``underflow_threshold`` the largest that rounds to zero (half the smallest
    subnormal: the tie goes to the even neighbour, zero).
    """

    name: str
    bits: int
    exponent_bits: int
    mantissa_bits: int
    max: float
    min_normal: float
    min_subnormal: float
    epsilon: float
    kind: str
    storage_bits: int
    bias: int
    min: float
    max_exponent: int
    min_exponent: int
    has_inf: bool
    has_nan: bool
    overflow: str
    overflow_threshold: float
    underflow_threshold: float
    decimal_digits: float
    dynamic_range_decades: float
    torch_dtype: str | None
    description: str

    def _title(self) -> str:
        return f"Number format {self.name}: {self.description}"


def number_format(name: str) -> FormatResult:
    """Layout and limits of a format: ``number_format('fp16').max == 65504``.

    Names: fp64 fp32 tf32 fp16 bf16 fp8_e4m3 fp8_e5m2 fp6_e2m3 fp6_e3m2 fp4_e2m1 int8 int4 and
    aliases (half,
    bfloat16, fp8, float8_e4m3fn, e5m2, ...).
    """
    lay = _layout(name)
    m = lay.mantissa_bits
    if lay.kind == "int":
        top = 2**m - 1
        return FormatResult(
            name=lay.name,
            bits=lay.storage_bits,
            exponent_bits=0,
            mantissa_bits=m,
            max=float(top),
            min_normal=1.0,
            min_subnormal=1.0,
            epsilon=1.0,
            kind="int",
            storage_bits=lay.storage_bits,
            bias=0,
            min=float(-(top + 1)),
            max_exponent=0,
            min_exponent=0,
            has_inf=False,
            has_nan=False,
            overflow="saturate",
            overflow_threshold=top + 0.5,
            underflow_threshold=0.5,
            decimal_digits=math.log10(2) * (m + 1),
            dynamic_range_decades=math.log10(top),
            torch_dtype=lay.torch_dtype,
            description=lay.description,
        )
    e = lay.exponent_bits
    bias = 2 ** (e - 1) - 1
    if lay.specials == "ieee":
        # The all-ones exponent is reserved for inf/NaN: the top binade is 2**e - 2.
        emax = (2**e - 2) - bias
        top_significand = 2 - 2.0**-m  # 1.11...1
    elif lay.specials == "fn":
        # "fn": the all-ones exponent holds numbers too, except S.1..1.1..1 (NaN).
        emax = (2**e - 1) - bias
        top_significand = 2 - 2.0 ** (1 - m)  # 1.11...0
    else:
        # "none": no special values at all, the top pattern S.1..1.1..1 is the largest number
        emax = (2**e - 1) - bias
        top_significand = 2 - 2.0**-m
    emin = 1 - bias
    largest = math.ldexp(top_significand, emax)
    ulp_top = math.ldexp(1.0, emax - m)
    min_sub = math.ldexp(1.0, emin - m)
    return FormatResult(
        name=lay.name,
        bits=1 + e + m,
        exponent_bits=e,
        mantissa_bits=m,
        max=largest,
        min_normal=math.ldexp(1.0, emin),
        min_subnormal=min_sub,
        epsilon=math.ldexp(1.0, -m),
        kind="float",
        storage_bits=lay.storage_bits,
        bias=bias,
        min=-largest,
        max_exponent=emax,
        min_exponent=emin,
        has_inf=lay.specials == "ieee",
        has_nan=lay.specials != "none",
        overflow=lay.overflow,
        overflow_threshold=largest + ulp_top / 2,
        underflow_threshold=min_sub / 2,
        # A p-bit significand (p = m + 1 with the implicit bit) resolves p*log10(2) digits.
        decimal_digits=(m + 1) * math.log10(2),
        # in logs: FP64's max / min_subnormal overflows a float64
        dynamic_range_decades=math.log10(largest) - math.log10(min_sub),
        torch_dtype=lay.torch_dtype,
        description=lay.description,
    )


def decode(codes: Any, name: str) -> np.ndarray:
    """Values (float64) of integer bit patterns of a format, e.g. all 256 FP8 codes.

    The inverse of the layout: sign, biased exponent and significand fields, subnormals
    where the exponent field is zero, and the format's rule for infinities and NaN.
    """
    lay = _layout(name)
    low = -(2 ** (lay.storage_bits - 1)) if lay.kind == "int" else 0
    c = np.asarray(
        check_int("codes", codes, minimum=low, maximum=2**lay.storage_bits - 1), dtype=np.int64
    )
    if lay.kind == "int":
        n = lay.storage_bits
        c = c & (2**n - 1)
        return np.where(c >= 2 ** (n - 1), c - 2**n, c).astype(np.float64)
    f = number_format(lay.name)
    e_bits, m = lay.exponent_bits, lay.mantissa_bits
    sign = np.where((c >> (e_bits + m)) & 1, -1.0, 1.0)
    ef = (c >> m) & (2**e_bits - 1)
    mf = (c & (2**m - 1)).astype(np.float64)
    normal = np.ldexp(1.0 + mf / 2**m, (ef - f.bias).astype(np.int32))
    sub = np.ldexp(mf, f.min_exponent - m)
    val = np.where(ef == 0, sub, normal)
    all_ones = ef == 2**e_bits - 1
    if lay.specials == "ieee":
        val = np.where(all_ones, np.where(mf == 0, np.inf, np.nan), val)
    elif lay.specials == "fn":
        val = np.where(all_ones & (mf == 2**m - 1), np.nan, val)
    return sign * val


@dataclass(frozen=True)
class CastResult(ResultMixin):
    """What rounding an array to a format did to its values.

    Counts (each finite input lands in exactly one of exact / precision_loss / underflow /
    overflow): ``exact`` kept unchanged; ``precision_loss`` rounded to a different non-zero
    value; ``underflow`` a non-zero value became zero; ``overflow`` beyond the largest
    value (became infinity, or was saturated to +-max). ``subnormal`` counts non-zero
    results below the smallest normal number (they keep fewer significant bits);
    ``non_finite`` inputs that were inf or NaN. ``values`` holds the rounded array.
    """

    format: str
    count: int
    exact: int
    precision_loss: int
    underflow: int
    overflow: int
    subnormal: int
    non_finite: int
    underflow_fraction: float
    overflow_fraction: float
    precision_loss_fraction: float
    max_relative_error: float
    scale: float
    values: Any

    _hidden: ClassVar[tuple[str, ...]] = ("values",)

    def _title(self) -> str:
        return f"Cast of {self.count:,} values to {self.format}"


def _round_float(x: np.ndarray, f: FormatResult, saturate: bool) -> tuple[np.ndarray, np.ndarray]:
    """Round float64 ``x`` to the format; return (values, overflowed-mask)."""
    a = np.abs(x)
    finite = np.isfinite(x)
    safe = np.where(finite & (a > 0), a, 1.0)
    # exponent of the leading bit: a = frac * 2**exp with frac in [0.5, 1)
    _, exp = np.frexp(safe)
    e = np.maximum(exp - 1, f.min_exponent)  # subnormals share the smallest quantum
    quantum_exp = (e - f.mantissa_bits).astype(np.int32)
    # a / quantum is exact (a power-of-two scaling inside float64's range), so np.rint
    # performs the one and only rounding, ties to even.
    r = np.ldexp(np.rint(np.ldexp(safe, -quantum_exp)), quantum_exp)
    r = np.where(finite & (a > 0), r, a)
    over = finite & (r > f.max)
    big = over | np.isinf(x)
    if saturate:
        r = np.where(big, f.max, r)
    elif f.has_inf:
        r = np.where(big, np.inf, r)
    else:
        r = np.where(big, np.nan, r)  # a format without inf that does not saturate
    r = np.where(np.isnan(x), np.nan, r)
    return np.copysign(r, x), over


def simulate_cast(
    values: Any, format: str, *, scale: float = 1.0, saturate: bool | None = None
) -> CastResult:
    """Round ``values`` to ``format`` in numpy and count overflow, underflow and rounding.

    ``values`` is anything numpy turns into floats (float16/32/64 arrays, lists, scalars);
    the rounding is done once from the exact value. ``saturate`` overrides the format's
    overflow rule (default: FP8 E4M3 and integers saturate, the others go to infinity).
    For integer formats ``scale`` is the real value of one integer step (symmetric
    quantisation, zero point 0) and the returned values are ``q * scale``; for float
    formats it must stay 1.
    """
    lay = _layout(format)
    f = number_format(lay.name)
    scale = check_number("scale", scale, minimum=0, strict=True)
    if lay.kind == "float" and scale != 1.0:
        raise InvalidParameter(
            f"'scale' must be 1 for the float format {lay.name} (got {describe(scale)}); "
            "multiply the values instead"
        )
    # signalling NaNs and inf - inf are expected here: no floating-point warnings
    with np.errstate(invalid="ignore", over="ignore"):
        try:
            x = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError, OverflowError) as exc:
            raise InvalidParameter(
                f"'values' must be numbers or an array of numbers (got {type(values).__name__})"
            ) from exc
        if saturate is None:
            saturate = lay.overflow == "saturate"
        else:
            saturate = check_bool("saturate", saturate)
        finite = np.isfinite(x)
        if lay.kind == "int":
            q = np.rint(np.where(finite, x, 0.0) / scale)  # np.rint: ties to even
            over = finite & ((q > f.max) | (q < f.min))
            q = np.clip(q, f.min, f.max)
            r = np.where(
                finite, q * scale, np.where(np.isnan(x), np.nan, np.sign(x) * f.max * scale)
            )
            min_normal = scale
        elif lay.name == "fp64":
            r, over = x.copy(), np.zeros(x.shape, dtype=bool)
            min_normal = f.min_normal
        else:
            r, over = _round_float(x, f, bool(saturate))
            min_normal = f.min_normal
        nonzero_in = finite & (x != 0)
        underflow = nonzero_in & (r == 0)
        exact = finite & (r == x)
        loss = finite & ~exact & ~underflow & ~over
        subnormal = np.isfinite(r) & (r != 0) & (np.abs(r) < min_normal)
        rel = np.abs(r - x) / np.where(nonzero_in, np.abs(x), 1.0)
        kept = nonzero_in & ~over & ~underflow
        n = int(x.size)
    return CastResult(
        format=lay.name,
        count=n,
        exact=int(exact.sum()),
        precision_loss=int(loss.sum()),
        underflow=int(underflow.sum()),
        overflow=int(over.sum()),
        subnormal=int(subnormal.sum()),
        non_finite=int((~finite).sum()),
        underflow_fraction=float(underflow.sum() / n) if n else 0.0,
        overflow_fraction=float(over.sum() / n) if n else 0.0,
        precision_loss_fraction=float(loss.sum() / n) if n else 0.0,
        max_relative_error=float(rel[kept].max()) if kept.any() else 0.0,
        scale=scale,
        values=r,
    )
