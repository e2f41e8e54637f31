"""Guards the GEMM model: NVIDIA's published intensities and limiters, invariants, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlperf_widgets.core import InvalidParameter, custom_gpu, gemm, gemm_sweep, gpu
from dlperf_widgets.core.gemm import LATENCY_TILE, arithmetic_intensity, gemm_bytes, gemm_flops

# -- published reference numbers (shared/reference_numbers.md) ------------------------


def test_r02_skinny_gemm_is_memory_bound_on_v100():
    """R02: 8192 x 128 x 8192 FP16 has AI 124.1 FLOPS/B, below V100's 138.9: memory-bound."""
    r = gemm(8192, 128, 8192, dtype="fp16", gpu="V100")
    assert round(r.arithmetic_intensity, 1) == 124.1
    assert r.limiter == "memory"


def test_r03_square_gemm_is_math_bound_on_v100():
    """R03: 8192^3 FP16 has AI 2730 FLOPS/B (the slide truncates 2730.7): math-bound."""
    r = gemm(8192, 8192, 8192, dtype="fp16", gpu="V100")
    assert math.floor(r.arithmetic_intensity) == 2730
    assert r.limiter == "math"


def test_r06_linear_layer_batch_512_is_math_bound():
    """R06: Linear 4096 outputs x 1024 inputs, batch 512 (M=4096, N=512, K=1024): ~315 FLOPS/B."""
    r = gemm(4096, 512, 1024, dtype="fp16", gpu="V100")
    assert round(r.arithmetic_intensity) == 315
    assert r.limiter == "math"


def test_r07_linear_layer_batch_1_is_memory_bound():
    """R07: the same layer at batch 1 has AI ~1 FLOPS/B and is limited by memory."""
    r = gemm(4096, 1, 1024, dtype="fp16", gpu="V100")
    assert round(r.arithmetic_intensity) == 1
    assert r.limiter == "memory"


def test_cost_formulas_by_hand():
    """FLOPs = 2MNK; bytes = (MK + KN + MN) x size, plus MN x size more when beta != 0."""
    r = gemm(100, 200, 300, dtype="fp32", gpu="A100")
    assert r.flops == 2 * 100 * 200 * 300
    assert r.bytes == (100 * 300 + 300 * 200 + 100 * 200) * 4
    rb = gemm(100, 200, 300, dtype="fp32", gpu="A100", beta=1.0, batch=3)
    assert rb.bytes == 3 * (100 * 300 + 300 * 200 + 2 * 100 * 200) * 4
    assert rb.flops == 3 * r.flops


def test_latency_when_too_little_parallelism():
    """A GEMM too small to give every SM a thread block is latency-bound (guide, step 3)."""
    assert gemm(64, 64, 64, gpu="A100").limiter == "latency"
    # ceil(M/64) * ceil(N/64) just reaching the SM count is no longer latency-bound
    side = LATENCY_TILE * 11  # 11 x 11 = 121 blocks >= 108 SMs
    assert gemm(side, side, 8192, gpu="A100").limiter != "latency"
    # K deep enough for split-K gives the blocks that a small output lacks
    assert gemm(64, 64, 2**19, gpu="A100").limiter != "latency"


def test_kernel_overhead_is_added_to_the_work():
    """Every kernel pays a fixed cost on top of its work (not a floor it may hide under);
    when that cost is the largest part of the time, the time is set by 'latency'."""
    from dlperf_widgets.core.calibration import achievable, overlap_time

    r = gemm(704, 704, 64, gpu="A100")  # enough blocks, but well under a microsecond of work
    overhead = achievable("A100", "fp16").kernel_overhead_s
    assert r.kernel_overhead_s == overhead
    work = overlap_time(r.math_time_s, r.memory_time_s)
    assert r.predicted_time_s == pytest.approx(overhead + work)
    assert work < overhead and r.time_limiter == "latency"
    bigger = gemm(1408, 704, 64, gpu="A100")  # twice the work still costs more
    assert bigger.predicted_time_s > r.predicted_time_s


def test_split_k_fills_the_gpu_for_deep_k():
    """A weight-gradient-like GEMM (small output, huge K) is split along K to use every SM."""
    r = gemm(576, 64, 100352, gpu="A100")
    assert r.split_k > 1 and r.tiles >= 64
    plain = gemm_sweep(576, 64, 100352, gpu="A100", tile=r.tile)
    assert r.predicted_time_s <= float(plain.predicted_time_s)
    # every split leaves slices at least LATENCY_SPLIT_K_DEPTH deep
    from dlperf_widgets.core.assumptions import LATENCY_SPLIT_K_DEPTH

    assert 100352 // r.split_k >= LATENCY_SPLIT_K_DEPTH


def test_larger_tiles_win_on_large_gemms():
    """T13: for a large square GEMM the auto tile is the largest, 256x128."""
    assert gemm(8192, 8192, 8192, gpu="A100").tile == "256x128"


def test_misaligned_k_is_slower_and_found():
    """K = 4097 in FP16 is off the 8-element multiple: slower, with a 'pad k to 4104' finding."""
    aligned = gemm(4096, 4096, 4096, gpu="A100")
    odd = gemm(4096, 4096, 4097, gpu="A100")
    assert odd.predicted_time_s > 1.5 * aligned.predicted_time_s
    (finding,) = [f for f in odd.findings if f.parameter == "k" and f.severity == "warning"]
    assert finding.suggested_value == 4104 and "4104" in finding.fix
    assert finding.predicted_time_s_after < finding.predicted_time_s_before


def test_legacy_library_falls_back_to_cuda_cores():
    """cuBLAS < 11.0 runs a misaligned FP16 GEMM without Tensor Cores (an 'error' finding)."""
    r = gemm(4096, 4096, 4097, gpu="V100", library="legacy")
    assert any(f.severity == "error" and f.parameter == "k" for f in r.findings)
    cuda_fp16 = gpu("V100").peak_flops("fp16", unit="cuda")
    assert r.predicted_flops_per_s <= cuda_fp16 * 1.0000001


def test_predicted_time_is_overhead_plus_overlapped_work():
    """predicted = overhead + (math^p + memory^p)^(1/p); memory time = bytes at the
    achievable bandwidth (split-K partial sums added); the roofline time stays the guide's
    max(FLOPs / peak, bytes / bandwidth) at the datasheet figures."""
    from dlperf_widgets.core.assumptions import OVERLAP_EXPONENT as P

    r = gemm(8192, 8192, 8192, gpu="V100")
    assert r.split_k == 1
    assert r.memory_time_s == pytest.approx(r.bytes / (900e9 * r.memory_fraction))
    work = (r.math_time_s**P + r.memory_time_s**P) ** (1 / P)
    assert r.predicted_time_s == pytest.approx(r.kernel_overhead_s + work)
    assert r.roofline_time_s == pytest.approx(max(r.flops / 125.3376e12, r.bytes / 900e9))
    skinny = gemm(8192, 128, 8192, gpu="V100")
    extra = 2 * skinny.split_k * 8192 * 128 * 4 if skinny.split_k > 1 else 0
    assert skinny.memory_time_s == pytest.approx(
        (skinny.bytes + extra) / (900e9 * skinny.memory_fraction)
    )


def test_r11_wave_efficiency_on_toy_gpu():
    """R11: an 8-SM GPU running 12 one-per-SM blocks needs 2 waves at 75 % utilisation."""
    toy = custom_gpu(
        "eight-sm",
        architecture="ampere_ga100",
        sms=8,
        boost_clock_mhz=1410,
        memory_bandwidth_bytes_per_s=1e12,
    )
    r = gemm(256 * 3, 128 * 4, 8192, gpu=toy, tile="256x128")
    assert (r.tiles, r.waves) == (12, 2)
    assert r.wave_efficiency == pytest.approx(0.75)


def test_json_keys_of_gemm():
    """to_dict carries every key `dlperf gemm --json` promises."""
    d = gemm(8192, 128, 8192).to_dict()
    for key in (
        "m",
        "n",
        "k",
        "batch",
        "dtype",
        "gpu",
        "flops",
        "bytes",
        "arithmetic_intensity",
        "ops_per_byte",
        "limiter",
        "tile",
        "tiles",
        "waves",
        "tile_efficiency",
        "wave_efficiency",
        "predicted_time_s",
        "predicted_flops_per_s",
        "findings",
    ):
        assert key in d
    assert isinstance(d["tile"], str) and "x" in d["tile"]


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"m": -3}, r"'m' must be a positive integer \(got -3\)"),
        ({"n": 0}, r"'n' must be a positive integer \(got 0\)"),
        ({"k": 2.5}, r"'k' must be a positive integer \(got 2.5\)"),
        ({"k": "abc"}, r"'k' must be a positive integer \(got 'abc'\)"),
        ({"batch": True}, r"'batch' must be a positive integer"),
        ({"dtype": "fp12"}, r"'dtype' must be one of"),
        ({"tile": "256by128"}, r"'tile' must be 'auto' or HEIGHTxWIDTH"),
        ({"blocks_per_sm": 0}, r"'blocks_per_sm' must be a positive integer"),
        ({"beta": float("nan")}, r"'beta' must be a finite number"),
        ({"library": "old"}, r"'library' must be one of current, legacy \(got 'old'\)"),
        ({"m": np.array([1, 2])}, r"'m' must be a single integer here; use gemm_sweep"),
    ],
)
def test_bad_input_names_parameter_rule_and_value(kwargs, pattern):
    """Every argument of gemm() is validated at the entry with the kit's message template."""
    args = {"m": 64, "n": 64, "k": 64}
    args.update(kwargs)
    m, n, k = args.pop("m"), args.pop("n"), args.pop("k")
    with pytest.raises(InvalidParameter, match=pattern):
        gemm(m, n, k, **args)


def test_r19_small_sizes_matter_more():
    """R19: 520 vs 512 costs more, relatively, than 5128 vs 5120 (math-bound, FP16, A100).

    The guide states a tendency; for one particular N, wave quantization can hide it, so the
    throughput is averaged over N = 4096 ... 12288.
    """

    def eff(size):
        n = np.arange(4096, 12288 + 1, 256)
        return gemm_sweep(size, n, 8192, gpu="A100").predicted_flops_per_s.mean()

    small_loss = 1 - eff(520) / eff(512)
    large_loss = 1 - eff(5128) / eff(5120)
    assert small_loss > 2 * large_loss > 0
    findings = gemm(520, 8192, 8192, gpu="A100").findings
    assert any(f.parameter == "m" and "64" in f.fix for f in findings)
    assert not any(f.parameter == "m" for f in gemm(512, 8192, 8192, gpu="A100").findings)


# -- invariants (hypothesis) ----------------------------------------------------------

dims = st.integers(min_value=1, max_value=20000)
gpu_names = st.sampled_from(["V100", "T4", "A100", "A10", "L4", "H100", "B200"])


@settings(max_examples=200, deadline=None)
@given(m=dims, n=dims, k=dims, g=gpu_names, batch=st.integers(1, 8))
def test_invariants(m, n, k, g, batch):
    """Efficiencies in (0, 1]; waves = ceil(tiles / slots); attainable <= min(peak, AI x BW)."""
    r = gemm(m, n, k, gpu=g, batch=batch)
    for eff in (
        r.tile_efficiency,
        r.wave_efficiency,
        r.tile_shape_efficiency,
        r.alignment_efficiency,
    ):
        assert 0 < eff <= 1
    G = gpu(g)
    assert r.waves == math.ceil(r.tiles / G.sms)
    roof = min(G.peak_flops("fp16"), r.arithmetic_intensity * G.memory_bandwidth_bytes_per_s)
    assert r.predicted_flops_per_s <= roof * (1 + 1e-9)
    assert r.limiter in ("math", "memory", "latency")


@settings(max_examples=200, deadline=None)
@given(m=dims, n=dims, k=dims)
def test_intensity_symmetric_in_m_and_n(m, n, k):
    """Swapping M and N transposes the problem: same FLOPs, bytes and intensity."""
    assert arithmetic_intensity(m, n, k) == pytest.approx(arithmetic_intensity(n, m, k))
    assert gemm_bytes(m, n, k, 2) == gemm_bytes(n, m, k, 2)
    assert gemm_flops(m, n, k) == gemm_flops(n, m, k)


@settings(max_examples=30, deadline=None)
@given(
    shapes=st.lists(st.tuples(dims, dims, dims), min_size=1, max_size=20),
    g=gpu_names,
    dt=st.sampled_from(["fp16", "fp32", "int8"]),
)
def test_vectorised_equals_scalar(shapes, g, dt):
    """gemm_sweep on arrays gives, element by element, what gemm gives for each shape."""
    if not gpu(g).supports(dt):
        return
    m, n, k = (np.array(c) for c in zip(*shapes, strict=True))
    s = gemm_sweep(m, n, k, gpu=g, dtype=dt)
    for i, (mi, ni, ki) in enumerate(shapes):
        r = gemm(mi, ni, ki, gpu=g, dtype=dt)
        assert s.predicted_time_s[i] == pytest.approx(r.predicted_time_s, rel=1e-12)
        assert s.tile[i] == r.tile and s.limiter[i] == r.limiter and s.waves[i] == r.waves


def test_sweep_broadcasts_and_rejects_bad_shapes():
    """A scalar broadcasts against an array; incompatible shapes are a clear error."""
    s = gemm_sweep(np.arange(4000, 4201), 4096, 4096)
    assert len(s) == 201
    with pytest.raises(InvalidParameter, match="broadcast"):
        gemm_sweep(np.arange(1, 4), np.arange(1, 5), 8)
    with pytest.raises(InvalidParameter, match=r"'k' must be a positive integer \(got 0\)"):
        gemm_sweep(8, 8, np.array([8, 0]))


def test_time_limiter_can_differ_from_the_guides_limiter():
    """Below the ridge (memory by the guide) quantized math can still set the predicted time."""
    r = gemm(8192, 128, 8192, gpu="A100")
    assert r.limiter == "memory"
    expected = "math" if r.math_time_s >= r.memory_time_s else "memory"
    assert r.time_limiter == expected
    assert gemm(64, 64, 64).time_limiter == "latency"
    assert gemm(8192, 8192, 8192, gpu="V100").time_limiter == "math"


def test_attainable_is_the_roofline():
    """min(peak, AI x bandwidth): bends at ops:byte; V100 at AI 124.1 reaches 111.7 TFLOP/s."""
    from dlperf_widgets.core.gemm import attainable_flops_per_s

    v100 = gpu("V100")
    assert attainable_flops_per_s(124.1, "V100") == pytest.approx(124.1 * 900e9)
    assert attainable_flops_per_s(1e4, "V100") == v100.peak_flops("fp16")
    ridge = v100.ops_per_byte("fp16")
    both = attainable_flops_per_s(np.array([ridge / 2, ridge * 2]), "V100")
    assert both.tolist() == pytest.approx([v100.peak_flops("fp16") / 2, v100.peak_flops("fp16")])
    with pytest.raises(InvalidParameter, match="'ai' must be positive"):
        attainable_flops_per_s(-1.0, "V100")


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 4096), n=st.integers(1, 4096), k=st.integers(1, 2**17), g=gpu_names)
def test_auto_tile_is_never_slower_than_a_forced_tile(m, n, k, g):
    """'auto' searches every tile shape and split-K factor: no forced tile beats it."""
    from dlperf_widgets.core.tiles import TILE_SHAPES

    best = gemm(m, n, k, gpu=g).predicted_time_s
    for tm, tn in TILE_SHAPES:
        forced = gemm(m, n, k, gpu=g, tile=f"{tm}x{tn}").predicted_time_s
        assert best <= forced * (1 + 1e-12)


def test_split_k_on_a_square_output_with_deep_k():
    """1024 x 1024 x 65536 on A100: 256x128 with split-K beats 64x64 without (found by a reader)."""
    auto = gemm(1024, 1024, 65536, gpu="A100")
    forced = gemm(1024, 1024, 65536, gpu="A100", tile="256x128")
    assert auto.predicted_time_s <= forced.predicted_time_s
    assert auto.split_k > 1


def test_matrix_vector_shapes_are_not_penalised_as_misaligned():
    """N = 1 (a batch-1 linear layer) is a matrix-vector product: memory sets its time."""
    for k in (4095, 4096):
        r = gemm(4096, 1, k, gpu="A100")
        assert r.alignment_efficiency == 1.0
        assert r.time_limiter == "memory" and r.limiter == "memory"
    # N = 9 is past the multiple: a matrix with a misaligned N (the milder, M/N penalty)
    assert gemm(4096, 9, 4096, gpu="A100").alignment_efficiency == 0.95
    assert gemm(4096, 16, 4095, gpu="A100").alignment_efficiency == 0.5  # K misaligned


def test_misaligned_k_costs_more_than_misaligned_n():
    """NVIDIA measured the weight gradient (K = batch) suffering most from an odd batch, and
    DeepBench's V100 GEMMs with N = 9124 ran at full speed: the model's penalty depends on
    which dimension is off the 16-byte multiple."""
    base = gemm(4096, 4096, 4096, gpu="V100").predicted_time_s
    k_off = gemm(4096, 4096, 4095, gpu="V100").predicted_time_s
    n_off = gemm(4096, 4095, 4096, gpu="V100").predicted_time_s
    assert k_off > 1.8 * base
    assert base < n_off < 1.1 * base
