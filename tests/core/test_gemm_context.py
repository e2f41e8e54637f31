"""Guards the timing context of the GEMM model: which fixed cost a predicted time carries."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlperf_widgets.core import InvalidParameter, gemm, gemm_sweep, gpu
from dlperf_widgets.core.assumptions import DEFAULT_CONTEXT, TIMING_CONTEXTS
from dlperf_widgets.core.calibration import achievable

SIZES = st.integers(min_value=1, max_value=20000)


@settings(max_examples=60, deadline=None)
@given(m=SIZES, n=SIZES, k=SIZES, name=st.sampled_from(["A100", "H100-SXM", "T4", "V100", "L4"]))
def test_eager_is_never_faster_than_kernel_or_back_to_back(m, n, k, name):
    """The context rule: an eager call (host launch included) never beats the same kernel
    timed alone, and a kernel timed alone never beats it back to back in a CUDA graph."""
    t = {
        c: gemm_sweep(m, n, k, gpu=name, dtype="fp16" if name != "L4" else "fp32", context=c)
        for c in TIMING_CONTEXTS
    }
    eager = float(t["eager"].predicted_time_s)
    alone = float(t["kernel"].predicted_time_s)
    b2b = float(t["back-to-back"].predicted_time_s)
    assert eager >= alone >= b2b > 0


def test_contexts_differ_by_their_fixed_costs_only():
    """The work of a GEMM is the same in every context; the predicted times differ by exactly
    the constants of data/achievable.csv (device overhead, back-to-back overhead, launch)."""
    cal = achievable("H100-SXM", "bf16")
    r = {
        c: gemm(4096, 4096, 4096, dtype="bf16", gpu="H100-SXM", context=c) for c in TIMING_CONTEXTS
    }
    assert r["eager"].math_time_s == r["back-to-back"].math_time_s
    assert r["kernel"].predicted_time_s - r["back-to-back"].predicted_time_s == pytest.approx(
        cal.kernel_overhead_s - cal.back_to_back_overhead_s
    )
    assert r["eager"].predicted_time_s - r["kernel"].predicted_time_s == pytest.approx(
        cal.launch_overhead_s
    )


def test_every_prediction_says_its_context():
    """A GemmResult carries its context (JSON key and table row), the kit timer's by default."""
    r = gemm(256, 256, 256, gpu="H100-SXM", dtype="bf16")
    assert r.context == DEFAULT_CONTEXT == "kernel"
    assert r.to_dict()["context"] == "kernel"
    assert "timing context" in str(r) and "isolated kernel" in str(r)
    e = gemm(256, 256, 256, gpu="H100-SXM", dtype="bf16", context="eager")
    assert "launch included" in str(e)


def test_bad_context_is_refused_with_one_sentence():
    """An unknown context names the parameter, the choices and the value."""
    with pytest.raises(
        InvalidParameter,
        match=r"'context' must be one of kernel, back-to-back, eager \(got 'graphs'\)",
    ):
        gemm(64, 64, 64, context="graphs")
    with pytest.raises(InvalidParameter, match="'cache' must be one of cold, warm"):
        gemm_sweep(np.array([64]), 64, 64, cache="hot")


def test_context_fixed_costs_ordered_on_every_gpu():
    """For every GPU and dtype it runs, back-to-back <= kernel <= eager fixed cost."""
    for g in ("V100", "T4", "A100", "A10", "L4", "L40S", "H100-SXM", "H200", "B200"):
        for d in gpu(g).dtypes():
            cal = achievable(g, d)
            costs = [cal.fixed_cost_s(c) for c in ("back-to-back", "kernel", "eager")]
            assert costs == sorted(costs) and costs[0] > 0, (g, d, costs)
