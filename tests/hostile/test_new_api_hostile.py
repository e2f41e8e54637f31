"""The public functions added since the first audit (fusion, FP8, scale-out, inference, MFU,
predictions): any argument, any value -> an answer with finite numbers, or one kit sentence."""

from __future__ import annotations

import decimal
import inspect
import json
import math

import numpy as np
import pytest
from hostile_support import HOSTILE_NUMBERS, assert_kit_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlperf_widgets.core import fusion, inference, memory, mfu, predict, scaleout, scaling
from dlperf_widgets.core._validate import check_int, check_number
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.results import to_jsonable

# One valid call of each function; the tests make one argument at a time hostile.
CALLS = {
    fusion.parse_chain: {"ops": "bias,gelu"},
    fusion.launch_overhead: {"kernel_times_s": [1e-6, 2e-6]},
    fusion.fusion_chain: {"ops": "bias,gelu", "elements": 1024},
    fusion.standard_attention_elements: {"n": 128, "d": 64},
    fusion.flash_block_sizes: {"n": 128, "d": 64, "sram_elements": 50_000},
    fusion.flash_attention_elements: {"n": 128, "d": 64, "sram_elements": 50_000},
    fusion.attention: {"seq_len": 128},
    scaling.fp8_scale: {"amax": 3.5},
    scaling.fp8_quantize: {"values": [1.0, 2.0]},
    scaling.block_format: {"name": "mxfp4"},
    scaling.block_quantize: {"values": [1.0, 2.0]},
    scaling.block_outlier_study: {"format": "nvfp4"},
    scaleout.interconnect: {"name": "NVLink4"},
    scaleout.allreduce_time: {"size_bytes": 1e6, "ranks": 4, "bandwidth_bytes_per_s": 1e9},
    scaleout.allgather_time: {"size_bytes": 1e6, "ranks": 4, "bandwidth_bytes_per_s": 1e9},
    scaleout.collective: {"size_bytes": 1e6, "ranks": 4},
    scaleout.fit_latency_bandwidth: {"size_bytes": [1e3, 1e6], "times_s": [1e-5, 1e-4]},
    scaleout.pipeline_bubble: {"stages": 4, "micro_batches": 8},
    scaleout.pipeline_schedule: {"stages": 4, "micro_batches": 8},
    scaleout.step_time: {},
    inference.llm: {"model": "llama-2-7b"},
    inference.weight_bytes: {"model": "llama-2-7b"},
    inference.kv_cache_bytes: {"model": "llama-2-7b", "context": 128},
    inference.llm_inference: {},
    inference.generation_latency_s: {},
    inference.phase_gemms: {},
    inference.LlmSpec: {
        "name": "x", "layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16,
        "ffn": 128, "vocab": 100,
    },
    mfu.transformer_params: {"layers": 2, "hidden": 64},
    mfu.transformer_flops_per_token: {"params": 1e9},
    mfu.megatron_flops_per_iteration: {"batch": 1, "seq_len": 8, "layers": 2, "hidden": 64, "vocab": 100},
    mfu.mfu: {"tokens_per_s": 1000.0, "params": 1e9},
    predict.parse_guess: {"text": "1.5"},
    predict.score_prediction: {"guess": 1.0, "answer": 1.0},
    memory.parse_count: {"value": "7B"},
}  # fmt: skip

TARGETS = [
    (f, p.name)
    for f in CALLS
    for p in inspect.signature(f).parameters.values()
    if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
]
EXTRA = [np.array(3.0), decimal.Decimal("2"), "abc", ["abc"], 1e-320, 1e308, -1e3, 0.5, 10**400]


def _finite(value) -> None:
    """A result's JSON holds no NaN or infinity: a non-finite number is never shown as one."""
    shown = to_jsonable(value.to_dict() if hasattr(value, "to_dict") else value)
    json.dumps(shown, allow_nan=False)


def _call(f, name, value) -> None:
    result = f(**{**CALLS[f], name: value})
    _finite(result)


@pytest.mark.parametrize(("f", "name"), TARGETS, ids=[f"{f.__name__}.{n}" for f, n in TARGETS])
def test_every_argument_with_every_hostile_value(f, name):
    """71 such calls raised ValueError, TypeError, OverflowError, ZeroDivisionError, ... or
    returned inf; each now answers with finite numbers or raises one kit sentence."""
    for value in [*HOSTILE_NUMBERS, *EXTRA]:
        assert_kit_error(lambda v=value: _call(f, name, v))


hostile = st.one_of(
    st.sampled_from(HOSTILE_NUMBERS + EXTRA),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(),
    st.decimals(),
    st.text(max_size=20),
    st.lists(st.one_of(st.floats(), st.integers(), st.text(max_size=3)), max_size=4),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target=st.sampled_from(TARGETS), value=hostile)
def test_any_argument_any_value(target, value):
    """Hypothesis over each new function's arguments: the kit's error or finite numbers."""
    f, name = target
    assert_kit_error(lambda: _call(f, name, value))


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda: fusion.launch_overhead(["abc"]), "kernel_times_s"),
        (lambda: scaling.fp8_quantize(values=[10**400]), "values"),
        (lambda: scaling.fp8_scale(1e-320), "amax"),
        (lambda: scaleout.fit_latency_bandwidth([math.nan, 1, 2], [1e-5, 2e-5, 3e-5]), "size_bytes"),
        (lambda: memory.parse_count("1e999"), "params"),
        (lambda: inference.llm_inference(inference.LlmSpec("x", 2, 64, 4, 0, 16, 128, 100)), "kv_heads"),
        (lambda: inference.LlmSpec("x", -4, 64, 4, 4, 16, 128, 100), "layers"),
        (lambda: inference.LlmSpec("x", 2, 64, 4, 4, 16, 128, 100, gated_mlp="no"), "gated_mlp"),
        (lambda: mfu.mfu(1e9, 7e9), "tokens_per_s"),
        (lambda: scaleout.collective(1e308, 8), "size_bytes"),
    ],
)  # fmt: skip
def test_named_cases_of_the_audit(call, parameter):
    """Cases from the audit: each raised a foreign exception, printed LAPACK noise to stdout,
    or returned inf, an absurd MFU (4,200 %) or a silently accepted truthy string."""
    with pytest.raises(InvalidParameter) as info:
        call()
    assert str(info.value).startswith(f"'{parameter}'")


def test_lapack_prints_nothing(capfd):
    """fit_latency_bandwidth with NaN sizes let LAPACK print '** On entry to DLASCL' to stdout."""
    with pytest.raises(InvalidParameter):
        scaleout.fit_latency_bandwidth([math.nan, 1, 2], [1e-5, 2e-5, 3e-5])
    assert capfd.readouterr().out == ""


@pytest.mark.parametrize("value", [np.array(64), np.float32(64.0), decimal.Decimal("64")])
def test_zero_d_arrays_and_decimals_are_numbers(value):
    """0-d arrays and Decimals were refused ('got array with 1 element(s)')."""
    assert check_int("m", value) == 64
    assert check_number("x", value) == 64.0
    assert fusion.attention(value).seq_len == 64
    assert memory.parse_count(value) == 64.0
    assert predict.parse_guess(value) == 64.0


@pytest.mark.parametrize("value", [decimal.Decimal("1.5"), decimal.Decimal("NaN"), np.array(2.5)])
def test_non_integral_decimals_and_arrays_are_not_sizes(value):
    """Accepting them as numbers does not make 1.5 or NaN a size."""
    with pytest.raises(InvalidParameter):
        check_int("m", value)


def test_a_prediction_off_by_hundreds_of_orders_says_so():
    """A guess of 1e-320 raised OverflowError (10 ** 320) instead of a verdict."""
    verdict = predict.score_prediction(1e-320, 1.0).verdict
    assert "too low" in verdict and "320" in verdict


@pytest.mark.parametrize("amax", ["1e-320", "5e-324"])
def test_fp8_of_a_subnormal_is_refused_in_strict_json(amax, capsys):
    """`dlperf fp8 1e-320`: scale inf, a RuntimeWarning, 'underflow 0' and `Infinity` in --json."""
    from dlperf_widgets.cli import main

    assert main(["fp8", amax, "--json"]) == 2
    out, err = capsys.readouterr()
    payload = json.loads(out, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))
    assert payload["parameter"] == "values" and err == ""
