"""Guards live/calibrate.py and `dlperf calibrate`: a real calibration of this machine's CPU
(fits, saves, is used by the model and says so, reports the error on held-out shapes),
the budget, removal, and the refusal of a device that is absent."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from dlperf_widgets import gemm
from dlperf_widgets.core.calibration import achievable, overlap_time
from dlperf_widgets.core.errors import DlperfError, InvalidParameter
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.core.local_calibration import calibration_path, local_status

torch = pytest.importorskip("torch")

from dlperf_widgets.live.calibrate import (  # noqa: E402
    calibrate,
    calibration_status,
    cpu_entry,
    reset_calibration,
    suite_shapes,
)


@pytest.fixture
def config(tmp_path, monkeypatch):
    """An empty configuration folder of this test's own."""
    monkeypatch.setenv("DLPERF_CONFIG_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """One real tiny-suite calibration of this machine's CPU, saved in a folder of its own."""
    folder = tmp_path_factory.mktemp("calibration")
    mp = pytest.MonkeyPatch()
    mp.setenv("DLPERF_CONFIG_DIR", str(folder))
    try:
        yield calibrate(device="cpu", suite="tiny", max_seconds=30), folder, mp
    finally:
        mp.undo()


def test_suites_cover_every_regime_and_hold_shapes_out():
    """Both suites, on both device kinds, time latency, memory, math and misaligned shapes,
    and keep at least one of each regime, and every misaligned one, out of the fit."""
    for kind in ("cpu", "cuda"):
        for suite in ("full", "tiny"):
            shapes = suite_shapes(kind, suite)
            regimes = {s[0] for s in shapes}
            assert regimes == {"latency", "memory", "math", "misaligned"}
            held = {s[0] for s in shapes if s[4] == "held-out"}
            assert held == regimes
            assert all(s[4] == "held-out" for s in shapes if s[0] == "misaligned")
            assert sum(s[4] == "fit" for s in shapes) >= 4


def test_cpu_entry_peak_is_threads_clock_and_vector_width():
    """The CPU entry's FP32 peak is threads x clock x FLOP per clock, the FP64 one half of it,
    and its bandwidth the one given (the stream copy's)."""
    g = cpu_entry(3, 5e9)
    p32 = next(p for p in g.peaks if p.dtype == "fp32")
    p64 = next(p for p in g.peaks if p.dtype == "fp64")
    assert p32.flops_per_s == pytest.approx(3 * p32.clock_mhz * 1e6 * 2 * p32.fma_per_clk_per_sm)
    assert p32.fma_per_clk_per_sm in (4, 8, 16, 32)
    assert p64.flops_per_s == pytest.approx(p32.flops_per_s / 2)
    assert g.memory_bandwidth_bytes_per_s == 5e9 and g.sms == 3
    assert g.name.startswith("CPU ") and "cpu" in g.aliases


def test_cpu_calibration_fits_saves_and_reports_held_out_error(cpu_run):
    """A real run on the CPU: every suite shape is timed, the fitted constants fit the fit
    shapes at least as well as the constants in force before, the held-out error is
    reported from the held-out shapes alone, and the file holds device, date, torch, timer
    and context."""
    r, folder, _ = cpu_run
    assert r.device_kind == "cpu" and r.model_gpu.startswith("CPU ")
    assert len(r.shapes) == len(suite_shapes("cpu", "tiny"))
    meas = np.array([s["measured_time_s"] for s in r.shapes])
    assert np.all(meas > 0)
    # a CPU entry's bandwidth is the stream copy; the memory fraction is searched from a
    # quarter to twice the copy's share (here 1)
    assert r.gpu.memory_bandwidth_bytes_per_s == r.stream_bandwidth_bytes_per_s
    assert 0.25 - 1e-9 <= r.memory_fraction <= 2.0 + 1e-9
    assert 0 < r.math_fraction <= 1.5 and 0 <= r.kernel_overhead_s <= 1e-2
    # predictions are overhead + overlap(math / f, memory) with the saved constants
    g = r.gpu
    fit = [s for s in r.shapes if s["role"] == "fit"]
    held = [s for s in r.shapes if s["role"] == "held-out"]
    errs = [s["error"] for s in held]
    assert r.held_out_median_error == pytest.approx(float(np.median(errs)))
    assert r.held_out_worst_error == pytest.approx(max(errs))
    log_after = np.mean([abs(np.log(s["predicted_time_s"] / s["measured_time_s"])) for s in fit])
    log_before = np.mean([abs(np.log(s["before_time_s"] / s["measured_time_s"])) for s in fit])
    assert log_after <= log_before + 1e-9
    data = json.loads((folder / "calibration.json").read_text())
    assert r.saved_to == str(folder / "calibration.json")
    for key in ("date", "torch", "timer", "context"):
        assert data[key]
    assert data["device"]["model_gpu"] == g.name
    assert data["held_out"]["median_error"] == pytest.approx(r.held_out_median_error)
    assert "held-out error (median / worst)" in str(r)


def test_model_uses_the_local_calibration_and_says_so(cpu_run):
    """After a saved run, the model finds the CPU entry by its alias in a fresh lookup,
    prices it with the fitted constants (the suite's predictions come back), and every
    result's calibration says 'local calibration of <device>, <date>'; its band is the
    widest, and says why."""
    r, _, _ = cpu_run
    assert gpu("cpu").name == r.model_gpu
    a = achievable("cpu", "fp32")
    assert a.math_fraction == pytest.approx(r.math_fraction)
    assert a.kernel_overhead_s == pytest.approx(r.kernel_overhead_s)
    assert a.basis == f"local calibration of {r.model_gpu}, {r.date}"
    s = r.shapes[-1]
    res = gemm(s["m"], s["n"], s["k"], dtype="fp32", gpu="cpu")
    assert res.calibration.startswith("local calibration of CPU ")
    assert res.predicted_time_s == pytest.approx(s["predicted_time_s"], rel=1e-9)
    assert "widest band" in res.band_basis and "local calibration" in res.band_basis
    assert "local calibration of" in local_status()


def test_local_calibration_of_a_database_gpu_replaces_its_constants(config):
    """A saved calibration naming a database GPU changes that GPU's constants, and only its:
    another GPU keeps the shipped ones. (The file is written as calibrate writes it.)"""
    from dlperf_widgets.core.local_calibration import FORMAT, save_local

    shipped = achievable("H100-SXM", "bf16")
    shipped_fp16 = achievable("H100-SXM", "fp16")
    save_local(
        {
            "format": FORMAT,
            "device": {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "model_gpu": "H100-SXM"},
            "entry": None,
            "date": "2026-01-01 00:00 UTC",
            "constants": {
                "bf16": {"math_fraction": 0.7, "memory_fraction": 0.8, "kernel_overhead_s": 3e-6}
            },
        }
    )
    local = achievable("H100-SXM", "bf16")
    assert (local.math_fraction, local.memory_fraction, local.kernel_overhead_s) == (0.7, 0.8, 3e-6)
    assert local.misaligned_efficiency == shipped.misaligned_efficiency
    fp16 = achievable("H100-SXM", "fp16")  # not measured: shipped math, local memory/overhead
    assert fp16.math_fraction == shipped_fp16.math_fraction
    assert "not measured in fp16" in fp16.basis
    assert achievable("A100", "fp16").basis in ("fitted", "default", "published")
    # the model's time follows: overhead + overlap(math / 0.7, memory / 0.8)
    r = gemm(8192, 8192, 8192, dtype="bf16", gpu="H100-SXM")
    assert r.kernel_overhead_s == 3e-6
    expected = 3e-6 + overlap_time(r.math_time_s, r.memory_time_s)
    assert r.predicted_time_s == pytest.approx(expected)
    assert reset_calibration().removed
    assert achievable("H100-SXM", "bf16") == shipped


def test_no_save_leaves_no_file_and_reset_removes_one(config):
    """--no-save fits and reports but writes nothing; reset removes a saved file and says
    so, and says so again (nothing to remove) the second time."""
    r = calibrate(device="cpu", suite="tiny", max_seconds=30, save=False)
    assert r.saved_to is None and not calibration_path().exists()
    assert "no local calibration" in calibration_status().status
    config.joinpath("calibration.json").write_text("{}")
    assert reset_calibration().removed
    assert not reset_calibration().removed


def test_cuda_is_refused_on_a_machine_without_one(config):
    """Asking for the GPU where PyTorch sees none is one clear sentence, before any work."""
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(
        InvalidParameter, match=r"^'device' must be 'auto' or 'cpu' on this machine"
    ):
        calibrate(device="cuda")


def test_budget_too_small_stops_with_a_clear_message(config):
    """A budget the suite cannot fit in stops the run with what to do, and saves nothing."""
    with pytest.raises(DlperfError, match=r"budget.*max_seconds"):
        calibrate(device="cpu", suite="tiny", max_seconds=1e-3)
    assert not calibration_path().exists()


def _cli(*args, env_dir):
    import os

    env = {**os.environ, "DLPERF_CONFIG_DIR": str(env_dir)}
    return subprocess.run(
        [sys.executable, "-m", "dlperf_widgets", "calibrate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_cli_json_run_and_refusals(tmp_path):
    """`dlperf calibrate --suite tiny --no-save --json` prints the result as JSON; a
    negative budget and (without CUDA) `--device cuda` exit 2 with one line, no traceback."""
    out = _cli("--suite", "tiny", "--no-save", "--json", "--max-seconds", "30", env_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["saved_to"] is None and data["device_kind"] in ("cpu", "cuda")
    assert {"held_out_median_error", "held_out_worst_error", "math_fraction"} <= set(data)
    bad = _cli("--max-seconds", "-5", env_dir=tmp_path)
    assert bad.returncode == 2 and "'max_seconds' must be a positive number" in bad.stderr
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    if not torch.cuda.is_available():
        cuda = _cli("--device", "cuda", env_dir=tmp_path)
        assert cuda.returncode == 2 and "no CUDA GPU" in cuda.stderr
    assert not (tmp_path / "calibration.json").exists()


def test_without_torch_the_message_says_what_to_install(tmp_path):
    """With torch unimportable, `dlperf calibrate` exits 2 saying which extra to install."""
    code = textwrap.dedent(
        """
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split('.')[0] == 'torch':
                    raise ImportError('blocked: ' + name)
        sys.meta_path.insert(0, Block())
        from dlperf_widgets.cli import main
        sys.exit(main(['calibrate', '--suite', 'tiny']))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "DLPERF_CONFIG_DIR": str(tmp_path)},
    )
    assert out.returncode == 2
    assert "'torch' is needed for dlperf calibrate" in out.stderr
    assert "pip install torch" in out.stderr


@pytest.mark.parametrize("gpu_name", ["H100-SXM", "A100", "V100", "T4"])
def test_suite_regimes_are_what_the_model_says_they_are(gpu_name):
    """Each GPU suite shape is in the regime it is meant to time: the model's time_limiter
    is 'latency', 'memory' or 'math' as labelled (misaligned shapes are math-bound), so the
    fit sees every constant at work."""
    expected = {"latency": "latency", "memory": "memory", "math": "math", "misaligned": "math"}
    for regime, m, n, k, _ in suite_shapes("cuda", "full"):
        assert gemm(m, n, k, dtype="fp16", gpu=gpu_name).time_limiter == expected[regime]


def test_fit_recovers_known_constants_on_a_gpu_suite():
    """Times made by the model's own form with chosen constants (math 0.62, memory 0.81 of
    the datasheet, 3.7 us per kernel) on the H100 suite give back those constants within
    the grids' steps, with no GPU: the fit is a search, not a formula that echoes its input."""
    from dlperf_widgets.live.calibrate import _datasheet_terms, _fit

    g = gpu("H100-SXM")
    shapes = list(suite_shapes("cuda", "full"))
    math_t, mem_t, kernels, _ = _datasheet_terms(g, "fp16", shapes)
    truth = 3.7e-6 * kernels + overlap_time(math_t / 0.62, mem_t / 0.81)
    f_math, f_mem, overhead = _fit(math_t, mem_t, kernels, truth, 0.9)
    assert f_math == pytest.approx(0.62, rel=0.03)
    assert f_mem == pytest.approx(0.81, rel=0.06)
    assert overhead == pytest.approx(3.7e-6, rel=0.06)


def test_cpu_entry_gets_no_gpu_alignment_findings():
    """The CPU has no CUDA or Tensor Cores: a GEMM priced on its entry carries none of the
    GPU's alignment findings (which would speak of them)."""
    from dlperf_widgets.core.gemm import gemm as model

    r = model(509, 512, 512, dtype="fp32", gpu=cpu_entry(2, 5e9))
    assert r.findings == ()
    assert model(509, 512, 512, dtype="fp32", gpu="A100").findings != ()
