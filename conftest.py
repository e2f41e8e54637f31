"""Settings for every test the repository holds (tests/, and the notebooks that nbval runs).

Under pytest-xdist (``kit.py test`` runs ``-n N --dist loadfile``: a file's tests, and so a
notebook's cells, stay together and in order on one worker) the files with long tests (marked
``slow``, the browser tests, the Binder simulation, the notebooks) are handed out first, so
that no worker starts a several-minute file when the others are nearly done. Without xdist
the order is the usual one.
"""

from __future__ import annotations

import pytest

LONG_FOLDERS = ("tests/browser/", "tests/binder/")


def _is_long(item: pytest.Item) -> bool:
    return (
        item.get_closest_marker("slow") is not None
        or item.nodeid.startswith(LONG_FOLDERS)
        or str(item.path).endswith(".ipynb")
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: leave the order alone
        return
    long_files = {item.path for item in items if _is_long(item)}
    items.sort(key=lambda item: item.path not in long_files)  # stable: cells keep their order
