"""Guards the tasks that replaced re-asked figures (02 T4-T5, 06 T2, 10 T3, 11 T1), the new
prefill-vs-decode (11) and HFU (08) tasks and the numeric "critique the model" tasks (01, 06):
each expected value is rebuilt here from published figures or a second formula, each slip
gets its hint, and garbage gets one sentence."""

from __future__ import annotations

import math

import pytest

from dlperf_widgets.exercises import check, task

DESIGN = ["10.context_design", "11.kv_heads_design"]
NUMBER = [
    "01.no_reuse_bytes",
    "02.linear_ai",
    "02.elementwise_flops",
    "06.pool_window",
    "06.saturation_bytes",
    "08.hfu",
    "11.prefill_decode",
]


def _hint(task_id, answer, **params):
    r = check(task_id, answer, **params)
    assert r.status == "wrong" and not r.correct, r.text()
    return r.hint


@pytest.mark.parametrize("task_id", DESIGN)
@pytest.mark.parametrize("answer", [0, -4, 2.5, "8", [8], float("nan"), True])
def test_design_garbage_is_one_sentence(task_id, answer):
    """A design must be a positive whole number: anything else is invalid, never raised."""
    r = check(task_id, answer)
    assert r.status == "invalid" and r.message.startswith("the answer must")
    assert r.message.endswith(".") and "\n" not in r.message


@pytest.mark.parametrize("task_id", DESIGN + NUMBER)
def test_absurd_answer_is_judged_in_one_sentence(task_id):
    """A huge answer is judged wrong (or refused) in one sentence and never raises."""
    r = check(task_id, 10**15)
    assert r.status in ("wrong", "invalid") and not r.correct
    assert r.message.endswith(".") and "\n" not in r.message


@pytest.mark.parametrize("task_id", DESIGN + NUMBER)
def test_bad_parameter_is_one_sentence(task_id):
    """A variant with a nonsensical parameter says which one, in one sentence."""
    name, value = next(iter(task(task_id).params.items()))
    r = check(task_id, 1, **{name: [1, 2] if not isinstance(value, list) else 3.5})
    assert r.status == "invalid" and r.message.endswith(".") and "\n" not in r.message
    assert repr(name) in r.message or name in r.message


def test_linear_intensity_at_a_smaller_batch():
    """4096 x 64 x 1024 in FP16: 2MNK / 2(MK + KN + MN) = 59.4 FLOP/B, not the lesson's 315
    scaled by 64/512 = 39.4 (the weight's bytes do not shrink with the batch)."""
    m, n, k = 4096, 64, 1024
    ai = 2 * m * n * k / (2 * (m * k + k * n + m * n))
    assert check("02.linear_ai", ai).correct
    assert "does not shrink in proportion" in _hint("02.linear_ai", 315.08 * 64 / 512)


def test_elementwise_flops_from_the_cuda_core_peak():
    """V100: FP16 on CUDA cores 31.4 TFLOP/s (NVIDIA V100 datasheet: 2x its 15.7 FP32) over
    900 GB/s is 34.9 FLOP/B; 4 bytes per element (read + write) need 139.5 FLOPs. The
    Tensor Core ratio (125 TFLOP/s) would say 556."""
    need = 31.4e12 / 900e9 * 4
    assert check("02.elementwise_flops", need).correct
    assert "CUDA cores" in _hint("02.elementwise_flops", 125e12 / 900e9 * 4)
    assert "read and written" in _hint("02.elementwise_flops", need / 2)


def test_pool_window_from_the_cuda_core_ratio():
    """A100: FP16 on CUDA cores 78 TFLOP/s (A100 datasheet) over 2039 GB/s = 38.3 FLOP/B;
    k x k max pooling does k^2 comparisons per 4 bytes: k^2 / 4 < 38.3 holds up to k = 12,
    so the largest odd window is 11. Against the Tensor Core ratio (153) it would be 23."""
    ratio = 78e12 / 2039e9
    largest = max(k for k in range(1, 64, 2) if k * k / 4 < ratio)
    assert largest == 11 and check("06.pool_window", largest).correct
    assert "CUDA cores" in _hint("06.pool_window", 23)
    assert "window below" in _hint("06.pool_window", 13)


def test_context_design_accepts_exactly_the_fitting_lengths():
    """P of one layer is 8 x 16 x N^2 x 2 bytes; 24 layers within 40 GiB: N^2 <= 40 x 2^30 /
    6144, N <= 2642, so 2048, 2304 and 2560 (multiples of 256 from 2048) fit, 2816 does not."""
    fits = [n for n in range(2048, 4097, 256) if 24 * 8 * 16 * n * n * 2 <= 40 * 2**30]
    assert fits == [2048, 2304, 2560]
    for n in fits:
        assert check("10.context_design", n).correct, n
    assert "GiB" in _hint("10.context_design", 2816)
    assert "multiple of 256" in _hint("10.context_design", 2100)
    assert "shorter than" in _hint("10.context_design", 1024)
    # a learner who forgets the heads finds 16x the budget: N up to 4 x 2642
    assert "heads" in _hint("10.context_design", 10496)


def test_kv_heads_design_from_the_cache_formula():
    """Llama-3-8B (32 layers, 32 query heads of 128): 64 caches of 8192 tokens take
    2 x 32 x kv x 128 x 2 B x 8192 x 64 = 8 GiB per K/V head; with about 15 GiB of weights an
    80 GiB H100 holds 1, 2, 4 or 8 K/V heads (divisors of 32), not 16 or 32."""
    per_head = 2 * 32 * 128 * 2 * 8192 * 64
    assert per_head == 8 * 2**30
    for kv in (1, 2, 4, 8):
        assert check("11.kv_heads_design", kv).correct, kv
    assert "GiB" in _hint("11.kv_heads_design", 16)
    assert "must divide 32" in _hint("11.kv_heads_design", 3)
    assert "grouped-query" in _hint("11.kv_heads_design", 32)
    # with a batch of 8 the cache is small: even one K/V head per query head fits
    assert check("11.kv_heads_design", 32, batch=8).correct


def test_max_batch_says_it_is_an_upper_bound():
    """The right answer is called an upper bound (activations, workspace, fragmentation)."""
    t = task("11.max_batch")
    message = check("11.max_batch", t.expected_answer()).message
    assert "upper bound" in message and "fragmentation" in message


def test_prefill_decode_ratio_is_near_ops_per_byte():
    """Each weight costs 2 FLOPs per prefilled token and 2 bytes per decode step, so the
    ratio of the two phases' tokens/s is about peak / bandwidth: A100 312 TFLOP/s over
    2039 GB/s = 153, accepted as an estimate; the prompt length (1024) is not."""
    assert check("11.prefill_decode", 312e12 / 2039e9).correct
    assert "prompt_len times the math" in _hint("11.prefill_decode", 1024)
    assert "upside down" in _hint("11.prefill_decode", 1 / 153)


def test_hfu_against_korthikanti_counts():
    """N = 12 L h^2 = 1.208e9 weights (L = 24, h = 2048), s = 2048; full recomputation runs
    8N + 16 L h s FLOPs per token (Korthikanti et al. 2022); 80k tokens/s over 8 A100s at
    312 TFLOP/s (BF16 datasheet) gives HFU 0.361; the model FLOPs (6N + 12 L h s) give the
    MFU 0.271, which is a slip here."""
    L, h, s = 24, 2048, 2048
    n = 12 * L * h * h
    per_gpu = 80_000 / 8
    hfu = per_gpu * (8 * n + 16 * L * h * s) / 312e12
    mfu = per_gpu * (6 * n + 12 * L * h * s) / 312e12
    assert math.isclose(hfu, 0.3615, rel_tol=1e-3)
    assert check("08.hfu", hfu).correct
    assert "MFU" in _hint("08.hfu", mfu)
    assert "over the GPUs" in _hint("08.hfu", hfu * 8)


def test_no_reuse_bytes_from_the_tile_count():
    """8192^3 FP16 in 256 x 128 tiles: 32 x 64 = 2048 tiles each reading (256 + 128) x 8192
    elements, plus C once, over 3 x 8192^2 elements: (96 + 1) / 3 = 32.33x."""
    ratio = (2048 * 384 * 8192 + 8192**2) / (3 * 8192**2)
    assert math.isclose(ratio, 97 / 3)
    assert check("01.no_reuse_bytes", ratio).correct
    assert "add the M×N output" in _hint("01.no_reuse_bytes", 32.0)


def test_saturation_bytes_from_the_constants():
    """A100: 2039 GB/s at the kit's 85 % achievable share for 5 us of fixed cost per kernel
    (the defaults core.calibration prints) is 8.67 MB; at the datasheet rate 10.2 MB."""
    assert check("06.saturation_bytes", 2039e9 * 0.85 * 5e-6).correct
    assert "achievable share" in _hint("06.saturation_bytes", 2039e9 * 5e-6)


def test_fused_mlp_tail_is_bias_and_gelu():
    """After an MLP's first GEMM come a bias add and GELU (the residual add follows the second
    GEMM): fused, 16 Mi FP16 values are read once and written once, 2 x 32 MiB = 64 MiB;
    unfused each op reads and writes, 128 MiB."""
    assert task("10.fused_bytes").params["ops"] == ("bias", "gelu")
    assert check("10.fused_bytes", 2 * 16 * 2**20 * 2).correct
    assert "unfused" in _hint("10.fused_bytes", 4 * 16 * 2**20 * 2)
    assert "writes its output" in _hint("10.fused_bytes", 16 * 2**20 * 2)


def test_allreduce_budget_uses_every_port_of_a_server():
    """13.allreduce_budget: 64 GPUs in 8 servers with 8 x 50 GB/s ports; NCCL's ring per port
    gives a bus bandwidth of 8 x 50 = 400 GB/s (NVLink's 8/7 x 450 GB/s is not the bound), so
    S = 0.8 s x 400 GB/s x 64 / 126 bytes, half as many BF16 parameters (81.3 billion). The
    flat count through one port per server, 8 times fewer, is a named mistake."""
    expected = 0.8 * 400e9 * 64 / (2 * 63) / 2
    assert check("13.allreduce_budget", expected).correct
    assert math.isclose(expected, 81.27e9, rel_tol=1e-3)
    assert "one flat ring" in _hint("13.allreduce_budget", expected / 8)
    assert "NVLink" in _hint("13.allreduce_budget", 0.8 * 8 / 7 * 450e9 * 64 / 126 / 2)
