"""Speculative decoding measured with a small draft/target pair in PyTorch on the CPU: the
output is exactly the target's greedy text, and the tokens each target pass yields agree
with Leviathan et al.'s expectation at the measured acceptance rate."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from dlperf_widgets.live.speculative import measure_speculative


@pytest.mark.parametrize(("noise", "k"), [(0.2, 4), (0.1, 2)])
def test_counted_tokens_per_pass_match_the_expectation(noise, k):
    """Counted tokens per target pass are within 10 % of (1 - a^(k+1)) / (1 - a), with a
    measured separately on the target's own text; speculation never changes the output."""
    r = measure_speculative(k, 300, noise=noise)
    assert r.matches_target
    assert 0.5 < r.acceptance < 0.95
    assert r.tokens_per_pass == pytest.approx(r.expected_tokens, rel=0.10)
    assert r.target_passes < r.tokens
