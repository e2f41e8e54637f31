"""FormatExplorer and LossScalingExplorer: numbers from core.formats and core.loss_scaling."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.formats import simulate_cast
from dlperf_widgets.core.loss_scaling import loss_scale_effect
from dlperf_widgets.widgets import FormatExplorer, LossScalingExplorer


def test_value_in_each_format(close_after):
    """0.1 is not exact in any binary format; FP16 stores 0.0999755859375 (IEEE half)."""
    w = FormatExplorer(value=0.1)
    close_after(w)
    assert set(w.result) == {"fp32", "tf32", "bf16", "fp16", "fp8_e5m2", "fp8_e4m3"}
    assert float(w.result["fp16"].values[0]) == 0.0999755859375  # 1638 / 2**14
    assert w.result["fp16"].to_dict() == simulate_cast([0.1], "fp16").to_dict()
    assert "0.099975586" in w.output.value


def test_overflow_and_underflow(close_after):
    """70000 overflows FP16 (max 65504) but not BF16; 1e-9 flushes to zero in FP16."""
    w = FormatExplorer(value=1.0)
    close_after(w)
    w.controls["value"].value = "70000"
    assert w.result["fp16"].overflow == 1 and w.result["bf16"].overflow == 0
    assert abs(w._artists.value.get_xdata()[0] - 70000) < 1e-9
    w.controls["value"].value = "1e-9"
    assert w.result["fp16"].underflow == 1
    assert w.result["fp32"].exact + w.result["fp32"].precision_loss == 1


@pytest.mark.parametrize("text", ["abc", "inf", "1e400", ""])
def test_bad_value_is_inline(close_after, error_count, text):
    """A value that is not a finite number: one inline message, result kept."""
    w = FormatExplorer()
    close_after(w)
    before = w.result
    w.controls["value"].value = text
    assert error_count(w) == 1 and "'value' must be a finite number" in w.error
    assert w.result is before


def test_loss_scaling_matches_core_and_shifts_histogram(close_after):
    """Scaling by 2**k shifts the histogram k to the right; fractions are the core's."""
    w = LossScalingExplorer()
    close_after(w)
    assert w.result == loss_scale_effect(1.0)
    edges0 = np.array(w._artists.hist.get_data().edges)
    w.controls["log2_scale"].value = 12
    assert w.result == loss_scale_effect(2.0**12)
    np.testing.assert_allclose(np.array(w._artists.hist.get_data().edges), edges0 + 12)
    assert w.result.underflow_fraction < loss_scale_effect(1.0).underflow_fraction
    assert "kept" in w._artists.title.get_text()


def test_bf16_needs_no_scaling(close_after):
    """BF16 has FP32's exponent range: unscaled gradients almost all survive."""
    w = LossScalingExplorer(format="bf16")
    close_after(w)
    assert w.result.kept_fraction > 0.999


def test_loss_scaling_bad_text(close_after, error_count):
    """A non-positive std is refused inline, naming the field."""
    w = LossScalingExplorer()
    close_after(w)
    w.controls["log2_std"].value = "-1"
    assert error_count(w) == 1 and "'log2 std' must be a positive number" in w.error
