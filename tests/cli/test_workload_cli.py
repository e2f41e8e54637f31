"""Guards the kernel views on the command line: `dlperf decode --kernels` and `dlperf step
--kernels / --model / --recompute` show which kernels take the time, as text and JSON."""

from __future__ import annotations

import json

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.core.inference import llm_inference


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_decode_kernels_json_adds_up_to_the_step(capsys):
    """The categories of `decode --kernels --json` add up to the decode step of
    llm_inference, and the largest kernel at batch 256 is attention streaming the caches."""
    code, out, err = run(capsys, "decode", "llama-2-7b", "--batch", "256", "--context", "512",
                         "--kernels", "--json")  # fmt: skip
    assert code == 0 and not err
    data = json.loads(out)
    ref = llm_inference("llama-2-7b", batch=256, context=512).decode_step_s
    assert sum(data["categories"].values()) == pytest.approx(ref)
    assert data["kernels"][0]["kind"] == "attention"


def test_step_with_a_model_reports_memory_and_kernels(capsys):
    """`dlperf step --model` prices a named model and says whether it fits; --kernels prints
    the table of kernels and the categories."""
    code, out, _ = run(capsys, "step", "--model", "llama-2-70b", "--gpus", "8",
                       "--tensor-parallel", "8", "--global-batch", "8")  # fmt: skip
    assert code == 0 and "MFU" in out and "fit" in out
    code, out, _ = run(capsys, "step", "--gpus", "8", "--global-batch", "8", "--kernels")
    assert code == 0 and "share" in out and "GEMMs" in out


@pytest.mark.parametrize(
    "argv",
    [["step", "--recompute", "some"], ["step", "--attention", "magic"],
     ["step", "--model", "gpt-9"]],
)  # fmt: skip
def test_bad_options_exit_2_with_one_line(capsys, argv):
    """Bad kernel-view options are one line on stderr and exit status 2."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out and len(err.strip().splitlines()) == 1
