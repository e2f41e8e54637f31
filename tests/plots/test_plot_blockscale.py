"""Guards plots/blockscale.py: the curves are the study's sweep (clipped to the axis), the
marker sits at the study's own outlier, and one scale per tensor draws no 'other blocks'."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.scaling import block_outlier_study
from dlperf_widgets.plots.blockscale import ERROR_RANGE, plot_block_outlier, update_block_outlier


def test_curves_are_the_sweep():
    """Block-mates and other blocks against outlier size, as the core computed them."""
    r = block_outlier_study("nvfp4", outlier_binades=6)
    a = plot_block_outlier(r)
    x, y = a.block.get_data()
    np.testing.assert_array_equal(x, r.sweep_binades)
    np.testing.assert_array_equal(y, np.clip(r.sweep_block_error, *ERROR_RANGE))
    np.testing.assert_array_equal(a.others.get_data()[1], r.sweep_other_blocks_error)
    assert list(a.marker.get_xdata()) == [6, 6] and a.where.get_xdata()[0] == 6
    assert "4.5 bits per element" in a.title.get_text()


def test_one_scale_per_tensor_has_no_other_blocks():
    """Per-tensor FP8: the blue curve is empty and the marker has one point."""
    a = plot_block_outlier(block_outlier_study("mxfp4"))
    update_block_outlier(a, block_outlier_study("fp8_per_tensor", outlier_binades=30))
    assert len(a.others.get_data()[0]) == 0
    assert list(a.marker.get_xdata()) == [30]
    assert a.ax.get_xlim()[1] == pytest.approx(30)
