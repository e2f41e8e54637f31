"""exercises.check() overrides: sized, typed and time-limited before the model runs."""

from __future__ import annotations

import decimal
import signal
import threading
import time

import numpy as np
import pytest
from hostile_support import run_limited
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlperf_widgets.exercises import _check, check, tasks

NEW_TASKS = [t for t in tasks() if t.id[:2] in ("10", "11", "12", "13")]
NUMERIC = [
    (t.id, name)
    for t in NEW_TASKS
    for name, v in t.params.items()
    if isinstance(v, (int, float)) and not isinstance(v, bool)
]


def test_a_billion_kernels_is_refused_before_any_list_is_built():
    """kernels=10**9 built a list of 10**9 floats (7.7 GB, 9-42 s); 3*10**9 met the OOM killer."""
    code = (
        "from dlperf_widgets.exercises import check\n"
        "for n in (10**9, 3 * 10**9, 10**30):\n"
        "    r = check('10.launch_bound_time', 1, kernels=n)\n"
        "    assert r.status == 'invalid' and \"'kernels'\" in r.message, r.message\n"
        "    r = check('10.batch_scale', 4, kernels=n)\n"
        "    assert r.status == 'invalid' and \"'kernels'\" in r.message, r.message\n"
        "r = check('02.math_batch', 1, max_batch=10**10)\n"
        "assert r.status == 'invalid' and \"'max_batch'\" in r.message, r.message\n"
    )
    run_limited(code, seconds=20)


@pytest.mark.parametrize(("task_id", "name"), NUMERIC)
@pytest.mark.parametrize("value", [float("nan"), None, -1, float("inf"), "12", [3]])
def test_a_nonsense_override_is_invalid_not_judged(task_id, name, value):
    """NaN, None and negative overrides were judged right or wrong (76 cases) instead of invalid."""
    default = next(t for t in NEW_TASKS if t.id == task_id).params[name]
    if value == -1 and default < 0:
        pytest.skip("a parameter that may be negative")
    result = check(task_id, 1, **{name: value})
    assert result.status == "invalid", result.message
    assert f"'{name}'" in result.message


@pytest.mark.parametrize("value", [np.array(200), np.float64(200.0), decimal.Decimal("200"), 200.0])
def test_numbers_of_every_spelling_stand_for_an_integer_override(value):
    """A 0-d array, a numpy scalar, a Decimal and an integral float mean the number they hold."""
    expected = check("10.launch_bound_time", 1e-3)  # 200 kernels x max(1 us, 5 us) = 1 ms
    assert expected.correct
    assert check("10.launch_bound_time", 1e-3, kernels=value).correct


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pair=st.sampled_from(NUMERIC),
    value=st.one_of(
        st.integers(min_value=-(10**30), max_value=10**30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.decimals(allow_nan=True, allow_infinity=True),
    ),
)
def test_any_numeric_override_answers_quickly(pair, value):
    """Every override of tasks 10-12 gives an answer (any status) within the check's limit."""
    task_id, name = pair
    limit, _check.CHECK_SECONDS = _check.CHECK_SECONDS, 0.5  # keep the suite under a minute
    try:
        start = time.perf_counter()
        result = check(task_id, 1, **{name: value})
        assert time.perf_counter() - start < 3.0
    finally:
        _check.CHECK_SECONDS = limit
    assert result.status in _check.STATUSES and "\n" not in result.message


def test_the_time_limit_holds_in_a_worker_thread(monkeypatch):
    """The 5 s limit used SIGALRM, which a worker thread cannot use: there it was no limit."""
    monkeypatch.setattr(_check, "CHECK_SECONDS", 0.3)
    slow = next(t for t in tasks() if t.id == "03.one_wave_n")
    results = []
    worker = threading.Thread(target=lambda: results.append(check(slow.id, 1, blocks_per_sm=10**8)))
    start = time.perf_counter()
    worker.start()
    worker.join(10)
    assert time.perf_counter() - start < 3.0
    assert results and results[0].status == "invalid" and "took more than" in results[0].message


def test_a_check_keeps_the_callers_alarm():
    """check() cancelled the caller's own SIGALRM timer (setitimer(0) on the way out)."""
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.4)
        check("10.launch_bound_time", 1e-3)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 0.4, "the caller's timer was cancelled"
        deadline = time.monotonic() + 3
        while not fired and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fired, "the caller's alarm never fired"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
