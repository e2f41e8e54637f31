"""TileWave.wave_assignment() lists a bounded schedule, refused before allocating past it."""

from __future__ import annotations

import time

import pytest
from hostile_support import run_limited

from dlperf_widgets.core import tile_wave
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.tiles import MAX_ASSIGNED_TILES


@pytest.mark.parametrize(("m", "n"), [(10**9, 128), (10**9, 10**9), (2**40, 2**20)])
def test_a_huge_schedule_is_refused_at_once(m, n):
    """wave_assignment() built the whole schedule: 14 s (and GBs) at m = 1e9."""
    tw = tile_wave(m, n, tile="128x128", sms=108)
    start = time.perf_counter()
    with pytest.raises(InvalidParameter, match=r"^'m', 'n' and 'batch'"):
        tw.wave_assignment()
    assert time.perf_counter() - start < 0.5


def test_the_largest_listed_schedule_fits_in_memory():
    """Just under the cap the schedule is listed within the 1 GB address-space limit."""
    run_limited(
        "from dlperf_widgets.core import tile_wave\n"
        f"tw = tile_wave(128 * {MAX_ASSIGNED_TILES // 1024}, 128 * 1024, tile='128x128', sms=108)\n"
        f"assert tw.tiles == {MAX_ASSIGNED_TILES}\n"
        "w = tw.wave_assignment()\n"
        "assert int(w.max()) == tw.waves - 1\n"
    )
