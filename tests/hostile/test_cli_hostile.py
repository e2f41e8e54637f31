"""Hostile input to the ``dlperf`` command: exit 2 with one line (or JSON), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dlperf_widgets.cli import main

ROOT = Path(__file__).resolve().parents[2]
BIG = "9" * 5000

CASES = [
    ["gemm", "1e30", "64", "64"],
    ["gemm", str(2**63), "64", "64"],
    ["gemm", "1" + "0" * 100, "64", "64"],
    ["gemm", "64", "64", "64", "--batch", "1e30"],
    ["gemm", "64", "64", "64", "--beta", "nan"],
    ["gemm", "268435456", "268435456", "268435456"],
    ["layer", "conv2d", "--kernel-size", BIG],
    ["layer", "relu", "--shape", f"2,{BIG}"],
    ["layer", "relu", "--shape", "2,3", "--elements", "100"],
    ["memory", "--params", "7B", "--layers", "-1"],
    [
        "memory",
        "--params",
        "7B",
        "--layers",
        "1e30",
        "--hidden",
        "64",
        "--seq-len",
        "8",
        "--batch",
        "1",
        "--heads",
        "4",
    ],
    ["gemm", "64", "64", "64", "--gpu", "x" * 100_000],
    ["gemm", "64", "64", "64", "--unknown", "y" * 100_000],
]


@pytest.mark.parametrize("argv", CASES, ids=range(len(CASES)))
def test_bad_input_exits_2_with_one_short_line(argv, capsys):
    """These raised OverflowError/ValueError tracebacks (exit 1) or echoed a 1 MB input."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and len(err) < 400 and "Traceback" not in err


@pytest.mark.parametrize("argv", CASES, ids=range(len(CASES)))
def test_errors_under_json_are_json_on_stdout(argv, capsys):
    """Under --json a script gets {"error", "parameter"} on stdout and exit 2, not plain text."""
    assert main([*argv, "--json"]) == 2
    out, err = capsys.readouterr()
    payload = json.loads(out)
    assert set(payload) == {"error", "parameter"}
    assert isinstance(payload["error"], str) and len(payload["error"]) < 400
    assert err == ""


def test_json_error_names_the_parameter(capsys):
    """The parameter is the one the message names (--layers -1 once named 'hidden')."""
    assert main(["memory", "--params", "7B", "--layers", "-1", "--json"]) == 2
    payload = json.loads(capsys.readouterr().out)
    assert payload["parameter"] == "layers"
    assert main(["gemm", "64", "64", "64", "--gpu", "nope", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["parameter"] == "gpu"


def _run(shell_tail: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = f"{sys.executable} -m dlperf_widgets gpus {shell_tail}"
    return subprocess.run(
        ["bash", "-c", cmd], capture_output=True, text=True, env=env, timeout=60, cwd=ROOT
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_full_stdout_is_one_line_not_a_traceback():
    """`dlperf gpus > /dev/full` ended in a traceback."""
    done = _run("> /dev/full")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_closed_stdout_is_one_line_not_a_traceback():
    """`dlperf gpus >&-` ended in a traceback."""
    done = _run(">&-")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "closed" in done.stderr
