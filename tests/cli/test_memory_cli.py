"""Guards ``dlperf memory``: JSON keys equal the Python result, and bad input exits 2 with one line."""

from __future__ import annotations

import json

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.core.memory import training_memory

KEYS = (
    "weights_bytes",
    "gradients_bytes",
    "optimizer_bytes",
    "activations_bytes",
    "total_bytes",
    "per_gpu_bytes",
    "fits",
)


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_json_keys_and_values_mirror_python(capsys):
    """--json has the documented keys, and the same numbers as training_memory()."""
    argv = [
        "memory",
        "--params",
        "7B",
        "--layers",
        "32",
        "--hidden",
        "4096",
        "--seq-len",
        "2048",
        "--batch",
        "8",
        "--heads",
        "32",
        "--checkpointing",
        "sqrt",
        "--accumulation-steps",
        "2",
        "--data-parallel",
        "8",
        "--zero",
        "2",
        "--tensor-parallel",
        "2",
        "--pipeline-parallel",
        "2",
        "--gpu",
        "A100",
        "--json",
    ]
    out = _json(capsys, argv)
    for key in KEYS:
        assert key in out
    ref = training_memory(
        7e9,
        layers=32,
        hidden=4096,
        seq_len=2048,
        batch=8,
        heads=32,
        checkpointing="sqrt",
        accumulation_steps=2,
        data_parallel=8,
        zero=2,
        tensor_parallel=2,
        pipeline_parallel=2,
        gpu="A100",
    ).to_dict()
    assert out == json.loads(json.dumps(ref))


def test_r14_from_the_command_line(capsys):
    """R14 through the CLI: 1e6 parameters, FP32 + SGD with momentum = 4 + 4 + 4 bytes each."""
    out = _json(
        capsys,
        [
            "memory",
            "--params",
            "1e6",
            "--precision",
            "fp32",
            "--optimizer",
            "sgd-momentum",
            "--json",
        ],
    )
    assert (out["weights_bytes"], out["gradients_bytes"], out["optimizer_bytes"]) == (4e6, 4e6, 4e6)
    assert out["fits"] is None and out["activations_bytes"] == 0


def test_table_output(capsys):
    """Without --json the result prints as a table with a title."""
    assert main(["memory", "--params", "350M"]) == 0
    text = capsys.readouterr().out
    assert "Training memory" in text and "per_gpu_bytes" in text


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--params", "-5"], "'params' must be a positive number"),
        (["--params", "lots"], "'params' must be a number"),
        (["--params", "1e9", "--optimizer", "adm"], "'optimizer' must be one of"),
        (["--params", "1e9", "--zero", "7"], "'zero' must be an integer between 0 and 3"),
        (
            [
                "--params",
                "1e9",
                "--layers",
                "30",
                "--hidden",
                "4096",
                "--seq-len",
                "2048",
                "--batch",
                "8",
                "--heads",
                "32",
                "--pipeline-parallel",
                "4",
            ],
            "'pipeline_parallel' must divide layers (30)",
        ),
        (
            [
                "--params",
                "1e9",
                "--layers",
                "32",
                "--hidden",
                "4096",
                "--seq-len",
                "2048",
                "--batch",
                "8",
                "--heads",
                "32",
                "--tensor-parallel",
                "5",
            ],
            "'tensor_parallel' must divide heads (32)",
        ),
        (["--params", "1e9", "--gpu", "Z9000"], "Z9000"),
        ([], "--params"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, fragment):
    """Bad values exit with status 2 and a single line on stderr naming the problem."""
    assert main(["memory", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err


def test_convention_reproduces_the_zero_paper(capsys):
    """--convention zero-paper gives the ZeRO paper's 31.4 GB per GPU for 7.5B parameters at
    stage 1 on 64 GPUs; the default (FP32 gradients) gives 46.4 GB; a misspelt convention
    exits 2 with one line naming the parameter."""
    base = ["memory", "--params", "7.5B", "--optimizer", "adam", "--data-parallel", "64"]
    base += ["--zero", "1", "--json"]
    paper = _json(capsys, [*base, "--convention", "zero-paper"])
    assert round(paper["per_gpu_bytes"] / 1e9, 1) == 31.4
    assert round(_json(capsys, base)["per_gpu_bytes"] / 1e9, 1) == 46.4
    assert main([*base, "--convention", "megatron"]) == 2
    out = capsys.readouterr().out  # under --json the error is JSON on stdout
    error = json.loads(out)
    assert "'convention' must be one of" in error["error"] and error["parameter"] == "convention"


def test_model_shape_options_reach_the_kernel_list(capsys):
    """--attention, --kv-heads, --ffn, --gated-mlp, --vocab and --no-dropout give the same
    numbers as training_memory with those options, and fused attention keeps less than
    eager at a long sequence; a bad --attention exits 2 with one line on stderr."""
    shape = ["--params", "1B", "--layers", "4", "--hidden", "1024", "--seq-len", "4096",
             "--batch", "1", "--heads", "16", "--json"]  # fmt: skip
    extra = ["--kv-heads", "4", "--ffn", "2816", "--gated-mlp", "--vocab", "32000", "--no-dropout"]
    got = {
        a: _json(capsys, ["memory", *shape, *extra, "--attention", a]) for a in ("eager", "sdpa")
    }
    for a, out in got.items():
        ref = training_memory(1e9, layers=4, hidden=1024, seq_len=4096, batch=1, heads=16,
                              kv_heads=4, ffn=2816, gated_mlp=True, vocab=32000, dropout=False,
                              attention=a)  # fmt: skip
        assert out["activations_bytes"] == ref.activations_bytes
    assert got["sdpa"]["activations_bytes"] < 0.7 * got["eager"]["activations_bytes"]
    assert main(["memory", *shape[:-1], "--attention", "fast"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'attention' must be one of" in err
