"""DimensionSweep: gemm_sweep along M, N or K; alignment dips, saw-tooth, measurements."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gemm import gemm_sweep
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.widgets import DimensionSweep

N_PRESET = "N 1..4096: tiles and waves (A100)"


def test_k_sweep_shows_alignment_dips(close_after):
    """K 4000..4200 on V100 (M = N = 1024, FP16): multiples of 8 run about twice as fast."""
    w = DimensionSweep()
    close_after(w)
    k = np.arange(4000, 4201)
    expected = gemm_sweep(1024, 1024, k, dtype="fp16", gpu="V100")
    np.testing.assert_array_equal(w.result.predicted_time_s, expected.predicted_time_s)
    t = dict(zip(k.tolist(), w.result.predicted_time_s.tolist(), strict=True))
    # the slides' cuBLAS 11 K sweep: K not divisible by 8 takes about twice as long
    assert 1.5 < t[4097] / t[4096] < 2.5
    assert 1.5 < t[4095] / t[4096] < 2.5
    assert "175 of 201 sizes miss" in w.output.value  # 26 of 201 are multiples of 8
    assert len(w._artists.misaligned.get_xdata()) == 175


def test_n_sweep_has_a_saw_tooth(close_after):
    """N 1..4096 on A100 (M = K = 4096): throughput drops after each wave boundary."""
    w = DimensionSweep(preset=N_PRESET)
    close_after(w)
    assert len(w.result) == 4096
    n = np.arange(1, 4097)
    aligned = n % 8 == 0
    flops = w.result.predicted_flops_per_s[aligned]
    drops = np.flatnonzero(np.diff(flops) < -0.05 * flops[:-1])
    assert len(drops) >= 5  # several teeth, not a monotone curve
    # model line and 'other sizes' line split the sweep where the core's alignment says so
    # (multiples of 8, and N < 8, a matrix-vector-like shape)
    full_rate = np.asarray(w.result.alignment_efficiency) == 1
    assert full_rate.sum() == aligned.sum() + 7
    assert len(w._artists.model.get_xdata()) == full_rate.sum()


@pytest.mark.parametrize(
    ("field", "text", "fragment"),
    [
        ("start", "abc", "'from' must be an integer"),
        ("start", "-3", "'from' must be an integer"),
        ("start", "1e12", "'from' must be an integer between 1 and 1,048,576"),
        ("stop", "3000", "'to' must be at least 'from'"),
        ("step", "0", "'step' must be an integer"),
        ("m", "x", "'M' must be an integer"),
        ("tile", "big", "'tile' must be 'auto' or HEIGHTxWIDTH"),
    ],
)
def test_bad_text_boxes(close_after, error_count, field, text, fragment):
    """Each text box's bad input: one inline message naming it, last result kept."""
    w = DimensionSweep()
    close_after(w)
    before = w.result
    w.controls[field].value = text
    assert error_count(w) == 1
    assert fragment in w.error
    assert w.result is before


def test_too_many_points_is_refused(close_after, error_count):
    """A range with more than 20,000 sizes is refused (it would be slow to draw)."""
    w = DimensionSweep()
    close_after(w)
    w.controls["start"].value = "1"
    w.controls["stop"].value = "100000"
    assert error_count(w) == 1 and "at most 20,000" in w.error


def test_typed_values_with_separators(close_after):
    """'4,096' and '1_024' are accepted as integers in the text boxes."""
    w = DimensionSweep()
    close_after(w)
    w.controls["m"].value = "2,048"
    w.controls["n"].value = "1_024"
    assert int(w.result.m.ravel()[0]) == 2048
    assert w.controls["preset"].value == "custom"


def test_presets_switch_everything(close_after):
    """The presets set range, fixed sizes and GPU, and disable the swept size's box."""
    w = DimensionSweep()
    close_after(w)
    w.controls["preset"].value = N_PRESET
    assert w.result.gpu == gpu("A100").name
    assert w.controls["n"].disabled and not w.controls["k"].disabled
    assert len(w.result) == 4096


def test_measured_points_overlay(close_after):
    """Measured (x, time_s) pairs or a dict of arrays appear as markers in the time view."""
    w = DimensionSweep(measured=[(4096, 9e-5), (4097, 1.8e-4)])
    close_after(w)
    x, _t = w.measured
    np.testing.assert_array_equal(x, [4096, 4097])
    y = w._artists.measured.get_ydata()
    assert len(y) == 2
    assert "µs" in w.view.ax.get_ylabel()
    assert y[0] == pytest.approx(90.0)
    w.set_measured({"x": np.array([4000, 4100]), "time_s": np.array([1e-4, 2e-4])})
    np.testing.assert_array_equal(w._artists.measured.get_xdata(), [4000, 4100])
    w.set_measured(None)
    assert len(w._artists.measured.get_xdata()) == 0
    with pytest.raises(InvalidParameter, match="'measured'"):
        w.set_measured({"x": [1, 2]})
    with pytest.raises(InvalidParameter, match="'measured'"):
        w.set_measured([(1, -1.0)])


def test_throughput_view(close_after):
    """'show: throughput' plots the core's predicted FLOP/s."""
    w = DimensionSweep()
    close_after(w)
    w.controls["quantity"].value = "throughput"
    np.testing.assert_allclose(w._artists.model.get_ydata(), w.result.predicted_flops_per_s)
    assert "FLOP/s" in w.view.ax.get_ylabel()


def test_lazy_names_of_the_package():
    """`from dlperf_widgets import GemmExplorer` resolves to the widget classes."""
    import dlperf_widgets

    for name in (
        "GpuCard",
        "GemmExplorer",
        "Roofline",
        "TileExplorer",
        "WaveExplorer",
        "DimensionSweep",
    ):
        assert getattr(dlperf_widgets, name).__name__ == name


def test_shipped_measurements_are_overlaid_when_the_gpu_has_some(close_after):
    """N swept on an H100 in bf16 with M = K = 2048: the XLA table's measurements on that
    line appear as diamonds labelled with their trace, apart from the model's line; on an
    A100 (no trace) nothing is overlaid; traces=False turns the overlay off."""
    w = DimensionSweep(dim="n", start=1, stop=4096, m=2048, k=2048, gpu="H100-SXM", dtype="bf16")
    close_after(w)
    x = list(w._artists.measured.get_xdata())
    assert sorted(x) == [256, 512, 2048, 2048, 4096]  # 2048^3: XLA's and a published loop's
    assert w._artists.measured.get_label() == (
        "measured (aiconfigurator_h100-sxm, xla_h100-sxm, zzc0721_h100-sxm)"
    )
    assert w._artists.measured.get_marker() == "D"  # drawn unlike the model's line
    assert "measured on a real H100-SXM" in w.output.value
    w.controls["gpu"].value = "A100-SXM4-80GB"
    assert len(w._artists.measured.get_xdata()) == 0
    off = DimensionSweep(
        dim="n", start=1, stop=4096, m=2048, k=2048, gpu="H100-SXM", dtype="bf16", traces=False
    )
    close_after(off)
    assert len(off._artists.measured.get_xdata()) == 0
    with pytest.raises(InvalidParameter, match="'traces' must be True or False"):
        DimensionSweep(traces="yes")


def test_band_is_drawn_and_its_basis_named(close_after):
    """The default K sweep (V100 fp16) shades the model's band and the summary says what
    it rests on: the V100 rows of the shipped traces."""
    w = DimensionSweep()
    close_after(w)
    verts = w._artists.band.get_paths()[0].vertices
    assert verts[:, 1].max() == pytest.approx(np.max(w.result.time_high_s) * 1e6)
    assert "Shaded: 80 % band from" in w.output.value
    assert "V100-SXM2-16GB rows" in w.output.value


def test_log_axes_checkbox(close_after):
    """The 'log axes' box draws the sweep on logarithmic axes and back; a non-boolean
    'log' is refused with the kit's sentence."""
    w = DimensionSweep(dim="n", start=8, stop=6000, step=8, m=7680, k=2560, log=True)
    close_after(w)
    ax = w.view.ax
    assert ax.get_xscale() == ax.get_yscale() == "log"
    w.controls["log"].value = False
    assert ax.get_xscale() == ax.get_yscale() == "linear"
    with pytest.raises(InvalidParameter, match="'log' must be True or False"):
        DimensionSweep(log="yes")


def test_timing_context_of_the_swept_times(close_after):
    """The sweep's 'timing' dropdown defaults to the kit's own timer's context ('kernel');
    'eager' gives the core's eager times for every size, each longer than the kernel time by
    the host's launch, and the summary says which context the times are for."""
    w = DimensionSweep(dim="n", start=16, stop=256, step=16, m=256, k=256, dtype="bf16", gpu="H100")
    close_after(w)
    assert w.controls["context"].value == "kernel" and "kernel timing" in w.output.value
    kernel = np.asarray(w.result.predicted_time_s)
    w.controls["context"].value = "eager"
    n = np.arange(16, 257, 16)
    expected = gemm_sweep(256, n, 256, dtype="bf16", gpu="H100", context="eager")
    assert np.array_equal(w.result.predicted_time_s, expected.predicted_time_s)
    assert np.all(np.asarray(w.result.predicted_time_s) > kernel)
    assert "eager timing" in w.output.value
    with pytest.raises(InvalidParameter, match="'context' must be one of"):
        DimensionSweep(context="graph")
