"""Time GEMMs and layers for real, on the present GPU or on the CPU.

The discipline (NVIDIA slides "NN Performance optimization", "Am I use Tensor Cores?" and
the profiler schedule they show: wait, warm up, then measure several active steps):

- **warm-up** runs first, untimed: they pay for cuBLAS/cuDNN heuristics, lazy module
  loading, allocator growth and clock ramp-up;
- **each repeat is timed on its own** with CUDA events recorded on the stream around the op
  (so CPU launch jitter between repeats does not count), or with ``time.perf_counter`` on
  the CPU; the figure reported is the **median** of the repeats;
- **inputs are random normal values**, never all zeros (hardware and libraries can
  shortcut zeros, and some GPUs draw less power on them, which flatters the clock);
- **the last-level cache is flushed** between repeats by overwriting a buffer twice its
  size, so a GEMM whose operands fit in L2 is not timed from the cache;
- **TF32** is switched on for a 'tf32' measurement (and off for 'fp32') with
  ``torch.set_float32_matmul_precision`` and ``torch.backends.cudnn.allow_tf32``, and the
  previous settings are restored afterwards.

Achieved FLOP/s divides the FLOPs ``torch.utils.flop_counter.FlopCounterMode`` counts for
the op (for a GEMM, 2*M*N*K*batch) by the median time; achieved bytes/s divides the bytes
of every tensor the op reads and writes, each counted once (the least traffic the op can
cause), by the same time.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .._optional import require
from ..core._validate import check_bool, check_choice, check_int, check_number, describe
from ..core.dtypes import dtype as _dtype
from ..core.errors import DlperfError, InvalidParameter
from ..core.gemm import GemmResult, gemm, gemm_bytes, gemm_flops
from ..core.layers import layer, resolve_options
from ..core.results import ResultMixin, format_quantity
from .device import DeviceInfo, detect_device

__all__ = [
    "CPU_BUDGET_S",
    "DEFAULT_REPEATS",
    "DEFAULT_WARMUP",
    "LAYER_KINDS",
    "PHASES",
    "TIMED_DTYPES",
    "CallableTiming",
    "GemmTiming",
    "LayerTiming",
    "time_callable",
    "time_gemm",
    "time_layer",
]

# dtypes the timer can run through torch (fp8/int8 GEMMs need special kernels and scales).
TIMED_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16")
# layer kinds of core.layers the timer can run (options and defaults come from there)
LAYER_KINDS = ("linear", "conv2d", "batchnorm", "relu", "attention")
PHASES = ("forward", "backward")

# Defaults per device kind: a GPU op takes micro- to milliseconds, a CPU op far longer.
DEFAULT_REPEATS = {"cuda": 20, "cpu": 5}
DEFAULT_WARMUP = {"cuda": 5, "cpu": 1}

# Cache-flush buffer when the cache size cannot be read: larger than any L2 or CPU LLC a
# learner is likely to have, small enough to allocate anywhere.
FALLBACK_FLUSH_BYTES = 256 * 2**20
MAX_CPU_FLUSH_BYTES = 512 * 2**20

# -- the CPU work budget ---------------------------------------------------------------
# Before allocating anything, a CPU timing estimates its work (warmup + repeats runs) from the
# model's FLOPs and bytes at deliberately low CPU rates, and refuses work beyond the budget
# with the estimate and how to raise it. Measured on a 2-core shared x86 server (PyTorch
# 2.13, 512^3 matmul): fp32 7.5, bf16 16.7, fp16 1.06 GFLOP/s; a 4096^3 fp16 GEMM took about
# 14 minutes over 6 runs. The rates below sit at or under those, so the estimate errs long.
CPU_FLOPS_PER_S = {"fp64": 2e9, "fp32": 5e9, "tf32": 5e9, "bf16": 2e9, "fp16": 1e9}
CPU_BYTES_PER_S = 2e9
CPU_BUDGET_S = 60.0
MAX_REPEATS = 10_000
MAX_WARMUP = 1_000


# -- results ------------------------------------------------------------------------------
def _stats_rows(r: Any) -> list[tuple[str, str]]:
    rows = [
        ("device", f"{r.device} ({r.device_kind})"),
        ("measured time (median)", format_quantity(r.measured_time_s, "s")),
        (
            "spread (min .. max)",
            f"{format_quantity(min(r.times_s), 's')} .. {format_quantity(max(r.times_s), 's')}",
        ),
        ("repeats / warm-up", f"{r.repeats} / {r.warmup}"),
        ("cache flushed between repeats", "yes" if r.flush_l2 else "no"),
    ]
    if r.measured_flops_per_s is not None:
        rows.append(("achieved FLOP/s", format_quantity(r.measured_flops_per_s, "FLOP/s")))
    if r.measured_bytes_per_s is not None:
        rows.append(
            ("achieved bytes/s (minimum traffic)", format_quantity(r.measured_bytes_per_s, "B/s"))
        )
    return rows


@dataclass(frozen=True)
class CallableTiming(ResultMixin):
    """Timing of any zero-argument callable (the ``%%dlperf_time`` cell magic uses it)."""

    label: str
    device: str
    device_kind: str
    measured_time_s: float
    times_s: tuple[float, ...]
    repeats: int
    warmup: int
    flush_l2: bool
    flops: float | None = None
    bytes: float | None = None
    measured_flops_per_s: float | None = None
    measured_bytes_per_s: float | None = None
    predicted_time_s: float | None = None
    note: str = ""

    def _title(self) -> str:
        return f"Timing of {self.label}"

    def _rows(self) -> list[tuple[str, str]]:
        rows = _stats_rows(self)
        if self.note:
            rows.append(("note", self.note))
        return rows


@dataclass(frozen=True)
class GemmTiming(ResultMixin):
    """A measured GEMM beside the model's prediction for the same GEMM on the same GPU.

    ``device`` is 'cpu' or the GPU's name; ``predicted_time_s`` is None on the CPU (the
    model describes GPUs) and when the model has no entry or rate for this GPU and dtype.
    ``model_error`` is measured / predicted - 1 (positive: slower than predicted).
    """

    m: int
    n: int
    k: int
    batch: int
    dtype: str
    device: str
    device_kind: str
    measured_time_s: float
    times_s: tuple[float, ...]
    repeats: int
    warmup: int
    flush_l2: bool
    flops: float
    bytes: float
    measured_flops_per_s: float
    measured_bytes_per_s: float
    predicted_time_s: float | None
    predicted_flops_per_s: float | None
    model_error: float | None
    model_gpu: str | None
    note: str = ""
    model: GemmResult | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.pop("model")
        out["limiter"] = self.model.limiter if self.model is not None else None
        return out

    def _title(self) -> str:
        b = f"{self.batch} x " if self.batch != 1 else ""
        return f"Measured GEMM {b}{self.m} x {self.n} x {self.k} ({self.dtype}) on {self.device}"

    def _rows(self) -> list[tuple[str, str]]:
        rows = _stats_rows(self)
        if self.predicted_time_s is not None:
            rows += [
                (f"predicted time ({self.model_gpu})", format_quantity(self.predicted_time_s, "s")),
                ("predicted FLOP/s", format_quantity(self.predicted_flops_per_s, "FLOP/s")),
                ("measured / predicted - 1", f"{self.model_error:+.1%}"),
            ]
        else:
            rows.append(("predicted time", "- (no GPU model for this device)"))
        if self.note:
            rows.append(("note", self.note))
        return rows


@dataclass(frozen=True)
class LayerTiming(ResultMixin):
    """A measured layer pass (forward, or backward = activation and weight gradients).

    ``options`` holds the layer's parameters (the names of ``dlperf layer``), ``shapes``
    the shapes of the tensors it was run on, ``flops`` what FlopCounterMode counted.
    """

    kind: str
    phase: str
    dtype: str
    options: dict[str, Any]
    shapes: dict[str, tuple[int, ...]]
    device: str
    device_kind: str
    measured_time_s: float
    times_s: tuple[float, ...]
    repeats: int
    warmup: int
    flush_l2: bool
    flops: float
    bytes: float
    measured_flops_per_s: float | None
    measured_bytes_per_s: float
    predicted_time_s: float | None
    model_error: float | None
    model_gpu: str | None
    note: str = ""

    def _title(self) -> str:
        opts = ", ".join(f"{k}={_show(v)}" for k, v in self.options.items())
        return f"Measured {self.kind} {self.phase} ({opts}; {self.dtype}) on {self.device}"

    def _rows(self) -> list[tuple[str, str]]:
        rows = [("FLOPs (counted)", format_quantity(self.flops, "FLOP")), *_stats_rows(self)]
        if self.predicted_time_s is not None:
            rows += [
                (f"predicted time ({self.model_gpu})", format_quantity(self.predicted_time_s, "s")),
                ("measured / predicted - 1", f"{self.model_error:+.1%}"),
            ]
        if self.note:
            rows.append(("note", self.note))
        return rows


# -- the measurement engine ------------------------------------------------------------
def _torch() -> Any:
    return require("torch", "live timing")


def _cpu_cache_bytes() -> int | None:
    """Largest CPU cache the kernel reports (Linux sysfs), or None."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    best = 0
    try:
        entries = os.listdir(base)
    except OSError:
        return None
    for entry in entries:
        try:
            with open(os.path.join(base, entry, "size"), encoding="ascii") as fh:
                text = fh.read().strip().upper()
        except OSError:
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or None


def _flush_bytes(info: DeviceInfo) -> int:
    if info.kind == "cuda":
        return 2 * info.l2_bytes if info.l2_bytes else FALLBACK_FLUSH_BYTES
    cache = _cpu_cache_bytes()
    return min(2 * cache, MAX_CPU_FLUSH_BYTES) if cache else FALLBACK_FLUSH_BYTES // 4


def _available_bytes(torch: Any, info: DeviceInfo) -> int | None:
    if info.kind == "cuda":
        try:
            free, _total = torch.cuda.mem_get_info(info.index)
            # memory PyTorch's caching allocator holds but no tensor uses is free to us too
            cached = torch.cuda.memory_reserved(info.index) - torch.cuda.memory_allocated(
                info.index
            )
            return int(free + max(cached, 0))
        except (RuntimeError, AttributeError):
            return None
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def _check_memory(torch: Any, info: DeviceInfo, needed: float, what: str) -> None:
    free = _available_bytes(torch, info)
    if free is not None and needed > free:
        where = info.name if info.kind == "cuda" else "the CPU's memory"
        raise DlperfError(
            f"{what} needs about {_gib(needed)} of memory but {where} has {_gib(free)} free; "
            f"choose smaller sizes"
        )


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).lower()
    return (
        "out of memory" in text or "can't allocate memory" in text or "failed to allocate" in text
    )


def _release(torch: Any, info: DeviceInfo) -> None:
    import gc

    gc.collect()
    if info.kind == "cuda":
        torch.cuda.empty_cache()


@contextmanager
def _matmul_precision(torch: Any, dtype_name: str, kind: str) -> Iterator[None]:
    """TF32 on for 'tf32', off for 'fp32' (CUDA only); previous settings restored after."""
    if kind != "cuda" or dtype_name not in ("tf32", "fp32"):
        yield
        return
    old_precision = torch.get_float32_matmul_precision()
    old_cudnn = torch.backends.cudnn.allow_tf32
    try:
        tf32 = dtype_name == "tf32"
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        torch.backends.cudnn.allow_tf32 = tf32
        yield
    finally:
        torch.set_float32_matmul_precision(old_precision)
        torch.backends.cudnn.allow_tf32 = old_cudnn


def _timed_runs(
    torch: Any,
    info: DeviceInfo,
    step: Callable[[], Any],
    *,
    repeats: int,
    warmup: int,
    flush: Any,
    max_seconds: float | None = None,
) -> list[float]:
    """Run ``step`` warmup times untimed, then ``repeats`` times timed; seconds per repeat.

    On the CPU the loop stops early (after at least one timed run) once ``max_seconds`` have
    passed, so a wrong estimate cannot run on for minutes; Ctrl-C stops it between runs.
    """
    begun = time.perf_counter()

    def out_of_time() -> bool:
        return max_seconds is not None and time.perf_counter() - begun > max_seconds

    for _ in range(warmup):
        step()
        if out_of_time():
            break
    if info.kind == "cuda":
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        for start, end in zip(starts, ends, strict=True):
            if flush is not None:
                flush.zero_()  # evict the operands from L2 (outside the timed window)
            start.record()
            step()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) / 1e3 for start, end in zip(starts, ends, strict=True)]
    times: list[float] = []
    for _ in range(repeats):
        if times and out_of_time():
            break
        if flush is not None:
            flush.zero_()
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def _resolve_counts(info: DeviceInfo, repeats: int | None, warmup: int | None) -> tuple[int, int]:
    reps = (
        DEFAULT_REPEATS[info.kind]
        if repeats is None
        else _count_at_most(
            "repeats", check_int("repeats", repeats, allow_array=False), MAX_REPEATS
        )
    )
    warm = (
        DEFAULT_WARMUP[info.kind]
        if warmup is None
        else _count_at_most(
            "warmup", check_int("warmup", warmup, minimum=0, allow_array=False), MAX_WARMUP
        )
    )
    return reps, warm


def _count_at_most(name: str, value: int, maximum: int) -> int:
    if value > maximum:
        raise InvalidParameter(
            f"'{name}' must be an integer no larger than {maximum} (got {value})"
        )
    return value


def _check_budget(max_seconds: Any) -> float | None:
    if max_seconds is None:
        return None
    return check_number("max_seconds", max_seconds, minimum=0, strict=True)


def _check_work(
    info: DeviceInfo,
    what: str,
    dname: str,
    flops: float,
    nbytes: float,
    runs: int,
    max_seconds: float | None,
) -> None:
    """Refuse CPU work whose estimate exceeds ``max_seconds`` (None: no limit; GPUs: none)."""
    if info.kind != "cpu" or max_seconds is None:
        return
    rate = CPU_FLOPS_PER_S.get(dname, min(CPU_FLOPS_PER_S.values()))
    one = max(flops / rate, nbytes / CPU_BYTES_PER_S)
    estimate = one * runs
    if estimate > max_seconds:
        raise DlperfError(
            f"{what} on the CPU would take about {format_quantity(estimate, 's')} "
            f"({runs} runs of {flops:.3g} FLOP at an assumed {rate / 1e9:g} GFLOP/s), over the "
            f"{max_seconds:g} s budget: choose smaller sizes or fewer repeats"
            f"{', use dtype=' + repr('fp32') if dname in ('fp16', 'bf16', 'fp64') else ''}"
            f", or raise max_seconds (--max-seconds)"
        )


def _label(info: DeviceInfo) -> str:
    return "cpu" if info.kind == "cpu" else info.name


def _measure(
    torch: Any,
    info: DeviceInfo,
    build: Callable[[], tuple[Callable[[], Any], dict[str, Any]]],
    *,
    repeats: int,
    warmup: int,
    flush_l2: bool,
    needed_bytes: float,
    what: str,
    max_seconds: float | None = None,
) -> tuple[list[float], dict[str, Any]]:
    """Allocate through ``build`` (-> step, extras), time it, free everything.

    Out-of-memory becomes one :class:`DlperfError` after the tensors are released (the
    message is raised outside the ``except`` block so the original traceback, which holds
    the tensors, is not kept alive by exception chaining).
    """
    flush_n = _flush_bytes(info) if flush_l2 else 0
    _check_memory(torch, info, needed_bytes + flush_n, what)
    failure = ""
    state: dict[str, Any] = {}
    try:
        device = "cuda" if info.kind == "cuda" else "cpu"
        state["flush"] = torch.empty(flush_n, dtype=torch.uint8, device=device) if flush_n else None
        state["step"], extras = build()
        times = _timed_runs(
            torch,
            info,
            state["step"],
            repeats=repeats,
            warmup=warmup,
            flush=state["flush"],
            max_seconds=max_seconds if info.kind == "cpu" else None,
        )
        return times, extras
    except (RuntimeError, MemoryError) as exc:
        if not _is_oom(exc):
            raise
        if needed_bytes > 0:
            failure = (
                f"{what} ran out of memory on {_label(info)} (it needs about "
                f"{_gib(needed_bytes)}"
                f"{' plus a ' + _gib(flush_n) + ' cache-flush buffer' if flush_n else ''}); "
                f"choose smaller sizes"
            )
        else:  # timed code of the caller's own: the kit knows nothing of its needs
            failure = (
                f"the timed code ({what}) ran out of memory on {_label(info)} "
                f"({type(exc).__name__}); free memory or time smaller inputs"
            )
    finally:
        state.clear()
        if failure:
            _release(torch, info)
    raise DlperfError(failure)


def _random(
    torch: Any, shape: Sequence[int], tdtype: Any, device: str, gen: Any, grad: bool = False
) -> Any:
    # randn draws from N(0, 1): never all zeros, and of a scale every float type holds. Made
    # in its own dtype: an FP32 draw cast down would need 3x an FP16 operand's memory.
    t = torch.randn(*shape, generator=gen, device=device, dtype=tdtype)
    if grad:
        t.requires_grad_(True)
    return t


def _torch_dtype(torch: Any, name: str) -> Any:
    return {
        "fp64": torch.float64,
        "fp32": torch.float32,
        "tf32": torch.float32,
        "fp16": torch.float16,
        "bf16": torch.bfloat16,
    }[name]


def _default_dtype(info: DeviceInfo) -> str:
    """fp16 on a GPU (Tensor Cores); fp32 on the CPU, whose fp16 matmul is ~7x slower."""
    return "fp32" if info.kind == "cpu" else "fp16"


def _timed_dtype(value: Any) -> str:
    d = _dtype(value)
    if d.name not in TIMED_DTYPES:
        raise InvalidParameter(
            f"'dtype' must be a type the timer runs through PyTorch ({', '.join(TIMED_DTYPES)}) "
            f"(got {describe(d.name)})"
        )
    return d.name


# Repeats whose slowest run is this many times the fastest point at a busy machine.
NOISY_SPREAD = 3.0


def _with_spread_note(note: str, times: Any) -> str:
    """Add a warning to ``note`` when the repeats disagree wildly (another program ran)."""
    fastest, slowest = min(times), max(times)
    if fastest > 0 and slowest / fastest > NOISY_SPREAD:
        warn = (
            f"runs spread {slowest / fastest:.1f}x (slowest/fastest): the machine may be busy; "
            "the median resists outliers, but re-run for a steadier figure"
        )
        return f"{note}; {warn}" if note else warn
    return note


def _cpu_note(dtype_name: str) -> str:
    note = (
        "CPU measurement: the GPU model does not apply; shapes and trends carry over, times do not"
    )
    if dtype_name == "tf32":
        note += "; TF32 is a Tensor Core mode, so the CPU ran plain fp32"
    return note


def _unsupported(exc: BaseException) -> bool:
    text = str(exc)
    return "not implemented for" in text or "Unsupported" in text or "not supported" in text


# -- public API -----------------------------------------------------------------------------
def time_callable(
    fn: Callable[[], Any],
    *,
    device: str = "auto",
    repeats: int | None = None,
    warmup: int | None = None,
    flush_l2: bool = True,
    flops: float | None = None,
    bytes: float | None = None,
    label: str = "callable",
    max_seconds: float | None = CPU_BUDGET_S,
) -> CallableTiming:
    """Time ``fn()`` with the kit's discipline: ``warmup`` untimed calls, then ``repeats``
    timed calls (CUDA events on a GPU, ``perf_counter`` on the CPU), median reported.

    ``fn`` is called exactly ``warmup + repeats`` times. ``flops``/``bytes``, when given,
    turn the median into achieved FLOP/s and bytes/s. On the CPU, timed calls stop once
    ``max_seconds`` have passed (after at least one).
    """
    if not callable(fn):
        raise InvalidParameter(f"'fn' must be a callable taking no arguments (got {describe(fn)})")
    budget = _check_budget(max_seconds)
    flush_l2 = check_bool("flush_l2", flush_l2)
    if flops is not None:
        flops = check_number("flops", flops, minimum=0, strict=True)
    if bytes is not None:
        bytes = check_number("bytes", bytes, minimum=0, strict=True)
    torch = _torch()
    info = detect_device(device)
    reps, warm = _resolve_counts(info, repeats, warmup)
    times, _ = _measure(
        torch,
        info,
        lambda: (fn, {}),
        repeats=reps,
        warmup=warm,
        flush_l2=flush_l2,
        needed_bytes=0,
        what=label,
        max_seconds=budget,
    )
    med = statistics.median(times)
    return CallableTiming(
        label=label,
        device=_label(info),
        device_kind=info.kind,
        measured_time_s=med,
        times_s=tuple(times),
        repeats=len(times),
        warmup=warm,
        flush_l2=bool(flush_l2),
        flops=flops,
        bytes=bytes,
        measured_flops_per_s=flops / med if flops and med > 0 else None,
        measured_bytes_per_s=bytes / med if bytes and med > 0 else None,
        note=_with_spread_note("CPU measurement" if info.kind == "cpu" else "", times),
    )


def time_gemm(
    m: int,
    n: int,
    k: int,
    *,
    dtype: str | None = None,
    device: str = "auto",
    batch: int = 1,
    repeats: int | None = None,
    warmup: int | None = None,
    flush_l2: bool = True,
    max_seconds: float | None = CPU_BUDGET_S,
) -> GemmTiming:
    """Measure C = A @ B (A: M x K, B: K x N; ``batch`` > 1: a batched matmul) and put the
    model's prediction for the present GPU beside it.

    ``dtype`` defaults to fp16 on a GPU and fp32 on the CPU (where half precision has no
    fast kernels). On the CPU the work is estimated first and refused beyond ``max_seconds``
    (:data:`CPU_BUDGET_S`; None: no limit).

    >>> r = time_gemm(64, 64, 64, dtype="fp32", device="cpu", repeats=3, warmup=1)
    >>> r.device, r.repeats, len(r.times_s), r.predicted_time_s
    ('cpu', 3, 3, None)
    """
    m = check_int("m", m, allow_array=False)
    n = check_int("n", n, allow_array=False)
    k = check_int("k", k, allow_array=False)
    batch = check_int("batch", batch, allow_array=False)
    budget = _check_budget(max_seconds)
    flush_l2 = check_bool("flush_l2", flush_l2)
    if dtype is not None:
        _timed_dtype(dtype)
    torch = _torch()
    info = detect_device(device)
    dname = _timed_dtype(_default_dtype(info) if dtype is None else dtype)
    reps, warm = _resolve_counts(info, repeats, warmup)
    d = _dtype(dname)
    flops = float(gemm_flops(m, n, k, batch))
    nbytes = float(gemm_bytes(m, n, k, d.bytes_per_element, batch))
    tdtype = _torch_dtype(torch, dname)
    dev = "cuda" if info.kind == "cuda" else "cpu"
    what = f"GEMM {m} x {n} x {k}{f' x batch {batch}' if batch > 1 else ''} ({dname})"
    _check_memory(torch, info, nbytes + (_flush_bytes(info) if flush_l2 else 0), what)
    _check_work(info, what, dname, flops, nbytes, reps + warm, budget)

    def build() -> tuple[Callable[[], Any], dict[str, Any]]:
        gen = torch.Generator(device=dev).manual_seed(0)
        lead = (batch,) if batch > 1 else ()
        a = _random(torch, (*lead, m, k), tdtype, dev, gen)
        b = _random(torch, (*lead, k, n), tdtype, dev, gen)
        c = torch.empty(*lead, m, n, dtype=tdtype, device=dev)

        def step() -> Any:
            return torch.matmul(a, b, out=c)

        return step, {}

    with _matmul_precision(torch, dname, info.kind):
        try:
            times, _ = _measure(
                torch,
                info,
                build,
                repeats=reps,
                warmup=warm,
                flush_l2=flush_l2,
                needed_bytes=nbytes,
                what=what,
                max_seconds=budget,
            )
        except RuntimeError as exc:
            if _unsupported(exc):
                raise DlperfError(
                    f"PyTorch cannot run a {dname} matmul on {_label(info)} ({exc}); "
                    f"try dtype='fp32'"
                ) from None
            raise
    med = statistics.median(times)
    model, note = _gemm_model(info, m, n, k, batch, dname)
    predicted = model.predicted_time_s if model is not None else None
    return GemmTiming(
        m=m,
        n=n,
        k=k,
        batch=batch,
        dtype=dname,
        device=_label(info),
        device_kind=info.kind,
        measured_time_s=med,
        times_s=tuple(times),
        repeats=len(times),
        warmup=warm,
        flush_l2=bool(flush_l2),
        flops=flops,
        bytes=nbytes,
        measured_flops_per_s=flops / med,
        measured_bytes_per_s=nbytes / med,
        predicted_time_s=predicted,
        predicted_flops_per_s=model.predicted_flops_per_s if model is not None else None,
        model_error=(med / predicted - 1.0) if predicted else None,
        model_gpu=model.gpu if model is not None else None,
        note=_with_spread_note(note, times),
        model=model,
    )


def _gemm_model(
    info: DeviceInfo, m: int, n: int, k: int, batch: int, dname: str
) -> tuple[GemmResult | None, str]:
    if info.kind == "cpu":
        return None, _cpu_note(dname)
    if info.gpu is None:
        return (
            None,
            f"the model has no entry for {info.name} (compute capability {info.compute_capability})",
        )
    try:
        return gemm(m, n, k, dtype=dname, gpu=info.gpu, batch=batch), ""
    except DlperfError as exc:
        return None, f"no prediction: {exc}"


# -- layers -----------------------------------------------------------------------------
def _shape(kind: str, opts: dict[str, Any]) -> tuple[int, ...]:
    """The tensor shape of a memory-limited layer from its resolved options."""
    shape, elements = opts.get("shape"), opts.get("elements")
    if shape is None:
        return (check_int("elements", elements, allow_array=False),)
    if isinstance(shape, str):
        try:
            shape = tuple(int(p) for p in shape.replace("x", ",").split(",") if p.strip())
        except ValueError:
            raise InvalidParameter(
                f"'shape' must be comma-separated positive integers such as 32,64,56,56 "
                f"(got {describe(opts['shape'])})"
            ) from None
    shape = tuple(check_int("shape", s, allow_array=False) for s in shape)
    if not shape or (kind == "batchnorm" and len(shape) not in (2, 3, 4)):
        raise InvalidParameter(
            f"'shape' must have 2 to 4 dimensions N,C[,H,W] for {kind} (got {describe(opts['shape'])})"
        )
    return shape


Build = Callable[[], tuple[Callable[[], Any], dict[str, Any]]]


def _layer_setup(
    torch: Any, kind: str, opts: dict[str, Any], tdtype: Any, dev: str, phase: str
) -> tuple[Build, dict[str, tuple[int, ...]]]:
    """(build, tensor shapes) for a layer whose options went through ``resolve_options``."""
    F = torch.nn.functional
    grad = phase == "backward"
    shapes: dict[str, tuple[int, ...]]

    def rand(gen: Any, shape: Sequence[int], fmt: Any = None) -> Any:
        t = _random(torch, shape, tdtype, dev, gen)
        if fmt is not None:
            t = t.to(memory_format=fmt)
        return t.requires_grad_(True) if grad else t

    if kind == "linear":
        batch, seq, inputs, outputs = (
            opts["batch"],
            opts["seq_len"],
            opts["inputs"],
            opts["outputs"],
        )
        lead = (batch, seq) if seq > 1 else (batch,)
        shapes = {"input": (*lead, inputs), "weight": (outputs, inputs), "output": (*lead, outputs)}

        def forward(gen: Any) -> tuple[Callable[[], Any], list[Any]]:
            x, w, b = (
                rand(gen, (*lead, inputs)),
                rand(gen, (outputs, inputs)),
                rand(gen, (outputs,)),
            )
            return (lambda: F.linear(x, w, b)), [x, w, b]

    elif kind == "conv2d":
        batch, cin, cout = opts["batch"], opts["in_channels"], opts["out_channels"]
        h, w_, groups = opts["height"], opts["width"], opts["groups"]
        (r, s_), stride, padding, dilation = (
            opts["kernel_size"],
            opts["stride"],
            opts["padding"],
            opts["dilation"],
        )
        if cin % groups or cout % groups:
            raise InvalidParameter(
                f"'groups' must divide in_channels ({cin}) and out_channels ({cout}) (got {groups})"
            )
        p = (h + 2 * padding[0] - dilation[0] * (r - 1) - 1) // stride[0] + 1
        q = (w_ + 2 * padding[1] - dilation[1] * (s_ - 1) - 1) // stride[1] + 1
        if p < 1 or q < 1:
            raise InvalidParameter(
                f"'kernel_size' must fit in the padded input ({h + 2 * padding[0]} x "
                f"{w_ + 2 * padding[1]}) (got {r} x {s_})"
            )
        shapes = {
            "input": (batch, cin, h, w_),
            "weight": (cout, cin // groups, r, s_),
            "output": (batch, cout, p, q),
        }
        fmt = torch.channels_last if opts["layout"] == "nhwc" else torch.contiguous_format

        def forward(gen: Any) -> tuple[Callable[[], Any], list[Any]]:
            x = rand(gen, (batch, cin, h, w_), fmt)
            wt = rand(gen, (cout, cin // groups, r, s_), fmt)
            return (lambda: F.conv2d(x, wt, None, stride, padding, dilation, groups)), [x, wt]

    elif kind == "batchnorm":
        shape = _shape(kind, opts)
        channels = shape[1]
        shapes = {"input": shape, "output": shape}

        def forward(gen: Any) -> tuple[Callable[[], Any], list[Any]]:
            x, weight, bias = rand(gen, shape), rand(gen, (channels,)), rand(gen, (channels,))
            mean = torch.zeros(channels, dtype=tdtype, device=dev)
            var = torch.ones(channels, dtype=tdtype, device=dev)
            return (lambda: F.batch_norm(x, mean, var, weight, bias, training=True)), [
                x,
                weight,
                bias,
            ]

    elif kind == "relu":
        shape = _shape(kind, opts)
        shapes = {"input": shape, "output": shape}

        def forward(gen: Any) -> tuple[Callable[[], Any], list[Any]]:
            x = rand(gen, shape)
            return (lambda: F.relu(x)), [x]

    elif kind == "attention":
        batch, seq, hidden, heads = opts["batch"], opts["seq_len"], opts["hidden"], opts["heads"]
        if hidden % heads:
            raise InvalidParameter(f"'heads' must divide hidden ({hidden}) (got {heads})")
        hd = hidden // heads
        separate = opts["qkv"] == "separate"
        shapes = {
            "input": (batch, seq, hidden),
            "qkv_weight": (3 * hidden, hidden),
            "out_weight": (hidden, hidden),
            "output": (batch, seq, hidden),
        }

        def forward(gen: Any) -> tuple[Callable[[], Any], list[Any]]:
            x = rand(gen, (batch, seq, hidden))
            wqkv = rand(gen, (3 * hidden, hidden))
            wo = rand(gen, (hidden, hidden))

            def run() -> Any:
                # Q/K/V projections (one GEMM, or three), attention per head (softmax of
                # scores scaled by 1/sqrt(head size)), output projection.
                if separate:
                    q, k, v = (F.linear(x, w) for w in wqkv.chunk(3))
                    q, k, v = (t.view(batch, seq, heads, hd).transpose(1, 2) for t in (q, k, v))
                else:
                    qkv = F.linear(x, wqkv).view(batch, seq, 3, heads, hd)
                    q, k, v = qkv.permute(2, 0, 3, 1, 4)
                ctx = F.scaled_dot_product_attention(q, k, v)
                return F.linear(ctx.transpose(1, 2).reshape(batch, seq, hidden), wo)

            return run, [x, wqkv, wo]

    else:  # pragma: no cover - the caller checked the kind
        raise AssertionError(kind)

    def build() -> tuple[Callable[[], Any], dict[str, Any]]:
        gen = torch.Generator(device=dev).manual_seed(0)
        fwd, leaves = forward(gen)
        if phase == "forward":
            return fwd, {"leaves": leaves}
        out = fwd()
        g_out = _random(torch, tuple(out.shape), tdtype, dev, gen)

        def backward() -> Any:
            # activation and weight gradients; autograd.grad returns fresh tensors, so
            # nothing accumulates into .grad between repeats
            return torch.autograd.grad(out, leaves, g_out, retain_graph=True)

        return backward, {"leaves": leaves, "grad_output": g_out}

    return build, shapes


def _tensor_bytes(torch: Any, value: Any) -> float:
    if isinstance(value, torch.Tensor):
        return float(value.numel() * value.element_size())
    if isinstance(value, (list, tuple)):
        return sum(_tensor_bytes(torch, v) for v in value if v is not None)
    return 0.0


def _count(torch: Any, build: Build, phase: str) -> tuple[float, float]:
    """FLOPs FlopCounterMode counts for one pass, and the bytes it reads and writes once.

    Attention is counted with PyTorch's math backend, which decomposes into matmuls the
    counter knows on every device (fused CPU kernels are not counted otherwise).
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with sdpa_kernel(SDPBackend.MATH):
        step, extras = build()
        with FlopCounterMode(display=False) as counter:
            out = step()
    flops = float(counter.get_total_flops())
    reads = _tensor_bytes(torch, extras["leaves"])
    if phase == "backward":
        reads += _tensor_bytes(torch, extras["grad_output"])
    return flops, reads + _tensor_bytes(torch, out)


def time_layer(
    kind: str,
    *,
    dtype: str | None = None,
    device: str = "auto",
    phase: str = "forward",
    repeats: int | None = None,
    warmup: int | None = None,
    flush_l2: bool = True,
    max_seconds: float | None = CPU_BUDGET_S,
    **options: Any,
) -> LayerTiming:
    """Measure one pass of a layer on the present device, beside the layer model.

    ``kind`` is one of :data:`LAYER_KINDS`; ``options`` are those of ``dlperf layer``
    (``core.layers.LAYER_KINDS``, same names and defaults): ``linear`` (batch, inputs,
    outputs, seq_len); ``conv2d`` (batch, in_channels, out_channels, height, width,
    kernel_size, stride, padding, dilation, groups, layout 'nhwc' = ``channels_last`` or
    'nchw'); ``batchnorm`` (shape N,C,H,W; training-mode statistics); ``relu`` (shape or
    elements); ``attention`` (batch, seq_len, hidden, heads, qkv). ``phase='backward'``
    times the activation and weight gradients of a forward pass run beforehand. The
    prediction (on a GPU) is the model's forward or backward time for the same layer.
    ``dtype`` and ``max_seconds`` work as in :func:`time_gemm`; memory and work are checked
    before anything is allocated.

    >>> r = time_layer("relu", elements=4096, dtype="fp32", device="cpu", repeats=3, warmup=1)
    >>> r.kind, r.phase, r.device, r.bytes
    ('relu', 'forward', 'cpu', 32768.0)
    """
    kind = check_choice("kind", kind, LAYER_KINDS)
    phase = check_choice("phase", phase, PHASES)
    if "training" in options:
        raise InvalidParameter(
            f"'training' is not an option of time_layer; use phase='forward' or "
            f"phase='backward' (got training={options['training']!r})"
        )
    _spec, opts = resolve_options(kind, options)
    opts.pop("training", None)
    budget = _check_budget(max_seconds)
    flush_l2 = check_bool("flush_l2", flush_l2)
    if dtype is not None:
        _timed_dtype(dtype)
    torch = _torch()
    info = detect_device(device)
    dname = _timed_dtype(_default_dtype(info) if dtype is None else dtype)
    reps, warm = _resolve_counts(info, repeats, warmup)
    tdtype = _torch_dtype(torch, dname)
    dev = "cuda" if info.kind == "cuda" else "cpu"
    build, shapes = _layer_setup(torch, kind, opts, tdtype, dev, phase)
    elem = _dtype(dname).bytes_per_element
    # a backward pass also holds the saved activations and the gradients
    needed = sum(math.prod(s) for s in shapes.values()) * elem * (3 if phase == "backward" else 1)
    if kind == "attention":
        # The score matrix (batch x heads x seq x seq) and its softmax: counting FLOPs runs
        # PyTorch's math attention, which materialises both (4x in the backward pass).
        scores = opts["batch"] * opts["heads"] * opts["seq_len"] ** 2 * max(elem, 4)
        needed += scores * (4 if phase == "backward" else 2)
    shown = {k: v for k, v in opts.items() if v is not None}
    what = f"{kind} {phase} ({', '.join(f'{k}={_show(v)}' for k, v in shown.items())}; {dname})"
    # checked before _count allocates anything
    _check_memory(torch, info, needed + (_flush_bytes(info) if flush_l2 else 0), what)
    model_flops, model_bytes = _layer_work(kind, phase, opts, dname)
    _check_work(info, what, dname, model_flops, model_bytes, reps + warm + 1, budget)
    msg = ""
    with _matmul_precision(torch, dname, info.kind):
        try:
            flops, nbytes = _count(torch, build, phase)
            times, _ = _measure(
                torch,
                info,
                build,
                repeats=reps,
                warmup=warm,
                flush_l2=flush_l2,
                needed_bytes=needed,
                what=what,
                max_seconds=budget,
            )
        except (RuntimeError, MemoryError) as exc:
            if _is_oom(exc):
                msg = f"{what} ran out of memory on {_label(info)}; choose smaller sizes"
            elif _unsupported(exc):
                msg = f"PyTorch cannot run {what} on {_label(info)} ({exc}); try dtype='fp32'"
            else:
                raise
    if msg:  # raised here, outside the except block, so the tensors can be freed
        _release(torch, info)
        raise DlperfError(msg)
    med = statistics.median(times)
    predicted, model_gpu, note = _layer_prediction(info, kind, phase, opts, dname)
    return LayerTiming(
        kind=kind,
        phase=phase,
        dtype=dname,
        options=shown,
        shapes=shapes,
        device=_label(info),
        device_kind=info.kind,
        measured_time_s=med,
        times_s=tuple(times),
        repeats=len(times),
        warmup=warm,
        flush_l2=bool(flush_l2),
        flops=flops,
        bytes=nbytes,
        measured_flops_per_s=flops / med if flops else None,
        measured_bytes_per_s=nbytes / med,
        predicted_time_s=predicted,
        model_error=(med / predicted - 1.0) if predicted else None,
        model_gpu=model_gpu,
        note=_with_spread_note(note, times),
    )


def _layer_work(kind: str, phase: str, opts: dict[str, Any], dname: str) -> tuple[float, float]:
    """FLOPs and bytes of one pass from the layer model (A100 figures; only counts matter)."""
    model_dtype = "fp16" if dname in ("fp16", "bf16") else "tf32"
    result = layer(kind, dtype=model_dtype, gpu="A100", findings=False, training=True, **opts)
    passes = [p for p in result.passes if (p.pass_ == "forward") == (phase == "forward")]
    scale = _dtype(dname).bytes_per_element / _dtype(model_dtype).bytes_per_element
    return sum(p.flops for p in passes), sum(p.bytes for p in passes) * scale


def _show(value: Any) -> str:
    return "x".join(map(str, value)) if isinstance(value, tuple) else str(value)


def _layer_prediction(
    info: DeviceInfo, kind: str, phase: str, opts: dict[str, Any], dname: str
) -> tuple[float | None, str | None, str]:
    """The layer model's forward or backward time on the present GPU (None on the CPU)."""
    if info.kind == "cpu":
        return None, None, _cpu_note(dname)
    if info.gpu is None:
        return None, None, f"the model has no entry for {info.name}"
    try:
        result = layer(kind, dtype=dname, gpu=info.gpu, findings=False, training=True, **opts)
    except DlperfError as exc:
        return None, None, f"no prediction: {exc}"
    t = result.forward_time_s if phase == "forward" else result.backward_time_s
    return (t or None), info.gpu.name, ""
