"""Live timing under hostile input: bounded CPU work and memory, messages that tell the truth."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")

from dlperf_widgets.core.errors import DlperfError, InvalidParameter  # noqa: E402
from dlperf_widgets.live import timing  # noqa: E402
from dlperf_widgets.live.magic import dlperf_time_cell  # noqa: E402
from dlperf_widgets.live.timing import time_callable, time_gemm, time_layer  # noqa: E402


def test_huge_cpu_gemm_is_refused_at_once_with_the_estimate():
    """`time gemm 4096 4096 4096` (fp16 on a CPU) ran about 14 minutes; now refused up front."""
    start = time.perf_counter()
    with pytest.raises(DlperfError, match=r"would take about .* over the 60 s budget.*max_seconds"):
        time_gemm(4096, 4096, 4096, dtype="fp16", device="cpu")
    assert time.perf_counter() - start < 2.0


def test_cpu_default_dtype_is_fp32():
    """fp16 on a CPU has no fast kernels (about 7x slower here): the CPU default is fp32."""
    r = time_gemm(32, 32, 32, device="cpu", repeats=1, warmup=0)
    assert r.dtype == "fp32"


@pytest.mark.parametrize("repeats", [1e30, 10**30, 10**6])
def test_repeats_are_capped(repeats):
    """`--repeats 1e30` never ended."""
    with pytest.raises(InvalidParameter, match="'repeats' must be"):
        time_gemm(8, 8, 8, device="cpu", repeats=repeats)


def test_repeats_stop_once_the_budget_is_spent():
    """A wrong estimate cannot run on: repeats stop after max_seconds (at least one runs)."""
    start = time.perf_counter()
    r = time_callable(lambda: time.sleep(0.1), device="cpu", repeats=1000, warmup=0,
                      flush_l2=False, max_seconds=0.3)  # fmt: skip
    assert time.perf_counter() - start < 2.0
    assert 1 <= r.repeats < 1000 and len(r.times_s) == r.repeats


def test_operands_are_made_in_their_dtype(monkeypatch):
    """Operands drawn in FP32 and cast needed 3x the memory of an fp16 operand."""
    asked = []
    real = torch.randn

    def spy(*shape, **kw):
        asked.append(kw.get("dtype"))
        return real(*shape, **kw)

    monkeypatch.setattr(torch, "randn", spy)
    time_gemm(16, 16, 16, dtype="bf16", device="cpu", repeats=1, warmup=0)
    assert asked and set(asked) == {torch.bfloat16}


def test_attention_counts_its_score_matrix(monkeypatch):
    """Attention's batch x heads x seq^2 scores were not counted (estimate MBs, peak 9.6 GB)."""
    monkeypatch.setattr(timing, "_available_bytes", lambda torch_, info: 100 * 2**20)
    with pytest.raises(DlperfError, match="needs about"):
        time_layer("attention", batch=1, seq_len=4096, hidden=64, heads=1, dtype="fp32",
                   device="cpu", repeats=1, warmup=0, flush_l2=False)  # fmt: skip


def test_layers_check_memory_before_allocating(monkeypatch):
    """time_layer counted FLOPs (allocating every tensor) before the memory check."""
    monkeypatch.setattr(timing, "_available_bytes", lambda torch_, info: 2**20)

    def must_not_run(*args, **kwargs):
        raise AssertionError("allocated before the memory check")

    monkeypatch.setattr(timing, "_count", must_not_run)
    with pytest.raises(DlperfError, match="needs about"):
        time_layer("linear", batch=1024, inputs=1024, outputs=1024, dtype="fp32",
                   device="cpu", flush_l2=False)  # fmt: skip


@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf", "-inf"])
def test_magic_flops_must_be_positive_and_finite(value):
    """`%%dlperf_time --flops -5` printed '-322 kFLOP/s'; nan and inf passed."""
    out = dlperf_time_cell(f"--flops={value} --device cpu --repeats 1 --warmup 0", "x = 1")
    assert "'flops' must be" in repr(out)


def test_magic_reports_the_cells_own_memory_error():
    """A cell's own MemoryError read 'ran out of memory (needs 0.00 GiB)'."""
    out = repr(dlperf_time_cell("--device cpu --repeats 1 --warmup 0", "raise MemoryError()"))
    assert "0.00 GiB" not in out and "the timed code" in out
