"""Guards the `dlperf layer` and `dlperf model` commands: JSON keys, published numbers
through the CLI, and bad input (exit 2, one line, no traceback)."""

from __future__ import annotations

import json

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.core.layers import LAYER_KINDS


def _json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_layer_linear_json_keys_and_r06(capsys):
    """`dlperf layer linear` gives layer, passes (pass, m, n, k, flops, bytes, AI, limiter,
    predicted_time_s) and findings; R06 on V100: forward AI ~ 315, math-bound."""
    d = _json(
        capsys,
        "layer",
        "linear",
        "--batch",
        "512",
        "--inputs",
        "1024",
        "--outputs",
        "4096",
        "--gpu",
        "V100",
    )
    assert {"layer", "passes", "findings"} <= set(d)
    assert d["layer"] == "linear"
    fwd = d["passes"][0]
    assert {
        "pass",
        "m",
        "n",
        "k",
        "flops",
        "bytes",
        "arithmetic_intensity",
        "limiter",
        "predicted_time_s",
    } <= set(fwd)
    assert (fwd["pass"], fwd["m"], fwd["n"], fwd["k"]) == ("forward", 4096, 512, 1024)
    assert round(fwd["arithmetic_intensity"]) == 315
    assert fwd["limiter"] == "math"
    assert [p["pass"] for p in d["passes"]] == ["forward", "dgrad", "wgrad"]


def test_layer_maxpool_r08_and_relu_r09(capsys):
    """R08 and R09 through the CLI: 2.25 and 0.25 FLOP/B in FP16, k is null (no GEMM)."""
    d = _json(
        capsys,
        "layer",
        "maxpool",
        "--shape",
        "32,64,56,56",
        "--kernel-size",
        "3",
        "--stride",
        "1",
        "--padding",
        "1",
        "--gpu",
        "V100",
    )
    assert d["passes"][0]["arithmetic_intensity"] == pytest.approx(2.25)
    assert d["passes"][0]["k"] is None
    d = _json(capsys, "layer", "relu", "--elements", "67108864", "--gpu", "V100")
    assert d["passes"][0]["arithmetic_intensity"] == pytest.approx(0.25)
    assert d["passes"][0]["limiter"] == "memory"


def test_layer_conv2d_options(capsys):
    """Every documented conv option is accepted; the layout finding appears."""
    d = _json(
        capsys,
        "layer",
        "conv2d",
        "--batch",
        "8",
        "--in-channels",
        "3",
        "--out-channels",
        "64",
        "--height",
        "224",
        "--width",
        "224",
        "--kernel-size",
        "7",
        "--stride",
        "2",
        "--padding",
        "3",
        "--groups",
        "1",
        "--layout",
        "nchw",
    )
    params = {f["parameter"] for f in d["findings"]}
    assert {"in_channels", "layout"} <= params
    assert d["passes"][0]["m"] == 8 * 112 * 112


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_layer_recurrent(capsys, kind):
    """Recurrent options: --batch --input-size --hidden-size --seq-len."""
    d = _json(
        capsys,
        "layer",
        kind,
        "--batch",
        "32",
        "--input-size",
        "256",
        "--hidden-size",
        "512",
        "--seq-len",
        "10",
    )
    gates = 4 if kind == "lstm" else 3
    assert d["passes"][0]["m"] == gates * 512


def test_layer_attention_and_forward_only(capsys):
    """Attention options; --forward-only leaves only forward passes."""
    d = _json(
        capsys,
        "layer",
        "attention",
        "--batch",
        "2",
        "--seq-len",
        "128",
        "--hidden",
        "256",
        "--heads",
        "4",
        "--forward-only",
    )
    assert {p["pass"] for p in d["passes"]} == {"forward"}


def test_layer_attention_json_is_the_python_view(capsys):
    """`dlperf layer attention --json` gives the passes and totals of layer('attention'),
    the view of the step's kernel list: same ops, shapes and times; --qkv separate gives
    three projection GEMMs of hidden outputs each."""
    from dlperf_widgets.core.layers import layer

    argv = ["--batch", "4", "--seq-len", "256", "--hidden", "512", "--heads", "8"]
    d = _json(capsys, "layer", "attention", *argv, "--gpu", "A100")
    r = layer("attention", batch=4, seq_len=256, hidden=512, heads=8, gpu="A100")
    assert [(p["op"], p["pass"]) for p in d["passes"]] == [(p.op, p.pass_) for p in r.passes]
    assert d["predicted_time_s"] == r.predicted_time_s
    fwd = d["passes"][0]
    assert (fwd["op"], fwd["m"], fwd["n"], fwd["k"]) == ("qkv_projection", 4 * 256, 3 * 512, 512)
    sep = _json(capsys, "layer", "attention", *argv, "--qkv", "separate")["passes"][0]
    assert (sep["op"], sep["n"], sep["count"]) == ("q_k_v_projections", 512, 3)


def test_every_kind_runs_from_the_cli(capsys):
    """Each kind of LAYER_KINDS runs with its defaults and prints a table."""
    for kind in LAYER_KINDS:
        assert main(["layer", kind]) == 0, kind
        assert kind in capsys.readouterr().out


def test_model_transformer_json(capsys):
    """`dlperf model transformer` gives ops (with class), by_class with the three classes
    and their shares, and total_time_s; the R15 pattern holds."""
    d = _json(
        capsys,
        "model",
        "transformer",
        "--layers",
        "4",
        "--hidden",
        "512",
        "--heads",
        "8",
        "--seq-len",
        "256",
        "--batch",
        "8",
        "--vocab",
        "32000",
        "--ffn-mult",
        "4",
        "--dtype",
        "fp16",
        "--gpu",
        "A100",
    )
    assert {"ops", "by_class", "total_time_s"} <= set(d)
    assert all("class" in op and "pass" in op for op in d["ops"])
    assert set(d["by_class"]) == {"tensor_contraction", "statistical_normalization", "elementwise"}
    for v in d["by_class"].values():
        assert {"flops_share", "runtime_share"} <= set(v)
    tc = d["by_class"]["tensor_contraction"]
    assert tc["flops_share"] > 0.99 and tc["runtime_share"] < tc["flops_share"] - 0.1


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["layer", "linear", "--batch", "-3"], "'batch' must be a positive integer (got -3)"),
        (["layer", "linear", "--inputs", "0"], "'inputs' must be a positive integer (got 0)"),
        (["layer", "linear", "--batch", "1.5"], "'batch' must be an integer"),
        (
            [
                "layer",
                "conv2d",
                "--height",
                "4",
                "--width",
                "4",
                "--kernel-size",
                "9",
                "--padding",
                "1",
            ],
            "'kernel_size' must fit in the padded input",
        ),
        (
            ["layer", "attention", "--hidden", "1000", "--heads", "16"],
            "'heads' must divide hidden (1000)",
        ),
        (["layer", "attention", "--dtype", "int8"], "for an attention layer (got 'int8')"),
        (
            ["layer", "attention", "--batch", "65536", "--seq-len", "4096"],
            "'batch' x 'seq_len' must be at most",
        ),
        (["layer", "relu", "--kernel-size", "3"], "'kernel_size' is not an option of relu"),
        (["layer", "relu", "--shape", "4,x,2"], "'shape' must be comma-separated"),
        (["layer", "conv2d", "--layout", "hwcn"], "'layout' must be one of"),
        (["layer", "dense"], "'kind' must be one of"),
        (["layer", "linear", "--gpu", "V1000"], "V1000"),
        (
            ["model", "transformer", "--hidden", "1000", "--heads", "16"],
            "'heads' must divide hidden (1000)",
        ),
        (["model", "transformer", "--layers", "0"], "'layers' must be a positive integer"),
        (["model", "cnn"], "invalid choice"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, needle):
    """Bad input: exit status 2, one line on stderr naming the problem, no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_model_module_analyses_a_pytorch_model(capsys):
    """`dlperf model --module pkg.mod:factory --json` analyses the factory's model: GPT-2
    small's forward GEMM FLOPs equal the closed form (Narayanan et al. 2021); a bad spec
    exits 2 with one line."""
    pytest.importorskip("transformers")
    spec = "dlperf_widgets.live.examples:gpt2"
    d = _json(capsys, "model", "--module", spec, "--gpu", "H100", "--forward-only")
    L, h, s, V = 12, 768, 128, 50257
    closed = L * (24 * s * h * h + 4 * s * s * h) + 2 * s * h * V
    gemm = sum(op["flops"] for op in d["ops"] if op["class"] == "tensor_contraction")
    assert gemm == pytest.approx(closed, rel=1e-9)
    assert d["dtype"] == "fp32" and d["unpriced_ops"] == {}
    for argv, msg in (
        (["model", "--module", "no_such_pkg.mod:f"], "importable Python module"),
        (["model", "--module", "dlperf_widgets"], "package.module:function"),
        (["model", "--module", "dlperf_widgets.core.gemm:gemm_flops"], "no arguments"),
        (["model", "--module", "dlperf_widgets.core.gpus:gpu_names"], "(model, example_input)"),
        (["model", "transformer", "--module", spec], "not both"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert msg in err and "Traceback" not in err and len(err.splitlines()) == 1, err
