"""Guards the interleaved schedule of core/scaleout.py's pipeline_schedule and the figures
the PipelineExplorer shows: the simulated bubble against Narayanan et al. 2021's closed
forms, the activations a stage holds against Korthikanti et al. 2022's, the dependencies
between virtual stages, and the rules on chunks and micro-batches."""

from __future__ import annotations

import itertools

import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.scaleout import pipeline_bubble, pipeline_schedule


@pytest.mark.parametrize(
    ("p", "m", "v"), [(2, 2, 2), (4, 4, 2), (4, 8, 2), (4, 12, 3), (8, 16, 2), (8, 8, 4), (3, 9, 5)]
)
def test_interleaved_bubble_equals_the_closed_form(p, m, v):
    """Simulated op by op (forward 1, backward 2, a chunk taking 1/v of both), the idle share
    of the interleaved schedule is (p - 1) / (v m + p - 1) and the step lasts
    m (t_f + t_b) + (p - 1)(t_f + t_b) / v (Narayanan et al. 2021, section 2.2.2)."""
    r = pipeline_schedule(p, m, "interleaved", chunks=v)
    assert r.bubble_fraction == pytest.approx((p - 1) / (v * m + p - 1))
    assert r.total_time == pytest.approx(3.0 * m + 3.0 * (p - 1) / v)
    assert r.formula_bubble_fraction == pytest.approx(r.bubble_fraction)
    assert r.formula_bubble_over_ideal == pytest.approx((p - 1) / (v * m))


def test_the_papers_example():
    """Narayanan et al.'s figures 3 and 4 draw 4 devices and 8 micro-batches: the bubble is
    (p - 1)/m = 3/8 of the ideal time for GPipe and 1F1B (3/11 of the step), and half that,
    3/16, interleaved with 2 chunks (3/19 of the step)."""
    for schedule in ("gpipe", "1f1b"):
        r = pipeline_schedule(4, 8, schedule)
        assert (r.formula_bubble_over_ideal, r.bubble_fraction) == pytest.approx((3 / 8, 3 / 11))
    r = pipeline_schedule(4, 8, "interleaved", chunks=2)
    assert (r.formula_bubble_over_ideal, r.bubble_fraction) == pytest.approx((3 / 16, 3 / 19))
    assert pipeline_bubble(4, 8, "interleaved", chunks=2) == pytest.approx(3 / 19)


@pytest.mark.parametrize(("p", "m", "v"), [(4, 8, 2), (4, 16, 4), (8, 16, 2), (8, 24, 3)])
def test_activations_held_per_stage(p, m, v):
    """GPipe's stages hold all m micro-batches; 1F1B's stage s holds p - s; the interleaved
    first stage p (1 + (p - 1) / (p v)) (Korthikanti et al. 2022), a little more than 1F1B."""
    assert pipeline_schedule(p, m, "gpipe").activations_per_stage == (m,) * p
    assert pipeline_schedule(p, m, "1f1b").activations_per_stage == tuple(range(p, 0, -1))
    r = pipeline_schedule(p, m, "interleaved", chunks=v)
    assert r.peak_activations == pytest.approx(p * (1 + (p - 1) / (p * v)))
    assert r.activations_per_stage[0] == r.peak_activations


def test_interleaving_multiplies_the_sends():
    """A micro-batch crosses v p - 1 virtual-stage boundaries forward and as many backward:
    2 (p - 1) sends for 1F1B, 2 (2 p - 1) with 2 chunks."""
    assert pipeline_schedule(4, 8, "1f1b").sends_per_micro_batch == 6
    assert pipeline_schedule(4, 8, "interleaved", chunks=2).sends_per_micro_batch == 14


def test_interleaved_respects_virtual_stage_dependencies():
    """Chunk c of stage s is virtual stage c p + s: its forward starts after virtual stage
    c p + s - 1 finished the same micro-batch's forward, its backward after c p + s + 1's
    backward; a stage runs one op at a time; every (virtual stage, micro-batch) runs once
    forward and once backward."""
    p, m, v = 4, 8, 3
    r = pipeline_schedule(p, m, "interleaved", chunks=v)
    end = {}
    for (s, i, k, _, e), c in zip(r.ops, r.op_chunks, strict=True):
        end[(k, c * p + s, i)] = e
    assert len(end) == len(r.ops) == 2 * p * m * v
    for (s, i, k, start, _), c in zip(r.ops, r.op_chunks, strict=True):
        j = c * p + s
        if k == "F" and j > 0:
            assert start >= end[("F", j - 1, i)]
        if k == "B":
            assert start >= (end[("B", j + 1, i)] if j < v * p - 1 else end[("F", j, i)])
    for s in range(p):
        spans = sorted((o[3], o[4]) for o in r.ops if o[0] == s)
        assert all(a[1] <= b[0] + 1e-12 for a, b in itertools.pairwise(spans))


def test_bad_input_is_one_sentence():
    """Interleaving needs at least 2 chunks and whole groups of p micro-batches (Megatron-LM's
    rule); the message names the parameter, the rule and the value."""
    with pytest.raises(InvalidParameter, match=r"'chunks' must be at least 2 .*\(got 1\)"):
        pipeline_schedule(4, 8, "interleaved")
    with pytest.raises(
        InvalidParameter, match=r"'micro_batches' must be a multiple of 'stages' \(4\)"
    ):
        pipeline_schedule(4, 6, "interleaved", chunks=2)
    with pytest.raises(InvalidParameter, match="'chunks' must be"):
        pipeline_schedule(4, 8, "interleaved", chunks=17)
    with pytest.raises(InvalidParameter, match="at most 16,384"):
        pipeline_schedule(64, 256, "interleaved", chunks=2)
