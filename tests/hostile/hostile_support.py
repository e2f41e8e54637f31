"""Shared checks of the hostile-input suite: only the kit's errors, one short sentence, quickly."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from dlperf_widgets.core.errors import DlperfError

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
