"""Guards live/checkpointing.py: R17 measured on real transformer stacks (CPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dlperf_widgets.live.checkpointing import measure_checkpointing  # noqa: E402


@pytest.mark.parametrize("mode", ["none", "every", "sqrt", "every-3"])
def test_measured_memory_matches_model(mode):
    """After-forward and peak saved bytes match checkpoint_activation_bytes within 2 %, and the
    gradients equal those of the plain network."""
    r = measure_checkpointing(16, mode)
    assert r.after_forward_bytes == pytest.approx(r.model_after_forward_bytes, rel=0.02)
    assert r.peak_bytes == pytest.approx(r.model_peak_bytes, rel=0.02)
    assert r.max_input_grad_difference < 1e-5


def test_r17_sqrt_n_memory_for_one_extra_forward():
    """R17: with sqrt(n) segments the peak grows like sqrt(n) (16 -> 64 layers: about 2x,
    without checkpointing 4x), and each layer runs forward exactly twice."""
    sqrt = {n: measure_checkpointing(n, "sqrt") for n in (16, 64)}
    none = {n: measure_checkpointing(n, "none") for n in (16, 64)}
    assert sqrt[64].peak_bytes / sqrt[16].peak_bytes == pytest.approx(2.0, rel=0.1)
    assert none[64].peak_bytes / none[16].peak_bytes == pytest.approx(4.0, rel=0.01)
    assert sqrt[64].peak_bytes < none[64].peak_bytes / 5
    assert sqrt[64].forward_passes == 2.0 and none[64].forward_passes == 1.0
