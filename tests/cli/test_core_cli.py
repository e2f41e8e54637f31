"""Guards the `dlperf gpus|gpu|gemm` commands: reference numbers, JSON keys, exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dlperf_widgets.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_gpus_lists_every_gpu(capsys):
    """`dlperf gpus` prints one aligned row per GPU and a JSON list with --json."""
    code, out, _ = run(capsys, "gpus")
    assert code == 0 and "H100-SXM" in out and "TFLOP/s" in out
    code, out, _ = run(capsys, "gpus", "--json")
    data = json.loads(out)
    assert code == 0 and len(data) >= 16 and {"name", "sms", "ops_per_byte"} <= set(data[0])


def test_gpu_json_r01_r04(capsys):
    """`dlperf gpu V100 --json`: ops:byte 138.9 (R01); A100: 156 / 312 TFLOPS (R04)."""
    code, out, _ = run(capsys, "gpu", "V100", "--json")
    v100 = json.loads(out)
    assert code == 0 and v100["ops_per_byte"]["fp16"] == pytest.approx(138.9, rel=0.01)
    for key in (
        "name",
        "architecture",
        "sms",
        "boost_clock_mhz",
        "l2_bytes",
        "memory_bytes",
        "memory_bandwidth_bytes_per_s",
        "peak_flops_per_s",
        "peak_sparse_flops_per_s",
    ):
        assert key in v100
    _, out, _ = run(capsys, "gpu", "a100", "--json")
    a100 = json.loads(out)
    assert a100["peak_flops_per_s"]["tf32"] == pytest.approx(156e12, rel=0.01)
    assert a100["peak_flops_per_s"]["fp16"] == pytest.approx(312e12, rel=0.01)


@pytest.mark.parametrize(
    ("shape", "ai", "limiter"),
    [
        (("8192", "128", "8192"), 124.1, "memory"),  # R02
        (("8192", "8192", "8192"), 2730.7, "math"),  # R03
        (("4096", "512", "1024"), 315.1, "math"),  # R06
        (("4096", "1", "1024"), 1.0, "memory"),
    ],  # R07
)
def test_gemm_reference_rows(capsys, shape, ai, limiter):
    """R02, R03, R06, R07 through the CLI: intensity and limiter on V100 in FP16."""
    code, out, _ = run(capsys, "gemm", *shape, "--gpu", "V100", "--dtype", "fp16", "--json")
    d = json.loads(out)
    assert code == 0
    assert round(d["arithmetic_intensity"], 1) == ai and d["limiter"] == limiter
    assert d["ops_per_byte"] == pytest.approx(138.9, rel=0.01)


def test_gemm_r11_r12_waves(capsys):
    """R12 through the CLI: A100, 256x128 tiles, 109 tiles take 2 waves at ~50 %."""
    _, out, _ = run(capsys, "gemm", str(256 * 109), "128", "4096", "--tile", "256x128", "--json")
    d = json.loads(out)
    assert (d["tiles"], d["waves"]) == (109, 2)
    assert d["wave_efficiency"] == pytest.approx(109 / 216)


def test_gemm_findings_in_json(capsys):
    """A vocabulary projection of 33708 rows gets a 'pad to 33712' finding."""
    _, out, _ = run(capsys, "gemm", "33708", "5120", "1024", "--json")
    findings = json.loads(out)["findings"]
    assert any(f["fix"] == "pad m from 33708 to 33712" for f in findings)
    assert {"severity", "parameter", "message", "fix"} <= set(findings[0])


def test_human_output_is_a_table(capsys):
    """Without --json the result is an aligned table with units."""
    code, out, _ = run(capsys, "gemm", "8192", "128", "8192", "--gpu", "V100")
    assert code == 0 and "arithmetic intensity" in out and "FLOP/B" in out and "us" in out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["gemm", "8192", "abc", "8192"], "'n' must be an integer (got 'abc')"),
        (["gemm", "-3", "8", "8"], "'m' must be a positive integer (got -3)"),
        (["gemm", "8", "8"], "required: k"),
        (["gemm", "8", "8", "8", "--gpu", "H10"], "closest: H100-SXM"),
        (["gemm", "8", "8", "8", "--dtype", "fp12"], "'dtype' must be one of"),
        (["gemm", "8", "8", "8", "--tile", "big"], "'tile' must be 'auto' or HEIGHTxWIDTH"),
        (["gemm", "8", "8", "8", "--beta", "x"], "'beta' must be a number (got 'x')"),
        (["gemm", "8", "8", "8", "--library", "old"], "invalid choice: 'old'"),
        (["gpu"], "required: name"),
        (["gpu", "nope"], "'gpu' must be a known GPU (got 'nope')"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "a command is required"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, fragment):
    """Bad input: exit status 2, one line on stderr naming the argument, no traceback."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err


def test_console_script_and_module_entry_point():
    """`python -m dlperf_widgets` behaves like `dlperf` (exit codes included)."""
    ok = subprocess.run(
        [sys.executable, "-m", "dlperf_widgets", "gemm", "64", "64", "64", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["limiter"] == "latency"
    bad = subprocess.run(
        [sys.executable, "-m", "dlperf_widgets", "gemm", "0", "1", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_help_exits_zero(capsys):
    """--help prints usage and exits 0."""
    code, out, _ = run(capsys, "gemm", "--help")
    assert code == 0 and "--blocks-per-sm" in out
