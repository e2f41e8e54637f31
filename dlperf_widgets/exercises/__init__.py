"""Self-checks for the exercise notebooks.

    from dlperf_widgets.exercises import check
    check("02.linear_ai", ai)       # ✓ correct / ✗ not right yet + a hint / … not answered yet

Every task computes its expected answer with the analytical core from the task's parameters
(``task("02.linear_ai").params``); pass keyword arguments to check a variant, e.g.
``check("02.linear_ai", answer, batch=1024)``. ``check`` never raises on an answer: it returns a
:class:`CheckResult` (``.correct``, ``.message``, ``.hint``) that displays in a notebook.
"""

from __future__ import annotations

import difflib
from typing import Any

from ..core._validate import describe
from ._check import CheckResult, Mistake, Task, evaluate
from ._registry import all_tasks

__all__ = ["CheckResult", "Mistake", "Task", "check", "task", "tasks"]


def tasks(prefix: str = "") -> list[Task]:
    """All tasks whose id starts with ``prefix`` (e.g. ``'03.'``), in notebook order."""
    return [t for t in all_tasks().values() if t.id.startswith(prefix)]


def task(task_id: str) -> Task:
    """The task called ``task_id``; raises KeyError naming the closest ids if there is none."""
    registry = all_tasks()
    if task_id not in registry:
        near = difflib.get_close_matches(str(task_id), list(registry), n=3)
        more = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else "."
        raise KeyError(f"no exercise task {task_id!r}{more}")
    return registry[task_id]


def check(task_id: str, answer: Any = ..., **params: Any) -> CheckResult:
    """Check ``answer`` to exercise ``task_id``; keyword arguments change the task's inputs."""
    if not isinstance(task_id, str) or len(task_id) > 100:
        shown = describe(task_id)
        return CheckResult(
            "?",
            "invalid",
            f"the task id must be text such as '02.linear_ai' (got {shown}).",
            answer=answer,
        )
    try:
        t = task(task_id)
    except KeyError as exc:
        return CheckResult(task_id[:40], "invalid", str(exc.args[0]), answer=answer)
    return evaluate(t, answer, params)
