"""Tests of core.serving against independent figures: the PagedAttention paper's cache sizes,
brute-force block allocation and batching, Monte-Carlo runs of speculative decoding and MoE
routing, Mixtral's model card, the workload model priced directly, and a published energy
figure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlperf_widgets.core import serving as sv
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.inference import LlmSpec
from dlperf_widgets.core.workload import price, workload


def test_opt13b_kv_per_token_and_per_request_match_pagedattention_paper():
    """Kwon et al. 2023 (section 3): OPT-13B keeps 800 KB of KV per token in FP16, so a
    2048-token request holds up to 1.6 GB; its FP16 weights take 26 GB (figure 1)."""
    r = sv.kv_budget("opt-13b", "A100-40GB", prompt_len=1024, output_len=1024)
    assert r.kv_bytes_per_token == 800 * 1024
    assert r.kv_bytes_per_token * 2048 == pytest.approx(1.6e9, rel=0.05)
    assert r.weights_bytes == pytest.approx(26e9, rel=0.02)


def test_kv_budget_is_what_remains_of_the_usable_share():
    """vLLM's sizing: 0.9 of the card minus weights, activations and workspace, in whole
    blocks; a sequence needs ceil(tokens / block) blocks."""
    r = sv.kv_budget("llama-2-7b", "A100", prompt_len=500, output_len=200)
    budget = 0.9 * 80 * 2**30 - r.weights_bytes - r.activation_bytes - 2**30
    assert r.kv_budget_bytes == pytest.approx(budget)
    per_token = 2 * 32 * 32 * 128 * 2  # K and V, layers, KV heads, head dim, FP16 bytes
    assert r.blocks == int(budget // (per_token * 16))
    assert r.blocks_per_sequence == math.ceil(700 / 16)
    assert r.sequences_paged == r.blocks // 44
    assert r.fragmentation == pytest.approx((44 * 16 - 700) / (44 * 16))


def test_paging_fits_more_sequences_than_reserving_the_maximum_length():
    """Reserving max_model_len per request (pre-paging systems) fits about
    max_model_len / actual length times fewer sequences than paging."""
    r = sv.kv_budget("llama-2-7b", "A100", prompt_len=512, output_len=256, max_model_len=4096)
    assert r.sequences_paged / r.sequences_reserved == pytest.approx(4096 / 768, rel=0.05)


def test_block_table_matches_a_block_by_block_allocator():
    """Allocating one block whenever a sequence's last block is full gives the same block
    counts and fewer than block_size empty slots per sequence."""
    rng = np.random.default_rng(1)
    lens = rng.integers(1, 3000, size=200)
    blocks, waste = sv.block_table(lens, 16)
    for n, b, w in zip(lens, blocks, waste, strict=True):
        held, free = 0, 0
        for _ in range(n):
            if free == 0:
                held, free = held + 1, 16
            free -= 1
        assert (b, w) == (held, free)
        assert 0 <= w < 16


def test_static_and_continuous_batching_on_a_hand_worked_queue():
    """Lengths 1, 10, 1, 10 at batch 2: static runs two batches of 10 steps (20); iteration
    -level scheduling lets the short ones leave at once and finishes in 12 steps."""
    assert sv.simulate_batching([1, 10, 1, 10], 2, "static").steps == 20
    c = sv.simulate_batching([1, 10, 1, 10], 2, "continuous")
    assert c.steps == 12
    assert c.slot_utilisation == pytest.approx(22 / 24)


def test_continuous_batching_matches_a_step_by_step_simulation():
    """A direct simulation (fill free slots, decode one token each, retire finished ones)
    gives the same number of steps as the lane-based computation."""
    rng = np.random.default_rng(2)
    lens = rng.integers(1, 200, size=300)
    queue, running, steps = list(lens), [], 0
    while queue or running:
        while queue and len(running) < 16:
            running.append(queue.pop(0))
        running = [n - 1 for n in running if n > 1]
        steps += 1
    assert sv.simulate_batching(lens, 16).steps == steps
    assert sv.simulate_batching(lens, 16, "static").steps >= steps


def test_decode_only_mixed_step_is_the_workload_models_decode_step():
    """With no prefill chunk, a serving step is exactly the workload model's decode step in
    the CUDA-graph context."""
    ms = sv.mixed_step("llama-2-7b", "A100", decode_batch=16, context=1000, chunk=0)
    ref = price(workload("llama-2-7b", phase="decode", batch=16, context=1000,
                         precision="fp16"), "A100", timing="graph")  # fmt: skip
    assert ms.step_s == pytest.approx(ref.step_s, rel=1e-9)


def test_prefill_only_mixed_step_is_the_workload_models_prefill():
    """With no decodes, a serving step is the workload model's prefill of one chunk."""
    ms = sv.mixed_step("llama-2-7b", "H100", decode_batch=0, chunk=512)
    ref = price(workload("llama-2-7b", phase="prefill", batch=1, seq=512, precision="fp16"),
                "H100", timing="graph")  # fmt: skip
    assert ms.step_s == pytest.approx(ref.step_s, rel=1e-9)


def test_a_prefill_chunk_costs_decodes_time_but_less_than_running_it_apart():
    """Riding a chunk along a decode step reads the weights once: slower than the decode
    alone, faster than the decode step plus a separate prefill step."""
    both = sv.mixed_step("llama-2-7b", "A100", decode_batch=32, context=1024, chunk=256)
    dec = sv.mixed_step("llama-2-7b", "A100", decode_batch=32, context=1024, chunk=0)
    pre = sv.mixed_step("llama-2-7b", "A100", decode_batch=0, chunk=256)
    assert dec.step_s < both.step_s < dec.step_s + pre.step_s


@pytest.mark.parametrize(
    ("model", "gpu", "prompt", "chunk", "precision", "tp"),
    [("llama-2-7b", "A100", 1024, 512, "fp16", 1), ("llama-2-7b", "H100", 3000, 96, "fp8", 1),
     ("llama-2-70b", "H100", 200, 2048, "fp16", 4), ("llama-2-13b", "V100", 7, 1, "fp16", 2)],
)  # fmt: skip
def test_slo_sweep_is_exactly_one_mixed_step_per_batch(model, gpu, prompt, chunk, precision, tp):
    """serving_slo prices its sweep's steps together; each TPOT is still bit for bit the
    mixed_step of that batch (a kernel's price must not depend on the kernels priced with
    it), odd batch sizes and tensor parallelism included."""
    r = sv.serving_slo(model, gpu, prompt_len=prompt, output_len=100, chunk=chunk,
                       precision=precision, tensor_parallel=tp,
                       batches=[1, 3, 8, 100, 512])  # fmt: skip
    each = [sv.mixed_step(model, gpu, decode_batch=int(b), context=prompt + 50, chunk=chunk,
                          precision=precision, tensor_parallel=tp).step_s
            for b in r.batches]  # fmt: skip
    assert list(r.tpot_s) == each


def test_slo_best_batch_is_the_largest_meeting_both_limits():
    """The chosen batch meets TTFT and TPOT and the KV cache; the next batch in the sweep
    misses one of them; TTFT is ceil(prompt / chunk) mixed steps."""
    r = sv.serving_slo("llama-2-7b", "A100", prompt_len=1024, chunk=512, ttft_slo_s=0.5,
                       tpot_slo_s=0.05)  # fmt: skip
    assert r.best_batch > 0
    np.testing.assert_allclose(r.ttft_s, 2 * r.tpot_s)
    i = list(r.batches).index(r.best_batch)
    assert r.tpot_s[i] <= 0.05 and r.ttft_s[i] <= 0.5
    nxt = i + 1
    assert r.tpot_s[nxt] > 0.05 or r.ttft_s[nxt] > 0.5 or r.batches[nxt] > r.kv_limit
    assert "yes" in r.table()


@pytest.mark.parametrize(("a", "k"), [(0.6, 3), (0.8, 4), (0.9, 8), (0.3, 1)])
def test_expected_tokens_match_monte_carlo_and_the_series(a, k):
    """Leviathan et al.'s closed form equals the series sum_{i=0}^{k} a^i and a Monte-Carlo
    run of accept-until-first-rejection (within 4 standard errors)."""
    e = sv.expected_accepted_tokens(a, k)
    assert e == pytest.approx(sum(a**i for i in range(k + 1)))
    n = 200_000
    mc = sv.simulate_speculative(a, k, iterations=n, seed=3)
    sd = math.sqrt(k * k / 4 / n)  # the tokens lie in [1, k + 1]: variance <= k^2 / 4
    assert abs(mc - e) < 4 * sd


def test_speculative_speedup_is_leviathans_improvement_factor():
    """Speed-up = E[tokens] x target step / (k draft steps + one verification), which for a
    verification as long as a target step is Leviathan's (1 - a^(k+1)) / ((1 - a)(kc + 1))."""
    r = sv.speculative("llama-2-70b", "llama-2-7b", "H100", acceptance=0.8, draft_len=4)
    c = r.cost_ratio
    factor = (1 - 0.8**5) / ((1 - 0.8) * (4 * c + r.verify_s / r.target_step_s))
    assert r.speedup == pytest.approx(factor)
    assert r.speedup > 1
    assert r.best_speedup >= r.speedup


def test_speculative_decoding_loses_with_a_draft_as_costly_as_the_target():
    """With c = 1 and a = 0.5 no draft length pays: the speed-up is below 1 at every k."""
    r = sv.speculative("llama-2-7b", "llama-2-7b", "A100", acceptance=0.5, draft_len=4)
    assert r.cost_ratio == pytest.approx(1.0)
    assert r.speedup < 1 and r.best_speedup < 1


def test_mixtral_parameters_match_the_model_card():
    """Mixtral 8x7B's model card: 46.7 B parameters in total, 12.9 B active per token."""
    r = sv.moe_decode()
    assert r.total_params / 1e9 == pytest.approx(46.7, abs=0.05)
    assert r.active_params / 1e9 == pytest.approx(12.9, abs=0.05)


def test_experts_hit_matches_a_routing_simulation():
    """Routing each of B tokens to 2 distinct experts out of 8 uniformly hits, on average,
    8 (1 - (6/8)^B) experts; batch 1 hits exactly top_k, large batches all of them."""
    rng = np.random.default_rng(4)
    for b in (1, 2, 4, 16):
        trials = [len({e for _ in range(b) for e in rng.choice(8, 2, replace=False)})
                  for _ in range(4000)]  # fmt: skip
        assert sv.experts_hit(b, 8, 2) == pytest.approx(np.mean(trials), abs=0.05)
    assert sv.experts_hit(1, 8, 2) == pytest.approx(2.0)
    assert sv.experts_hit(256, 8, 2) == pytest.approx(8.0)


def test_moe_decode_bytes_grow_from_active_to_total_weights():
    """At batch 1 a step streams about the active weights (less the embedding lookup); at
    a large batch, every expert: the whole model."""
    one = sv.moe_decode(batch=1)
    big = sv.moe_decode(batch=512)
    emb = 32000 * 4096
    assert one.weight_bytes_per_step == pytest.approx(2 * (one.active_params - emb))
    assert big.weight_bytes_per_step == pytest.approx(2 * (big.total_params - emb), rel=1e-6)
    ep = sv.moe_decode(batch=8, expert_parallel=4)
    assert ep.all_to_all_bytes == pytest.approx(2 * 8 * 2 * 4096 * 2 * 3 / 4)


def test_tensor_parallel_splits_weights_and_adds_two_all_reduces_per_layer():
    """Megatron-LM: weights per GPU fall as 1 / TP (embeddings aside) and every layer adds
    two all-reduces; at batch 1 TP cuts the step time, by less than TP."""
    rows = sv.tensor_parallel_inference("llama-2-70b", "H100", degrees=(1, 2, 8))
    assert [r.all_reduces_per_step for r in rows] == [0, 160, 160]
    assert rows[1].weights_bytes_per_gpu == pytest.approx(rows[0].weights_bytes_per_gpu / 2,
                                                          rel=0.01)  # fmt: skip
    assert 1 < rows[2].speedup < 8
    assert rows[2].communication_s > 0


def test_split_kv_fills_the_gpu_only_when_batch_times_heads_is_small():
    """Batch 1 with 32 KV heads leaves most of 108 SMs idle: splitting the keys helps by
    about the idle share (bounded by 108 / 32); at batch 64 there is nothing to gain."""
    small = sv.split_kv("llama-2-7b", "A100", batch=1, context=32768)
    assert small.blocks == 32 and small.waves == 1
    assert 2 < small.speedup <= 108 / 32
    big = sv.split_kv("llama-2-7b", "A100", batch=64, context=2048)
    assert big.speedup == pytest.approx(1.0)


def test_energy_per_token_is_power_times_step_over_tokens():
    """J/token = board power x GPUs x step time / batch, the step from the workload model."""
    r = sv.energy_per_token("llama-2-7b", "A100", batches=(1, 32), context=512)
    assert sv.board_power_w("A100") == 400.0
    for b, s, j in zip(r.batches, r.step_s, r.joules_per_token, strict=True):
        ref = price(workload("llama-2-7b", phase="decode", batch=int(b), context=512,
                             precision="fp16"), "A100", timing="graph").step_s  # fmt: skip
        assert s == pytest.approx(ref)
        assert j == pytest.approx(400.0 * ref / b)
    assert r.joules_per_token[1] < r.joules_per_token[0] / 10


def test_energy_brackets_a_published_measurement():
    """Samsi et al. 2023 ("From Words to Watts", arXiv 2310.03003) measured about 3-4 J per
    decoded token for LLaMA-65B sharded over several V100 / A100 GPUs in their common settings.
    The model of 8 A100s at board power spans that figure between batch 16 and 64 (an
    order-of-magnitude check against a published measurement, not a calibration)."""
    spec = LlmSpec("llama-65b", 80, 8192, 64, 64, 128, 22016, 32000, True, False, "")
    r = sv.energy_per_token(spec, "A100-40GB", batches=(16, 64), context=512,
                            tensor_parallel=8)  # fmt: skip
    assert r.joules_per_token[-1] < 3.0 and r.joules_per_token[0] > 4.0


@pytest.mark.parametrize(
    ("call", "word"),
    [
        (lambda: sv.kv_budget(block_size=0), "'block_size'"),
        (lambda: sv.kv_budget(output_len=100, max_model_len=512), "'max_model_len'"),
        (lambda: sv.kv_budget(gpu_memory_utilization=1.5), "'gpu_memory_utilization'"),
        (lambda: sv.simulate_batching([], 4), "'output_lens'"),
        (lambda: sv.simulate_batching([3, 4], 4, "greedy"), "'policy'"),
        (lambda: sv.mixed_step(decode_batch=0, chunk=0), "'decode_batch'"),
        (lambda: sv.expected_accepted_tokens(1.2, 3), "'acceptance'"),
        (lambda: sv.speculative(draft_len=0), "'draft_len'"),
        (lambda: sv.moe_decode(top_k=9), "'top_k'"),
        (lambda: sv.moe_decode(expert_parallel=3), "'expert_parallel'"),
        (lambda: sv.energy_per_token(power_w=-5), "'power_w'"),
        (lambda: sv.split_kv(context=-1), "'context'"),
    ],
)
def test_bad_input_gives_one_sentence_naming_the_parameter(call, word):
    """Every serving entry rejects bad input with InvalidParameter naming the parameter."""
    with pytest.raises(InvalidParameter) as e:
        call()
    assert word in str(e.value) and "\n" not in str(e.value)
