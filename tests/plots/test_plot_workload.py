"""Guards plots/workload.py: the stacked bar of a priced step's categories."""

from __future__ import annotations

import pytest

from dlperf_widgets.core.inference import llm_inference
from dlperf_widgets.core.scaleout import step_time
from dlperf_widgets.plots.workload import plot_time_categories, update_time_categories


def test_bar_segments_add_up_to_the_step():
    """The segments of a decode step's bar are its categories (no others) and their widths
    add up to the step time in the axis unit (ms)."""
    r = llm_inference("llama-2-7b", batch=256, context=512).priced
    a = plot_time_categories(r)
    widths = [p.get_width() for p in a.bars]
    assert sum(widths) == pytest.approx(r.step_s * 1e3)
    shown = {t.get_text() for t in a.legend.get_texts()}
    assert shown == {k for k, v in r.categories.items() if v > 0}


def test_update_redraws_in_place():
    """Updating with a training step replaces the bars: communication and the bubble appear."""
    a = plot_time_categories(llm_inference("llama-2-7b").priced)
    step = step_time(gpus=16, tensor_parallel=2, pipeline_parallel=2, global_batch=64,
                     layers=8).priced  # fmt: skip
    update_time_categories(a, step)
    names = {t.get_text() for t in a.legend.get_texts()}
    assert {"pipeline bubble", "GEMMs"} <= names
    assert sum(p.get_width() for p in a.bars) == pytest.approx(step.step_s * 1e3, rel=1e-6)
