"""Predict: the answer stays hidden (and uncomputed) until a guess is in; bad input shows
one inline message; the session scoreboard keeps first guesses; without a kernel the answer
is folded away in <details>."""

from __future__ import annotations

import pytest

import dlperf_widgets as dw
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.widgets import Predict


@pytest.fixture(autouse=True)
def _fresh_scoreboard():
    Predict.reset_scoreboard()
    yield
    Predict.reset_scoreboard()


def _ai():
    return dw.gemm(8192, 128, 8192, dtype="fp16", gpu="V100").arithmetic_intensity


def test_answer_is_hidden_until_a_guess_is_submitted(close_after):
    """Before a guess the answer function has not even run; after it, the core's 124.1 and
    how far off the guess was are shown."""
    calls = []

    def answer():
        calls.append(1)
        return _ai()

    w = Predict("Arithmetic intensity of 8192 x 128 x 8192 in FP16?", answer, unit="FLOP/B")
    close_after(w)
    assert calls == [] and w.reveal.value == ""
    w.entry.value = "100"
    w.submit()
    assert calls and "124.1 FLOP/B" in w.reveal.value and "too low" in w.reveal.value
    assert w.score is not None and not w.score.correct


def test_bad_guess_shows_one_message_and_reveals_nothing(close_after, error_count):
    """Text that is no number gives one inline error; the answer stays folded."""
    w = Predict("AI?", _ai, unit="FLOP/B")
    close_after(w)
    assert w.submit("a lot") is None
    assert error_count(w) == 1 and "'guess' must be a finite number" in w.error
    assert w.reveal.value == ""
    w.submit("124")
    assert w.error == "" and error_count(w) == 0 and w.score.correct


def test_scoreboard_keeps_the_first_guess_of_each_question(close_after):
    """A second guess on the same question is scored but the scoreboard keeps the first."""
    a = Predict("AI?", _ai)
    b = Predict(
        "Limiter on a V100?",
        lambda: dw.gemm(8192, 128, 8192, gpu="V100").limiter,
        choices=["math", "memory", "latency"],
    )
    close_after(a)
    close_after(b)
    a.submit("10")
    a.submit("124")
    b.entry.value = "memory"
    b.submit()
    board = Predict.scoreboard()
    assert (board.answered, board.correct) == (2, 1)
    assert board.scores[0].guess == 10


def test_answers_must_come_from_the_core():
    """A literal answer is refused: the widget takes a function that asks the core."""
    with pytest.raises(InvalidParameter, match="'answer' must be a function"):
        Predict("AI?", 124.1)
    with pytest.raises(InvalidParameter, match="'choices' must list at least two"):
        Predict("AI?", _ai, choices=["one"])


def test_without_a_kernel_the_answer_is_folded_away(close_after):
    """The saved-notebook view shows the question and a <details> element holding the
    answer, not the answer printed under the question."""
    w = Predict("AI?", _ai, unit="FLOP/B", explain="FLOPs over bytes.")
    close_after(w)
    bundle = w._repr_mimebundle_()
    page = bundle["text/html"]
    assert "<details>" in page and page.index("<details>") < page.index("124.1 FLOP/B")
    assert "Predict:" in page


def test_close_releases_every_part():
    """close() closes the entry, the button and the outputs; a closed widget shows nothing."""
    w = Predict("AI?", _ai)
    parts = [w.entry, w.button, w.message, w.reveal]
    w.close()
    assert w._repr_mimebundle_ is None  # ipywidgets removes the view of a closed widget
    assert all(p.comm is None for p in parts)
