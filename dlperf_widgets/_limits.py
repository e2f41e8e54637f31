"""Time and memory limits around work the kit cannot bound by checking its inputs first.

Two callers need them: a self-check whose parameters make the model compute for long, and a
user's own module (``dlperf model --module``), whose code the kit imports and runs.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["TimeLimitExceeded", "can_interrupt", "memory_limit", "time_limit"]


class TimeLimitExceeded(Exception):
    """Raised inside the limited block when its time is up (never escapes the kit)."""


def can_interrupt() -> bool:
    """True where :func:`time_limit` can stop a computation (the main thread, on Unix)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`TimeLimitExceeded` in the block after ``seconds`` (SIGALRM; a no-op
    where :func:`can_interrupt` is False).

    A timer the caller had armed is kept: it fires at its own time through its own handler
    (and is re-armed for what is left of it afterwards), never cancelled by the limit.
    """
    if not can_interrupt():
        yield
        return
    start = time.monotonic()
    theirs, interval = signal.getitimer(signal.ITIMER_REAL)
    previous = signal.getsignal(signal.SIGALRM)

    def _stop(signum: int, frame: Any) -> None:
        if theirs and time.monotonic() - start >= theirs - 1e-3 and callable(previous):
            signal.signal(signal.SIGALRM, previous)
            previous(signum, frame)  # the caller's alarm came first: theirs to handle
            return
        raise TimeLimitExceeded

    signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, theirs) if theirs else seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if theirs:
            left = theirs - (time.monotonic() - start)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), interval)


def _data_bytes() -> int | None:
    """Bytes of this process's data segment now (Linux), the quantity RLIMIT_DATA bounds."""
    try:
        import resource

        with open("/proc/self/statm") as f:
            return int(f.read().split()[5]) * resource.getpagesize()
    except (ImportError, OSError, IndexError, ValueError):
        return None


@contextlib.contextmanager
def memory_limit(extra_bytes: int) -> Iterator[None]:
    """Let the block grow the process's private writable memory by at most ``extra_bytes``
    (RLIMIT_DATA on Linux; a no-op elsewhere): past it, allocations fail with MemoryError
    (or the allocating library's own error) instead of paging the machine to a halt.

    RLIMIT_DATA, unlike RLIMIT_AS, leaves reserved but unused address space alone (a CUDA
    runtime reserves tens of GB of it). The previous limit is restored on the way out.
    """
    used = _data_bytes()
    try:
        import resource
    except ImportError:
        used = None
    if used is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    wanted = used + extra_bytes
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if soft != resource.RLIM_INFINITY:
        wanted = min(wanted, soft)
    resource.setrlimit(resource.RLIMIT_DATA, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
