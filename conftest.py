"""Settings for every test the repository holds (tests/, and the notebooks that nbval runs).

Under pytest-xdist (``kit.py test`` runs ``-n N --dist loadfile``: a file's tests, and so a
notebook's cells, stay together and in order on one worker) the files are handed out longest
first, so that no worker starts a several-minute file when the others are nearly done: first
the files of :data:`LONGEST_FIRST` in that order, then the other long files (marked ``slow``,
and the notebooks) with the most tests first, then the rest with the most tests first.
xdist's own reordering (by number of tests alone, which put the browser tests 45th of 147
files) is switched off for this. Without xdist the order is the usual one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

# The files that keep one worker busy longest, longest first: each was run alone with
# `pytest --durations=0` on a 2-core machine that other jobs loaded (load average 5-11,
# November 2026); the numbers are their wall times in seconds, for the record: only the order
# is used. The Binder simulation's is the time with its environment built (kit.py test builds
# it beside pytest; 430 s when the test builds it itself), so it comes late enough for that.
LONGEST_FIRST = {
    "tests/browser/test_course_notebooks_1.py": 277,
    "tests/browser/test_course_notebooks_0.py": 266,
    "tests/deploy/test_hub.py": 165,
    "tests/browser/test_jupyterlab.py": 158,
    "tests/binder/test_binder_sim.py": 119,
    "tests/notebooks/test_without_torch.py": 100,
    "tests/exercises/test_release.py": 42,
    "tests/live/test_training_memory_peak.py": 41,
}


def _is_long(item: pytest.Item) -> bool:
    return item.get_closest_marker("slow") is not None or str(item.path).endswith(".ipynb")


def hand_out_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with whole files in the order described above; a file's own tests (a
    notebook's cells) keep their order."""
    files: dict[Path, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(Path(item.path), []).append(item)
    ranked = list(LONGEST_FIRST)

    def key(path: Path) -> tuple[int, int, int]:
        tests = files[path]
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        if name in LONGEST_FIRST:
            return (0, ranked.index(name), 0)
        return (1 if any(_is_long(t) for t in tests) else 2, 0, -len(tests))

    return [item for path in sorted(files, key=key) for item in files[path]]


def pytest_configure(config: pytest.Config) -> None:
    # xdist's controller would sort the files by their number of tests and undo the order
    # below; the option is read when the run is scheduled, after this hook.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: leave the order alone
        return
    items[:] = hand_out_order(items)
