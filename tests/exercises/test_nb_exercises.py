"""Guards tools/nb_exercises.py, the check an author runs after editing an exercise notebook:
the committed notebooks pass it, and each way of breaking a notebook is named."""

from __future__ import annotations

import copy
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from dlperf_widgets.exercises.release import release_tree

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("nb_exercises", ROOT / "tools" / "nb_exercises.py")
nb_exercises = importlib.util.module_from_spec(_spec)
sys.modules["nb_exercises"] = nb_exercises
_spec.loader.exec_module(nb_exercises)

EXERCISES = ROOT / "exercises"
SOURCES = sorted(EXERCISES.glob("[0-9][0-9]_*_exercises.ipynb"))
NAME = "02_bounds_and_roofline_exercises.ipynb"


def _source(name: str = NAME) -> dict:
    return json.loads((EXERCISES / name).read_text())


def _find(nb: dict, grade_id: str) -> dict:
    return next(
        c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id
    )


def _text(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def test_no_script_writes_the_exercises():
    """The notebooks are the source: the script that used to write them is gone."""
    assert not (EXERCISES / "_make_notebooks.py").exists()


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name[:2])
def test_committed_notebooks_pass(path):
    """Every committed source notebook passes the check an author runs after saving."""
    assert nb_exercises.lint(json.loads(path.read_text()), path.name) == []


def test_student_copies_are_current():
    """The student copies are what the release command writes (the check reads all of them)."""
    assert nb_exercises.lint_paths(SOURCES) == []
    assert nb_exercises.main([]) == 0


def test_duplicate_grade_id_is_named():
    """Two cells with one grade_id would merge in nbgrader's gradebook: the check names it."""
    nb = _source()
    _find(nb, "limiter_small")["metadata"]["nbgrader"]["grade_id"] = "ops_per_byte"
    problems = nb_exercises.lint(nb, NAME)
    assert any("grade_id 'ops_per_byte' is already used" in p for p in problems), problems


def test_unlocked_check_and_missing_points_are_named():
    """A check cell a learner could edit, or a graded cell worth nothing, is reported."""
    nb = _source()
    meta = _find(nb, "check_02_ops_per_byte")["metadata"]["nbgrader"]
    meta["locked"] = False
    del meta["points"]
    problems = nb_exercises.lint(nb, NAME)
    assert any("must be locked" in p for p in problems), problems
    assert any("positive nbgrader 'points'" in p for p in problems), problems


def test_non_boolean_flag_and_schema_are_named():
    """nbgrader reads 'solution' as a boolean and needs schema 3."""
    nb = _source()
    _find(nb, "limiter_small")["metadata"]["nbgrader"]["solution"] = "yes"
    _find(nb, "ops_per_byte")["metadata"]["nbgrader"]["schema_version"] = 1
    problems = nb_exercises.lint(nb, NAME)
    assert any("'solution' must be true or false" in p for p in problems), problems
    assert any("'schema_version' must be 3" in p for p in problems), problems


def test_solution_without_markers_or_placeholder_is_named():
    """An answer cell must keep its solution between markers below `x = ...`, or the student
    copy loses its placeholder and stops at the first unanswered task."""
    nb = _source()
    _find(nb, "limiter_small")["source"] = "limiter_small = 'latency'"
    cell = _find(nb, "ops_per_byte")
    cell["source"] = _text(cell).replace("ops_per_byte = ...\n", "")
    problems = nb_exercises.lint(nb, NAME)
    assert any("between markers" in p for p in problems), problems
    assert any("to ... above the solution" in p for p in problems), problems


def test_check_without_hidden_test_is_named():
    """Without its hidden assertion a check cell grades nothing in nbgrader."""
    nb = _source()
    cell = _find(nb, "check_02_limiter_small")
    cell["source"] = 'check("02.limiter_small", limiter_small)'
    problems = nb_exercises.lint(nb, NAME)
    assert any("hidden tests" in p for p in problems), problems


def test_task_without_its_check_is_named():
    """Deleting a check cell leaves an answer cell unchecked and a defined task unasked."""
    nb = _source()
    nb["cells"].remove(_find(nb, "check_02_limiter_small"))
    problems = nb_exercises.lint(nb, NAME)
    assert any("an answer cell without a check cell" in p for p in problems), problems
    assert any("task '02.limiter_small' has no check cell" in p for p in problems), problems


def test_check_of_unknown_task_is_named():
    """A check naming a task the package does not define would only say 'no exercise task'."""
    nb = _source()
    cell = _find(nb, "check_02_limiter_small")
    cell["source"] = _text(cell).replace('"02.limiter_small"', '"02.limiter_smal"')
    problems = nb_exercises.lint(nb, NAME)
    assert any("'02.limiter_smal'" in p for p in problems), problems


def test_open_question_without_model_answer_is_named():
    """A manually graded question needs the model answer the grader reads."""
    nb = _source()
    _find(nb, "open_transformer")["source"] = "Because of bytes."
    problems = nb_exercises.lint(nb, NAME)
    assert any("model answer" in p for p in problems), problems


def test_missing_badge_and_install_cell_are_named():
    """The Colab badge and install cell are part of every exercise notebook."""
    nb = _source()
    nb["cells"] = [c for c in nb["cells"] if c.get("id") != "colab-install"]
    problems = nb_exercises.lint(nb, NAME)
    assert any("Colab badge, install cell" in p for p in problems), problems


def test_stale_student_copy_is_named(tmp_path):
    """Editing a source notebook without releasing it makes the check fail, naming the file."""
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    shutil.copy(EXERCISES / NAME, src / NAME)
    release_tree(src, out)
    assert nb_exercises.lint_paths([src / NAME], out) == []
    edited = copy.deepcopy(_source())
    cell = next(c for c in edited["cells"] if "FLOPs versus runtime" in _text(c))
    cell["source"] = _text(cell) + " Edited."
    (src / NAME).write_text(json.dumps(edited))
    problems = nb_exercises.lint_paths([src / NAME], out)
    assert problems == [f"{NAME}: the student copy is stale (run python -m "
                        "dlperf_widgets.exercises.release exercises exercises/student)"]  # fmt: skip


def test_unlocked_or_missing_setup_is_named():
    """The setup cell that imports `check` is read-only, and it comes before every task."""
    nb = _source()
    setup = _find(nb, "setup")
    setup["metadata"]["nbgrader"]["locked"] = False
    assert any("setup cell must be locked" in p for p in nb_exercises.lint(nb, NAME))
    nb["cells"].remove(setup)
    assert any("no setup cell" in p for p in nb_exercises.lint(nb, NAME))
