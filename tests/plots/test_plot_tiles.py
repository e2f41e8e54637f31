"""plot_tiles, plot_waves and plot_toast: grids, hatched waste and schedules, as artists."""

from __future__ import annotations

import numpy as np

from dlperf_widgets.core.tiles import tile_wave
from dlperf_widgets.core.toast import toast
from dlperf_widgets.plots import plot_tiles, plot_toast, plot_waves
from dlperf_widgets.plots.tiles import update_tiles


def test_tiles_partial_row_and_hatched_waste():
    """257 x 256 / 128x128: 3 x 2 cells, the last row partial; waste hatched below row 257."""
    a = plot_tiles(tile_wave(257, 256, tile="128x128", sms=108))
    cells = np.asarray(a.image.get_array())
    assert cells.shape == (3, 2)
    assert (cells[2] >= 2).all() and (cells[:2] < 2).all()
    assert a.image.get_extent() == [0, 256, 384, 0]
    right, below = a.waste
    assert below.get_y() == 257 and below.get_height() == 384 - 257
    assert right.get_width() == 0  # N is a multiple of 128: nothing wasted on the right
    assert below.get_hatch() == "///"
    assert (a.matrix.get_width(), a.matrix.get_height()) == (256, 257)
    assert len(a.grid.get_segments()) == (3 - 1) + (2 - 1)
    assert "66.9%" in a.title.get_text()
    assert "(elements)" in a.ax.get_xlabel() and "(elements)" in a.ax.get_ylabel()


def test_tile_update_reports_axis_changes():
    """Small changes keep the round axis limits; a large one moves them."""
    a = plot_tiles(tile_wave(1000, 1000, tile="128x128", sms=108))
    assert update_tiles(a, tile_wave(1010, 990, tile="128x128", sms=108)) is False
    assert update_tiles(a, tile_wave(3000, 990, tile="128x128", sms=108)) is True


def test_waves_grid_and_tail():
    """12 tiles on 8 slots: first wave full, 4 busy and 4 idle (hatched) in the second."""
    a = plot_waves(tile_wave(768, 512, tile="256x128", sms=8))
    grid = np.asarray(a.image.get_array())
    assert grid.shape == (8, 2)
    assert (grid[:, 0] > 0).sum() == 8 and (grid[:, 1] > 0).sum() == 4
    assert a.tail.get_visible() and a.tail.get_hatch() == "xx"
    assert (a.tail.get_y(), a.tail.get_height()) == (4, 4)
    assert a.capacity.get_ydata()[0] == 8
    assert "75.0%" in a.title.get_text()
    assert "wave" in a.ax.get_xlabel() and "slot" in a.ax.get_ylabel()


def test_long_schedules_draw_their_last_waves():
    """A schedule of thousands of waves is drawn as its last 200 waves."""
    tw = tile_wave(32768, 32768, tile="64x64", sms=8)
    a = plot_waves(tw)
    assert np.asarray(a.image.get_array()).shape == (8, 200)
    assert a.ax.get_xlim()[0] == tw.waves - 200 + 0.5


def test_toast_cells_and_labels():
    """The best schedule of 3 slices in a pan for 2 fills 3 minutes x 2 places."""
    a = plot_toast(toast())
    assert len(a.cells.get_paths()) == 6
    labels = sorted(t.get_text() for t in a.texts if t.get_visible())
    assert labels == ["1A", "1B", "2A", "2B", "3A", "3B"]
    assert "best 3 min" in a.title.get_text() and "naive 4 min" in a.title.get_text()
    assert a.ax.get_xlabel() == "time (minutes)"
