"""The task registry: one module of tasks per exercise notebook, loaded on first use."""

from __future__ import annotations

import importlib
from functools import lru_cache

from ._check import Task

# One module per exercise notebook, in course order; each defines TASKS (a list of Task).
MODULES = (
    "tasks01",
    "tasks02",
    "tasks03",
    "tasks04",
    "tasks05",
    "tasks06",
    "tasks07",
    "tasks08",
    "tasks09",
    "tasks10",
    "tasks11",
    "tasks12",
    "tasks13",
    "tasks14",
    "tasks15",
)


@lru_cache(maxsize=1)
def all_tasks() -> dict[str, Task]:
    registry: dict[str, Task] = {}
    for name in MODULES:
        module = importlib.import_module(f"{__package__}.{name}")
        for t in module.TASKS:
            if t.id in registry:
                raise RuntimeError(f"exercise task {t.id!r} is defined twice")
            registry[t.id] = t
    return registry
