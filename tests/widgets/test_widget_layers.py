"""LayerChecklist, NetworkBreakdown, MemoryCalculator and SparsityExplorer against the core."""

from __future__ import annotations

import numpy as np
import pytest

from dlperf_widgets.core.layers import layer
from dlperf_widgets.core.memory import training_memory
from dlperf_widgets.core.network import transformer
from dlperf_widgets.core.sparsity import sparse_gemm
from dlperf_widgets.widgets import (
    LayerChecklist,
    MemoryCalculator,
    NetworkBreakdown,
    SparsityExplorer,
)


def test_linear_layer_passes_and_fix(close_after):
    """A 4096 x 1024 linear layer at batch 512 (slides: ~315 FLOP/B forward, math-bound)."""
    w = LayerChecklist("linear", inputs=1024, outputs=4096, batch=512, gpu="V100")
    close_after(w)
    assert (
        w.result.to_dict()
        == layer("linear", inputs=1024, outputs=4096, batch=512, gpu="V100").to_dict()
    )
    fwd = w.result.passes[0]
    assert (fwd.m, fwd.n, fwd.k) == (4096, 512, 1024)
    assert fwd.arithmetic_intensity == pytest.approx(315, abs=0.5)
    assert len(w._artists.bars) == len(w.result.passes)


def test_apply_fix_sets_the_suggested_value(close_after):
    """'apply fix' puts the finding's suggested value in the box and recomputes."""
    w = LayerChecklist("linear", inputs=1024, outputs=4095, batch=512, gpu="V100")
    close_after(w)
    finding = w.fix.value
    assert finding.parameter == "outputs" and finding.suggested_value == 4096
    w.apply_button.click()
    assert w.controls["opt:outputs"].value == "4096"
    assert w.result.options["outputs"] == 4096
    assert "pad outputs from 4095 to 4096" in w.fix_note.value


def test_layer_kind_switch_rebuilds_options_once(close_after, observer_count):
    """Switching to conv2d replaces the option boxes; each new box has one observer."""
    w = LayerChecklist()
    close_after(w)
    old = w.controls["opt:batch"]
    w.controls["layer"].value = "conv2d"
    assert w.result.layer == "conv2d"
    assert "opt:in_channels" in w.controls and "opt:inputs" not in w.controls
    assert observer_count(old, w) == 0
    for name, c in w.controls.items():
        assert observer_count(c, w) == 1, name
    w.controls["opt:in_channels"].value = "3"
    assert any("pad the input from 3 to 4" in f.fix for f in w.result.findings)


def test_layer_bad_size_is_inline(close_after, error_count):
    """'abc' in a size box names the option and keeps the last result."""
    w = LayerChecklist()
    close_after(w)
    before = w.result
    w.controls["opt:inputs"].value = "abc"
    assert error_count(w) == 1 and "'inputs' must be an integer" in w.error
    assert w.result is before


def test_attention_layer_in_a_dtype_it_cannot_train_in_is_inline(close_after, error_count):
    """The attention layer is a view of the step's kernel list, which has no int8 recipe:
    choosing int8 shows the one sentence naming 'dtype' inline and keeps the last result;
    the widget's result is the core's."""
    w = LayerChecklist("attention", gpu="A100")
    close_after(w)
    before = w.result
    assert before.to_dict() == layer("attention", gpu="A100").to_dict()
    w.controls["dtype"].value = "int8"
    assert error_count(w) == 1 and "for an attention layer (got 'int8')" in w.error
    assert w.result is before


def test_network_breakdown_pattern(close_after):
    """Tensor contractions: nearly all FLOPs, a clearly smaller share of runtime."""
    w = NetworkBreakdown(layers=4)
    close_after(w)
    assert w.result.to_dict() == transformer(4).to_dict()
    tc = w.result.by_class["tensor_contraction"]
    assert tc["flops_share"] > 0.99 and tc["runtime_share"] < 0.9
    assert w._artists.flops[0].get_width() == pytest.approx(tc["flops_share"] * 100)
    full = w.view.full_draws
    w.controls["layers"].value = 8
    assert w.result.to_dict() == transformer(8).to_dict()
    assert w.view.full_draws == full  # shares move inside fixed axes


def test_network_breakdown_offers_the_steps_dtypes(close_after):
    """The dtype dropdown offers what the transformer's step can run in on the chosen GPU
    (no FP64 or int8 training), and follows the GPU: FP8 appears on an H100."""
    w = NetworkBreakdown(layers=2, gpu="A100")
    close_after(w)
    assert list(w.controls["dtype"].options) == ["fp32", "tf32", "fp16", "bf16"]
    w.controls["gpu"].value = next(o for o in w.controls["gpu"].options if "H100" in str(o))
    assert "fp8_e4m3" in w.controls["dtype"].options
    w.controls["dtype"].value = "fp8_e4m3"
    assert w.error == "" and w.result.dtype == "fp8_e4m3"


def test_memory_calculator_bytes_per_parameter(close_after, error_count):
    """Mixed precision + AdamW: 6 + 4 + 8 = 18 bytes per parameter (slides' table)."""
    w = MemoryCalculator(
        params="1B", layers=None, hidden=None, seq_len=None, batch=None, heads=None
    )
    close_after(w)
    assert w.result.model_state_bytes == pytest.approx(18e9)
    assert w.result.to_dict() == training_memory(1e9, gpu="A100").to_dict()
    w.controls["optimizer"].value = "sgd-momentum"
    assert w.result.model_state_bytes == pytest.approx(14e9)  # 6 + 4 + 4
    w.controls["params"].value = "seven"
    assert error_count(w) == 1 and "'params' must be a positive number" in w.error
    assert w.result.optimizer == "sgd-momentum"
    w.controls["params"].value = "350M"
    assert w.result.params == 350e6 and error_count(w) == 0


def test_memory_bar_and_gpu_line(close_after):
    """The stacked parts add up to the per-GPU total; the dashed line is the GPU memory."""
    w = MemoryCalculator(gpu="A100")
    close_after(w)
    total = sum(p.get_width() for p in w._artists.parts)
    assert total == pytest.approx(w.result.per_gpu_bytes / 2**30)
    assert w._artists.limit.get_xdata()[0] == pytest.approx(80)


def test_sparsity_speedups(close_after):
    """2:4 sparsity doubles the math rate; a 4096^3 FP16 GEMM is math-bound: 2x."""
    w = SparsityExplorer(runtime_fraction=0.6)
    close_after(w)
    assert w.result == sparse_gemm(4096, 4096, 4096, runtime_fraction=0.6)
    assert w.result.gemm_speedup == pytest.approx(2.0, rel=0.03)
    # Amdahl: 1 / (0.4 + 0.6 / s)
    s = w.result.gemm_speedup
    assert w.result.end_to_end_speedup == pytest.approx(1 / (0.4 + 0.6 / s))
    mask = np.asarray(w.pruned.mask).reshape(-1, 4)
    assert (mask.sum(axis=1) == 2).all()
    img = w._artists.image.get_array()
    assert np.ma.count_masked(img) == img.size // 2
    first = img.copy()
    w.controls["seed"].value = 1
    assert not np.array_equal(np.ma.getdata(w._artists.image.get_array()), np.ma.getdata(first))


def test_network_breakdown_from_a_pytorch_module(close_after):
    """NetworkBreakdown.from_module shows an analysed model's class split; changing the GPU
    or dtype re-prices the same recorded operations (equal to analyze_module's result)."""
    torch = pytest.importorskip("torch")
    from dlperf_widgets.live.modules import analyze_module

    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 8))
    x = torch.randn(32, 64)
    w = NetworkBreakdown.from_module(model, x, gpu="A100")
    close_after(w)
    assert w.result.to_dict() == analyze_module(model, x, gpu="A100").to_dict()
    w.controls["gpu"].value = w._gpu("H100").name
    w.controls["dtype"].value = "bf16"
    want = analyze_module(model, x, dtype="bf16", gpu="H100")
    assert w.result.to_dict() == want.to_dict()
    assert w.result.bytes < analyze_module(model, x, gpu="H100").bytes  # 2-byte tensors
