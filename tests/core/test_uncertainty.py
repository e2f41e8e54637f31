"""Guards core/uncertainty.py: the error bands around predicted GEMM times."""

from __future__ import annotations

import csv
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from dlperf_widgets import gemm, gemm_sweep
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.uncertainty import (
    BOUNDS,
    COVERAGE,
    band_ratios,
    band_rows_csv,
    error_band,
    fit_bands,
    format_time_range,
    parse_bands,
)
from dlperf_widgets.live.error_bands import trace_residuals

ROOT = Path(__file__).resolve().parents[2]
BANDS = ROOT / "dlperf_widgets" / "core" / "data" / "error_bands.csv"


def _shipped_rows() -> list[dict[str, str]]:
    lines = [ln for ln in BANDS.read_text().splitlines() if ln and not ln.startswith("#")]
    return list(csv.DictReader(lines))


def _tool():
    spec = importlib.util.spec_from_file_location(
        "make_error_bands", ROOT / "tools" / "make_error_bands.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bands_cover_the_stated_share_of_held_out_rows():
    """Bands built from a random half of the shipped traces' GEMMs hold about the stated
    share (80 %) of the other half. Over 6 random splits: on average within 4 points, every
    split within 8 points, and each (architecture, dtype class) on average within 8 points
    (a class holds 80 to 230 held-out rows: a binomial spread of 3 to 5 points; a class of
    fewer than 40, such as the 16 sustained-loop GEMMs of two Ada boards, spreads by more than
    8 points by chance alone and is left out of that last check)."""
    res = trace_residuals()
    n = res["measured_time_s"].size
    assert n >= 500
    codes = np.select([res["bound"] == b for b in BOUNDS], range(len(BOUNDS)))
    totals, by_class = [], {}
    for seed in range(6):
        train = np.random.default_rng(seed).permutation(n) < n // 2
        test = ~train
        rows = fit_bands(
            *(
                res[key][train]
                for key in ("architecture", "dtype_class", "bound", "predicted_time_s")
            ),
            res["measured_time_s"][train],
            res["gpu"][train],
        )
        table = parse_bands(f"# coverage: {COVERAGE * 100:.0f} %\n" + band_rows_csv(rows))
        inside = np.zeros(n, dtype=bool)
        for arch, dcl in set(zip(res["architecture"][test], res["dtype_class"][test], strict=True)):
            sel = test & (res["architecture"] == arch) & (res["dtype_class"] == dcl)
            lo, hi = band_ratios(table, arch, dcl, codes[sel], res["predicted_time_s"][sel])
            ratio = res["measured_time_s"][sel] / res["predicted_time_s"][sel]
            inside[sel] = (ratio >= lo) & (ratio <= hi)
            if sel.sum() >= 40:
                by_class.setdefault((arch, dcl), []).append(inside[sel].mean())
        totals.append(inside[test].mean())
        assert abs(totals[-1] - COVERAGE) <= 0.08, (seed, totals[-1])
    assert abs(np.mean(totals) - COVERAGE) <= 0.04, totals
    for key, shares in by_class.items():
        assert abs(np.mean(shares) - COVERAGE) <= 0.08, (key, shares)


def test_shipped_bands_match_todays_model_and_traces():
    """error_bands.csv is what tools/make_error_bands.py builds from today's model and the
    shipped traces: a change of either without rebuilding the bands fails here (fix: run
    python tools/make_error_bands.py)."""
    built = _tool().build()
    body = [ln for ln in built.splitlines() if not ln.startswith("# model:")]
    shipped = [ln for ln in BANDS.read_text().splitlines() if not ln.startswith("# model:")]
    assert shipped == body, "error_bands.csv is stale: run python tools/make_error_bands.py"


def test_shipped_band_limits_are_the_residual_order_statistics():
    """A regime row of the shipped file holds the order statistics of rank
    floor((n + 1) 0.1) and ceil((n + 1) 0.9) of measured / predicted over that regime's GEMMs,
    recomputed here by sorting, and they lie within two ranks of numpy's 10th and 90th
    percentiles."""
    res = trace_residuals()
    row = next(r for r in _shipped_rows() if r["bound"] != "*" and r["size_band"] != "*")
    pred = res["predicted_time_s"]
    edges = {
        "under 10 us": (0, 10e-6),
        "10-100 us": (10e-6, 100e-6),
        "0.1-1 ms": (100e-6, 1e-3),
        "over 1 ms": (1e-3, np.inf),
    }
    lo_t, hi_t = edges[row["size_band"]]
    sel = (
        (res["architecture"] == row["architecture"])
        & (res["dtype_class"] == row["dtype_class"])
        & (res["bound"] == row["bound"])
        & (pred >= lo_t)
        & (pred < hi_t)
    )
    ratio = np.sort(res["measured_time_s"][sel] / pred[sel])
    count = int(sel.sum())
    assert int(row["rows"]) == count
    lo_rank, hi_rank = int(np.floor((count + 1) * 0.1)), int(np.ceil((count + 1) * 0.9))
    assert float(row["low_ratio"]) == pytest.approx(ratio[lo_rank - 1], abs=1e-4)
    assert float(row["high_ratio"]) == pytest.approx(ratio[hi_rank - 1], abs=1e-4)
    # numpy interpolates at rank 0.1 (n - 1) + 1: within two ranks of the band's ends
    assert ratio[max(lo_rank - 3, 0)] <= np.percentile(ratio, 10) <= ratio[lo_rank + 1]
    assert ratio[hi_rank - 3] <= np.percentile(ratio, 90) <= ratio[min(hi_rank + 1, count - 1)]


def test_gpu_without_a_trace_gets_the_widest_band_and_says_so():
    """The A100 (no shipped trace) gets the 'widest' row's ratios, no narrower than any
    regime's, and its basis names the missing trace."""
    rows = _shipped_rows()
    widest = next(r for r in rows if r["architecture"] == "widest")
    assert float(widest["low_ratio"]) == min(float(r["low_ratio"]) for r in rows)
    assert float(widest["high_ratio"]) == max(float(r["high_ratio"]) for r in rows)
    r = gemm(4096, 4096, 4096, dtype="fp16", gpu="A100")
    assert r.time_low_s == pytest.approx(r.predicted_time_s * float(widest["low_ratio"]))
    assert r.time_high_s == pytest.approx(r.predicted_time_s * float(widest["high_ratio"]))
    assert "widest band" in r.band_basis and "no shipped trace of ampere_ga100" in r.band_basis


def test_traced_gpu_band_names_its_rows():
    """An H100 bf16 GEMM's band rests on Hopper rows that include the H100-SXM's (its
    regime pools the H100 and H200 traces) and says how many; the printed
    prediction carries the range and the basis, as the CLI shows it."""
    r = gemm(4096, 4096, 4096, dtype="bf16", gpu="H100-SXM")
    assert r.time_low_s < r.time_high_s
    assert r.band_basis.startswith("80 % band from ") and "H100-SXM" in r.band_basis
    assert re.search(r"\d+ [\w, -]*H100-SXM[\w, -]* rows", r.band_basis)
    assert r.band_basis in str(r) and format_time_range(r.time_low_s, r.time_high_s) in str(r)
    other = gemm(4096, 4096, 4096, dtype="bf16", gpu="H100-PCIe")
    assert "none of H100-PCIe itself" in other.band_basis


def test_sweep_bands_equal_scalar_bands():
    """gemm_sweep's band arrays give, shape by shape, the band gemm() gives alone."""
    m = np.array([64, 512, 4096, 16384])
    s = gemm_sweep(m, 4096, 1024, dtype="bf16", gpu="H100-SXM")
    for i, mi in enumerate(m):
        r = gemm(int(mi), 4096, 1024, dtype="bf16", gpu="H100-SXM")
        assert s.time_low_s[i] == pytest.approx(r.time_low_s)
        assert s.time_high_s[i] == pytest.approx(r.time_high_s)
        assert s.band_basis[s.band_index[i]] == r.band_basis


def test_error_band_is_proportional_to_the_time_within_a_regime():
    """Within one regime the band scales with the prediction (the ratios are constants)."""
    b = error_band("V100", "fp32", ["math", "math"], [2e-3, 4e-3])
    assert b.low_s[1] == pytest.approx(2 * b.low_s[0])
    assert b.high_s[1] == pytest.approx(2 * b.high_s[0])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"bound": "compute", "predicted_time_s": 1e-3}, "bound"),
        ({"bound": "math", "predicted_time_s": -1.0}, "predicted_time_s"),
        ({"bound": "math", "predicted_time_s": float("nan")}, "predicted_time_s"),
        ({"bound": "math", "predicted_time_s": "1 ms"}, "predicted_time_s"),
    ],
)
def test_error_band_rejects_bad_input(kwargs, name):
    """Bad bounds and times are refused in one sentence naming the parameter."""
    with pytest.raises(InvalidParameter, match=f"^'{name}' must be"):
        error_band("H100-SXM", "bf16", **kwargs)
