"""Guards plots/scaleout.py: the pictures show the core's numbers (bars where the schedule
says, histogram shares that add up, a timeline as long as the step)."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.scaleout import pipeline_schedule, step_time
from dlperf_widgets.core.scaling import fp8_quantize
from dlperf_widgets.plots.scaleout import (
    plot_fp8_scaling,
    plot_pipeline_schedule,
    plot_step_timeline,
)


def test_schedule_bars_cover_every_op():
    """One labelled rectangle per op; the x range is the simulated total time."""
    r = pipeline_schedule(4, 6, "1f1b")
    a = plot_pipeline_schedule(r)
    n_rect = sum(len(b.get_path().codes) // 5 for b in a.bars)  # 5 path codes a rectangle
    assert n_rect == 2 * 4 * 6 and len(a.texts) == 48
    assert a.ax.get_xlim() == (0, r.total_time)
    assert "bubble 33%" in a.title.get_text()


def test_fp8_histogram_shares_and_zones():
    """Shares sum to 100 % for a tensor without zeros; the saturation zone starts at
    log2 of the format's overflow threshold."""
    x = np.random.default_rng(0).normal(0, 1, 5000)
    r = fp8_quantize(x, "fp8_e4m3")
    a = plot_fp8_scaling(r)
    assert np.asarray(a.hist.get_data().values).sum() == pytest.approx(100.0)
    assert a.overflow.get_x() == pytest.approx(np.log2(464.0))


@pytest.mark.parametrize("schedule", ["1f1b", "interleaved"])
def test_step_timeline_spans_the_step(schedule):
    """The compute lane ends where the step's compute, communication and bubble end."""
    r = step_time(
        schedule=schedule,
        chunks=2,
        layers=8,
        hidden=1024,
        heads=16,
        seq_len=512,
        global_batch=32,
        gpus=8,
        pipeline_parallel=2,
        gpu="A100",
    )
    a = plot_step_timeline(r)
    ends = [s + d for lane, _, s, d in r.timeline if lane == "compute"]
    assert max(ends) == pytest.approx(r.step_s - r.data_parallel_exposed_s)
    assert "MFU" in a.title.get_text() and a.bars


def test_step_timeline_gives_each_series_its_own_colour():
    """Every phase a timeline can hold (ZeRO-3 traffic and launch waits included) is in the
    legend, and no two legend entries share a colour, so a reader can tell the gradient
    all-reduce from ZeRO-3's gathers."""
    from matplotlib.colors import to_hex

    r = step_time(layers=8, hidden=1024, heads=16, seq_len=512, global_batch=32, gpus=8,
                  pipeline_parallel=2, zero=3, gpu="A100")  # fmt: skip
    a = plot_step_timeline(r)
    entries = {t.get_text(): to_hex(h.get_facecolor()) for t, h in
               zip(a.legend.get_texts(), a.legend.legend_handles, strict=True)}  # fmt: skip
    assert len(set(entries.values())) == len(entries), entries
    drawn = {label for _, label, _, _ in r.timeline} - {"pipeline drain"}
    assert "ZeRO-3 traffic" in drawn and drawn <= set(entries), drawn - set(entries)
