"""Widget tests run headless: matplotlib's Agg backend, no kernel (ipywidgets' dummy comm)."""

from __future__ import annotations

import os
import re

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")


def _error_count(widget) -> int:
    return len(re.findall(r"class='dlperf-error'", widget.message.value))


def _observer_count(control, widget) -> int:
    handlers = control._trait_notifiers.get("value", {}).get("change", [])
    return sum(getattr(h, "__self__", None) is widget for h in handlers)


@pytest.fixture
def error_count():
    """How many elements with CSS class dlperf-error a widget shows."""
    return _error_count


@pytest.fixture
def observer_count():
    """Observers that ``widget`` placed on a control's 'value' (ipywidgets adds its own)."""
    return _observer_count
