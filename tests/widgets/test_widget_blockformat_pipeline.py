"""BlockFormatExplorer and PipelineExplorer: the numbers they show are the core's and agree
with published figures (MXFP4 4.25 and NVFP4 4.5 bits per element; Narayanan et al.'s 3/11
bubble of 4 stages and 8 micro-batches), a format brings its published layout, bad input is
one inline message that keeps the last good state, and moving one control redraws only what
it changed."""

from __future__ import annotations

import pytest

from dlperf_widgets.core.scaleout import pipeline_schedule
from dlperf_widgets.core.scaling import block_outlier_study
from dlperf_widgets.widgets import BlockFormatExplorer, PipelineExplorer


def test_block_explorer_shows_the_published_bits(close_after):
    """MXFP4: 4 + 8/32 = 4.25 bits per element; picking NVFP4 brings blocks of 16 with E4M3
    scales and 4 + 8/16 = 4.5; the result is block_outlier_study with the same choices."""
    w = BlockFormatExplorer()
    close_after(w)
    assert w.result.bits_per_element == 4.25 and "<b>4.25</b> bits per element" in w.output.value
    w.controls["format"].value = "nvfp4"
    assert (w.controls["block_size"].value, w.controls["scale_format"].value) == ("16", "fp8_e4m3")
    assert w.result.bits_per_element == 4.5
    assert w.result.to_dict() == block_outlier_study("nvfp4", outlier_binades=8).to_dict()
    assert "exact arithmetic" in w.output.value and "simulated quantization" in w.output.value


def test_block_explorer_what_if_and_per_tensor(close_after):
    """Typing a block size of 64 is MXFP4's what-if (4.125 bits); per-tensor FP8 disables
    the block controls and has no 'other blocks'."""
    w = BlockFormatExplorer()
    close_after(w)
    w.controls["block_size"].value = "64"
    assert w.result.bits_per_element == 4.125 and w.result.block_size == 64
    assert w.result.format == "mxfp4 (blocks of 64, e8m0 scales)"
    w.controls["format"].value = "fp8_per_tensor"
    assert w.controls["block_size"].disabled and w.controls["scale_format"].disabled
    assert w.result.other_blocks_error is None and "other blocks" not in w.output.value
    w.controls["format"].value = "mxfp8_e4m3"
    assert not w.controls["block_size"].disabled and w.controls["block_size"].value == "32"


def test_block_explorer_moving_the_outlier_blits(close_after):
    """Moving the outlier redraws only the curves and the marker (no full redraw); the
    marker sits at the result's errors."""
    w = BlockFormatExplorer()
    close_after(w)
    full = w.view.full_draws
    w.controls["outlier"].value = 2.5
    assert w.view.full_draws == full and w.view.blits >= 1
    assert list(w._artists.marker.get_ydata()) == pytest.approx(
        [w.result.block_error, w.result.other_blocks_error]
    )
    assert w._artists.where.get_xdata()[0] == 2.5


def test_block_explorer_bad_block_size_is_inline(close_after, error_count):
    """Text that is no block size is one inline message; the last result stays; a good
    value clears it."""
    w = BlockFormatExplorer()
    close_after(w)
    before = w.result
    for bad in ("abc", "0", "1000", "16.5"):
        w.controls["block_size"].value = bad
        assert error_count(w) == 1 and w.error.startswith("'block size' must be an integer")
        assert w.result is before
    w.controls["block_size"].value = "16"
    assert w.error == "" and w.result.block_size == 16


def test_pipeline_explorer_shows_the_papers_example(close_after):
    """4 stages, 8 micro-batches, 1F1B: bubble 3/11 of the step (27.3 %) and 3/8 of the
    ideal time; GPipe holds 8 micro-batches per stage, 1F1B 4, 3, 2, 1; interleaved with 2
    chunks: 3/19 and p (1 + (p - 1)/(p v)) = 5.5 at stage 0."""
    w = PipelineExplorer()
    close_after(w)
    assert w.result.to_dict() == pipeline_schedule(4, 8, "1f1b").to_dict()
    assert w.result.bubble_fraction == pytest.approx(3 / 11)
    assert "27.3%" in w.output.value and "37.5%" in w.output.value
    assert w.compare["gpipe"].activations_per_stage == (8, 8, 8, 8)
    assert w.compare["1f1b"].activations_per_stage == (4, 3, 2, 1)
    assert w.controls["chunks"].disabled
    w.controls["schedule"].value = "interleaved"
    assert not w.controls["chunks"].disabled
    assert w.result.bubble_fraction == pytest.approx(3 / 19)
    assert w.result.peak_activations == 5.5 and "interleaved (v = 2)" in w.output.value


def test_pipeline_explorer_bad_combination_is_inline(close_after, error_count):
    """Interleaving 6 micro-batches over 4 stages breaks Megatron-LM's rule: one inline
    message naming 'micro_batches'; the last good schedule stays on screen."""
    w = PipelineExplorer(schedule="interleaved")
    close_after(w)
    before = w.result
    w.controls["micro_batches"].value = 6
    assert error_count(w) == 1 and "'micro_batches' must be a multiple of 'stages'" in w.error
    assert w.result is before
    w.controls["micro_batches"].value = 12
    assert w.error == "" and w.result.micro_batches == 12


def test_pipeline_explorer_redraws_the_axes_only_when_they_change(close_after):
    """A slider move that keeps the stages and the time axis redraws the bars alone; new
    stages need a full redraw; the dashed line marks the step's end."""
    w = PipelineExplorer()
    close_after(w)
    full = w.view.full_draws
    w.controls["micro_batches"].value = 9
    assert w.view.full_draws == full
    assert w._artists.end.get_xdata()[0] == w.result.total_time
    w.controls["stages"].value = 6
    assert w.view.full_draws == full + 1
    rects = sum(len(b.get_path().codes) // 5 for b in w._artists.bars)
    assert rects == len(w.result.ops) == 2 * 6 * 9
