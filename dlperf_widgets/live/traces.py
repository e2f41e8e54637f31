"""Recorded measurements from real GPUs, shipped as CSV files, and the model beside them.

Where no GPU is present (Binder, a laptop), the notebooks overlay these recordings on the
model. ``benchmarks/record_gpu.py`` writes them with :func:`write_trace`; the package ships
them in ``dlperf_widgets/live/data/``.

File format (:data:`SCHEMA` is written at the top of every file):

- lines starting with ``#!`` carry provenance, one ``key: value`` per line: ``gpu`` (the
  database name the model used), ``device_name`` (as the driver reports it), ``driver``,
  ``cuda``, ``cudnn``, ``torch``, ``date`` (UTC, ISO 8601), ``timer`` (how it was timed),
  ``context`` and ``cache`` (the rows' defaults), ``power`` ('sustained' when a loop of calls
  kept the board at its power limit; default 'idle');
- other lines starting with ``#`` are comments;
- then a CSV header and one row per measurement, with the columns of :data:`COLUMNS`.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..core._validate import check_choice, check_int, describe
from ..core.assumptions import CACHE_STATES, DEFAULT_CACHE, DEFAULT_CONTEXT
from ..core.calibration import check_context
from ..core.dtypes import dtype as _dtype
from ..core.errors import DlperfError, InvalidParameter, UnknownGPU
from ..core.gemm import gemm_sweep
from ..core.gpus import Gpu, gpu
from ..core.gpus import gpu as _gpu_of
from ..core.results import ResultMixin
from .device import match_gpu
from .reconcile import ErrorSummary, error_summary, reconcile_gemm

__all__ = [
    "COLUMNS",
    "SCHEMA",
    "ModelErrorReport",
    "TileAgreement",
    "Trace",
    "TraceOverlay",
    "TraceReconciliation",
    "kernel_tile",
    "list_traces",
    "load_trace",
    "measured_along",
    "measured_gemms",
    "model_error_report",
    "model_options",
    "predict_rows",
    "reconcile_trace",
    "sweep_rows",
    "tile_agreement",
    "trace_overlay",
    "write_trace",
]

COLUMNS = (
    "suite",
    "op",
    "phase",
    "dtype",
    "m",
    "n",
    "k",
    "batch",
    "params",
    "repeats",
    "warmup",
    "measured_time_s",
    "flops",
    "bytes",
    "measured_flops_per_s",
    "predicted_time_s",
    "roofline_time_s",
    "beta",
    "context",
    "cache",
)
_NUMERIC = {
    "m": int,
    "n": int,
    "k": int,
    "batch": int,
    "repeats": int,
    "warmup": int,
    "measured_time_s": float,
    "flops": float,
    "bytes": float,
    "measured_flops_per_s": float,
    "predicted_time_s": float,
    "roofline_time_s": float,
    "beta": float,
}

SCHEMA = """\
# dlperf_widgets recorded trace: measurements on a real GPU, one per row.
# Lines starting with '#!' are provenance (key: value); other '#' lines are comments.
# Columns
#   suite                 square, k_sweep, n_sweep, linear, conv2d ... (the group a row belongs to)
#   op                    gemm, or the layer kind (linear, conv2d)
#   phase                 forward or backward (a GEMM is forward)
#   dtype                 fp16, bf16, tf32, fp32 (names of dlperf_widgets.core.dtypes)
#   m n k batch           GEMM sizes, C (M x N) = A (M x K) @ B (K x N); blank for a layer
#   params                a layer's options as key=value pairs separated by ';'
#   repeats warmup        timed and untimed runs
#   measured_time_s       time in seconds, taken as the provenance line 'timer' says (the
#                         kit's own recordings: median of CUDA-event times, L2 flushed)
#   flops bytes           FLOPs (2MNK per GEMM; FlopCounterMode for a layer) and the bytes
#                         read and written, each tensor once
#   measured_flops_per_s  flops / measured_time_s
#   predicted_time_s      the model's prediction when the trace was recorded (blank: none)
#   roofline_time_s       max(flops / peak, bytes / bandwidth) for the same GPU (blank: none)
#   beta                  the GEMM's beta: C is read as well as written when it is not 0
#                         (blank: 0)
#   context               timing context: kernel (one kernel timed on the device: CUPTI, or
#                         CUDA events with the launch hidden), back-to-back (a stream or a
#                         CUDA graph, time per kernel) or eager (one call timed from the host,
#                         launch included); blank: the provenance line 'context', else kernel
#   cache                 warm (the same operands were used just before: repeated calls on
#                         the same tensors) or cold (operands from DRAM; the kit's timer
#                         flushes L2); blank: the provenance line 'cache', else cold
"""

_DATA = "data"
# a trace's power state (provenance 'power'): 'idle', every kernel starts on an idle board (it
# may run at the boost clock for a while: core.calibration.boost_burst_s), or 'sustained', a
# loop of calls kept the board at its power limit (gemm_sweep(sustained=True))
POWER_STATES = ("idle", "sustained")


@dataclass(frozen=True)
class Trace(ResultMixin):
    """A recorded trace: its provenance and its rows (dicts keyed by :data:`COLUMNS`)."""

    name: str
    provenance: dict[str, str]
    rows: tuple[dict[str, Any], ...]

    @property
    def suites(self) -> list[str]:
        return list(dict.fromkeys(r["suite"] for r in self.rows))

    def select(
        self, suite: str | None = None, op: str | None = None, dtype: str | None = None
    ) -> list[dict[str, Any]]:
        """Rows of one suite / op / dtype (None: any)."""
        return [
            r
            for r in self.rows
            if (suite is None or r["suite"] == suite)
            and (op is None or r["op"] == op)
            and (dtype is None or r["dtype"] == dtype)
        ]

    def model_gpu(self) -> Gpu:
        """The database GPU the trace was recorded on (provenance 'gpu', else the board name)."""
        name = self.provenance.get("gpu", "")
        try:
            return gpu(name)
        except (UnknownGPU, InvalidParameter):
            pass
        matched = match_gpu(self.provenance.get("device_name", ""))
        if matched is None:
            raise DlperfError(
                f"trace {self.name!r} was recorded on {name or 'an unnamed GPU'!r}, which is "
                f"not in the GPU database, so the model cannot be put beside it"
            )
        return matched

    def _title(self) -> str:
        where = self.provenance.get("device_name") or self.provenance.get("gpu", "?")
        return f"Trace {self.name}: {len(self.rows)} measurements on {where}"

    def _rows(self) -> list[tuple[str, str]]:
        rows = [(k, v) for k, v in self.provenance.items()]
        rows.append(("suites", ", ".join(self.suites)))
        return rows


def _data_dir() -> Any:
    return resources.files("dlperf_widgets.live").joinpath(_DATA)


def list_traces() -> list[str]:
    """Names of the recorded traces shipped with the package (file names without .csv)."""
    folder = _data_dir()
    if not folder.is_dir():
        return []
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".csv"))


MAX_TRACE_BYTES = 2**20
"""Largest trace file the kit reads (1 MiB, some 20,000 GEMM rows): recorded traces are a few
hundred rows; the cap keeps a stray log file from taking the machine's memory."""

# Range of a plausible GPU time in seconds: no kernel or step is timed below a picosecond
# (a clock cycle is ~0.5 ns), and none a trace records runs for more than a million seconds
# (11.6 days). Outside it the number is a unit or recording mistake, not a measurement.
_TIME_RANGE_S = (1e-12, 1e6)
_TIMES = ("measured_time_s", "predicted_time_s", "roofline_time_s")
_SIZES = ("m", "n", "k", "batch")


def _parse_value(col: str, text: str) -> Any:
    text = text.strip()
    if col not in _NUMERIC:
        return text
    if text == "":
        return None
    try:
        number = float(text)
    except ValueError:
        raise DlperfError(f"column {col!r} must hold numbers (got {describe(text)})") from None
    if not math.isfinite(number):
        raise DlperfError(f"column {col!r} must hold finite numbers (got {describe(text)})")
    if _NUMERIC[col] is int:
        # counts as exact integers: '9223372036854775808' must not pass through a float
        try:
            value: Any = int(text)
        except ValueError:
            value = number
        try:
            return check_int(col, value, minimum=1 if col in _SIZES else 0, allow_array=False)
        except InvalidParameter as exc:
            raise DlperfError(f"column {str(exc).replace(' must be ', ' must hold ', 1)}") from None
    if col in _TIMES:
        low, high = _TIME_RANGE_S
        if not low <= number <= high:
            raise DlperfError(
                f"column {col!r} must hold times between {low:g} and {high:g} seconds "
                f"(got {describe(text)})"
            )
    elif col != "beta" and number < 0:
        raise DlperfError(f"column {col!r} must hold non-negative numbers (got {describe(text)})")
    return number


def parse_trace(text: str, name: str = "trace") -> Trace:
    """A :class:`Trace` from the text of a trace CSV."""
    provenance: dict[str, str] = {}
    body = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#!"):
            key, sep, value = stripped[2:].partition(":")
            if sep:
                provenance[key.strip()] = value.strip()
        elif stripped and not stripped.startswith("#"):
            body.append(line)
    if not body:
        raise DlperfError(f"trace {name!r} has no header line and no rows")
    reader = csv.DictReader(io.StringIO("\n".join(body)))
    missing = [
        c for c in ("suite", "op", "dtype", "measured_time_s") if c not in (reader.fieldnames or [])
    ]
    if missing:
        raise DlperfError(f"trace {name!r} lacks the column(s) {', '.join(missing)}")
    default_context = check_context(provenance.get("context") or DEFAULT_CONTEXT)
    default_cache = check_choice("cache", provenance.get("cache") or DEFAULT_CACHE, CACHE_STATES)
    power = check_choice("power", provenance.get("power") or "idle", POWER_STATES)
    rows = []
    try:
        for number, raw in enumerate(reader, 1):
            try:
                row = {c: _parse_value(c, raw.get(c) or "") for c in COLUMNS}
                row["context"] = check_context(row["context"] or default_context)
                row["cache"] = check_choice("cache", row["cache"] or default_cache, CACHE_STATES)
                row["power"] = power
            except DlperfError as exc:
                raise DlperfError(f"trace {name!r}, row {number}: {exc}") from None
            for extra in set(raw) - set(COLUMNS):
                if extra is not None:
                    row[extra] = raw[extra]
            rows.append(row)
    except csv.Error as exc:  # a field over the csv module's 128 KiB limit, a NUL byte ...
        raise DlperfError(f"trace {name!r} is not a readable CSV file ({exc})") from None
    return Trace(name=name, provenance=provenance, rows=tuple(rows))


def _read_text(path: Path) -> str:
    """A trace file's text: UTF-8 (a byte-order mark allowed) and at most MAX_TRACE_BYTES."""
    size = path.stat().st_size
    if size > MAX_TRACE_BYTES:
        raise InvalidParameter(
            f"'name' must be a trace file of at most {MAX_TRACE_BYTES // 2**20} MiB "
            f"(got {describe(str(path))}, {size / 2**20:.1f} MiB)"
        )
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            what = "which looks like UTF-16"
        else:
            what = f"which has the byte 0x{data[exc.start]:02x} at offset {exc.start}"
        raise InvalidParameter(
            f"'name' must be a UTF-8 text file (got {describe(str(path))}, {what})"
        ) from None


def load_trace(name: str | Path) -> Trace:
    """Load a shipped trace by name (see :func:`list_traces`) or any trace CSV by path."""
    if isinstance(name, Path) or (isinstance(name, str) and name.endswith(".csv")):
        path = Path(name)
        if not path.is_file():
            raise InvalidParameter(
                f"'name' must be a trace name or an existing CSV file (got {describe(str(name))})"
            )
        return parse_trace(_read_text(path), path.stem)
    if not isinstance(name, str):
        raise InvalidParameter(f"'name' must be a trace name or a path (got {describe(name)})")
    names = list_traces()
    if name not in names:
        shipped = ", ".join(names) if names else "none are shipped yet"
        raise InvalidParameter(
            f"'name' must be a recorded trace ({shipped}) (got {describe(name)})"
        )
    text = _data_dir().joinpath(name + ".csv").read_text("utf-8")
    return parse_trace(text, name)


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def write_trace(
    path: str | Path, provenance: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]
) -> Path:
    """Write a trace CSV: the schema comment, the provenance, the header and the rows."""
    path = Path(path)
    lines = [SCHEMA.rstrip("\n")]
    lines += [f"#! {k}: {v}" for k, v in provenance.items()]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([_fmt(row.get(c)) for c in COLUMNS])
    path.write_text("\n".join(lines) + "\n" + buf.getvalue(), encoding="utf-8")
    return path


# -- overlay and reconciliation -----------------------------------------------------------
@dataclass(frozen=True)
class TraceOverlay(ResultMixin):
    """A GEMM suite of a trace with today's model for the same GPU, ready to plot.

    ``x`` holds the values of the dimension ``x_name`` that varies along the suite; the
    other arrays are aligned with it. ``predicted_*`` is recomputed with the current
    model; ``roofline_flops_per_s`` is the plain roofline's attainable rate.
    """

    trace: str
    suite: str
    dtype: str
    gpu: str
    x_name: str
    x: Any
    m: Any
    n: Any
    k: Any
    measured_time_s: Any
    measured_flops_per_s: Any
    predicted_time_s: Any
    predicted_flops_per_s: Any
    roofline_flops_per_s: Any
    peak_flops_per_s: float

    def __len__(self) -> int:
        return int(np.size(self.x))


def _gemm_rows(trace: Trace, suite: str | None, dtype: str | None) -> list[dict[str, Any]]:
    return [
        r
        for r in trace.select(suite=suite, op="gemm", dtype=dtype)
        if r["m"] and r["n"] and r["k"] and r["measured_time_s"]
    ]


def model_options(row: Mapping[str, Any]) -> dict[str, Any]:
    """How the model must be run to compare like with like with a measured row: its beta,
    timing context, cache state, power state (the provenance line 'power': 'sustained' when a
    loop of calls kept the board at its power limit, else each kernel starts from idle) and
    (FP8 layers) activation quantisation (``params`` 'quantize=...')."""
    params = dict(p.split("=", 1) for p in str(row.get("params") or "").split(";") if "=" in p)
    return {
        "beta": float(row.get("beta") or 0.0),
        "context": row.get("context") or DEFAULT_CONTEXT,
        "cache": row.get("cache") or DEFAULT_CACHE,
        "quantize": params.get("quantize", "none"),
        "sustained": row.get("power") == "sustained",
    }


def sweep_rows(rows: list[dict[str, Any]], g: Gpu) -> Iterator[tuple[list[int], str, Any]]:
    """The model run on GEMM rows as reconcile runs them, each in its own context
    (:func:`model_options`): ``(indices into rows, dtype, gemm_sweep result)`` per group of
    rows sharing a dtype and options, one vectorised call each."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(rows):
        key = (r["dtype"], *model_options(r).items())
        groups.setdefault(key, []).append(i)
    for (dt, *opts), idx in groups.items():
        sel = [rows[i] for i in idx]
        m, n, k, b = (
            np.array([r[c] or 1 for r in sel], dtype=np.int64) for c in ("m", "n", "k", "batch")
        )
        yield idx, dt, gemm_sweep(m, n, k, dtype=dt, gpu=g, batch=b, **dict(opts))


def predict_rows(rows: list[dict[str, Any]], g: Gpu) -> tuple[np.ndarray, np.ndarray]:
    """The model's predicted and the plain roofline's time for GEMM rows, in row order, each
    run in the row's own context (:func:`sweep_rows`)."""
    predicted = np.full(len(rows), np.nan)
    roof = np.full(len(rows), np.nan)
    for idx, _, s in sweep_rows(rows, g):
        predicted[idx] = np.asarray(s.predicted_time_s, dtype=np.float64)
        roof[idx] = np.asarray(s.roofline_time_s, dtype=np.float64)
    return predicted, roof


def trace_overlay(trace: Trace | str, suite: str, *, dtype: str | None = None) -> TraceOverlay:
    """The GEMM rows of one suite (and dtype: the suite's first when None) beside the model."""
    if not isinstance(trace, Trace):
        trace = load_trace(trace)
    suite = check_choice("suite", suite, trace.suites) if trace.suites else suite
    rows = trace.select(suite=suite, op="gemm")
    if dtype is None and rows:
        dtype = rows[0]["dtype"]
    rows = _gemm_rows(trace, suite, dtype)
    if not rows:
        raise InvalidParameter(
            f"'suite' must name GEMM rows of trace {trace.name!r} in {dtype} (got {describe(suite)})"
        )
    g = trace.model_gpu()
    m = np.array([r["m"] for r in rows], dtype=np.int64)
    n = np.array([r["n"] for r in rows], dtype=np.int64)
    k = np.array([r["k"] for r in rows], dtype=np.int64)
    batch = np.array([r["batch"] or 1 for r in rows], dtype=np.int64)
    varying = [name for name, arr in (("m", m), ("n", n), ("k", k)) if len(set(arr.tolist())) > 1]
    x_name = varying[0] if len(varying) == 1 else "m"
    order = np.argsort({"m": m, "n": n, "k": k}[x_name], kind="stable")
    m, n, k, batch = m[order], n[order], k[order], batch[order]
    measured = np.array([rows[i]["measured_time_s"] for i in order], dtype=np.float64)
    model = gemm_sweep(
        m, n, k, dtype=str(dtype), gpu=g, batch=batch, **model_options(rows[order[0]])
    )
    flops = np.asarray(model.flops, dtype=np.float64)
    # each row in its own context and cache state
    predicted = predict_rows([rows[i] for i in order], g)[0]
    # plain roofline: FLOPs at peak or bytes at the datasheet DRAM bandwidth
    roof_time = np.asarray(model.roofline_time_s, dtype=np.float64)
    return TraceOverlay(
        trace=trace.name,
        suite=suite,
        dtype=str(dtype),
        gpu=g.name,
        x_name=x_name,
        x={"m": m, "n": n, "k": k}[x_name],
        m=m,
        n=n,
        k=k,
        measured_time_s=measured,
        measured_flops_per_s=flops / measured,
        predicted_time_s=predicted,
        predicted_flops_per_s=flops / predicted,
        roofline_flops_per_s=flops / roof_time,
        peak_flops_per_s=float(model.peak_flops_per_s),
    )


@dataclass(frozen=True)
class TraceReconciliation(ResultMixin):
    """Every measurement of a trace beside the model and a plain roofline.

    ``rows`` are dicts: suite, op, phase, dtype, m, n, k, batch, params, measured_time_s,
    predicted_time_s, roofline_time_s, model_error, roofline_error, dominant_effect.
    GEMM rows are recomputed with the current model; layer rows use the recorded
    predictions (rows without one are listed but left out of ``summary``).
    """

    trace: str
    gpu: str
    rows: tuple[dict[str, Any], ...]
    summary: ErrorSummary | None

    def _title(self) -> str:
        return f"Model vs measurement: trace {self.trace} on {self.gpu}"

    def _rows(self) -> list[tuple[str, str]]:
        if self.summary is None:
            return [("measurements with a prediction", "0")]
        return self.summary._rows()

    def table(self) -> str:
        """One line per measurement: sizes, measured, model, roofline and their errors."""
        head = (
            f"{'suite':<10} {'op':<7} {'dtype':<5} {'sizes':<22} {'measured':>11} "
            f"{'model':>11} {'roofline':>11} {'model err':>9} {'roof err':>9}  effect"
        )
        lines = [head]
        for r in self.rows:
            sizes = f"{r['m']}x{r['n']}x{r['k']}" if r["m"] else (r["params"] or "")[:22]

            def t(v: Any) -> str:
                return "-" if v is None else f"{v * 1e3:.4g} ms"

            def e(v: Any) -> str:
                return "-" if v is None else f"{v:.1%}"

            lines.append(
                f"{r['suite']:<10} {r['op']:<7} {r['dtype']:<5} {sizes:<22} "
                f"{t(r['measured_time_s']):>11} {t(r['predicted_time_s']):>11} "
                f"{t(r['roofline_time_s']):>11} {e(r['model_error']):>9} "
                f"{e(r['roofline_error']):>9}  {r['dominant_effect'] or ''}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return super().__str__() + "\n" + self.table()


def reconcile_trace(trace: Trace | str, suite: str | None = None) -> TraceReconciliation:
    """Model and roofline beside every measurement of a trace (or of one suite), with the
    median and worst relative errors of each."""
    if not isinstance(trace, Trace):
        trace = load_trace(trace)
    g = trace.model_gpu()
    out = []
    for r in trace.select(suite=suite):
        measured = r["measured_time_s"]
        if not measured:
            continue
        predicted, roofline, dominant = r["predicted_time_s"], r["roofline_time_s"], None
        if r["op"] == "gemm" and r["m"] and r["n"] and r["k"]:
            try:
                rec = reconcile_gemm(
                    r["m"],
                    r["n"],
                    r["k"],
                    dtype=r["dtype"],
                    gpu=g,
                    batch=r["batch"] or 1,
                    measured_time_s=measured,
                    **model_options(r),
                )
            except DlperfError:
                rec = None
            if rec is not None:
                predicted, roofline = rec.predicted_time_s, rec.roofline_time_s
                dominant = rec.dominant_effect
        out.append(
            {
                "suite": r["suite"],
                "op": r["op"],
                "phase": r["phase"],
                "dtype": r["dtype"],
                "m": r["m"],
                "n": r["n"],
                "k": r["k"],
                "batch": r["batch"],
                "params": r["params"],
                "context": r["context"],
                "measured_time_s": measured,
                "predicted_time_s": predicted,
                "roofline_time_s": roofline,
                "model_error": abs(predicted - measured) / measured if predicted else None,
                "roofline_error": abs(roofline - measured) / measured if roofline else None,
                "dominant_effect": dominant,
            }
        )
    usable = [r for r in out if r["predicted_time_s"] and r["roofline_time_s"]]
    summary = (
        error_summary(
            [r["measured_time_s"] for r in usable],
            [r["predicted_time_s"] for r in usable],
            [r["roofline_time_s"] for r in usable],
        )
        if usable
        else None
    )
    return TraceReconciliation(trace=trace.name, gpu=g.name, rows=tuple(out), summary=summary)


# -- the model against every shipped trace ------------------------------------------------
@dataclass(frozen=True)
class ModelErrorReport(ResultMixin):
    """The model and a plain roofline against every GEMM of some traces.

    ``groups`` holds one dict per (trace, GPU, dtype): the keys of :class:`ErrorSummary`
    plus ``trace``, ``gpu``, ``dtype`` and ``context``; ``overall`` summarises every GEMM
    together. Predictions are recomputed with today's model, each row in its own timing
    context, cache state and beta (:func:`model_options`): like is compared with like.
    """

    traces: tuple[str, ...]
    groups: tuple[dict[str, Any], ...]
    overall: ErrorSummary

    def _title(self) -> str:
        return f"Model vs published and recorded measurements ({self.overall.count} GEMMs)"

    def _rows(self) -> list[tuple[str, str]]:
        return [("traces", ", ".join(self.traces)), *self.overall._rows()]

    def table(self) -> str:
        """One line per trace, GPU and dtype."""
        head = (
            f"{'trace':<24} {'gpu':<15} {'dtype':<8} {'context':<12} {'GEMMs':>5}  "
            f"{'model median / p90 / worst':>28}  {'roofline median / p90 / worst':>31}  "
            f"{'meas/model':>10}"
        )
        lines = [head, "-" * len(head)]
        for g in self.groups:
            model = (
                f"{g['model_median_error']:.1%} / {g['model_p90_error']:.1%} / "
                f"{g['model_worst_error']:.1%}"
            )
            roof = (
                f"{g['roofline_median_error']:.1%} / {g['roofline_p90_error']:.1%} / "
                f"{g['roofline_worst_error']:.1%}"
            )
            lines.append(
                f"{g['trace']:<24} {g['gpu']:<15} {g['dtype']:<8} {g['context']:<12} "
                f"{g['count']:>5}  "
                f"{model:>28}  {roof:>31}  {g['median_measured_over_predicted']:>10.2f}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return super().__str__() + "\n\n" + self.table()


def _load_named(name: Any) -> Trace:
    """load_trace() for one of model_error_report's 'traces': its errors name that parameter."""
    try:
        return load_trace(name)
    except InvalidParameter as exc:
        text = str(exc)
        if text.startswith("'name' "):
            raise InvalidParameter("'traces'" + text[len("'name'") :]) from None
        raise


def model_error_report(traces: Iterable[str | Trace] | None = None) -> ModelErrorReport:
    """Median, p90 and worst time error of the model and of the plain roofline on every
    GEMM of the given traces (default: every shipped trace), by trace, GPU and dtype.

    >>> report = model_error_report(["xla_h100-sxm"])
    >>> report.overall.model_median_error < report.overall.roofline_median_error
    True
    """
    if isinstance(traces, (str, Path, Trace)):  # one trace, not a sequence of characters
        traces = [traces]
    chosen = list_traces() if traces is None else list(traces)
    if not chosen:
        raise InvalidParameter("'traces' must name at least one trace (got none)")
    loaded = [t if isinstance(t, Trace) else _load_named(t) for t in chosen]
    groups: list[dict[str, Any]] = []
    measured_all: list[float] = []
    predicted_all: list[float] = []
    roof_all: list[float] = []
    for tr in loaded:
        g = tr.model_gpu()
        rows = _gemm_rows(tr, None, None)
        pred_all, roof_all_tr = predict_rows(rows, g)
        for dt in dict.fromkeys(r["dtype"] for r in rows):
            idx = [i for i, r in enumerate(rows) if r["dtype"] == dt]
            meas = [rows[i]["measured_time_s"] for i in idx]
            pred = pred_all[idx].tolist()
            roof = roof_all_tr[idx].tolist()
            summary = error_summary(meas, pred, roof)
            contexts = ", ".join(dict.fromkeys(rows[i]["context"] for i in idx))
            groups.append(
                {
                    "trace": tr.name,
                    "gpu": g.name,
                    "dtype": dt,
                    "context": contexts,
                    **summary.to_dict(),
                }
            )
            measured_all += meas
            predicted_all += pred
            roof_all += roof
    if not measured_all:
        raise InvalidParameter(
            f"'traces' must hold GEMM measurements (got {', '.join(t.name for t in loaded)})"
        )
    return ModelErrorReport(
        traces=tuple(t.name for t in loaded),
        groups=tuple(groups),
        overall=error_summary(measured_all, predicted_all, roof_all),
    )


# -- measured points for plots -------------------------------------------------------------
@functools.cache
def _shipped(name: str) -> Trace:
    """A shipped trace, loaded once per session (the files do not change)."""
    return load_trace(name)


@functools.lru_cache(maxsize=64)
def _measured_table(gpu_name: str, dtype_name: str) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    names: list[str] = []
    for name in list_traces():
        tr = _shipped(name)
        try:
            if tr.model_gpu().name != gpu_name:
                continue
        except DlperfError:
            continue
        picked = _gemm_rows(tr, None, dtype_name)
        rows += picked
        if picked:
            names.append(name)
    cols: dict[str, Any] = {
        c: np.array([r[c] or 1 for r in rows], dtype=np.int64) for c in ("m", "n", "k", "batch")
    }
    cols["beta"] = np.array([float(r.get("beta") or 0.0) for r in rows])
    cols["context"] = np.array([r["context"] for r in rows], dtype=object)
    for c in ("measured_time_s", "flops", "bytes"):
        cols[c] = np.array([float(r[c] or 0.0) for r in rows])
    cols["traces"] = tuple(names)
    return cols


def measured_gemms(gpu: str | Gpu, dtype: str) -> dict[str, Any]:
    """Every shipped GEMM measurement on ``gpu`` in ``dtype``, as arrays.

    Keys: ``m``, ``n``, ``k``, ``batch``, ``beta``, ``context``, ``measured_time_s``, ``flops``,
    ``bytes`` (numpy arrays, one entry per measurement) and ``traces`` (the names of the
    traces they come from). Empty arrays when no trace has any.
    """
    return dict(_measured_table(_gpu_of(gpu).name, _dtype(dtype).name))


def measured_along(
    gpu: str | Gpu, dtype: str, dim: str, m: int, n: int, k: int, lo: int, hi: int
) -> dict[str, Any]:
    """Shipped measurements of unbatched GEMMs whose ``dim`` lies in [lo, hi] and whose
    other two sizes equal the given ones: ``x``, ``time_s`` and ``traces`` (for a sweep)."""
    t = measured_gemms(gpu, dtype)
    dim = check_choice("dim", dim, ("m", "n", "k"))
    fixed = {"m": m, "n": n, "k": k}
    sel = (t["batch"] == 1) & (t[dim] >= lo) & (t[dim] <= hi)
    for other in ("m", "n", "k"):
        if other != dim:
            sel &= t[other] == fixed[other]
    return {"x": t[dim][sel], "time_s": t["measured_time_s"][sel], "traces": t["traces"]}


# -- the model's tile against the one cuBLAS chose ----------------------------------------------
_KERNEL_TILE = re.compile(r"(?:sgemm_|tilesize)(\d+)x(\d+)")


def kernel_tile(params: str) -> tuple[int, int] | None:
    """The output tile of the GEMM kernel a trace row names in ``params`` ('kernel=...'):
    ``ampere_sgemm_128x64_tn`` -> (128, 64); None when the row names no kernel."""
    for part in str(params or "").split(";"):
        if part.startswith("kernel="):
            hit = _KERNEL_TILE.search(part)
            if hit:
                return int(hit.group(1)), int(hit.group(2))
    return None


@dataclass(frozen=True)
class TileAgreement(ResultMixin):
    """How often the model picks the tile cuBLAS chose, over the rows that name a kernel.

    A tile matches when its two sides are the kernel's, in either order (a column-major
    library tiles the transposed product); ``split_k_agreement`` is the share of rows where
    the model and cuBLAS agree on whether K is split (a grid z above 1 in an unbatched
    call, or a reduction kernel).
    """

    traces: tuple[str, ...]
    rows: int
    agreement: float
    split_k_agreement: float
    by_trace: dict[str, float]

    def _title(self) -> str:
        return f"Model tile vs cuBLAS's choice ({self.rows} profiled GEMMs)"

    def _rows(self) -> list[tuple[str, str]]:
        out = [
            ("same tile", f"{self.agreement:.1%}"),
            ("same split-K choice", f"{self.split_k_agreement:.1%}"),
        ]
        out += [(name, f"{share:.1%}") for name, share in self.by_trace.items()]
        return out


def tile_agreement(traces: Iterable[str | Trace] | None = None) -> TileAgreement:
    """The share of profiled rows (``params`` naming a kernel) where the model's tile is the
    one cuBLAS launched; default: every shipped trace with such rows."""
    chosen = list_traces() if traces is None else list(traces)
    loaded = [t if isinstance(t, Trace) else load_trace(t) for t in chosen]
    same, split_same, total = 0, 0, 0
    by_trace: dict[str, float] = {}
    names = []
    for tr in loaded:
        rows = [r for r in _gemm_rows(tr, None, None) if kernel_tile(r["params"])]
        if not rows:
            continue
        g = tr.model_gpu()
        hits = 0
        for dt in dict.fromkeys(r["dtype"] for r in rows):
            sel = [r for r in rows if r["dtype"] == dt]
            m, n, k, b = (
                np.array([r[c] or 1 for r in sel], dtype=np.int64) for c in ("m", "n", "k", "batch")
            )
            s = gemm_sweep(m, n, k, dtype=dt, gpu=g, batch=b)
            for r, tile, split, kernels in zip(
                sel,
                np.atleast_1d(s.tile),
                np.atleast_1d(s.split_k),
                np.atleast_1d(s.kernels),
                strict=True,
            ):
                want = kernel_tile(r["params"])
                got = tuple(int(x) for x in str(tile).split("x")) if "x" in str(tile) else None
                hits += got is not None and sorted(got) == sorted(want or ())
                grid = dict(p.split("=", 1) for p in r["params"].split(";") if "=" in p).get(
                    "grid", ""
                )
                z = int(grid.split("x")[-1]) if grid else 1
                theirs = "splitkreduce" in r["params"] or ((r["batch"] or 1) == 1 and z > 1)
                split_same += theirs == (int(split) > 1 or int(kernels) > 1)
        same += hits
        total += len(rows)
        by_trace[tr.name] = hits / len(rows)
        names.append(tr.name)
    if not total:
        raise InvalidParameter("'traces' must hold rows that name a GEMM kernel (got none)")
    return TileAgreement(
        traces=tuple(names),
        rows=total,
        agreement=same / total,
        split_k_agreement=split_same / total,
        by_trace=by_trace,
    )
