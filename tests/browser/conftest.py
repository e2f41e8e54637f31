"""Fixtures of the browser tests: one JupyterLab server and one headless Chromium per session
(per worker process under pytest-xdist), and one loaded JupyterLab page per test file.

JupyterLab serves a temporary folder holding a copy of ``notebooks/`` (so nothing the
browser does can touch the project's files) and the notebooks that the tests write. The
course notebooks run in ``test_course_notebooks_0.py`` and ``test_course_notebooks_1.py``
(helpers in ``lab_checks.py``), the widget interactions in ``test_jupyterlab.py``; the harness
lives in ``tools/labdriver.py``, shared with ``benchmarks/bench_browser.py``.
"""

from __future__ import annotations

import atexit
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import labdriver  # noqa: E402

SCREENSHOTS = ROOT / "test-output" / "screenshots"


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lab-root")
    notebooks = ROOT / "notebooks"
    if notebooks.is_dir():
        shutil.copytree(
            notebooks, root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints")
        )
    (root / "checks").mkdir()
    return root


@pytest.fixture(scope="session")
def lab_server(lab_root: Path) -> Iterator[labdriver.LabServer]:
    server = labdriver.LabServer(lab_root)
    atexit.register(server.stop)  # also when the session is interrupted
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    manager = sync_playwright().start()
    try:
        chromium = labdriver.launch_chromium(manager)
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        manager.stop()


@pytest.fixture()
def page(browser: Any, lab_server: labdriver.LabServer) -> Iterator[Any]:
    """A fresh browser page; the kernels it started are shut down afterwards."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    try:
        yield context.new_page()
    finally:
        context.close()
        lab_server.shutdown_kernels()


@pytest.fixture(scope="module")
def lab_page(browser: Any, lab_server: labdriver.LabServer) -> Iterator[Any]:
    """One JupyterLab page for a whole test file: each test opens its notebook inside it and
    closes it (tab unsaved, kernels ended) when done, instead of loading JupyterLab again."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    try:
        page = context.new_page()
        labdriver.load_lab(page, lab_server)
        yield page
    finally:
        context.close()
        lab_server.shutdown_kernels()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
