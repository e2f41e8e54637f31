"""Predict: commit to a number (or a choice) before the kit reveals its answer.

The question shows with an input box and a button. Until the learner submits a guess,
the answer is not computed, let alone shown; then the widget asks the core (``answer`` is a
function that calls it), shows the answer with how far off the guess was and a one-line
explanation, and records the score for the session's :func:`Predict.scoreboard`. A notebook
opened without a kernel shows the question with the answer folded away in a ``<details>``
element.
"""

from __future__ import annotations

import html
import numbers
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from .._optional import require
from ..core._validate import describe, plain_number
from ..core.errors import DlperfError, InvalidParameter
from ..core.predict import (
    PredictionScore,
    Scoreboard,
    parse_guess,
    score_prediction,
    scoreboard,
)
from ._base import _exiting
from ._close import close_tree, close_value

__all__ = ["Predict"]

widgets = require("ipywidgets", "widgets")

_ERROR_STYLE = "color:#D55E00;font-weight:600;margin:2px 0"


def _show(value: Any, unit: str) -> str:
    if isinstance(value, str):
        return value
    return f"{value:.4g} {unit}".strip()


class Predict(widgets.VBox):  # type: ignore[misc]
    """Ask a question, take the learner's guess, then reveal the core's answer.

    ``answer`` is a function of no arguments that returns the answer from a core call
    (``lambda: dw.gemm(8192, 128, 8192).arithmetic_intensity``), never a literal: it runs
    only once a guess is in. ``unit`` labels numbers; ``choices`` turns the box into a
    list of options; ``tolerance`` is the relative error counted as right; ``explain`` is
    the line shown with the answer.
    """

    _session: ClassVar[list[PredictionScore]] = []

    def __init__(
        self,
        question: str,
        answer: Callable[[], Any],
        *,
        unit: str = "",
        choices: Sequence[str] | None = None,
        tolerance: float = 0.1,
        explain: str = "",
    ) -> None:
        # Every argument is checked before any widget exists: a refused construction leaves
        # nothing registered behind it.
        if not isinstance(question, str) or not question.strip():
            raise InvalidParameter(
                f"'question' must be a non-empty text (got {describe(question)})"
            )
        if not callable(answer):
            raise InvalidParameter(
                "'answer' must be a function that asks the core, e.g. "
                f"lambda: dw.gemm(...).arithmetic_intensity (got {describe(answer)})"
            )
        if choices is not None and (isinstance(choices, str) or len(choices) < 2):
            raise InvalidParameter(
                f"'choices' must list at least two options (got {describe(choices)})"
            )
        for label, text in (("unit", unit), ("explain", explain)):
            if not isinstance(text, str):
                raise InvalidParameter(f"'{label}' must be text (got {describe(text)})")
        score_prediction(1, 1, tolerance=tolerance)  # validates the tolerance
        super().__init__()
        self.question = question
        self.unit = unit
        self.choices = None if choices is None else [str(c) for c in choices]
        self.tolerance = tolerance
        self.explain = explain
        self._answer = answer
        self.score: PredictionScore | None = None
        self._error = ""
        prompt = widgets.HTML(value=f"<b>Predict:</b> {html.escape(question)}")
        if self.choices is None:
            self.entry = widgets.Text(
                placeholder=f"your guess{f' ({unit})' if unit else ''}",
                continuous_update=False,
                layout=widgets.Layout(width="220px"),
            )
        else:
            self.entry = widgets.Dropdown(
                options=["(choose)", *self.choices],
                value="(choose)",
                layout=widgets.Layout(width="260px"),
            )
        self.button = widgets.Button(description="Reveal", button_style="info")
        self.button.on_click(lambda _: self.submit())
        if self.choices is None:  # Enter (or leaving the box) submits the guess
            self.entry.observe(self._typed, names="value")
        self.message = widgets.HTML(value="")
        self.reveal = widgets.HTML(value="")
        self.reveal.add_class("dlperf-predict-answer")
        self.children = (prompt, widgets.HBox([self.entry, self.button]), self.message, self.reveal)
        self.add_class("dlperf-widget")
        self.add_class("dlperf-predict")

    # -- behaviour ---------------------------------------------------------------------
    def _typed(self, change: dict[str, Any]) -> None:
        if str(change["new"]).strip():
            self.submit()

    @property
    def error(self) -> str:
        """The inline message now shown ('' when the last guess was good)."""
        return self._error

    def _set_error(self, text: str) -> None:
        self._error = text
        self.message.value = (
            f"<div class='dlperf-error' role='alert' style='{_ERROR_STYLE}'>{html.escape(text)}</div>"
            if text
            else ""
        )

    def submit(self, guess: Any = None) -> PredictionScore | None:
        """Score ``guess`` (default: what the box holds) and reveal the answer.

        Bad input shows one inline message and reveals nothing. The first good guess is the
        one the session's scoreboard keeps; later ones are scored but not recorded.
        """
        value = self.entry.value if guess is None else guess
        if self.choices is not None and value == "(choose)":
            self._set_error("'guess' must be one of the options (got nothing chosen yet)")
            return None
        try:
            answer = self._ask()
            score = score_prediction(
                value,
                answer,
                question=self.question,
                unit=self.unit,
                tolerance=self.tolerance,
                choices=self.choices,
            )
        except DlperfError as exc:
            self._set_error(str(exc))
            return None
        self._set_error("")
        first = self.score is None
        self.score = score
        if first:
            Predict._session.append(score)
        self.reveal.value = self._answer_html(score)
        return score

    def _ask(self) -> Any:
        """The answer function's value; its failure is the notebook's, said as one sentence."""
        try:
            answer = self._answer()
        except DlperfError:
            raise
        except Exception as exc:  # the answer function is the notebook author's code
            text = " ".join(str(exc).split())[:150]
            raise InvalidParameter(
                f"'answer' must be a function that returns the kit's answer; it raised "
                f"{type(exc).__name__}" + (f": {text}" if text else "")
            ) from None
        if self.choices is None:
            answer = plain_number(answer)
            if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
                raise InvalidParameter(
                    f"'answer' must return a number, e.g. a field of a result such as "
                    f"r.arithmetic_intensity (got {describe(answer)})"
                )
            return parse_guess(answer, "answer")  # finite, as a float
        return answer

    def _answer_html(self, score: PredictionScore) -> str:
        mark = "dlperf-right" if score.correct else "dlperf-off"
        explain = f"<div>{html.escape(self.explain)}</div>" if self.explain else ""
        return (
            f"<div class='{mark}'>Your guess: {html.escape(_show(score.guess, self.unit))}. "
            f"The kit's answer: <b>{html.escape(_show(score.answer, self.unit))}</b> "
            f"({html.escape(score.verdict)}).</div>{explain}"
        )

    # -- the session -------------------------------------------------------------------
    @classmethod
    def scoreboard(cls) -> Scoreboard:
        """Every first guess of this session (kernel), scored."""
        return scoreboard(cls._session)

    @classmethod
    def reset_scoreboard(cls) -> None:
        """Forget this session's guesses."""
        cls._session.clear()

    # -- without a kernel ---------------------------------------------------------------
    def _static_html(self) -> str:
        try:
            answer = _show(self._ask(), self.unit)
        except DlperfError as exc:
            answer = f"(the kit could not compute it: {exc})"
        explain = f"<p>{html.escape(self.explain)}</p>" if self.explain else ""
        return (
            "<div class='dlperf-predict-static'>"
            f"<p><b>Predict:</b> {html.escape(self.question)}</p>"
            "<details><summary>Write your guess down, then click to reveal the answer"
            f"</summary><p>The kit's answer: <b>{html.escape(answer)}</b></p>{explain}"
            "</details></div>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        """The live widget plus the folded-answer HTML for viewers without a kernel."""
        data = super()._repr_mimebundle_(**kwargs)
        if data is None:
            return None
        data = dict(data)
        data["text/html"] = self._static_html()
        return data

    def close(self) -> None:
        """Close the widget and every part of it (children, layouts, styles); its score
        leaves the session's scoreboard with it."""
        if _exiting():  # Widget.__del__ at interpreter exit
            return
        if not hasattr(self, "entry"):  # refused before it was built: nothing to release
            super().close()
            return
        mine = getattr(self, "score", None)
        if mine is not None:
            Predict._session[:] = [s for s in Predict._session if s is not mine]
        if self.choices is None:
            try:
                self.entry.unobserve(self._typed, names="value")
            except ValueError:  # already closed
                pass
        seen = {id(self)}
        for w in (self.entry, self.button, self.message, self.reveal):
            close_tree(w, seen)
        for name in self.keys:
            close_value(getattr(self, name, None), seen)
        super().close()
