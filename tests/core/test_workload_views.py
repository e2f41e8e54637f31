"""Guards the helpers of core/workload.py that other modules' views read from the kernel
list (the dropout masks a layer saves, used by the CPU memory check)."""

from __future__ import annotations

import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.workload import LlmSpec, dropout_mask_elements, workload


def test_dropout_mask_elements_count_the_masks_one_layer_saves():
    """Eager attention with dropout keeps three masks per layer (the probabilities', a s^2 b
    elements, and one after each residual branch, s b h each); a fused kernel drops in
    place, leaving the two s b h masks; no dropout, none."""
    s, b, h, a = 128, 2, 256, 8
    spec = LlmSpec("t", 2, h, a, a, h // a, 4 * h, 1000, gated_mlp=False, rotary=False)

    def masks(**kw):  # type: ignore[no-untyped-def]
        return dropout_mask_elements(workload(spec, phase="training", batch=b, seq=s, **kw))

    assert masks(attention="eager", dropout=True) == 2 * s * b * h + a * s * s * b
    assert masks(attention="flash2", dropout=True) == 2 * s * b * h
    assert masks(attention="eager", dropout=False) == 0
    with pytest.raises(InvalidParameter, match="'workload' must be a Workload"):
        dropout_mask_elements("llama")
