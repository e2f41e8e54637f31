"""Guards the exercise self-checks: right answers pass, known mistakes get their hint,
nonsense gets one clear sentence, and nothing a learner types raises."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlperf_widgets import gemm
from dlperf_widgets.exercises import CheckResult, check, task, tasks

ALL = tasks()
IDS = [t.id for t in ALL]
# Tasks about a measurement take the measured time as a parameter.
MEASURED = {t.id: {"time_s": 0.0125} for t in ALL if "time_s" in t.params}


def _check(task_id, answer):
    return check(task_id, answer, **MEASURED.get(task_id, {}))


def _mistake_cases():
    for t in ALL:
        for m in t.mistakes:
            yield pytest.param(t.id, m.name, id=f"{t.id}:{m.name}")


# -- every task ------------------------------------------------------------------------------


def test_every_notebook_has_tasks():
    """Each exercise notebook (01 onwards, at least up to 12) has 3 to 8 checked tasks."""
    prefixes = sorted({i.split(".")[0] for i in IDS})
    assert len(prefixes) >= 12
    assert prefixes == [f"{i:02d}" for i in range(1, len(prefixes) + 1)]
    for p in prefixes:
        assert 3 <= len(tasks(p + ".")) <= 8, p


@pytest.mark.parametrize("task_id", IDS)
def test_expected_answer_is_accepted(task_id):
    """The answer the core computes is marked correct, and shows green."""
    t = task(task_id)
    r = _check(task_id, t.expected_answer(**MEASURED.get(task_id, {})))
    assert r.correct and r.status == "correct", r.text()
    assert "#1e7e34" in r._repr_html_()
    assert r.to_dict()["correct"] is True


@pytest.mark.parametrize("task_id, mistake", list(_mistake_cases()))
def test_each_listed_mistake_gets_its_hint(task_id, mistake):
    """Feeding the value a listed mistake produces returns that mistake's hint, in red.

    Where two mistakes lead to the same value (fp32-sized elements halve the intensity just
    like forgetting the factor 2) the one listed first speaks, and its hint names both."""
    t = task(task_id)
    index = [m.name for m in t.mistakes].index(mistake)

    def values(m):
        v = m.value({**t.params, **MEASURED.get(task_id, {})})
        return v if isinstance(v, list) else [v]

    expected = t.expected_answer(**MEASURED.get(task_id, {}))
    wrong = [v for v in values(t.mistakes[index]) if v != expected]
    if not wrong:  # a choice whose hint is for other parameters (see test_pad_to_what)
        assert t.kind == "choice", f"{task_id}: mistake {mistake!r} gives the right answer"
        return
    for v in wrong:
        speaker = next(
            m
            for m in t.mistakes
            if any(math.isclose(v, w) if not isinstance(v, str) else v == w for w in values(m))
        )
        r = _check(task_id, v)
        assert not r.correct and r.status == "wrong"
        assert r.hint == speaker.hint, f"{task_id} {mistake}: got {r.hint!r}"
        assert "#b00020" in r._repr_html_()


@pytest.mark.parametrize("task_id", IDS)
@pytest.mark.parametrize("answer", [..., None])
def test_placeholder_is_not_answered_yet(task_id, answer):
    """The student template's `...` (or None) says 'not answered yet', grey, and is not correct."""
    r = check(task_id, answer)  # before any parameter is looked at
    assert r.status == "unanswered" and not r.correct
    assert "not answered yet" in r.text()
    assert "#5f6368" in r._repr_html_()


NONSENSE = [
    "abc",
    [1, 2],
    (3,),
    {"a": 1},
    float("nan"),
    float("inf"),
    -3,
    True,
    object(),
    np.array([1.0, 2.0]),
    2.5,
]


@pytest.mark.parametrize("task_id", IDS)
@pytest.mark.parametrize("answer", NONSENSE, ids=lambda a: type(a).__name__ + repr(a)[:8])
def test_nonsense_gets_a_clear_message(task_id, answer):
    """Nonsense never raises; it is invalid (or simply wrong), with a one-sentence message."""
    r = _check(task_id, answer)
    assert isinstance(r, CheckResult) and not r.correct
    assert r.status in ("invalid", "wrong")
    assert r.message.endswith(".") and "\n" not in r.message
    if r.status == "invalid":
        assert r.message.startswith("the answer must")


# -- the common mistakes of the course, with independently computed values -------------------

M, N, K = 8192, 128, 8192
# The Linear layer of exercise 02 (4096 outputs, 1024 inputs, batch 64, FP16) as a GEMM.
LM, LN, LK = 4096, 64, 1024
LINEAR_AI = 2 * LM * LN * LK / ((LM * LK + LK * LN + LM * LN) * 2)


def test_forgot_the_factor_2():
    """M·N·K instead of 2·M·N·K halves the intensity; the hint names the two FLOPs."""
    r = check("02.linear_ai", LINEAR_AI / 2)
    assert "two FLOPs" in r.hint


def test_bits_instead_of_bytes():
    """Counting 16 bits per FP16 element gives 8x the bytes; the hint says bits."""
    r = check("02.linear_ai", LINEAR_AI / 8)
    assert "bits" in r.hint


def test_ignored_writing_c():
    """Leaving out the write of C is caught in the memory time and in the intensity."""
    assert "C" in check("01.memory_time", (M * K + K * N) * 2 / 900e9).hint
    no_c = 2 * LM * LN * LK / ((LM * LK + LK * LN) * 2)
    assert "outputs" in check("02.linear_ai", no_c).hint


def test_wrong_dtype_size():
    """FP32-sized elements (4 bytes) for the FP16 Linear layer halve its intensity; the hint
    names the element size."""
    four_bytes = 2 * LM * LN * LK / ((LM * LK + LK * LN + LM * LN) * 4)
    assert "2 bytes, not 4" in check("02.linear_ai", four_bytes).hint


def test_flops_versus_time():
    """Answering the math time (FLOPs / FLOP/s) where the memory time is asked."""
    r = check("01.memory_time", 2 * M * N * K / 125.3376e12)
    assert "math time" in r.hint


def test_megabytes_unit_slip():
    """38.54 (MB) where bytes are asked: the hint names the 1e6."""
    assert check("06.bn_bytes", 3 * 32 * 64 * 56 * 56 * 2).correct
    assert "MB" in check("06.bn_bytes", 3 * 32 * 64 * 56 * 56 * 2 / 1e6).hint


def test_off_by_one_tile_count():
    """floor(3000/256) x floor(2000/128) = 11 x 15 = 165 tiles instead of 12 x 16 = 192."""
    assert check("03.tiles", 192).correct
    assert "round each dimension up" in check("03.tiles", 165).hint


def test_one_column_too_many():
    """M = 3072 has 12 tile rows, 108 // 12 = 9 columns fit a wave: N = 1152, not 1280."""
    assert check("03.one_wave_n", 9 * 128).correct
    assert "second" in check("03.one_wave_n", 10 * 128).hint


def test_percent_for_fraction():
    """192 tiles in 2 waves of 108: 88.9 %, which must be given as 0.889."""
    assert check("03.wave_efficiency", 192 / 216).correct
    assert "percentage" in check("03.wave_efficiency", 88.89).hint


def test_milliseconds_for_seconds():
    """138412032 B at 900 GB/s is 153.8 us; 0.1538 (ms) gets the unit hint."""
    assert check("01.memory_time", 138412032 / 900e9).correct
    assert "milliseconds" in check("01.memory_time", 0.1538).hint


def test_published_figures():
    """The course's reference numbers are accepted at their printed rounding."""
    assert check("02.ops_per_byte", 138.9).correct  # V100: 125 TFLOP/s / 900 GB/s
    assert check("02.linear_ai", 315, batch=512).correct  # the lesson's batch
    assert check("02.linear_ai", 1, batch=1).correct  # batch 1: about 1 FLOP/B


def test_classification_is_case_insensitive():
    """'Memory', ' MEMORY ' and 'memory-bound' all mean 'memory'."""
    for answer in ("Memory", " MEMORY ", "memory-bound", "memory bound"):
        assert check("02.limiter_tall", answer).correct
    r = check("02.limiter_tall", "compute")
    assert r.status == "invalid" and "'math', 'memory', 'latency'" in r.message


def test_classification_follows_the_core():
    """A 8192^3 GEMM on a V100 is math-bound, and the check agrees with gemm()."""
    assert gemm(8192, 8192, 8192, dtype="fp16", gpu="V100").limiter == "math"
    assert check("02.limiter_tall", "math", n=8192).correct


def test_math_batch_against_a_second_formula():
    """Solving 2MNK / (2(MK + KN + MN)) > ops:byte for N in closed form gives 168."""
    from dlperf_widgets import gpu

    ratio = gpu("V100").ops_per_byte("fp16")
    m, k = 4096, 1024
    n = math.floor(ratio * m * k / (m * k - ratio * (m + k))) + 1
    assert n == 168 and check("02.math_batch", n).correct
    assert "next one" in check("02.math_batch", n - 1).hint


def test_alignment_helps_only_when_math_bound():
    """Padding K 4095 -> 4096 halves the model's time at N = 4096 but not at N = 1."""
    assert check("04.helps_batch1", "no").correct
    assert "memory-bound" in check("04.helps_batch1", "yes").hint
    assert check("04.helps_batch1", "yes", n=4096).correct
    assert "math-bound" in check("04.helps_batch1", "no", n=4096).hint


def test_integer_answers_accept_whole_floats_and_numpy():
    """192.0 and np.int64(192) are whole numbers; 191.5 is not."""
    assert check("03.tiles", 192.0).correct
    assert check("03.tiles", np.int64(192)).correct
    assert "whole number" in check("03.tiles", 191.5).message


def test_whole_result_object():
    """Passing a GemmResult instead of one of its fields says which field to pick."""
    r = check("01.memory_time", gemm(M, N, K))
    assert r.status == "invalid" and "r.flops" in r.message


def test_unknown_task_and_parameter():
    """A misspelt task id or parameter is a clear message, with a suggestion."""
    r = check("01.memory_tim", 1)
    assert r.status == "invalid" and "'01.memory_time'" in r.message
    r = check("01.memory_time", 1, q=3)
    assert r.status == "invalid" and "no parameter 'q'" in r.message
    with pytest.raises(KeyError):
        task("nope")


def test_measurement_tasks_need_the_time():
    """Without the measured time a measurement task says what to pass, and does not raise."""
    r = check("09.achieved_flops", 1e10)
    assert r.status == "invalid" and "time_s=" in r.message
    t = 0.0125  # a 512^3 fp32 GEMM in 12.5 ms: 2 * 512**3 / 0.0125 = 21.47 GFLOP/s
    assert check("09.achieved_flops", 21.47e9, time_s=t).correct
    assert "FLOP count" in check("09.achieved_flops", 2 * 512**3, time_s=t).hint
    assert "TFLOP/s" in check("09.achieved_flops", 21.47e-3, time_s=t).hint


def test_later_topics_against_published_figures():
    """FP16 max 65504 (a larger amax needs BF16, up to it nothing); ZeRO-1 keeps 2 + 4 B per
    parameter whole and splits 12 B over 8 GPUs; 2:4 at 60 % of runtime: 1/0.7."""
    assert check("07.overflow_fix", "nothing", amax=65504.0).correct
    assert check("07.overflow_fix", "bf16", amax=65600.0).correct
    assert check("08.zero1_per_gpu", 7e9 * (2 + 4) + 7e9 * 12 / 8).correct
    assert check("07.sparse_end_to_end", 1 / (0.4 + 0.6 / 2)).correct
    assert check("05.first_conv_channels", 4).correct
    assert check("08.checkpoint_segment", 10).correct


def test_beyond_the_guides_against_independent_figures():
    """Algorithm 0's 4Nd + 4N^2 at N = 2048, d = 64 in FP16; int4 with a scale per 64
    weights = 4.25 bits; 200 launches of 5 us = 1 ms; Llama-3-8B's own 8 K/V heads are a
    valid GQA design for 64 sequences of 8192 tokens on an 80 GiB H100, its 32 query heads
    (no grouping) are not."""
    assert check("11.kv_heads_design", 8).correct
    assert check("10.standard_attention_bytes", (4 * 2048 * 64 + 4 * 2048**2) * 2).correct
    assert check("11.int4_bits", 4.25).correct
    assert check("10.launch_bound_time", 1e-3).correct
    assert "grouped-query" in check("11.kv_heads_design", 32).hint


def test_assert_correct_for_graders():
    """assert_correct() passes a right answer and raises AssertionError with the hint."""
    assert check("02.linear_ai", LINEAR_AI).assert_correct().correct
    with pytest.raises(AssertionError, match="two FLOPs"):
        check("02.linear_ai", LINEAR_AI / 2).assert_correct()
    with pytest.raises(AssertionError, match="not answered yet"):
        check("02.linear_ai", ...).assert_correct()


def test_text_display():
    """str() is a one-line verdict plus an indented hint line."""
    s = str(check("02.linear_ai", LINEAR_AI / 2))
    assert s.startswith("✗ 02.linear_ai: not right yet.") and "\n  Hint: " in s
    assert str(check("02.linear_ai", LINEAR_AI)).startswith("✓ 02.linear_ai: correct")


def test_an_answer_within_tolerance_is_not_shown_as_corrected():
    """V100 ops:byte from the rounded 125 TFLOP/s is 138.9, the kit's exact peak gives 139.3:
    both are right, and the message says the learner's figure is within the tolerance rather
    than printing 'correct (139.3)' as if it were a correction."""
    from dlperf_widgets.exercises import check

    r = check("02.ops_per_byte", 138.9)
    assert r.correct
    assert "138.9 FLOP/B is within 1 % of the kit's 139.3 FLOP/B" in r.message
    assert check("02.ops_per_byte", 139.26).message.startswith("correct (139.3")


def test_context_gap_task_is_the_fixed_costs_of_the_two_contexts():
    """09.context_gap (curriculum T57): the eager minus the back-to-back time of one GEMM is
    the difference of the two contexts' fixed costs (the work is the same), recomputed here
    from the calibrated constants: the host's launch plus the isolated kernel's extra ramp.
    The likely slips (kernel instead of eager, the whole eager time, microseconds) get their
    hint."""
    from dlperf_widgets.core.calibration import achievable

    a = achievable("H100-SXM", "bf16")
    gap = a.launch_overhead_s + max(a.kernel_overhead_s, a.back_to_back_overhead_s)
    gap -= a.back_to_back_overhead_s
    assert gap > 10e-6
    assert check("09.context_gap", gap).correct
    assert check("09.context_gap", gap * 1.015).correct
    assert not check("09.context_gap", gap * 1.1).correct
    assert "launch overhead" in check("09.context_gap", a.kernel_overhead_s - 2.75e-6).hint
    assert "microseconds" in check("09.context_gap", gap * 1e6).hint
    eager = gemm(256, 256, 256, dtype="bf16", gpu="H100-SXM", context="eager").predicted_time_s
    assert "whole eager time" in check("09.context_gap", eager).hint


def test_l2_speedup_task_is_bounded_by_the_bandwidths():
    """03.l2_speedup (curriculum T58): a warm 4096 x 16 x 1024 BF16 GEMM on an L40S (8.5 MB,
    inside its published 96 MiB L2) beats the DRAM roofline, so the speed-up over a cold call
    is above 1, yet below the L2 / DRAM bandwidth ratio (5.161 / 0.864 TB/s, data/gpus.csv):
    the fixed cost per kernel does not shrink. Quoting that ratio, or warm / cold, gets the
    matching hint."""
    cold = gemm(4096, 16, 1024, dtype="bf16", gpu="L40S", cache="cold")
    warm = gemm(4096, 16, 1024, dtype="bf16", gpu="L40S", cache="warm")
    assert warm.l2_resident and warm.predicted_time_s < cold.roofline_time_s
    speedup = cold.predicted_time_s / warm.predicted_time_s
    assert 1 < speedup < 5.161 / 0.864
    assert check("03.l2_speedup", speedup).correct
    assert "bandwidth" in check("03.l2_speedup", 5.161 / 0.864).hint
    assert "cold ÷ warm" in check("03.l2_speedup", 1 / speedup).hint
