"""Guards ``dlperf format NAME``: documented JSON keys, aliases, and errors on unknown names."""

from __future__ import annotations

import json

from dlperf_widgets import number_format
from dlperf_widgets.cli import main


def test_json_keys_and_values(capsys):
    """--json carries name, bits, exponent_bits, mantissa_bits, max, min_normal,
    min_subnormal and epsilon, equal to number_format()."""
    assert main(["format", "half", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "fp16"
    assert (out["bits"], out["exponent_bits"], out["mantissa_bits"]) == (16, 5, 10)
    assert (out["max"], out["min_normal"], out["min_subnormal"], out["epsilon"]) == (
        65504.0,
        2.0**-14,
        2.0**-24,
        2.0**-10,
    )
    assert out == json.loads(json.dumps(number_format("fp16").to_dict()))


def test_fp8_and_table(capsys):
    """FP8 E4M3's largest value is 448 (saturating); the table output has a title."""
    assert main(["format", "fp8_e4m3"]) == 0
    text = capsys.readouterr().out
    assert "fp8_e4m3" in text and "448" in text


def test_unknown_format_exits_2(capsys):
    """An unknown name exits 2 with one line listing the formats and a suggestion."""
    assert main(["format", "fp17"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'format' must be one of" in err and "fp16" in err
