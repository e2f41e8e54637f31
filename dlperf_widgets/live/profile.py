"""Explain a profile: read a PyTorch profiler trace of a GPU run and rank the guide's fixes.

A PyTorch profiler (Kineto) trace is Chrome-trace JSON: ``traceEvents`` holds CPU operators
(``cat`` 'cpu_op', with ``Input Dims`` and ``Input type`` when the run set
``record_shapes=True``), CUDA runtime calls ('cuda_runtime': ``cudaLaunchKernel`` and the
like) and what the GPU ran ('kernel', 'gpu_memcpy', 'gpu_memset'). A kernel and the runtime
call that launched it share ``args.correlation``; the launching operator is the innermost
CPU operator open on the launching thread at the call (PyTorch profiler documentation,
"Trace format"; HolisticTraceAnalysis builds its call stacks the same way).

What :func:`explain` computes, and what kind of number each is:

- the timeline (measurement): GPU busy time (the union of kernel intervals on all streams),
  idle gaps, gaps where the GPU waited for the host to launch the next kernel, and how much
  of the communication kernels' time overlaps computation;
- the model's price of each kernel it can price: GEMMs (``aten::mm``, ``addmm``, ``bmm``)
  and element-wise operators from their recorded shapes and dtypes, copies and memsets
  from the bytes the trace records; a kernel without recorded shapes stays unpriced, and the
  report says which share of GPU time was priced;
- the guide's fixes ranked by the measured time they would recover (the model's estimate):
  pad a GEMM dimension to the Tensor Cores' multiple, batch the GEMVs, fuse a chain of
  element-wise kernels, capture a launch-bound stretch in a CUDA graph, pin host memory
  for pageable copies.

Reading is bounded: at most ``max_bytes`` of (decompressed) JSON, at most
``max_events`` events; a bad, truncated, huge, foreign or CPU-only trace gives one sentence.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..core._validate import check_int, describe
from ..core.alignment import alignment_findings
from ..core.calibration import achievable
from ..core.errors import InvalidParameter
from ..core.gemm import gemm_sweep
from ..core.gpus import Gpu, gpus
from ..core.gpus import gpu as _gpu
from ..core.results import ResultMixin, format_quantity
from ..core.scaleout import interconnect
from .device import match_gpu

__all__ = [
    "KernelRow",
    "Profile",
    "ProfileFinding",
    "ProfileReport",
    "explain",
    "read_profile",
    "shipped_profiles",
]

MAX_BYTES = 64 << 20
MAX_EVENTS = 2_000_000
# A gap shorter than this between two kernels, with the next kernel's launch call issued
# after the previous kernel ended, is the GPU waiting on kernel launches; longer gaps are
# other host work (data loading, synchronisation) that a CUDA graph does not remove.
LAUNCH_GAP_S = 100e-6

_DTYPES = {"float": "fp32", "c10::Half": "fp16", "c10::BFloat16": "bf16", "double": "fp64"}
_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp64": 8}
_GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
_ELEMENTWISE = ("elementwise", "vectorized", "unrolled")


def _key(value: Any) -> Any:
    """A thread, stream or correlation id as a hashable scalar (None when it is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, str, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (OverflowError, TypeError, ValueError):
        return False


def _fail(message: str) -> InvalidParameter:
    return InvalidParameter(message)


def _read_text(source: Any, max_bytes: int) -> tuple[str, str]:
    """(JSON text, name) from a path, bytes or str; bounded before anything is parsed."""
    if isinstance(source, (bytes, bytearray)):
        raw, name = bytes(source), "trace"
    elif isinstance(source, (str, Path)):
        p = Path(source)
        if not p.is_file():
            raise _fail(f"'trace' must be a trace file that exists (got {describe(str(source))})")
        size = os.path.getsize(p)
        if size > max_bytes:
            raise _fail(
                f"'trace' must be at most {max_bytes >> 20} MiB to read (got a file of "
                f"{size / 2**20:,.0f} MiB)"
            )
        raw, name = p.read_bytes(), p.name
    else:
        raise _fail(f"'trace' must be a file path or bytes (got {describe(source)})")
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
                raw = f.read(max_bytes + 1)
        except (OSError, EOFError) as exc:
            raise _fail(f"'trace' must be a readable gzip file ({exc})") from None
        if len(raw) > max_bytes:
            raise _fail(f"'trace' must decompress to at most {max_bytes >> 20} MiB (got more)")
    try:
        return raw.decode("utf-8"), name
    except UnicodeDecodeError:
        raise _fail("'trace' must be UTF-8 JSON text (got binary data)") from None


@dataclass(frozen=True)
class Profile(ResultMixin):
    """A profiler trace as read (a measurement): its events sorted into CPU operators,
    runtime calls and GPU activity, and the device it ran on (None: not recorded)."""

    name: str
    device_name: str
    gpu: Gpu | None
    cpu_ops: list[dict[str, Any]] = field(repr=False)
    runtime: list[dict[str, Any]] = field(repr=False)
    gpu_events: list[dict[str, Any]] = field(repr=False)

    _hidden: ClassVar[tuple[str, ...]] = ("cpu_ops", "runtime", "gpu_events", "gpu")

    def _title(self) -> str:
        return (
            f"profile {self.name}: {len(self.cpu_ops):,} CPU operators, "
            f"{len(self.gpu_events):,} GPU kernels and copies"
        )

    def top_ops(self, n: int = 10) -> list[tuple[str, float, int]]:
        """(operator, total CPU time in s, calls) of the ``n`` operators with most time."""
        tot: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
        for e in self.cpu_ops:
            tot[e["name"]][0] += e["dur"] * 1e-6
            tot[e["name"]][1] += 1
        rows = sorted(tot.items(), key=lambda kv: -kv[1][0])[: check_int("n", n,
                                                                        allow_array=False)]  # fmt: skip
        return [(k, v[0], int(v[1])) for k, v in rows]


def _device(props: Any) -> tuple[str, Gpu | None]:
    if not isinstance(props, list) or not props or not isinstance(props[0], dict):
        return "", None
    p = props[0]
    name = str(p.get("name", ""))[:100]
    g = match_gpu(name) if name else None
    if g is None:
        # boards named by their part number (A100-PG509-200): the database GPU with the same
        # compute capability and SMs and memory within 10 %
        cc = f"{p.get('computeMajor')}.{p.get('computeMinor')}"
        raw = p.get("totalGlobalMem")
        mem = float(raw) if _finite(raw) and not isinstance(raw, (bool, str)) else 0.0
        for cand in gpus():
            if (cand.compute_capability == cc and cand.sms == p.get("numSms")
                    and abs(cand.memory_bytes - mem) < 0.1 * cand.memory_bytes):  # fmt: skip
                g = cand
                break
    return name, g


def read_profile(
    trace: Any, *, max_bytes: int = MAX_BYTES, max_events: int = MAX_EVENTS
) -> Profile:
    """Read a PyTorch profiler trace (a path to ``.json`` or ``.json.gz``, or its bytes)."""
    mb = check_int("max_bytes", max_bytes, allow_array=False, maximum=4 << 30)
    me = check_int("max_events", max_events, allow_array=False, maximum=1 << 26)
    text, name = _read_text(trace, mb)
    if not text.strip():
        raise _fail("'trace' must hold a JSON object (got an empty or blank file)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = "ends before the JSON is complete" if exc.pos >= len(text.rstrip()) - 1 else (
            f"is not valid JSON at line {exc.lineno}, column {exc.colno}")  # fmt: skip
        raise _fail(f"'trace' {where} (a truncated or corrupted file?)") from None
    except RecursionError:
        raise _fail("'trace' nests JSON too deeply to be a profiler trace") from None
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise _fail(
            "'trace' must be a PyTorch profiler (Chrome trace) JSON object with a "
            f"'traceEvents' list (got {describe(type(data).__name__)})"
        )
    if len(events) > me:
        raise _fail(f"'trace' must have at most {me:,} events (got {len(events):,})")
    ops, rt, dev = [], [], []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        try:
            ts, dur = float(e["ts"]), float(e.get("dur", 0.0))
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
        if not (math.isfinite(ts) and math.isfinite(dur)) or dur < 0:
            continue
        cat = e.get("cat")
        args = dict(e["args"]) if isinstance(e.get("args"), dict) else {}
        for k in ("correlation", "stream"):
            if k in args:
                args[k] = _key(args[k])
        if args.get("correlation") is None:
            args.pop("correlation", None)
        nbytes = args.get("bytes")
        if (
            isinstance(nbytes, bool)
            or not isinstance(nbytes, (int, float))
            or not (_finite(nbytes) and 0 <= nbytes < 1e15)
        ):
            args.pop("bytes", None)
        row = {"name": str(e.get("name", ""))[:500], "ts": ts, "dur": dur,
               "tid": _key(e.get("tid")), "args": args, "cat": cat}  # fmt: skip
        if cat == "cpu_op":
            ops.append(row)
        elif cat == "cuda_runtime":
            rt.append(row)
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            dev.append(row)
    dname, g = _device(data.get("deviceProperties"))
    dev.sort(key=lambda r: r["ts"])
    return Profile(name, dname, g, ops, rt, dev)


# ------------------------------------------------------------------------ kernels and ops


@dataclass(frozen=True)
class KernelRow(ResultMixin):
    """One GPU kernel or copy: its measured duration, launching operator, shapes (where
    recorded) and the model's price (None: the model cannot price it)."""

    name: str
    kind: str
    op: str
    stream: Any
    start_s: float
    time_s: float
    shapes: Any
    dtype: str
    predicted_s: float | None
    gemm: tuple[int, ...] = ()  # (m, n, k, batch) of a priced GEMM


def _launching_ops(p: Profile) -> dict[Any, dict[str, Any]]:
    """correlation id -> innermost CPU operator open on the launching thread at the call."""
    by_tid: dict[Any, list[tuple[float, int, dict[str, Any]]]] = defaultdict(list)
    for o in p.cpu_ops:
        by_tid[o["tid"]].append((o["ts"], 0, o))
    for r in p.runtime:
        if "correlation" in r["args"]:
            by_tid[r["tid"]].append((r["ts"], 1, r))
    out: dict[Any, dict[str, Any]] = {}
    for items in by_tid.values():
        items.sort(key=lambda t: (t[0], t[1], -t[2]["dur"]))
        stack: list[dict[str, Any]] = []
        for ts, is_rt, e in items:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] < ts:
                stack.pop()
            if is_rt:
                out[e["args"]["correlation"]] = stack[-1] if stack else {}
            else:
                stack.append(e)
    return out


def _kind(ev: dict[str, Any]) -> str:
    n = ev["name"].lower()
    if ev["cat"] == "gpu_memcpy":
        return "memcpy"
    if ev["cat"] == "gpu_memset":
        return "memset"
    if "nccl" in n:
        return "communication"
    if any(w in n for w in ("gemm", "gemv", "sgemm", "hgemm", "cutlass", "ampere_", "sm80_",
                            "sm90_", "volta_", "turing_", "cublas")):  # fmt: skip
        return "gemm"
    if "conv" in n or "cudnn" in n or "implicit" in n:
        return "convolution"
    if any(w in n for w in _ELEMENTWISE):
        return "elementwise"
    return "other"


def _numel(dims: Any) -> int:
    if not isinstance(dims, list) or not all(isinstance(d, int) and d >= 0 for d in dims):
        return 0
    return int(np.prod(dims, dtype=np.float64)) if dims else 1


def _gemm_shape(op: dict[str, Any]) -> tuple[int, int, int, int, str] | None:
    """(m, n, k, batch, dtype) of a GEMM operator from its recorded input dims."""
    args = op.get("args", {})
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list) or not dims:
        return None
    name = op.get("name")
    try:
        if name in ("aten::mm", "aten::addmm"):
            a, b = (dims[1], dims[2]) if name == "aten::addmm" else (dims[0], dims[1])
            (m, k), (k2, n), batch = a, b, 1
        else:
            a, b = (dims[1], dims[2]) if name == "aten::baddbmm" else (dims[0], dims[1])
            (batch, m, k), (_, k2, n) = a, b
    except (TypeError, ValueError, IndexError):
        return None
    dt = _DTYPES.get(str(types[1] if name in ("aten::addmm", "aten::baddbmm") else types[0]))
    ok = all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 1 << 24
             for x in (m, n, k, batch)) and k == k2 and m * n * k * batch <= 1 << 50  # fmt: skip
    return (m, n, k, batch, dt) if ok and dt else None


def _bytes_of(op: dict[str, Any]) -> tuple[float, str] | None:
    """Bytes an element-wise operator moves: its tensor inputs, read once, and an output the
    size of the largest, written once (the guide's memory-bound accounting)."""
    args = op.get("args", {})
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    sizes, dt = [], ""
    for d, t in zip(dims, types, strict=False):
        if str(t) in _DTYPES and isinstance(d, list) and d:
            dt = dt or _DTYPES[str(t)]
            sizes.append(_numel(d) * _BYTES[_DTYPES[str(t)]])
    if not sizes:
        return None
    return float(sum(sizes) + max(sizes)), dt


def _host_link_bw(g: Gpu) -> float | None:
    """Host-device bandwidth for copies: the board's PCIe generation (pinned memory)."""
    cc = float(g.compute_capability)
    if cc >= 9.0:
        return interconnect("PCIe5").bandwidth_bytes_per_s
    if cc >= 8.0:
        return interconnect("PCIe4").bandwidth_bytes_per_s
    return None  # no PCIe 3 row in the link table: not priced


def _kernel_rows(p: Profile, g: Gpu | None) -> list[KernelRow]:
    launch = _launching_ops(p)
    rows: list[KernelRow] = []
    gemm_idx: list[int] = []
    gemm_shapes: list[tuple[int, int, int, int, str]] = []
    if g is not None:
        # the same constants for every kernel: read once per trace, not once per kernel
        cal = achievable(g, "fp32")
        bw = g.memory_bandwidth_bytes_per_s * cal.memory_fraction
    for ev in p.gpu_events:
        op = launch.get(ev["args"].get("correlation"), {})
        kind = _kind(ev)
        shapes, dt, pred = op.get("args", {}).get("Input Dims"), "", None
        if g is not None:
            nbytes = ev["args"].get("bytes")
            if kind == "memcpy" and isinstance(nbytes, (int, float)) and nbytes >= 0:
                host = "HtoD" in ev["name"] or "DtoH" in ev["name"]
                link = _host_link_bw(g) if host else bw / 2  # a device copy reads and writes
                pred = None if link is None else cal.kernel_overhead_s + nbytes / link
            elif kind == "memset" and isinstance(nbytes, (int, float)) and nbytes >= 0:
                pred = cal.kernel_overhead_s + nbytes / bw
            elif op.get("name") in _GEMM_OPS and (shape := _gemm_shape(op)) is not None:
                dt = shape[4]
                gemm_idx.append(len(rows))
                gemm_shapes.append(shape)
            elif kind == "elementwise" and (mv := _bytes_of(op)) is not None:
                pred, dt = cal.kernel_overhead_s + mv[0] / bw, mv[1]
        rows.append(KernelRow(ev["name"], kind, op.get("name", ""), ev["args"].get("stream"),
                              ev["ts"] * 1e-6, ev["dur"] * 1e-6, shapes, dt, pred))  # fmt: skip
    for dt in {s[4] for s in gemm_shapes}:
        sel = [i for i, s in zip(gemm_idx, gemm_shapes, strict=True) if s[4] == dt]
        shp = [s for s in gemm_shapes if s[4] == dt]
        if g is None or not g.supports(dt):
            continue
        sw = gemm_sweep(np.array([s[0] for s in shp]), np.array([s[1] for s in shp]),
                        np.array([s[2] for s in shp]), batch=np.array([s[3] for s in shp]),
                        dtype=dt, gpu=g)  # fmt: skip
        times = np.atleast_1d(sw.predicted_time_s)
        for i, t in zip(sel, times, strict=True):
            r = rows[i]
            m, n, k, nb = gemm_shapes[gemm_idx.index(i)][:4]
            rows[i] = KernelRow(r.name, "gemm", r.op, r.stream, r.start_s, r.time_s, r.shapes,
                                dt, float(t), (m, n, k, nb))  # fmt: skip
    return rows


# ------------------------------------------------------------------------------ the report


@dataclass(frozen=True)
class ProfileFinding(ResultMixin):
    """One fix, with the measured time it concerns and the model's estimate of what it
    recovers (``recoverable_s``), before/after where the model can tell."""

    fix: str
    where: str
    kernels: int
    measured_s: float
    recoverable_s: float
    before: str
    after: str

    _units: ClassVar[dict[str, str]] = {"measured_s": "s", "recoverable_s": "s"}


@dataclass(frozen=True)
class ProfileReport(ResultMixin):
    """What a profile says: the timeline (measured), the model's price (where it can), and
    the guide's fixes ranked by recoverable time (the model's estimate)."""

    name: str
    device_name: str
    gpu: str
    span_s: float
    gpu_busy_s: float
    kernel_time_s: float
    idle_s: float
    launch_bound_idle_s: float
    communication_s: float
    communication_overlapped_s: float
    priced_share: float
    top_kernels: list[tuple[str, str, float]]
    findings: list[ProfileFinding]
    kernels: list[KernelRow] = field(repr=False)

    _units: ClassVar[dict[str, str]] = {
        "span_s": "s",
        "gpu_busy_s": "s",
        "kernel_time_s": "s",
        "idle_s": "s",
        "launch_bound_idle_s": "s",
        "communication_s": "s",
        "communication_overlapped_s": "s",
    }
    _hidden: ClassVar[tuple[str, ...]] = ("kernels", "top_kernels", "findings")

    def _title(self) -> str:
        return (
            f"profile {self.name} on {self.device_name or 'an unnamed GPU'}: GPU busy "
            f"{self.gpu_busy_s / self.span_s:.0%} of {format_quantity(self.span_s, 's')}, "
            f"{self.priced_share:.0%} of kernel time priced by the model"
        )

    def __str__(self) -> str:
        lines = [super().__str__(), "  top kernels (measured):"]
        for op, name, t in self.top_kernels:
            lines.append(f"    {format_quantity(t, 's'):>10}  {op or '-'}: {name[:70]}")
        lines.append("  fixes, by time recovered (the model's estimate):")
        for f in self.findings:
            lines.append(f"    {format_quantity(f.recoverable_s, 's'):>10}  {f.fix} ({f.where};"
                         f" {f.before} -> {f.after})")  # fmt: skip
        if not self.findings:
            lines.append("    none found")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The summary table, then the top kernels and the ranked fixes as text."""
        import html

        rest = str(self).split("  top kernels (measured):", 1)[1]
        return (
            f"{super()._repr_html_()}<pre class='dlperf-findings'>top kernels (measured):"
            f"{html.escape(rest)}</pre>"
        )


def _union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, -np.inf
    for s, e in sorted(intervals):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


# A math-bound GEMM whose last wave of tiles keeps fewer than this share of the SMs busy on
# average is worth resizing (guide: "GPU Performance Background", wave quantization).
WAVE_EFFICIENCY_FLOOR = 0.9


def _fill_last_wave(r: KernelRow, g: Gpu) -> ProfileFinding | None:
    """The guide's wave-quantization fix for one priced GEMM: grow M to the size whose tiles
    fill whole waves, and compare the model's time per row before and after."""
    m, n, k, nb = r.gemm
    sw = gemm_sweep(m, n, k, batch=nb, dtype=r.dtype, gpu=g)
    eff = float(np.atleast_1d(sw.wave_efficiency)[0])
    if str(np.atleast_1d(sw.limiter)[0]) != "math" or int(np.atleast_1d(sw.split_k)[0]) != 1:
        return None
    waves = int(np.atleast_1d(sw.waves)[0])
    if eff >= WAVE_EFFICIENCY_FLOOR or waves < 1:
        return None
    tm, tn = (int(x) for x in str(np.atleast_1d(sw.tile)[0]).split("x"))
    tiles_n = -(-n // tn)
    slots = g.sms * sw.blocks_per_sm
    # the most tile rows that still fit in the same number of waves
    m_full = (waves * slots) // (tiles_n * nb) * tm
    if m_full <= m:
        return None
    after = gemm_sweep(m_full, n, k, batch=nb, dtype=r.dtype, gpu=g)
    t_after = float(np.atleast_1d(after.predicted_time_s)[0])
    t_before = float(np.atleast_1d(sw.predicted_time_s)[0])
    gain = r.time_s * (1 - (t_after / m_full) / (t_before / m))
    if gain <= 0:
        return None
    return ProfileFinding(
        f"fill the last wave: {m_full} rows instead of {m} (more tokens per step)",
        f"{r.op} {m}x{n}x{k}", 1, r.time_s, gain,
        f"{waves} waves {eff:.0%} full, {format_quantity(t_before / m, 's')} per row",
        f"{format_quantity(t_after / m_full, 's')} per row")  # fmt: skip


def _findings(p: Profile, rows: list[KernelRow], g: Gpu | None,
              launch_idle: float, stretch: int) -> list[ProfileFinding]:  # fmt: skip
    out: list[ProfileFinding] = []
    # pageable host copies: pinned memory moves them at the link's speed
    page = [r for r in rows if r.kind == "memcpy" and "Pageable" in r.name]
    priced = [r for r in page if r.predicted_s is not None]
    if priced:
        meas = sum(r.time_s for r in priced)
        model = sum(r.predicted_s or 0.0 for r in priced)
        if meas > model:
            out.append(ProfileFinding(
                "pin host memory (pin_memory=True, non_blocking copies)",
                "pageable host-device copies", len(priced), meas, meas - model,
                format_quantity(meas, "s") + " measured",
                format_quantity(model, "s") + " at the PCIe link's bandwidth"))  # fmt: skip
    # GEMMs: alignment and skinny shapes
    for r in rows:
        if r.kind != "gemm" or r.predicted_s is None or g is None:
            continue
        m, n, k, nb = r.gemm
        for f in alignment_findings({"m": m, "n": n, "k": k}, r.dtype, g):
            if f.severity == "info" or f.suggested_value is None:
                continue
            new = {"m": m, "n": n, "k": k, f.parameter: f.suggested_value}
            after = float(np.atleast_1d(gemm_sweep(new["m"], new["n"], new["k"], batch=nb, dtype=r.dtype,
                                                   gpu=g).predicted_time_s)[0])  # fmt: skip
            gain = r.time_s * max(0.0, 1 - after / r.predicted_s)
            if gain > 0:
                out.append(ProfileFinding(f.fix, f"{r.op} {m}x{n}x{k}", 1, r.time_s, gain,
                                          format_quantity(r.predicted_s, "s"),
                                          format_quantity(after, "s")))  # fmt: skip
        wave = _fill_last_wave(r, g)
        if wave is not None:
            out.append(wave)
        if min(m, n) <= 8:
            # twice the rows in one GEMM: the model's time per row, before and after
            m2, n2 = (2 * m, n) if m <= n else (m, 2 * n)
            twice = float(np.atleast_1d(gemm_sweep(m2, n2, k, batch=nb, dtype=r.dtype,
                                                   gpu=g).predicted_time_s)[0])  # fmt: skip
            gain = r.time_s * max(0.0, 1 - twice / (2 * r.predicted_s))
            if gain > 0:
                out.append(ProfileFinding(
                    "batch these GEMVs (more rows per weight read)", f"{r.op} {m}x{n}x{k}", 1,
                    r.time_s, gain, f"{format_quantity(r.predicted_s, 's')} for {min(m, n)} rows",
                    f"{format_quantity(twice, 's')} for {2 * min(m, n)} rows"))  # fmt: skip
    # element-wise chains: consecutive element-wise kernels on one stream
    by_stream: dict[Any, list[KernelRow]] = defaultdict(list)
    for r in rows:
        by_stream[r.stream].append(r)
    chains: list[list[KernelRow]] = []
    for rs in by_stream.values():
        cur: list[KernelRow] = []
        for r in [*rs, None]:  # type: ignore[list-item]
            if r is not None and r.kind == "elementwise":
                cur.append(r)
                continue
            if len(cur) >= 2:
                chains.append(cur)
            cur = []
    if chains:
        meas = sum(sum(r.time_s for r in c) for c in chains)
        fused = sum(max(r.time_s for r in c) for c in chains)
        out.append(ProfileFinding(
            "fuse each element-wise chain into one kernel (torch.compile)",
            f"{len(chains)} chains of 2+ element-wise kernels",
            sum(len(c) for c in chains), meas, meas - fused, format_quantity(meas, "s"),
            format_quantity(fused, "s") + " (one pass: about the longest kernel)"))  # fmt: skip
    if launch_idle > 0:
        out.append(ProfileFinding(
            "capture the launch-bound stretches in a CUDA graph", f"{stretch} gaps under "
            f"{LAUNCH_GAP_S * 1e6:.0f} us while the host launched", stretch, launch_idle,
            launch_idle, format_quantity(launch_idle, "s") + " GPU idle",
            "one graph launch"))  # fmt: skip
    # one finding per fix and place: the kernels of repeated identical GEMMs add up
    merged: dict[tuple[str, str], ProfileFinding] = {}
    for f in out:
        key = (f.fix, f.where)
        if key in merged:
            o = merged[key]
            f = ProfileFinding(f.fix, f.where, o.kernels + f.kernels, o.measured_s + f.measured_s,
                               o.recoverable_s + f.recoverable_s, f.before, f.after)  # fmt: skip
        merged[key] = f
    return sorted(merged.values(), key=lambda f: -f.recoverable_s)


def explain(trace: Any, gpu: str | Gpu | None = None, *, top: int = 10) -> ProfileReport:
    """Explain a PyTorch profiler trace of a GPU run (a path, bytes or a :class:`Profile`).

    ``gpu``: the GPU the model prices on (default: the one the trace names)."""
    p = trace if isinstance(trace, Profile) else read_profile(trace)
    n_top = check_int("top", top, allow_array=False, maximum=1000)
    if not p.gpu_events:
        raise _fail(
            f"'trace' holds no GPU kernels (a CPU-only profile of {len(p.cpu_ops):,} "
            "operators): profile a GPU run with ProfilerActivity.CUDA to explain it"
        )
    g = _gpu(gpu) if gpu is not None else p.gpu
    rows = _kernel_rows(p, g)
    iv = [(r.start_s, r.start_s + r.time_s) for r in rows]
    span = max(e for _, e in iv) - min(s for s, _ in iv)
    busy = _union(iv)
    ktime = sum(r.time_s for r in rows)
    # launch-bound gaps: the next kernel's launch call began after the previous kernel ended
    launch_ts = {}
    for r in p.runtime:
        if "correlation" in r["args"]:
            launch_ts[r["args"]["correlation"]] = r["ts"] * 1e-6
    ends = np.maximum.accumulate(np.array([e for _, e in iv]))
    launch_idle, stretch = 0.0, 0
    for i in range(1, len(rows)):
        gap = rows[i].start_s - ends[i - 1]
        call = launch_ts.get(p.gpu_events[i]["args"].get("correlation"))
        if 0 < gap < LAUNCH_GAP_S and call is not None and call >= ends[i - 1] - 1e-9:
            launch_idle += gap - min(gap, 0.0)
            stretch += 1
    comm = [(r.start_s, r.start_s + r.time_s) for r in rows if r.kind == "communication"]
    comp = [(r.start_s, r.start_s + r.time_s) for r in rows if r.kind != "communication"]
    comm_t = _union(comm)
    overlapped = comm_t + _union(comp) - _union(comm + comp) if comm else 0.0
    priced = sum(r.time_s for r in rows if r.predicted_s is not None)
    by_kernel: dict[tuple[str, str], float] = defaultdict(float)
    for r in rows:
        by_kernel[(r.op, r.name)] += r.time_s
    top_k = sorted(((op, n, t) for (op, n), t in by_kernel.items()), key=lambda x: -x[2])[:n_top]
    return ProfileReport(
        name=p.name,
        device_name=p.device_name,
        gpu=g.name if g is not None else "",
        span_s=span,
        gpu_busy_s=busy,
        kernel_time_s=ktime,
        idle_s=span - busy,
        launch_bound_idle_s=launch_idle,
        communication_s=comm_t,
        communication_overlapped_s=overlapped,
        priced_share=priced / ktime if ktime else 0.0,
        top_kernels=top_k,
        findings=_findings(p, rows, g, launch_idle, stretch),
        kernels=rows,
    )


def shipped_profiles() -> dict[str, Path]:
    """The profiler traces shipped with the kit (``live/data/profiles``), by name."""
    from importlib import resources

    root = resources.files("dlperf_widgets.live").joinpath("data", "profiles")
    found = [p for p in root.iterdir() if p.name.endswith((".json.gz", ".json"))]
    return {p.name.split(".")[0]: Path(str(p)) for p in sorted(found, key=lambda p: p.name)}
