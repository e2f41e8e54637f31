"""Calibrate the time model on the device at hand: ``dlperf calibrate`` / ``dw.calibrate()``.

A short suite runs on this machine's GPU, or on its CPU when there is none:

- a **stream copy** of a buffer far larger than the last-level cache, whose bytes read and
  written over its median time give the DRAM bandwidth the device sustains;
- **GEMMs across the regimes**: small ones whose time is the fixed cost per kernel, thin
  (memory-bound) ones, large math-bound ones and misaligned ones (sizes off the 16-byte
  multiple), each timed as :func:`~dlperf_widgets.live.timing.time_gemm` times (warm-up,
  median of repeats, cache flushed between them).

Three physical constants are then fitted, as ``benchmarks/fit_calibration.py`` fits them to
the shipped traces: the math fraction, the memory fraction and the fixed cost per kernel with
the least mean |log(predicted / measured)| over the **fit** shapes, the memory fraction
searched around the stream copy's share of the datasheet bandwidth (a quarter to twice it). The **held-out** shapes (one
of each regime, and every misaligned one) are not used by the fit: their error is the
calibration's honest figure.

Saved (:mod:`dlperf_widgets.core.local_calibration`), the constants replace the shipped ones
for this device, and every prediction's calibration says "local calibration of <device>,
<date>".

**The CPU.** No datasheet describes a learner's CPU, so the kit builds an entry for it, named
after the processor: its threads stand for SMs, its nominal FP32 peak is threads x clock x
FLOP per cycle from the vector units the processor reports (AVX-512: 64, AVX2 with FMA: 32,
AVX: 16, else 8; two FMA pipes per core, as Intel's optimization manual gives for its server
cores), FP64 at half that, and its "datasheet" bandwidth is the stream copy measured here, so
its memory fraction says how a GEMM's streaming compares with a plain copy. The GPU model's tiles and waves are then applied to
it as they are: the fitted constants absorb what differs, and the held-out error says how
well that works.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .._optional import require
from ..core._validate import check_bool, check_choice, check_number
from ..core.calibration import achievable, overlap_time
from ..core.dtypes import dtype as _dtype
from ..core.errors import DlperfError, InvalidParameter
from ..core.gemm import gemm_sweep
from ..core.gpus import Gpu, Peak
from ..core.local_calibration import (
    FORMAT,
    calibration_path,
    local_status,
    remove_local,
    save_local,
)
from ..core.results import ResultMixin, format_quantity
from .device import DEVICES, DeviceInfo, detect_device
from .timing import TIMED_DTYPES, time_callable, time_gemm

__all__ = [
    "SUITES",
    "Calibration",
    "CalibrationStatus",
    "calibrate",
    "calibration_status",
    "cpu_entry",
    "reset_calibration",
    "suite_shapes",
]

SUITES = ("full", "tiny")
DEFAULT_SECONDS = 60.0

# (regime, M, N, K, role). Sizes for a data-centre GPU; the CPU's are far smaller (a 2-core
# CPU sustains about 1/5000 of an H100's FP16 rate). Held-out shapes: one per regime, and the
# misaligned ones (the fit never sees a misaligned shape: their penalty is the shipped one).
_GPU_SUITE = (
    ("latency", 64, 64, 64, "fit"),
    ("latency", 256, 256, 256, "fit"),
    ("latency", 128, 128, 512, "held-out"),
    ("memory", 8192, 16, 8192, "fit"),
    ("memory", 16384, 64, 4096, "fit"),
    ("memory", 12288, 32, 8192, "held-out"),
    ("math", 4096, 4096, 4096, "fit"),
    ("math", 8192, 8192, 4096, "fit"),
    ("math", 2048, 2048, 2048, "fit"),
    ("math", 6144, 4096, 2048, "held-out"),
    ("misaligned", 4096, 4096, 4095, "held-out"),
    ("misaligned", 4095, 4096, 4096, "held-out"),
)
_CPU_SUITE = (
    ("latency", 8, 8, 8, "fit"),
    ("latency", 32, 32, 32, "fit"),
    ("latency", 16, 16, 64, "held-out"),
    ("memory", 4096, 4, 4096, "fit"),
    ("memory", 8192, 8, 2048, "fit"),
    ("memory", 4096, 8, 4096, "held-out"),
    ("math", 512, 512, 512, "fit"),
    ("math", 768, 768, 768, "fit"),
    ("math", 384, 384, 1024, "fit"),
    ("math", 640, 512, 512, "held-out"),
    ("misaligned", 512, 512, 509, "held-out"),
    ("misaligned", 509, 512, 512, "held-out"),
)
# The tiny suite (tests, a first look): the same regimes at a quarter of the sizes' work.
_CPU_TINY = (
    ("latency", 8, 8, 8, "fit"),
    ("latency", 32, 32, 32, "fit"),
    ("latency", 16, 16, 64, "held-out"),
    ("memory", 4096, 4, 2048, "fit"),
    ("memory", 2048, 8, 2048, "held-out"),
    ("math", 256, 256, 256, "fit"),
    ("math", 384, 384, 384, "fit"),
    ("math", 320, 256, 256, "held-out"),
    ("misaligned", 256, 256, 253, "held-out"),
)
_GPU_TINY = tuple(s for s in _GPU_SUITE if s[1] * s[2] * s[3] <= 2**36)

# Stream-copy buffer: far beyond any GPU's L2, so the copy runs from DRAM. On a CPU, as large
# as the memory-bound GEMMs' operands (64 MiB), so both stream from the same level of memory.
_STREAM_BYTES = {"cuda": 512 * 2**20, "cpu": 64 * 2**20}
# The fit's grids: a fraction of the nominal peak, and a fixed cost per kernel (0 or 0.1 us
# to 10 ms, log-spaced: a CPU's fixed cost per call is microseconds, a GPU's about 5 us).
_MATH_GRID = np.geomspace(0.01, 1.5, 241)
_OVERHEAD_GRID_S = np.concatenate([[0.0], np.geomspace(1e-7, 1e-2, 201)])
_MEMORY_SCALE_GRID = np.geomspace(0.25, 2.0, 25)  # times the stream copy's share
_FRACTION_MAX = 2.0  # the most a saved fraction may be (core.local_calibration)

# FP32 FLOP per clock per core by vector extension (two FMA pipes: 2 pipes x lanes x 2).
_CPU_FLOP_PER_CYCLE = (("avx512f", 64), ("avx2", 32), ("avx", 16))
_CPU_FLOP_FALLBACK = 8  # SSE2: 4 lanes, a multiply and an add pipe


def suite_shapes(kind: str, suite: str = "full") -> tuple[tuple[str, int, int, int, str], ...]:
    """The GEMMs of a suite: (regime, M, N, K, 'fit' or 'held-out') for 'cuda' or 'cpu'."""
    kind = check_choice("device", kind, ("cuda", "cpu"))
    suite = check_choice("suite", suite, SUITES)
    if kind == "cpu":
        return _CPU_SUITE if suite == "full" else _CPU_TINY
    return _GPU_SUITE if suite == "full" else _GPU_TINY


# -- the CPU as a device entry -------------------------------------------------------------
def _cpuinfo() -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                if sep and key.strip() not in out:
                    out[key.strip()] = value.strip()
    except OSError:
        pass
    return out


def _cpu_clock_mhz(info: dict[str, str]) -> tuple[float, str]:
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", encoding="utf-8") as fh:
            return int(fh.read().strip()) / 1e3, "the kernel's maximum frequency (cpufreq)"
    except (OSError, ValueError):
        pass
    try:
        return float(info["cpu MHz"]), "the clock /proc/cpuinfo reports"
    except (KeyError, ValueError):
        pass
    raise DlperfError(
        "the CPU's clock cannot be read on this system (no cpufreq and no /proc/cpuinfo), "
        "so the kit cannot build a model entry for it"
    )


def cpu_entry(threads: int, bandwidth_bytes_per_s: float) -> Gpu:
    """The model's entry for this machine's CPU (see the module docstring): ``threads`` stand
    for SMs, the peak is nominal, the bandwidth the one measured."""
    info = _cpuinfo()
    model = info.get("model name") or platform.processor() or platform.machine() or "unknown"
    model = re.sub(r"\((R|TM|tm|r)\)|\bCPU\b|@.*$", "", model)
    model = " ".join(model.split()) or "unknown processor"
    clock, clock_source = _cpu_clock_mhz(info)
    flags = set(info.get("flags", "").split())
    per_cycle = next((n for flag, n in _CPU_FLOP_PER_CYCLE if flag in flags), _CPU_FLOP_FALLBACK)
    if "avx2" in flags and "fma" not in flags:
        per_cycle = 16  # AVX2 without FMA: a multiply and an add pipe of 8 lanes
    peaks = tuple(
        Peak(
            unit="cuda",
            dtype=name,
            fma_per_clk_per_sm=flop // 2,
            clock_mhz=clock,
            flops_per_s=threads * clock * 1e6 * flop,
        )
        for name, flop in (("fp32", per_cycle), ("fp64", per_cycle // 2))
    )
    ext = next((flag for flag, _ in _CPU_FLOP_PER_CYCLE if flag in flags), "sse2")
    return Gpu(
        # the name stays generic, so that saved outputs do not carry this machine's processor
        # model; the notes name it
        name=f"CPU ({threads} threads, {platform.machine() or 'unknown'})",
        architecture="cpu",
        sms=threads,
        boost_clock_mhz=clock,
        l2_bytes=0,
        memory_bytes=0,
        memory_bandwidth_bytes_per_s=bandwidth_bytes_per_s,
        aliases=("cpu",),
        source="dlperf calibrate on this machine",
        notes=(
            f"{model}; nominal peak: {threads} threads x {clock:.0f} MHz ({clock_source}) x {per_cycle} "
            f"FP32 FLOP per clock ({ext}, two FMA pipes assumed); bandwidth: the stream copy "
            "measured by dlperf calibrate (a CPU has no datasheet figure here)"
        ),
        peaks=peaks,
    )


# -- results -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Calibration(ResultMixin):
    """A calibration run: the fitted constants, every timed shape, and the held-out error.

    ``shapes`` holds one dict per GEMM: regime, m, n, k, role ('fit' or 'held-out'),
    measured_time_s, predicted_time_s (with the fitted constants), before_time_s (with the
    constants in force before the run) and error (|predicted - measured| / measured).
    ``held_out_median_error`` and ``held_out_worst_error`` are over the held-out shapes only;
    ``before_held_out_median_error`` is the same figure for the constants the model had
    before. ``saved_to`` is the file written (None when not saved).
    """

    device: str
    device_kind: str
    model_gpu: str
    dtype: str
    suite: str
    date: str
    torch_version: str
    timer: str
    context: str
    math_fraction: float
    memory_fraction: float
    kernel_overhead_s: float
    stream_bandwidth_bytes_per_s: float
    fit_median_error: float
    held_out_median_error: float
    held_out_worst_error: float
    before_held_out_median_error: float
    shapes: tuple[dict[str, Any], ...]
    elapsed_s: float
    saved_to: str | None
    note: str = ""
    gpu: Gpu | None = field(default=None, repr=False, compare=False)

    _units: ClassVar[dict[str, str]] = {
        "kernel_overhead_s": "s",
        "stream_bandwidth_bytes_per_s": "B/s",
        "elapsed_s": "s",
    }

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.pop("gpu", None)
        return out

    def _title(self) -> str:
        return f"Calibration of {self.device} ({self.dtype}, {self.suite} suite)"

    def _rows(self) -> list[tuple[str, str]]:
        rows = [
            ("model entry", self.model_gpu),
            ("date", self.date),
            ("timer", self.timer),
            ("stream copy", format_quantity(self.stream_bandwidth_bytes_per_s, "B/s")),
            ("math, share of peak", f"{self.math_fraction:.1%}"),
            ("DRAM, share of bandwidth", f"{self.memory_fraction:.1%}"),
            ("fixed cost per kernel", format_quantity(self.kernel_overhead_s, "s")),
            ("fit error (median)", f"{self.fit_median_error:.1%}"),
            (
                "held-out error (median / worst)",
                f"{self.held_out_median_error:.1%} / {self.held_out_worst_error:.1%} "
                f"({sum(s['role'] == 'held-out' for s in self.shapes)} shapes)",
            ),
            ("held-out median before", f"{self.before_held_out_median_error:.1%}"),
            ("took", format_quantity(self.elapsed_s, "s")),
            ("saved to", self.saved_to or "not saved"),
        ]
        if self.note:
            rows.append(("note", self.note))
        return rows

    def table(self) -> str:
        """One line per timed GEMM: regime, sizes, role, measured, predicted, error."""
        lines = [
            f"{'regime':<11} {'sizes':<18} {'role':<9} {'measured':>11} {'model':>11} {'error':>7}"
        ]
        for s in self.shapes:
            lines.append(
                f"{s['regime']:<11} {s['m']}x{s['n']}x{s['k']:<{18 - len(str(s['m'])) - len(str(s['n'])) - 2}} "
                f"{s['role']:<9} {format_quantity(s['measured_time_s'], 's'):>11} "
                f"{format_quantity(s['predicted_time_s'], 's'):>11} {s['error']:>7.1%}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return super().__str__() + "\n" + self.table()


@dataclass(frozen=True)
class CalibrationStatus(ResultMixin):
    """Which local calibration the model uses (``dlperf calibrate --show`` / ``--reset``)."""

    path: str
    status: str
    removed: bool = False

    def _title(self) -> str:
        return "Local calibration"

    def _rows(self) -> list[tuple[str, str]]:
        return [("file", self.path), ("status", self.status)]


def calibration_status() -> CalibrationStatus:
    """Where the local calibration lives and, in one sentence, what the model does with it."""
    return CalibrationStatus(path=str(calibration_path()), status=local_status())


def reset_calibration() -> CalibrationStatus:
    """Delete the local calibration: the model goes back to the shipped constants."""
    removed = remove_local()
    return CalibrationStatus(
        path=str(calibration_path()),
        status=(
            "the local calibration was removed; the model uses the shipped constants"
            if removed
            else "no local calibration was saved; nothing to remove"
        ),
        removed=removed,
    )


# -- the run -------------------------------------------------------------------------------
def _stream_copy(torch: Any, info: DeviceInfo, budget_s: float) -> float:
    """Bytes read and written per second by a device-to-device copy (median of repeats)."""
    nbytes = _STREAM_BYTES[info.kind]
    dev = "cuda" if info.kind == "cuda" else "cpu"
    bufs = {"src": torch.empty(nbytes // 4, dtype=torch.float32, device=dev).normal_()}
    bufs["dst"] = torch.empty_like(bufs["src"])
    try:
        timing = time_callable(
            lambda: bufs["dst"].copy_(bufs["src"]),
            device=info.kind,
            repeats=10 if info.kind == "cuda" else 5,
            warmup=2,
            flush_l2=False,  # the buffers are many times any cache
            bytes=2.0 * nbytes,
            label="stream copy",
            max_seconds=budget_s,
        )
    finally:
        bufs.clear()  # free the buffers now, not when the result goes
    return float(timing.measured_bytes_per_s or 0.0)


def _datasheet_terms(g: Gpu, dname: str, shapes: list[tuple[str, int, int, int, str]]) -> Any:
    """Each shape's math and memory time at datasheet rates (tiles, waves and alignment
    included), undoing the constants in force, as benchmarks/fit_calibration.py does."""
    m, n, k = (np.array([s[i] for s in shapes], dtype=np.int64) for i in (1, 2, 3))
    sw = gemm_sweep(m, n, k, dtype=dname, gpu=g)
    cal = achievable(g, dname)
    math_t = np.asarray(sw.math_time_s) * cal.math_fraction
    mem_t = np.asarray(sw.memory_time_s) * cal.memory_fraction
    # a split GEMM runs a second (reduction) kernel, which pays the fixed cost again
    kernels = np.asarray(sw.kernels, dtype=np.float64)
    return math_t, mem_t, kernels, np.asarray(sw.predicted_time_s, dtype=np.float64)


def _fit(
    math_t: Any, mem_t: Any, kernels: Any, measured: Any, stream_fraction: float
) -> tuple[float, float, float]:
    """The (math fraction, memory fraction, fixed cost) of the grids with the least mean
    |log(predicted / measured)|; the memory fraction is searched from a quarter to twice the
    stream copy's share of the datasheet bandwidth (a GEMM streams its operands less evenly
    than a copy, or from a nearer cache)."""
    best: tuple[float, float, float, float] | None = None
    for f_mem in stream_fraction * _MEMORY_SCALE_GRID:
        if not 0 < f_mem <= _FRACTION_MAX:
            continue
        work = overlap_time(
            math_t[None, :] / _MATH_GRID[:, None],
            np.broadcast_to(mem_t / f_mem, (len(_MATH_GRID), len(mem_t))),
        )
        pred = work[:, None, :] + _OVERHEAD_GRID_S[None, :, None] * kernels
        score = np.mean(np.abs(np.log(pred / measured)), axis=2)
        i, j = np.unravel_index(int(np.argmin(score)), score.shape)
        if best is None or score[i, j] < best[0]:
            best = (
                float(score[i, j]),
                float(_MATH_GRID[i]),
                float(f_mem),
                float(_OVERHEAD_GRID_S[j]),
            )
    if best is None:
        raise DlperfError(
            f"the stream copy's share of the datasheet bandwidth ({stream_fraction:.3g}) is "
            "implausible, so the memory fraction cannot be fitted"
        )
    return best[1], best[2], best[3]


def _timer(info: DeviceInfo) -> tuple[str, str]:
    if info.kind == "cuda":
        return (
            "CUDA events around each call, L2 flushed between repeats, median",
            "isolated kernel timed with CUDA events (launch gap included)",
        )
    return (
        "time.perf_counter around each call, caches warm (not flushed), median",
        "eager call timed from the host",
    )


def calibrate(
    *,
    device: str = "auto",
    dtype: str | None = None,
    max_seconds: float = DEFAULT_SECONDS,
    save: bool = True,
    suite: str = "full",
) -> Calibration:
    """Time the suite on ``device`` ('auto', 'cpu', 'cuda'), fit this device's constants,
    report the held-out error and (``save``) keep them as the local calibration.

    ``dtype`` defaults to fp16 on a GPU and fp32 on the CPU. ``max_seconds`` bounds the
    whole run: shapes are timed with fewer repeats (at least 2) to fit, and the run stops
    with an error if even that does not fit. ``suite='tiny'`` runs smaller shapes.
    """
    device = check_choice("device", device, DEVICES)
    budget = check_number("max_seconds", max_seconds, minimum=0, strict=True)
    if budget > 3600:
        raise InvalidParameter(
            f"'max_seconds' must be a number no larger than 3600 (got {budget:g})"
        )
    save = check_bool("save", save)
    suite = check_choice("suite", suite, SUITES)
    if dtype is not None:
        dtype = _dtype(dtype).name
        if dtype not in TIMED_DTYPES:
            raise InvalidParameter(
                f"'dtype' must be a type the timer runs through PyTorch "
                f"({', '.join(TIMED_DTYPES)}) (got {dtype!r})"
            )
    torch = require("torch", "dlperf calibrate")
    begun = time.perf_counter()
    info = detect_device(device)
    dname = dtype or ("fp32" if info.kind == "cpu" else "fp16")
    if info.kind == "cpu" and dname not in ("fp32", "fp64"):
        raise InvalidParameter(f"'dtype' must be fp32 or fp64 to calibrate the CPU (got {dname!r})")
    if info.kind == "cuda" and info.gpu is None:
        raise DlperfError(
            f"the model has no entry for {info.name} (compute capability "
            f"{info.compute_capability}), so there is nothing to calibrate"
        )

    stream_bw = _stream_copy(torch, info, budget * 0.15)
    if not stream_bw > 0:
        raise DlperfError("the stream copy could not be timed (its median time was zero)")
    if info.kind == "cpu":
        g = cpu_entry(int(info.threads or torch.get_num_threads()), stream_bw)
    else:
        assert info.gpu is not None
        g = info.gpu
        if not g.supports(dname):
            raise InvalidParameter(f"'dtype' must be a type {g.name} runs (got {dname!r})")
    shapes = list(suite_shapes(info.kind, suite))

    # Time every shape: a probe run, then as many repeats (2 to 20) as its share of the
    # budget allows.
    measured: list[float] = []
    # A GPU's L2 is flushed between repeats (the kit's discipline). A CPU's caches are not:
    # its last-level cache can be hundreds of MiB, and overwriting a buffer that large before
    # every repeat costs more than the suite and times cold page tables rather than GEMMs.
    flush = info.kind == "cuda"
    per_shape = budget * 0.8 / len(shapes)
    for _, m, n, k, _ in shapes:
        left = budget - (time.perf_counter() - begun)
        if left <= 0:
            raise DlperfError(
                f"the calibration ran out of its {budget:g} s budget after {len(measured)} of "
                f"{len(shapes)} GEMMs: raise max_seconds (--max-seconds) or use the tiny suite"
            )
        probe = time_gemm(
            m,
            n,
            k,
            dtype=dname,
            device=info.kind,
            repeats=1,
            warmup=1,
            flush_l2=flush,
            max_seconds=None,
        )
        reps = int(min(20, max(2, per_shape // max(probe.measured_time_s, 1e-7) // 2)))
        t = time_gemm(
            m,
            n,
            k,
            dtype=dname,
            device=info.kind,
            repeats=reps,
            warmup=1,
            flush_l2=flush,
            max_seconds=None,
        )
        measured.append(t.measured_time_s)
    meas = np.array(measured)

    stream_fraction = stream_bw / g.memory_bandwidth_bytes_per_s
    math_t, mem_t, kernels, before = _datasheet_terms(g, dname, shapes)
    fit = np.array([s[4] == "fit" for s in shapes])
    math_fraction, memory_fraction, overhead = _fit(
        math_t[fit], mem_t[fit], kernels[fit], meas[fit], stream_fraction
    )
    pred = overhead * kernels + overlap_time(math_t / math_fraction, mem_t / memory_fraction)
    err = np.abs(pred - meas) / meas
    before_err = np.abs(before - meas) / meas
    timer, context = _timer(info)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = tuple(
        {
            "regime": s[0],
            "m": s[1],
            "n": s[2],
            "k": s[3],
            "role": s[4],
            "measured_time_s": float(meas[i]),
            "predicted_time_s": float(pred[i]),
            "before_time_s": float(before[i]),
            "error": float(err[i]),
        }
        for i, s in enumerate(shapes)
    )
    held = ~fit
    note = ""
    if info.kind == "cpu":
        note = (
            "a CPU priced with the GPU model: its entry is nominal (see the entry's notes) "
            "and only the held-out error says how well the model fits it"
        )
    saved_to = None
    if save:
        data = {
            "format": FORMAT,
            "device": {
                "kind": info.kind,
                "name": info.name if info.kind == "cuda" else g.name,
                "description": info.description,
                "model_gpu": g.name,
            },
            "entry": _entry_json(g) if (info.kind == "cpu" or info.match == "custom") else None,
            "date": date,
            "torch": str(torch.__version__),
            "timer": timer,
            "context": context,
            "suite": suite,
            "constants": {
                dname: {
                    "math_fraction": math_fraction,
                    "memory_fraction": memory_fraction,
                    "kernel_overhead_s": overhead,
                }
            },
            "held_out": {
                "median_error": float(np.median(err[held])),
                "worst_error": float(np.max(err[held])),
                "shapes": int(held.sum()),
            },
            "shapes": list(rows),
            "host": platform.node() or os.environ.get("HOSTNAME", ""),
        }
        try:
            saved_to = str(save_local(data))
        except OSError as exc:
            raise DlperfError(
                f"the calibration could not be saved to {calibration_path()} "
                f"({type(exc).__name__}: {exc.strerror or exc}); set DLPERF_CONFIG_DIR to a "
                "writable folder or use --no-save"
            ) from None
    return Calibration(
        device=info.name if info.kind == "cuda" else g.name,
        device_kind=info.kind,
        model_gpu=g.name,
        dtype=dname,
        suite=suite,
        date=date,
        torch_version=str(torch.__version__),
        timer=timer,
        context=context,
        math_fraction=math_fraction,
        memory_fraction=memory_fraction,
        kernel_overhead_s=overhead,
        stream_bandwidth_bytes_per_s=stream_bw,
        fit_median_error=float(statistics.median(err[fit].tolist())),
        held_out_median_error=float(statistics.median(err[held].tolist())),
        held_out_worst_error=float(np.max(err[held])),
        before_held_out_median_error=float(statistics.median(before_err[held].tolist())),
        shapes=rows,
        elapsed_s=time.perf_counter() - begun,
        saved_to=saved_to,
        note=note,
        gpu=g,
    )


def _entry_json(g: Gpu) -> dict[str, Any]:
    """A device entry as the local calibration file stores it (core.gpus rebuilds it)."""
    return {
        "name": g.name,
        "aliases": list(g.aliases),
        "architecture": g.architecture,
        "sms": g.sms,
        "boost_clock_mhz": g.boost_clock_mhz,
        "l2_bytes": g.l2_bytes,
        "memory_bytes": g.memory_bytes,
        "memory_bandwidth_bytes_per_s": g.memory_bandwidth_bytes_per_s,
        "notes": g.notes,
        "peaks": [
            {
                "unit": p.unit,
                "dtype": p.dtype,
                "fma_per_clk_per_sm": p.fma_per_clk_per_sm,
                "clock_mhz": p.clock_mhz,
                "flops_per_s": p.flops_per_s,
            }
            for p in g.peaks
            if math.isfinite(p.flops_per_s)
        ],
    }
