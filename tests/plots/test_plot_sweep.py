"""plot_sweep: model line, misaligned sizes and measurements, with units on the axes."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gemm import gemm_sweep
from dlperf_widgets.plots import plot_sweep
from dlperf_widgets.plots.sweep import measured_points, sweep_dimension


def test_short_sweep_marks_misaligned_sizes():
    """K 4000..4200: one line through all sizes, markers on the 175 that miss 8."""
    s = gemm_sweep(1024, 1024, np.arange(4000, 4201), gpu="V100")
    a = plot_sweep(s)
    assert sweep_dimension(s) == "k"
    assert len(a.model.get_xdata()) == 201
    assert len(a.misaligned.get_xdata()) == 175
    assert a.misaligned.get_marker() == "o"
    assert a.ax.get_xlabel() == "K (elements)"
    assert a.ax.get_ylabel() == "predicted time (µs)"
    # seconds -> microseconds in the plotted data
    np.testing.assert_allclose(a.model.get_ydata(), s.predicted_time_s * 1e6)


def test_long_sweep_splits_aligned_and_other_sizes():
    """N 1..4096: aligned sizes on the model line, the rest on a second line."""
    s = gemm_sweep(4096, np.arange(1, 4097), 4096, gpu="A100")
    a = plot_sweep(s, quantity="throughput")
    full_rate = int((s.alignment_efficiency == 1).sum())
    assert full_rate == 512 + 7  # multiples of 8, and N < 8 (matrix-vector shapes)
    assert len(a.model.get_xdata()) == full_rate
    assert len(a.misaligned.get_xdata()) == 4096 - full_rate
    assert a.ax.get_ylabel() == "predicted throughput (FLOP/s)"
    labels = [t.get_text() for t in a.legend.get_texts()]
    assert labels == [
        "model, 16-byte aligned sizes",
        "model's 80 % band (measured scatter)",
        "model, other sizes",
        "ideal (roofline)",
    ]
    # the ideal line is the guide's roofline: FLOPs over max(math at peak, bytes at bandwidth)
    np.testing.assert_allclose(a.ideal.get_ydata(), s.flops / s.roofline_time_s)


def test_measured_overlay_forms():
    """(x, time_s) pairs and dicts of arrays give the same markers; bad data is refused."""
    s = gemm_sweep(1024, 1024, np.arange(4000, 4201), gpu="V100")
    a = plot_sweep(s, measured=[(4096, 1e-4), (4100, 2e-4)])
    np.testing.assert_allclose(a.measured.get_ydata(), [100.0, 200.0])
    x, _t = measured_points({"k": [1, 2], "time_s": [1.0, 2.0]})
    np.testing.assert_array_equal(x, [1, 2])
    with pytest.raises(InvalidParameter, match="'measured'"):
        measured_points({"time_s": [1.0]})
    with pytest.raises(InvalidParameter, match="'measured'"):
        measured_points([(1, float("nan"))])
    with pytest.raises(InvalidParameter, match="'quantity'"):
        plot_sweep(s, quantity="speed")


def test_time_axis_says_measured_when_points_are_overlaid():
    """With measured points the y axis is plain 'time': not everything on it is predicted."""
    s = gemm_sweep(1024, 1024, np.arange(4000, 4201), gpu="V100")
    assert plot_sweep(s, measured=[(4096, 1e-4)]).ax.get_ylabel().startswith("time (")
    assert plot_sweep(s).ax.get_ylabel().startswith("predicted time (")


def test_band_is_shaded_between_the_sweeps_band_ends():
    """The shaded area spans time_low_s to time_high_s of every size (in the plotted unit),
    and in the throughput view FLOPs over those times (the slow end is the low rate)."""
    s = gemm_sweep(1024, 1024, np.arange(4000, 4201), gpu="V100")
    a = plot_sweep(s)
    verts = a.band.get_paths()[0].vertices
    top = {round(x, 6): y for x, y in verts[: len(verts) // 2]}
    ys = verts[:, 1]
    assert ys.min() == pytest.approx(np.min(s.time_low_s) * 1e6)
    assert ys.max() == pytest.approx(np.max(s.time_high_s) * 1e6)
    assert top  # a real polygon
    a = plot_sweep(s, quantity="throughput")
    ys = a.band.get_paths()[0].vertices[:, 1]
    assert ys.min() == pytest.approx(np.min(s.flops / s.time_high_s))
    assert ys.max() == pytest.approx(np.max(s.flops / s.time_low_s))
    assert "80 % band" in [t.get_text() for t in a.legend.get_texts()][1]


def test_log_axes_spread_small_sizes_and_switch_back():
    """With log=True both axes are logarithmic and the y axis starts below the lowest
    value drawn (a decade boundary), so the small-N points of a sweep to 6000 no longer
    sit on top of one another; switching back restores linear axes from zero."""
    from dlperf_widgets.plots.sweep import update_sweep

    s = gemm_sweep(7680, np.arange(8, 6001, 8), 2560, dtype="fp16", gpu="V100")
    a = plot_sweep(s, measured={"x": [16, 128], "time_s": [56e-6, 74e-6]}, log=True)
    assert a.ax.get_xscale() == a.ax.get_yscale() == "log"
    bottom, top = a.ax.get_ylim()
    lowest = min(np.min(a.model.get_ydata()), np.min(a.ideal.get_ydata()))
    assert 0 < bottom <= lowest < top
    assert np.log10(bottom) == int(np.log10(bottom))
    # the two measurements, 16 and 128, are three octaves apart on the x axis
    x0, x1 = (a.ax.transData.transform((x, 1e-1))[0] for x in (16, 128))
    assert x1 - x0 > 0.15 * a.ax.bbox.width
    assert update_sweep(a, s, log=False)
    assert a.ax.get_xscale() == a.ax.get_yscale() == "linear"
    assert a.ax.get_ylim()[0] == 0.0
