"""Guards live/amp.py: an autocast(bfloat16) + GradScaler loop on the CPU."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from dlperf_widgets.live.amp import amp_training_loop  # noqa: E402


def test_amp_loop_dtypes_and_skipped_step():
    """Autocast computes in bfloat16 while weights and gradients stay FP32; the injected
    overflow skips exactly that step and halves the scale, as the core replay predicts."""
    r = amp_training_loop(8, inf_steps=(3,), init_scale=2.0**16, growth_interval=2)
    assert (r.activation_dtype, r.param_dtype, r.grad_dtype) == ("bfloat16", "float32", "float32")
    assert r.skipped == (False, False, False, True, False, False, False, False)
    assert r.scales[3] == 2 * r.scales[4]
    assert r.matches_model
    finite = [x for x in r.losses if math.isfinite(x)]
    assert finite[-1] < finite[0]  # it trains


def test_no_overflow_grows_the_scale():
    """Without overflow the scale doubles every growth_interval steps."""
    r = amp_training_loop(6, inf_steps=(), init_scale=1024.0, growth_interval=2)
    assert r.scales == (1024.0, 1024.0, 2048.0, 2048.0, 4096.0, 4096.0)
    assert not any(r.skipped) and r.matches_model
