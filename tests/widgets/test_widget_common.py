"""What every widget promises: a result, a static picture, one observer per control, no threads."""

from __future__ import annotations

import base64
import threading

import pytest

import dlperf_widgets.widgets as W
from dlperf_widgets.widgets._base import Explorer

# The explorers (controls -> core call -> figure); Predict, a question box, has its own tests.
ALL = sorted(n for n in W.__all__ if issubclass(getattr(W, n), Explorer))


@pytest.mark.parametrize("name", ALL)
def test_defaults_render_a_result_and_a_static_view(name, close_after, error_count, observer_count):
    """Default construction: a result, no error, a PNG + HTML fallback, one observer each."""
    threads = threading.active_count()
    w = getattr(W, name)()
    close_after(w)
    assert w.result is not None
    assert error_count(w) == 0
    data = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert base64.b64decode(data["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert data["text/html"].startswith("<div class='dlperf-widget-static'")
    assert w.output.value in data["text/html"]
    for control in w.controls.values():
        assert observer_count(control, w) == 1
    assert threading.active_count() == threads


@pytest.mark.parametrize("name", ALL)
def test_close_releases_the_widget(name):
    """close() closes the controls and the figure; a closed widget displays nothing."""
    w = getattr(W, name)()
    controls = list(w.controls.values())
    w.close()
    assert w._repr_mimebundle_ is None  # ipywidgets removes the view of a closed widget
    assert all(c.comm is None for c in controls)


def test_package_names_resolve():
    """Every widget name the package maps lazily is exported by dlperf_widgets.widgets."""
    import dlperf_widgets

    for name in W.__all__:
        assert getattr(dlperf_widgets, name) is getattr(W, name)
