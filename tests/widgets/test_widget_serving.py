"""Guards ServingExplorer and TraceExplorer: their numbers are the core's, bad input shows one
inline message and keeps the last good result, and the findings table lists the ranked fixes."""

from __future__ import annotations

import pytest

from dlperf_widgets.core.serving import kv_budget, serving_slo
from dlperf_widgets.widgets import ServingExplorer, TraceExplorer


def test_serving_explorer_shows_the_cores_best_batch(close_after):
    """Moving the TPOT SLO changes the best batch exactly as serving_slo() says."""
    w = ServingExplorer(tpot_ms=50)
    close_after(w)
    w.controls["tpot_ms"].value = "40"
    slo, kv = w.result
    assert slo.best_batch == serving_slo("llama-2-7b", "A100", prompt_len=1024,
                                         tpot_slo_s=0.04).best_batch  # fmt: skip
    assert kv.sequences_paged == kv_budget("llama-2-7b", "A100", prompt_len=1024,
                                           output_len=256).sequences_paged  # fmt: skip
    assert f">{slo.best_batch}</b>" in w.output.value


@pytest.mark.parametrize(("control", "bad"), [("chunk", "0"), ("ttft_ms", "-5"),
                                              ("block_size", "1e9"), ("prompt_len", "x")])  # fmt: skip
def test_serving_explorer_rejects_bad_input_and_keeps_its_state(control, bad, close_after,
                                                                error_count):  # fmt: skip
    """A bad entry shows one dlperf-error naming the field; the last good result stays."""
    w = ServingExplorer()
    close_after(w)
    before = w.result
    w.controls[control].value = bad
    assert error_count(w) == 1 and f"'{control}'" in w.error
    assert w.result is before


def test_trace_explorer_lists_the_ranked_fixes(close_after, error_count):
    """The AlexNet trace's table starts with pinning memory; an unknown path gives one
    message and keeps the report; another shipped trace switches the timeline."""
    w = TraceExplorer()
    close_after(w)
    assert "pin host memory" in w.output.value.split("</tr>")[1]
    first = w.result
    w.controls["trace"].value = "no/such/trace.json"
    assert error_count(w) == 1 and w.result is first
    w.controls["trace"].value = "distributed_recsys_rank0"
    assert error_count(w) == 0 and w.result.communication_s > 0


def test_trace_explorer_redraws_a_trace_only_the_first_time(close_after):
    """Coming back to a drawn trace shows that trace's own PNG and axes (title names it)
    without another full draw; only the current trace's axes is visible."""
    w = TraceExplorer("a100_alexnet_forward")
    close_after(w)
    first_png = w.view.image.value
    w.controls["trace"].value = "distributed_recsys_rank0"
    assert w.view.image.value != first_png
    draws = w.view.full_draws
    w.controls["trace"].value = "a100_alexnet_forward"
    assert w.view.full_draws == draws and w.view.image.value == first_png
    visible = [ax for ax in w.view.figure.axes if ax.get_visible()]
    assert visible == [w.view.ax]
    assert w.view.ax.get_title().startswith(w.result.name)


def test_serving_explorer_small_moves_keep_the_axes(close_after):
    """A prompt length that keeps the curves inside the same decades moves only the curves
    (a blit), and the plotted TPOT line is the core's sweep."""
    w = ServingExplorer()
    close_after(w)
    full = w.view.full_draws
    w.controls["prompt_len"].value = "960"
    assert w.view.full_draws == full
    slo, _ = w.result
    assert list(w._artists.tpot.get_ydata()) == list(slo.tpot_s * 1e3)
