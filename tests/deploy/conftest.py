"""Shared by the deployment tests."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any

import pytest


def _run_coroutine(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to completion on a fresh event loop in a thread of its own.

    An earlier test in the same worker process (a notebook kernel client, IPython) may have
    left an event loop running in this thread, where ``asyncio.run`` refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


@pytest.fixture
def run_coroutine() -> Any:
    """The function above, for tests that drive asyncio code."""
    return _run_coroutine
