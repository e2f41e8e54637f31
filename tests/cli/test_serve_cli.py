"""Guards ``dlperf serve``: its JSON mirrors core.serving, every WHAT prints a table."""

from __future__ import annotations

import json

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.core import serving as sv


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_serve_kv_json_mirrors_python(capsys):
    """--json of `serve kv` has the same blocks and sequences as kv_budget()."""
    out = _json(capsys, ["serve", "kv", "--model", "opt-13b", "--gpu", "A100-40GB",
                         "--max-model-len", "2048", "--json"])  # fmt: skip
    r = sv.kv_budget("opt-13b", "A100-40GB", max_model_len=2048)
    for key in ("blocks", "sequences_paged", "sequences_reserved", "kv_bytes_per_token"):
        assert out[key] == getattr(r, key), key


def test_serve_slo_and_speculative_json_mirror_python(capsys):
    """--json of `serve slo` and `serve speculative` carry the core's answers."""
    out = _json(capsys, ["serve", "slo", "--prompt-len", "1024", "--tpot", "0.04", "--json"])
    assert out["best_batch"] == sv.serving_slo(prompt_len=1024, tpot_slo_s=0.04).best_batch
    out = _json(capsys, ["serve", "speculative", "--acceptance", "0.7", "--json"])
    assert out["speedup"] == pytest.approx(sv.speculative(acceptance=0.7, gpu="A100").speedup)


@pytest.mark.parametrize("what", ["kv", "slo", "speculative", "moe", "tp", "splitkv", "energy"])
def test_every_serve_question_prints_a_titled_table(capsys, what):
    """Each WHAT prints plain text whose first line names what was computed."""
    assert main(["serve", what]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert len(first) > 20 and "Result" not in first


@pytest.fixture(scope="module")
def shell():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "dlperf_widgets")
    return sh


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("serve kv --model opt-13b --gpu A100-40GB", "opt-13b KV cache on A100-SXM4-40GB"),
        ("explain a100_alexnet_forward", "pin host memory"),
    ],
)
def test_magic_runs_serve_and_explain(shell, line, fragment):
    """%dlperf takes the same serve and explain lines as the CLI and shows their result."""
    import html

    out = shell.run_line_magic("dlperf", line)
    text = html.unescape(out._repr_html_())
    assert "dlperf-error" not in text and fragment in text


def test_magic_bad_serve_line_is_one_red_line(shell):
    """A bad value in %dlperf serve is one red line naming the parameter."""
    import html
    import re

    text = html.unescape(shell.run_line_magic("dlperf", "serve slo --chunk 0")._repr_html_())
    assert len(re.findall("dlperf-error", text)) == 1 and "'chunk'" in text
