"""Scoring a learner's prediction (core/predict.py): parsing typed guesses, relative error,
orders of magnitude, choices, the scoreboard and bad input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.predict import parse_guess, score_prediction, scoreboard


@pytest.mark.parametrize(
    ("text", "value"),
    [("1024", 1024), ("1,024", 1024), ("1e3", 1000), ("12.5%", 12.5), ("3k", 3000), (" 2.5 ", 2.5)],
)
def test_typed_guesses_parse(text, value):
    """The forms a learner types: separators, exponents, a percent sign, k/M/G/T suffixes."""
    assert parse_guess(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "fast", "nan", "inf", "1e400", True, "9" * 50])
def test_bad_guesses_give_one_sentence(text):
    """Garbage, non-finite numbers and very long text are refused with the field's name."""
    with pytest.raises(
        InvalidParameter, match=r"^'guess' must be a finite number \(got .{1,60}\)$"
    ):
        parse_guess(text)


def test_close_guess_is_right_and_far_guess_says_how_far():
    """124.1 FLOP/B (R02): 130 is within 10 %; 1 is two orders of magnitude too low; 500 is
    about 4x too high."""
    close = score_prediction(130, 124.1, unit="FLOP/B")
    assert close.correct and close.relative_error == pytest.approx(5.9 / 124.1)
    low = score_prediction(1, 124.1)
    assert not low.correct and low.orders_of_magnitude == pytest.approx(math.log10(1 / 124.1))
    assert "too low" in low.verdict and "2.1 orders of magnitude" in low.verdict
    high = score_prediction(500, 124.1)
    assert high.verdict == "4.03x too high"


def test_choices_are_right_or_not():
    """A choice question accepts only its options and scores the right one."""
    right = score_prediction("memory", "memory", choices=["math", "memory", "latency"])
    assert right.correct and right.verdict == "right"
    wrong = score_prediction("math", "memory", choices=["math", "memory", "latency"])
    assert not wrong.correct and "memory" in wrong.verdict
    with pytest.raises(InvalidParameter, match="'guess' must be one of"):
        score_prediction("fast", "memory", choices=["math", "memory"])


def test_scoreboard_counts_and_medians():
    """The scoreboard counts right answers and the median distance in orders of magnitude."""
    scores = [score_prediction(g, 100) for g in (105, 10, 1000)]
    board = scoreboard(scores)
    assert (board.answered, board.correct) == (3, 1)
    assert board.median_orders_of_magnitude == pytest.approx(1.0)
    assert scoreboard([]).median_orders_of_magnitude is None


@given(st.floats(1e-9, 1e12), st.floats(1e-9, 1e12))
def test_relative_error_and_orders_agree(guess, answer):
    """Invariant: correct iff relative error <= tolerance; orders = log10(guess / answer)."""
    s = score_prediction(guess, answer)
    assert s.correct == (s.relative_error <= 0.1)
    assert s.orders_of_magnitude == pytest.approx(math.log10(guess / answer))
