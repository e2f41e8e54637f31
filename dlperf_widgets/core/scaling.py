"""Scaled low-precision formats: FP8 with a per-tensor scale, and block-scaled MX / NVFP4.

FP8 has too little range to hold a tensor as it comes: E4M3 spans about 2**-9 to 448,
E5M2 about 2**-16 to 57344. Training in FP8 therefore multiplies each tensor by a *scale*
before the cast and divides it out after the GEMM (Micikevicius et al. 2022, "FP8 Formats
for Deep Learning", section 3; NVIDIA Transformer Engine documentation, "Using FP8 with
Transformer Engine"). The scale maps the tensor's largest magnitude (its *amax*) onto the
format's largest value, less a safety *margin* of 2**margin:

    scale = format_max / amax / 2**margin

- *current* scaling takes amax from the tensor being cast (exact, but needs a pass over the
  tensor before the cast);
- *delayed* scaling takes it from a history of the amaxes of earlier steps (Transformer
  Engine keeps ``amax_history_len`` of them and uses their maximum, or the most recent), so
  the cast needs no extra pass; a tensor that grows faster than the history saturates.

Values whose scaled magnitude exceeds the format's range are *saturated* (clamped to
+-max, the saturating conversion the CUDA FP8 intrinsics offer); values that round to zero
have *underflowed*.

Block-scaled formats (OCP "Microscaling Formats (MX) Specification" v1.0, 2023) give every
block of k consecutive elements its own scale, so one outlier costs precision only in its
own block:

- MXFP8 (E4M3 or E5M2 elements) and MXFP4 (E2M1 elements): blocks of 32, one shared E8M0
  scale (a power of two, 8 bits) per block. The spec's conversion (section 6.3): shared
  exponent = floor(log2(amax of the block)) - emax of the element format; every element is
  divided by 2**shared_exponent and rounded to the element format (nearest, ties to even),
  values beyond the element's largest normal clamped to it.
- NVFP4 (NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference",
  2025; Blackwell): E2M1 elements in blocks of 16, an FP8 E4M3 scale per block, and one
  FP32 scale per tensor that brings the block scales into E4M3's range: the tensor scale
  is amax / (6 x 448); each block's scale is its amax / 6 divided by the tensor scale and
  rounded to E4M3.

Bits per element include the scales: MXFP8 8 + 8/32 = 8.25, MXFP4 4 + 8/32 = 4.25, NVFP4
4 + 8/16 = 4.5 (plus 32 bits per tensor).

Rounding is :func:`dlperf_widgets.core.formats.simulate_cast`, bit-exact against PyTorch's
float8 casts (tests); FP4 E2M1, which PyTorch cannot cast, is checked against a search over
its 16 codes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ._validate import as_floats, check_choice, check_int, describe
from .errors import InvalidParameter
from .formats import number_format, simulate_cast
from .results import ResultMixin

__all__ = [
    "BLOCK_FORMATS",
    "FP8_FORMATS",
    "RECIPES",
    "BlockCastResult",
    "BlockFormat",
    "Fp8ScalingResult",
    "block_format",
    "block_quantize",
    "format_log2_range",
    "fp8_quantize",
    "fp8_scale",
    "log2_magnitudes",
]

FP8_FORMATS = ("fp8_e4m3", "fp8_e5m2")
RECIPES = ("current", "delayed")
AMAX_COMPUTE = ("max", "most_recent")
# Transformer Engine's default history length for delayed scaling (DelayedScaling recipe).
DEFAULT_HISTORY = 1024


def _array(values: Any) -> np.ndarray:
    x = as_floats("values", values, "numbers or an array of numbers")  # 10**400 included
    if not np.isfinite(x).all():
        raise InvalidParameter("'values' must be finite numbers (got inf or NaN)")
    return x


def _fp8_name(format: Any) -> str:
    name = number_format(format).name if isinstance(format, str) else format
    if name not in FP8_FORMATS:
        raise InvalidParameter(
            f"'format' must be one of fp8_e4m3, fp8_e5m2 (got {describe(format)})"
        )
    return str(name)


def fp8_scale(amax: Any, format: str = "fp8_e4m3", *, margin: int = 0) -> Any:
    """The per-tensor scale that maps ``amax`` to the format's largest value, less a margin.

    ``format_max / amax / 2**margin`` (Transformer Engine's formula); an amax of zero gives
    a scale of 1. Accepts arrays of amaxes.
    """
    return _scale("amax", amax, _fp8_name(format), margin)


def _scale(name: str, amax: Any, format: str, margin: Any) -> Any:
    """fp8_scale() with errors naming ``name``, the caller's parameter the amax came from."""
    fmax = number_format(format).max
    margin = check_int("margin", margin, minimum=0, maximum=64, allow_array=False)
    a = as_floats(name, amax, "a non-negative finite number")
    if not np.isfinite(a).all() or (a < 0).any():
        raise InvalidParameter(
            f"'{name}' must be a non-negative finite number (got {describe(amax)})"
        )
    with np.errstate(divide="ignore", over="ignore"):
        s = np.where(a > 0, fmax / np.where(a > 0, a, 1.0) / 2.0**margin, 1.0)
    if not np.isfinite(s).all():
        # fmax / amax overflows float64 for a subnormal amax (1e-320): no finite scale maps
        # it to the format's range, so the cast cannot be described.
        smallest = fmax / np.finfo(np.float64).max / 2.0**margin
        bad = float(a[~np.isfinite(s)].flat[0])
        rule = "must be" if name != "values" else "must have a largest magnitude of"
        raise InvalidParameter(
            f"'{name}' {rule} 0 or at least {smallest:.3g} for {format} with margin {margin}, "
            f"so that the scale (format max / amax) stays finite (got {describe(bad)})"
        )
    return float(s) if s.ndim == 0 else s


@dataclass(frozen=True)
class Fp8ScalingResult(ResultMixin):
    """One tensor cast to FP8 with a per-tensor scale.

    ``amax`` is the tensor's own largest magnitude, ``scale_amax`` the one the scale was
    computed from (the same for current scaling; from the history for delayed scaling).
    ``saturation_fraction``: share of the values clamped to +-max; ``underflow_fraction``:
    share of non-zero values that became zero. ``values`` are the dequantized values
    (FP8 value / scale); ``scaled`` the values multiplied by the scale, before rounding.
    """

    format: str
    recipe: str
    count: int
    amax: float
    scale_amax: float
    margin: int
    scale: float
    format_max: float
    saturated: int
    underflow: int
    saturation_fraction: float
    underflow_fraction: float
    max_relative_error: float
    rms_relative_error: float
    values: Any
    scaled: Any

    _hidden: ClassVar[tuple[str, ...]] = ("values", "scaled")

    def _title(self) -> str:
        return f"{self.count:,} values to {self.format}, {self.recipe} scaling"


def fp8_quantize(
    values: Any,
    format: str = "fp8_e4m3",
    *,
    recipe: str = "current",
    amax_history: Any = None,
    amax_compute: str = "max",
    margin: int = 0,
) -> Fp8ScalingResult:
    """Cast ``values`` to FP8 with a per-tensor scale; count saturation and underflow.

    ``recipe='current'`` scales by this tensor's amax. ``recipe='delayed'`` scales by the
    amaxes of earlier steps in ``amax_history`` (their maximum, or with
    ``amax_compute='most_recent'`` the last one), as Transformer Engine's delayed scaling
    does; the history must hold at least one amax.
    """
    x = _array(values)
    name = _fp8_name(format)
    recipe = check_choice("recipe", recipe, RECIPES)
    amax_compute = check_choice("amax_compute", amax_compute, AMAX_COMPUTE)
    margin = check_int("margin", margin, minimum=0, maximum=64, allow_array=False)
    amax = float(np.abs(x).max())
    if recipe == "current":
        scale_amax = amax
    else:
        if amax_history is None:
            raise InvalidParameter(
                "'amax_history' must hold the amaxes of earlier steps for delayed scaling "
                "(got None)"
            )
        hist = np.atleast_1d(np.asarray(amax_history, dtype=np.float64))
        if hist.size == 0 or not np.isfinite(hist).all() or (hist < 0).any():
            raise InvalidParameter(
                f"'amax_history' must be non-negative finite numbers (got {describe(amax_history)})"
            )
        scale_amax = float(hist.max() if amax_compute == "max" else hist[-1])
    f = number_format(name)
    scale = _scale("values" if recipe == "current" else "amax_history", scale_amax, name, margin)
    with np.errstate(over="ignore"):
        scaled = x * scale
    # A stale delayed scale can push x * scale past float64: held at the largest float, it
    # still counts as saturated in the cast (an inf input would pass through as inf).
    big = np.finfo(np.float64).max
    scaled = np.clip(scaled, -big, big)
    cast = simulate_cast(scaled, name, saturate=True)
    deq = np.asarray(cast.values) / scale
    nonzero = x != 0
    kept = nonzero & (np.asarray(cast.values) != 0)
    rel = np.abs(deq - x)[kept] / np.abs(x[kept])
    n = int(x.size)
    return Fp8ScalingResult(
        format=name,
        recipe=recipe,
        count=n,
        amax=amax,
        scale_amax=scale_amax,
        margin=margin,
        scale=float(scale),
        format_max=f.max,
        saturated=cast.overflow,
        underflow=cast.underflow,
        saturation_fraction=cast.overflow / n,
        underflow_fraction=cast.underflow / n,
        max_relative_error=float(rel.max()) if rel.size else 0.0,
        rms_relative_error=float(np.sqrt(np.mean(rel**2))) if rel.size else 0.0,
        values=deq,
        scaled=scaled,
    )


# -- block-scaled formats -----------------------------------------------------------------


@dataclass(frozen=True)
class BlockFormat(ResultMixin):
    """A block-scaled format: element format, block size, scale format, bits per element."""

    name: str
    element_format: str
    block_size: int
    scale_format: str
    scale_bits: int
    tensor_scale_bits: int
    element_bits: int
    bits_per_element: float
    element_max: float
    source: str

    def _title(self) -> str:
        return f"Block format {self.name}"


_OCP = "OCP Microscaling Formats (MX) Specification v1.0 (2023), sections 5 and 6"
_NV = "NVIDIA blog 'Introducing NVFP4 for Efficient and Accurate Low-Precision Inference' (2025)"
_BLOCK_SPECS: dict[str, tuple[str, int, str, int, int, str]] = {
    # name: (element, block size, scale format, scale bits, tensor-scale bits, source)
    "mxfp8_e4m3": ("fp8_e4m3", 32, "e8m0", 8, 0, _OCP),
    "mxfp8_e5m2": ("fp8_e5m2", 32, "e8m0", 8, 0, _OCP),
    "mxfp4": ("fp4_e2m1", 32, "e8m0", 8, 0, _OCP),
    "nvfp4": ("fp4_e2m1", 16, "fp8_e4m3", 8, 32, _NV),
}
BLOCK_FORMATS: tuple[str, ...] = tuple(_BLOCK_SPECS)
_ALIASES = {"mxfp8": "mxfp8_e4m3", "mx-fp8": "mxfp8_e4m3", "mx-fp4": "mxfp4", "nv-fp4": "nvfp4"}


def block_format(name: str) -> BlockFormat:
    """Layout of a block-scaled format: ``block_format('nvfp4').bits_per_element == 4.5``."""
    return _block_format(name, "name")


def _block_format(name: Any, parameter: str) -> BlockFormat:
    """block_format() with errors naming ``parameter`` (block_quantize's is 'format')."""
    if not isinstance(name, str):
        raise InvalidParameter(
            f"'{parameter}' must be one of {', '.join(BLOCK_FORMATS)} (got {describe(name)})"
        )
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _BLOCK_SPECS:
        raise InvalidParameter(
            f"'{parameter}' must be one of {', '.join(BLOCK_FORMATS)} (got {describe(name)})"
        )
    element, k, scale_fmt, sbits, tbits, source = _BLOCK_SPECS[key]
    ef = number_format(element)
    return BlockFormat(
        name=key,
        element_format=element,
        block_size=k,
        scale_format=scale_fmt,
        scale_bits=sbits,
        tensor_scale_bits=tbits,
        element_bits=ef.storage_bits,
        # each element carries its share of its block's scale
        bits_per_element=ef.storage_bits + sbits / k,
        element_max=ef.max,
        source=source,
    )


@dataclass(frozen=True)
class BlockCastResult(ResultMixin):
    """A tensor quantized to a block-scaled format and back.

    ``scales`` holds each block's decoded scale (times the tensor scale for NVFP4), so a
    value is element x scale. ``blocks`` counts the blocks (the last one padded with zeros
    when the size is not a multiple of the block size). Fractions are over all values.
    """

    format: str
    count: int
    blocks: int
    block_size: int
    bits_per_element: float
    tensor_scale: float
    saturated: int
    underflow: int
    saturation_fraction: float
    underflow_fraction: float
    max_relative_error: float
    rms_relative_error: float
    values: Any
    scales: Any

    _hidden: ClassVar[tuple[str, ...]] = ("values", "scales")

    def _title(self) -> str:
        return f"{self.count:,} values to {self.format} ({self.blocks:,} blocks)"


# E8M0 (OCP MX spec 5.4.1): exponent only, bias 127, 2**-127 .. 2**127; 0xFF is NaN.
_E8M0_MIN_EXP, _E8M0_MAX_EXP = -127, 127


def block_quantize(values: Any, format: str = "mxfp8_e4m3") -> BlockCastResult:
    """Quantize ``values`` (flattened, in blocks of consecutive elements) to a block format.

    MX formats follow the OCP MX specification's conversion; NVFP4 its two-level scaling
    (see the module text). Returns the dequantized values and every block's scale.
    """
    x = _array(values).ravel()
    bf = _block_format(format, "format")
    ef = number_format(bf.element_format)
    k = bf.block_size
    n = x.size
    nblocks = -(-n // k)
    padded = np.zeros(nblocks * k)
    padded[:n] = x
    blocks = padded.reshape(nblocks, k)
    amax_b = np.abs(blocks).max(axis=1)
    tensor_scale = 1.0
    if bf.scale_format == "e8m0":
        # shared exponent = floor(log2(amax)) - emax(element); a zero block gets the
        # smallest scale (its elements are zero whatever the scale)
        safe = np.where(amax_b > 0, amax_b, 1.0)
        _, e = np.frexp(safe)  # safe = frac * 2**e, frac in [0.5, 1): floor(log2) = e - 1
        shared = np.where(amax_b > 0, (e - 1) - ef.max_exponent, _E8M0_MIN_EXP)
        shared = np.clip(shared, _E8M0_MIN_EXP, _E8M0_MAX_EXP)
        scales = np.ldexp(1.0, shared.astype(np.int32))
    else:
        # NVFP4: an FP32 tensor scale, then E4M3 block scales (NVIDIA's two-level scheme)
        e4m3 = number_format("fp8_e4m3")
        amax = float(amax_b.max())
        tensor_scale = amax / (ef.max * e4m3.max) if amax > 0 else 1.0
        block_dec = amax_b / ef.max / tensor_scale
        stored = np.asarray(simulate_cast(block_dec, "fp8_e4m3", saturate=True).values)
        scales = stored * tensor_scale
    safe_scales = np.where(scales > 0, scales, 1.0)
    cast = simulate_cast((blocks / safe_scales[:, None]).ravel()[:n], ef.name, saturate=True)
    q = np.zeros(nblocks * k)
    q[:n] = np.asarray(cast.values)
    deq_blocks = q.reshape(nblocks, k) * np.where(scales > 0, scales, 0.0)[:, None]
    deq = deq_blocks.ravel()[:n]
    underflow = int(((x != 0) & (deq == 0)).sum())
    kept = (x != 0) & (deq != 0)
    rel = np.abs(deq - x)[kept] / np.abs(x[kept])
    return BlockCastResult(
        format=bf.name,
        count=int(n),
        blocks=int(nblocks),
        block_size=k,
        bits_per_element=bf.bits_per_element,
        tensor_scale=float(tensor_scale),
        saturated=cast.overflow,
        underflow=underflow,
        saturation_fraction=cast.overflow / n,
        underflow_fraction=underflow / n,
        max_relative_error=float(rel.max()) if rel.size else 0.0,
        rms_relative_error=float(np.sqrt(np.mean(rel**2))) if rel.size else 0.0,
        values=deq,
        scales=scales,
    )


def log2_magnitudes(values: Any) -> np.ndarray:
    """log2 of the non-zero magnitudes of ``values`` (what a range histogram bins)."""
    x = np.abs(_array(values).ravel())
    return np.log2(x[x > 0])


def format_log2_range(format: str) -> tuple[float, float, float]:
    """(log2 smallest subnormal, log2 smallest normal, log2 max) of a float format."""
    f = number_format(format)
    return (math.log2(f.min_subnormal), math.log2(f.min_normal), math.log2(f.max))
