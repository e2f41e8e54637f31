"""The order in which ``kit.py test``'s workers get the test files (the repository's conftest.py).

``--dist loadfile`` hands a worker a whole file at a time; a several-minute file handed out
last leaves the other worker idle at the end, which is what made the run exceed 10 minutes.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def _root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeItem:
    """What the ordering reads from a pytest item: its file, its name and its markers."""

    def __init__(self, path: str, name: str, slow: bool = False) -> None:
        self.path = ROOT / path
        self.name = name
        self._slow = slow

    def get_closest_marker(self, name: str) -> object:
        return object() if name == "slow" and self._slow else None


def test_longest_files_first_and_each_file_in_its_own_order() -> None:
    """Guards the hand-out order: the measured longest files first in their listed order,
    then other long files (slow, notebooks) with the most tests first, then the rest with the
    most tests first; the cells of a notebook stay in their order."""
    conftest = _root_conftest()
    longest = list(conftest.LONGEST_FIRST)
    items = [
        FakeItem("tests/core/test_small.py", "a"),
        FakeItem("tests/core/test_big.py", "a"),
        FakeItem("tests/core/test_big.py", "b"),
        FakeItem("tests/core/test_big.py", "c"),
        FakeItem("notebooks/00_x.ipynb", "Cell 0"),
        FakeItem("notebooks/00_x.ipynb", "Cell 1"),
        FakeItem("tests/live/test_slow.py", "a", slow=True),
        *[FakeItem(path, "t", slow=True) for path in reversed(longest)],
    ]
    ordered = conftest.hand_out_order(items)
    files = list(dict.fromkeys(item.path.relative_to(ROOT).as_posix() for item in ordered))
    assert files == [
        *longest,
        "notebooks/00_x.ipynb",
        "tests/live/test_slow.py",
        "tests/core/test_big.py",
        "tests/core/test_small.py",
    ]
    cells = [item.name for item in ordered if item.path.suffix == ".ipynb"]
    assert cells == ["Cell 0", "Cell 1"]
    assert sorted(map(id, ordered)) == sorted(map(id, items))


def test_listed_long_files_exist() -> None:
    """Guards against a renamed long file silently losing its place at the front."""
    missing = [name for name in _root_conftest().LONGEST_FIRST if not (ROOT / name).is_file()]
    assert not missing, f"conftest.LONGEST_FIRST names files that do not exist: {missing}"


def test_xdist_reordering_is_switched_off() -> None:
    """Guards the order reaching xdist: its own reordering by number of tests would undo it."""
    config = SimpleNamespace(option=SimpleNamespace(loadscopereorder=True))
    _root_conftest().pytest_configure(config)
    assert config.option.loadscopereorder is False
