"""Data types a GEMM can run in: storage size, and the name used in the FMA tables.

Sizes: IEEE 754 (fp64, fp32, fp16); bfloat16 and TF32 as in the NVIDIA A100 whitepaper
(TF32 is stored as a 32-bit float and rounded to a 10-bit significand inside the Tensor
Core); FP8 E4M3/E5M2 as in the NVIDIA Hopper whitepaper; FP4 E2M1 as in the OCP Microscaling
(MX) specification v1.0 (two per byte; the per-block scales are extra, see core.scaling);
int4 packs two values per byte.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._validate import closest, describe
from .errors import InvalidParameter

__all__ = ["DTYPES", "Dtype", "dtype", "dtype_names"]


@dataclass(frozen=True)
class Dtype:
    """One data type.

    ``bytes_per_element`` is what a GEMM reads and writes per element in memory;
    ``tensor_core_multiple`` is the dimension multiple that fills a 16-byte aligned access
    (NVIDIA, "Get Started With Deep Learning Performance", 2.2: multiples of 4 for TF32,
    8 for FP16, 16 for INT8, "equivalently ... 16 bytes").
    """

    name: str
    bits: int
    bytes_per_element: float
    kind: str  # "float" or "int"
    aliases: tuple[str, ...] = ()
    description: str = ""

    @property
    def tensor_core_multiple(self) -> int:
        # TF32 is read from memory as 32-bit floats, so its 16-byte multiple is 4.
        return int(16 / self.bytes_per_element)

    def __repr__(self) -> str:
        return f"Dtype({self.name!r}, {self.bytes_per_element:g} B/element)"


DTYPES: dict[str, Dtype] = {
    d.name: d
    for d in (
        Dtype("fp64", 64, 8, "float", ("float64", "double", "f64"), "IEEE double precision"),
        Dtype("fp32", 32, 4, "float", ("float32", "float", "single", "f32"), "IEEE single"),
        Dtype(
            "tf32",
            32,
            4,
            "float",
            ("tensorfloat32", "tensorfloat-32"),
            "FP32 storage, 10-bit significand inside Tensor Cores",
        ),
        Dtype("fp16", 16, 2, "float", ("float16", "half", "f16"), "IEEE half precision"),
        Dtype("bf16", 16, 2, "float", ("bfloat16",), "bfloat16: FP32 range, 8-bit significand"),
        Dtype(
            "fp8_e4m3",
            8,
            1,
            "float",
            ("fp8", "e4m3", "float8_e4m3fn", "fp8-e4m3"),
            "8-bit float, 4 exponent / 3 mantissa bits",
        ),
        Dtype(
            "fp8_e5m2",
            8,
            1,
            "float",
            ("e5m2", "float8_e5m2", "fp8-e5m2"),
            "8-bit float, 5 exponent / 2 mantissa bits",
        ),
        Dtype(
            "fp4_e2m1",
            4,
            0.5,
            "float",
            ("fp4", "e2m1", "float4_e2m1fn", "fp4-e2m1"),
            "4-bit float, 2 exponent / 1 mantissa bit, block-scaled (MXFP4, NVFP4)",
        ),
        Dtype("int8", 8, 1, "int", ("i8", "char"), "8-bit integer"),
        Dtype("int4", 4, 0.5, "int", ("i4",), "4-bit integer, two per byte"),
    )
}

_LOOKUP = {name: name for name in DTYPES}
for _d in DTYPES.values():
    for _a in _d.aliases:
        _LOOKUP[_a] = _d.name


def dtype_names() -> list[str]:
    return list(DTYPES)


def dtype(name: str | Dtype) -> Dtype:
    """Look up a data type by name or alias (``'half'``, ``'bfloat16'``, ``'fp8'`` ...)."""
    if isinstance(name, Dtype):
        return name
    if not isinstance(name, str):
        raise InvalidParameter(f"'dtype' must be one of {', '.join(DTYPES)} (got {describe(name)})")
    key = name.strip().lower().replace("torch.", "")
    if key in _LOOKUP:
        return DTYPES[_LOOKUP[key]]
    hint = closest(key, _LOOKUP) if len(key) <= 100 else []
    extra = f"; did you mean {', '.join(dict.fromkeys(_LOOKUP[h] for h in hint))}?" if hint else ""
    raise InvalidParameter(
        f"'dtype' must be one of {', '.join(DTYPES)} (got {describe(name)}){extra}"
    )
