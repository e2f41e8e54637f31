"""Guards the design, debugging and estimation tasks of exercises 07-13: every valid design
is accepted (the sets are rebuilt here from the guides' formulas, not from the checks), each
slip gets the hint that names it, and garbage gets one sentence."""

from __future__ import annotations

import pytest

from dlperf_widgets.exercises import check, task

DESIGN = ["07.sparse_batch", "08.micro_batch", "10.batch_scale", "11.decode_batch", "12.fp8_hidden"]
CHOICE = [
    "07.overflow_fix",
    "08.oom_fix",
    "09.gap_reason",
    "10.profile_fix",
    "11.measured_limiter",
    "13.step_loss",
]


def _ok(task_id, answer, **params):
    r = check(task_id, answer, **params)
    assert r.correct, r.text()
    return r


def _hint(task_id, answer, **params):
    r = check(task_id, answer, **params)
    assert r.status == "wrong" and not r.correct, r.text()
    assert r.hint and r.message.endswith("."), r.text()
    return r.hint


# -- garbage ----------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", DESIGN)
@pytest.mark.parametrize("answer", [0, -4, 2.5, "256", [256], float("nan"), True])
def test_design_garbage_is_one_sentence(task_id, answer):
    """A design must be a positive whole number: anything else is invalid, never raised."""
    r = check(task_id, answer)
    assert r.status == "invalid"
    assert r.message.startswith("the answer must") and r.message.endswith(".")
    assert "\n" not in r.message


@pytest.mark.parametrize("task_id", DESIGN)
def test_design_too_large_for_the_model_is_a_message(task_id):
    """An absurdly large design is judged or refused in one sentence, never raised."""
    r = check(task_id, 10**15)
    assert r.status in ("wrong", "invalid") and not r.correct
    assert r.message.endswith(".") and "\n" not in r.message


@pytest.mark.parametrize("task_id", CHOICE)
def test_choice_garbage_lists_the_choices(task_id):
    """An answer outside the choices names every choice."""
    r = check(task_id, "banana")
    assert r.status == "invalid"
    for c in task(task_id).choices:
        assert repr(c) in r.message


@pytest.mark.parametrize("task_id", DESIGN + CHOICE + ["09.overhead_share"])
def test_unanswered(task_id):
    """The student template's `...` is 'not answered yet'."""
    assert check(task_id, ...).status == "unanswered"


# -- 07 ----------------------------------------------------------------------------------------


def test_sparse_batch_accepts_a_range_and_names_both_limits():
    """2:4 pays only once the GEMM is math-bound (enough tokens) and the time budget caps M:
    several M between are right; too few tokens and too many get different hints."""
    for m in (256, 384, 512, 768, 1024):
        _ok("07.sparse_batch", m)
    assert "memory-bound" in _hint("07.sparse_batch", 16)
    assert "more tokens" in _hint("07.sparse_batch", 128)
    assert "budget" in _hint("07.sparse_batch", 4096)
    # a looser budget admits the larger batch
    _ok("07.sparse_batch", 4096, budget_s=1e-3)


def test_overflow_fix_follows_the_fp16_range():
    """FP16's largest finite value is 65504 (IEEE 754 binary16): above it BF16's range is the
    fix; a gradient below 2**-24 needs loss scaling instead."""
    _ok("07.overflow_fix", "bf16")
    _ok("07.overflow_fix", "BF16")
    assert "65504" in _hint("07.overflow_fix", "loss scaling")
    assert "inf" in _hint("07.overflow_fix", "nothing")
    _ok("07.overflow_fix", "loss scaling", amax=100.0, gradient=1e-9)
    _ok("07.overflow_fix", "nothing", amax=100.0, gradient=1e-3)


# -- 08 ----------------------------------------------------------------------------------------

# Korthikanti et al. 2022, section 4.1: s*b*h*(34 + 5*a*s/h) bytes of activations per layer;
# mixed-precision AdamW keeps 6 + 4 + 8 = 18 B per parameter (ZeRO paper, section 3.1).
LAYERS, HIDDEN, SEQ, HEADS, PARAMS = 24, 2048, 2048, 16, 1.3e9


def _fits(micro):
    per_sample = LAYERS * SEQ * HIDDEN * (34 + 5 * HEADS * SEQ / HIDDEN)
    return PARAMS * 18 + micro * per_sample <= 80 * 2**30


def test_micro_batch_accepts_every_valid_design():
    """The accepted micro-batches are exactly those dividing 32 with at most 16 steps that
    fit 80 GiB by the published activation formula."""
    valid = {b for b in range(1, 33) if 32 % b == 0 and 32 // b <= 16 and _fits(b)}
    assert valid == {2, 4}
    for b in range(1, 33):
        assert check("08.micro_batch", b).correct == (b in valid), b


def test_micro_batch_hints_name_the_broken_rule():
    """Each broken rule gets its own sentence; the whole batch gets the accumulation hint."""
    assert "does not divide" in _hint("08.micro_batch", 3)
    assert "accumulation steps is more than" in _hint("08.micro_batch", 1)
    assert "GiB" in _hint("08.micro_batch", 8)
    assert "accumulate" in _hint("08.micro_batch", 32)


def test_oom_fix_attacks_the_larger_part():
    """7B mixed AdamW: 126 GB of model state against 32 layers x 2048 x 4096 x 114 B = 30.6 GB
    of activations at micro-batch 1 (ZeRO); at micro-batch 8 the activations (245 GB) win."""
    assert 7e9 * 18 > 32 * 2048 * 4096 * (34 + 5 * 32 * 2048 / 4096)
    _ok("08.oom_fix", "zero")
    assert "ZeRO" in _hint("08.oom_fix", "checkpointing")
    _ok("08.oom_fix", "checkpointing", batch=8)
    assert "recomputes" in _hint("08.oom_fix", "zero", batch=8)


# -- 09 ----------------------------------------------------------------------------------------


def test_overhead_share_of_a_tiny_gemm():
    """A 64^3 GEMM does 0.5 MFLOP and moves 24 KiB: well under a microsecond of work, so a
    per-kernel cost of microseconds is most of the prediction; a percentage is flagged."""
    share = task("09.overhead_share").expected_answer()
    assert 0.8 < share < 1.0
    _ok("09.overhead_share", share * 1.01)
    assert "percentage" in _hint("09.overhead_share", share * 100)
    assert "ideal" in _hint("09.overhead_share", 0.0023)


def test_gap_reason_is_the_fixed_cost_and_not_the_measurement():
    """The tiny GEMM's gap is the fixed cost per call whatever was measured; a large GEMM is
    limited by the math peak instead (the check reads only the choice)."""
    _ok("09.gap_reason", "fixed cost per call")
    assert "fixed cost" in _hint("09.gap_reason", "memory bandwidth")
    assert "fixed cost" in _hint("09.gap_reason", "math peak")
    _ok("09.gap_reason", "math peak", m=8192, n=8192, k=8192)


# -- 10 ----------------------------------------------------------------------------------------


def test_batch_scale_accepts_exactly_the_window():
    """Work b x 1 us must reach the 5 us launch and 200 kernels x b us stay within 2 ms:
    b from 5 to 10 (counted in whole microseconds, so the ties are exact)."""
    valid = {b for b in range(1, 31) if b >= 5 and 200 * b <= 2000}
    assert valid == set(range(5, 11))
    for b in range(1, 31):
        assert check("10.batch_scale", b).correct == (b in valid), b
    assert "launch-bound" in _hint("10.batch_scale", 1)
    assert "launch-bound" in _hint("10.batch_scale", 3)
    assert "budget" in _hint("10.batch_scale", 11)


def test_profile_fix_reads_the_kernel_time():
    """Each pass over 16 Mi FP16 values moves at least 64 MiB: over 30 us at the A100's
    2039 GB/s, six times the launch, so fusion; 4096 values take nanoseconds, so a graph."""
    assert 2 * 16 * 2**20 * 2 / 2039e9 > 6 * 5e-6
    _ok("10.profile_fix", "fuse")
    assert "DRAM" in _hint("10.profile_fix", "cuda graph")
    _ok("10.profile_fix", "cuda graph", elements=4096)
    assert "CUDA graph" in _hint("10.profile_fix", "fuse", elements=4096)


# -- 11 ----------------------------------------------------------------------------------------


def _intensity(b, m=11008, k=4096):
    return 2 * m * b * k / (2 * (m * k + k * b + m * b))


def test_decode_batch_between_ridge_and_capacity():
    """Llama-2-7B's 11008 x B x 4096 FP16 GEMM crosses the H100's 989.4 / 3.35 = 295 FLOP/B
    ridge at B of about 330; 128-token KV caches of 32 x 4096 x 2 x 2 B per token fill the
    80 GiB beside 13.5 GB of weights at B of about 1079."""
    ridge = 989.4e12 / 3.35e12
    kv_per_seq = 128 * 32 * 4096 * 2 * 2
    weights = 6_738_415_616 * 2
    high = int((80 * 2**30 - weights) // kv_per_seq)
    low = next(b for b in range(1, 2000) if _intensity(b) >= 1.03 * ridge)
    for b in (low, (low + high) // 2, high):
        _ok("11.decode_batch", b)
    below = max(b for b in range(1, 2000) if _intensity(b) <= 0.97 * ridge)
    assert "memory-bound" in _hint("11.decode_batch", below)
    assert "GiB" in _hint("11.decode_batch", high + 1)
    assert "2 bytes" in _hint("11.decode_batch", 148)


def test_measured_limiter_from_the_published_trace():
    """The shipped H100 measurement of 256^3 BF16 (4.99 us): 33.6 MFLOP / 4.99 us is 0.7 % of
    989 TFLOP/s and 393 kB / 4.99 us is 2.4 % of 3.35 TB/s, so the fixed cost; the
    4096 x 2048 x 4096 one reaches about 77 % of the peak, so math."""
    _ok("11.measured_limiter", "fixed cost per kernel")
    assert "fixed cost" in _hint("11.measured_limiter", "memory")
    assert "tenth" in _hint("11.measured_limiter", "math")
    _ok("11.measured_limiter", "math", m=4096, n=2048, k=4096)
    r = check("11.measured_limiter", "math", m=4097)
    assert r.status == "invalid" and "no published" in r.message


# -- 12 ----------------------------------------------------------------------------------------


def test_fp8_hidden_accepts_many_designs_and_names_each_rule():
    """16-byte alignment (multiples of 16 one-byte elements), math-bound, 200 us, 16 MiB:
    several h pass; each broken rule has its own hint."""
    for h in (1024, 2048, 2560, 3072, 3584):
        _ok("12.fp8_hidden", h)
    assert "not of 16" in _hint("12.fp8_hidden", 4100)
    assert "not a multiple of 16" in _hint("12.fp8_hidden", 1000)
    assert "memory-bound" in _hint("12.fp8_hidden", 512)
    assert "budget" in _hint("12.fp8_hidden", 4096)
    assert "MiB" in _hint("12.fp8_hidden", 8192)


def test_step_loss_compares_bubble_and_allreduce():
    """Bubble 1.2 s x 7 / 8 = 1.05 s against 2 x 7/8 x 14 GB / 450 GB/s = 54 ms; with 256
    micro-batches of a 0.1 s step the bubble is 2.7 ms and the all-reduce wins."""
    _ok("13.step_loss", "pipeline bubble")
    assert "micro-batches" in _hint("13.step_loss", "all-reduce")
    _ok("13.step_loss", "all-reduce", micro_batches=256, compute_s=0.1)
    assert "overlap" in _hint("13.step_loss", "pipeline bubble", micro_batches=256, compute_s=0.1)
