"""What real GPUs achieve: the calibrated constants of the time model.

The guide's arithmetic gives an ideal time: FLOPs at the datasheet peak, bytes at the
datasheet bandwidth. Measured GEMMs fall short of it in a few physical ways, and the model
adds exactly those, each one a constant per architecture (and execution unit or dtype where
the measurements demand it) read from ``data/achievable.csv``:

- ``math_fraction``: the share of the datasheet peak a large aligned GEMM sustains;
- ``memory_fraction``: the share of the datasheet DRAM bandwidth a streaming kernel sustains;
- ``kernel_overhead_s``: the device-side fixed cost of a kernel timed alone, added to its
  work (block scheduling, the ramp-up of the first wave and the drain of the last);
- ``back_to_back_overhead_s``: the same per kernel when kernels run back to back on a stream
  or in a CUDA graph (the next launch overlaps the previous kernel's drain);
- ``launch_overhead_s``: the host's cost of one eager framework call before its kernel
  starts, added in the 'eager' timing context (:data:`~.assumptions.TIMING_CONTEXTS`);
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

from ._validate import check_choice
from .assumptions import DEFAULT_CONTEXT, OVERLAP_EXPONENT, TIMING_CONTEXTS
from .dtypes import Dtype
from .dtypes import dtype as _dtype
from .gpus import Gpu, _read_csv
from .gpus import gpu as _gpu
from .local_calibration import local_constants
from .results import ResultMixin

__all__ = [
    "FIELDS",
    "Achievable",
    "achievable",
    "boost_burst_s",
    "check_context",
    "overlap_time",
    "power_limited_math_time",
    "sustained_clock_fraction",
]

FIELDS = (
    "math_fraction",
    "memory_fraction",
    "kernel_overhead_us",
    "back_to_back_overhead_us",
    "launch_overhead_us",
    "epilogue_k",
    "sm_watts_per_ghz3",
    "power_window_ms",
    "misaligned_efficiency",
    "misaligned_mn_efficiency",
)

# the constants that set the time of a kernel in the default ('kernel') context: the basis
# of an Achievable says where these came from
_TIME_FIELDS = ("math_fraction", "memory_fraction", "kernel_overhead_us")


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
    back_to_back_overhead_s: float = 0.0
    launch_overhead_s: float = 0.0
    epilogue_k: float = 0.0
    clock_fraction: float = 1.0
    burst_s: float = 0.0

    _units: ClassVar[dict[str, str]] = {
        "kernel_overhead_s": "s",
        "back_to_back_overhead_s": "s",
        "launch_overhead_s": "s",
        "burst_s": "s",
    }

    def fixed_cost_s(self, context: str = DEFAULT_CONTEXT) -> float:
        """The fixed time one kernel adds to its work in a timing context.

        'back-to-back': the back-to-back overhead; 'kernel': the isolated kernel's device
        overhead (never less than the back-to-back one); 'eager': that plus the host's launch
        overhead. So eager >= kernel >= back-to-back for any kernel.
        """
        context = check_context(context)
        b2b = self.back_to_back_overhead_s
        alone = max(self.kernel_overhead_s, b2b)
        if context == "back-to-back":
            return b2b
        if context == "kernel":
            return alone
        return alone + self.launch_overhead_s

    def _title(self) -> str:
        return f"What a {self.gpu} achieves in {self.dtype} ({self.unit} cores)"

    def _rows(self) -> list[tuple[str, str]]:
        return [
            ("math, share of datasheet peak", f"{self.math_fraction:.0%}"),
            ("sustained clock, share of boost (power)", f"{self.clock_fraction:.0%}"),
            ("boost clock held from idle for", f"{self.burst_s * 1e3:.3g} ms"),
            ("per-tile fixed cost, in steps of K", f"{self.epilogue_k:g}"),
            ("DRAM, share of datasheet bandwidth", f"{self.memory_fraction:.0%}"),
            ("fixed cost per kernel, timed alone", f"{self.kernel_overhead_s * 1e6:.1f} us"),
            ("fixed cost per kernel, back to back", f"{self.back_to_back_overhead_s * 1e6:.1f} us"),
            ("host launch overhead, eager call", f"{self.launch_overhead_s * 1e6:.1f} us"),
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


def sustained_clock_fraction(
    watts_per_sm_ghz3: float,
    sms: int,
    tdp_w: float | None,
    base_clock_mhz: float | None,
    boost_clock_mhz: float,
) -> float:
    """The share of the boost clock a board holds under a full GEMM load, from its power.

    Dynamic power is about C x V^2 x f per SM, and within the boost range the voltage rises
    roughly in proportion to the clock, so a busy SM draws about ``w`` x f^3 watts (f in GHz;
    ``w``, watts per SM at 1 GHz, is a constant per architecture and unit, fitted in
    data/achievable.csv). The board holds the clock at which SMs x w x f^3 equals its power
    limit, never above the boost clock nor below the base clock (the clock NVIDIA
    guarantees at the rated power: datasheets). ``w`` = 0 or no power limit: the boost clock.
    """
    if not watts_per_sm_ghz3 or not tdp_w:
        return 1.0
    boost = boost_clock_mhz / 1e3
    f = (tdp_w / (sms * watts_per_sm_ghz3)) ** (1.0 / 3.0)
    floor = (base_clock_mhz or 0.0) / 1e3
    return float(min(boost, max(floor, f)) / boost)


def boost_burst_s(
    watts_per_sm_ghz3: float,
    window_s: float,
    sms: int,
    tdp_w: float | None,
    base_clock_mhz: float | None,
    boost_clock_mhz: float,
) -> float:
    """How long a kernel started on an idle board runs at the boost clock before the power
    limit pulls it down to the sustained clock (:func:`sustained_clock_fraction`).

    A board enforces its power limit on the mean power over a window of ``window_s``
    seconds, not instant by instant. Starting from idle (idle power neglected), a kernel
    drawing P_boost = SMs x w x f_boost^3 keeps that mean under the limit for
    ``window_s`` x TDP / P_boost. 0 when the board is not power-limited (or no window).
    """
    if not watts_per_sm_ghz3 or not tdp_w or not window_s:
        return 0.0
    p_boost = sms * watts_per_sm_ghz3 * (boost_clock_mhz / 1e3) ** 3
    if p_boost <= tdp_w:
        return 0.0
    return float(window_s * tdp_w / p_boost)


def power_limited_math_time(math_time_s: Any, clock_fraction: float, burst_s: float) -> Any:
    """A kernel's math time when it starts at the boost clock and drops to the sustained one.

    ``math_time_s`` is the time at the sustained clock (``clock_fraction`` of boost). The
    first ``burst_s`` seconds run at boost, doing ``burst_s / clock_fraction`` seconds' worth
    of sustained work; the rest runs at the sustained clock. Vectorised; with no burst (or no
    power limit) the time is unchanged.
    """
    if not burst_s or clock_fraction >= 1.0:
        return math_time_s
    t = np.asarray(math_time_s, dtype=np.float64)
    return np.maximum(t * clock_fraction, t - burst_s * (1.0 / clock_fraction - 1.0))


@functools.lru_cache(maxsize=512)
def _lookup(
    name: str,
    architecture: str,
    unit: str,
    dtype_name: str,
    power: tuple[int, float | None, float | None, float] = (1, None, None, 1.0),
) -> Achievable:
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
                if field in _TIME_FIELDS:
                    bases.add(row["basis"])
                break
    basis = "default" if "default" in bases else ("fitted" if bases == {"fitted"} else "published")
    watts = values.get("sm_watts_per_ghz3", 0.0)
    clock = sustained_clock_fraction(watts, *power)
    burst = boost_burst_s(watts, values.get("power_window_ms", 0.0) * 1e-3, *power)
    return Achievable(
        gpu=name,
        dtype=dtype_name,
        unit=unit,
        # the issue efficiency of the unit times the clock the board's power allows
        math_fraction=values["math_fraction"] * clock,
        memory_fraction=values["memory_fraction"],
        kernel_overhead_s=values["kernel_overhead_us"] * 1e-6,
        back_to_back_overhead_s=values["back_to_back_overhead_us"] * 1e-6,
        launch_overhead_s=values["launch_overhead_us"] * 1e-6,
        epilogue_k=values.get("epilogue_k", 0.0),
        clock_fraction=clock,
        burst_s=burst,
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
    # peaks use the Tensor Core clock where NVIDIA's figures imply one (core.gpus)
    boost = g.tensor_clock_mhz if (unit == "tensor" and g.tensor_clock_mhz) else g.boost_clock_mhz
    power = (g.sms, g.tdp_w, g.base_clock_mhz, boost)
    shipped = _lookup(g.name, g.architecture, unit, d.name, power)
    local = local_constants(g.name, d.name)
    if local is None:
        return shipped
    # A local calibration (core.local_calibration, made by 'dlperf calibrate' with the kit's
    # own timer, i.e. in the 'kernel' context) replaces the shipped constants it measured; the
    # misalignment penalties and the launch cost stay the shipped ones.
    basis = local["basis"]
    if local["math_fraction"] is None:
        basis += f" (math fraction: shipped, not measured in {d.name})"
    return replace(
        shipped,
        math_fraction=local["math_fraction"] or shipped.math_fraction,
        memory_fraction=local["memory_fraction"],
        kernel_overhead_s=local["kernel_overhead_s"],
        # back to back a kernel never costs more than it does alone (fixed_cost_s)
        back_to_back_overhead_s=min(shipped.back_to_back_overhead_s, local["kernel_overhead_s"]),
        basis=basis,
        sources={**shipped.sources, "local": basis},
    )


def check_context(context: object) -> str:
    """Validate a timing context name (one of :data:`~.assumptions.TIMING_CONTEXTS`)."""
    return check_choice("context", context, TIMING_CONTEXTS)


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
