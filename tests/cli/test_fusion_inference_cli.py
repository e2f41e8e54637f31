"""Guards ``dlperf fuse``, ``dlperf attention`` and ``dlperf decode`` (CLI and %dlperf): JSON
mirrors the core, bad input exits 2 with one line, the magic shows one red line."""

from __future__ import annotations

import html
import json
import re

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.core.fusion import attention, fusion_chain
from dlperf_widgets.core.inference import llm_inference


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_fuse_json_mirrors_python(capsys):
    """--json of `fuse` has the same numbers as fusion_chain()."""
    out = _json(capsys, ["fuse", "bias,gelu", "--elements", "1048576", "--gpu", "V100", "--json"])
    r = fusion_chain("bias,gelu", elements=1048576, gpu="V100")
    for key in ("bytes_unfused", "bytes_fused", "kernels_unfused", "time_fused_s", "speedup"):
        assert out[key] == pytest.approx(getattr(r, key)), key


def test_attention_json_mirrors_python(capsys):
    """--json of `attention` has the same traffic and times as attention()."""
    argv = ["attention", "4096", "--head-dim", "128", "--heads", "32", "--gpu", "H100", "--json"]
    out = _json(capsys, argv)
    r = attention(4096, head_dim=128, heads=32, gpu="H100")
    for key in ("bytes_standard", "bytes_flash", "saved_bytes_standard", "time_flash_s"):
        assert out[key] == pytest.approx(getattr(r, key)), key


def test_decode_json_mirrors_python(capsys):
    """--json of `decode` has the same tokens/s, memory and TTFT as llm_inference()."""
    argv = ["decode", "llama-3-8b", "--gpu", "H100", "--batch", "16", "--context", "4096",
            "--weight-dtype", "int4", "--kv-dtype", "fp8", "--json"]  # fmt: skip
    out = _json(capsys, argv)
    r = llm_inference("llama-3-8b", gpu="H100", batch=16, context=4096, weight_dtype="int4",
                      kv_dtype="fp8")  # fmt: skip
    for key in ("tokens_per_s", "time_to_first_token_s", "kv_cache_bytes", "max_batch"):
        assert out[key] == pytest.approx(getattr(r, key)), key


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["fuse", "bias,conv", "--elements", "10"], "'ops' must list operations among"),
        (["fuse", "relu", "--elements", "x"], "'elements' must be an integer (got 'x')"),
        (["fuse", "relu"], "--elements"),
        (["attention", "0"], "'seq_len' must be"),
        (["attention", "128", "--sram-bytes", "16"], "'sram_bytes' must hold"),
        (["decode", "gpt-9"], "'model' must be one of"),
        (["decode", "llama-2-7b", "--batch", "-1"], "'batch' must be"),
        (["decode", "llama-2-7b", "--weight-dtype", "int2"], "'weight_dtype' must be one of"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, fragment):
    """Bad input: exit status 2, one line on stderr naming the parameter, no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def shell():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "dlperf_widgets")
    return sh


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("decode llama-2-7b --gpu A100", "llama-2-7b on A100-SXM4-80GB"),
        ("fuse softmax,dropout --elements 4096", "fusing softmax -&gt; dropout"),
        ("attention 1024", "attention N=1024"),
    ],
)
def test_magic_shows_the_table(shell, line, fragment):
    """%dlperf runs each new command and shows its result table."""
    out = shell.run_line_magic("dlperf", line)
    text = out._repr_html_()
    assert "dlperf-error" not in text
    assert html.unescape(fragment) in html.unescape(text)


def test_magic_bad_line_is_one_red_line(shell):
    """A bad value in the magic is one red line naming the parameter."""
    out = shell.run_line_magic("dlperf", "decode llama-2-7b --context 0")
    text = out._repr_html_()
    assert len(re.findall("dlperf-error", text)) == 1
    assert "'context' must be" in html.unescape(text)
