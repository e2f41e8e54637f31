"""plot_gpu_peaks and the shared style: bars per dtype, SI labels, Okabe-Ito colours."""

from __future__ import annotations

import pytest
from matplotlib.colors import to_hex

from dlperf_widgets.core.dtypes import DTYPES
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.plots import plot_gpu_peaks
from dlperf_widgets.plots.style import OKABE_ITO, SERIES, nice_ceiling, si, time_unit


def test_one_bar_per_supported_dtype():
    """A100: a bar for each dtype it runs, as long as its peak; hidden for the others."""
    a = plot_gpu_peaks("A100")
    g = gpu("A100")
    (bars,) = a.bars
    assert len(bars) == len(DTYPES)
    for bar, text, d in zip(bars, a.values[0], DTYPES, strict=True):
        assert bar.get_visible() == g.supports(d)
        if g.supports(d):
            assert bar.get_x() + bar.get_width() == pytest.approx(g.peak_flops(d))
            assert text.get_text() == si(g.peak_flops(d))
    assert a.ax.get_xlabel() == "dense peak throughput (FLOP/s)"
    assert [t.get_text() for t in a.ax.get_yticklabels()] == list(DTYPES)
    assert a.legend is None


def test_two_gpus_get_two_colours_and_a_legend():
    """Comparing GPUs: two bar groups in the first two palette colours, and a legend."""
    a = plot_gpu_peaks(["V100", "A100"])
    assert len(a.bars) == 2
    assert to_hex(a.bars[0][3].get_facecolor()) == SERIES[0].lower()
    assert to_hex(a.bars[1][3].get_facecolor()) == SERIES[1].lower()
    assert [t.get_text() for t in a.legend.get_texts()] == [gpu("V100").name, gpu("A100").name]


def test_style_helpers():
    """SI tick text, round axis limits and time units read as a person would write them."""
    assert si(1.25e14) == "125T"
    assert si(0.25) == "250m"
    assert si(3.119e14) == "312T"
    assert [nice_ceiling(v) for v in (0.5, 3, 20, 201, 4096)] == [1, 5, 20, 500, 5000]
    assert time_unit(4e-3) == ("ms", 1e-3)
    assert time_unit(2.0) == ("s", 1.0)
    assert OKABE_ITO["vermillion"] == "#D55E00"
