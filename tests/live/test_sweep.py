"""Guards live/sweep.py and live/reconcile.py: sweeps measure every value (or stop at their
budget and say so), report progress, join the model; the reconciliation splits the gap
between a plain roofline and the model (and a measurement) into effects that add up."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gemm import gemm, gemm_sweep
from dlperf_widgets.live import sweep as sweep_mod
from dlperf_widgets.live.reconcile import error_summary, reconcile, reconcile_gemm, relative_error

FAST = {"device": "cpu", "repeats": 2, "warmup": 0, "flush_l2": False, "progress": False}


# -- reconciliation (pure model, no torch needed) -----------------------------------------
def test_plain_roofline_is_max_of_math_and_memory():
    """The roofline of 8192 x 128 x 8192 fp16 on V100 is max(FLOPs/125 TFLOPS, bytes/900 GB/s)
    (the slides' example: AI 124.1 < 138.9, so memory-bound)."""
    r = reconcile_gemm(8192, 128, 8192, dtype="fp16", gpu="V100")
    flops = 2 * 8192 * 128 * 8192
    nbytes = (8192 * 8192 + 8192 * 128 + 8192 * 128) * 2
    assert r.roofline_time_s == pytest.approx(max(flops / 125.3e12, nbytes / 900e9), rel=0.01)
    assert r.roofline_time_s == pytest.approx(nbytes / 900e9)


@pytest.mark.parametrize(
    ("m", "n", "k", "gpu"),
    [
        (8192, 8192, 8192, "H100"),
        (4097, 4096, 4096, "A100"),
        (8192, 128, 8192, "V100"),
        (1000, 1000, 1000, "T4"),
        (64, 64, 16, "A100"),
        (128, 128, 65536, "H100"),
    ],
)
def test_effects_add_up_to_the_model(m, n, k, gpu):
    """The steps roofline -> +tile -> +wave -> +shape -> +alignment end exactly at the
    model's prediction, each step's time is the previous plus what it adds, and the
    shares of the gap sum to one when there is a gap."""
    model = gemm(m, n, k, dtype="fp16", gpu=gpu)
    r = reconcile(model)
    assert r.effects[-1].time_s == pytest.approx(model.predicted_time_s, rel=1e-12)
    total = sum(e.added_time_s for e in r.effects)
    assert total == pytest.approx(model.predicted_time_s, rel=1e-12)
    shares = [e.share_of_gap for e in r.effects if e.share_of_gap is not None]
    if model.predicted_time_s > r.roofline_time_s * (1 + 1e-9):
        assert sum(shares) == pytest.approx(1.0)
    assert all(e.added_time_s >= -1e-18 for e in r.effects)


def test_misaligned_k_is_attributed_to_alignment():
    """K = 4097 in fp16 (not a multiple of 8) on A100: the alignment step carries the gap."""
    r = reconcile_gemm(4096, 4096, 4097, dtype="fp16", gpu="A100")
    assert r.dominant_effect == "alignment"
    step = next(e for e in r.effects if e.effect == "alignment")
    assert step.efficiency == pytest.approx(0.5)


def test_wave_quantization_is_attributed_to_waves():
    """A math-bound GEMM whose 288 256x128 tiles fill 3.6 waves (V100, 80 SMs) loses time to
    the wave step, more than to any other quantization effect."""
    model = gemm(4096, 2304, 8192, dtype="fp16", gpu="V100")
    assert (model.tile, model.tiles, model.waves) == ("256x128", 288, 4)
    assert model.wave_efficiency < 1
    r = reconcile(model)
    steps = {e.effect: e for e in r.effects}
    assert steps["wave"].efficiency == model.wave_efficiency
    assert steps["wave"].added_time_s > 0
    quantization = ("tile", "wave", "tile_shape", "alignment")
    assert max(quantization, key=lambda s: steps[s].added_time_s) == "wave"


def test_measurement_adds_the_unexplained_part():
    """With a measurement the last step is 'unexplained' = measured - model, and the errors
    are |pred - meas| / meas for the model and the roofline."""
    model = gemm(4096, 4096, 4097, dtype="fp16", gpu="A100")
    measured = model.predicted_time_s * 1.2
    r = reconcile(model, measured)
    last = r.effects[-1]
    assert last.effect == "unexplained"
    assert last.added_time_s == pytest.approx(measured - model.predicted_time_s)
    assert r.model_error == pytest.approx(relative_error(model.predicted_time_s, measured))
    assert r.roofline_error == pytest.approx((measured - r.roofline_time_s) / measured)
    assert 0 < r.explained_share < 1
    assert "unexplained" in str(r) and "dominant_effect" in r.to_dict()


def test_error_summary_median_and_worst():
    """Median and worst relative errors, computed by hand for three points."""
    s = error_summary([1.0, 2.0, 4.0], [1.1, 1.8, 4.0], [0.5, 1.0, 2.0])
    assert s.count == 3
    assert s.model_median_error == pytest.approx(0.1)
    assert s.model_worst_error == pytest.approx(0.1)
    assert s.roofline_median_error == pytest.approx(0.5)
    with pytest.raises(InvalidParameter, match="'measured' must be a non-empty sequence"):
        error_summary([], [], [])


def test_reconcile_rejects_a_cpu_timing():
    """A CPU timing has no model; reconciling it says so in one sentence."""
    pytest.importorskip("torch")
    from dlperf_widgets.live.timing import time_gemm

    t = time_gemm(16, 16, 16, dtype="fp32", device="cpu", repeats=1, warmup=0, flush_l2=False)
    with pytest.raises(InvalidParameter, match="'model' must be a GemmResult"):
        reconcile(t)


# -- sweeps (real CPU measurements) -----------------------------------------------------
def test_sweep_measures_every_value_and_reports_progress():
    """Each value is measured once, in order, and the callback sees done/total each time."""
    pytest.importorskip("torch")
    seen = []
    s = sweep_mod.sweep_gemm(
        "k",
        [8, 16, 24],
        m=16,
        n=16,
        dtype="fp32",
        **{**FAST, "progress": lambda done, total, t: seen.append((done, total, t.k))},
    )
    assert s.values == (8, 16, 24) and s.completed and s.stopped_reason == ""
    assert seen == [(1, 3, 8), (2, 3, 16), (3, 3, 24)]
    assert [t.k for t in s.timings] == [8, 16, 24]
    assert s.device == "cpu" and s.model is None and s.predicted_time_s is None
    assert np.all(s.measured_time_s > 0)
    assert [row["k"] for row in s.table()] == [8, 16, 24]


def test_sweep_stops_at_its_budget(monkeypatch):
    """With a clock that advances 1 s per point and a 2.5 s budget, the sweep measures two
    points, stops before the third, and says why."""
    pytest.importorskip("torch")
    clock = {"t": 0.0}

    def fake_time_gemm(m, n, k, **kw):
        clock["t"] += 1.0
        from dlperf_widgets.live.timing import time_gemm

        return time_gemm(m, n, k, dtype="fp32", device="cpu", repeats=1, warmup=0, flush_l2=False)

    monkeypatch.setattr(sweep_mod, "time_gemm", fake_time_gemm)
    monkeypatch.setattr(sweep_mod, "time", SimpleNamespace(perf_counter=lambda: clock["t"]))
    s = sweep_mod.sweep_gemm("n", [8, 16, 24, 32], m=8, k=8, time_budget_s=2.5, **FAST)
    assert s.values == (8, 16) and s.requested == 4 and not s.completed
    assert "time budget of 2.5 s reached after 2 of 4 points" in s.stopped_reason
    assert "stopped" in str(s)


def test_sweep_interrupt_keeps_the_points_measured(monkeypatch):
    """A keyboard interrupt ends the sweep cleanly with the points measured so far."""
    pytest.importorskip("torch")
    real = sweep_mod.time_gemm
    count = {"n": 0}

    def interrupting(*a, **kw):
        count["n"] += 1
        if count["n"] == 2:
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(sweep_mod, "time_gemm", interrupting)
    s = sweep_mod.sweep_gemm("m", [8, 16, 24], n=8, k=8, dtype="fp32", **FAST)
    assert s.values == (8,) and "interrupted after 1 of 3" in s.stopped_reason


def test_cpu_sweep_with_a_gpu_model_joins_predictions():
    """With model_gpu, a CPU sweep carries the vectorised model of the same shapes (the
    same numbers as gemm_sweep) and can be reconciled point by point."""
    pytest.importorskip("torch")
    s = sweep_mod.sweep_gemm("n", [64, 72], m=64, k=64, dtype="fp16", model_gpu="A100", **FAST)
    expected = gemm_sweep(64, np.array([64, 72]), 64, dtype="fp16", gpu="A100")
    assert np.allclose(s.predicted_time_s, expected.predicted_time_s)
    rows = s.table()
    assert rows[1]["predicted_time_s"] == pytest.approx(float(expected.predicted_time_s[1]))
    assert rows[0]["measured_over_predicted"] == pytest.approx(
        rows[0]["measured_time_s"] / rows[0]["predicted_time_s"]
    )
    recs = s.reconcile()
    assert len(recs) == 2 and recs[0].measured_time_s == s.timings[0].measured_time_s
    assert "model for A100-SXM4-80GB, measured on the CPU" in str(s)
    assert s.to_dict()["rows"][0]["n"] == 64


def test_sweep_bad_input():
    """A bad dimension, an empty range and a bad size are one clear sentence each."""
    with pytest.raises(InvalidParameter, match=r"'dim' must be one of m, n, k, batch"):
        sweep_mod.sweep_gemm("x", [1], **FAST)
    with pytest.raises(InvalidParameter, match=r"'values' must hold at least one size"):
        sweep_mod.sweep_gemm("k", [], **FAST)
    with pytest.raises(InvalidParameter, match=r"'k' must be a positive integer \(got 0\)"):
        sweep_mod.sweep_gemm("k", [8, 0], **FAST)


def test_text_progress_without_a_notebook(capsys):
    """Outside a notebook the default progress is a text line on stderr."""
    pytest.importorskip("torch")
    sweep_mod.sweep_gemm("k", [8, 16], m=8, n=8, dtype="fp32", **{**FAST, "progress": True})
    err = capsys.readouterr().err
    assert "sweep k: 2/2" in err and "done" in err
