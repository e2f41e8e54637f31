"""Guards `dlperf time gemm|layer|device`: JSON keys, real CPU measurements, the layer
options of `dlperf layer`, and exit status 2 with one line for bad input."""

from __future__ import annotations

import json
import sys

import pytest

from dlperf_widgets.cli import main

pytest.importorskip("torch")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_time_gemm_json_keys(capsys):
    """`dlperf time gemm M N K --json` has device, measured_time_s, measured_flops_per_s,
    predicted_time_s (null on the CPU) and repeats; FLOP/s = 2MNK / time."""
    code, out, _ = run(
        capsys,
        "time",
        "gemm",
        "64",
        "48",
        "32",
        "--dtype",
        "fp32",
        "--device",
        "cpu",
        "--repeats",
        "3",
        "--warmup",
        "1",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert data["device"] == "cpu" and data["repeats"] == 3 and data["warmup"] == 1
    assert data["predicted_time_s"] is None
    assert data["measured_flops_per_s"] == pytest.approx(2 * 64 * 48 * 32 / data["measured_time_s"])
    assert len(data["times_s"]) == 3


def test_json_before_the_target_also_works(capsys):
    """--json is accepted before the target's words too."""
    code, out, _ = run(
        capsys,
        "time",
        "--json",
        "gemm",
        "16",
        "16",
        "16",
        "--device",
        "cpu",
        "--repeats",
        "1",
        "--warmup",
        "0",
        "--dtype",
        "fp32",
    )
    assert code == 0 and json.loads(out)["m"] == 16


def test_time_gemm_table(capsys):
    """Without --json the result is an aligned table naming the device."""
    code, out, _ = run(
        capsys,
        "time",
        "gemm",
        "16",
        "16",
        "16",
        "--device",
        "cpu",
        "--repeats",
        "2",
        "--dtype",
        "fp32",
    )
    assert code == 0 and "Measured GEMM 16 x 16 x 16 (fp32) on cpu" in out and "median" in out


def test_time_layer_uses_layer_options(capsys):
    """`dlperf time layer conv2d` takes the options of `dlperf layer` (hyphenated flags)."""
    code, out, _ = run(
        capsys,
        "time",
        "layer",
        "conv2d",
        "--batch",
        "2",
        "--in-channels",
        "4",
        "--out-channels",
        "8",
        "--height",
        "8",
        "--width",
        "8",
        "--kernel-size",
        "3",
        "--padding",
        "1",
        "--layout",
        "nchw",
        "--dtype",
        "fp32",
        "--device",
        "cpu",
        "--repeats",
        "2",
        "--warmup",
        "0",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert data["kind"] == "conv2d" and data["options"]["layout"] == "nchw"
    assert data["flops"] == 2 * (2 * 8 * 8) * 8 * (4 * 3 * 3)
    code, out, _ = run(
        capsys,
        "time",
        "layer",
        "linear",
        "--batch",
        "8",
        "--inputs",
        "16",
        "--outputs",
        "32",
        "--phase",
        "backward",
        "--dtype",
        "fp32",
        "--device",
        "cpu",
        "--repeats",
        "1",
        "--json",
    )
    assert code == 0 and json.loads(out)["flops"] == 2 * 2 * 8 * 16 * 32


def test_time_device(capsys):
    """`dlperf time device --device cpu --json` describes the CPU."""
    code, out, _ = run(capsys, "time", "device", "--device", "cpu", "--json")
    assert code == 0 and json.loads(out)["kind"] == "cpu"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["time"], "what to time is required"),
        (["time", "gemm", "8", "8"], "required: k"),
        (["time", "gemm", "8", "8", "-1", "--device", "cpu"], "'k' must be a positive integer"),
        (["time", "gemm", "8", "8", "8", "--dtype", "int8", "--device", "cpu"], "'dtype' must be"),
        (["time", "gemm", "8", "8", "8", "--device", "gpu"], "invalid choice"),
        (["time", "layer", "lstm", "--device", "cpu"], "'kind' must be one of"),
        (
            ["time", "layer", "linear", "--height", "3", "--device", "cpu"],
            "--height is not an option of linear",
        ),
        (
            ["time", "layer", "attention", "--hidden", "30", "--heads", "4", "--device", "cpu"],
            "'heads' must divide",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, message):
    """Bad words and values exit 2 with one line on stderr and no traceback."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_cuda_without_gpu_exits_2(capsys):
    """--device cuda on a machine without CUDA exits 2 with one sentence."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, _, err = run(capsys, "time", "gemm", "8", "8", "8", "--device", "cuda")
    assert code == 2 and "no CUDA GPU" in err


def test_missing_torch_exits_2_naming_the_extra(capsys, monkeypatch):
    """Without torch the command says what to install (packages that exist on the index, or
    the clone's `live` extra; the kit itself is not on the package index)."""
    monkeypatch.setitem(sys.modules, "torch", None)
    code, _, err = run(capsys, "time", "gemm", "8", "8", "8")
    assert code == 2 and "pip install torch" in err and "pip install -e '.[live]'" in err
    assert "dlperf_widgets[" not in err
