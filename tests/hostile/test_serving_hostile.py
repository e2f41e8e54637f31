"""Hostile input to the serving model and ``dlperf serve``: every bad value gives the kit's
error in one short sentence, quickly; the CLI exits 2 with one line and no traceback."""

from __future__ import annotations

import pytest
from hostile_support import HOSTILE_NUMBERS, assert_kit_error

from dlperf_widgets.cli import main
from dlperf_widgets.core import serving as sv

CALLS = {
    "kv_budget.block_size": lambda v: sv.kv_budget(block_size=v),
    "kv_budget.prompt_len": lambda v: sv.kv_budget(prompt_len=v),
    "kv_budget.gpu_memory_utilization": lambda v: sv.kv_budget(gpu_memory_utilization=v),
    "kv_budget.workspace_bytes": lambda v: sv.kv_budget(workspace_bytes=v),
    "block_table.lengths": lambda v: sv.block_table(v),
    "simulate_batching.output_lens": lambda v: sv.simulate_batching(v, 4),
    "simulate_batching.max_batch": lambda v: sv.simulate_batching([3, 4], v),
    "mixed_step.decode_batch": lambda v: sv.mixed_step(decode_batch=v),
    "mixed_step.chunk": lambda v: sv.mixed_step(chunk=v),
    "serving_slo.ttft_slo_s": lambda v: sv.serving_slo(ttft_slo_s=v),
    "serving_slo.batches": lambda v: sv.serving_slo(batches=v),
    "expected_accepted_tokens.acceptance": lambda v: sv.expected_accepted_tokens(v, 4),
    "simulate_speculative.iterations": lambda v: sv.simulate_speculative(0.5, 4, v),
    "speculative.draft_len": lambda v: sv.speculative(draft_len=v),
    "speculative.acceptance": lambda v: sv.speculative(acceptance=v),
    "experts_hit.batch": lambda v: sv.experts_hit(v),
    "moe_decode.batch": lambda v: sv.moe_decode(batch=v),
    "tensor_parallel_inference.degrees": lambda v: sv.tensor_parallel_inference(degrees=v),
    "split_kv.context": lambda v: sv.split_kv(context=v),
    "energy_per_token.power_w": lambda v: sv.energy_per_token(power_w=v),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_serving_entries_reject_hostile_numbers_in_one_sentence(name):
    """Each hostile number either works (a valid value) or gives one short kit error."""
    for value in HOSTILE_NUMBERS:
        assert_kit_error(lambda v=value: CALLS[name](v), seconds=5.0)


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "kv", "--block-size", "0"],
        ["serve", "kv", "--prompt-len", "1e30"],
        ["serve", "slo", "--ttft", "nan"],
        ["serve", "slo", "--chunk", "-4"],
        ["serve", "speculative", "--acceptance", "2"],
        ["serve", "moe", "--batch", "9" * 500],
        ["serve", "tp", "--model", "gpt-17"],
        ["serve", "splitkv", "--context", "0"],
        ["serve", "energy", "--power", "-1"],
        ["serve", "nothing"],
    ],
)
def test_serve_cli_exits_2_with_one_line(capsys, argv):
    """Bad values and words exit 2 with one line on stderr and nothing on stdout."""
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert len(out.err.strip().splitlines()) == 1 and "Traceback" not in out.err
