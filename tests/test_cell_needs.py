"""Cells marked `# needs: torch` run as written where PyTorch imports, and print one line
instead of stopping the notebook where it does not (dlperf_widgets.cell_needs)."""

from __future__ import annotations

import sys

import pytest

from dlperf_widgets import cell_needs


@pytest.fixture(scope="module")
def shell():
    """An IPython shell, as in a notebook after `import dlperf_widgets`."""
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    cell_needs.register_in_running_shell()
    return sh


def test_marked_cell_is_one_printed_line_when_the_package_is_missing(monkeypatch):
    """Without torch the cell's code is replaced by one print naming PyTorch and the pip
    command; nothing of the cell's own code is left to fail."""
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    out = cell_needs.guard_cell(["# needs: torch\n", "import torch\n", "x = torch.ones(3)\n"])
    assert len(out) == 1 and out[0].startswith("print(")
    message = cell_needs.skip_message(["torch"])
    assert "\n" not in message and "PyTorch" in message and "pip install torch" in message
    assert "dlperf_widgets[" not in message  # not a name the package index knows


def test_marked_cell_runs_unchanged_where_the_packages_import():
    """With every named package importable the cell is exactly what the author wrote."""
    lines = ["# needs: numpy, json\n", "import numpy\n"]
    assert cell_needs.guard_cell(lines) == lines
    unmarked = ["# needs more work\n", "import torch\n"]  # an ordinary comment
    assert cell_needs.guard_cell(unmarked) == unmarked


def test_marker_before_a_cell_magic_is_dropped():
    """A cell magic must open its cell; the marker line above it goes before IPython reads it."""
    lines = ["# needs: numpy\n", "%%timeit -n1 -r1\n", "x = 1\n"]
    assert cell_needs.guard_cell(lines) == lines[1:]


def test_listed_missing_packages_are_all_named(monkeypatch):
    """Both of a cell's missing packages appear in its one line, in the order written."""
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "transformers", None)
    assert cell_needs.missing(["numpy", "torch", "transformers"]) == ["torch", "transformers"]
    message = cell_needs.skip_message(["torch", "transformers"])
    assert "pip install torch transformers" in message


def test_in_a_shell_the_notebook_runs_on(shell, monkeypatch, capsys):
    """In IPython the marked cell succeeds with one printed line where torch is missing, and
    a cell after it still runs."""
    monkeypatch.setitem(sys.modules, "torch", None)
    result = shell.run_cell("# needs: torch\nimport torch\nraise RuntimeError('ran')")
    assert result.success, result.error_in_exec
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == [cell_needs.skip_message(["torch"])]
    assert shell.run_cell("after = 1 + 1").success and shell.user_ns["after"] == 2


def test_registering_twice_adds_the_check_once(shell):
    """`import dlperf_widgets` and `%load_ext dlperf_widgets` both register; one check runs."""
    cell_needs.register(shell)
    cell_needs.register_in_running_shell()
    assert shell.input_transformers_cleanup.count(cell_needs.guard_cell) == 1
