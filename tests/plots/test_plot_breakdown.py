"""plot_passes, plot_breakdown, plot_memory, plot_pruned, plot_formats, plot_loss_scaling."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.formats import number_format
from dlperf_widgets.core.layers import layer
from dlperf_widgets.core.loss_scaling import loss_scale_effect
from dlperf_widgets.core.memory import training_memory
from dlperf_widgets.core.network import transformer
from dlperf_widgets.core.sparsity import prune_2_4
from dlperf_widgets.plots import (
    plot_breakdown,
    plot_formats,
    plot_loss_scaling,
    plot_memory,
    plot_passes,
    plot_pruned,
)
from dlperf_widgets.plots.style import LIMITER_COLORS


def test_passes_bars_in_microseconds():
    """One bar per pass, as long as its predicted time in µs, coloured by limiter."""
    r = layer("linear", inputs=1024, outputs=4096, batch=512, gpu="V100")
    a = plot_passes(r)
    assert len(a.bars) == len(r.passes)
    for bar, p in zip(a.bars, r.passes, strict=True):
        assert bar.get_width() == pytest.approx(p.predicted_time_s * 1e6)
    assert a.ax.get_xlabel() == "predicted time (µs)"
    from matplotlib.colors import to_hex

    assert to_hex(a.bars[0].get_facecolor()) == LIMITER_COLORS[r.passes[0].limiter].lower()


def test_breakdown_shares_in_percent():
    """FLOPs and runtime bars are the classes' shares in percent; axis says so."""
    r = transformer(2)
    a = plot_breakdown(r)
    assert a.flops[0].get_width() == pytest.approx(
        r.by_class["tensor_contraction"]["flops_share"] * 100
    )
    assert a.runtime[0].get_width() == pytest.approx(
        r.by_class["tensor_contraction"]["runtime_share"] * 100
    )
    assert a.ax.get_xlabel() == "share of the network (%)"


def test_memory_stack_in_gib():
    """Parts stack left to right and sum to the per-GPU total in GiB."""
    r = training_memory(7e9, gpu="A100")
    a = plot_memory(r)
    assert a.parts[0].get_x() == 0
    assert a.parts[1].get_x() == pytest.approx(a.parts[0].get_width())
    assert sum(p.get_width() for p in a.parts) == pytest.approx(r.per_gpu_bytes / 2**30)
    assert "(GiB)" in a.ax.get_xlabel() and "does not fit" in a.title.get_text()


def test_pruned_image_masks_half():
    """Half of every group of 4 is masked; group boundaries every 4 columns."""
    r = prune_2_4(np.random.default_rng(3).normal(size=(8, 16)))
    a = plot_pruned(r)
    img = a.image.get_array()
    assert np.ma.count_masked(img) == 64
    assert len(a.groups.get_segments()) == 3


def test_formats_ranges():
    """FP16's normal range is [6.1e-5, 65504]; the value line sits at |value|."""
    a = plot_formats(["fp32", "fp16"], value=-3.0)
    fp16 = number_format("fp16")
    assert list(a.normal[1].get_xdata()) == [fp16.min_normal, fp16.max]
    assert list(a.subnormal[1].get_xdata()) == [fp16.min_subnormal, fp16.min_normal]
    assert a.value.get_xdata()[0] == 3.0 and a.value.get_visible()
    assert "eps" in a.ax.get_yticklabels()[1].get_text()


def test_loss_scaling_histogram_and_spans():
    """Shares in % sum to 100; the underflow span ends at log2 of FP16's threshold."""
    r = loss_scale_effect(2.0**8)
    a = plot_loss_scaling(r, np.random.default_rng(0).normal(-25, 6, 5000), 8)
    data = a.hist.get_data()
    assert np.sum(data.values) == pytest.approx(100)
    assert a.underflow.get_x() + a.underflow.get_width() == pytest.approx(np.log2(2.0**-25))
    assert a.ax.get_ylabel() == "share of gradients (%)"
