"""Guards core/memory.py: bytes per parameter (R14), activations, checkpointing (R17),
accumulation, per-GPU splits, the techniques table and input errors."""

from __future__ import annotations

import math

import pytest

from dlperf_widgets import training_memory as lazy_training_memory
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.core.memory import (
    checkpoint_activation_bytes,
    optimization_techniques,
    training_memory,
    transformer_activation_bytes,
)

P = 1_000_000


@pytest.mark.parametrize(
    ("precision", "weights"), [("fp32", 4), ("mixed-fp16", 6), ("mixed-bf16", 6)]
)
@pytest.mark.parametrize(
    ("optimizer", "states"),
    [("adamw", 8), ("adam", 8), ("adam8bit", 2), ("sgd-momentum", 4), ("sgd", 0)],
)
def test_r14_bytes_per_parameter(precision, weights, optimizer, states):
    """R14 (slides, "GPU memory"): weights 4 B (FP32) or 6 B (mixed), AdamW 8 B, 8-bit
    AdamW 2 B, SGD with momentum 4 B, gradients always 4 B per parameter."""
    r = training_memory(P, optimizer=optimizer, precision=precision)
    assert r.weights_bytes == weights * P
    assert r.gradients_bytes == 4 * P
    assert r.optimizer_bytes == states * P
    assert r.total_bytes == (weights + 4 + states) * P
    assert r.per_gpu_bytes == r.total_bytes
    assert r.fits is None


def test_mixed_adamw_is_18_bytes_per_parameter():
    """The slides' accounting adds up to 6 + 4 + 8 = 18 B/param: a 7B model needs 126 GB
    before activations, so it does not fit one 80 GB A100."""
    r = training_memory(7e9, gpu="A100")
    assert r.total_bytes == 126e9
    assert r.fits is False
    assert training_memory(1e9, gpu="A100").fits is True


def test_activation_formula_is_korthikanti():
    """Korthikanti et al. 2022, sec. 4.1: s*b*h*(34 + 5*a*s/h) bytes per layer (16-bit);
    with tensor parallelism t: s*b*h*(10 + 24/t + 5*a*s/(h*t)); with sequence parallelism
    everything divides by t. Checked on the paper's GPT-3 layer (s=2048, h=12288, a=96)."""
    s, b, h, a = 2048, 1, 12288, 96
    assert transformer_activation_bytes(s, b, h, a).total_bytes == s * b * h * (34 + 5 * a * s / h)
    t = 8
    tp = transformer_activation_bytes(s, b, h, a, tensor_parallel=t)
    assert tp.total_bytes == pytest.approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t)))
    sp = transformer_activation_bytes(s, b, h, a, tensor_parallel=t, sequence_parallel=True)
    assert sp.total_bytes == pytest.approx(s * b * h * (34 + 5 * a * s / h) / t)


def test_activation_groups_add_up_and_scale():
    """The groups (LayerNorm, attention, scores, MLP, masks) sum to the total; FP32 doubles
    every 2-byte tensor but not the 1-byte masks; the layer input is s*b*h elements."""
    r = transformer_activation_bytes(512, 4, 1024, 16)
    parts = (
        r.layernorm_inputs_bytes
        + r.attention_projections_bytes
        + r.attention_scores_bytes
        + r.mlp_bytes
        + r.dropout_masks_bytes
    )
    assert parts == r.total_bytes
    r32 = transformer_activation_bytes(512, 4, 1024, 16, bytes_per_element=4)
    assert r32.total_bytes - r32.dropout_masks_bytes == 2 * (r.total_bytes - r.dropout_masks_bytes)
    assert r.layer_input_bytes == 512 * 4 * 1024 * 2


def test_r17_sqrt_checkpointing_is_order_sqrt_n():
    """R17 (slides, "Activation Re-computation"): checkpointing segments of sqrt(n) layers
    makes activation memory O(sqrt(n)) for one extra forward pass: 16x the layers costs
    about 4x the memory (not 16x), and every layer is recomputed once."""
    a, x = 34.0, 2.0  # per-layer activations and layer input, in units of s*b*h bytes
    peaks = {n: checkpoint_activation_bytes(n, a, x, "sqrt")[1] for n in (16, 256, 4096)}
    assert peaks[256] / peaks[16] == pytest.approx(4, rel=0.05)
    assert peaks[4096] / peaks[256] == pytest.approx(4, rel=0.05)
    none = {n: checkpoint_activation_bytes(n, a, x, "none")[1] for n in (16, 256)}
    assert none[256] / none[16] == 16
    assert checkpoint_activation_bytes(256, a, x, "sqrt")[2] == 256  # one more forward
    assert checkpoint_activation_bytes(256, a, x, "none")[2] == 0


def test_checkpointing_formulas():
    """ceil(n/k) inputs after the forward pass; the peak adds one segment's k*A - X."""
    stored, peak, _ = checkpoint_activation_bytes(10, 34.0, 2.0, "every-3")
    assert stored == math.ceil(10 / 3) * 2.0
    assert peak == stored + 3 * 34.0 - 2.0
    assert checkpoint_activation_bytes(10, 34.0, 2.0, "every") == (20.0, 20.0 + 32.0, 10)
    assert checkpoint_activation_bytes(10, 34.0, 2.0, 10)[1] == 340.0  # one segment = none


def test_gradient_accumulation_keeps_effective_batch_and_cuts_activations():
    """k accumulation steps run micro-batches of batch/k: activations shrink k-fold (the
    formula is linear in b), weights/gradients/optimizer states do not change."""
    dims = dict(layers=24, hidden=2048, seq_len=1024, batch=32, heads=16)
    one = training_memory(1.3e9, **dims)
    four = training_memory(1.3e9, accumulation_steps=4, **dims)
    assert four.activations_bytes == pytest.approx(one.activations_bytes / 4)
    assert four.activations_after_forward_bytes == pytest.approx(
        one.activations_after_forward_bytes / 4
    )
    assert (four.effective_batch, four.micro_batch, one.micro_batch) == (32, 8, 32)
    assert four.model_state_bytes == one.model_state_bytes


def test_whole_model_activations():
    """The kernel list's saved tensors, under Korthikanti et al.'s assumptions (eager
    attention, dropout, no head), are their published s*b*h*(34 + 5*a*s/h) per layer; the
    backward's peak adds eager attention's two probability-sized gradients, less what the
    last layer saved after its attention core (freed by then)."""
    r = training_memory(1.3e9, layers=24, hidden=2048, seq_len=1024, batch=8, heads=16)
    s, b, h, a = 1024, 8, 2048, 16
    per_layer = s * b * h * (34 + 5 * a * s / h)
    assert r.activations_after_forward_bytes == 24 * per_layer
    assert r.activations_per_layer_bytes == per_layer
    # after the attention core: the output projection's input, two norm inputs (16-bit),
    # the MLP's input, GELU input and output (4 sbh each), two 1-byte dropout masks
    after = s * b * h * (2 + 2 + 2 + 8 + 8 + 2 * 1)
    probabilities = 2 * a * s * s * b
    assert r.activations_bytes == 24 * per_layer + 2 * probabilities - after
    assert r.total_bytes == 18 * 1.3e9 + r.activations_bytes


def test_zero_partitions_per_gpu():
    """ZeRO over 8 GPUs (mixed AdamW, 6+4+8 B/param): stage 1 splits states and FP32 master
    weights, stage 2 also gradients, stage 3 also the 16-bit weights."""
    psi, n = 1e9, 8
    per = [training_memory(psi, data_parallel=n, zero=z).per_gpu_bytes for z in range(4)]
    assert per[0] == 18 * psi
    assert per[1] == pytest.approx(2 * psi + 4 * psi + (4 + 8) * psi / n)
    assert per[2] == pytest.approx(2 * psi + (4 + 4 + 8) * psi / n)
    assert per[3] == pytest.approx(18 * psi / n)


def test_tensor_and_pipeline_parallel_split():
    """Tensor x pipeline parallelism splits model states evenly; the first pipeline stage
    holds layers/p layers for up to p micro-batches in flight (1F1B)."""
    dims = dict(layers=32, hidden=4096, seq_len=2048, batch=8, heads=32)
    base = training_memory(7e9, **dims)
    tp = training_memory(7e9, tensor_parallel=4, **dims)
    assert tp.per_gpu_weights_bytes == base.weights_bytes / 4
    per_layer_tp = transformer_activation_bytes(2048, 8, 4096, 32, tensor_parallel=4).total_bytes
    assert tp.per_gpu_activations_after_forward_bytes == pytest.approx(32 * per_layer_tp)
    pp = training_memory(7e9, pipeline_parallel=4, accumulation_steps=8, **dims)
    micro_layer = transformer_activation_bytes(2048, 1, 4096, 32).total_bytes
    assert pp.per_gpu_activations_after_forward_bytes == pytest.approx(4 * (32 / 4) * micro_layer)
    assert pp.gpus == 4 and pp.per_gpu_optimizer_bytes == base.optimizer_bytes / 4


def test_gpu_fit_and_lazy_public_name():
    """fits compares per-GPU bytes with the GPU's memory; dlperf_widgets.training_memory is this."""
    r = lazy_training_memory(3e9, gpu="A100")
    assert r.fits is (r.per_gpu_bytes <= gpu("A100").memory_bytes)
    assert r.gpu_memory_bytes == gpu("A100").memory_bytes
    d = r.to_dict()
    for key in (
        "weights_bytes",
        "gradients_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "total_bytes",
        "per_gpu_bytes",
        "fits",
    ):
        assert key in d


def test_optimization_techniques_table():
    """The slides' table: accumulation and checkpointing save memory, not time; mixed
    precision speeds up; the DataLoader speeds up without saving memory; ZeRO saves memory."""
    rows = {t.technique: t for t in optimization_techniques()}
    assert len(rows) == 7
    assert (rows["Gradient accumulation"].speed, rows["Gradient accumulation"].memory) == (
        "no",
        "yes",
    )
    assert (rows["Gradient checkpointing"].speed, rows["Gradient checkpointing"].memory) == (
        "no",
        "yes",
    )
    assert (rows["Mixed precision training"].speed, rows["Mixed precision training"].memory) == (
        "yes",
        "(no)",
    )
    assert rows["DataLoader"].speeds_up and not rows["DataLoader"].saves_memory
    assert rows["DeepSpeed Zero"].saves_memory and not rows["DeepSpeed Zero"].speeds_up
    assert rows["Batch size"].speeds_up and rows["Optimizer choice"].saves_memory


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(params=-5), r"'params' must be a positive number \(got -5\)"),
        (dict(params=1e9, optimizer="adm"), r"'optimizer' must be one of .*\(got 'adm'\)"),
        (dict(params=1e9, precision="fp8"), r"'precision' must be one of"),
        (dict(params=1e9, zero=4), r"'zero' must be an integer between 0 and 3 \(got 4\)"),
        (
            dict(
                params=1e9,
                layers=30,
                hidden=4096,
                seq_len=2048,
                batch=8,
                heads=32,
                pipeline_parallel=4,
            ),
            r"'pipeline_parallel' must divide layers \(30\) \(got 4\)",
        ),
        (
            dict(
                params=1e9,
                layers=32,
                hidden=4096,
                seq_len=2048,
                batch=8,
                heads=32,
                tensor_parallel=3,
            ),
            r"'tensor_parallel' must divide heads \(32\) \(got 3\)",
        ),
        (
            dict(
                params=1e9,
                layers=32,
                hidden=4096,
                seq_len=2048,
                batch=8,
                heads=32,
                accumulation_steps=3,
            ),
            r"'accumulation_steps' must divide batch \(8\) \(got 3\)",
        ),
        (
            dict(params=1e9, layers=32, hidden=4100, seq_len=2048, batch=8, heads=32),
            r"'hidden' must be a multiple of heads",
        ),
        (dict(params=1e9, layers=32, hidden=4096), r"'seq_len' must be a positive integer when"),
        (dict(params=1e9, checkpointing="evry"), r"'checkpointing' must be one of"),
        (
            dict(
                params=1e9,
                layers=4,
                hidden=64,
                seq_len=8,
                batch=1,
                heads=4,
                checkpointing="every-9",
            ),
            r"K between 1 and the 4 layers \(got 9\)",
        ),
        (dict(params=1e9, data_parallel=0), r"'data_parallel' must be a positive integer"),
        (dict(params=1e9, attention="fast"), r"'attention' must be one of eager, sdpa"),
        (dict(params=1e9, kv_heads=0), r"'kv_heads' must be an integer between 1 and"),
        (dict(params=1e9, gated_mlp="yes"), r"'gated_mlp' must be"),
        (
            dict(params=1e9, layers=2, hidden=64, seq_len=1 << 20, batch=128, heads=4),
            r"'batch' x 'seq_len' must be at most 67,108,864 tokens \(got 134,217,728\)",
        ),
        (dict(params=1e9, dropout=1), r"'dropout' must be"),
        (
            dict(params=1e9, layers=2, hidden=64, seq_len=8, batch=1, heads=4, kv_heads=3),
            r"'kv_heads' must divide 'heads' \(4\).*\(got 3\)",
        ),
    ],
)
def test_bad_input_is_one_clear_sentence(kwargs, message):
    """Negative sizes, unknown names and parallel sizes that don't divide are InvalidParameter."""
    params = kwargs.pop("params")
    with pytest.raises(InvalidParameter, match=message):
        training_memory(params, **kwargs)


def test_zero_communication_follows_the_paper_ratios():
    """ZeRO paper, section 7: per-step traffic 2 Psi (DP, stages 1 and 2) and 3 Psi (stage 3)."""
    from dlperf_widgets.core.memory import training_memory

    comm = {
        z: training_memory(
            7e9, precision="mixed-fp16", data_parallel=8, zero=z
        ).data_parallel_comm_bytes
        for z in (0, 1, 2, 3)
    }
    assert comm[1] == pytest.approx(comm[0])
    assert comm[2] == pytest.approx(comm[0])
    assert comm[3] == pytest.approx(1.5 * comm[0])
    # ring all-reduce of 2-byte gradients: 2 x (n - 1) / n x 2 B x Psi
    assert comm[0] == pytest.approx(2 * 7 / 8 * 2 * 7e9)


def test_parameter_counts_as_people_write_them():
    """'7B', '350M', '1.5 T' and plain numbers mean the same count in Python, CLI and widget."""
    from dlperf_widgets.core.memory import parse_count, training_memory

    assert parse_count("7B") == 7e9 and parse_count("350M") == 350e6
    assert parse_count("1.5 T") == 1.5e12 and parse_count("125_000_000") == 125e6
    assert training_memory("7B").weights_bytes == training_memory(7e9).weights_bytes
    with pytest.raises(InvalidParameter, match=r"'params' must be a positive number such as 7e9"):
        training_memory("seven")


def test_recompute_strategies_follow_korthikanti_table_2():
    """Korthikanti et al. 2022, Table 2, per layer (16-bit): none sbh(10 + 24/t + 5as/ht),
    selective sbh(10 + 24/t), full 2sbh; t = 1 reproduces sbh(34 + 5as/h)."""
    from dlperf_widgets.core.memory import recompute_activation_bytes

    s, b, h, a = 2048, 1, 12288, 96
    sbh = s * b * h
    assert recompute_activation_bytes(s, b, h, a) == sbh * (34 + 5 * a * s / h)
    for t in (1, 8):
        sel = recompute_activation_bytes(s, b, h, a, tensor_parallel=t, recompute="selective")
        assert sel == sbh * (10 + 24 / t)
    assert recompute_activation_bytes(s, b, h, a, recompute="full") == 2 * sbh


def test_saved_activations_recompute_and_bad_input():
    """Selective recompute drops exactly the s^2 tensors; full recompute stores one FP32
    block input per block and peaks one block higher; bad options give one sentence."""
    from dlperf_widgets.core.memory import saved_activation_bytes

    kw = dict(layers=4, vocab=1000, family="gpt2", dropout=True)
    none = saved_activation_bytes(256, 2, 128, 4, **kw)
    sel = saved_activation_bytes(256, 2, 128, 4, recompute="selective", **kw)
    full = saved_activation_bytes(256, 2, 128, 4, recompute="full", **kw)
    assert none.block_bytes - sel.block_bytes == none.block_parts["attention_scores"] > 0
    assert full.blocks_bytes == 4 * 256 * 2 * 128 * 4
    assert full.peak_bytes - full.stored_bytes == none.block_bytes - full.block_bytes
    with pytest.raises(InvalidParameter, match="'recompute' must be one of"):
        saved_activation_bytes(256, 2, 128, 4, recompute="some")
    with pytest.raises(InvalidParameter, match="'attention' must be 'eager' when dropout"):
        saved_activation_bytes(256, 2, 128, 4, attention="sdpa", dropout=True)
    with pytest.raises(InvalidParameter, match="'ffn' must be given"):
        saved_activation_bytes(256, 2, 128, 4, family="llama")


def test_autocast_convention_keeps_fp32_weights_only():
    """torch.autocast keeps the FP32 weights and gradients alone (16-bit copies are per op):
    4 + 4 + 8 = 16 bytes per parameter with AdamW, not the master-copy scheme's 18."""
    r = training_memory(1e9, precision="bf16-autocast")
    assert (r.weights_bytes_per_param, r.gradients_bytes_per_param) == (4, 4)
    assert r.model_state_bytes == 16e9


def test_fused_attention_and_gqa_shrink_the_saved_tensors():
    """SDPA keeps no s x s tensor: against eager (no dropout) each layer saves the 16-bit
    probabilities (a s^2 b x 2 B) less and the FP32 log-sum-exp (a s b x 4 B) more; both keep
    Q, K, V and the output. Grouped-query attention with kv heads = a / 4 saves K and V a
    quarter the size."""
    s, b, h, a, n = 1024, 2, 512, 8, 4
    dims = dict(layers=n, hidden=h, seq_len=s, batch=b, heads=a, dropout=False)
    eager = training_memory(1e8, **dims).activations_per_layer_bytes
    sdpa = training_memory(1e8, attention="sdpa", **dims).activations_per_layer_bytes
    assert eager - sdpa == a * s * s * b * 2 - a * s * b * 4
    gqa = training_memory(1e8, attention="sdpa", kv_heads=a // 4, **dims)
    assert sdpa - gqa.activations_per_layer_bytes == 2 * s * b * (h - h // 4) * 2


def test_zero3_peak_adds_the_gathered_largest_layer():
    """ZeRO-3 gathers one layer's 16-bit weights at a time: with fused attention and no head
    (no other transient) the peak over the saved tensors is 12 h^2 x 2 B (4 h^2 attention,
    8 h^2 MLP)."""
    h = 1024
    r = training_memory(1e9, layers=4, hidden=h, seq_len=512, batch=1, heads=8,
                        attention="sdpa", data_parallel=8, zero=3)  # fmt: skip
    extra = r.per_gpu_activations_bytes - r.per_gpu_activations_after_forward_bytes
    assert extra == 12 * h * h * 2


def test_selective_recomputation_is_the_papers_34_sbh():
    """Korthikanti et al. 2022, Table 2: selective recomputation keeps sbh(10 + 24/t) bytes
    per layer (34 sbh at t = 1), the count without the s x s tensors."""
    from dlperf_widgets.core.memory import recompute_activation_bytes

    s, b, h, a = 1024, 2, 1024, 16
    r = training_memory(1e9, layers=4, hidden=h, seq_len=s, batch=b, heads=a,
                        checkpointing="selective")  # fmt: skip
    per_layer = recompute_activation_bytes(s, b, h, a, recompute="selective")
    assert r.activations_per_layer_bytes == per_layer == 34 * s * b * h
    assert r.activations_after_forward_bytes == 4 * per_layer
    assert r.checkpointing == "selective"


def test_saved_activation_bytes_is_the_kernel_lists_plus_named_extras():
    """saved_activation_bytes is a view of the step's kernel list: on a GPU with a fused
    GELU (one saved tensor), a GPT-2 block in FP32 with dropout saves exactly the kernel
    list's per-layer tensors plus the two LayerNorms' mean and 1/std (4 FP32 values per
    token), which is Korthikanti et al.'s closed form with 4-byte activations and 1-byte
    masks plus those statistics."""
    from dlperf_widgets.core.memory import saved_activation_bytes
    from dlperf_widgets.core.workload import LlmSpec, saved_activations, workload

    s, b, h, a = 128, 2, 256, 8
    r = saved_activation_bytes(s, b, h, a, layers=3, gelu_tensors=1, device="gpu")
    spec = LlmSpec("gpt2", 3, h, a, a, h // a, 4 * h, 1, gated_mlp=False, rotary=False)
    w = workload(spec, phase="training", batch=b, seq=s, precision="fp32", attention="eager",
                 dropout=True)  # fmt: skip
    stats = 2 * 2 * s * b * 4
    assert r.block_bytes == saved_activations(w).per_layer_bytes + stats
    paper = transformer_activation_bytes(s, b, h, a, bytes_per_element=4, mask_bytes=1)
    assert r.block_bytes == paper.total_bytes + stats
