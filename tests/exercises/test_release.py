"""Guards the student copies: they equal what nbgrader makes of the source notebooks, they
are up to date, and they run top to bottom with every check saying 'not answered yet'."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from dlperf_widgets.exercises.release import (
    CODE_STUB,
    ReleaseError,
    main,
    release_notebook,
    release_tree,
)

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "exercises"
SOURCES = sorted(EXERCISES.glob("*_exercises.ipynb"))


def _nbgrader_release(path: Path) -> dict:
    """Run nbgrader's own preprocessors, in generate_assignment's order, on one notebook."""
    pytest.importorskip("nbgrader")
    from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions, LockCells
    from traitlets.config import Config

    cfg = Config()
    cfg.ClearSolutions.code_stub = {"python": CODE_STUB}
    nb = nbformat.read(path, as_version=4)
    resources: dict = {}
    for pre in (LockCells, ClearSolutions, ClearOutput, ClearHiddenTests):
        nb, resources = pre(config=cfg).preprocess(nb, resources)
    return json.loads(nbformat.writes(nb))


def _cells(nb: dict) -> list[dict]:
    out = []
    for c in nb["cells"]:
        c = dict(c)
        c["source"] = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        c.pop("id", None)
        out.append(c)
    return out


def test_there_are_exercise_notebooks():
    """At least the four exercise notebooks on the part-I core exist."""
    assert [p.name[:2] for p in SOURCES][:4] == ["01", "02", "03", "04"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_release_equals_nbgrader_preprocessors(path):
    """Every cell of our student copy equals nbgrader's (ClearSolutions with the same stub,
    LockCells, ClearOutput, ClearHiddenTests): source, type, outputs and metadata."""
    ours = release_notebook(json.loads(path.read_text()), name=path.name)
    theirs = _nbgrader_release(path)
    assert _cells(ours) == _cells(theirs)


def test_release_equals_nbgrader_generate_assignment(tmp_path):
    """`nbgrader generate_assignment` on a course holding the sources gives the same cells."""
    pytest.importorskip("nbgrader")
    course = tmp_path / "course"
    src = course / "source" / "ex"
    src.mkdir(parents=True)
    for p in SOURCES:
        shutil.copy(p, src / p.name)
    shutil.copy(EXERCISES / "nbgrader_config.py", course / "nbgrader_config.py")
    cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", "ex", "--force"]
    # nbgrader calls the `alembic` script that sits next to the interpreter.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(cmd, cwd=course, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    for p in SOURCES:
        theirs = json.loads((course / "release" / "ex" / p.name).read_text())
        ours = release_notebook(json.loads(p.read_text()), name=p.name)
        a, b = _cells(ours), _cells(theirs)
        assert [c["source"] for c in a] == [c["source"] for c in b], p.name
        for ca, cb in zip(a, b, strict=True):  # nbgrader adds checksums and cell types
            nbg = {
                k: v
                for k, v in cb["metadata"].get("nbgrader", {}).items()
                if k in ca["metadata"].get("nbgrader", {})
            }
            assert nbg == ca["metadata"].get("nbgrader", {})


def test_committed_student_copies_are_up_to_date(tmp_path):
    """exercises/student/ is exactly what the release command writes today."""
    assert release_tree(EXERCISES, EXERCISES / "student", write=False) == []
    assert main([str(EXERCISES), str(EXERCISES / "student"), "--check"]) == 0


def test_student_copy_has_no_solutions():
    """No solution text and no hidden test survives in a student copy."""
    for p in SOURCES:
        text = (EXERCISES / "student" / p.name).read_text()
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
        assert "Model answer" not in text and "assert_correct" not in text
        assert CODE_STUB in text


def test_student_notebooks_run_and_report_not_answered(tmp_path):
    """Run every student copy with nbclient (errors fail the test): each check cell shows
    'not answered yet' and nothing shows as correct."""
    from nbclient import NotebookClient

    release_tree(EXERCISES, tmp_path)
    for p in SOURCES:
        nb = nbformat.read(tmp_path / p.name, as_version=4)
        NotebookClient(
            nb,
            timeout=120,
            kernel_name="python3",
            allow_errors=False,
            resources={"metadata": {"path": str(tmp_path)}},
        ).execute()
        checks = [
            c
            for c in nb.cells
            if c.cell_type == "code"
            and "check(" in c.source
            and c.metadata.get("nbgrader", {}).get("grade")
        ]
        assert len(checks) >= 3, p.name
        for c in checks:
            text = " ".join(o.get("data", {}).get("text/plain", "") for o in c.outputs)
            assert "not answered yet" in text, f"{p.name}: {c.source!r} -> {text!r}"


def _nb(*sources: tuple[str, dict]) -> dict:
    cells = [
        {
            "cell_type": "code",
            "metadata": {"nbgrader": meta},
            "source": src,
            "outputs": [],
            "execution_count": None,
        }
        for src, meta in sources
    ]
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


SOL = {"grade": False, "grade_id": "a", "locked": False, "schema_version": 3, "solution": True}


def test_indentation_and_whole_cell_stub():
    """The stub keeps the region's indentation; a solution cell without markers is replaced."""
    nb = _nb(
        ("if True:\n    ### BEGIN SOLUTION\n    x = 1\n    ### END SOLUTION", SOL), ("x = 2", SOL)
    )
    out = release_notebook(nb)
    assert out["cells"][0]["source"] == "if True:\n    # YOUR CODE HERE"
    assert out["cells"][1]["source"] == CODE_STUB


def test_broken_markers_are_errors(tmp_path, capsys):
    """An unclosed region, or a solution in an unmarked cell, stops the release clearly."""
    with pytest.raises(ReleaseError, match="without 'END SOLUTION'"):
        release_notebook(_nb(("### BEGIN SOLUTION\nx = 1", SOL)))
    with pytest.raises(ReleaseError, match="not marked as a solution"):
        release_notebook(_nb(("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", {})))
    (tmp_path / "bad.ipynb").write_text(json.dumps(_nb(("### BEGIN SOLUTION", SOL))))
    assert main([str(tmp_path), str(tmp_path / "out")]) == 2
    assert "error: bad.ipynb cell 0" in capsys.readouterr().err


def test_check_mode_reports_stale_copies(tmp_path, capsys):
    """--check exits 1 and names the copies that a release would change, writing nothing."""
    assert main([str(EXERCISES), str(tmp_path), "--check"]) == 1
    assert "out of date" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())
