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

- MXFP6 (E2M3 or E3M2 elements, OCP MX spec section 5.3.2): blocks of 32 with E8M0 scales.

Bits per element include the scales: MXFP8 8 + 8/32 = 8.25, MXFP6 6 + 8/32 = 6.25, MXFP4
4 + 8/32 = 4.25, NVFP4 4 + 8/16 = 4.5 (plus 32 bits per tensor). For contrast,
``fp8_per_tensor`` is FP8 E4M3 with one FP32 scale for the whole tensor (Transformer Engine's
per-tensor recipe, scale = 448 / amax), 8 bits per element plus 32 per tensor.

:func:`block_format` and :func:`block_quantize` also take another ``block_size`` or
``scale_format`` than the published one (a what-if: E8M0 powers of two, FP8 E4M3 block
scales under an FP32 tensor scale as NVFP4 does, or exact FP32 block scales), and
:func:`block_outlier_study` quantizes a seeded tensor with one outlier of growing size to
show what a scale per block buys: the error of the outlier's block-mates and of the rest.

Rounding is :func:`dlperf_widgets.core.formats.simulate_cast`, bit-exact against PyTorch's
float8 casts (tests); FP4 E2M1, which PyTorch cannot cast, is checked against a search over
its 16 codes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ._validate import as_floats, check_choice, check_int, check_number, describe
from .errors import InvalidParameter
from .formats import number_format, simulate_cast
from .results import ResultMixin

__all__ = [
    "BLOCK_FORMATS",
    "FP8_FORMATS",
    "RECIPES",
    "SCALE_FORMATS",
    "BlockCastResult",
    "BlockFormat",
    "BlockStudyResult",
    "Fp8ScalingResult",
    "block_format",
    "block_outlier_study",
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
    """A block-scaled format: element format, block size, scale format, bits per element.

    ``block_size`` 0 means one scale for the whole tensor. ``bits_per_element`` is the
    element's bits plus its share of its block's scale (the tensor scale, 32 bits per
    tensor where there is one, is left out). Ranges in binades (powers of two):
    ``block_range_binades`` spans the largest to the smallest non-zero element magnitude,
    what one block holds below its largest value; ``scale_range_binades`` the span of the
    block scales (0 for a single scale); ``tensor_range_binades`` their sum, what one tensor
    holds. ``standard`` is False for a block size or scale format other than the published.
    All of it is exact arithmetic on the layouts.
    """

    name: str
    element_format: str
    block_size: int
    scale_format: str
    scale_bits: int
    tensor_scale_bits: int
    element_bits: int
    bits_per_element: float
    element_max: float
    element_min_subnormal: float
    block_range_binades: float
    scale_range_binades: float
    tensor_range_binades: float
    standard: bool
    source: str

    def _title(self) -> str:
        return f"Block format {self.name}"


_OCP = "OCP Microscaling Formats (MX) Specification v1.0 (2023), sections 5 and 6"
_NV = "NVIDIA blog 'Introducing NVFP4 for Efficient and Accurate Low-Precision Inference' (2025)"
_TE = "NVIDIA Transformer Engine documentation, 'Using FP8 with Transformer Engine'"
_BLOCK_SPECS: dict[str, tuple[str, int, str, str]] = {
    # name: (element, block size (0: the whole tensor), scale format, source)
    "mxfp8_e4m3": ("fp8_e4m3", 32, "e8m0", _OCP),
    "mxfp8_e5m2": ("fp8_e5m2", 32, "e8m0", _OCP),
    "mxfp6_e2m3": ("fp6_e2m3", 32, "e8m0", _OCP),
    "mxfp6_e3m2": ("fp6_e3m2", 32, "e8m0", _OCP),
    "mxfp4": ("fp4_e2m1", 32, "e8m0", _OCP),
    "nvfp4": ("fp4_e2m1", 16, "fp8_e4m3", _NV),
    "fp8_per_tensor": ("fp8_e4m3", 0, "fp32", _TE),
}
BLOCK_FORMATS: tuple[str, ...] = tuple(_BLOCK_SPECS)
_ALIASES = {
    "mxfp8": "mxfp8_e4m3",
    "mx-fp8": "mxfp8_e4m3",
    "mxfp6": "mxfp6_e2m3",
    "mx-fp6": "mxfp6_e2m3",
    "mx-fp4": "mxfp4",
    "nv-fp4": "nvfp4",
    "fp8": "fp8_per_tensor",
}
# Block scale formats: E8M0 (OCP MX spec 5.4.1: exponent only, bias 127, 2**-127 .. 2**127;
# 0xFF is NaN), FP8 E4M3 under an FP32 tensor scale (NVFP4's two levels), exact FP32.
SCALE_FORMATS = ("e8m0", "fp8_e4m3", "fp32")
_SCALE_BITS = {"e8m0": 8, "fp8_e4m3": 8, "fp32": 32}
_E8M0_MIN_EXP, _E8M0_MAX_EXP = -127, 127
# Largest block size a what-if may ask for (a tensor of a million elements has 256 blocks).
MAX_BLOCK = 4096


def _scale_range_binades(scale_format: str) -> float:
    """log2(largest / smallest positive scale) of a scale format (exact)."""
    if scale_format == "e8m0":
        return float(_E8M0_MAX_EXP - _E8M0_MIN_EXP)
    f = number_format(scale_format)
    return math.log2(f.max) - math.log2(f.min_subnormal)


def block_format(
    name: str, *, block_size: int | None = None, scale_format: str | None = None
) -> BlockFormat:
    """Layout of a block-scaled format: ``block_format('nvfp4').bits_per_element == 4.5``.

    ``block_size`` and ``scale_format`` replace the published ones (a what-if: MXFP4 with
    blocks of 16, or with FP8 E4M3 scales); ``fp8_per_tensor`` has one scale and takes
    neither.
    """
    return _block_format(name, "name", block_size, scale_format)


def _block_format(
    name: Any, parameter: str, block_size: Any = None, scale_format: Any = None
) -> BlockFormat:
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
    element, k, scale_fmt, source = _BLOCK_SPECS[key]
    standard = True
    if k == 0:
        for pname, given in (("block_size", block_size), ("scale_format", scale_format)):
            if given is not None:
                raise InvalidParameter(
                    f"'{pname}' must be left unset for {key}, which has one scale per tensor "
                    f"(got {describe(given)})"
                )
    if block_size is not None:
        block_size = check_int("block_size", block_size, maximum=MAX_BLOCK, allow_array=False)
        standard = standard and block_size == k
        k = block_size
    if scale_format is not None:
        scale_format = check_choice("scale_format", scale_format, SCALE_FORMATS)
        standard = standard and scale_format == scale_fmt
        scale_fmt = scale_format
    ef = number_format(element)
    sbits = _SCALE_BITS[scale_fmt]
    block_range = math.log2(ef.max) - math.log2(ef.min_subnormal)
    scale_range = _scale_range_binades(scale_fmt) if k else 0.0
    if not standard:
        source = f"what-if on {source}"
    return BlockFormat(
        name=key if standard else f"{key} (blocks of {k}, {scale_fmt} scales)",
        element_format=element,
        block_size=k,
        scale_format=scale_fmt,
        scale_bits=sbits if k else 0,
        # E4M3 block scales need an FP32 scale per tensor to reach their range (NVFP4);
        # a single scale is itself the tensor's
        tensor_scale_bits=32 if scale_fmt == "fp8_e4m3" or k == 0 else 0,
        element_bits=ef.storage_bits,
        # each element carries its share of its block's scale
        bits_per_element=ef.storage_bits + (sbits / k if k else 0.0),
        element_max=ef.max,
        element_min_subnormal=ef.min_subnormal,
        block_range_binades=block_range,
        scale_range_binades=scale_range,
        tensor_range_binades=block_range + scale_range,
        standard=standard,
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


def _quantize_rows(x: np.ndarray, bf: BlockFormat) -> tuple[np.ndarray, np.ndarray, Any, int]:
    """Quantize every row of ``x`` (rows, n) as a tensor of its own, in blocks along the row.

    Returns (dequantized values (rows, n), block scales (rows, blocks), tensor scales
    (rows,), count of saturated elements).
    """
    ef = number_format(bf.element_format)
    rows, n = x.shape
    k = bf.block_size or n
    nblocks = -(-n // k)
    padded = np.zeros((rows, nblocks * k))
    padded[:, :n] = x
    blocks = padded.reshape(rows, nblocks, k)
    amax_b = np.abs(blocks).max(axis=2)
    tensor_scale = np.ones(rows)
    if bf.scale_format == "e8m0":
        # OCP MX 6.3: shared exponent = floor(log2(amax)) - emax(element); a zero block
        # gets the smallest scale (its elements are zero whatever the scale)
        safe = np.where(amax_b > 0, amax_b, 1.0)
        _, e = np.frexp(safe)  # safe = frac * 2**e, frac in [0.5, 1): floor(log2) = e - 1
        shared = np.where(amax_b > 0, (e - 1) - ef.max_exponent, _E8M0_MIN_EXP)
        shared = np.clip(shared, _E8M0_MIN_EXP, _E8M0_MAX_EXP)
        scales = np.ldexp(1.0, shared.astype(np.int32))
    elif bf.scale_format == "fp8_e4m3":
        # NVIDIA's two levels: an FP32 tensor scale amax / (element max x 448), then each
        # block's amax / element max in units of it, rounded to E4M3
        amax = amax_b.max(axis=1)
        tensor_scale = np.where(amax > 0, amax / (ef.max * number_format("fp8_e4m3").max), 1.0)
        block_dec = amax_b / ef.max / tensor_scale[:, None]
        stored = np.asarray(simulate_cast(block_dec, "fp8_e4m3", saturate=True).values)
        scales = stored * tensor_scale[:, None]
    else:
        # an exact scale per block: the block's amax lands on the element max (FP32 in
        # practice; its rounding, 2**-24 relative, is far below any element format's step)
        scales = amax_b / ef.max
    safe_scales = np.where(scales > 0, scales, 1.0)
    cast = simulate_cast(blocks / safe_scales[:, :, None], ef.name, saturate=True)
    deq = np.asarray(cast.values) * np.where(scales > 0, scales, 0.0)[:, :, None]
    deq = deq.reshape(rows, nblocks * k)[:, :n]
    # padding zeros never saturate, so the cast's count is the tensor's
    return deq, scales, tensor_scale, cast.overflow


def block_quantize(
    values: Any,
    format: str = "mxfp8_e4m3",
    *,
    block_size: int | None = None,
    scale_format: str | None = None,
) -> BlockCastResult:
    """Quantize ``values`` (flattened, in blocks of consecutive elements) to a block format.

    MX formats follow the OCP MX specification's conversion; NVFP4 its two-level scaling
    (see the module text). ``block_size`` and ``scale_format`` as in :func:`block_format`.
    Returns the dequantized values and every block's scale.
    """
    x = _array(values).ravel()
    bf = _block_format(format, "format", block_size, scale_format)
    n = x.size
    deq2, scales2, tensor_scale, saturated = _quantize_rows(x[None, :], bf)
    deq = deq2[0]
    underflow = int(((x != 0) & (deq == 0)).sum())
    kept = (x != 0) & (deq != 0)
    rel = np.abs(deq - x)[kept] / np.abs(x[kept])
    return BlockCastResult(
        format=bf.name,
        count=int(n),
        blocks=int(scales2.shape[1]),
        block_size=bf.block_size or int(n),
        bits_per_element=bf.bits_per_element,
        tensor_scale=float(tensor_scale[0]),
        saturated=saturated,
        underflow=underflow,
        saturation_fraction=saturated / n,
        underflow_fraction=underflow / n,
        max_relative_error=float(rel.max()) if rel.size else 0.0,
        rms_relative_error=float(np.sqrt(np.mean(rel**2))) if rel.size else 0.0,
        values=deq,
        scales=scales2[0],
    )


# -- one outlier, growing ---------------------------------------------------------------------

# The study's tensor: 1,024 seeded standard-normal values (a tensor of 1,024 elements holds
# 4 blocks of the largest block size the explorer offers, 256), the first one replaced by
# the outlier; outlier sizes 0 to 24 binades above the others' largest, every half binade.
STUDY_ELEMENTS = 1024
STUDY_BINADES = np.arange(0.0, 24.01, 0.5)
MAX_OUTLIER_BINADES = 64.0


@dataclass(frozen=True)
class BlockStudyResult(ResultMixin):
    """One outlier in a tensor of seeded normal values, quantized to a block format.

    The layout figures (bits per element, ranges) are exact arithmetic, as in
    :class:`BlockFormat`. The errors are a simulated quantization (numpy round to nearest
    on the format's grid, :func:`block_quantize`) of ``elements`` standard-normal values
    (seed ``seed``) whose first value is replaced by an outlier ``outlier_binades`` binades
    (powers of two) above the others' largest magnitude. ``block_error`` is the relative
    rms error (norm of the error over norm of the values) of the outlier's block-mates,
    ``other_blocks_error`` that of the values outside its block (None with one scale per
    tensor, where the outlier's block is the whole tensor), ``tensor_error`` that of every
    value but the outlier (``baseline_tensor_error`` without an outlier: the format's own
    rounding), ``block_flushed_fraction`` the share of block-mates that became zero,
    ``outlier_error`` the outlier's own relative error. The ``sweep_*`` arrays hold the
    same for outliers ``sweep_binades`` (``sweep_other_blocks_error`` empty for one scale
    per tensor).
    """

    format: str
    element_format: str
    block_size: int
    scale_format: str
    bits_per_element: float
    tensor_scale_bits: int
    element_max: float
    element_min_subnormal: float
    block_range_binades: float
    scale_range_binades: float
    tensor_range_binades: float
    elements: int
    seed: int
    outlier_binades: float
    block_error: float
    other_blocks_error: float | None
    tensor_error: float
    block_flushed_fraction: float
    outlier_error: float
    baseline_tensor_error: float
    sweep_binades: Any
    sweep_block_error: Any
    sweep_other_blocks_error: Any
    sweep_block_flushed: Any

    _hidden: ClassVar[tuple[str, ...]] = (
        "sweep_binades",
        "sweep_block_error",
        "sweep_other_blocks_error",
        "sweep_block_flushed",
    )

    def _title(self) -> str:
        return (
            f"{self.format}: one outlier {self.outlier_binades:g} binades above "
            f"{self.elements:,} normal values (simulated quantization)"
        )


def _rel_rms(err: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Row-wise ||err|| / ||ref||."""
    return np.sqrt((err**2).sum(axis=1) / (ref**2).sum(axis=1))


def block_outlier_study(
    format: str = "mxfp4",
    *,
    block_size: int | None = None,
    scale_format: str | None = None,
    outlier_binades: float = 8.0,
    seed: int = 0,
) -> BlockStudyResult:
    """What one outlier costs a block-scaled format (see :class:`BlockStudyResult`).

    ``format`` is one of :data:`BLOCK_FORMATS`; ``block_size`` and ``scale_format`` replace
    its published ones (a what-if); ``outlier_binades`` from 0 (no outlier: the first value
    is the tensor's largest) to 64.
    """
    bf = _block_format(format, "format", block_size, scale_format)
    b = check_number("outlier_binades", outlier_binades, minimum=0, maximum=MAX_OUTLIER_BINADES)
    seed = check_int("seed", seed, minimum=0, maximum=2**32 - 1, allow_array=False)
    n = STUDY_ELEMENTS
    if bf.block_size >= n:
        raise InvalidParameter(
            f"'block_size' must be below the study's {n:,} elements, so that other blocks "
            f"exist (got {bf.block_size})"
        )
    if bf.block_size == 1:
        raise InvalidParameter(
            "'block_size' must be at least 2 in the outlier study, so that the outlier has "
            "block-mates (got 1)"
        )
    k = bf.block_size or n
    sweep = _outlier_errors(bf, seed, STUDY_BINADES)
    block_err, other_err, tensor_err, flushed, outlier_err = _outlier_errors(
        bf, seed, np.array([b])
    )
    return BlockStudyResult(
        format=bf.name,
        element_format=bf.element_format,
        block_size=k,
        scale_format=bf.scale_format,
        bits_per_element=bf.bits_per_element,
        tensor_scale_bits=bf.tensor_scale_bits,
        element_max=bf.element_max,
        element_min_subnormal=bf.element_min_subnormal,
        block_range_binades=bf.block_range_binades,
        scale_range_binades=bf.scale_range_binades,
        tensor_range_binades=bf.tensor_range_binades,
        elements=n,
        seed=seed,
        outlier_binades=b,
        block_error=float(block_err[0]),
        other_blocks_error=float(other_err[0]) if other_err.size else None,
        tensor_error=float(tensor_err[0]),
        block_flushed_fraction=float(flushed[0]),
        outlier_error=float(outlier_err[0]),
        baseline_tensor_error=float(sweep[2][0]),
        sweep_binades=STUDY_BINADES.copy(),
        sweep_block_error=sweep[0].copy(),
        sweep_other_blocks_error=sweep[1].copy(),
        sweep_block_flushed=sweep[3].copy(),
    )


def _outlier_errors(bf: BlockFormat, seed: int, sizes: np.ndarray) -> tuple[np.ndarray, ...]:
    """(block-mates' error, other blocks' error (empty with one block), every other
    value's error, block-mates flushed, outlier's error) for every outlier size; the sweep
    over :data:`STUDY_BINADES` is kept for the last few layouts."""
    if sizes is STUDY_BINADES:
        return _sweep_errors(bf, seed)
    n = STUDY_ELEMENTS
    base = np.random.default_rng(seed).standard_normal(n)
    top = float(np.abs(base[1:]).max())
    x = np.repeat(base[None, :], sizes.size, axis=0)
    x[:, 0] = top * np.exp2(sizes)
    deq, _, _, _ = _quantize_rows(x, bf)
    err = deq - x
    k = bf.block_size or n
    return (
        _rel_rms(err[:, 1:k], x[:, 1:k]),
        _rel_rms(err[:, k:], x[:, k:]) if k < n else np.zeros(0),
        _rel_rms(err[:, 1:], x[:, 1:]),
        (deq[:, 1:k] == 0).mean(axis=1),  # the normal values are never exactly zero
        np.abs(err[:, 0]) / x[:, 0],
    )


@functools.lru_cache(maxsize=32)
def _sweep_errors(bf: BlockFormat, seed: int) -> tuple[np.ndarray, ...]:
    # a frozen BlockFormat is hashable; moving the outlier alone reuses the sweep
    return _outlier_errors(bf, seed, STUDY_BINADES.copy())


def log2_magnitudes(values: Any) -> np.ndarray:
    """log2 of the non-zero magnitudes of ``values`` (what a range histogram bins)."""
    x = np.abs(_array(values).ravel())
    return np.log2(x[x > 0])


def format_log2_range(format: str) -> tuple[float, float, float]:
    """(log2 smallest subnormal, log2 smallest normal, log2 max) of a float format."""
    f = number_format(format)
    return (math.log2(f.min_subnormal), math.log2(f.min_normal), math.log2(f.max))
