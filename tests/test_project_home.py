"""The project's home is named once (pyproject's [project.urls]); badges and installs follow it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
import pytest as _pytest

tomllib = _pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nb_colab  # noqa: E402

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
NOTEBOOKS = nb_colab.notebook_paths()


def test_pyproject_names_home_license_and_instructor_extra():
    """SPDX licence string (the table form is deprecated), project URLs, nbgrader for teachers."""
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert project["urls"]["Homepage"].startswith("https://github.com/")
    assert project["optional-dependencies"]["instructor"] == ["nbgrader==0.9.6"]


def test_license_file_is_the_apache_license():
    """pyproject says Apache-2.0; the LICENSE file must hold that licence's text."""
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_readme_binder_badge_is_built_from_the_home():
    """The Binder badge named a repository that appeared nowhere else."""
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\(https://mybinder\.org/v2/gh/[^)\s]+\)", readme)
    assert targets == [f"({nb_colab.binder_url()})"]
    colab = re.findall(r"\(https://colab\.research\.google\.com/github/[^)\s]+\)", readme)
    assert colab == [f"({nb_colab.colab_url('00_start_here.ipynb')})"]
    assert nb_colab.github_slug() in PYPROJECT["project"]["urls"]["Homepage"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_colab_transform(path, monkeypatch):
    """Each notebook gets a Colab badge for itself and a guarded install cell as its first code
    cell; exercise links open the student copies; running the script twice changes nothing."""
    nb = nbformat.read(path, as_version=4)
    once = nb_colab.transform(nb, path.name)
    assert nb_colab.transform(once, path.name) == once
    first_md = once["cells"][0]["source"]
    assert f"]({nb_colab.colab_url(path.name)})" in first_md
    code = [c for c in once["cells"] if c["cell_type"] == "code"]
    assert code[0]["id"] == nb_colab.INSTALL_ID
    assert f"git+{PYPROJECT['project']['urls']['Homepage']}" in code[0]["source"]
    counts = [c["execution_count"] for c in code]
    if all(c["execution_count"] for c in nb["cells"] if c["cell_type"] == "code"):
        assert counts == list(range(1, len(code) + 1))
    text = "\n".join(c["source"] for c in once["cells"] if c["cell_type"] == "markdown")
    assert not re.search(r"\]\(\.\./exercises/\d\d_", text), "a link opens the solutions"
    for target in re.findall(r"\]\((\.\./exercises/student/[^)]+)\)", text):
        assert (path.parent / target).resolve().exists(), target


def test_install_cell_does_nothing_outside_colab(monkeypatch):
    """Off Colab (here, Binder, kit.py lab) the cell must not call pip."""
    import subprocess

    def refuse(*args, **kwargs):
        raise AssertionError("pip was called outside Colab")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(nb_colab.install_source(), {})

    class Ran(Exception):
        pass

    def record(cmd, **kwargs):
        raise Ran(" ".join(cmd))

    monkeypatch.setattr(subprocess, "run", record)
    monkeypatch.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
    with pytest.raises(Ran, match=r"pip install -q dlperf_widgets\[widgets\] @ git\+https://"):
        exec(nb_colab.install_source(), {})


def test_committed_notebooks_are_what_the_script_writes():
    """The notebooks carry the badges, install cells and links tools/nb_colab.py makes; run
    `python tools/nb_colab.py` after editing a notebook or adding one."""
    assert nb_colab.main(["--check"]) == 0


@pytest.mark.parametrize(
    "path", sorted((ROOT / "exercises" / "student").glob("*.ipynb")), ids=lambda p: p.name
)
def test_student_exercises_open_in_colab_and_install_there(path):
    """The student copies had no badge and no install cell, so on Colab their first import
    failed; each now opens itself in Colab and installs the kit there first."""
    nb = nbformat.read(path, as_version=4)
    assert f"](https://colab.research.google.com/github/{nb_colab.github_slug()}/blob/" in (
        nb.cells[0].source
    )
    assert f"/exercises/student/{path.name})" in nb.cells[0].source
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].id == nb_colab.INSTALL_ID
    assert code[0].source == nb_colab.install_source()
    assert "nbgrader" not in code[0].metadata  # an ordinary cell: nbgrader leaves it alone
