"""Guards ``dlperf fp8 | blockformat | mfu | pipeline | collective | step``: JSON equal to the
core's results, clean one-line errors with exit status 2."""

from __future__ import annotations

import json

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.core.mfu import mfu
from dlperf_widgets.core.scaleout import collective, pipeline_schedule, step_time
from dlperf_widgets.core.scaling import block_format, fp8_quantize


def _json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_fp8_delayed(capsys):
    """A delayed scale from a small history saturates the large value; JSON is the core's."""
    out = _json(capsys, ["fp8", "1", "2", "300", "--recipe", "delayed", "--history", "10,20"])
    ref = fp8_quantize([1, 2, 300], recipe="delayed", amax_history=[10, 20])
    assert out == json.loads(json.dumps(ref.to_dict()))
    assert out["saturated"] == 1 and out["scale"] == pytest.approx(448 / 20)


def test_blockformat_and_mfu(capsys):
    """NVFP4 has 4.5 bits per element; PaLM's MFU comes out at 46-47 %."""
    assert _json(capsys, ["blockformat", "nvfp4"]) == block_format("nvfp4").to_dict()
    argv = [
        "mfu",
        "238300",
        "--params",
        "540.35e9",
        "--layers",
        "118",
        "--hidden",
        "18432",
        "--seq-len",
        "2048",
        "--gpus",
        "6144",
        "--peak",
        "275e12",
    ]
    out = _json(capsys, argv)
    ref = mfu(
        238300, 540.35e9, layers=118, hidden=18432, seq_len=2048, gpus=6144, peak_flops_per_s=275e12
    )
    assert out["mfu"] == pytest.approx(ref.mfu) and 0.46 < out["mfu"] < 0.47


def test_pipeline_collective_step(capsys):
    """pipeline, collective and step print the core's results as JSON; collective over a
    network link spreads a server's traffic over its NICs unless told it has one."""
    out = _json(capsys, ["pipeline", "4", "8", "--schedule", "gpipe"])
    assert out["bubble_fraction"] == pytest.approx(3 / 11)
    assert out == json.loads(json.dumps(pipeline_schedule(4, 8, "gpipe").to_dict()))
    out = _json(capsys, ["collective", "1e9", "8", "--link", "NVLink4"])
    assert out == collective(1e9, 8, link="NVLink4").to_dict()
    # across 8 NDR servers: NCCL's rings through all 8 NICs, and the flat one-NIC count
    out = _json(capsys, ["collective", "14e9", "64", "--link", "IB-NDR"])
    assert out["bandwidth_bytes_per_s"] == pytest.approx(400e9)
    out = _json(capsys, ["collective", "14e9", "64", "--link", "IB-NDR", "--nics-per-node", "1"])
    assert out == collective(14e9, 64, link="IB-NDR", nics_per_node=1).to_dict()
    assert out["bandwidth_bytes_per_s"] == pytest.approx(50e9)
    out = _json(capsys, ["step", "--gpus", "16", "--tensor-parallel", "2", "--global-batch", "64"])
    ref = step_time(gpus=16, tensor_parallel=2, global_batch=64)
    assert out["step_s"] == pytest.approx(ref.step_s) and out["mfu"] == pytest.approx(ref.mfu)
    # one port per server: the gradient all-reduce across the 2 servers takes longer
    argv = ["step", "--gpus", "16", "--global-batch", "64", "--no-overlap", "--nics-per-node", "1"]
    one = _json(capsys, argv)
    every = step_time(gpus=16, global_batch=64, overlap=False)
    assert one["data_parallel_s"] > 4 * every.data_parallel_s


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["fp8", "1", "--format", "fp16"], "'format' must be one of fp8_e4m3"),
        (["step", "--gpus", "12", "--tensor-parallel", "8"], "'gpus' must be a multiple"),
        (["collective", "1e6", "4", "--link", "wifi"], "'link' must be one of"),
        (["collective", "1e6", "8", "--link", "IB-HDR"], "'ranks' must exceed gpus_per_node"),
        (["collective", "1e6", "16", "--gpus-per-node", "8"], "'gpus_per_node' applies"),
        (["pipeline", "4", "x"], "'micro_batches' must be an integer"),
        (["blockformat", "mxfp9"], "'name' must be one of"),
    ],
)
def test_errors_exit_2_with_one_line(capsys, argv, words):
    """Bad input: exit status 2, one line on stderr naming the parameter, no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err
