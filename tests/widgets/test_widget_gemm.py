"""GemmExplorer: controls drive the core's gemm(), bad input stays inline, output is static-safe."""

from __future__ import annotations

import base64
import re
import threading

import ipywidgets as widgets
import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gemm import gemm
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.widgets import GemmExplorer

V100 = gpu("V100").name


def _ai_span(w: GemmExplorer) -> str:
    match = re.search(r"<span class='dlperf-ai'>([^<]*)</span>", w.output.value)
    assert match, w.output.value
    return match.group(1)


def test_controls_follow_the_browser_contract(close_after):
    """The browser tests find M, N, K sliders, dtype and GPU dropdowns and a 'tile' text box."""
    w = GemmExplorer(gpu="V100", dtype="fp16")
    close_after(w)
    by_label = {c.description: c for c in w.controls.values()}
    for name in ("M", "N", "K"):
        assert isinstance(by_label[name], widgets.IntSlider)
    assert isinstance(by_label["dtype"], widgets.Dropdown)
    assert isinstance(by_label["GPU"], (widgets.Dropdown, widgets.Text))
    assert isinstance(by_label["tile"], widgets.Text)


def test_published_intensities_124_and_2730(close_after):
    """NVIDIA's slides: 8192x128x8192 FP16 has AI 124.1 (memory-bound on V100), 8192^3 2730."""
    w = GemmExplorer(m=8192, n=128, k=8192, dtype="fp16", gpu="V100")
    close_after(w)
    assert _ai_span(w) == "124.1"
    assert w.result.limiter == "memory"
    w.controls["n"].value = 8192
    # 2 * 8192^3 / (3 * 8192^2 * 2 bytes) = 8192 / 3
    assert float(_ai_span(w)) == pytest.approx(8192 / 3, abs=0.05)
    assert w.result.limiter == "math"
    assert "math-bound" in w.output.value


@pytest.mark.parametrize(
    ("m", "n", "k", "dtype", "gpu_name", "tile"),
    [
        (4097, 1000, 4095, "fp16", "V100", "auto"),
        (512, 520, 1024, "bf16", "A100", "128x128"),
        (1, 1, 1, "fp32", "T4", "auto"),
        (12288, 4096, 3072, "tf32", "H100", "256x128"),
    ],
)
def test_result_is_the_cores_answer(close_after, m, n, k, dtype, gpu_name, tile):
    """Whatever the controls say, .result equals gemm() with the same arguments."""
    w = GemmExplorer(gpu=gpu_name)
    close_after(w)
    c = w.controls
    c["m"].value, c["n"].value, c["k"].value = m, n, k
    c["dtype"].value = dtype
    c["tile"].value = tile
    expected = gemm(m, n, k, dtype=dtype, gpu=gpu_name, tile=tile)
    assert w.result.to_dict() == expected.to_dict()
    assert _ai_span(w) == f"{expected.arithmetic_intensity:.1f}"
    assert w.error == ""


def test_gpu_change_offers_only_its_dtypes(close_after):
    """Picking a GPU lists the dtypes it runs and keeps the current one when it can."""
    w = GemmExplorer(gpu="A100", dtype="bf16")
    close_after(w)
    w.controls["gpu"].value = V100
    assert tuple(w.controls["dtype"].options) == tuple(gpu("V100").dtypes())
    assert "bf16" not in w.controls["dtype"].options
    assert w.result.dtype == "fp16"  # bf16 is gone; fp16 is the fallback
    assert w.result.gpu == V100
    w.controls["gpu"].value = gpu("A100").name
    assert w.result.dtype == "fp16"


@pytest.mark.parametrize("text", ["abc", "-3", "1e12", "0x5", "256x"])
def test_bad_tile_text_shows_one_inline_error_and_keeps_the_result(close_after, error_count, text):
    """Typing nonsense into 'tile' names the field and the rule once; .result stays."""
    w = GemmExplorer(gpu="V100")
    close_after(w)
    before = w.result
    html_before = w.output.value
    w.controls["tile"].value = text  # must not raise into the cell
    assert error_count(w) == 1
    assert "tile" in w.error and "HEIGHTxWIDTH" in w.error and repr(text) in w.error
    assert w.result is before
    assert w.output.value == html_before
    w.controls["tile"].value = "128x128"
    assert error_count(w) == 0
    assert w.result.tile == "128x128"


def test_constructor_rejects_bad_arguments():
    """Bad keyword arguments raise the kit's InvalidParameter with the field named."""
    with pytest.raises(InvalidParameter, match="'M' must be"):
        GemmExplorer(m=-3)
    with pytest.raises(InvalidParameter, match="'dtype'"):
        GemmExplorer(dtype="fp7")
    with pytest.raises(InvalidParameter, match="'M' must be"):
        GemmExplorer(m=10**12)


def test_each_control_has_exactly_one_observer(close_after, observer_count):
    """Re-running a cell (a second widget) or re-wiring does not duplicate observers."""
    w1 = GemmExplorer()
    w2 = GemmExplorer()
    close_after(w1)
    close_after(w2)
    w1._observe()
    w1._observe()
    for w in (w1, w2):
        for c in w.controls.values():
            assert observer_count(c, w) == 1
            assert observer_count(c, w2 if w is w1 else w1) == 0
    calls = []
    original = w1._compute
    w1._compute = lambda: calls.append(1) or original()
    w1.controls["k"].value = 1234
    assert len(calls) == 1


def test_no_threads_and_point_moves_are_blits(close_after):
    """Updates run synchronously; moving M/N/K redraws the point only, not the axes."""
    threads = threading.active_count()
    w = GemmExplorer(gpu="V100")
    close_after(w)
    full = w.view.full_draws
    for n in (256, 512, 1024, 2048):
        w.controls["n"].value = n
    w.controls["gpu"].value = gpu("A100").name
    assert w.view.full_draws == full
    assert w.view.blits >= 5
    assert threading.active_count() == threads


def test_image_changes_with_the_point(close_after):
    """The Image widget's PNG is re-encoded after an update."""
    w = GemmExplorer(gpu="V100")
    close_after(w)
    first = w.view.image.value
    w.controls["n"].value = 8192
    assert w.view.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert w.view.image.value != first


def test_mimebundle_has_a_static_fallback(close_after):
    """A saved notebook viewed without a kernel shows a PNG and the numbers."""
    w = GemmExplorer(gpu="V100")
    close_after(w)
    data = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert "text/plain" in data
    assert base64.b64decode(data["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "data:image/png;base64," in data["text/html"]
    assert "<span class='dlperf-ai'>124.1</span>" in data["text/html"]
    snap = w.snapshot()
    assert "dlperf-ai" in snap._repr_html_()
    assert snap._repr_png_()[:4] == b"\x89PNG"


def test_predicted_time_shows_its_band(close_after):
    """The summary gives the predicted time with its band and basis (the A100 has no shipped
    trace: the widest band, said so), and the point carries its error bar."""
    from dlperf_widgets.core.gemm import gemm

    w = GemmExplorer(m=4096, n=4096, k=4096, dtype="fp16", gpu="A100")
    close_after(w)
    r = gemm(4096, 4096, 4096, dtype="fp16", gpu="A100")
    assert "widest band" in w.output.value and "no shipped trace" in w.output.value
    (_x0, y0), (_x1, y1) = w._artists.errorbars.get_segments()[0]
    assert y0 == pytest.approx(r.flops / r.time_high_s)
    assert y1 == pytest.approx(r.flops / r.time_low_s)


def test_timing_context_dropdown_changes_only_the_fixed_cost(close_after):
    """The 'timing' dropdown offers the core's contexts; choosing 'eager' gives the core's
    eager prediction (the host launch added) and the table says which context it is."""
    w = GemmExplorer(m=256, n=256, k=256, dtype="bf16", gpu="H100")
    close_after(w)
    dd = w.controls["context"]
    assert list(dd.options) == ["kernel", "back-to-back", "eager"] and dd.value == "kernel"
    dd.value = "eager"
    expected = gemm(256, 256, 256, dtype="bf16", gpu="H100", context="eager")
    assert w.result.predicted_time_s == expected.predicted_time_s
    assert (
        w.result.predicted_time_s > gemm(256, 256, 256, dtype="bf16", gpu="H100").predicted_time_s
    )
    assert "eager" in w.output.value


def test_cache_dropdown_reads_a_warm_working_set_from_l2(close_after):
    """The 'L2 cache' dropdown offers cold (the default: what the kit's timer measures, L2
    flushed) and warm; a warm 4096 x 16 x 1024 BF16 GEMM on an L40S (8.5 MB, inside its 96 MiB
    L2) gets the core's warm prediction, below the DRAM roofline, and the summary names the
    timing context and the cache state of the time it shows."""
    w = GemmExplorer(m=4096, n=16, k=1024, dtype="bf16", gpu="L40S")
    close_after(w)
    dd = w.controls["cache"]
    assert list(dd.options) == ["cold", "warm"] and dd.value == "cold"
    assert "kernel timing" in w.output.value and "cold L2" in w.output.value
    dd.value = "warm"
    expected = gemm(4096, 16, 1024, dtype="bf16", gpu="L40S", cache="warm")
    assert w.result.predicted_time_s == expected.predicted_time_s
    assert w.result.l2_resident and w.result.predicted_time_s < w.result.roofline_time_s
    assert "warm L2" in w.output.value


def test_bad_context_or_cache_is_refused_in_the_core_sentence():
    """A context or cache the core does not know is refused when the widget is made, with the
    core's one sentence naming the parameter."""
    with pytest.raises(InvalidParameter, match="'context' must be one of"):
        GemmExplorer(context="graph")
    with pytest.raises(InvalidParameter, match="'cache' must be one of"):
        GemmExplorer(cache="hot")
