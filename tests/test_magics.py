"""%dlperf: every CLI command runs in a notebook and shows HTML; bad lines are one red line."""

from __future__ import annotations

import html
import json
import re

import pytest

from dlperf_widgets.commands import commands
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.magics import run_line

IPython = pytest.importorskip("IPython")

# One working line per command (the CLI's own words), and what its HTML must contain.
LINES = {
    "gpus": ("gpus", ["V100-SXM2-16GB", "A100-SXM4-80GB"]),
    "gpu": ("gpu V100", ["V100-SXM2-16GB", "80"]),
    "gemm": ("gemm 8192 128 8192 --gpu V100 --dtype fp16", ["124.1 FLOP/B", "memory"]),
    "layer": (
        "layer linear --inputs 1024 --outputs 4096 --batch 512 --gpu V100",
        ["linear", "V100-SXM2-16GB"],
    ),
    "model": ("model transformer --layers 2", ["transformer"]),
    "format": ("format fp16", ["fp16"]),
    "memory": ("memory --params 7e9", ["7,000,000,000"]),
    "time": ("time device", ["Device"]),
    "fp8": ("fp8 1 2 300 --recipe delayed --history 20", ["fp8_e4m3", "delayed"]),
    "blockformat": ("blockformat mxfp4", ["4.25"]),
    "mfu": ("mfu 60000 --params 7e9 --gpus 8 --gpu H100", ["MFU 31.8%"]),
    "pipeline": ("pipeline 4 8", ["1f1b", "0.2727"]),
    "collective": ("collective 1e9 8 --link NVLink4", ["3.931 ms"]),
    "step": ("step --gpus 16 --tensor-parallel 2 --global-batch 64", ["TP 2"]),
}
NEEDS_TORCH = {"time"}


def _html(obj) -> str:
    return obj._repr_html_()


@pytest.fixture(scope="module")
def shell():
    """An IPython shell with the extension loaded the way a notebook does it."""
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "dlperf_widgets")
    return sh


def test_load_ext_registers_the_magic(shell):
    """`%load_ext dlperf_widgets` makes %dlperf a line magic."""
    assert "dlperf" in shell.magics_manager.magics["line"]


@pytest.mark.parametrize("name", sorted(LINES))
def test_each_command_through_the_magic(shell, name):
    """Each command's line gives the command's result as an HTML table."""
    if name not in {c.name for c in commands()}:
        pytest.skip(f"no {name!r} command in this build")
    if name in NEEDS_TORCH:
        pytest.importorskip("torch")
    line, fragments = LINES[name]
    out = shell.run_line_magic("dlperf", line)
    text = _html(out)
    assert "dlperf-error" not in text
    for fragment in fragments:
        assert fragment in html.unescape(text), (line, fragment)


def test_gemm_magic_equals_the_core(shell):
    """%dlperf gemm shows the core's GemmResult itself (same numbers as gemm())."""
    from dlperf_widgets.core.gemm import gemm

    out = shell.run_line_magic("dlperf", "gemm 8192 8192 8192 --gpu V100")
    assert out.to_dict() == gemm(8192, 8192, 8192, gpu="V100").to_dict()


def test_json_option(shell):
    """--json shows the JSON of the result, keys = attribute names."""
    out = shell.run_line_magic("dlperf", "gpu A100 --json")
    data = json.loads(repr(out))
    assert data["name"] == gpu("A100").name
    assert data["sms"] == 108
    assert "<pre>" in _html(out)


def test_every_command_has_help_in_the_magic(shell):
    """`%dlperf CMD --help` prints usage for every discovered command, never a traceback."""
    for cmd in commands():
        out = shell.run_line_magic("dlperf", f"{cmd.name} --help")
        assert f"%dlperf {cmd.name}" in repr(out), cmd.name


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("nosuch", "invalid choice: 'nosuch'"),
        ("", "a command is required"),
        ("gemm 8192 128 abc", "'k' must be an integer (got 'abc')"),
        ("gemm -3 1 1", "'m' must be a positive integer (got -3)"),
        ("gpu V1000", "'gpu' must be a known GPU (got 'V1000')"),
        ("gemm 1 1 1 --dtype fp7", "'dtype' must be one of"),
        ("gemm 1 1 'unclosed", "could not split the line"),
    ],
)
def test_bad_lines_are_one_red_line(shell, line, fragment):
    """Bad input: a single element with class dlperf-error naming parameter and rule."""
    out = shell.run_line_magic("dlperf", line)
    text = _html(out)
    assert len(re.findall("dlperf-error", text)) == 1
    assert fragment in html.unescape(text)
    assert "Traceback" not in text
    assert repr(out).startswith("error: ")
    assert "\n" not in repr(out)


def test_run_line_without_ipython():
    """run_line is the magic's body: usable without a shell."""
    out = run_line("gemm 4096 4096 4096 --gpu A100")
    assert out.limiter == "math"
