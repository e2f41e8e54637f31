"""How far off a predicted GEMM time may be: error bands learned from shipped measurements.

A prediction is one number; the measurements the model was checked against scatter around
it. For every regime (GPU architecture, dtype class, what sets the predicted time and the
size of that time) ``data/error_bands.csv`` holds two order statistics of measured /
predicted over the shipped traces' GEMMs, ``low_ratio`` and ``high_ratio``, chosen so that a
new measurement of the regime falls between them with at least the :data:`COVERAGE` chance
(:func:`band_limits`). A prediction's band is its time times those two ratios.

A regime with fewer than the file's minimum rows shares one band with the other thin
regimes of its architecture and dtype class, made of their rows together. A GPU
whose architecture has no shipped trace in that dtype class, and a GPU the model prices with
a local calibration (the shipped residuals describe the shipped constants), get the widest
band of any regime, and the band's basis says so.

The file is made by ``python tools/make_error_bands.py`` (see its header); these bands are
measurements' scatter around today's model, so the file must be remade whenever the model or
the traces change (``tests/core/test_uncertainty.py`` fails until it is).
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from ._validate import as_floats, describe
from .dtypes import Dtype
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gpus import Gpu
from .gpus import gpu as _gpu
from .results import ResultMixin

__all__ = [
    "BOUNDS",
    "COVERAGE",
    "DTYPE_CLASSES",
    "MIN_ROWS",
    "SIZE_BANDS",
    "BandTable",
    "ErrorBand",
    "band_limits",
    "band_ratios",
    "band_rows_csv",
    "dtype_class",
    "error_band",
    "error_band_for",
    "fit_bands",
    "format_time_range",
    "parse_bands",
    "size_band_codes",
]

COVERAGE = 0.80
"""Share of measurements a band is built to hold: from the 10th to the 90th percentile of
measured / predicted."""

MIN_ROWS = 30
"""Fewest measurements a regime needs for its own band (fewer: a coarser regime's band)."""

BOUNDS = ("math", "memory", "latency")  # the model's time_limiter codes 0, 1, 2
# Predicted-time bands: a kernel's fixed cost dominates under 10 us; the edges are decades.
SIZE_EDGES_S = (10e-6, 100e-6, 1e-3)
SIZE_BANDS = ("under 10 us", "10-100 us", "0.1-1 ms", "over 1 ms")

DTYPE_CLASSES = {
    "tensor16": "16-bit Tensor Core",
    "tensor32": "TF32 Tensor Core",
    "tensor8": "8-bit Tensor Core",
    "cuda": "CUDA-core (SIMT)",
}
ANY = "*"
WIDEST = "widest"


def dtype_class(unit: str, dtype_name: str) -> str:
    """The dtype class a band is kept for: the unit and width that set a kernel's speed."""
    if unit != "tensor":
        return "cuda"
    if dtype_name == "tf32":
        return "tensor32"
    if dtype_name in ("fp16", "bf16"):
        return "tensor16"
    return "tensor8"


def size_band_codes(predicted_time_s: Any) -> Any:
    """Index into :data:`SIZE_BANDS` of each predicted time (vectorised)."""
    return np.searchsorted(np.asarray(SIZE_EDGES_S), np.asarray(predicted_time_s), side="right")


# -- building the table (tools/make_error_bands.py) ----------------------------------------
def band_limits(ratio: Any, coverage: float = COVERAGE) -> tuple[float, float]:
    """The band of ``coverage`` from n measured / predicted ratios: the order statistics of
    rank floor((n + 1) a) and ceil((n + 1) (1 - a)), a = (1 - coverage) / 2. For a new
    measurement drawn like these, the chance it falls inside is at least ``coverage`` (the
    split-conformal rule, Lei et al. 2018, "Distribution-free predictive inference for
    regression", JASA); plain percentiles of 30 rows would hold about 75 %."""
    r = np.sort(np.asarray(ratio, dtype=np.float64))
    n = r.size
    a = (1 - coverage) / 2
    # a = 0.1 is 0.09999999999999998 in floating point: (n + 1) a must not fall just short
    # of a whole rank (n = 89 would give rank 8 instead of 9)
    lo_rank = max(int(np.floor((n + 1) * a + 1e-9)), 1)
    hi_rank = min(int(np.ceil((n + 1) * (1 - a) - 1e-9)), n)
    return float(r[lo_rank - 1]), float(r[hi_rank - 1])


def _quantile_row(
    arch: str, dclass: str, bound: str, size: str, ratio: Any, gpus: Iterable[str], cov: float
) -> dict[str, Any]:
    lo, hi = band_limits(ratio, cov)
    med = np.median(ratio)
    return {
        "architecture": arch,
        "dtype_class": dclass,
        "bound": bound,
        "size_band": size,
        "rows": int(np.size(ratio)),
        "low_ratio": float(lo),
        "median_ratio": float(med),
        "high_ratio": float(hi),
        "gpus": ";".join(sorted(set(gpus))),
    }


def fit_bands(
    architecture: Sequence[str],
    dtype_classes: Sequence[str],
    bound: Sequence[str],
    predicted_time_s: Any,
    measured_time_s: Any,
    gpus: Sequence[str],
    *,
    coverage: float = COVERAGE,
    min_rows: int = MIN_ROWS,
) -> list[dict[str, Any]]:
    """Band rows from residuals, per architecture and dtype class: one per regime (bound,
    size band) with at least ``min_rows`` measurements; one (bound and size '*') for the
    rows of the other regimes together (every row of the class when those are fewer than
    ``min_rows``); and the ``widest`` row: the lowest low and highest high ratio of all."""
    arch = np.asarray(architecture, dtype=object)
    dcl = np.asarray(dtype_classes, dtype=object)
    bnd = np.asarray(bound, dtype=object)
    pred = np.asarray(predicted_time_s, dtype=np.float64)
    ratio = np.asarray(measured_time_s, dtype=np.float64) / pred
    size = np.asarray(SIZE_BANDS, dtype=object)[size_band_codes(pred)]
    names = np.asarray(gpus, dtype=object)
    out: list[dict[str, Any]] = []
    for a, c in sorted(set(zip(arch.tolist(), dcl.tolist(), strict=True))):
        base = (arch == a) & (dcl == c)
        rest = base.copy()  # rows of regimes too thin for a band of their own
        for b in BOUNDS:
            for s in SIZE_BANDS:
                sel = base & (bnd == b) & (size == s)
                if int(sel.sum()) >= min_rows:
                    out.append(_quantile_row(a, c, b, s, ratio[sel], names[sel], coverage))
                    rest &= ~sel
        # The other regimes share one band, made of their own rows: pooling every row would
        # let the well-measured regimes set it. Too few of those: every row of the class.
        pool = rest if int(rest.sum()) >= min_rows else base
        if int(pool.sum()) >= min_rows:
            out.append(_quantile_row(a, c, ANY, ANY, ratio[pool], names[pool], coverage))
    if out:
        out.append(
            {
                "architecture": WIDEST,
                "dtype_class": ANY,
                "bound": ANY,
                "size_band": ANY,
                "rows": int(ratio.size),
                "low_ratio": min(r["low_ratio"] for r in out),
                "median_ratio": float(np.median(ratio)),
                "high_ratio": max(r["high_ratio"] for r in out),
                "gpus": ";".join(sorted(set(names.tolist()))),
            }
        )
    return out


COLUMNS = (
    "architecture",
    "dtype_class",
    "bound",
    "size_band",
    "rows",
    "low_ratio",
    "median_ratio",
    "high_ratio",
    "gpus",
)


def band_rows_csv(rows: Iterable[dict[str, Any]]) -> str:
    """The CSV body (header line and rows) of :func:`fit_bands` rows."""
    lines = [",".join(COLUMNS)]
    for r in rows:
        lines.append(
            f"{r['architecture']},{r['dtype_class']},{r['bound']},{r['size_band']},{r['rows']},"
            f"{r['low_ratio']:.4f},{r['median_ratio']:.4f},{r['high_ratio']:.4f},{r['gpus']}"
        )
    return "\n".join(lines) + "\n"


# -- reading and lookup ---------------------------------------------------------------------
@dataclass(frozen=True)
class BandTable:
    """Band rows keyed by (architecture, dtype_class, bound, size_band), and their coverage."""

    coverage: float
    rows: dict[tuple[str, str, str, str], dict[str, Any]]


def _parse(records: Iterable[dict[str, str]], coverage: float) -> BandTable:
    rows = {}
    for r in records:
        key = (r["architecture"], r["dtype_class"], r["bound"], r["size_band"])
        rows[key] = {
            "rows": int(r["rows"]),
            "low_ratio": float(r["low_ratio"]),
            "high_ratio": float(r["high_ratio"]),
            "gpus": tuple(g for g in r["gpus"].split(";") if g),
        }
    return BandTable(coverage, rows)


def parse_bands(text: str) -> BandTable:
    """A band table from the text of an error_bands.csv (its '# coverage:' line included)."""
    coverage = COVERAGE
    for line in text.splitlines():
        if line.startswith("# coverage:"):
            coverage = float(line.split(":", 1)[1].split()[0]) / 100
    body = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return _parse(csv.DictReader(body), coverage)


@functools.lru_cache(maxsize=1)
def _table() -> BandTable:
    path = resources.files("dlperf_widgets.core.data").joinpath("error_bands.csv")
    if not path.is_file():  # before tools/make_error_bands.py first ran: every band unknown
        return BandTable(COVERAGE, {})
    return parse_bands(path.read_text("utf-8"))


@dataclass(frozen=True)
class ErrorBand(ResultMixin):
    """The band around predicted times: ``low_s`` and ``high_s`` (arrays for arrays),
    the ``coverage`` it is built to hold, and ``basis``, one short sentence per distinct
    regime (``basis_index`` picks each time's sentence)."""

    low_s: Any
    high_s: Any
    coverage: float
    basis: tuple[str, ...]
    basis_index: Any


def format_time_range(low_s: float, high_s: float) -> str:
    """'0.98-1.45 ms': both ends in the unit of the upper one."""
    if not (np.isfinite(low_s) and np.isfinite(high_s)):
        return "no band"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if high_s >= scale or unit == "ns":
            return f"{low_s / scale:.3g}-{high_s / scale:.3g} {unit}"
    return "no band"  # unreachable: the loop ends with 'ns'


def _describe(
    row: dict[str, Any], gpu_name: str, dclass: str, bound: str, size: str, cov: float
) -> str:
    traced = ", ".join(row["gpus"])
    own = "" if gpu_name in row["gpus"] else f"; none of {gpu_name} itself"
    where = ", ".join(x for x in (DTYPE_CLASSES[dclass], f"{bound}-bound", size) if ANY not in x)
    if bound == ANY:
        where += "; this regime has too few rows for a band of its own"
    return f"{cov * 100:.0f} % band from {row['rows']} {traced} rows ({where}{own})"


@functools.lru_cache(maxsize=256)
def _regime_table(
    gpu_name: str, architecture: str, dclass: str, local: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    return _cells(_table(), gpu_name, architecture, dclass, local)


def _cells(
    t: BandTable, gpu_name: str, architecture: str, dclass: str, local: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """(low ratio, high ratio, sentence index) per (bound, size) cell as 3 x 4 arrays, and
    the sentences saying what each band rests on."""
    widest = t.rows.get((WIDEST, ANY, ANY, ANY))
    low = np.full((len(BOUNDS), len(SIZE_BANDS)), np.nan)
    high = low.copy()
    idx = np.zeros(low.shape, dtype=np.int64)
    sentences: list[str] = []
    for i, b in enumerate(BOUNDS):
        for j, s in enumerate(SIZE_BANDS):
            row, shown = None, (b, s)
            for key in () if local else ((b, s), (ANY, ANY)):
                row, shown = t.rows.get((architecture, dclass, *key)), key
                if row is not None:
                    break
            if row is not None:
                text = _describe(row, gpu_name, dclass, *shown, t.coverage)
            else:
                row = widest
                why = (
                    "the model uses a local calibration, which the shipped traces do not describe"
                    if local
                    else f"no shipped trace of {architecture} GPUs has enough "
                    f"{DTYPE_CLASSES[dclass]} rows"
                )
                text = f"widest band of any regime: {why}"
            if row is not None:
                low[i, j], high[i, j] = row["low_ratio"], row["high_ratio"]
            if text not in sentences:
                sentences.append(text)
            idx[i, j] = sentences.index(text)
    return low, high, idx, tuple(sentences)


def error_band(
    gpu: str | Gpu,
    dtype: str | Dtype,
    bound: Any,
    predicted_time_s: Any,
    *,
    local: str = "",
) -> ErrorBand:
    """The band around predicted times of GEMMs on ``gpu`` in ``dtype`` (vectorised).

    ``bound`` is the model's ``time_limiter`` ('math', 'memory', 'latency'), a string or an
    array of them; ``local`` names a local calibration the model used (widest band).

    >>> b = error_band("H100-SXM", "bf16", "math", 1e-3)
    >>> b.low_s < 1e-3 < b.high_s
    True
    """
    g = _gpu(gpu)
    d = _dtype(dtype)
    unit = g.unit_for(d) if g.supports(d) else "cuda"
    b = np.asarray(bound)
    bad = ~np.isin(b, BOUNDS)
    if bad.any():
        raise InvalidParameter(
            f"'bound' must be one of {', '.join(BOUNDS)} (got {describe(b[bad].flat[0].item())})"
        )
    codes = np.select([b == name for name in BOUNDS], range(len(BOUNDS)))
    t = as_floats("predicted_time_s", predicted_time_s, "positive finite number(s)")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise InvalidParameter(
            f"'predicted_time_s' must be positive finite number(s) (got {describe(predicted_time_s)})"
        )
    return _band(g, d.name, unit, codes, t if t.ndim else float(t), local)


def band_ratios(
    table: BandTable, architecture: str, dclass: str, bound_codes: Any, predicted_time_s: Any
) -> tuple[Any, Any]:
    """(low, high) ratios of ``table`` for each prediction, by the lookup the model uses;
    for checking bands built from part of the traces on the rest of them."""
    low, high, _, _ = _cells(table, "", architecture, dclass, "")
    sizes = size_band_codes(predicted_time_s)
    codes = np.asarray(bound_codes)
    return low[codes, sizes], high[codes, sizes]


def error_band_for(g: Gpu, d: Dtype, bound_codes: Any, predicted: Any, basis: str) -> ErrorBand:
    """:func:`error_band` for the GEMM model: ``bound_codes`` index :data:`BOUNDS`;
    ``basis`` is the calibration's (a local one gets the widest band)."""
    unit = g.unit_for(d) if g.supports(d) else "cuda"
    local = "local" if basis.startswith("local") else ""
    return _band(g, d.name, unit, np.asarray(bound_codes), predicted, local)


def _band(g: Gpu, dname: str, unit: str, codes: Any, predicted: Any, local: str) -> ErrorBand:
    low, high, idx, sentences = _regime_table(
        g.name, g.architecture, dtype_class(unit, dname), local
    )
    t = np.asarray(predicted, dtype=np.float64)
    sizes = size_band_codes(t)
    lo, hi, which = low[codes, sizes], high[codes, sizes], idx[codes, sizes]
    if t.ndim == 0:
        return ErrorBand(float(lo * t), float(hi * t), _table().coverage, sentences, int(which))
    return ErrorBand(lo * t, hi * t, _table().coverage, sentences, which)
