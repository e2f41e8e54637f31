"""Time limits that hold and say so: %%dlperf_time, --max-seconds, Ctrl-C while writing."""

from __future__ import annotations

import json
import time

import pytest

from dlperf_widgets import cli


def test_an_endless_timed_cell_is_stopped_with_one_line():
    """%%dlperf_time had no time limit: a cell that never ends blocked the kernel."""
    pytest.importorskip("torch")
    from dlperf_widgets.live.magic import dlperf_time_cell

    start = time.perf_counter()
    shown = dlperf_time_cell("--device cpu --max-seconds 0.5", "while True:\n    pass\n")
    assert time.perf_counter() - start < 3
    assert "more than 0.5 s" in shown._repr_html_() and "dlperf-error" in shown._repr_html_()


@pytest.mark.parametrize("value", ["0", "-2", "nan", "inf"])
def test_the_cell_time_limit_must_be_positive(value):
    """A zero or negative limit is refused as one, not read as 'no limit'."""
    from dlperf_widgets.live.magic import dlperf_time_cell

    shown = dlperf_time_cell(f"--max-seconds {value}", "x = 1\n")
    assert "max-seconds" in shown._repr_html_() and "dlperf-error" in shown._repr_html_()


@pytest.mark.parametrize("value", ["0", "-1", "0.0"])
def test_max_seconds_zero_is_refused_not_no_limit(value, capsys):
    """`dlperf time ... --max-seconds 0` silently meant no limit."""
    argv = ["time", "gemm", "64", "64", "64", "--max-seconds", value, "--json"]
    assert cli.main(argv) == 2
    assert json.loads(capsys.readouterr().out)["parameter"] == "max_seconds"


def test_ctrl_c_while_writing_a_result_is_one_line(monkeypatch, capsys):
    """SIGINT while the CLI wrote a large result ended in a KeyboardInterrupt traceback."""

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "render", interrupted)
    assert cli.main(["gpus"]) == 130
    assert capsys.readouterr().err == "dlperf: interrupted\n"


def test_the_cpu_description_leaves_the_processor_out():
    """Notebooks 00 and 09 saved the recording machine's CPU model in their outputs."""
    pytest.importorskip("torch")
    from dlperf_widgets.live.device import _cpu_name, detect_device

    info = detect_device("cpu")
    assert _cpu_name() not in info.description
    assert info.processor == _cpu_name() and info.to_dict()["processor"] == _cpu_name()


def test_exercise_cells_with_the_tasks_numbers_are_checked_by_nbval():
    """The exercise notebooks had no cell whose output nbval compared (the course had 116)."""
    import glob

    import nbformat
    from hostile_support import ROOT

    tagged = 0
    for path in glob.glob(str(ROOT / "exercises" / "[01]*_exercises.ipynb")):
        nb = nbformat.read(path, as_version=4)
        tagged += sum("nbval-check-output" in c.metadata.get("tags", []) for c in nb.cells)
    assert tagged >= 19
