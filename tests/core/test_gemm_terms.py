"""Guards the GEMM model's physical terms: L2, FP8 quantisation, power-limited clocks, SIMT."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core import InvalidParameter, gemm, gemm_sweep, gpu
from dlperf_widgets.core.assumptions import L2_USABLE_FRACTION, QUANT_SCHEMES
from dlperf_widgets.core.calibration import achievable, sustained_clock_fraction
from dlperf_widgets.core.gemm import activation_quant_bytes


def test_l2_figures_are_the_published_ones():
    """A100: 40 MB L2 read at 5120 bytes per clock (A100 whitepaper) x 1410 MHz = 7.22 TB/s;
    V100: 6 MB at 2048 bytes per clock x 1530 MHz; the L2 is faster than DRAM on every GPU."""
    a100 = gpu("A100")
    assert a100.l2_bytes == 40 * 2**20
    assert a100.l2_bandwidth_bytes_per_s == pytest.approx(5120 * 1410e6, rel=1e-3)
    assert gpu("V100").l2_bandwidth_bytes_per_s == pytest.approx(2048 * 1530e6, rel=1e-3)
    for g in ("V100", "T4", "A100", "L4", "L40S", "H100", "H200", "B200"):
        assert gpu(g).l2_bandwidth_bytes_per_s > gpu(g).memory_bandwidth_bytes_per_s


def test_warm_working_set_that_fits_in_l2_moves_at_l2_bandwidth():
    """A memory-bound GEMM whose A, B and C fit in the usable L2 reads them at the L2 rate
    when warm (its memory time shrinks by DRAM / L2 bandwidth) and at the DRAM rate when
    cold; one too large for L2 is the same either way."""
    g = gpu("A100")
    m, n, k = 1024, 16, 1024  # about 2.1 MB in fp16
    cold = gemm(m, n, k, dtype="fp16", gpu=g, cache="cold")
    warm = gemm(m, n, k, dtype="fp16", gpu=g, cache="warm")
    assert cold.bytes <= L2_USABLE_FRACTION * g.l2_bytes
    assert warm.l2_resident and not cold.l2_resident
    ratio = g.memory_bandwidth_bytes_per_s / g.l2_bandwidth_bytes_per_s
    assert warm.memory_time_s == pytest.approx(cold.memory_time_s * ratio)
    big = dict(m=65536, n=16, k=8192, dtype="fp16", gpu=g)
    assert not gemm(**big, cache="warm").l2_resident
    assert gemm(**big, cache="warm").predicted_time_s == gemm(**big).predicted_time_s


def test_quantisation_kernel_bytes():
    """The bytes of quantising a 4096 x 1024 bf16 activation to FP8: per-tensor reads it twice
    (the max, then the scaling) and writes it once: (2 + 2 + 1) x 4 Mi elements + one 4-byte
    scale; per-row reads once: 3 bytes an element + a scale per row; blocks of 128 along K:
    3 bytes + 8 scales per row."""
    e = 4096 * 1024
    assert activation_quant_bytes(4096, 1024, 1, "per-tensor") == 5 * e + 4
    assert activation_quant_bytes(4096, 1024, 1, "per-row") == 3 * e + 4 * 4096
    assert activation_quant_bytes(4096, 1024, 1, "block") == 3 * e + 4 * 4096 * 8
    assert activation_quant_bytes(4096, 1024, 1, "none") == 0


def test_fp8_layer_costs_its_quantisation_kernels():
    """An FP8 layer with per-tensor activation scaling takes the bare FP8 GEMM's time plus its
    quantisation kernels (bytes at the achievable bandwidth and their fixed costs); quantising
    a non-FP8 GEMM is refused with one sentence."""
    kw = dict(dtype="fp8_e4m3", gpu="H100", context="back-to-back")
    bare = gemm(1, 4096, 4096, **kw)
    layer = gemm(1, 4096, 4096, quantize="per-tensor", **kw)
    assert layer.quantize_time_s > 0
    assert layer.predicted_time_s == pytest.approx(bare.predicted_time_s + layer.quantize_time_s)
    assert QUANT_SCHEMES["per-tensor"][0] == 2  # a max reduction, then the scaling kernel
    with pytest.raises(InvalidParameter, match="'quantize' must be 'none' unless the dtype"):
        gemm(64, 64, 64, dtype="bf16", quantize="per-row")


def test_sustained_clock_from_power_limit_and_datasheet_clocks():
    """The clock a board holds stays between its datasheet base and boost clocks (T4: 585 and
    1590 MHz at 70 W); more power never lowers it; the 250 W A100 PCIe 40GB holds no more
    than the 400 W SXM4 of the same chip; power and clocks are the datasheets' figures."""
    t4 = gpu("T4")
    assert (t4.tdp_w, t4.base_clock_mhz, t4.boost_clock_mhz) == (70, 585, 1590)
    for w in (0.05, 0.5, 5.0):
        f = sustained_clock_fraction(w, t4.sms, t4.tdp_w, t4.base_clock_mhz, t4.boost_clock_mhz)
        assert 585 / 1590 - 1e-12 <= f <= 1.0
        more = sustained_clock_fraction(w, t4.sms, 2 * t4.tdp_w, 585, 1590)
        assert more >= f
    # the f^3 law: an eighth of the power at the boost clock gives half the clock
    boost_power = 40 * 0.1 * 1.59**3
    assert sustained_clock_fraction(0.1, 40, boost_power / 8, None, 1590) == pytest.approx(0.5)
    pcie, sxm = achievable("A100-PCIe-40GB", "fp32"), achievable("A100-SXM4-40GB", "fp32")
    assert gpu("A100-PCIe-40GB").tdp_w == 250 and gpu("A100-SXM4-40GB").tdp_w == 400
    assert pcie.clock_fraction <= sxm.clock_fraction <= 1.0


def test_ada_sgemm_does_not_reach_dual_issue_fp32():
    """Ada's datasheet FP32 peak counts two FP32 operations per lane per clock; SGEMM kernels
    reach at most about half of it (NeuSight's L4 never passes 0.43 of the peak): the model's
    math fraction for Ada FP32 is at most one half."""
    assert achievable("L4", "fp32").math_fraction <= 0.5
    assert achievable("L40S", "fp32").math_fraction <= 0.5


def test_batched_simt_gemm_runs_whole_k_tiles():
    """cuBLAS ran every profiled batched FP32 GEMM as whole-K tiles (grid z = batch): the model
    offers a batched SIMT GEMM neither split-K nor the matrix-vector kernel."""
    s = gemm_sweep(
        np.array([31, 33, 22]), np.array([18, 8, 51]), 870, batch=21, dtype="fp32", gpu="A100"
    )
    assert np.all(s.split_k == 1) and not any(t == "gemv" for t in s.tile)


def test_batched_simt_gemm_gets_the_tiles_the_library_offers_batched_calls():
    """Every batched FP32 call NeuSight profiled on the A100 PCIe boards and the L4 ran
    ampere_sgemm_128x128 (the shipped rows keep the kernel name), and none on the T4 ran a
    128x128 kernel: the model gives a batched SIMT GEMM the same tiles, while an unbatched
    GEMM of the same shape still picks among every SIMT tile."""
    from dlperf_widgets.live.traces import kernel_tile, load_trace

    for name in ("neusight_a100-pcie-40gb", "neusight_a100-pcie-80gb", "neusight_l4"):
        rows = [r for r in load_trace(name).rows if r["suite"] == "bmm"]
        assert rows and {kernel_tile(r["params"]) for r in rows} == {(128, 128)}
    t4_rows = [r for r in load_trace("neusight_t4").rows if r["suite"] == "bmm"]
    assert (128, 128) not in {kernel_tile(r["params"]) for r in t4_rows}
    m, n = np.array([31, 33, 22, 300]), np.array([18, 8, 51, 70])
    batched = gemm_sweep(m, n, 870, batch=21, dtype="fp32", gpu="A100-PCIe-40GB")
    assert set(batched.tile) == {"128x128"}
    alone = gemm_sweep(m, n, 870, dtype="fp32", gpu="A100-PCIe-40GB")
    assert set(alone.tile) != {"128x128"}
    t4 = gemm_sweep(m, n, 870, batch=21, dtype="fp32", gpu="T4")
    assert "128x128" not in set(t4.tile)
    # a tile asked for by name is honoured, batched or not
    assert gemm(31, 18, 870, batch=21, dtype="fp32", gpu="A100", tile="32x32").tile == "32x32"


def test_power_limited_board_runs_at_boost_for_a_burst_from_idle():
    """A power-limited board starts a kernel at the boost clock: over a window W it may draw
    P_boost = SMs x w x f_boost^3 for W x TDP / P_boost (the T4: 40 SMs, 70 W, 1590 MHz
    boost; recomputed here from the datasheet figures and the fitted constants). A kernel
    shorter than that runs at the boost clock, a long one gains only that burst; a board
    that is not power-limited (the 700 W H100 SXM) keeps its time unchanged."""
    from dlperf_widgets.core.calibration import _table, power_limited_math_time

    t4 = gpu("T4")
    a = achievable("T4", "fp32")
    table = _table()
    w = float(table[("turing", "*", "*")]["sm_watts_per_ghz3"])
    window = float(table[("default", "*", "*")]["power_window_ms"]) * 1e-3
    p_boost = t4.sms * w * (t4.boost_clock_mhz / 1000) ** 3
    assert p_boost > t4.tdp_w == 70
    assert a.burst_s == pytest.approx(window * 70 / p_boost)
    cf = a.clock_fraction
    assert cf < 1
    short = 0.5 * a.burst_s / cf  # sustained-clock time of a kernel that fits in the burst
    assert power_limited_math_time(short, cf, a.burst_s) == pytest.approx(short * cf)
    long = 1.0  # one second at the sustained clock: the burst saves burst x (1/cf - 1)
    assert power_limited_math_time(long, cf, a.burst_s) == pytest.approx(
        long - a.burst_s * (1 / cf - 1)
    )
    t = np.geomspace(1e-6, 1.0, 200)
    out = power_limited_math_time(t, cf, a.burst_s)
    assert np.all(out >= t * cf - 1e-15) and np.all(out <= t) and np.all(np.diff(out) > 0)
    h100 = achievable("H100-SXM", "fp32")
    assert h100.burst_s == 0 and power_limited_math_time(0.5, h100.clock_fraction, 0.0) == 0.5


def test_power_step_of_the_walk_is_what_the_power_limit_costs():
    """In the walk from the ideal to the prediction, a power-limited board's 'achievable' step
    runs at the boost clock and the 'power' step adds what the sustained clock costs after
    the burst: for a long FP32 GEMM on a T4 that is nearly the whole factor 1 / clock
    fraction; a kernel inside the burst pays nothing for it; an unlimited board has no such
    step. Every step adds time and the last is the prediction."""
    long = gemm(4096, 4096, 4096, dtype="fp32", gpu="T4")
    steps = {s.effect: s for s in long.steps()}
    assert long.clock_fraction < 1 and long.burst_s > 0
    before = steps["power"].time_s - steps["power"].added_time_s
    ideal_ratio = 1 / long.clock_fraction
    assert steps["power"].time_s / before == pytest.approx(ideal_ratio, rel=0.02)
    assert all(s.added_time_s >= -1e-18 for s in long.steps())
    assert long.steps()[-1].time_s == pytest.approx(long.predicted_time_s, rel=1e-12)
    short = gemm(256, 256, 256, dtype="fp32", gpu="T4")
    assert short.math_time_s < short.burst_s
    assert next(s for s in short.steps() if s.effect == "power").added_time_s == pytest.approx(0)
    assert "power" not in {s.effect for s in gemm(4096, 4096, 4096, gpu="A100").steps()}
