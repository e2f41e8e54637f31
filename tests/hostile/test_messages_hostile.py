"""Messages name the parameter the user gave, in the CLI, its JSON and Python."""

from __future__ import annotations

import json

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.fusion import attention
from dlperf_widgets.core.scaleout import step_time
from dlperf_widgets.core.scaling import block_format, block_quantize


def _json_error(argv, capsys) -> dict:
    assert main([*argv, "--json"]) == 2
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("argv", "parameter"),
    [
        (["fp8"], "values"),
        (["gemm"], "m"),
        (["gemm", "64"], "n"),
        (["mfu", "1000"], "params"),
        (["blockformat", "nope"], "name"),
        (["fp8", "-inf"], "values"),
        (["gemm", "-1e3", "64", "64"], "m"),
        (["gemm", "64", "-1_000", "64"], "n"),
        (["fp8", "1", "--margin", "-1e3"], "margin"),
    ],
)
def test_the_json_error_names_the_parameter(argv, parameter, capsys):
    """argparse's 'required' errors gave "parameter": null; -1e3 and -inf were read as
    unknown options; blockformat's NAME was called 'format'."""
    payload = _json_error(argv, capsys)
    assert payload["parameter"] == parameter, payload
    assert "unrecognized" not in payload["error"]


def test_negative_scientific_numbers_are_values_not_options(capsys):
    """`dlperf fp8 -1e3` was refused as an unknown option; it is a value like -1000."""
    assert main(["fp8", "-1e3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["amax"] == 1000.0


def test_attention_caps_name_attentions_parameters():
    """attention() past the product cap named an internal GEMM's 'm'."""
    with pytest.raises(InvalidParameter) as info:
        attention(2**20, heads=4096, batch=65536)
    assert str(info.value).startswith("'seq_len'") and "'m'" not in str(info.value)


def test_step_time_caps_name_its_parameters():
    """step_time() past the product cap named an internal GEMM's 'm'."""
    with pytest.raises(InvalidParameter) as info:
        step_time(
            hidden=2**17, heads=1024, layers=1024, seq_len=2**20, global_batch=2**24,
            vocab=2**22, micro_batch=2**16, gpus=1,
        )  # fmt: skip
    assert str(info.value).startswith("'micro_batch'")


def test_block_format_and_block_quantize_name_their_own_parameter():
    """block_format(NAME) said 'format'; block_quantize(format=...) keeps saying 'format'."""
    with pytest.raises(InvalidParameter, match=r"^'name'"):
        block_format("nope")
    with pytest.raises(InvalidParameter, match=r"^'format'"):
        block_quantize([1.0], format="nope")
