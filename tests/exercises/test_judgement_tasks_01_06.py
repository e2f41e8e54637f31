"""Guards the design, debugging and estimation tasks of exercises 01-06: every valid design
passes (checked against bounds worked out by hand here), each slip gets its own hint, and
garbage gets one sentence without raising."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

import dlperf_widgets
from dlperf_widgets.exercises import check, task

NEW = [
    "01.ridge_batch",
    "01.predict_ratio",
    "01.gap_reason",
    "02.trace_limiter",
    "02.trace_fix",
    "03.wave_design",
    "03.profile_fix",
    "04.vocab_design",
    "04.trace_fix",
    "04.trace_tensor_cores",
    "05.width_design",
    "05.batch_design",
    "06.predict_ratio",
    "06.gap_reason",
]
DESIGN = [t for t in NEW if task(t).kind == "design"]


def _valid(task_id, answers):
    for a in answers:
        r = check(task_id, a)
        assert r.correct, r.text()
        assert r.message.startswith("correct:")


def _wrong(task_id, answer, words):
    r = check(task_id, answer)
    assert r.status == "wrong", r.text()
    assert words in r.hint, r.text()


# -- 01: a batch across the ridge within 200 MB ----------------------------------------------


def test_ridge_batch_bounds_from_the_closed_form():
    """A100 FP16 ops:byte r = 312e12 / 2039e9; MNK / (MK + KN + MN) > r gives N >= 159, and
    2 (MK + KN + MN) <= 200e6 gives N <= 2007: both ends pass, one step outside fails."""
    r, m, k = 312e12 / 2039e9, 8192, 8192
    lo = math.floor(r * m * k / (m * k - r * (m + k))) + 1
    hi = math.floor((100e6 - m * k) / (m + k))
    assert (lo, hi) == (159, 2007)
    _valid("01.ridge_batch", [lo, 256, 1000, 1024.0, np.int64(2000), hi])
    _wrong("01.ridge_batch", lo - 1, "memory side of the ridge")
    _wrong("01.ridge_batch", hi + 1, "budget")
    _wrong("01.ridge_batch", 153, "margin")  # N = ceil(ops:byte): the listed slip
    zero = check("01.ridge_batch", 0)
    assert zero.status == "invalid" and "positive whole number" in zero.message


def test_ridge_batch_follows_its_parameters():
    """A budget below the bytes of A alone leaves no valid N: a sentence, not an exception."""
    assert check("01.ridge_batch", 256, budget_bytes=300e6).correct
    r = check("01.ridge_batch", 256, budget_bytes=1e6)
    assert r.status == "invalid" and "budget" in r.message
    with pytest.raises(ValueError):
        task("01.ridge_batch").expected_answer(budget_bytes=1e6)


def test_predict_ratio_is_the_flop_ratio():
    """2·512³ / (2·256³) = 8; 2 (linear) and 4 (areas) get their hints."""
    assert check("01.predict_ratio", 8).correct
    _wrong("01.predict_ratio", 2, "eight times")
    _wrong("01.predict_ratio", 4, "areas")


def test_gap_reason():
    """Only the fixed cost per call is the same for every size."""
    assert check("01.gap_reason", "Fixed cost per call").correct
    _wrong("01.gap_reason", "FLOPs", "n³")
    _wrong("01.gap_reason", "bytes", "n²")
    assert check("01.gap_reason", "cache").status == "invalid"


# -- 02: a published H100 measurement --------------------------------------------------------


def test_trace_limiter_against_the_guide_arithmetic():
    """256x4096x4096 BF16: 2MNK / 2(MK + KN + MN) = 227.6 FLOP/B, below the H100 SXM's
    989.4e12 / 3.35e12 = 295 FLOP/B: memory. The row is in the shipped XLA table."""
    from dlperf_widgets.live.traces import measured_gemms

    m, n, k = 256, 4096, 4096
    ai = m * n * k / (m * k + k * n + m * n)
    assert ai < 989.4e12 / 3.35e12
    t = measured_gemms("H100-SXM", "bf16")
    assert ((t["m"] == m) & (t["n"] == n) & (t["k"] == k)).any()
    assert check("02.trace_limiter", "memory").correct
    _wrong("02.trace_limiter", "math", "ops:byte")
    _wrong("02.trace_limiter", "latency", "wave")


def test_trace_fix():
    """More rows per call raises the intensity; padding aligned sizes or TF32 do not help."""
    assert check("02.trace_fix", "more rows per call").correct
    _wrong("02.trace_fix", "pad to a multiple of 64", "already multiples of 64")
    _wrong("02.trace_fix", "TF32", "4-byte")


# -- 03: fill the waves, debug a lonely wave -------------------------------------------------


def test_wave_design_accepts_exactly_the_full_waves():
    """12 tile rows × N/128 columns on 108 SMs: the multiples of 128 in [1280, 4096] whose
    tiles / (waves × 108) >= 0.9 are 2176, 2304, 3200, 3328 and 3456, worked out here."""
    good = set()
    for n in range(1280, 4097, 128):
        tiles = 12 * n // 128
        if tiles / (math.ceil(tiles / 108) * 108) >= 0.9:
            good.add(n)
    assert good == {2176, 2304, 3200, 3328, 3456}
    for n in range(1280, 4097, 128):
        assert check("03.wave_design", n).correct == (n in good), n
    _wrong("03.wave_design", 1280, "one column of tiles past a full wave")
    _wrong("03.wave_design", 2048, "just short")
    _wrong("03.wave_design", 2200, "multiple of the tile width")
    _wrong("03.wave_design", 1152, "between 1280 and 4096")


def test_profile_fix():
    """128x128 tiles: 24 × 10 = 240 tiles fill 3 waves to 74 %, against 56 % for 120 tiles in
    2 waves; K and TF32 leave the waves alone."""
    assert 240 / (3 * 108) > 120 / (2 * 108)
    assert check("03.profile_fix", "smaller tiles").correct
    _wrong("03.profile_fix", "pad k", "number of tiles")
    _wrong("03.profile_fix", "tf32", "Tensor Core peak")


# -- 04: pad a vocabulary, debug DeepBench ---------------------------------------------------


def test_vocab_design_between_the_hand_bounds():
    """33708 rounds up to 33712; 69.5e6 B / (1024 × 2 B) = 33935 rows, so 33928 is the last
    multiple of 8 in the budget."""
    assert -(-33708 // 8) * 8 == 33712 and int(69.5e6 // 2048) // 8 * 8 == 33928
    _valid("04.vocab_design", [33712, 33792, 33920, 33928])
    _wrong("04.vocab_design", 33936, "budget")
    _wrong("04.vocab_design", 33704, "round up")
    _wrong("04.vocab_design", 65536, "doubles the weights")
    _wrong("04.vocab_design", 33710, "multiple of 8")


def _deepbench_rate(m, n, k):
    """Median measured FLOP/s of a DeepBench V100 FP16 row, read straight from the CSV."""
    path = Path(dlperf_widgets.__file__).parent / "live" / "data" / "deepbench_v100.csv"
    lines = [x for x in path.read_text().splitlines() if x and not x.startswith("#")]
    rates = [
        2 * m * n * k / float(row["measured_time_s"])
        for row in csv.DictReader(lines)
        if row["dtype"] == "fp16" and (row["m"], row["n"], row["k"]) == (str(m), str(n), str(k))
    ]
    assert rates
    return float(np.median(rates))


def test_trace_tensor_cores_from_the_csv():
    """5128x9124x4096 ran at about 104 TFLOP/s, over 6x the V100's FP32 CUDA-core peak
    (80 SMs × 64 FMA × 2 × 1.53 GHz = 15.67 TFLOP/s): Tensor Cores, despite N % 8 = 4."""
    rate = _deepbench_rate(5128, 9124, 4096)
    assert rate > 80 * 64 * 2 * 1.53e9 and 9124 % 8 == 4
    assert check("04.trace_tensor_cores", "yes").correct
    _wrong("04.trace_tensor_cores", "no", "FP32 CUDA-core peak")


def test_trace_fix_for_a_thin_gemm():
    """40x8457x1760 reaches about 11 % of the FP16 peak: memory-bound (AI well under 139)."""
    m, n, k = 40, 8457, 1760
    assert m * n * k / (m * k + k * n + 2 * m * n) < 125e12 / 900e9  # C read and written
    assert _deepbench_rate(m, n, k) < 0.25 * 125e12
    assert check("04.trace_fix", "batch 8x more rows").correct
    _wrong("04.trace_fix", "pad n", "limiter")
    _wrong("04.trace_fix", "fp32", "doubles the bytes")


# -- 05: size a Linear layer -----------------------------------------------------------------


def test_width_design_bounds():
    """Weights 1024 × H × 2 B <= 4 MiB gives H <= 2048; the 45 us step rules out the top of
    that range, where the forward pass alone would still fit (the listed slip)."""
    from dlperf_widgets.core.layers import layer

    _valid("05.width_design", [1024, 1280, 1536])
    _wrong("05.width_design", 2056, "budget")
    _wrong("05.width_design", 1000, "at least 1024")
    _wrong("05.width_design", 1028, "multiple of 8")
    lin = layer("linear", batch=512, inputs=1024, outputs=2048, dtype="fp16", gpu="A100")
    assert lin.forward_time_s <= 45e-6 < lin.predicted_time_s
    _wrong("05.width_design", 2048, "backward GEMMs")


def test_batch_design_from_the_ridge():
    """Forward AI = 4096 b / (4096 + 2 b) > 312e12 / 2039e9 gives b > 165.3, so 168 is the
    first multiple of 8; 16384 b <= 4 MiB caps it at 256."""
    r = 312e12 / 2039e9
    b_min = r * 4096 / (4096 - 2 * r)
    assert 160 < b_min < 168 and 4 * 2**20 // 16384 == 256
    _valid("05.batch_design", [168, 200, 256])
    _wrong("05.batch_design", 160, "memory side of the ridge")
    _wrong("05.batch_design", 264, "budget")
    _wrong("05.batch_design", 100, "multiple of 8")


# -- 06: predict a ReLU's scaling ------------------------------------------------------------


def test_relu_ratio_is_the_bytes_ratio():
    """2**22 / 2**16 elements, read and written once each: 64 times the bytes."""
    assert check("06.predict_ratio", 2**22 / 2**16).correct
    _wrong("06.predict_ratio", 6, "exponents")
    _wrong("06.predict_ratio", 1 / 64, "larger tensor takes longer")
    assert check("06.gap_reason", "cache").correct
    _wrong("06.gap_reason", "fixed cost per call", "below")
    _wrong("06.gap_reason", "math", "comparison")


# -- garbage -------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", DESIGN)
@pytest.mark.parametrize("answer", ["256", 2.5, -5, True, [256], 10**40, float("inf")])
def test_design_garbage_is_one_sentence(task_id, answer):
    """Text, fractions, negatives, booleans, lists and absurd sizes never raise and never
    pass; each gets one sentence."""
    r = check(task_id, answer)
    assert not r.correct and r.status in ("invalid", "wrong")
    assert r.message.endswith(".") and "\n" not in r.message


@pytest.mark.parametrize("task_id", NEW)
def test_new_tasks_are_unanswered_until_answered(task_id):
    """The student template's ... is 'not answered yet' for every new task."""
    assert check(task_id, ...).status == "unanswered"
