"""TileExplorer and WaveExplorer: tile and wave quantization from the core, drawn."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.core.tiles import tile_wave
from dlperf_widgets.widgets import TileExplorer, WaveExplorer


def test_tile_explorer_default_is_the_six_block_example(close_after):
    """257 x 256 with 128x128 tiles: 3 x 2 = 6 blocks, the last row nearly empty."""
    w = TileExplorer()
    close_after(w)
    assert (w.result.tiles_m, w.result.tiles_n, w.result.tiles) == (3, 2, 6)
    assert w.result.tile_efficiency == pytest.approx(257 * 256 / (384 * 256))
    assert "66.9%" in w.output.value
    classes = w._artists.image.get_array()
    assert classes.shape == (3, 2)
    assert (np.asarray(classes)[2] >= 2).all()  # the bottom row is partial
    assert (np.asarray(classes)[:2] < 2).all()


def test_tile_explorer_matches_core_for_each_tile(close_after):
    """Every tile shape of the dropdown gives the core's TileWave."""
    w = TileExplorer(m=1000, n=3000, gpu="A100")
    close_after(w)
    for name in w.controls["tile"].options:
        w.controls["tile"].value = name
        assert w.result == tile_wave(1000, 3000, tile=name, sms=gpu("A100").sms)


def test_gpu_change_does_not_redraw_the_grid(close_after):
    """The grid is independent of the GPU: only the table changes."""
    w = TileExplorer()
    close_after(w)
    draws = (w.view.full_draws, w.view.blits)
    w.controls["gpu"].value = gpu("V100").name
    assert w.result.sms == 80
    assert (w.view.full_draws, w.view.blits) == draws


def test_wave_explorer_eight_sm_example(close_after):
    """8 SMs, 12 blocks, one block per SM: 2 waves, 75 % utilisation (the slides' figure)."""
    w = WaveExplorer()
    close_after(w)
    assert (w.result.tiles, w.result.slots, w.result.waves) == (12, 8, 2)
    assert w.result.wave_efficiency == pytest.approx(12 / 16)
    assert "75.0%" in w.output.value
    grid = np.asarray(w._artists.image.get_array())
    assert grid.shape == (8, 2)
    assert (grid[:, 0] > 0).all() and (grid[:4, 1] > 0).all() and (grid[4:, 1] == 0).all()
    assert w._artists.tail.get_visible()


def test_wave_presets_a100(close_after):
    """A100 with 256x128 tiles: 108 tiles fill one wave, 109 need two (50.5 % busy)."""
    w = WaveExplorer("A100, 108 tiles (one full wave)")
    close_after(w)
    assert (w.result.tiles, w.result.waves) == (108, 1)
    assert w.result.wave_efficiency == 1
    assert not w._artists.tail.get_visible()
    w.controls["preset"].value = "A100, 109 tiles (a 1-tile tail)"
    assert (w.result.tiles, w.result.waves, w.result.tail_tiles) == (109, 2, 1)
    assert w.result.wave_efficiency == pytest.approx(109 / 216)


def test_toast_preset(close_after):
    """3 slices, a pan for 2, a minute a side: 3 minutes, not 4."""
    w = WaveExplorer("toast puzzle")
    close_after(w)
    assert (w.result.best_minutes, w.result.naive_minutes) == (3, 4)
    assert w.controls["m"].layout.display == "none"
    assert w.controls["slices"].layout.display is None
    labels = sorted(t.get_text() for t in w._artists.texts if t.get_visible())
    assert labels == ["1A", "1B", "2A", "2B", "3A", "3B"]
    w.controls["slices"].value = 4
    assert w.controls["preset"].value == "toast puzzle"
    assert w.result.best_minutes == 4


def test_moving_a_control_leaves_the_preset(close_after):
    """Dragging SMs switches the preset to 'custom' with one update."""
    w = WaveExplorer()
    close_after(w)
    w.controls["sms"].value = 12
    assert w.controls["preset"].value == "custom"
    assert (w.result.slots, w.result.waves, w.result.wave_efficiency) == (12, 1, 1.0)


def test_wave_constructor_validates():
    """An unknown preset or a bad size raises InvalidParameter naming it."""
    with pytest.raises(InvalidParameter, match="'preset'"):
        WaveExplorer("nope")
    with pytest.raises(InvalidParameter, match="'M'"):
        WaveExplorer(m=0)
