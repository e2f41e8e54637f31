"""GpuCard: a GPU's figures and peaks from the core; a second GPU side by side."""

from __future__ import annotations

import pytest

from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.widgets import GpuCard


def test_a100_card_shows_first_principles_peaks(close_after):
    """A100: 108 SMs x 1410 MHz x 1024 FP16 FMA/clk/SM x 2 = 312 TFLOP/s (slides' figure)."""
    w = GpuCard("A100")
    close_after(w)
    assert w.result is gpu("A100")
    assert w.other is None
    fp16 = 108 * 1410e6 * 1024 * 2
    assert w.result.peak_flops("fp16") == pytest.approx(fp16, rel=1e-9)
    assert "311.9 TFLOP/s" in w.output.value
    assert "155.9 TFLOP/s" in w.output.value  # TF32: 512 FMA/clk/SM
    assert "108" in w.output.value


def test_compare_two_gpus_side_by_side(close_after):
    """Choosing a comparison adds a column and a second set of bars, removing it drops them."""
    w = GpuCard("V100", compare="A100")
    close_after(w)
    assert w.other is gpu("A100")
    assert w.output.value.count("<th style='text-align:right;padding:1px 8px'>") == 2
    # V100 ops:byte, 125.3 TFLOP/s / 900 GB/s (the slides print 138.9 for 125 TFLOP/s)
    assert f"{gpu('V100').peak_flops('fp16') / 900e9:.1f} FLOP/B" in w.output.value
    assert len(w._artists.bars) == 2
    w.controls["compare"].value = "(none)"
    assert w.other is None
    assert len(w._artists.bars) == 1
    assert w._artists.legend is None


def test_switching_gpus_redraws_only_bars(close_after):
    """The axes of the peak chart are the same for every GPU: updates blit."""
    w = GpuCard("V100")
    close_after(w)
    full = w.view.full_draws
    for name in ("A100", "H100", "T4"):
        w.controls["gpu"].value = gpu(name).name
        assert w.result is gpu(name)
    assert w.view.full_draws == full


def test_static_fallback(close_after):
    """The mimebundle carries a PNG and the card's table for viewers without a kernel."""
    w = GpuCard("H100")
    close_after(w)
    data = w._repr_mimebundle_()
    assert "image/png" in data
    assert "dlperf-gpu-card" in data["text/html"]
