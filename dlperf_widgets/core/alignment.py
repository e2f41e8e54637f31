"""Tensor Core alignment rules and size advice, as findings with concrete fixes.

Sources: NVIDIA "Get Started With Deep Learning Performance" 2.2 (multiples of 4 for TF32,
8 for FP16, 16 for INT8: 16 bytes) and 2.3 (divisible by 64, up to 256; 512 vs 520 matters
more than 5120 vs 5128; only helps when math-bound); NVIDIA slides "NN Performance
optimization", Table 1 "Tensor Core requirements by cuBLAS or cuDNN version".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._validate import check_choice, check_int
from .dtypes import Dtype, dtype
from .gpus import Gpu
from .results import ResultMixin

__all__ = [
    "A100_MULTIPLES",
    "LIBRARIES",
    "SEVERITIES",
    "Finding",
    "alignment_findings",
    "legacy_required_multiple",
    "next_multiple",
]

SEVERITIES = ("error", "warning", "info")

# 'current': cuBLAS >= 11.0 / cuDNN >= 7.6.3, Tensor Cores always usable, aligned sizes
# faster; 'legacy': older libraries, Tensor Cores only for aligned sizes (slides, Table 1).
LIBRARIES = ("current", "legacy")

# "on A100, multiples of 128 (INT8), 64 (FP16), 32 (TF32), 16 (FP64)" (slides, Table 1).
# BF16 shares FP16's 2-byte element, so its multiple is FP16's.
A100_MULTIPLES = {"int8": 128, "fp16": 64, "bf16": 64, "tf32": 32, "fp64": 16}

# Legacy libraries: Tensor Cores only with multiples of 16 (INT8) and 8 (FP16); TF32 and
# FP64 Tensor Core paths did not exist before cuBLAS 11.0 ("N/A" in Table 1).
_LEGACY_REQUIRED = {"int8": 16, "fp16": 8}

# Size advice: "divisible by ... at least 64, and up to 256" (Get Started guide, 2.3).
SIZE_MULTIPLE = 64
SIZE_IDEAL = 256
# The tile width used to express what a size costs in tile quantization (the 128-wide
# tiles of the guide's examples).
SIZE_TILE = 128


def next_multiple(value: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` that is >= ``value``: 33708, 8 -> 33712."""
    value = check_int("value", value, allow_array=False)
    multiple = check_int("multiple", multiple, allow_array=False)
    return -(-value // multiple) * multiple


def legacy_required_multiple(dt: str | Dtype) -> int | None:
    """Multiple that cuBLAS < 11.0 / cuDNN < 7.6.3 need to use Tensor Cores at all."""
    return _LEGACY_REQUIRED.get("fp16" if dtype(dt).name == "bf16" else dtype(dt).name)


@dataclass(frozen=True)
class Finding(ResultMixin):
    """One piece of advice about one parameter.

    ``severity``: 'error' (Tensor Cores cannot be used), 'warning' (slower than it could
    be), 'info' (advice that helps little here). ``fix`` says what to change, concretely.
    ``predicted_time_s_before`` / ``_after`` are filled in where the model can tell.
    """

    severity: str
    parameter: str
    message: str
    fix: str
    value: int | None = None
    suggested_value: int | None = None
    predicted_time_s_before: float | None = None
    predicted_time_s_after: float | None = None

    def __str__(self) -> str:
        return f"[{self.severity}] {self.parameter}: {self.message} Fix: {self.fix}"


def _quantization_waste(size: int, tile: int = SIZE_TILE) -> float:
    return 1.0 - size / (math.ceil(size / tile) * tile)


def alignment_findings(
    dims: dict[str, int],
    dt: str | Dtype,
    gpu: Gpu | None = None,
    *,
    library: str = "current",
    memory_bound: bool = False,
) -> list[Finding]:
    """Findings for GEMM-like dimensions, e.g. ``{'m': 4096, 'n': 520, 'k': 33708}``.

    With ``memory_bound=True`` the efficiency advice is downgraded to 'info': "for these
    tweaks to improve efficiency, the operation must already be math-bound" (guide, 2.3).
    """
    d = dtype(dt)
    library = check_choice("library", library, LIBRARIES)
    for name, value in dims.items():
        check_int(name, value, allow_array=False)
    uses_tensor = True
    if gpu is not None:
        uses_tensor = gpu.supports(d) and gpu.unit_for(d) == "tensor"
    findings: list[Finding] = []
    if not uses_tensor:
        if gpu is not None and gpu.supports(d):
            findings.append(
                Finding(
                    "info",
                    "dtype",
                    f"{gpu.name} runs {d.name} on CUDA cores, not Tensor Cores, so the "
                    "Tensor Core alignment rules do not apply.",
                    "use a Tensor Core type (tf32, fp16, bf16) for large GEMMs",
                )
            )
        return findings

    mult = d.tensor_core_multiple
    legacy = legacy_required_multiple(d)
    a100 = (
        A100_MULTIPLES.get(d.name)
        if gpu is not None and gpu.architecture == "ampere_ga100"
        else None
    )
    soft = "info" if memory_bound else "warning"
    for name, value in dims.items():
        if library == "legacy":
            if legacy is None:
                findings.append(
                    Finding(
                        "error",
                        name,
                        f"cuBLAS < 11.0 / cuDNN < 7.6.3 have no Tensor Core path for {d.name}.",
                        "upgrade to cuBLAS >= 11.0 / cuDNN >= 7.6.3",
                        value,
                    )
                )
            elif value % legacy:
                fixed = next_multiple(value, legacy)
                findings.append(
                    Finding(
                        "error",
                        name,
                        f"{name} = {value} is not a multiple of {legacy}: cuBLAS < 11.0 / "
                        f"cuDNN < 7.6.3 will not use Tensor Cores for {d.name}.",
                        f"pad {name} from {value} to {fixed}",
                        value,
                        fixed,
                    )
                )
            continue
        if value % mult and d.name.startswith("fp8"):
            # For FP8 the 16-byte rule is a requirement, not advice: cuBLASLt's FP8 matmul,
            # torch._scaled_mm (it checks that the sizes are multiples of 16) and Transformer
            # Engine's FP8 layers refuse other shapes, so there is no slower path to fall to.
            fixed = next_multiple(value, mult)
            findings.append(
                Finding(
                    "error",
                    name,
                    f"{name} = {value} is not a multiple of {mult} ({d.name}: 16 bytes); an "
                    "FP8 GEMM of this shape is not supported (cuBLASLt's FP8 matmul, "
                    "torch._scaled_mm and Transformer Engine require multiples of 16).",
                    f"pad {name} from {value} to {fixed}",
                    value,
                    fixed,
                )
            )
        elif value % mult:
            fixed = next_multiple(value, mult)
            findings.append(
                Finding(
                    soft,
                    name,
                    f"{name} = {value} is not a multiple of {mult} ({d.name}: 16 bytes); "
                    "Tensor Cores are used but run less efficiently."
                    + (
                        " The operation is memory-bound, so this costs little."
                        if memory_bound
                        else ""
                    ),
                    f"pad {name} from {value} to {fixed}",
                    value,
                    fixed,
                )
            )
        elif (
            a100 is not None
            and value % a100
            and not (value % SIZE_MULTIPLE and next_multiple(value, SIZE_MULTIPLE) % a100 == 0)
        ):
            # (when the divisible-by-64 advice below names a size that is also an A100
            # multiple, that one finding says both)
            fixed = next_multiple(value, a100)
            findings.append(
                Finding(
                    "info",
                    name,
                    f"{name} = {value} is aligned for Tensor Cores; on A100 multiples of "
                    f"{a100} are the most efficient for {d.name}.",
                    f"if it is free to choose, use {fixed}",
                    value,
                    fixed,
                )
            )
        if value % SIZE_MULTIPLE and value % mult == 0:
            waste = _quantization_waste(value)
            fixed = next_multiple(value, SIZE_MULTIPLE)
            severity = soft if (waste > 0.10 and not memory_bound) else "info"
            a100_note = (
                f" On A100 multiples of {a100} are also the most efficient for {d.name}."
                if a100 is not None and value % a100 and fixed % a100 == 0
                else ""
            )
            findings.append(
                Finding(
                    severity,
                    name,
                    f"{name} = {value} is not divisible by {SIZE_MULTIPLE}; with "
                    f"{SIZE_TILE}-wide tiles {waste:.1%} of the work along it is padding. "
                    f"Small sizes suffer most (512 vs 520 matters more than 5120 vs 5128)."
                    + a100_note,
                    f"choose a size divisible by {SIZE_MULTIPLE}, ideally {SIZE_IDEAL} "
                    f"(e.g. {fixed})",
                    value,
                    fixed,
                )
            )
    return findings
