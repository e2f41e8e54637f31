"""What real GPUs achieve: the calibrated constants of the time model.

The guide's arithmetic gives an ideal time: FLOPs at the datasheet peak, bytes at the
datasheet bandwidth. Measured GEMMs fall short of it in a few physical ways, and the model
adds exactly those, each one a constant per architecture (and execution unit or dtype where
the measurements demand it) read from ``data/achievable.csv``:

- ``math_fraction``: the share of the datasheet peak a large aligned GEMM sustains;
- ``memory_fraction``: the share of the datasheet DRAM bandwidth a streaming kernel sustains;
- ``kernel_overhead_s``: a fixed cost per kernel added to its work (launch, the ramp-up of
  the first wave and the drain of the last), replacing a floor that acted as a minimum;
- ``misaligned_efficiency``: the math efficiency of a Tensor Core GEMM whose K is not a
  multiple of 16 bytes, and ``misaligned_mn_efficiency`` the (milder) one when only M or N
  is off it. NVIDIA measured the weight gradient, whose K is the batch, suffering most from
  an odd batch; DeepBench's V100 GEMMs with an odd N ran at full speed.

Every row of the data file says whether it was fitted to a shipped trace (named there), read
from a publication, or is a documented default for a GPU without measurements.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from .assumptions import OVERLAP_EXPONENT
from .dtypes import Dtype
from .dtypes import dtype as _dtype
from .gpus import Gpu, _read_csv
from .gpus import gpu as _gpu
from .local_calibration import local_constants
from .results import ResultMixin

__all__ = ["FIELDS", "Achievable", "achievable", "overlap_time"]

FIELDS = (
    "math_fraction",
    "memory_fraction",
    "kernel_overhead_us",
    "misaligned_efficiency",
    "misaligned_mn_efficiency",
)


@dataclass(frozen=True)
class Achievable(ResultMixin):
    """The calibrated constants for one GPU and dtype, with where each came from.

    ``basis`` is 'local calibration of <device>, <date>' when ``dlperf calibrate`` measured
    this device (:mod:`~dlperf_widgets.core.local_calibration`); otherwise 'fitted' when the
    math and memory fractions and the kernel overhead were all fitted to shipped
    measurements of this architecture, 'default' when any of them is a documented default,
    else 'published'. ``sources`` maps every constant (the misalignment
    penalties too) to the data-file row it came from.
    """

    gpu: str
    dtype: str
    unit: str
    math_fraction: float
    memory_fraction: float
    kernel_overhead_s: float
    misaligned_efficiency: float
    misaligned_mn_efficiency: float
    basis: str
    sources: dict[str, str]

    _units: ClassVar[dict[str, str]] = {"kernel_overhead_s": "s"}

    def _title(self) -> str:
        return f"What a {self.gpu} achieves in {self.dtype} ({self.unit} cores)"

    def _rows(self) -> list[tuple[str, str]]:
        return [
            ("math, share of datasheet peak", f"{self.math_fraction:.0%}"),
            ("DRAM, share of datasheet bandwidth", f"{self.memory_fraction:.0%}"),
            ("fixed cost per kernel", f"{self.kernel_overhead_s * 1e6:.1f} us"),
            ("Tensor Core efficiency, K misaligned", f"{self.misaligned_efficiency:.0%}"),
            ("Tensor Core efficiency, M or N misaligned", f"{self.misaligned_mn_efficiency:.0%}"),
            ("basis", self.basis),
        ]


@functools.lru_cache(maxsize=1)
def _table() -> dict[tuple[str, str, str], dict[str, str]]:
    table: dict[tuple[str, str, str], dict[str, str]] = {}
    for row in _read_csv("achievable.csv"):
        table[(row["target"].lower(), row["unit"], row["dtype"])] = row
    return table


@functools.lru_cache(maxsize=512)
def _lookup(name: str, architecture: str, unit: str, dtype_name: str) -> Achievable:
    table = _table()
    keys = [
        (target, u, d)
        for target in (name.lower(), architecture.lower(), "default")
        for u, d in ((unit, dtype_name), (unit, "*"), ("*", "*"))
    ]
    values: dict[str, float] = {}
    sources: dict[str, str] = {}
    bases: set[str] = set()  # of the constants that set a time: math, memory, overhead
    for field in FIELDS:
        for key in keys:
            row = table.get(key)
            if row and row[field]:
                values[field] = float(row[field])
                sources[field] = f"{'/'.join(key)}: {row['source']}"
                if not field.startswith("misaligned"):
                    bases.add(row["basis"])
                break
    basis = "default" if "default" in bases else ("fitted" if bases == {"fitted"} else "published")
    return Achievable(
        gpu=name,
        dtype=dtype_name,
        unit=unit,
        math_fraction=values["math_fraction"],
        memory_fraction=values["memory_fraction"],
        kernel_overhead_s=values["kernel_overhead_us"] * 1e-6,
        misaligned_efficiency=values["misaligned_efficiency"],
        misaligned_mn_efficiency=values["misaligned_mn_efficiency"],
        basis=basis,
        sources=sources,
    )


def achievable(gpu: str | Gpu = "A100", dtype: str | Dtype = "fp16") -> Achievable:
    """The calibrated constants the model uses for ``gpu`` and ``dtype``.

    >>> a = achievable("H100-SXM", "bf16")
    >>> a.basis, a.math_fraction
    ('fitted', 0.8)
    """
    g = _gpu(gpu)
    d = _dtype(dtype)
    unit = g.unit_for(d) if g.supports(d) else "cuda"
    shipped = _lookup(g.name, g.architecture, unit, d.name)
    local = local_constants(g.name, d.name)
    if local is None:
        return shipped
    # A local calibration (core.local_calibration, made by 'dlperf calibrate') replaces the
    # shipped constants it measured; the misalignment penalties stay the shipped ones.
    basis = local["basis"]
    if local["math_fraction"] is None:
        basis += f" (math fraction: shipped, not measured in {d.name})"
    return replace(
        shipped,
        math_fraction=local["math_fraction"] or shipped.math_fraction,
        memory_fraction=local["memory_fraction"],
        kernel_overhead_s=local["kernel_overhead_s"],
        basis=basis,
        sources={**shipped.sources, "local": basis},
    )


def overlap_time(math_time_s: Any, memory_time_s: Any) -> Any:
    """Math and memory time of one kernel combined with imperfect overlap.

    (math^p + memory^p)^(1/p) with p = :data:`~dlperf_widgets.core.assumptions.OVERLAP_EXPONENT`:
    never less than the larger of the two, and at most their sum.
    """
    p = OVERLAP_EXPONENT
    a = np.asarray(math_time_s, dtype=np.float64)
    b = np.asarray(memory_time_s, dtype=np.float64)
    hi = np.maximum(a, b)
    lo = np.minimum(a, b)
    ratio = np.divide(lo, hi, out=np.zeros_like(hi), where=hi > 0)
    out = hi * (1.0 + ratio**p) ** (1.0 / p)
    return float(out) if out.ndim == 0 else out
