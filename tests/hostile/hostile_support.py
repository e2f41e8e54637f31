"""Shared checks of the hostile-input suite: only the kit's errors, one short sentence, quickly."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlperf_widgets.core.errors import DlperfError

ROOT = Path(__file__).resolve().parents[2]

# Inputs a user (or a fuzzer) types by accident or on purpose: huge, tiny, non-finite, wrong type.
HOSTILE_NUMBERS: list[Any] = [
    0,
    -1,
    -(2**63),
    2**28,
    2**62,
    2**63,
    2**64,
    10**100,
    10**5000,
    1e30,
    -1e30,
    1.5,
    float("nan"),
    float("inf"),
    float("-inf"),
    True,
    None,
    "no",
    "9" * 5000,
    [],
    [1e30],
    [256, 1.5],
    object(),
]

MAX_MESSAGE = 400  # characters: a message echoes a short excerpt, never a whole input
MAX_SECONDS = 2.0


def assert_kit_error(call: Callable[[], Any], *, seconds: float = MAX_SECONDS) -> str | None:
    """Run ``call``: it returns, or raises a DlperfError with one short sentence; fast either way.

    Returns the message (None when the call succeeded).
    """
    start = time.perf_counter()
    message = None
    try:
        call()
    except DlperfError as exc:
        message = str(exc)
        assert message, "an error without a message"
        assert "\n" not in message, f"more than one line: {message!r}"
        assert len(message) <= MAX_MESSAGE, f"message of {len(message)} characters"
        assert "Traceback" not in message
    elapsed = time.perf_counter() - start
    assert elapsed < seconds, f"took {elapsed:.1f} s"
    return message


MEMORY_LIMIT = 2**30  # bytes of address space a hostile case may use (1 GiB above the start)


def run_limited(code: str, *, seconds: float = 20.0) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter whose address space may grow by at most 1 GiB.

    The limit is set once the kit is imported (numpy and the kit map a few hundred MB of
    address space before any case runs), so that a case allocating gigabytes fails with
    MemoryError instead of paging the machine; the child must exit 0 within ``seconds``.
    """
    prelude = (
        "import resource, dlperf_widgets.exercises, dlperf_widgets.cli\n"
        "with open('/proc/self/statm') as f:\n"
        "    used = int(f.read().split()[0]) * resource.getpagesize()\n"
        f"resource.setrlimit(resource.RLIMIT_AS, (used + {MEMORY_LIMIT}, used + {MEMORY_LIMIT}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        env=env,
        timeout=seconds,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done
