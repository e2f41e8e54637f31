"""Guards FusionExplorer and InferenceExplorer: controls drive the core call, bad input is one
inline message that keeps the last good state, and updates blit rather than redraw."""

from __future__ import annotations

import pytest

from dlperf_widgets.core.fusion import CHAINS, fusion_chain
from dlperf_widgets.core.inference import llm_inference
from dlperf_widgets.widgets import FusionExplorer, InferenceExplorer


def test_fusion_preset_sets_the_ops_and_the_result(close_after):
    """Choosing a preset chain fills the ops box and shows that chain's core result."""
    w = FusionExplorer()
    close_after(w)
    name = "MLP epilogue: bias, GELU"
    w.controls["preset"].value = name
    assert w.controls["ops"].value == "bias, gelu"
    assert w.result == fusion_chain(CHAINS[name], elements=int(w.controls["elements"].value))
    assert f"{w.result.speedup:.2f}x" in w.output.value


def test_fusion_typing_ops_leaves_the_preset(close_after):
    """Editing the ops by hand switches the preset to 'custom' and recomputes."""
    w = FusionExplorer()
    close_after(w)
    w.controls["ops"].value = "scale, softmax"
    assert w.controls["preset"].value == "custom"
    assert w.result.ops == ("scale", "softmax")
    assert len(w.view.ax.lines) >= 3  # roof + one point per kernel


@pytest.mark.parametrize(
    "control, value, fragment",
    [
        ("ops", "relu, conv2d", "'ops' must list operations among"),
        ("elements", "-5", "'elements' must be an integer"),
    ],
)
def test_fusion_bad_input_is_inline_and_keeps_the_result(
    close_after, error_count, control, value, fragment
):
    """Bad text: one inline message, the previous result and figure stay."""
    w = FusionExplorer()
    close_after(w)
    before = w.result
    png = w.view.png()
    w.controls[control].value = value
    assert error_count(w) == 1 and fragment in w.error
    assert w.result is before and w.view.png() == png
    w.controls[control].value = "relu" if control == "ops" else "1024"
    assert error_count(w) == 0


def test_fusion_size_and_gpu_keep_the_preset(close_after):
    """Changing the tensor size or the GPU keeps the chosen chain and the dtype list."""
    w = FusionExplorer()
    close_after(w)
    preset = w.controls["preset"].value
    w.controls["elements"].value = "1048576"
    w.controls["gpu"].value = "H100-SXM"
    assert w.controls["preset"].value == preset
    assert list(w.controls["dtype"].options) == ["fp16", "bf16", "fp32"]
    assert w.result.gpu == "H100-SXM" and w.result.elements == 1048576


def test_fusion_elements_move_blits(close_after):
    """Changing the tensor size moves points only: a blit, no full redraw."""
    w = FusionExplorer()
    close_after(w)
    full = w.view.full_draws
    w.controls["elements"].value = "33554432"
    assert w.view.full_draws == full and w.view.blits >= 1


def test_inference_controls_drive_the_core(close_after):
    """Each control reaches llm_inference: the widget's result equals a direct call."""
    w = InferenceExplorer()
    close_after(w)
    with w._hold():
        w.controls["model"].value = "llama-3-8b"
        w.controls["batch"].value = "32"
        w.controls["context"].value = "8192"
        w.controls["weight_dtype"].value = "int4"
        w.controls["kv_dtype"].value = "fp8"
    w.update()
    expected = llm_inference(
        "llama-3-8b", gpu="A100", batch=32, context=8192, weight_dtype="int4", kv_dtype="fp8"
    )
    assert w.result == expected
    assert f"{expected.tokens_per_s:,.0f}" in w.output.value
    assert "dlperf-capacity" in w.output.value
    # which kernels take the step's time: attention's share of the priced decode step
    share = expected.priced.categories["attention"] / expected.priced.step_s
    assert f"attention {share:.0%}" in w.output.value


def test_inference_says_when_memory_does_not_fit(close_after):
    """A 70B model in FP16 does not fit an 80 GB GPU: the summary says so."""
    w = InferenceExplorer(gpu="H100")
    close_after(w)
    w.controls["model"].value = "llama-2-70b"
    assert not w.result.fits
    assert "does not fit" in w.output.value


def test_inference_bad_batch_is_inline(close_after, error_count):
    """batch 0: one inline message naming 'batch'; the last good result stays."""
    w = InferenceExplorer()
    close_after(w)
    before = w.result
    w.controls["batch"].value = "0"
    assert error_count(w) == 1 and "'batch' must be" in w.error
    assert w.result is before


def test_inference_batch_moves_blit(close_after):
    """Changing the batch moves the decode point only: a blit, no full redraw."""
    w = InferenceExplorer()
    close_after(w)
    full = w.view.full_draws
    w.controls["batch"].value = "16"
    assert w.view.full_draws == full
