"""Roofline widget: several GEMMs placed by the core on one roofline; text input is checked."""

from __future__ import annotations

import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gemm import gemm
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.widgets import Roofline


def test_default_gemms_are_the_slides_pair(close_after):
    """8192x128x8192 (AI 124.1, memory-bound) and 8192^3 (AI 2730, math-bound) on V100."""
    w = Roofline()
    close_after(w)
    ai = [round(r.arithmetic_intensity, 1) for r in w.result]
    assert ai == [124.1, pytest.approx(8192 / 3, abs=0.05)]
    assert [r.limiter for r in w.result] == ["memory", "math"]
    assert w.output.value.count("class='dlperf-ai'") == 2


def test_named_gemms_from_text(close_after, error_count):
    """Lines 'name: M x N x K' give named points; results equal gemm()."""
    w = Roofline("A100")
    close_after(w)
    w.controls["gemms"].value = "fc batch 512: 4096x512x1024\nbatch 1: 4096 x 1 x 1024"
    assert error_count(w) == 0
    expected = [gemm(4096, 512, 1024, gpu="A100"), gemm(4096, 1, 1024, gpu="A100")]
    assert [r.to_dict() for r in w.result] == [e.to_dict() for e in expected]
    # the slides' linear layer: ~315 FLOP/B at batch 512, ~1 FLOP/B at batch 1
    assert w.result[0].arithmetic_intensity == pytest.approx(315, abs=0.5)
    assert w.result[1].arithmetic_intensity == pytest.approx(1, abs=0.01)
    texts = [t.get_text() for t in w._artists.labels]
    assert texts[0].startswith("fc batch 512:") and texts[1].startswith("batch 1:")
    assert len(w._artists.points) == 2


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("abc", "'GEMMs' entry 1 must be M x N x K"),
        ("1x2", "'GEMMs' entry 1 must be M x N x K"),
        ("8x8x8\n1x-2x3", "'GEMMs' entry 2: 'N' must be an integer"),
        ("8x8x1e12", "'K' must be an integer between 1 and 1,048,576"),
        ("", "at least one GEMM"),
    ],
)
def test_bad_text_keeps_the_last_result(close_after, error_count, text, fragment):
    """Bad lines give one inline message naming the entry and rule; .result is kept."""
    w = Roofline()
    close_after(w)
    before = w.result
    w.controls["gemms"].value = text
    assert error_count(w) == 1
    assert fragment in w.error
    assert w.result is before


def test_gpu_change_moves_the_roof_without_a_full_redraw(close_after):
    """The axes are shared by all GPUs: a new GPU moves roof and points by blitting."""
    w = Roofline("V100")
    close_after(w)
    full = w.view.full_draws
    w.controls["gpu"].value = gpu("H100").name
    roof_y = max(w._artists.roof.get_ydata())
    assert roof_y == pytest.approx(gpu("H100").peak_flops("fp16"))
    assert w.view.full_draws == full


def test_constructor_validates():
    """Bad GEMM lists raise InvalidParameter at construction."""
    with pytest.raises(InvalidParameter, match="GEMMs"):
        Roofline(gemms=["8192x128"])


def test_roofline_overlays_shipped_measurements(close_after):
    """On an H100 in bf16 the roofline shows the 1730 measured GEMMs of the XLA table (226),
    aiconfigurator's sample (1500) and a published sustained loop (4) as hollow diamonds at (intensity, achieved FLOP/s), none
    above the peak and nearly all under the DRAM roof; on a V100 in fp16 DeepBench's 160;
    none on an A100."""
    import numpy as np

    from dlperf_widgets.core.gemm import attainable_flops_per_s
    from dlperf_widgets.core.gpus import gpu
    from dlperf_widgets.widgets import Roofline

    def gpu_peak(name: str, dt: str) -> float:
        return gpu(name).peak_flops(dt)

    w = Roofline(gpu="H100-SXM", dtype="bf16")
    close_after(w)
    ai = np.asarray(w._artists.measured.get_xdata())
    achieved = np.asarray(w._artists.measured.get_ydata())
    assert ai.size == 1730 and w._artists.measured.get_markerfacecolor() == "none"
    # none above the peak; a few of aiconfigurator's, whose operands stayed in L2 between
    # replays, above the DRAM slope (the L2 term of the model), the rest under the roof
    assert np.all(achieved <= gpu_peak("H100-SXM", "bf16"))
    assert np.mean(achieved <= attainable_flops_per_s(ai, "H100-SXM", "bf16")) > 0.95
    assert "1730 GEMMs measured on a real H100-SXM" in w.output.value
    w.controls["gpu"].value = "V100-SXM2-16GB"
    w.controls["dtype"].value = "fp16"
    assert len(w._artists.measured.get_xdata()) == 160
    w.controls["gpu"].value = "A100-SXM4-80GB"
    assert len(w._artists.measured.get_xdata()) == 0


def test_timing_context_of_the_table_times(close_after):
    """The roofline's 'timing' dropdown sets the context of the predicted times in its table
    (default 'kernel', the kit's own timer); back to back every GEMM is the core's
    back-to-back prediction, never slower than the kernel one, and the table says so."""
    w = Roofline(gpu="H100", dtype="bf16", gemms=["256x256x256", "4096x4096x4096"])
    close_after(w)
    assert w.controls["context"].value == "kernel" and "kernel timing" in w.output.value
    kernel = [r.predicted_time_s for r in w.result]
    w.controls["context"].value = "back-to-back"
    for r, t in zip(w.result, kernel, strict=True):
        assert r.context == "back-to-back" and r.predicted_time_s <= t
        same = gemm(r.m, r.n, r.k, dtype="bf16", gpu="H100", context="back-to-back")
        assert r.predicted_time_s == same.predicted_time_s
    assert "back-to-back timing" in w.output.value
