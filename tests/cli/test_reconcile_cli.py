"""Guards `dlperf reconcile` (and `%dlperf reconcile`): the model's and the roofline's error
on the shipped traces, as a table and as JSON; bad trace names exit 2 with one line."""

from __future__ import annotations

import json

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.live.traces import model_error_report


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_reconcile_prints_every_trace_gpu_and_dtype(capsys):
    """The table has one line per trace, GPU and dtype, with median / p90 / worst errors."""
    code, out, err = run(capsys, "reconcile")
    assert code == 0 and not err
    for word in ("deepbench_v100", "xla_h100-sxm", "V100-SXM2-16GB", "H100-SXM", "bf16", "tf32"):
        assert word in out
    assert "model error (median / p90 / worst)" in out


def test_reconcile_json_keys_match_the_python_report(capsys):
    """--json carries the same figures as model_error_report(), under documented keys."""
    code, out, _ = run(capsys, "reconcile", "xla_h100-sxm", "--json")
    data = json.loads(out)
    assert code == 0 and data["traces"] == ["xla_h100-sxm"]
    keys = {
        "trace",
        "gpu",
        "dtype",
        "count",
        "model_median_error",
        "model_p90_error",
        "model_worst_error",
        "roofline_median_error",
        "roofline_p90_error",
        "roofline_worst_error",
        "median_measured_over_predicted",
    }
    assert {g["dtype"] for g in data["groups"]} == {"bf16", "tf32"}
    assert all(keys <= set(g) for g in data["groups"])
    expected = model_error_report(["xla_h100-sxm"]).overall
    assert data["overall"]["model_median_error"] == pytest.approx(expected.model_median_error)
    assert data["overall"]["count"] == 452


@pytest.mark.parametrize("argv", [["no-such-trace"], ["missing.csv"], ["--rows"]])
def test_reconcile_bad_input_exits_2_with_one_line(capsys, argv):
    """An unknown trace, a missing file or an unknown option: exit 2, one line, no traceback."""
    code, out, err = run(capsys, "reconcile", *argv)
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_reconcile_through_the_magic():
    """%dlperf reconcile returns the same report as the CLI."""
    pytest.importorskip("IPython")
    from dlperf_widgets.magics import run_line

    result = run_line("reconcile deepbench_v100")
    assert result.overall.count == 320
    assert "error" in repr(run_line("reconcile no-such-trace"))
