"""Guards live/timing.py: the timing discipline (warm-up count, repeats, median, labelled
device), real CPU measurements of GEMMs and layers, TF32 flag handling, clear errors."""

from __future__ import annotations

import statistics
import sys

import pytest

from dlperf_widgets.core.errors import DlperfError, InvalidParameter, MissingDependency
from dlperf_widgets.live import timing
from dlperf_widgets.live.timing import time_callable, time_gemm, time_layer

torch = pytest.importorskip("torch")

FAST = {"device": "cpu", "repeats": 3, "warmup": 1, "flush_l2": False}


def _has_cuda() -> bool:
    return bool(torch.cuda.is_available())


def test_warmup_and_repeats_are_counted_and_median_reported():
    """fn runs exactly warmup + repeats times; only the repeats are timed; the figure is
    their median (statistics.median of the stored times)."""
    calls = []

    def fn():
        calls.append(1)
        sum(range(2000))

    r = time_callable(fn, device="cpu", repeats=7, warmup=4, flush_l2=False)
    assert len(calls) == 11
    assert r.repeats == 7 and r.warmup == 4 and len(r.times_s) == 7
    assert r.measured_time_s == statistics.median(r.times_s)
    assert all(t > 0 for t in r.times_s)
    assert r.device == "cpu" and r.device_kind == "cpu"


def test_timer_sees_a_known_sleep():
    """A 20 ms sleep measures 20 ms or a little more (perf_counter around the call)."""
    import time

    r = time_callable(lambda: time.sleep(0.02), device="cpu", repeats=3, warmup=0, flush_l2=False)
    assert 0.019 <= r.measured_time_s < 0.2


def test_cache_flush_happens_outside_the_timed_window(monkeypatch):
    """With flush_l2 the flush buffer is rewritten before every repeat, never inside one."""
    events = []
    real_measure = timing._timed_runs

    def spy(torch_, info, step, *, repeats, warmup, flush, max_seconds=None):
        class Flush:
            def zero_(self):
                events.append("flush")

        def wrapped():
            events.append("step")
            return step()

        return real_measure(torch_, info, wrapped, repeats=repeats, warmup=warmup, flush=Flush())

    monkeypatch.setattr(timing, "_timed_runs", spy)
    time_callable(lambda: None, device="cpu", repeats=3, warmup=2, flush_l2=True)
    assert events == ["step", "step", "flush", "step", "flush", "step", "flush", "step"]


def test_cpu_gemm_is_labelled_and_counts_flops():
    """A CPU GEMM is labelled 'cpu', has no prediction, and FLOPs = 2*M*N*K*batch, bytes =
    (MK + KN + MN) * element size, FLOP/s = FLOPs / median."""
    r = time_gemm(96, 64, 32, dtype="fp32", batch=3, **FAST)
    assert r.device == "cpu" and r.device_kind == "cpu"
    assert r.predicted_time_s is None and r.model_error is None and r.model is None
    assert r.flops == 2 * 96 * 64 * 32 * 3
    assert r.bytes == (96 * 32 + 32 * 64 + 96 * 64) * 4 * 3
    assert r.measured_flops_per_s == pytest.approx(r.flops / r.measured_time_s)
    assert "CPU measurement" in r.note
    d = r.to_dict()
    for key in ("device", "measured_time_s", "measured_flops_per_s", "predicted_time_s", "repeats"):
        assert key in d
    assert "model" not in d


@pytest.mark.parametrize("dt", ["fp64", "fp32", "fp16", "bf16", "tf32"])
def test_cpu_gemm_runs_in_every_timed_dtype(dt):
    """Every dtype the timer accepts runs on the CPU; tf32 is run as fp32 and says so."""
    r = time_gemm(32, 32, 32, dtype=dt, **FAST)
    assert r.dtype == dt and r.measured_time_s > 0
    if dt == "tf32":
        assert "plain fp32" in r.note


def test_gemm_result_matches_torch():
    """The timed op is a real matmul: the timer's inputs are random normal (not zero), and a
    matmul on the same seed gives the same non-zero product the timer computed."""
    seen = {}
    real = timing._measure

    def spy(torch_, info, build, **kw):
        def wrapped():
            step, extras = build()
            seen["out"] = step()
            return step, extras

        return real(torch_, info, wrapped, **kw)

    timing_mp = pytest.MonkeyPatch()
    timing_mp.setattr(timing, "_measure", spy)
    try:
        time_gemm(16, 8, 4, dtype="fp32", **FAST)
    finally:
        timing_mp.undo()
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(16, 4, generator=gen)
    b = torch.randn(4, 8, generator=gen)
    assert torch.count_nonzero(a) == a.numel()
    assert torch.allclose(seen["out"], a @ b)


def test_tf32_flags_restored(monkeypatch):
    """A tf32 measurement switches the matmul precision to 'high' and cuDNN TF32 on, and
    restores both afterwards (exercised through the CUDA branch of the context manager)."""
    before = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
    with timing._matmul_precision(torch, "tf32", "cuda"):
        assert torch.get_float32_matmul_precision() == "high"
        assert torch.backends.cudnn.allow_tf32 is True
    assert (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32) == before
    with timing._matmul_precision(torch, "fp32", "cuda"):
        assert torch.get_float32_matmul_precision() == "highest"
        assert torch.backends.cudnn.allow_tf32 is False
    assert (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32) == before


def test_linear_flops_match_the_layer_guide():
    """Linear forward counts 2*batch*inputs*outputs FLOPs; backward twice that (activation
    and weight gradients), as NVIDIA's linear-layer guide maps them to GEMMs."""
    fwd = time_layer("linear", batch=32, inputs=48, outputs=64, dtype="fp32", **FAST)
    bwd = time_layer(
        "linear", batch=32, inputs=48, outputs=64, dtype="fp32", phase="backward", **FAST
    )
    assert fwd.flops == 2 * 32 * 48 * 64
    assert bwd.flops == 2 * fwd.flops
    assert fwd.device == "cpu" and fwd.predicted_time_s is None
    assert fwd.shapes["output"] == (32, 64)


def test_conv2d_layouts_and_implicit_gemm_flops():
    """Conv2d in NCHW and NHWC counts 2 * N*P*Q * K * C*R*S FLOPs (implicit GEMM)."""
    opts = dict(
        batch=2, in_channels=8, out_channels=16, height=12, width=12, kernel_size=3, padding=1
    )
    for layout in ("nchw", "nhwc"):
        r = time_layer("conv2d", layout=layout, dtype="fp32", **opts, **FAST)
        assert r.flops == 2 * (2 * 12 * 12) * 16 * (8 * 3 * 3)
        assert r.options["layout"] == layout


def test_memory_layers_bytes():
    """ReLU moves its input and output once (2 x elements x size); batch norm is timed in
    training mode and counts input, output and the per-channel scale and shift."""
    relu = time_layer("relu", elements=1000, dtype="fp16", **FAST)
    assert relu.bytes == 2 * 1000 * 2 and relu.measured_flops_per_s is None
    bn = time_layer("batchnorm", shape="2,4,8,8", dtype="fp32", **FAST)
    assert bn.bytes == (2 * 2 * 4 * 8 * 8 + 2 * 4) * 4


def test_attention_flops():
    """Attention counts the QKV projection, Q K^T, P V and the output projection:
    2*T*h*3h + 4*b*S^2*h + 2*T*h*h with T = b*S tokens."""
    b, s, h, heads = 2, 16, 32, 4
    r = time_layer("attention", batch=b, seq_len=s, hidden=h, heads=heads, dtype="fp32", **FAST)
    t = b * s
    assert r.flops == 2 * t * h * 3 * h + 4 * b * s * s * h + 2 * t * h * h


def test_bad_input_gives_one_sentence():
    """Bad sizes, dtypes, kinds and options are InvalidParameter with the kit's template."""
    with pytest.raises(InvalidParameter, match=r"'m' must be a positive integer \(got -3\)"):
        time_gemm(-3, 8, 8, device="cpu")
    with pytest.raises(InvalidParameter, match=r"'dtype' must be a type the timer runs"):
        time_gemm(8, 8, 8, dtype="int8", device="cpu")
    with pytest.raises(InvalidParameter, match=r"'repeats' must be a positive integer \(got 0\)"):
        time_gemm(8, 8, 8, device="cpu", repeats=0)
    with pytest.raises(InvalidParameter, match=r"'kind' must be one of"):
        time_layer("lstm", device="cpu")
    with pytest.raises(InvalidParameter, match=r"'training' is not an option of time_layer"):
        time_layer("linear", training=False, device="cpu")
    with pytest.raises(InvalidParameter, match=r"'heads' must divide hidden"):
        time_layer("attention", batch=1, seq_len=4, hidden=30, heads=4, device="cpu")


def test_missing_cuda_is_one_sentence():
    """device='cuda' on a machine without CUDA is one InvalidParameter naming the device."""
    if _has_cuda():
        pytest.skip("this machine has CUDA")
    with pytest.raises(InvalidParameter, match=r"'device' must be 'auto' or 'cpu'"):
        time_gemm(8, 8, 8, device="cuda")


def test_too_large_is_refused_before_allocating():
    """A GEMM larger than the free memory is refused with the sizes, before allocation."""
    with pytest.raises(DlperfError, match=r"needs about .* GiB of memory"):
        time_gemm(2_000_000, 2_000_000, 2_000_000, dtype="fp32", device="cpu")


def test_out_of_memory_during_allocation_is_one_message(monkeypatch):
    """An allocation failure becomes one DlperfError after the tensors are released."""
    released = []
    monkeypatch.setattr(timing, "_release", lambda t, i: released.append(True))

    def boom(*args, **kwargs):
        raise RuntimeError(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes"
        )

    monkeypatch.setattr(timing, "_random", boom)
    with pytest.raises(DlperfError, match=r"ran out of memory on cpu"):
        time_gemm(8, 8, 8, dtype="fp32", **FAST)
    assert released == [True]


def test_missing_torch_says_install_live_extra(monkeypatch):
    """Without torch, timing raises MissingDependency saying what to install: torch from the
    package index, or the live extra from a clone (the kit itself is not on the index)."""
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependency, match=r"pip install torch .*pip install -e '\.\[live\]'"):
        time_gemm(8, 8, 8)


def test_result_renders():
    """The result prints as a table and as HTML, with the device and the median."""
    r = time_gemm(16, 16, 16, dtype="fp32", **FAST)
    text = str(r)
    assert "on cpu" in text and "median" in text
    assert "<table" in r._repr_html_()


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA GPU")
def test_gpu_gemm_beside_the_model():
    """On a GPU, a 4096^3 fp16 GEMM is timed with CUDA events, named after the board, and
    lands within a factor of two of the model's prediction."""
    r = time_gemm(4096, 4096, 4096, dtype="fp16", device="cuda", repeats=10, warmup=3)
    assert r.device == torch.cuda.get_device_name() and r.device_kind == "cuda"
    if r.predicted_time_s is not None:
        assert 0.5 < r.measured_time_s / r.predicted_time_s < 2.0


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA GPU")
def test_gpu_tf32_faster_than_fp32_and_flags_restored():
    """On Ampere or newer, TF32 runs a large fp32 GEMM faster than strict fp32, and the
    global precision flags are as before afterwards."""
    if torch.cuda.get_device_capability()[0] < 8:
        pytest.skip("TF32 needs Ampere or newer")
    before = torch.get_float32_matmul_precision()
    tf32 = time_gemm(4096, 4096, 4096, dtype="tf32", device="cuda", repeats=5, warmup=2)
    fp32 = time_gemm(4096, 4096, 4096, dtype="fp32", device="cuda", repeats=5, warmup=2)
    assert tf32.measured_time_s < fp32.measured_time_s
    assert torch.get_float32_matmul_precision() == before


def test_wildly_spread_repeats_get_a_busy_machine_note():
    """A slowest run 3x the fastest says the machine may be busy; steady runs say nothing."""
    from dlperf_widgets.live.timing import _with_spread_note

    assert "machine may be busy" in _with_spread_note("CPU measurement", [1.0, 1.1, 4.0])
    assert _with_spread_note("CPU measurement", [1.0, 1.1, 1.2]) == "CPU measurement"
    assert _with_spread_note("", [1.0, 5.0]).startswith("runs spread 5.0x")
