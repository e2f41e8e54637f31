"""Guards core/loss_scaling.py: fractions lost to FP16 at a scale, and GradScaler replay."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.loss_scaling import (
    SSD_LIKE_LOG2_MEAN,
    SSD_LIKE_LOG2_STD,
    loss_scale_effect,
    simulate_grad_scaler,
)


def test_unscaled_ssd_like_histogram_loses_half():
    """The slides: without shifting the histogram about half the values become zero in FP16."""
    r = loss_scale_effect(1.0)
    assert r.underflow_fraction == pytest.approx(0.5, abs=1e-12)
    assert r.overflow_fraction < 1e-6


def test_scaling_shifts_the_histogram():
    """Scaling by 2**k moves the distribution k binades right: loss falls, as a normal CDF says."""
    scales = 2.0 ** np.arange(0, 16)
    r = loss_scale_effect(scales)
    expected = [
        0.5 * (1 + math.erf((-25 - (SSD_LIKE_LOG2_MEAN + k)) / SSD_LIKE_LOG2_STD / math.sqrt(2)))
        for k in range(16)
    ]
    np.testing.assert_allclose(r.underflow_fraction, expected, rtol=1e-12)
    assert np.all(np.diff(r.underflow_fraction) < 0)
    assert np.all(np.diff(r.overflow_fraction) >= 0)


def test_analytic_fractions_agree_with_sampled_cast():
    """Independent check: a million log-normal samples rounded with simulate_cast lose the
    fractions the analytic CDF gives (to sampling error)."""
    rng = np.random.default_rng(0)
    g = np.exp2(rng.normal(SSD_LIKE_LOG2_MEAN, SSD_LIKE_LOG2_STD, 1_000_000))
    for scale in (1.0, 2.0**10, 2.0**30):
        sampled = loss_scale_effect(scale, gradients=g)
        exact = loss_scale_effect(scale)
        assert sampled.underflow_fraction == pytest.approx(exact.underflow_fraction, abs=2e-3)
        assert sampled.overflow_fraction == pytest.approx(exact.overflow_fraction, abs=2e-3)
        assert sampled.subnormal_fraction == pytest.approx(exact.subnormal_fraction, abs=2e-3)


def test_array_thresholds_are_fp16_rounding():
    """Array mode uses FP16's real rounding: 2**-25 ties to zero, 65520 ties to inf."""
    g = np.array([2.0**-25, 2.0**-25 * 1.0001, 65504.0, 65520.0, 1.0])
    r = loss_scale_effect(1.0, gradients=g)
    assert r.underflow_fraction == pytest.approx(1 / 5)
    assert r.overflow_fraction == pytest.approx(1 / 5)
    scaled = loss_scale_effect(8.0, gradients=g)  # the tiny ones survive, 65504 now overflows
    assert (scaled.underflow_fraction, scaled.overflow_fraction) == (0.0, pytest.approx(2 / 5))


def _torch_scaler_history(torch, pattern, **kw):
    """Drive a real torch.amp.GradScaler on the CPU with a given inf/NaN pattern."""
    p = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([p], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", **kw)
    scales, skipped = [], []
    for inf in pattern:
        opt.zero_grad()
        loss = (p * torch.tensor(float("inf") if inf else 1.0)).sum()
        scales.append(scaler.get_scale())
        scaler.scale(loss).backward()
        before = p.detach().clone()
        scaler.step(opt)
        scaler.update()
        skipped.append(bool(torch.equal(before, p.detach())))
    return scales, skipped, scaler.get_scale()


@pytest.mark.parametrize(
    "kwargs",
    [
        {},  # PyTorch's defaults: 65536, x2, x0.5, every 2000 steps
        {"init_scale": 1024.0, "growth_interval": 3},
        {"init_scale": 2.0**126, "growth_interval": 1},  # growth stops where float32 ends
        {"init_scale": 8.0, "growth_interval": 2, "growth_factor": 3.0, "backoff_factor": 0.25},
    ],
)
def test_matches_torch_grad_scaler_step_for_step(kwargs):
    """The same inf/NaN pattern fed to torch.amp.GradScaler and to the simulation gives the
    same scale at every step, the same skipped steps and the same final scale."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    pattern = list(rng.random(60) < 0.2) + [False] * 8 + [True, True]
    scales, skipped, final = _torch_scaler_history(torch, pattern, **kwargs)
    sim = simulate_grad_scaler(pattern, **kwargs)
    assert list(sim.scale) == scales
    assert list(sim.skipped) == skipped
    assert sim.final_scale == final
    assert sim.skipped_steps == sum(pattern)


def test_default_semantics():
    """Defaults 65536 / 2 / 0.5 / 2000: an overflow halves the scale; 2000 clean steps double it."""
    sim = simulate_grad_scaler([True] + [False] * 2000)
    assert sim.init_scale == 65536
    assert sim.scale[1] == 32768
    assert sim.final_scale == 65536
    assert sim.skipped == (True,) + (False,) * 2000


def test_gradient_magnitudes_drive_overflow():
    """With max |grad| per step, a step overflows when it times the scale reaches FP16's
    overflow threshold (65520): 1.0 at scale 65536 overflows, then fits at 32768."""
    sim = simulate_grad_scaler(max_abs_grad=[1.0, 1.0, 1.0, float("nan")])
    assert sim.skipped == (True, False, False, True)
    assert sim.scale == (65536.0, 32768.0, 32768.0, 32768.0)


def test_bad_input():
    """Exactly one of found_inf / max_abs_grad; factors in range; positive scales."""
    with pytest.raises(InvalidParameter, match="exactly one"):
        simulate_grad_scaler()
    with pytest.raises(InvalidParameter, match="'backoff_factor'"):
        simulate_grad_scaler([False], backoff_factor=1.5)
    with pytest.raises(InvalidParameter, match="'scale' must be a positive number"):
        loss_scale_effect(-1.0)
    with pytest.raises(InvalidParameter, match="'format'"):
        loss_scale_effect(1.0, format="int8")
