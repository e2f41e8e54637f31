"""BlockFormatExplorer and PipelineExplorer under hostile input: every constructor argument
and every text box with every hostile value gives a working widget or one kit sentence,
leaves nothing registered when it fails, and an inline message keeps the last good state."""

from __future__ import annotations

import gc
import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

from hostile_support import HOSTILE_NUMBERS, assert_kit_error
from ipywidgets.widgets.widget import _instances

from dlperf_widgets import widgets as ww
from dlperf_widgets.core.errors import DlperfError

ARGS = {
    ww.BlockFormatExplorer: ["format", "block_size", "scale_format", "outlier"],
    ww.PipelineExplorer: ["stages", "micro_batches", "schedule", "chunks", "backward_ratio"],
}
TARGETS = [(cls, name) for cls, names in ARGS.items() for name in names]
EXTRA = ["", " ", "mxfp4\n", "1e400", "-0", 1e-320, 2.5, 300, "16"]


def _build(cls, name, value):
    w = cls(**{name: value})
    w.close()


@pytest.mark.parametrize(("cls", "name"), TARGETS, ids=[f"{c.__name__}.{n}" for c, n in TARGETS])
def test_every_constructor_argument_with_every_hostile_value(cls, name):
    """A widget or one short kit sentence, quickly; a refused construction leaves no widget
    registered."""
    gc.collect()
    before = len(_instances)
    for value in [*HOSTILE_NUMBERS, *EXTRA]:
        assert_kit_error(lambda v=value: _build(cls, name, v), seconds=10.0)
    gc.collect()
    assert len(_instances) == before


@pytest.mark.parametrize(
    "make",
    [
        lambda: ww.BlockFormatExplorer("MXFP8"),
        lambda: ww.BlockFormatExplorer(" nv-fp4 "),
        lambda: ww.BlockFormatExplorer("mxfp4", scale_format="FP32", block_size=16.0),
        lambda: ww.PipelineExplorer(schedule="GPipe"),
        lambda: ww.PipelineExplorer(16, 32, "interleaved", chunks=4),
    ],
    ids=["mxfp8-alias", "nvfp4-alias", "what-if", "gpipe-capital", "largest"],
)
def test_spellings_the_core_accepts_build_the_widget(make):
    """Aliases and capitals the core accepts build the widget with no message."""
    w = make()
    try:
        assert w.error == "" and w.result is not None
    finally:
        w.close()


@pytest.mark.parametrize(
    "make",
    [
        lambda: ww.BlockFormatExplorer(block_size=512),
        lambda: ww.BlockFormatExplorer("fp8_per_tensor", block_size=32),
        lambda: ww.BlockFormatExplorer(outlier=65),
        lambda: ww.PipelineExplorer(stages=17),
        lambda: ww.PipelineExplorer(4, 6, "interleaved"),
        lambda: ww.PipelineExplorer(chunks=9),
    ],
    ids=["block-512", "per-tensor-block", "outlier-65", "stages-17", "m-not-multiple", "v-9"],
)
def test_out_of_range_constructions_are_one_sentence(make):
    """Values beyond what the explorer draws are refused in one sentence naming them."""
    with pytest.raises(DlperfError) as info:
        make()
    assert str(info.value).startswith("'") and len(str(info.value)) < 200


@pytest.mark.parametrize(
    "text",
    [h for h in HOSTILE_NUMBERS if isinstance(h, str)]
    + ["", "-3", "1e400", "nan", "0x20", "32 ", "3" * 50],
)
def test_any_block_size_text_is_a_result_or_an_inline_message(text, close_after):
    """The block-size box: a new result, or one inline message with the last result kept."""
    w = ww.BlockFormatExplorer()
    close_after(w)
    before = w.result
    w.controls["block_size"].value = text
    if w.error:
        assert w.result is before and "\n" not in w.error and len(w.error) < 200
        assert w.error.startswith("'block size'")
    else:
        assert 1 <= w.result.block_size <= 256
