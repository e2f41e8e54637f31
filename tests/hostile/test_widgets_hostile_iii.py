"""New widgets under hostile input: Predict, constructors, op chains, and exit."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

from hostile_support import ROOT
from ipywidgets.widgets.widget import _instances

from dlperf_widgets import widgets as ww
from dlperf_widgets.core.errors import DlperfError, InvalidParameter
from dlperf_widgets.core.gemm import gemm


@pytest.fixture
def predict():
    made = []

    def make(*args, **kwargs):
        w = ww.Predict(*args, **kwargs)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


@pytest.mark.parametrize("guess", ["1e-320", 1e-320, "1e308", 10**400, "nan", None, "x" * 100])
def test_any_guess_is_a_verdict_or_an_inline_message(predict, guess):
    """A guess of 1e-320 raised OverflowError with no inline message."""
    w = predict("AI?", lambda: 124.1)
    score = w.submit(guess)
    assert (score is None) == bool(w.error)
    assert "\n" not in w.error and len(w.error) < 300


def _boom():
    raise ZeroDivisionError("the notebook's bug")


@pytest.mark.parametrize(
    "answer",
    [_boom, lambda: None, lambda: gemm(64, 64, 64), lambda: 10**400, lambda: "text", lambda: [1]],
    ids=["raises", "none", "result", "huge", "text", "list"],
)
def test_a_broken_answer_function_is_an_inline_message(predict, answer):
    """An answer function that raises, returns None, a result object or 10**400 broke the
    widget (and its no-kernel HTML)."""
    w = predict("AI?", answer)
    assert w.submit("3") is None
    assert w.error.startswith("'answer'") and len(w.error) < 300
    assert "could not compute" in w._static_html()


def test_explain_must_be_text():
    """explain=12345 was accepted and raised at submit."""
    before = len(_instances)
    with pytest.raises(InvalidParameter, match=r"^'explain'"):
        ww.Predict("AI?", lambda: 1.0, explain=12345)
    gc.collect()
    assert len(_instances) == before


def test_closed_predictions_leave_the_scoreboard():
    """The session kept every score of every widget ever created, closed ones included."""
    ww.Predict.reset_scoreboard()
    widgets = [ww.Predict(f"q{i}?", lambda: 1.0) for i in range(5)]
    for w in widgets:
        w.submit("1")
    assert ww.Predict.scoreboard().answered == 5
    for w in widgets[:4]:
        w.close()
    assert ww.Predict.scoreboard().answered == 1
    widgets[4].close()
    ww.Predict.reset_scoreboard()


@pytest.mark.parametrize(
    "make",
    [
        lambda: ww.FusionExplorer(dtype="FP16"),
        lambda: ww.Fp8ScalingExplorer(format="E5M2"),
        lambda: ww.StepTimeCalculator(tensor_parallel=32, gpus=64),
        lambda: ww.FusionExplorer(ops=["bias", "gelu"]),
    ],
    ids=["fusion-FP16", "fp8-E5M2", "step-tp32", "fusion-list"],
)
def test_values_the_core_accepts_build_the_widget(make):
    """These raised traitlets.TraitError: the Dropdowns could not hold the core's spellings."""
    w = make()
    try:
        assert w.error == ""
    finally:
        w.close()


@pytest.mark.parametrize(
    "make",
    [
        lambda: ww.FusionExplorer(gpu="no such GPU"),
        lambda: ww.FusionExplorer(dtype="fp7"),
        lambda: ww.StepTimeCalculator(gpus=12, tensor_parallel=8),
        lambda: ww.Fp8ScalingExplorer(format="fp16"),
        lambda: ww.Predict("q?", lambda: 1.0, unit=3),
    ],
    ids=["fusion-gpu", "fusion-dtype", "step", "fp8", "predict"],
)
def test_failed_constructions_leave_nothing_registered(make):
    """1,000 failed FusionExplorers left 14,000 widgets registered."""
    gc.collect()
    before = len(_instances)
    for _ in range(20):
        with pytest.raises(DlperfError):
            make()
    gc.collect()
    assert len(_instances) == before


def test_widgets_alive_at_exit_print_nothing():
    """Any widget alive at exit printed 'Exception ignored in Widget.__del__' (a traceback)."""
    code = (
        "from dlperf_widgets import widgets as ww\n"
        "keep = [ww.FusionExplorer(), ww.StepTimeCalculator(), ww.GemmExplorer()]\n"
        "keep.append(ww.Predict('q?', lambda: 1.0))\n"
        "try:\n    ww.FusionExplorer(dtype='nope')\nexcept Exception:\n    pass\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr[-1500:]


def test_a_long_op_chain_is_refused_at_once():
    """20,000 ops blocked the widget 26 s (300,000 ran past 60 s)."""
    w = ww.FusionExplorer()
    try:
        good = w.result
        for count in (20_000, 300_000):
            start = time.perf_counter()
            w.controls["ops"].value = ", ".join(["gelu"] * count)
            assert time.perf_counter() - start < 0.5
            assert w.error.startswith("'ops'") and w.result is good
    finally:
        w.close()


def test_the_magic_sees_a_long_line_without_expanding_it():
    """%dlperf fuse with a 140 KB line took 47 s, mostly IPython expanding variables."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "dlperf_widgets")
    line = "fuse " + ",".join(["gelu"] * 20_000) + " --elements 1024"
    start = time.perf_counter()
    shown = shell.run_line_magic("dlperf", line)
    assert time.perf_counter() - start < 2
    assert "'ops'" in repr(shown)


def _spellings():
    """(widget, parameter, value): each choice's default in capitals, a spelling the core accepts."""
    choices = {"dtype", "optimizer", "precision", "checkpointing", "recipe", "preset", "schedule"}
    import inspect

    found = []
    for name in ww.__all__:
        cls = getattr(ww, name)
        if name == "Predict":
            continue
        for p in inspect.signature(cls.__init__).parameters.values():
            if p.name in choices and isinstance(p.default, str) and p.default:
                found.append((cls, p.name, p.default.upper()))
    return found


@pytest.mark.parametrize(
    ("cls", "name", "value"), _spellings(), ids=lambda v: getattr(v, "__name__", str(v))
)
def test_every_constructor_takes_the_cores_spellings(cls, name, value):
    """Dropdowns refused 'FP16', 'ADAMW' or ' current ' with traitlets.TraitError (or a
    KeyError for a preset) although the core accepts them."""
    try:
        w = cls(**{name: value})
    except DlperfError as exc:  # refused as the kit refuses it, never as traitlets does
        assert "offers" not in str(exc) and "\n" not in str(exc)
        return
    w.close()
