"""Guards live/magic.py: `%%dlperf_time` runs the cell in the notebook's namespace warm-up +
repeats times, shows the median, and turns bad options or cells into one red line."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
IPython = pytest.importorskip("IPython")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

from dlperf_widgets.live.magic import dlperf_time_cell, parse_options  # noqa: E402
from dlperf_widgets.live.timing import CallableTiming  # noqa: E402
from dlperf_widgets.magics import run_line  # noqa: E402


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    sh.extension_manager.load_extension("dlperf_widgets")
    return sh


def test_cell_magic_is_registered_and_runs_in_user_namespace(shell):
    """After %load_ext the cell magic exists; the cell sees and changes the user's
    variables, and runs exactly warmup + repeats times."""
    assert "dlperf_time" in shell.magics_manager.magics["cell"]
    shell.user_ns["calls"] = []
    shell.user_ns["x"] = 21
    result = shell.run_cell_magic(
        "dlperf_time", "--repeats 4 --warmup 2 --device cpu --no-flush", "calls.append(x * 2)"
    )
    assert shell.user_ns["calls"] == [42] * 6
    assert isinstance(result, CallableTiming)
    assert result.repeats == 4 and result.warmup == 2 and len(result.times_s) == 4
    assert result.device == "cpu" and result.label == "cell"
    assert "<table" in result._repr_html_()


def test_flops_option_gives_a_rate(shell):
    """--flops turns the median into FLOP/s: a torch matmul in the cell, 2*M*N*K FLOPs."""
    shell.run_cell("import torch\na = torch.randn(64, 64)\nb = torch.randn(64, 64)")
    r = shell.run_cell_magic(
        "dlperf_time", f"--repeats 3 --warmup 1 --device cpu --flops {2 * 64**3}", "c = a @ b"
    )
    assert r.measured_flops_per_s == pytest.approx(2 * 64**3 / r.measured_time_s)
    assert tuple(shell.user_ns["c"].shape) == (64, 64)


def test_bad_options_and_cells_are_one_line():
    """Unknown options, bad numbers, empty cells and syntax errors are one error line."""
    for line, cell, text in [
        ("--repeat 3", "pass", "unrecognized arguments"),
        ("--repeats x", "pass", "'repeats' must be an integer"),
        ("--device tpu", "pass", "invalid choice"),
        ("", "   ", "'cell' must hold the code"),
        ("", "x = (", "not valid Python"),
        ("--repeats 0 --device cpu", "pass", "'repeats' must be a positive integer"),
    ]:
        out = dlperf_time_cell(line, cell)
        assert text in repr(out), (line, cell, repr(out))
        assert "dlperf-error" in out._repr_html_()


def test_parse_options_defaults():
    """Without options: device auto, the device's default counts, flush on, label 'cell'."""
    opts = parse_options("")
    assert opts.device == "auto" and opts.repeats is None and opts.warmup is None
    assert not opts.no_flush and opts.label == "cell"


def test_line_magic_runs_dlperf_time():
    """`%dlperf time gemm ... --json` gives the CLI's JSON keys inside a notebook."""
    out = run_line("time gemm 32 32 32 --dtype fp32 --device cpu --repeats 2 --warmup 0 --json")
    data = json.loads(repr(out))
    assert data["device"] == "cpu" and data["repeats"] == 2 and data["predicted_time_s"] is None
