"""Self-checks for the exercise notebooks: compare an answer with the core, explain mistakes.

A :class:`Task` names its inputs (``params``) and a function that computes the expected
answer from them with the analytical core; nothing expected is stored as a literal. Each
:class:`Mistake` computes the answer a learner gets by a known slip (forgetting the factor 2,
counting bits instead of bytes ...); when an answer matches one, the learner sees that
mistake's hint. :func:`check` never raises on a learner's answer: unanswered, nonsense and
wrong answers all come back as a :class:`CheckResult` that says what to do next.
"""

from __future__ import annotations

import html
import math
import numbers
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._limits import TimeLimitExceeded as _TooSlow
from .._limits import can_interrupt
from .._limits import time_limit as _time_limit
from ..core._validate import MAX_SIZE, check_bool, check_int, check_number, describe
from ..core.errors import InvalidParameter
from ..core.results import ResultMixin, format_quantity

__all__ = ["KINDS", "STATUSES", "CheckResult", "Mistake", "Task"]

KINDS = ("number", "integer", "choice", "design")
STATUSES = ("correct", "wrong", "unanswered", "invalid")

Params = Mapping[str, Any]

# Unit slips shared by every task that asks for a quantity in this unit: the factor by which
# the slipped answer differs from the right one, and what the learner most likely did.
UNIT_SLIPS: dict[str, tuple[tuple[float, str], ...]] = {
    "FLOP": (
        (1e-12, "you gave TFLOP; give the plain count of FLOPs (1 TFLOP = 1e12 FLOP)."),
        (1e-9, "you gave GFLOP; give the plain count of FLOPs (1 GFLOP = 1e9 FLOP)."),
    ),
    "FLOP/s": (
        (1e-12, "you gave TFLOP/s; give FLOP/s (312 TFLOP/s is 312e12 FLOP/s)."),
        (1e-9, "you gave GFLOP/s; give FLOP/s (1 GFLOP/s is 1e9 FLOP/s)."),
    ),
    "B": (
        (1e-9, "you gave GB; give bytes (1 GB = 1e9 B)."),
        (1e-6, "you gave MB; give bytes (1 MB = 1e6 B)."),
        (1 / 2**30, "you gave GiB; give bytes (1 GiB = 2**30 B)."),
        (1 / 2**20, "you gave MiB; give bytes (1 MiB = 2**20 B)."),
    ),
    "B/s": ((1e-9, "you gave GB/s; give bytes per second (1 GB/s = 1e9 B/s)."),),
    "s": (
        (1e3, "you gave milliseconds; give seconds (1 ms = 1e-3 s)."),
        (1e6, "you gave microseconds; give seconds (1 us = 1e-6 s)."),
    ),
    "fraction": ((100.0, "you gave a percentage; give a fraction between 0 and 1."),),
}


@dataclass(frozen=True)
class Mistake:
    """A known wrong route: ``value(params)`` is the answer it produces (or a list of the
    answers its variants produce), ``hint`` the advice the learner gets when theirs matches."""

    name: str
    value: Callable[[Params], Any]
    hint: str


@dataclass(frozen=True)
class Task:
    """One exercise question whose answer the core computes from ``params``.

    ``kind``: 'number' (compared with ``rel_tol``), 'integer' (exact), 'choice' (one of
    ``choices``, case-insensitive) or 'design' (a positive whole number the learner chooses;
    ``validate(params, answer)`` returns '' for every valid design, otherwise a hint naming
    what the design breaks, and ``expected`` gives one valid design). ``unit`` names the unit
    the answer is asked in.
    """

    id: str
    question: str
    kind: str
    params: Mapping[str, Any]
    expected: Callable[[Params], Any]
    unit: str = ""
    rel_tol: float = 0.01
    choices: tuple[str, ...] = ()
    mistakes: tuple[Mistake, ...] = ()
    hint: str = ""
    explain: Callable[[Params], str] | None = None
    validate: Callable[[Params, int], Any] | None = None
    limits: Mapping[str, int] = field(default_factory=dict)
    """Largest value of each parameter that sizes a list or a loop in the check (a count of
    kernels, a batch range): refused before anything is allocated."""

    def expected_answer(self, **params: Any) -> Any:
        """The right answer for these parameters (the task's defaults where not given)."""
        return self.expected({**self.params, **params})

    def describe(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        unit = f" [{self.unit}]" if self.unit else ""
        options = f" (one of {', '.join(self.choices)})" if self.choices else ""
        return f"{self.id}: {self.question}{unit}{options}\n  given: {given}"


@dataclass(frozen=True)
class CheckResult(ResultMixin):
    """Outcome of one check: ``correct`` is True only for a right answer.

    ``status`` is 'correct', 'wrong', 'unanswered' or 'invalid'; ``message`` says what to do.
    """

    task_id: str
    status: str
    message: str
    hint: str = ""
    answer: Any = field(default=None, repr=False)

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def __bool__(self) -> bool:
        return self.correct

    def text(self) -> str:
        mark = {"correct": "✓", "wrong": "✗", "unanswered": "…", "invalid": "✗"}[self.status]
        out = f"{mark} {self.task_id}: {self.message}"
        if self.hint:
            out += f"\n  Hint: {self.hint}"
        return out

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        colour = {
            "correct": ("#e6f4ea", "#1e7e34"),
            "wrong": ("#fdecea", "#b00020"),
            "invalid": ("#fdecea", "#b00020"),
            "unanswered": ("#f1f3f4", "#5f6368"),
        }[self.status]
        hint = f"<br><b>Hint:</b> {html.escape(self.hint)}" if self.hint else ""
        return (
            f'<div class="dlperf-check dlperf-check-{self.status}" style="background:{colour[0]};'
            f"border-left:4px solid {colour[1]};padding:6px 10px;margin:2px 0;"
            f'font-family:sans-serif">'
            f'<b style="color:{colour[1]}">{html.escape(self.text().splitlines()[0])}</b>'
            f"{hint}</div>"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "status": self.status,
            "correct": self.correct,
            "message": self.message,
            "hint": self.hint,
        }

    def assert_correct(self) -> CheckResult:
        """Raise AssertionError with the feedback unless the answer is right (for graders)."""
        if not self.correct:
            raise AssertionError(self.text())
        return self


# --------------------------------------------------------------------------------------------
# Reading an answer


class _Unusable(Exception):
    """The answer cannot be compared: the message says why, in one sentence."""


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, (list, tuple, set, dict)):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    if isinstance(value, ResultMixin):
        return f"a whole {type(value).__name__} result"
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer with about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(value)
    except Exception:
        text = ""
    return text if 0 < len(text) <= 40 else f"a {type(value).__name__}"


def _as_number(value: Any, unit: str) -> float:
    what = f"a number in {unit}" if unit else "a number"
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, ResultMixin):
        raise _Unusable(
            f"the answer must be {what}, not {_describe(value)}: pick the field you need, "
            "e.g. r.flops"
        )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _Unusable(f"the answer must be {what} (got {_describe(value)})")
    try:
        x = float(value)
    except OverflowError:  # an int with hundreds of digits
        raise _Unusable(f"the answer is too large to be {what} (got {_describe(value)})") from None
    if math.isnan(x) or math.isinf(x):
        raise _Unusable(f"the answer must be a finite number (got {x!r})")
    if x < 0:
        raise _Unusable(f"the answer must not be negative (got {_describe(value)})")
    return x


def _as_integer(value: Any, unit: str) -> int:
    x = _as_number(value, unit)
    if x != round(x):
        raise _Unusable(f"the answer must be a whole number (got {_describe(value)})")
    return round(x)


def _as_design(value: Any, unit: str) -> int:
    x = _as_integer(value, unit)
    if x < 1:
        raise _Unusable(f"the answer must be a positive whole number (got {_describe(value)})")
    return x


def _normalise_choice(value: Any) -> str:
    text = str(value).strip().lower().replace("_", " ").replace("-", " ")
    for suffix in (" bound", " limited"):
        if text.endswith(suffix):
            text = text[: -len(suffix)].strip()
    return text


def _as_choice(value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise _Unusable(
            f"the answer must be one of {_quote(choices)}, as text (got {_describe(value)})"
        )
    text = _normalise_choice(value)
    for c in choices:
        if text == _normalise_choice(c):
            return c
    raise _Unusable(f"the answer must be one of {_quote(choices)} (got {_describe(value)})")


def _quote(choices: tuple[str, ...]) -> str:
    return ", ".join(repr(c) for c in choices)


def _unanswered(value: Any) -> bool:
    return value is ... or value is None


# --------------------------------------------------------------------------------------------
# Comparing


def _matches(task: Task, answer: Any, value: Any) -> bool:
    if value is None:
        return False
    if task.kind == "choice":
        return _normalise_choice(answer) == _normalise_choice(value)
    if task.kind in ("integer", "design"):
        return int(answer) == round(float(value))
    return math.isclose(float(answer), float(value), rel_tol=task.rel_tol, abs_tol=0.0)


def _show(task: Task, value: Any) -> str:
    if task.kind == "choice":
        return repr(value)
    if task.kind == "integer":
        return f"{int(value)}"
    if task.unit == "fraction":
        return f"{float(value):.4g}"
    return format_quantity(float(value), task.unit)


CHECK_SECONDS = 5.0
"""Longest a check may compute before it gives up (parameters that make the core work hard)."""


def _in_worker(task: Task, answer: Any, overrides: Mapping[str, Any]) -> CheckResult:
    """``_evaluate`` off the main thread, where no signal can interrupt it: the computation
    runs in a daemon thread and the check answers after :data:`CHECK_SECONDS` whatever it does
    (the abandoned computation finishes on its own; the size caps keep it small)."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(_evaluate(task, answer, overrides))
        except BaseException as exc:  # handed back to the caller's thread
            box.append(exc)

    worker = threading.Thread(target=run, name="dlperf-check", daemon=True)
    worker.start()
    worker.join(CHECK_SECONDS)
    if not box:
        raise _TooSlow
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def evaluate(task: Task, answer: Any, overrides: Mapping[str, Any]) -> CheckResult:
    """Check ``answer`` for ``task`` with ``overrides`` applied to its parameters.

    Never raises and never runs longer than :data:`CHECK_SECONDS`: whatever goes wrong comes
    back as an 'invalid' :class:`CheckResult` with one sentence.
    """
    try:
        if not can_interrupt():
            return _in_worker(task, answer, overrides)
        with _time_limit(CHECK_SECONDS):
            return _evaluate(task, answer, overrides)
    except _TooSlow:
        message = (
            f"{task.id} cannot be checked with these parameters: the model took more than "
            f"{CHECK_SECONDS:g} s; try smaller values."
        )
    except MemoryError:
        message = f"{task.id} cannot be checked with these parameters: they need too much memory."
    except Exception as exc:  # a check must answer, whatever the answer or the parameters
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        message = f"{task.id} cannot be checked with these parameters ({reason.rstrip('.')})."
    return CheckResult(task.id, "invalid", message, answer=answer)


def _evaluate(task: Task, answer: Any, overrides: Mapping[str, Any]) -> CheckResult:
    unknown = sorted(set(overrides) - set(task.params))
    if unknown:
        return CheckResult(
            task.id,
            "invalid",
            f"{task.id} has no parameter {unknown[0]!r}; its parameters are "
            f"{_quote(tuple(task.params))}.",
            answer=answer,
        )
    try:
        overrides = _checked_overrides(task, overrides)
    except InvalidParameter as exc:
        return CheckResult(
            task.id,
            "invalid",
            f"{task.id} cannot be checked with these parameters: {_reason(exc)}.",
            answer=answer,
        )
    if _unanswered(answer):
        return CheckResult(
            task.id,
            "unanswered",
            "not answered yet: replace the ... with your answer and run the cell again.",
            answer=answer,
        )
    try:
        if task.kind == "choice":
            given: Any = _as_choice(answer, task.choices)
        elif task.kind == "integer":
            given = _as_integer(answer, task.unit)
        elif task.kind == "design":
            given = _as_design(answer, task.unit)
        else:
            given = _as_number(answer, task.unit)
    except _Unusable as exc:
        return CheckResult(task.id, "invalid", f"{exc}.", answer=answer)

    params = {**task.params, **overrides}
    try:
        expected = task.expected(params)
    except (ValueError, TypeError, KeyError, ArithmeticError) as exc:  # InvalidParameter too
        return CheckResult(
            task.id,
            "invalid",
            f"{task.id} cannot be checked with these parameters: {_reason(exc)}.",
            answer=answer,
        )
    if task.kind == "design":
        return _judge_design(task, given, params)
    if _matches(task, given, expected):
        note = task.explain(params) if task.explain else ""
        shown, exact = _show(task, given), _show(task, expected)
        if task.kind == "number" and shown != exact:
            # accepted within the tolerance but not equal as printed: say both, so a
            # learner does not read the kit's figure as a correction of theirs
            msg = f"correct: {shown} is within {task.rel_tol * 100:g} % of the kit's {exact}."
        else:
            msg = f"correct ({exact})."
        msg += f" {note}" if note else ""
        return CheckResult(task.id, "correct", msg, answer=answer)

    for mistake in task.mistakes:
        for value in _slipped(mistake, params):
            if not _matches(task, value, expected) and _matches(task, given, value):
                return CheckResult(task.id, "wrong", "not right yet.", mistake.hint, answer)
    if task.kind == "number":
        for factor, hint in UNIT_SLIPS.get(task.unit, ()):
            if _matches(task, given, float(expected) * factor):
                return CheckResult(task.id, "wrong", "not right yet.", hint, answer)
    if task.kind != "choice":
        direction = "too large" if float(given) > float(expected) else "too small"
        return CheckResult(task.id, "wrong", f"not right yet: {direction}.", task.hint, answer)
    return CheckResult(task.id, "wrong", "not right yet.", task.hint, answer)


MAX_OVERRIDE_ITEMS = 1000
"""Most items a list-valued override (an op chain) may hold."""


def _checked_overrides(task: Task, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The overrides as the values the task computes with, or InvalidParameter saying which
    one cannot stand in for its task parameter.

    An override must be the same kind of value as the task's default: a finite number for a
    number (an integer for an integer; never negative where the default is not), text for a
    name, a short list of names for a list. Sizes stay within :data:`core._validate.MAX_SIZE`
    and the task's own :attr:`Task.limits`, all checked before the model allocates anything.
    """
    return {
        name: _check_like(name, value, task.params[name], task.limits.get(name))
        for name, value in overrides.items()
    }


def _check_like(name: str, value: Any, default: Any, limit: int | None) -> Any:
    if isinstance(default, bool):
        return check_bool(name, value)
    if isinstance(default, numbers.Integral):
        return check_int(
            name,
            value,
            minimum=0 if default >= 0 else -MAX_SIZE,
            maximum=MAX_SIZE if limit is None else limit,
            allow_array=False,
        )
    elif isinstance(default, numbers.Real):
        number = check_number(name, value, minimum=0 if default >= 0 else None)
        return number if limit is None else check_number(name, number, maximum=limit)
    elif isinstance(default, str):
        if not isinstance(value, str) or len(value) > 200:
            raise InvalidParameter(
                f"'{name}' must be a name such as {default!r} (got {describe(value)})"
            )
    elif isinstance(default, (tuple, list)):
        if (
            not isinstance(value, (tuple, list, str))
            or (not isinstance(value, str) and len(value) > MAX_OVERRIDE_ITEMS)
            or len(value) > 100_000
        ):
            raise InvalidParameter(
                f"'{name}' must be a list of at most {MAX_OVERRIDE_ITEMS} items like "
                f"{default!r} (got {describe(value)})"
            )
    return value


def _judge_design(task: Task, given: int, params: dict[str, Any]) -> CheckResult:
    """A design is right when the task's validator finds nothing wrong with it; a wrong one
    gets the hint of the listed mistake it matches, else the validator's own sentence."""
    if task.validate is None:
        raise TypeError(f"design task {task.id} has no validator")
    try:
        verdict = task.validate(params, given)
    except (ValueError, TypeError, KeyError, ArithmeticError) as exc:  # InvalidParameter too
        return CheckResult(
            task.id,
            "invalid",
            f"the model cannot evaluate the design {given}: {_reason(exc)}.",
            answer=given,
        )
    # a validator returns '' (valid) or the broken rule, or (valid?, sentence)
    if isinstance(verdict, tuple):
        ok, sentence = verdict
        problem = "" if ok else (sentence or task.hint)
        if ok and sentence:
            msg = sentence if sentence.startswith("correct") else f"correct: {sentence}"
            return CheckResult(task.id, "correct", msg, answer=given)
    else:
        problem = verdict
    if not problem:
        note = task.explain(params) if task.explain else ""
        msg = f"correct: {given} is a valid design." + (f" {note}" if note else "")
        return CheckResult(task.id, "correct", msg, answer=given)
    for mistake in task.mistakes:
        if any(round(float(v)) == given for v in _slipped(mistake, params)):
            return CheckResult(task.id, "wrong", "not right yet.", mistake.hint, given)
    return CheckResult(task.id, "wrong", "not right yet.", problem or task.hint, given)


def _reason(exc: BaseException) -> str:
    """An exception's message as one short sentence body (no final full stop)."""
    return (" ".join(str(exc).split())[:200] or type(exc).__name__).rstrip(".")


def _slipped(mistake: Mistake, params: Params) -> list[Any]:
    """The answers ``mistake`` leads to (none when it does not apply to these parameters)."""
    try:
        slipped = mistake.value(params)
    except Exception:  # a mistake that does not apply to these parameters
        return []
    return list(slipped) if isinstance(slipped, (list, tuple)) else [slipped]


def first_design(
    validate: Callable[[Params, int], str], params: Params, candidates: Iterable[int], what: str
) -> int:
    """The first of ``candidates`` that ``validate`` accepts: a design task's ``expected``
    (one valid design, shown in the solution), found through the same rules the check uses."""
    for c in candidates:
        if not validate(params, c):
            return c
    raise ValueError(f"no {what} meets every rule of the task")
