"""Fp8ScalingExplorer and StepTimeCalculator: numbers from core.scaling and core.scaleout,
inline errors that keep the last good state."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.scaleout import step_time
from dlperf_widgets.core.scaling import fp8_quantize
from dlperf_widgets.widgets import Fp8ScalingExplorer, StepTimeCalculator


def test_fp8_explorer_is_the_core_on_its_tensor(close_after):
    """The result equals fp8_quantize of the widget's tensor; the histogram's shares add up
    to the non-zero values; the amax line sits at log2(448) for current scaling."""
    w = Fp8ScalingExplorer()
    close_after(w)
    x = w._tensor
    assert w.result.to_dict() == fp8_quantize(x, "fp8_e4m3").to_dict()
    shares = np.asarray(w._artists.hist.get_data().values)
    assert shares.sum() == pytest.approx(100.0)
    assert w._artists.amax.get_xdata()[0] == pytest.approx(np.log2(448))
    w.controls["format"].value = "fp8_e5m2"
    assert w.result.format == "fp8_e5m2" and w.result.scale == 57344 / np.abs(x).max()


def test_delayed_scaling_saturates_when_the_tensor_grew(close_after):
    """Delayed scaling with an amax history 4 binades below today's saturates values;
    a margin of 4 binades cancels it; current scaling never saturates."""
    w = Fp8ScalingExplorer(recipe="delayed", growth=4)
    close_after(w)
    assert w.result.saturated > 0
    w.controls["margin"].value = 4
    assert w.result.saturated == 0
    w.controls["margin"].value = 0
    w.controls["recipe"].value = "current"
    assert w.result.saturated == 0


def test_fp8_bad_text_is_inline(close_after, error_count):
    """A non-positive std is one inline message; the last result stays."""
    w = Fp8ScalingExplorer()
    close_after(w)
    before = w.result
    w.controls["log2_std"].value = "-1"
    assert error_count(w) == 1 and "'log2 std' must be a positive number" in w.error
    assert w.result is before
    w.controls["log2_std"].value = "2"
    assert w.error == "" and w.result is not before


def test_step_calculator_is_the_core(close_after):
    """The result equals step_time with the same arguments; the summary shows its MFU."""
    w = StepTimeCalculator(gpus=16, tensor_parallel=2, pipeline_parallel=2, global_batch=64)
    close_after(w)
    ref = step_time(
        layers=32,
        hidden=4096,
        heads=32,
        seq_len=4096,
        vocab=32000,
        gpus=16,
        tensor_parallel=2,
        pipeline_parallel=2,
        global_batch=64,
        gpu="H100",
    )
    assert w.result.to_dict() == ref.to_dict()
    assert f"{ref.mfu:.1%}" in w.output.value
    assert ref.feasibility in w.output.value  # memory feasibility beside the MFU
    w.controls["overlap"].value = False
    assert w.result.data_parallel_exposed_s == w.result.data_parallel_s


def test_step_calculator_bad_layout_is_inline(close_after, error_count):
    """12 GPUs with tensor parallel 8 is one inline message naming 'gpus'; fixing it clears."""
    w = StepTimeCalculator()
    close_after(w)
    w.controls["tensor_parallel"].value = 8
    before = w.result
    w.controls["gpus"].value = "12"
    assert error_count(w) == 1 and "'gpus' must be a multiple" in w.error
    assert w.result is before
    w.controls["gpus"].value = "64"
    assert w.error == "" and w.result.tensor_parallel == 8


def test_gpu_change_offers_its_dtypes(close_after):
    """Picking a B200 offers FP4; picking an A100 falls back to a dtype it runs."""
    w = StepTimeCalculator(gpu="B200", dtype="fp4_e2m1")
    close_after(w)
    assert w.result.dtype == "fp4_e2m1"
    w.controls["gpu"].value = "A100-SXM4-80GB"
    assert w.error == "" and w.result.dtype in w.controls["dtype"].options
