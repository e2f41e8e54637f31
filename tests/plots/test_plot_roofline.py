"""plot_roofline / plot_gemm: the roof, the ridge and the points, as artists."""

from __future__ import annotations

import pytest

from dlperf_widgets.core.fusion import fusion_chain
from dlperf_widgets.core.gemm import gemm
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.plots import plot_gemm, plot_roofline
from dlperf_widgets.plots.style import LIMITER_COLORS


def test_roof_bends_at_the_ridge():
    """V100 FP16: flat at 125 TFLOP/s right of ops:byte, 900 GB/s x AI left of it."""
    a = plot_roofline("V100", "fp16")
    g = gpu("V100")
    xs, ys = a.roof.get_data()
    assert xs[1] == pytest.approx(g.peak_flops("fp16") / 900e9)
    assert ys[1] == pytest.approx(g.peak_flops("fp16"))
    assert ys[0] == pytest.approx(xs[0] * 900e9)
    assert ys[-1] == pytest.approx(g.peak_flops("fp16"))
    assert a.ridge.get_xdata()[0] == pytest.approx(xs[1])
    assert "139.3 FLOP/B" in a.ridge_label.get_text()
    assert a.ax.get_xscale() == a.ax.get_yscale() == "log"


def test_axis_labels_carry_units():
    """Both axes name their unit."""
    a = plot_roofline("A100")
    assert a.ax.get_xlabel() == "arithmetic intensity (FLOP/B)"
    assert a.ax.get_ylabel() == "throughput (FLOP/s)"
    assert "A100" in a.title.get_text()


def test_points_sit_at_the_cores_numbers():
    """A GEMM's point is at (AI, predicted FLOP/s), coloured by its limiter."""
    r = gemm(8192, 128, 8192, gpu="V100")
    a = plot_gemm(r)
    (p,) = a.points
    assert p.get_xdata()[0] == r.arithmetic_intensity
    assert p.get_ydata()[0] == r.predicted_flops_per_s
    assert p.get_markerfacecolor().lower() == LIMITER_COLORS["memory"].lower()
    assert "124.1 FLOP/B" in a.labels[0].get_text()
    assert "(memory)" in a.labels[0].get_text()


def test_several_ops_and_low_points_widen_the_axis():
    """Many operations get one point each; a tiny GEMM pulls the y axis down to show it."""
    ops = [gemm(1, 1, 1, gpu="A100"), gemm(4096, 4096, 4096, gpu="A100")]
    a = plot_roofline("A100", ops=ops, labels=["tiny", "big"])
    assert len(a.points) == len(a.labels) == 2
    assert [t.get_text() for t in a.labels] == ["tiny", "big"]
    assert a.ax.get_ylim()[0] < ops[0].predicted_flops_per_s
    assert len(a.flat()) >= 6


def test_points_carry_their_error_bars():
    """Each GEMM's bar spans FLOPs / time_high_s to FLOPs / time_low_s at its intensity."""
    rs = [gemm(4096, 4096, 4096, dtype="bf16", gpu="H100-SXM"), gemm(8192, 128, 8192, gpu="A100")]
    a = plot_roofline("H100-SXM", "bf16", ops=rs)
    segs = a.errorbars.get_segments()
    assert len(segs) == 2
    for seg, r in zip(segs, rs, strict=True):
        (x0, y0), (x1, y1) = seg
        assert x0 == x1 == pytest.approx(r.arithmetic_intensity)
        assert y0 == pytest.approx(r.flops / r.time_high_s)
        assert y1 == pytest.approx(r.flops / r.time_low_s)


_CHAIN = fusion_chain(["bias", "dropout", "residual", "layernorm"], elements=2**24)


def _drawn_boxes(a):
    from matplotlib.text import Text

    fig = a.ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    # the text's own box (an annotation's extent would include its leader line)
    return [Text.get_window_extent(t, renderer) for t in a.labels if t.get_text()]


@pytest.mark.parametrize(
    "gpu_name, dtype, ops",
    [
        # the three GEMMs of notebook 02's roofline: two of them near the peak, side by side
        (
            "H100-SXM",
            "bf16",
            [
                gemm(4096, 4096, 4096, dtype="bf16", gpu="H100-SXM"),
                gemm(8192, 128, 8192, dtype="bf16", gpu="H100-SXM"),
                gemm(256, 256, 256, dtype="bf16", gpu="H100-SXM"),
            ],
        ),
        # notebook 10's fused chain: five memory-bound kernels within two decades of intensity
        (
            "A100",
            "fp16",
            [*_CHAIN.passes, _CHAIN.fused],
        ),
    ],
)
def test_point_labels_do_not_cover_each_other(gpu_name, dtype, ops):
    """Points that crowd together keep their labels apart: no two drawn label boxes
    overlap, none covers the peak label, and every label stays inside the figure."""
    labels = [f"point {i}: {op.arithmetic_intensity:.1f} FLOP/B" for i, op in enumerate(ops)]
    a = plot_roofline(gpu_name, dtype, ops=ops, labels=labels)
    boxes = _drawn_boxes(a)
    assert len(boxes) == len(ops)
    for i, b in enumerate(boxes):
        for other in boxes[i + 1 :]:
            assert not b.overlaps(other), (b, other)
        assert not b.overlaps(a.peak_label.get_window_extent())
        assert a.ax.figure.bbox.contains(b.x0, b.y0) and a.ax.figure.bbox.contains(b.x1, b.y1)
