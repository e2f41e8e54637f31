"""Small displayable objects shared by the magics (``%dlperf`` and ``%%dlperf_time``)."""

from __future__ import annotations

import html

__all__ = ["Html", "error_html"]


class Html:
    """A displayable object with both a text and an HTML form."""

    def __init__(self, text: str, markup: str) -> None:
        self.text = text
        self.markup = markup

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return self.markup


def error_html(message: str) -> Html:
    return Html(
        f"error: {message}",
        f"<div class='dlperf-error' style='color:#c0392b'>error: {html.escape(message)}</div>",
    )
