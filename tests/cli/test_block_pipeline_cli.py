"""Guards the what-if options of ``dlperf blockformat`` (block size, scale format, one
outlier) and ``dlperf pipeline --schedule interleaved --chunks v``: JSON equal to the core's
results and one-line errors with exit status 2."""

from __future__ import annotations

import json

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.core.scaleout import pipeline_schedule
from dlperf_widgets.core.scaling import block_format, block_outlier_study


def _json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_blockformat_what_if_and_outlier(capsys):
    """MXFP4 in blocks of 16 under E4M3 scales costs NVFP4's 4.5 bits; --outlier runs the
    study with the same options and prints its JSON."""
    out = _json(
        capsys, ["blockformat", "mxfp4", "--block-size", "16", "--scale-format", "fp8_e4m3"]
    )
    assert out == block_format("mxfp4", block_size=16, scale_format="fp8_e4m3").to_dict()
    assert out["bits_per_element"] == 4.5
    out = _json(capsys, ["blockformat", "nvfp4", "--outlier", "6"])
    ref = block_outlier_study("nvfp4", outlier_binades=6)
    assert out == json.loads(json.dumps(ref.to_dict()))


def test_pipeline_interleaved(capsys):
    """Interleaved with 2 chunks (the default) on Narayanan et al.'s 4 stages and 8
    micro-batches: bubble 3/19 of the step."""
    out = _json(capsys, ["pipeline", "4", "8", "--schedule", "interleaved"])
    ref = pipeline_schedule(4, 8, "interleaved", chunks=2)
    assert out == json.loads(json.dumps(ref.to_dict()))
    assert out["bubble_fraction"] == pytest.approx(3 / 19)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["pipeline", "4", "6", "--schedule", "interleaved"], "'micro_batches' must be a multiple"),
        (["pipeline", "4", "8", "--schedule", "interleaved", "--chunks", "1"], "'chunks' must be"),
        (["blockformat", "fp8_per_tensor", "--block-size", "32"], "'block_size' must be left"),
        (["blockformat", "mxfp4", "--scale-format", "ue4m3"], "'scale_format' must be one of"),
        (["blockformat", "mxfp4", "--outlier", "nan"], "'outlier_binades' must be a finite"),
        (["blockformat", "mxfp4", "--outlier", "100"], "'outlier_binades' must be"),
    ],
)
def test_errors_exit_2_with_one_line(capsys, argv, words):
    """Bad input: exit status 2, one line on stderr naming the parameter, no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err
