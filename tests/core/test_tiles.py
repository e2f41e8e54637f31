"""Guards tile and wave quantization (R11, R12) and the toast puzzle (R16)."""

import pytest

from dlperf_widgets.core import InvalidParameter, tile_wave, toast
from dlperf_widgets.core.tiles import TILE_SHAPES, parse_tile, tile_shape_efficiency


def test_r11_eight_sms_twelve_blocks():
    """R11: 12 blocks on 8 SMs, one at a time: 2 waves, the second half empty, 75 %."""
    tw = tile_wave(3 * 128, 4 * 128, tile="128x128", sms=8)
    assert (tw.tiles, tw.waves, tw.full_waves, tw.tail_tiles) == (12, 2, 1, 4)
    assert tw.wave_efficiency == pytest.approx(0.75)


def test_r12_a100_wave_of_108_tiles():
    """R12: A100 with 256x128 tiles holds 108 tiles per wave; 108 is ideal, 109 halves it."""
    full = tile_wave(256 * 12, 128 * 9, tile="256x128", sms=108)
    assert full.tiles == 108 and full.waves == 1 and full.wave_efficiency == 1.0
    below = tile_wave(256 * 107, 128, tile="256x128", sms=108)
    assert below.wave_efficiency == pytest.approx(107 / 108)
    over = tile_wave(256 * 109, 128, tile="256x128", sms=108)
    assert over.waves == 2 and over.wave_efficiency == pytest.approx(109 / 216)


def test_tile_quantization_example():
    """Slides' figure: a matrix one row/column past the tile grid launches extra, mostly-empty tiles."""
    tw = tile_wave(257, 257, tile="128x128", sms=108)
    assert (tw.tiles_m, tw.tiles_n, tw.tiles) == (3, 3, 9)
    assert tw.tile_efficiency == pytest.approx(257 * 257 / (384 * 384))


def test_wave_assignment_shape():
    """Each tile gets its wave number in launch order."""
    tw = tile_wave(3 * 128, 4 * 128, tile="128x128", sms=8)
    waves = tw.wave_assignment()
    assert waves.shape == (1, 3, 4) and waves.max() == 1 and (waves == 1).sum() == 4


def test_tile_shape_efficiency_orders_by_reuse():
    """Larger tiles run more efficiently (T13): 256x128 is 1, 64x64 is the least efficient."""
    effs = {t: tile_shape_efficiency(*t) for t in TILE_SHAPES}
    assert effs[(256, 128)] == 1.0 and min(effs.values()) == effs[(64, 64)]
    assert effs[(128, 128)] > effs[(128, 64)] > effs[(64, 64)]


@pytest.mark.parametrize("bad", ["256", "axb", "0x128", (256,), 7])
def test_bad_tile(bad):
    """Tile shapes are validated with one sentence."""
    with pytest.raises(InvalidParameter, match="'tile'"):
        parse_tile(bad)


def test_r16_toast_puzzle():
    """R16: 3 slices, a pan for 2, 1 minute a side: 3 minutes, not the naive 4."""
    r = toast(3, 2)
    assert (r.naive_minutes, r.best_minutes, r.waves) == (4, 3, 3)
    assert r.pan_utilisation == 1.0
    fried = [u for wave in r.schedule for u in wave]
    assert sorted(fried) == [(s, side) for s in (1, 2, 3) for side in (1, 2)]
    for wave in r.schedule:  # a slice is never in the pan twice at once
        assert len({s for s, _ in wave}) == len(wave) <= 2
    for s in (1, 2, 3):  # side 1 before side 2
        when = {side: i for i, wave in enumerate(r.schedule) for sl, side in wave if sl == s}
        assert when[1] < when[2]


def test_toast_single_slice_takes_both_sides():
    """One slice still needs two minutes: a slice can't be fried on both sides at once."""
    assert toast(1, 2).best_minutes == 2
    with pytest.raises(InvalidParameter, match=r"'capacity' must be a positive integer \(got 0\)"):
        toast(3, 0)
