"""Guards core/fusion.py: bytes of fused vs unfused chains, FlashAttention's IO complexity
(Dao et al. 2022) against the paper's algorithms, and the launch-overhead model."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.fusion import (
    CHAINS,
    FLASH_PAPER_GPT2_MEDIUM,
    attention,
    attention_traffic,
    flash_attention_backward_elements,
    flash_attention_elements,
    flash_block_sizes,
    fusion_chain,
    launch_overhead,
    parse_chain,
    standard_attention_backward_elements,
    standard_attention_elements,
)
from dlperf_widgets.core.memlimited import memory_op

BIG = 2**26


def test_unfused_chain_is_the_sum_of_the_single_ops():
    """Unfused, a chain moves exactly what each op moves alone (memory_op's forward passes)."""
    r = fusion_chain(["bias", "dropout", "residual", "layernorm"], elements=BIG, gpu="V100")
    alone = sum(memory_op(op, elements=BIG, gpu="V100", training=False)[0].bytes
                for op in r.ops)  # fmt: skip
    assert r.bytes_unfused == alone
    assert r.kernels_unfused == 4 and r.kernels_fused == 1


def test_fused_bytes_by_hand():
    """Second count by hand: bias-dropout-residual-LayerNorm fused reads x and the residual
    (2 tensors), writes the output (1 tensor) and the 1-byte dropout mask: 3 x 2 B + 1 B per
    element in FP16; unfused it is 2+ (2+1 mask) + 3 + 2 tensor passes = 9 x 2 B + 1 B."""
    r = fusion_chain("bias, dropout, residual, layernorm", elements=BIG, dtype="fp16")
    assert r.bytes_fused == BIG * (3 * 2 + 1)
    assert r.bytes_unfused == BIG * (9 * 2 + 1)
    assert r.bytes_saved_fraction == pytest.approx(1 - 7 / 19)


def test_large_chains_speed_up_by_the_traffic_ratio():
    """Far above the small-tensor regime the predicted speedup approaches the bytes ratio (each
    kernel's fixed cost of a few microseconds is all that keeps it below)."""
    r = fusion_chain("bias, gelu", elements=BIG, gpu="A100")
    assert r.bytes_unfused / r.bytes_fused == 2.0
    assert r.speedup == pytest.approx(2.0, rel=1e-4) and r.speedup < 2.0
    assert r.time_fused_s < r.time_unfused_s


def test_every_preset_chain_fuses_to_fewer_bytes():
    """Each preset chain of a transformer block moves less fused than unfused."""
    for name in CHAINS:
        r = fusion_chain(name, elements=2**20)
        assert r.bytes_fused < r.bytes_unfused, name
        assert r.ops == CHAINS[name]


@pytest.mark.parametrize(
    "ops, message",
    [
        ("", "'ops' must name at least one operation"),
        ("bias, conv", "'ops' must list operations among"),
        (42, "'ops' must be a comma-separated list"),
        ("batchnorm", "'ops' must list operations among"),
    ],
)
def test_bad_chains_are_rejected_with_one_sentence(ops, message):
    """A bad chain names the parameter and the value."""
    with pytest.raises(InvalidParameter, match=message):
        parse_chain(ops)


def test_bad_elements_rejected():
    """'elements' must be a positive integer."""
    with pytest.raises(InvalidParameter, match="'elements' must be"):
        fusion_chain("relu", elements=0)


# -- attention -----------------------------------------------------------------------


def test_standard_attention_traffic_is_the_papers_algorithm_0():
    """The GEMM-and-softmax pricing moves exactly 4Nd + 4N^2 elements per head (Algorithm 0:
    read Q,K write S; read S write P; read P,V write O)."""
    r = attention(1024, head_dim=64, heads=16, batch=4, dtype="fp16")
    assert r.bytes_standard == 4 * 16 * 2 * standard_attention_elements(1024, 64)


def _walk_algorithm_1(n: int, d: int, m: int) -> tuple[int, int]:
    """Count FlashAttention's Algorithm 1 loads and stores loop by loop (blocks at the edge
    are smaller): elements of Q/K/V/O, and of the statistics l and m."""
    bc = math.ceil(m / (4 * d))
    br = min(bc, d)
    big = stats = 0
    for j in range(0, n, bc):
        cols = min(bc, n - j)
        big += 2 * cols * d  # load K_j, V_j
        for i in range(0, n, br):
            rows = min(br, n - i)
            big += 3 * rows * d  # load Q_i, O_i; write O_i
            stats += 4 * rows  # load l_i, m_i; write them
    return big, stats


@pytest.mark.parametrize("n, d, m", [(1024, 64, 51200), (1000, 64, 4096), (4096, 128, 98304)])
def test_flash_traffic_matches_a_walk_through_algorithm_1(n, d, m):
    """The closed form equals a literal count of Algorithm 1's loads and stores."""
    assert flash_attention_elements(n, d, m) == _walk_algorithm_1(n, d, m)


def test_flash_traffic_is_theta_n2_d2_over_m():
    """Theorem 2 of the paper: Theta(N^2 d^2 / M); with B_c = M / 4d the constant is 12
    (3 N d per outer step over 4 N d / M steps) once N d^2 >> M."""
    d, m = 64, 64 * 4 * 128  # B_c = 128 exactly
    for n in (2**14, 2**16):
        big, _ = flash_attention_elements(n, d, m)
        assert big / (n * n * d * d / m) == pytest.approx(12, rel=0.01)


def test_flash_block_sizes_follow_the_paper():
    """B_c = ceil(M / 4d), B_r = min(B_c, d)."""
    assert flash_block_sizes(1024, 64, 51200)[:2] == (200, 64)
    assert flash_block_sizes(1024, 128, 8192)[:2] == (16, 16)


def test_flash_saves_memory_and_traffic_for_long_sequences():
    """At N = 4096, d = 64 FlashAttention moves fewer bytes, keeps no N x N matrix, and is
    predicted faster than the standard algorithm on an A100 when its 8 x 16 (sequence, head)
    blocks fill the GPU as in the notebooks (128 blocks on 108 SMs)."""
    r = attention(4096, head_dim=64, heads=16, batch=8, gpu="A100")
    assert r.bytes_flash < r.bytes_standard
    assert r.saved_bytes_standard == 8 * 16 * 4096 * 4096 * 2
    assert r.saved_bytes_flash == 8 * 16 * (4096 * 64 * 2 + 4096 * 4)
    assert r.time_flash_s < r.time_standard_s
    assert r.ideal_time_flash_s <= r.time_flash_s + 1e-12


def test_attention_rejects_tiny_sram():
    """An SRAM that cannot hold 4 x head_dim elements has no valid block size."""
    with pytest.raises(InvalidParameter, match="'sram_bytes' must hold"):
        attention(128, head_dim=128, sram_bytes=256)


# -- launch overhead -------------------------------------------------------------------


def test_launch_overhead_by_hand():
    """10 kernels of 1 us with 5 us launches: 50 us eagerly, 10 us + one graph launch (no
    more than one eager launch on that host: 5 us)."""
    r = launch_overhead([1e-6] * 10, launch_overhead_s=5e-6)
    assert r.eager_time_s == pytest.approx(50e-6)
    assert r.work_time_s == pytest.approx(10e-6)
    assert r.graph_time_s == pytest.approx(5e-6 + 10e-6)
    assert r.launch_bound and r.gpu_idle_fraction == pytest.approx(0.8)


def test_long_kernels_are_not_launch_bound():
    """Kernels longer than the launch overhead run back to back: eager = work."""
    r = launch_overhead([1e-3, 2e-3], launch_overhead_s=5e-6)
    assert r.eager_time_s == pytest.approx(3e-3) and not r.launch_bound


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1e-3), min_size=1, max_size=50), st.floats(0, 1e-4))
def test_eager_time_bounds(times, over):
    """Invariant: max(work, kernels x overhead) <= eager <= work + kernels x overhead."""
    r = launch_overhead(times, launch_overhead_s=over)
    lo = max(sum(times), len(times) * over)
    assert lo * (1 - 1e-9) <= r.eager_time_s <= sum(times) + len(times) * over + 1e-15


def test_launch_overhead_rejects_negative_times():
    """Kernel times must be non-negative numbers."""
    with pytest.raises(InvalidParameter, match="'kernel_times_s' must be"):
        launch_overhead([1e-6, -1.0])


def test_cuda_graph_figure_of_cuda_jl():
    """CUDA.jl's documentation: 80 small kernels take 70 us as one graph, under 1 us each;
    the graph model charges GRAPH_NODE_S = 1 us per tiny kernel plus one launch, within 25 %."""
    r = launch_overhead([0.0] * 80, launch_overhead_s=3.25e-6)
    assert r.eager_time_s == pytest.approx(260e-6)  # 260 us / 80 launches = 3.25 us each
    assert r.graph_time_s == pytest.approx(70e-6, rel=0.25)


@pytest.mark.parametrize("elements", [2**10, 2**16, 2**22, 2**26])
def test_a_cuda_graph_never_beats_the_kernels_own_time(elements):
    """The timing-context rule: a chain's CUDA-graph time and its eager time are never below
    the kernels' own (device) time, the model's predicted time; the host's launch overhead
    (core.assumptions) is a different constant from the device's fixed cost per kernel."""
    from dlperf_widgets.core.assumptions import HOST_LAUNCH_OVERHEAD_S

    r = fusion_chain(["scale", "add"] * 5, elements=elements, gpu="H100")
    lo = r.launch_unfused
    floor = r.time_unfused_s * (1 - 1e-12)  # sums in another order differ in the last bit
    assert lo.graph_time_s >= floor and lo.eager_time_s >= floor
    assert r.eager_time_unfused_s >= floor
    assert r.eager_time_fused_s >= r.time_fused_s * (1 - 1e-12)
    assert lo.launch_overhead_s == HOST_LAUNCH_OVERHEAD_S


def test_one_graph_launch_constant_for_steps_and_chains():
    """One CUDA graph launch is one cost (core.assumptions.CUDA_GRAPH_LAUNCH_S): a workload
    step priced as a graph adds it once to its kernels' own time, and a chain of kernels
    launched as a graph (core.fusion) adds the same, not the host's eager launch overhead."""
    from dlperf_widgets.core.assumptions import CUDA_GRAPH_LAUNCH_S, HOST_LAUNCH_OVERHEAD_S
    from dlperf_widgets.core.workload import price, workload

    w = workload("llama-2-7b", phase="decode", batch=1)
    step = price(w, "H100", timing="graph").step_s - price(w, "H100", timing="kernel").step_s
    assert step == pytest.approx(CUDA_GRAPH_LAUNCH_S)
    chain = launch_overhead([5e-6, 7e-6, 3e-6])
    assert chain.graph_time_s - chain.work_time_s == pytest.approx(CUDA_GRAPH_LAUNCH_S)
    assert CUDA_GRAPH_LAUNCH_S < HOST_LAUNCH_OVERHEAD_S


@pytest.mark.parametrize(
    ("seq_len", "measured_ms"), [(1024, 0.68), (2048, 2.4), (4096, 8.42), (8192, 35.54)]
)
def test_flash_attention_time_against_the_paper(seq_len, measured_ms):
    """FlashAttention's forward on an A100 40GB (Dao et al. 2022, Appendix E, Table 18: batch
    16, 8 heads of 64, FP16, no mask) within 15 % of the published time: its FLOPs at the
    calibrated FlashAttention-1 share of the peak, not at a GEMM's."""
    a = attention(seq_len, head_dim=64, heads=8, batch=16, gpu="A100-SXM4-40GB")
    assert a.time_flash_s * 1e3 == pytest.approx(measured_ms, rel=0.15)


@pytest.mark.parametrize(
    "kwargs",
    [{"flops": -1.0, "nbytes": 1.0}, {"flops": float("nan"), "nbytes": 1.0},
     {"flops": 1.0, "nbytes": "x"}, {"flops": 1.0, "nbytes": 1.0, "impl": "flash9"}],
)  # fmt: skip
def test_fused_attention_time_rejects_bad_input(kwargs):
    """Bad FLOPs, bytes or implementation: one sentence naming the parameter."""
    from dlperf_widgets.core.errors import InvalidParameter
    from dlperf_widgets.core.workload import fused_attention_time_s

    with pytest.raises(InvalidParameter, match=r"'(flops|nbytes|impl)'"):
        fused_attention_time_s(gpu="A100", **kwargs)


def _walk_fa2_forward(n: int, d: int, m: int) -> tuple[int, int]:
    """Count FlashAttention-2's forward loop order loop by loop: for each block of Q (B rows,
    B = ceil(M / 4d)) load Q_i, then every K_j, V_j; write O_i and the row log-sum-exp."""
    blk = math.ceil(m / (4 * d))
    big = stats = 0
    for i in range(0, n, blk):
        rows = min(blk, n - i)
        big += 2 * rows * d  # load Q_i, write O_i
        stats += rows  # write L_i
        for j in range(0, n, blk):
            big += 2 * min(blk, n - j) * d  # load K_j, V_j
    return big, stats


def _walk_algorithm_4(n: int, d: int, m: int) -> tuple[int, int]:
    """Count Algorithm 4 (FlashAttention's backward, Dao et al. 2022 appendix B.4) loop by
    loop: zero dQ, dK, dV in HBM; per block of K, V load K_j, V_j, then per block of Q load
    Q_i, O_i, dO_i, dQ_i, l_i, m_i and write dQ_i; write dK_j, dV_j."""
    bc = math.ceil(m / (4 * d))
    br = min(bc, d)
    big, stats = 3 * n * d, 0
    for j in range(0, n, bc):
        cols = min(bc, n - j)
        big += 2 * cols * d + 2 * cols * d  # load K_j, V_j; write dK_j, dV_j
        for i in range(0, n, br):
            rows = min(br, n - i)
            big += 5 * rows * d
            stats += 2 * rows
    return big, stats


@pytest.mark.parametrize("n, d, m", [(1024, 64, 51200), (1000, 64, 4096), (4096, 128, 98304)])
def test_fa2_loop_order_and_backward_match_a_walk(n, d, m):
    """The closed forms equal literal counts of FlashAttention-2's forward loop order and of
    Algorithm 4's backward loads and stores."""
    assert flash_attention_elements(n, d, m, "fa2") == _walk_fa2_forward(n, d, m)
    assert flash_attention_backward_elements(n, d, m) == _walk_algorithm_4(n, d, m)


def test_standard_backward_follows_algorithm_3():
    """Algorithm 3, step by step for one head at N = 1024, d = 64: dV = P^T dO, dP = dO V^T,
    dS from P and dP, dQ = dS K, dK = dS^T Q."""
    n, d = 1024, 64
    steps = [
        (n * n + n * d, n * d),  # read P, dO; write dV
        (2 * n * d, n * n),  # read dO, V; write dP
        (2 * n * n, n * n),  # read P, dP; write dS
        (n * n + n * d, n * d),  # read dS, K; write dQ
        (n * n + n * d, n * d),  # read dS, Q; write dK
    ]
    assert standard_attention_backward_elements(n, d) == sum(r + w for r, w in steps)


def test_traffic_of_the_papers_gpt2_medium_example():
    """GPT-2 medium (N = 1024, d = 64, 16 heads, batch 64) forward + backward in FP16: the
    counts as the paper writes its algorithms, against its measured HBM traffic (Figure 2).
    No cache is credited, so the FlashAttention count lies above the 4.4 GB measured, and the
    standard count, which leaves out masking and dropout, below the 40.3 GB."""
    p = FLASH_PAPER_GPT2_MEDIUM
    shape = {"head_dim": p["head_dim"], "heads": p["heads"], "batch": p["batch"]}
    std, fl = attention_traffic(p["seq_len"], backward=True, **shape)
    bh, n, d = 16 * 64, 1024, 64
    assert std == bh * 2 * (11 * n * n + 12 * n * d)
    assert fl / 1e9 > p["hbm_gb_flash"] and std / 1e9 < p["hbm_gb_standard"]
    fwd_std, fwd_fa1 = attention_traffic(p["seq_len"], **shape)
    r = attention(p["seq_len"], dtype="fp16", **shape)
    assert (fwd_std, fwd_fa1) == (r.bytes_standard, r.bytes_flash)
    _, fwd_fa2 = attention_traffic(p["seq_len"], loop="fa2", **shape)
    assert fwd_fa2 < fwd_fa1


def test_fa2_keeps_an_advantage_at_head_dim_128():
    """At d = 128 with 100 KiB of SRAM Algorithm 1's count is about even with standard
    attention (M / 3d^2 ~ 1), while FA-2's loop order, re-reading only K and V, keeps about
    1.5x: the paper's 'many times fewer' needs M >> d^2 or a cache."""
    std, fa1 = attention_traffic(4096, head_dim=128, heads=16, batch=8)
    _, fa2 = attention_traffic(4096, head_dim=128, heads=16, batch=8, loop="fa2")
    assert std / fa1 == pytest.approx(1.03, abs=0.02)
    assert std / fa2 == pytest.approx(1.57, abs=0.02)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"loop": "fa3"}, "'loop' must be one of fa1, fa2"),
        ({"loop": "fa2", "backward": True}, "'loop' must be fa1 when backward=True"),
        ({"head_dim": 0}, "'head_dim'"),
        ({"sram_bytes": 64}, "'sram_bytes' must hold"),
    ],
)
def test_attention_traffic_rejects_bad_input(kwargs, fragment):
    """Bad arguments raise one InvalidParameter sentence naming the parameter."""
    with pytest.raises(InvalidParameter, match=re.escape(fragment)):
        attention_traffic(1024, **kwargs)


def test_flash1_busy_sms_are_batch_times_heads_in_whole_waves():
    """FlashAttention-1's grid has one block per (sequence, head): 1 x 16 blocks keep 16 of
    an A100's 108 SMs busy, 8 x 16 = 128 blocks fill 128 of 2 x 108 slots (by hand), and
    its predicted time per FLOP grows by the ratio of the two shares (the per-row fixed
    work is the same at the same sequence length)."""
    one = attention(4096, head_dim=64, heads=16, batch=1, gpu="A100")
    eight = attention(4096, head_dim=64, heads=16, batch=8, gpu="A100")
    assert one.flash_sm_share == pytest.approx(16 / 108)
    assert eight.flash_sm_share == pytest.approx(128 / 216)
    from dlperf_widgets.core.calibration import achievable

    fixed = achievable("A100", "fp16").kernel_overhead_s
    per_flop_one = (one.time_flash_s - fixed) / one.flops
    per_flop_eight = (eight.time_flash_s - fixed) / eight.flops
    # both are math-bound at N = 4096: the busy share sets the ratio
    assert per_flop_one / per_flop_eight == pytest.approx((128 / 216) / (16 / 108), rel=0.02)
