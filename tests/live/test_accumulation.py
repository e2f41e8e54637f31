"""Guards live/accumulation.py: accumulated micro-batches give the large batch's gradients."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dlperf_widgets.core.errors import InvalidParameter  # noqa: E402
from dlperf_widgets.live.accumulation import compare_accumulation  # noqa: E402


@pytest.mark.parametrize("steps", [2, 4, 8])
def test_same_gradients_and_1_over_k_activations(steps):
    """k micro-batches with loss/k give the batch's gradients to float tolerance, and one
    micro-batch keeps 1/k of the batch's activations (measured with saved-tensor hooks)."""
    r = compare_accumulation(16, steps)
    assert r.grads_match
    assert r.max_abs_grad_difference < 1e-5 * max(1.0, r.max_abs_grad)
    assert r.activation_ratio == pytest.approx(steps, rel=0.01)


def test_steps_must_divide_batch():
    """A batch that does not split evenly is refused with the kit's message."""
    with pytest.raises(InvalidParameter, match=r"'accumulation_steps' must divide batch \(16\)"):
        compare_accumulation(16, 3)
