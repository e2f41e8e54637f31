"""Guards live/workloads.py and `dlperf reconcile --workloads`: the shipped whole-workload
measurements are read with their provenance, priced kernel by kernel, and reported by kind."""

from __future__ import annotations

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.live.workloads import (
    load_workload_measurements,
    predict_measurement,
    workload_error_report,
)

EXCLUDED = ("TensorRT", "llm-awq", "TinyChat", "torchtitan", "NeMo", "Megatron-Bridge")


def test_shipped_rows_name_their_source_and_no_excluded_one():
    """Every shipped row cites a source, and none comes from the sources kept out for an
    independent test (TensorRT-LLM, TinyChat, FlashAttention-2's tables, torchtitan, NeMo,
    Megatron-Bridge, llm-foundry's H100 tables)."""
    rows = load_workload_measurements()
    assert len(rows) >= 50
    for r in rows:
        assert r["source"] and r["published_value"]
        assert not any(word in r["source"] for word in EXCLUDED), r["id"]
        assert "FlashAttention-2" not in r["source"]
        if "llm-foundry" in r["source"]:
            assert "H100" not in r["source"], r["id"]


def test_every_kind_is_reported_with_its_errors():
    """The report has the five kinds and, per kind, a median no larger than its p90."""
    report = workload_error_report()
    assert set(report.by_kind) == {"training", "prefill", "decode", "attention", "memory"}
    for s in report.by_kind.values():
        assert 0 <= s["median_error"] <= s["p90_error"] <= s["worst_error"]
    assert "decode" in str(report)


def test_errors_by_kind_stay_within_the_calibrated_levels():
    """The kernel-by-kernel model on its shipped rows: median error at most 12 % for every
    kind (training 6.5 %, memory 10.8 %, attention 9.1 %, decode 1.7 % when written), and
    no row more than 2x off; a change to the model's physics or constants that loses
    accuracy fails here."""
    report = workload_error_report()
    limits = {"training": 0.12, "memory": 0.12, "attention": 0.12, "decode": 0.12}
    for kind, limit in limits.items():
        assert report.by_kind[kind]["median_error"] <= limit, kind
        assert report.by_kind[kind]["beyond_2x"] == 0, kind


def test_no_prefill_row_is_more_than_2x_off():
    """Prefill rows: none more than 2x off. Their median (38.8 % when written) is above the
    other kinds' 12 %: the model prices a fused prefill, which a TGI server runs within
    12 % of it, while Hugging Face transformers' eager forward (FP32 RMSNorm, unfused
    rotary and projections, logits for every position) takes 1.6-1.9x the model's time."""
    report = workload_error_report()
    assert report.by_kind["prefill"]["count"] >= 8
    assert report.by_kind["prefill"]["beyond_2x"] == 0


def test_a_row_is_the_workload_priced_by_hand():
    """A decode row's prediction is batch / step of price(workload(...)) for its options."""
    from dlperf_widgets.core.workload import price, workload

    row = next(r for r in load_workload_measurements() if r["id"] == "GF-l2-7b-int4")
    pred, priced = predict_measurement(row)
    w = workload("llama-2-7b", phase="decode", batch=1, context=105, precision="bf16",
                 weights="int4", group_size=32)  # fmt: skip
    assert pred == pytest.approx(1 / price(w, "A100-SXM4-80GB").step_s)
    assert priced.workload.weights == "int4"


def test_a_prefill_row_is_its_step_priced_by_hand():
    """A prefill row's prediction is the step of price(workload(...)) in the row's unit, and
    never faster than the ideal time of its GEMMs: 2 x 12.69e9 weights of Llama-2-13B's
    layers (40 x (4 x 5120^2 + 3 x 5120 x 13824)) x 4000 tokens at the A100's 312 TFLOPS
    FP16 dense peak (NVIDIA A100 datasheet)."""
    from dlperf_widgets.core.workload import price, workload

    row = next(r for r in load_workload_measurements() if r["id"] == "TGI-l2-13b-b100")
    pred, priced = predict_measurement(row)
    w = workload("llama-2-13b", phase="prefill", batch=100, seq=40, precision="fp16",
                 attention="flash2")  # fmt: skip
    assert pred == pytest.approx(1e3 * price(w, "A100-SXM4-80GB", timing="eager").step_s)
    assert priced.workload.phase == "prefill" and priced.timing == "eager"
    layer_weights = 40 * (4 * 5120**2 + 3 * 5120 * 13824)
    assert pred > 1e3 * 2 * layer_weights * 4000 / 312e12


def test_prefill_metric_needs_a_prefill_row():
    """A row measured as 'prefill_s' but priced as another phase is refused with one sentence
    naming the options, not compared with a different step."""
    row = dict(next(r for r in load_workload_measurements() if r["id"] == "TGI-l2-13b-b100"))
    row["options"] = row["options"].replace("phase=prefill", "phase=decode")
    with pytest.raises(InvalidParameter, match="'options' must say phase=prefill"):
        predict_measurement(row)


def test_reconcile_workloads_on_the_command_line(capsys):
    """`dlperf reconcile --workloads` prints the table by kind; with a trace name it exits 2
    with one line."""
    assert main(["reconcile", "--workloads"]) == 0
    out, err = capsys.readouterr()
    assert "training" in out and "attention" in out and not err
    assert main(["reconcile", "--workloads", "xla_h100-sxm"]) == 2
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1


def test_flashattention_pytorch_rows_match_their_table():
    """The FlashAttention paper's 'PyTorch Attention' rows come from its Table 18, which the
    paper's Table 8 lists as the run with no dropout and no masking: the rows say so and price
    neither a dropout nor a causal mask; they are the forward times of Table 18, as published
    (0.43, 1.27, 4.32, 16.47, 67.77 ms at 512 to 8192 tokens)."""
    rows = [r for r in load_workload_measurements() if r["id"].startswith("FA1-standard-")]
    published = {"512": 0.43, "1024": 1.27, "2048": 4.32, "4096": 16.47, "8192": 67.77}
    assert {r["id"].removeprefix("FA1-standard-"): float(r["published_value"])
            for r in rows} == published  # fmt: skip
    for r in rows:
        assert "Table 18" in r["source"] and "no dropout and no masking" in r["source"]
        assert "dropout=True" not in r["options"] and "causal=False" in r["options"]
        _, priced = predict_measurement(r)
        names = {k.name for k in priced.workload.kernels}
        assert "attention dropout" not in names and "value copy" in names
