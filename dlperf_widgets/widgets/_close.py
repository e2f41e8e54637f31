"""Closing a widget and everything it holds (ipywidgets closes only the widget itself)."""

from __future__ import annotations

from typing import Any

from .._optional import require

widgets = require("ipywidgets", "widgets")

__all__ = ["close_tree", "close_value"]


def close_tree(w: Any, seen: set[int] | None = None) -> None:
    """Close ``w`` and every widget its traits hold (children, layout, style ...), once each.

    ``Widget.close()`` closes only the widget itself; its Layout, Style and children stay
    registered in the kernel (12 to 46 widgets per closed explorer).
    """
    seen = set() if seen is None else seen
    if id(w) in seen or not isinstance(w, widgets.Widget):
        return
    seen.add(id(w))
    for name in w.keys:
        close_value(getattr(w, name, None), seen)
    w.close()


def close_value(value: Any, seen: set[int]) -> None:
    if isinstance(value, widgets.Widget):
        close_tree(value, seen)
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, widgets.Widget):
                close_tree(item, seen)
