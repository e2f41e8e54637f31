"""Guards the figures quoted in the exercises' model answers (the "critique the model" tasks):
each is recomputed from the core here, so a change of the model that moves one fails this test
instead of leaving a grader's rubric with a stale number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlperf_widgets import gemm, gpu
from dlperf_widgets.core.calibration import overlap_time
from dlperf_widgets.core.fusion import fusion_chain
from dlperf_widgets.core.inference import generation_latency_s, llm_inference
from dlperf_widgets.core.memlimited import saturation_bytes
from dlperf_widgets.exercises import task

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"


def _answer(prefix: str, grade_id: str) -> str:
    (path,) = EXERCISES.glob(f"{prefix}_*_exercises.ipynb")
    for cell in json.loads(path.read_text())["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == grade_id:
            return "".join(cell["source"])
    raise AssertionError(f"{path.name} has no cell {grade_id!r}")


def _no_reuse() -> list[str]:
    ratio = task("01.no_reuse_bytes").expected_answer()
    ai = gemm(8192, 8192, 8192, dtype="fp16", gpu="A100").arithmetic_intensity
    return [
        f"about {ratio:.0f} times",
        f"from about {round(ai, -2):,.0f} to about {ai / ratio:.0f} FLOP/B",
        f"ops:byte ({gpu('A100').ops_per_byte('fp16'):.0f})",
    ]


def _overlap() -> list[str]:
    r = gemm(8192, 128, 8192, dtype="fp16", gpu="V100")
    both = overlap_time(r.math_time_s, r.memory_time_s)
    return [
        f"about {r.math_time_s * 1e6:.0f} µs of math and {r.memory_time_s * 1e6:.0f} µs",
        f"the sum about {(r.math_time_s + r.memory_time_s) * 1e6:.0f} µs",
        f"the kit's combination about {both * 1e6:.0f} µs, "
        f"{100 * (both / max(r.math_time_s, r.memory_time_s) - 1):.0f} % above",
    ]


def _fixed_cost() -> list[str]:
    return [f"About {saturation_bytes('A100', 'fp16') / 1e6:.1f} MB"]


def _fused_training() -> list[str]:
    r = fusion_chain(("bias", "gelu"), elements=16 * 2**20, dtype="fp16", gpu="A100")
    tensor = 16 * 2**20 * 2
    with_save = r.bytes_fused + tensor
    return [
        f"{with_save / 2**20:.0f} MiB instead of the kit's {r.bytes_fused / 2**20:.0f} MiB",
        f"unfused chain's {r.bytes_unfused / 2**20:.0f} MiB",
        f"saves {100 * (1 - with_save / r.bytes_unfused):.0f} % of the forward traffic "
        f"instead of {100 * (1 - r.bytes_fused / r.bytes_unfused):.0f} %",
    ]


def _latency() -> list[str]:
    kw = {"gpu": "A100-SXM4-80GB"}
    kit = generation_latency_s("llama-2-7b", prompt_len=512, output_len=256, **kw)
    first = llm_inference("llama-2-7b", context=512, **kw).time_to_first_token_s
    steps = sum(
        llm_inference("llama-2-7b", context=c, prompt_len=512, **kw).decode_step_s
        for c in range(513, 512 + 256, 16)
    )
    summed = first + 16 * steps  # every 16th step, each standing for 16
    assert abs(summed / kit - 1) < 0.01  # "agree to rounding" (the stride adds its own)
    return [f"agree to rounding (about {kit:.2f} s each)"]


CASES = {
    ("01", "open_no_reuse"): _no_reuse,
    ("02", "open_overlap"): _overlap,
    ("06", "open_fixed_cost"): _fixed_cost,
    ("10", "open_fused_training"): _fused_training,
    ("11", "open_latency"): _latency,
}


@pytest.mark.parametrize("key", list(CASES), ids=lambda k: f"{k[0]}-{k[1]}")
def test_model_answer_quotes_the_core(key):
    """Every figure the model answer quotes is the one the core computes today."""
    text = _answer(*key)
    for phrase in CASES[key]():
        assert phrase in text, f"{key}: {phrase!r} not in the model answer"
