"""Scoring a learner's prediction against the model's answer.

A prediction is a number (with a unit) or one of a few choices. The score says how far off
it was in a way a learner can act on: within a tolerance, a factor too high or too low, or a
number of orders of magnitude. Widgets (``widgets.Predict``) and exercises show these
scores; the answers themselves always come from other core calls.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ._validate import check_number, describe, plain_number
from .errors import InvalidParameter
from .results import ResultMixin

__all__ = ["PredictionScore", "Scoreboard", "parse_guess", "score_prediction", "scoreboard"]

_SUFFIXES = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}


def parse_guess(text: Any, name: str = "guess") -> float:
    """A typed guess as a number: ``1024``, ``1,024``, ``1e3``, ``12.5%`` (-> 12.5), ``3k``.

    Raises InvalidParameter (one sentence naming the field) for anything else, including
    NaN, infinities and text over 40 characters.
    """
    if isinstance(text, bool):
        raise InvalidParameter(f"'{name}' must be a finite number (got {describe(text)})")
    text = plain_number(text)  # a 0-d array, a numpy scalar or a Decimal is a number
    if isinstance(text, numbers.Real):
        try:
            value = float(text)
        except OverflowError:  # an int of hundreds of digits
            value = math.inf
    else:
        s = str(text).strip()
        shown = s if len(s) <= 40 else s[:37] + "..."
        if not s or len(s) > 40:
            raise InvalidParameter(f"'{name}' must be a finite number (got {describe(shown)})")
        s = s.replace(",", "").replace("_", "").rstrip("%").strip()
        scale = 1.0
        if s and s[-1].lower() in _SUFFIXES and not s.lower().endswith("e"):
            scale = _SUFFIXES[s[-1].lower()]
            s = s[:-1]
        try:
            value = float(s) * scale
        except ValueError:
            raise InvalidParameter(
                f"'{name}' must be a finite number (got {describe(shown)})"
            ) from None
    if not math.isfinite(value):
        raise InvalidParameter(f"'{name}' must be a finite number (got {describe(text)})")
    return value


@dataclass(frozen=True)
class PredictionScore(ResultMixin):
    """A guess beside the answer.

    ``relative_error`` = |guess - answer| / |answer| and ``orders_of_magnitude`` =
    log10(guess / answer) (None where they do not apply: choices, zero or mixed signs);
    ``correct`` is True within ``tolerance`` (or for the right choice); ``verdict`` says it in
    words.
    """

    question: str
    guess: Any
    answer: Any
    unit: str
    tolerance: float
    relative_error: float | None
    orders_of_magnitude: float | None
    correct: bool
    verdict: str

    def _title(self) -> str:
        return f"Prediction: {self.question}"


def _fmt(value: Any, unit: str) -> str:
    if isinstance(value, str):
        return value
    text = f"{value:.4g}"
    return f"{text} {unit}".strip()


def score_prediction(
    guess: Any,
    answer: Any,
    *,
    question: str = "",
    unit: str = "",
    tolerance: float = 0.1,
    choices: Sequence[str] | None = None,
) -> PredictionScore:
    """Score ``guess`` against ``answer`` (numbers, or one of ``choices``).

    >>> score_prediction(130, 124.1, unit="FLOP/B").verdict
    'within 10 % of 124.1 FLOP/B: well predicted'
    >>> score_prediction(1, 124.1).verdict
    '124x too low (2.1 orders of magnitude)'
    """
    tolerance = check_number("tolerance", tolerance, minimum=0, strict=True)
    for label, text in (("question", question), ("unit", unit)):
        if not isinstance(text, str) or len(text) > 1000:
            raise InvalidParameter(f"'{label}' must be text (got {describe(text)})")
    if choices is not None:
        if (
            not isinstance(choices, (list, tuple))
            or not 0 < len(choices) <= 100
            or not all(isinstance(c, str) for c in choices)
        ):
            raise InvalidParameter(
                f"'choices' must be a list of up to 100 names (got {describe(choices)})"
            )
        options = list(choices)
        if str(answer) not in options:
            raise InvalidParameter(
                f"'answer' must be one of the choices {options} (got {describe(answer)})"
            )
        if str(guess) not in options:
            raise InvalidParameter(f"'guess' must be one of {options} (got {describe(guess)})")
        right = str(guess) == str(answer)
        verdict = "right" if right else f"not quite: the answer is {answer}"
        return PredictionScore(
            question, str(guess), str(answer), unit, tolerance, None, None, right, verdict
        )
    g = parse_guess(guess)
    a = parse_guess(answer, "answer")
    try:
        rel = abs(g - a) / abs(a) if a != 0 else (0.0 if g == 0 else math.inf)
    except OverflowError:  # a subnormal answer
        rel = math.inf
    # log10 of each, not of the ratio: 1 / 1e-320 overflows a float
    same_sign = (g > 0 and a > 0) or (g < 0 and a < 0)
    orders = math.log10(abs(g)) - math.log10(abs(a)) if same_sign else None
    correct = rel <= tolerance
    if correct:
        verdict = f"within {tolerance:.0%} of {_fmt(a, unit)}: well predicted".replace("%", " %")
    elif orders is not None:
        side = "too high" if orders > 0 else "too low"
        factor = f"{10 ** abs(orders):.3g}" if abs(orders) < 300 else f"1e{abs(orders):.0f}"
        verdict = f"{factor}x {side}"
        if abs(orders) >= 1:
            verdict += f" ({abs(orders):.1f} orders of magnitude)"
    else:
        verdict = f"off by {rel:.0%}; the answer is {_fmt(a, unit)}".replace("%", " %")
    return PredictionScore(
        question,
        g,
        a,
        unit,
        tolerance,
        None if math.isinf(rel) else rel,
        orders,
        correct,
        verdict,
    )


@dataclass(frozen=True)
class Scoreboard(ResultMixin):
    """Every scored prediction of a session, with how many were right."""

    scores: tuple[PredictionScore, ...]
    answered: int
    correct: int
    median_orders_of_magnitude: float | None

    def _title(self) -> str:
        return f"Your predictions: {self.correct} of {self.answered} within tolerance"

    def _rows(self) -> list[tuple[str, str]]:
        rows = [
            (s.question[:60] or "?", f"{_fmt(s.guess, s.unit)}: {s.verdict}") for s in self.scores
        ]
        return rows or [("answered", "none yet")]


def scoreboard(scores: Iterable[PredictionScore]) -> Scoreboard:
    """Summarise scored predictions (the median is of |orders of magnitude| off)."""
    items = tuple(scores)
    offs = sorted(abs(s.orders_of_magnitude) for s in items if s.orders_of_magnitude is not None)
    median = None
    if offs:
        mid = len(offs) // 2
        median = offs[mid] if len(offs) % 2 else (offs[mid - 1] + offs[mid]) / 2
    return Scoreboard(items, len(items), sum(s.correct for s in items), median)
