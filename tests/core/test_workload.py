"""Tests of core/workload.py: a step as its kernel list, priced kernel by kernel."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gemm import gemm_sweep
from dlperf_widgets.core.inference import MODELS, LlmSpec
from dlperf_widgets.core.workload import price, workload, workload_constants, workload_memory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hostile"))
from hostile_support import HOSTILE_NUMBERS, assert_kit_error

# A GPT-style layer (LayerNorm, GELU MLP of 4h, no GQA): the shape Korthikanti et al. count.
GPT = LlmSpec("gpt-test", 4, 1024, 16, 16, 64, 4096, 50304, gated_mlp=False, rotary=False)


def test_gemm_kernels_are_priced_by_the_gemm_model_summed_by_hand():
    """Every GEMM's time in a priced step equals the kit's GEMM model called on that shape
    at the sustained clock, divided in a training step by the fitted in-step efficiency of
    Tensor Core GEMMs and not divided when priced in isolation; the GEMM category is their
    sum times their counts (no second GEMM formula)."""
    w = workload("llama-2-7b", batch=2, seq=1024)
    eff = workload_constants("A100-SXM4-80GB")["training_gemm_efficiency"].value
    assert 0.5 < eff < 1.0
    for isolated, scale in ((False, 1.0 / eff), (True, 1.0)):
        p = price(w, "A100-SXM4-80GB", timing="kernel", isolated=isolated)
        total = 0.0
        for k, t in zip(w.kernels, p.times_s, strict=True):
            if k.kind != "gemm":
                continue
            ref = scale * float(gemm_sweep(k.m, k.n, k.k, batch=k.batch, dtype=k.dtype,
                                           gpu="A100-SXM4-80GB", sustained=True).predicted_time_s)  # fmt: skip
            assert t == pytest.approx(ref, rel=1e-12)
            total += ref * k.count
        assert p.categories["GEMMs"] == pytest.approx(total, rel=1e-12)


def test_training_flops_match_the_closed_form_6n_plus_attention():
    """The kernel list's FLOPs of a training step (no recomputation, eager attention that
    computes every score) equal 6 x weights x tokens plus 12 x layers x h x s per token, the
    closed form of Narayanan et al. 2021 / PaLM, up to the element-wise kernels (< 1 %)."""
    b, s = 2, 512
    w = workload(GPT, batch=b, seq=s, attention="eager", precision="bf16")
    gemm_attn = sum(k.flops * k.count for k in w.kernels if k.kind in ("gemm", "attention"))
    linear = GPT.linear_params + GPT.vocab * GPT.hidden  # the LM head is a linear layer too
    expected = (6.0 * linear + 12.0 * GPT.layers * GPT.hidden * s) * b * s
    assert gemm_attn == pytest.approx(expected, rel=1e-9)


def test_saved_activations_match_korthikanti():
    """Per layer, eager attention, no recomputation, 16-bit: Korthikanti et al. 2022 (section
    4.1, eq. 1) count 34 s b h + 5 a s^2 b bytes with dropout; its masks and outputs are
    2 s b h + 3 a s^2 b, so without dropout a layer saves 32 s b h + 2 a s^2 b."""
    b, s, h, a = 2, 256, GPT.hidden, GPT.heads
    for dropout, expected in ((True, 34 * s * b * h + 5 * a * s * s * b),
                              (False, 32 * s * b * h + 2 * a * s * s * b)):  # fmt: skip
        w = workload(GPT, batch=b, seq=s, attention="eager", precision="fp16", dropout=dropout)
        per_layer = sum(k.saved_bytes for k in w.kernels
                        if k.pass_ == "forward" and k.path.startswith("layers"))  # fmt: skip
        assert per_layer == pytest.approx(expected)


def test_flash_attention_saves_no_scores():
    """FlashAttention keeps no s x s tensor: a layer's saved bytes do not grow with s^2."""

    def saved(s: int) -> float:
        w = workload(GPT, batch=1, seq=s, attention="flash2")
        return sum(k.saved_bytes for k in w.kernels if k.path.startswith("layers"))

    assert saved(4096) / saved(2048) == pytest.approx(2.0, rel=1e-3)


def test_a_cuda_graph_never_makes_a_chain_faster_than_its_device_time():
    """The timing-context rule: 'kernel' <= 'back-to-back' (a CUDA graph) <= 'eager', for a chain of short decode
    kernels (where the host's launches dominate) and for a long training step."""
    for w in (workload("llama-2-7b", phase="decode", batch=1, context=128),
              workload("llama-2-7b", batch=1, seq=2048)):  # fmt: skip
        k, g, e = (price(w, "H100", timing=t) for t in ("kernel", "graph", "eager"))
        assert k.device_time_s == g.device_time_s == e.device_time_s
        assert k.step_s <= g.step_s <= e.step_s
        assert g.step_s >= g.device_time_s


def test_eager_launch_is_exposed_when_kernels_are_shorter_than_a_launch():
    """A decode step of a tiny model has kernels of a few microseconds: eagerly launched, the
    step takes about the host's launches (n x 10 us), not the kernels' time."""
    tiny = LlmSpec("tiny", 2, 256, 4, 4, 64, 1024, 1000)
    w = workload(tiny, phase="decode", batch=1, context=16)
    e = price(w, "H100", timing="eager")
    launches = sum(k.count for k in w.kernels if k.kind != "collective")
    assert e.step_s >= launches * 10e-6
    assert e.launch_exposed_s > e.device_time_s * 0.3


def test_training_step_reports_memory_feasibility():
    """A 70B model's unsharded training step does not fit an 80 GB GPU and says so next to its
    MFU; FSDP over 64 GPUs with full recomputation makes it fit. 16 B per weight (FP32
    weights, gradients, two Adam moments) alone is 1.1 TB for 70B weights."""
    spec = MODELS["llama-2-70b"]
    one = price(workload(spec, batch=1, seq=4096), "H100")
    assert not one.fits and "does not fit" in str(one)
    assert one.memory.weights_bytes + one.memory.gradients_bytes + one.memory.optimizer_bytes \
        == pytest.approx(16.0 * one.workload.params_per_gpu)  # fmt: skip
    sharded = price(workload(spec, batch=1, seq=4096, data_parallel=64, zero=3,
                             recompute="full"), "H100")  # fmt: skip
    assert sharded.fits and "fits" in sharded.feasibility


def test_gqa_shrinks_the_kv_projection_and_the_cache():
    """Llama-2-70B's 8 KV heads of 64 query heads: the QKV GEMM's N is (64 + 2 x 8) x 128,
    and the decode attention reads 2 x 8 x 128 values per token and layer."""
    spec = MODELS["llama-2-70b"]
    w = workload(spec, phase="decode", batch=1, context=1000, precision="fp16")
    qkv = next(k for k in w.kernels if k.name == "qkv_proj")
    assert qkv.n == (64 + 16) * 128
    att = next(k for k in w.kernels if k.kind == "attention")
    assert att.bytes - 2 * 64 * 128 * 2 == 2 * 8 * 128 * 1000 * 2


def test_recomputation_adds_forward_flops():
    """Full recomputation runs each layer's forward again: hardware FLOPs grow by the layers'
    forward FLOPs (Korthikanti et al.: 4/3 of the FLOPs for the layers), MFU's numerator not."""
    base = workload(GPT, batch=1, seq=512)
    full = workload(GPT, batch=1, seq=512, recompute="full")
    layer_fwd = sum(k.flops * k.count for k in base.kernels
                    if k.pass_ == "forward" and k.path.startswith("layers"))  # fmt: skip
    assert full.flops - base.flops == pytest.approx(layer_fwd)
    assert full.model_flops == base.model_flops


def test_weight_only_int4_decode_reads_a_quarter_of_the_weights():
    """An int4 GEMM with group size 128 stores 4 + 16/128 bits per weight: the linear
    layers' weight bytes are 4.125/16 of FP16's."""
    f = workload("llama-2-7b", phase="decode", precision="fp16")
    q = workload("llama-2-7b", phase="decode", precision="fp16", weights="int4")
    wf = sum(k.weight_bytes * k.count for k in f.kernels if k.path.startswith("layers"))
    wq = sum(k.weight_bytes * k.count for k in q.kernels if k.path.startswith("layers"))
    assert wq / wf == pytest.approx(4.125 / 16)


def test_moe_runs_top_k_experts_per_token():
    """A Mixtral-like layer (8 experts, top-2, capacity 1): the expert GEMMs do top-k times
    the FLOPs of one dense MLP."""
    spec = MODELS["mistral-7b"]
    dense = workload(spec, phase="prefill", batch=1, seq=1024, precision="fp16")
    moe = workload(spec, phase="prefill", batch=1, seq=1024, precision="fp16", experts=8,
                   top_k=2)  # fmt: skip
    mlp = sum(k.flops * k.count for k in dense.kernels if "proj" in k.name and "o_" not in k.name
              and "qkv" not in k.name)  # fmt: skip
    exp = sum(k.flops * k.count for k in moe.kernels if k.name.startswith("experts"))
    assert exp == pytest.approx(2 * mlp)


def test_tensor_parallel_adds_two_collectives_per_layer_each_way():
    """Megatron TP: two all-reduces of the b x s x h activation per layer forward and two
    backward (Shoeybi et al. 2019, section 3); with sequence parallelism an all-gather and a
    reduce-scatter of the same activation in place of each (Korthikanti et al. 2022, 4.2.2)."""
    w = workload(GPT, batch=1, seq=512, tensor_parallel=4, sequence_parallel=False)
    for pass_ in ("forward", "backward"):
        ar = [k for k in w.kernels if k.kind == "collective" and k.pass_ == pass_]
        assert sum(k.count for k in ar) == 2 * GPT.layers
        assert all(k.bytes == 512 * GPT.hidden * 2 and k.collective == "all-reduce" for k in ar)
    sp = workload(GPT, batch=1, seq=512, tensor_parallel=4)
    ops = sorted(k.collective for k in sp.kernels if k.kind == "collective" for _ in range(k.count))
    assert ops.count("all-gather") == ops.count("reduce-scatter") == 4 * GPT.layers


def test_saved_activations_per_layer_follow_korthikanti_with_and_without_sp():
    """Korthikanti et al. 2022, Table 2 (16-bit, eager attention with dropout): a layer saves
    sbh(10 + 24/t + 5as/(ht)) with tensor parallelism t, and sbh(34/t + 5as/(ht)) when
    sequence parallelism also splits the norms, dropouts and the QKV and first MLP GEMMs'
    saved inputs t ways (section 4.2.2); the kernel list's saved tensors give both."""
    s, b, h, a = 512, 2, GPT.hidden, GPT.heads
    for t in (1, 2, 4):
        for sp in (False, True):
            w = workload(GPT, phase="training", batch=b, seq=s, tensor_parallel=t,
                         sequence_parallel=sp, attention="eager", dropout=True,
                         precision="fp16")  # fmt: skip
            per_layer = sum(
                k.saved_bytes for k in w.kernels if k.count == GPT.layers and k.pass_ == "forward"
            )
            replicated = 34 / t if sp else 10 + 24 / t
            assert per_layer == pytest.approx(s * b * h * (replicated + 5 * a * s / (h * t)))


def test_pricing_a_96_layer_model_is_not_per_layer():
    """Identical layers are one row with a count: a 96-layer model has as many rows as a
    4-layer one (so its price costs the same; speed is measured in benchmarks/)."""
    big = LlmSpec("gpt-175b", 96, 12288, 96, 96, 128, 49152, 51200, gated_mlp=False)
    small = LlmSpec("small", 4, 12288, 96, 96, 128, 49152, 51200, gated_mlp=False)
    assert len(workload(big).kernels) == len(workload(small).kernels)


def test_table_views():
    """A reader sees a step as a table (text and HTML) and JSON; the kernel table ranks the
    kernels that take the time and shares add up to at most 100 %."""
    w = workload("llama-2-7b", batch=1, seq=256)
    assert "qkv_proj" in str(w) and "<table" in w._repr_html_()
    d = w.to_dict()
    assert d["kernels"][0]["name"] == w.kernels[0].name
    p = price(w, "H100")
    assert "share" in p.kernel_table(5)
    assert sum(p.categories.values()) == pytest.approx(p.step_s)
    assert p.to_dict()["feasibility"] == p.feasibility


@pytest.mark.parametrize(
    "kwargs",
    [{"batch": v} for v in HOSTILE_NUMBERS]
    + [{"seq": v} for v in HOSTILE_NUMBERS]
    + [{"phase": v} for v in ("train", None, 3)]
    + [{"attention": "xformers"}, {"recompute": True}, {"zero": 4}, {"tensor_parallel": 3},
       {"experts": 8, "top_k": 9}, {"capacity_factor": float("nan")}, {"weights": "int4"},
       {"expert_parallel": 2, "experts": 8}, {"causal": "yes"}],
)  # fmt: skip
def test_workload_rejects_bad_input_in_one_sentence(kwargs):
    """Every bad option gives the kit's one-sentence InvalidParameter, quickly."""
    assert assert_kit_error(lambda: workload("llama-2-7b", **kwargs)) is not None


@pytest.mark.parametrize("bad", [None, "step", 3, {"timing": "x"}])
def test_price_rejects_bad_input(bad):
    """price() and workload_memory() refuse what is not a Workload, and a bad timing."""
    assert assert_kit_error(lambda: price(bad, "H100")) is not None
    assert assert_kit_error(lambda: workload_memory(bad)) is not None
    w = workload("llama-2-7b", seq=128)
    with pytest.raises(InvalidParameter, match="'timing'"):
        price(w, "H100", timing="cupti")


def test_fp8_precision_needs_a_gpu_with_fp8():
    """FP8 GEMMs price on Hopper, and a V100 refuses them with one sentence."""
    w = workload("llama-2-7b", seq=512, precision="fp8")
    assert math.isfinite(price(w, "H100").step_s)
    assert any(k.kind == "quant" for k in w.kernels)
    assert assert_kit_error(lambda: price(w, "V100")) is not None
    assert np.all(price(w, "H100").times_s > 0)


def test_optimizer_states_per_weight():
    """Model states per weight: AdamW 16 B (FP32 weight, gradient, m, v), SGD with momentum
    12 B, Adafactor 8 B (its factored statistics are a row and a column per matrix)."""
    for opt, per_weight in (("adamw", 16), ("sgd", 12), ("adafactor", 8)):
        m = workload_memory(workload(GPT, seq=128, optimizer=opt))
        states = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes
        assert states == pytest.approx(per_weight * workload(GPT, seq=128).params_per_gpu)


def test_w8a8_prefill_runs_int8_gemms():
    """W8A8 (int8 weights and activations): the linear layers are int8 Tensor Core GEMMs
    with a cast of each input, and a long prefill on an A100 (int8 peak twice FP16's) is
    faster than in FP16 though not twice, the casts and attention staying as they were."""
    f = workload("llama-2-7b", phase="prefill", batch=4, seq=2048, precision="fp16")
    q = workload("llama-2-7b", phase="prefill", batch=4, seq=2048, precision="fp16",
                 weights="w8a8")  # fmt: skip
    assert {k.dtype for k in q.kernels if k.kind == "gemm" and k.path != "lm_head"} == {"int8"}
    assert any(k.kind == "quant" for k in q.kernels)
    tf, tq = price(f, "A100").step_s, price(q, "A100").step_s
    assert 1.0 < tf / tq < 2.0


def test_loss_backward_transient_is_two_fp32_logits_and_the_logits():
    """The peak adds, during the loss backward, two logits-sized FP32 tensors (the gradients of
    the log-probabilities and of the logits) beside the 16-bit logits the training loop still
    holds: (2 x 4 B + 2 B) x tokens x vocab (the same accounting is within 5 % of PyTorch's
    measured peak in tests/live/test_training_memory_peak.py)."""
    m = workload_memory(workload("llama-3-8b", batch=2, seq=1024))
    assert m.transient_bytes == pytest.approx((2 * 4 + 2) * 2 * 1024 * 128256)


def test_class_breakdown_of_the_kernel_list_shows_r15():
    """R15 (slides' "Transformer example", measured in PyTorch: contractions 99.80 % of FLOPs
    but 61.0 % of runtime; normalizations 0.17 / 25.5 %, element-wise 0.03 / 13.5 %): the
    kernel list of a BERT-large-like fp16 training step on a V100, priced kernel by kernel,
    shows the same pattern, and its class FLOPs add up to the step's forward and backward."""
    spec = LlmSpec("bert-large-like", 24, 1024, 16, 16, 64, 4096, 30522, gated_mlp=False,
                   rotary=False)  # fmt: skip
    w = workload(spec, batch=8, seq=512, precision="fp16", attention="eager", causal=False,
                 dropout=True)  # fmt: skip
    c = price(w, "V100", timing="kernel").by_class()
    assert c["tensor_contraction"]["flops_share"] > 0.99
    assert c["tensor_contraction"]["runtime_share"] < 0.85
    for cls in ("statistical_normalization", "elementwise"):
        assert c[cls]["flops_share"] < 0.01
        assert c[cls]["runtime_share"] > 10 * c[cls]["flops_share"]
        assert c[cls]["runtime_share"] > 0.03
    compute = sum(k.flops * k.count for k in w.kernels if k.kind not in ("optimizer", "collective"))
    assert sum(v["flops"] for v in c.values()) == pytest.approx(compute)


# -- the physics added to calibrate against whole workloads ------------------------------


def test_flash1_grid_keeps_a_share_of_the_sms_by_whole_waves():
    """FlashAttention-1 runs one block per (sequence, head): 16 x 8 = 128 blocks on an A100's
    108 SMs take two waves, 128 / 216 of the slots (worked out by hand); FlashAttention-2 and
    the Triton kernel split the sequence too and keep every SM busy."""
    from dlperf_widgets.core.workload import attention_parallel_share

    assert attention_parallel_share("flash1", 128, "A100") == pytest.approx(128 / 216)
    assert attention_parallel_share("flash1", 108, "A100") == 1.0
    assert attention_parallel_share("flash1", 16, "A100") == pytest.approx(16 / 108)
    for impl in ("flash2", "triton", "sdpa"):
        assert attention_parallel_share(impl, 16, "A100") == 1.0
    with pytest.raises(InvalidParameter, match="'impl'"):
        attention_parallel_share("flash9", 16, "A100")


def test_fused_attention_math_time_is_the_closed_form():
    """A fused attention kernel's math time is FLOPs x (1 + block keys / keys) over the peak
    x the calibrated share x the busy SMs, each read from the shipped table: FlashAttention-1
    at 16 x 8 heads and 2048 keys on an A100 40GB, computed here from the constants."""
    from dlperf_widgets.core.gpus import gpu
    from dlperf_widgets.core.workload import fused_attention_time_s, workload_constants

    g = gpu("A100-SXM4-40GB")
    c = workload_constants(g)
    flops = 4.0 * 16 * 8 * 2048 * 2048 * 64
    expect = flops * (1 + c["attention_block_keys"].value / 2048)
    expect /= g.peak_flops("fp16") * c["attention_flash1"].value * (128 / 216)
    t = fused_attention_time_s(flops, 0.0, g, impl="flash1", units=128, keys=2048)
    # no traffic: the math time plus the kernel's fixed cost
    from dlperf_widgets.core.calibration import achievable

    fixed = achievable(g, "fp16").kernel_overhead_s
    assert t - fixed == pytest.approx(expect, rel=1e-9)


def test_flash1_step_is_slower_per_flop_when_few_heads_fill_the_gpu():
    """Attention over 8 x 16 = 128 (sequence, head) blocks runs at 128/216 of the SMs, over
    1 x 16 blocks at 16/108: the kernel's math time per FLOP grows by (128/216) / (16/108)
    = 4x from the grid alone (prefill, one layer; the per-row fixed work divided out)."""
    spec = LlmSpec("attn", 1, 1024, 16, 16, 64, 4096, 8, gated_mlp=False, rotary=False)
    per_flop = []
    for batch, seq in ((8, 1024), (1, 8192)):
        w = workload(spec, phase="prefill", batch=batch, seq=seq, attention="flash1",
                     causal=False, precision="fp16")  # fmt: skip
        p = price(w, "A100-SXM4-40GB", timing="kernel")
        i = next(j for j, k in enumerate(w.kernels) if k.name == "flash1")
        per_flop.append(float(p.math_times_s[i]) / w.kernels[i].flops)
    # the per-row fixed work differs between 1024 and 8192 keys: divide it out
    from dlperf_widgets.core.workload import workload_constants

    n0 = workload_constants("A100-SXM4-40GB")["attention_block_keys"].value
    ratio = (per_flop[1] / (1 + n0 / 8192)) / (per_flop[0] / (1 + n0 / 1024))
    assert ratio == pytest.approx((128 / 216) / (16 / 108), rel=1e-9)


def test_triton_attention_is_a_fused_kernel_with_its_own_constant():
    """attention='triton' builds one fused kernel forward and one backward at 2.5x its FLOPs
    (the count of Dao 2023), priced at the table's attention_triton share."""
    w = workload(GPT, batch=2, seq=2048, attention="triton")
    fwd = [k for k in w.kernels if k.name == "triton"]
    bwd = [k for k in w.kernels if k.name == "triton backward"]
    assert len(fwd) == 1 and len(bwd) == 1
    assert bwd[0].flops == pytest.approx(2.5 * fwd[0].flops)
    # causal: half of 4 x 2048^2 x 64 per head, 16 heads, 2 sequences
    assert fwd[0].flops == pytest.approx(0.5 * 4.0 * 2048 * 2048 * 64 * 16 * 2)
    assert price(w, "A100-SXM4-80GB").step_s > 0


def test_one_host_launch_constant():
    """core.assumptions.HOST_LAUNCH_OVERHEAD_S is the launch overhead of the default row of
    data/achievable.csv (read here from the file itself): one constant for one cost."""
    from dlperf_widgets.core.assumptions import HOST_LAUNCH_OVERHEAD_S
    from dlperf_widgets.core.gpus import _read_csv

    row = next(r for r in _read_csv("achievable.csv") if r["target"] == "default")
    assert HOST_LAUNCH_OVERHEAD_S == pytest.approx(float(row["launch_overhead_us"]) * 1e-6)


def test_eager_step_of_tiny_kernels_is_the_hosts_launches():
    """A step whose kernels are all far shorter than a launch is host-bound: eager, it takes
    about kernels x the host's time per call, the fitted value of the GPU's own host where
    achievable.csv has one (A100 PCIe 40GB: 21.5 us) and the default (20.5 us) elsewhere."""
    from dlperf_widgets.core.calibration import achievable

    tiny = LlmSpec("tiny", 2, 64, 2, 2, 32, 128, 64, gated_mlp=False, rotary=False)
    w = workload(tiny, phase="decode", batch=1, context=16, precision="fp16")
    n = float(sum(k.count for k in w.kernels if k.kind != "collective"))
    for name, us in (("A100-PCIe-40GB", 21.5), ("V100-SXM2-16GB", 20.5)):
        assert achievable(name, "fp16").launch_overhead_s == pytest.approx(us * 1e-6)
        p = price(w, name, timing="eager")
        # n launches, then the last kernel's own time (a few microseconds)
        assert n * us * 1e-6 < p.step_s < n * us * 1e-6 + 20e-6


def test_autocast_keeps_fp32_probabilities_and_residual_stream():
    """Under torch.autocast eager attention's softmax writes and saves FP32 probabilities
    (4 B each), a cast back to 16 bits feeds P V and is saved by it, and the norms and
    residual adds move the FP32 stream: bytes per element worked out by hand."""
    b, s, heads, h = 2, 512, 16, 1024
    w = workload(GPT, batch=b, seq=s, attention="eager", causal=False, precision="fp16",
                 autocast=True)  # fmt: skip
    k = {x.name: x for x in w.kernels if x.pass_ == "forward"}
    pairs = b * heads * s * s
    assert k["softmax"].saved_bytes == pytest.approx(4.0 * pairs)
    assert k["softmax"].bytes == pytest.approx(pairs * (2 + 4))
    assert k["probabilities cast"].saved_bytes == pytest.approx(2.0 * pairs)
    tokens = b * s
    assert k["attn_norm"].bytes == pytest.approx(tokens * h * (4 + 4))
    assert k["attn_norm cast"].bytes == pytest.approx(tokens * h * (4 + 2))
    assert k["residual add"].bytes == pytest.approx(tokens * h * (4 + 2 + 4))
    plain = workload(GPT, batch=b, seq=s, attention="eager", causal=False, precision="fp16")
    q = {x.name: x for x in plain.kernels if x.pass_ == "forward"}
    assert "probabilities cast" not in q
    assert q["residual add"].bytes == pytest.approx(tokens * h * 6)


def test_autocast_cache_holds_every_weight_copy_when_recomputing():
    """With recomputation under torch.autocast nothing saves the 16-bit weight copies, but
    autocast's cache keeps one per weight until the forward pass ends: 2 bytes x (every
    linear layer's weights + the LM head), counted here from the model's shape, is the
    transient; without autocast or without recomputation it is 0."""
    from dlperf_widgets.core.workload import autocast_cache_bytes

    w = workload(GPT, batch=1, seq=512, micro_batches=4, precision="fp16", autocast=True,
                 recompute="full")  # fmt: skip
    expect = 2.0 * (GPT.linear_params + GPT.head_outputs * GPT.hidden)
    assert autocast_cache_bytes(w) == pytest.approx(expect)
    assert workload_memory(w).transient_bytes >= expect
    assert autocast_cache_bytes(workload(GPT, precision="fp16", recompute="full")) == 0.0
    no_rc = workload(GPT, precision="fp16", autocast=True)
    assert autocast_cache_bytes(no_rc) == 0.0


def test_8bit_adam_keeps_two_bytes_of_state_per_weight():
    """bitsandbytes' 8-bit Adam (Dettmers et al. 2022) keeps m and v in one byte each: the
    optimizer states are 2 B per weight (a quarter of AdamW's 8), and its per-tensor kernels
    move 16 B per weight in all (FP32 weight and gradient read, weight written, two 8-bit
    states read and written); a 16-bit model's once-per-step copy of its FP32 master
    weights (4 B read, 2 B written per weight) is a kernel of its own."""
    w8 = workload(GPT, batch=1, seq=256, optimizer="adamw_8bit")
    w32 = workload(GPT, batch=1, seq=256, optimizer="adamw")
    m8, m32 = workload_memory(w8), workload_memory(w32)
    assert m8.optimizer_bytes == pytest.approx(2.0 * w8.params_per_gpu)
    assert m8.optimizer_bytes == pytest.approx(m32.optimizer_bytes / 4)
    opt = [k for k in w8.kernels if k.kind == "optimizer" and k.name != "16-bit weight copy"]
    assert sum(k.bytes * k.count for k in opt) == pytest.approx(16.0 * w8.params_per_gpu)
    (copy,) = [k for k in w8.kernels if k.name == "16-bit weight copy"]
    assert copy.bytes * copy.count == pytest.approx(6.0 * w8.params_per_gpu)
    autocast = workload(GPT, batch=1, seq=256, optimizer="adamw_8bit", autocast=True)
    assert not [k for k in autocast.kernels if k.name == "16-bit weight copy"]


def test_einsum_layout_adds_the_key_scale_and_three_head_copies_counted_by_hand():
    """eager_layout='einsum' (a plain PyTorch reference on (batch, seq, heads, d) views):
    one kernel scales K and einsum copies Q, K and V into per-head order, each one read and
    one write of a (batch x seq x heads x d) FP16 tensor, counted by hand for the FlashAttention
    paper's benchmark shape (batch 16, 8 heads of 64, seq 512): 16 x 512 x 512 elements,
    16 777 216 bytes each. 'strided' (Megatron-LM's layout) runs none of them, and the GEMMs
    and the softmax are the same in both."""
    spec = LlmSpec("attn", 1, 512, 8, 8, 64, 2048, 1, gated_mlp=False, rotary=False)
    kw = dict(phase="prefill", batch=16, seq=512, precision="fp16", attention="eager",
              causal=False)  # fmt: skip
    strided = workload(spec, **kw)
    einsum = workload(spec, **kw, eager_layout="einsum")
    elems = 16 * 512 * 8 * 64
    attn = {k.name: k for k in einsum.kernels if k.path.endswith(".attn")}
    assert list(attn) == ["key scale", "query copy", "key copy", "scores Q K^T", "softmax",
                          "value copy", "context P V"]  # fmt: skip
    for name in ("key scale", "query copy", "key copy", "value copy"):
        assert attn[name].bytes == 2 * 2 * elems == 16_777_216
        assert attn[name].kind == "memory" and attn[name].saved_bytes == 0
    assert attn["key scale"].flops == elems
    base = {k.name: k for k in strided.kernels if k.path.endswith(".attn")}
    assert list(base) == ["scores Q K^T", "softmax", "context P V"]
    for name, k in base.items():
        assert attn[name] == k
    assert strided.eager_layout == "strided" and einsum.eager_layout == "einsum"


def test_eager_layout_is_validated():
    """An unknown eager_layout is refused with the kit's one-sentence message."""
    with pytest.raises(InvalidParameter, match="'eager_layout' must be one of"):
        workload(GPT, attention="eager", eager_layout="blocked")


def test_weight_gradient_bytes_follow_each_precision_convention():
    """A linear layer's weight-gradient GEMM reads its input (T x K) and output gradient
    (T x N) and moves the K x N gradient: under torch.autocast it writes it in 16 bits and
    the weight cast's backward converts it to the FP32 .grad (read 2 B, write 4 B); FP32
    training writes 4 B; Megatron-LM's 16-bit model and the FP8 recipe accumulate into the
    FP32 main_grad inside the GEMM (beta = 1: read and write 4 B each) and have no weight
    cast backward. The memory view keeps one FP32 gradient per weight in every case."""
    b, s, h = 2, 256, GPT.hidden
    t, n, kin = b * s, 3 * h, h  # qkv_proj: 3h outputs from h inputs (no GQA)
    for kw, act, grad, cast in (
        ({"precision": "fp16", "autocast": True}, 2, 2, 6),
        ({"precision": "fp32"}, 4, 4, None),
        ({"precision": "bf16"}, 2, 8, None),
        ({"precision": "fp8"}, 2, 8, None),
    ):
        w = workload(GPT, batch=b, seq=s, **kw)
        k = {x.name: x for x in w.kernels}
        assert k["qkv_proj wgrad"].bytes == t * kin * act + t * n * act + kin * n * grad, kw
        if cast is None:
            assert "qkv_proj weight cast backward" not in k, kw
        else:
            assert k["qkv_proj weight cast backward"].bytes == cast * n * kin
        assert workload_memory(w).gradients_bytes == pytest.approx(4.0 * w.params_per_gpu)


def test_softmax_backward_counts_its_math_once():
    """Softmax backward, dx = y (dy - sum(dy y)) per row: a multiply, an add into the sum, a
    subtract and a multiply, 4 operations per probability, core.memlimited's count; it reads
    dy and y and writes dx: 3 x 2 B per probability in 16 bits, and under torch.autocast dy
    and y in FP32 and dx in 16 bits (4 + 4 + 2 B)."""
    from dlperf_widgets.core.memlimited import memory_op

    b, s, heads = 2, 256, GPT.heads
    pairs = b * heads * s * s
    for autocast, per in ((False, 2 + 2 + 2), (True, 4 + 4 + 2)):
        w = workload(GPT, batch=b, seq=s, attention="eager", causal=False, precision="fp16",
                     autocast=autocast)  # fmt: skip
        k = next(x for x in w.kernels if x.name == "softmax backward")
        assert k.flops == pytest.approx(4.0 * pairs)
        assert k.bytes == pytest.approx(per * pairs)
    _, bwd = memory_op("softmax", elements=pairs, dtype="fp16", gpu="A100")
    assert bwd.flops == pytest.approx(4.0 * pairs)
    assert bwd.bytes == pytest.approx(6.0 * pairs)


def test_fp8_keeps_eager_attention_core_in_bf16():
    """Transformer Engine's FP8 recipes run the linear layers' GEMMs in FP8 and attention
    in 16 bits: the batched products of eager attention (Q K^T, P V and their gradients) run
    in BF16 and cost what they cost in a BF16 step, while the projections run in FP8."""
    kw = {"batch": 1, "seq": 512, "attention": "eager"}
    f8 = workload(GPT, precision="fp8", **kw)
    bf = workload(GPT, precision="bf16", **kw)
    core = ("scores Q K^T", "context P V", "scores Q K^T dgrad", "context P V wgrad")
    dtypes = {k.name: k.dtype for k in f8.kernels}
    assert dtypes["qkv_proj"] == "fp8_e4m3"
    assert all(dtypes[name] == "bf16" for name in core)
    t8 = dict(zip([k.name for k in f8.kernels], price(f8, "H100", isolated=True).times_s,
                  strict=True))  # fmt: skip
    tb = dict(zip([k.name for k in bf.kernels], price(bf, "H100", isolated=True).times_s,
                  strict=True))  # fmt: skip
    for name in core:
        assert t8[name] == pytest.approx(tb[name], rel=1e-12)
    assert t8["qkv_proj"] < tb["qkv_proj"]
