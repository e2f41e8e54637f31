"""Guards live.profile (``explain``): kernels matched to their launching operators, the
timeline measured from the trace, the share of GPU time the model prices on each shipped
trace, the fix ranked first on each, and one sentence for every bad trace."""

from __future__ import annotations

import gzip
import json
import time
import zlib

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.live.profile import explain, read_profile, shipped_profiles

SHIPPED = shipped_profiles()


def test_three_traces_are_shipped_small():
    """Three real GPU traces ship, each a few MB at most."""
    assert set(SHIPPED) == {"a100_alexnet_forward", "v100_cnn_training",
                            "distributed_recsys_rank0"}  # fmt: skip
    assert all(p.stat().st_size < 3 << 20 for p in SHIPPED.values())


def test_alexnet_trace_pageable_copies_rank_first_and_are_priced():
    """The A100 AlexNet trace spends most GPU time copying inputs from pageable memory: the
    model prices those copies (84 % of kernel time priced) and pinning memory ranks first,
    recovering the measured time above the PCIe 4 link's 32 GB/s."""
    r = explain(SHIPPED["a100_alexnet_forward"])
    assert r.gpu == "A100-SXM4-40GB"
    assert r.priced_share == pytest.approx(0.84, abs=0.01)
    first = r.findings[0]
    assert first.fix.startswith("pin host memory")
    copies = [k for k in r.kernels if k.kind == "memcpy" and "Pageable" in k.name]
    measured = sum(k.time_s for k in copies)
    at_link = sum(k.predicted_s for k in copies)
    assert first.recoverable_s == pytest.approx(measured - at_link)
    nbytes = sum(e["args"]["bytes"] for e in read_profile(SHIPPED["a100_alexnet_forward"]).gpu_events
                 if "Pageable" in e["name"])  # fmt: skip
    assert at_link == pytest.approx(nbytes / 32e9, rel=0.05)  # PCIe 4.0 x16: 32 GB/s
    assert r.top_kernels[0][0] == "aten::copy_"


def test_every_kernel_is_matched_to_its_launching_operator():
    """Each kernel of the AlexNet trace finds the innermost operator that launched it (by
    correlation id), and GEMM kernels come from aten::addmm (the linear layers)."""
    r = explain(SHIPPED["a100_alexnet_forward"])
    assert all(k.op for k in r.kernels)
    assert {k.op for k in r.kernels if "sgemm" in k.name} == {"aten::addmm"}


def test_cnn_training_trace_is_busy_and_fusion_ranks_first():
    """The V100 CNN training trace keeps the GPU busy (idle < 5 % of the span); without
    recorded shapes little is priced (< 5 %), and fusing element-wise chains ranks first."""
    r = explain(SHIPPED["v100_cnn_training"])
    assert r.gpu == "V100-SXM2-32GB"
    assert r.idle_s / r.span_s < 0.05
    assert r.priced_share < 0.05
    assert r.findings[0].fix.startswith("fuse")


def test_distributed_trace_measures_communication_and_overlap():
    """The 128-rank trace is dominated by NCCL kernels (over half the kernel time); the
    overlap with computation is at most the smaller of the two, and the GEMMs with recorded
    shapes are priced once a GPU is named."""
    r = explain(SHIPPED["distributed_recsys_rank0"])
    assert r.gpu == "" and r.priced_share == 0
    assert r.communication_s > 0.5 * r.kernel_time_s
    assert 0 < r.communication_overlapped_s <= r.communication_s
    priced = explain(SHIPPED["distributed_recsys_rank0"], "A100")
    gemms = [k for k in priced.kernels if k.kind == "gemm" and k.predicted_s is not None]
    assert gemms and priced.priced_share > 0.05
    assert priced.findings[0].recoverable_s >= priced.findings[-1].recoverable_s


def _trace(events, **extra):
    return json.dumps({"traceEvents": events, **extra}).encode()


def test_busy_time_and_launch_gaps_on_a_hand_made_timeline():
    """Two 10 us kernels with a 5 us gap whose launch came after the first ended: busy
    20 us, idle 5 us, all of it launch-bound; overlapping kernels count once."""
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 0, "dur": 100, "tid": 1},
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": 1,
            "dur": 1,
            "tid": 1,
            "args": {"correlation": 1},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": 20,
            "dur": 1,
            "tid": 1,
            "args": {"correlation": 2},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "vectorized_elementwise_kernel",
            "ts": 5,
            "dur": 10,
            "args": {"correlation": 1, "stream": 7},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "vectorized_elementwise_kernel",
            "ts": 20,
            "dur": 10,
            "args": {"correlation": 2, "stream": 7},
        },
    ]
    r = explain(_trace(ev), "A100")
    assert r.gpu_busy_s == pytest.approx(20e-6)
    assert r.idle_s == pytest.approx(5e-6)
    assert r.launch_bound_idle_s == pytest.approx(5e-6)
    assert {k.op for k in r.kernels} == {"aten::add"}


def test_live_cpu_trace_reads_but_has_nothing_to_explain(tmp_path):
    """A trace recorded here on the CPU reads with the same reader (its operators listed),
    and explain says in one sentence that it holds no GPU kernels."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        (x @ x).relu()
    path = tmp_path / "cpu.json"
    prof.export_chrome_trace(str(path))
    p = read_profile(path)
    assert any(name == "aten::mm" for name, _, _ in p.top_ops(20))
    with pytest.raises(InvalidParameter, match="no GPU kernels"):
        explain(path)


def _one_sentence(source, **kw):
    start = time.perf_counter()
    with pytest.raises(InvalidParameter) as e:
        explain(source, **kw)
    assert time.perf_counter() - start < 10
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 300 and msg.startswith("'trace'")
    return msg


def test_hostile_traces_give_one_sentence_each(tmp_path):
    """Empty, blank, truncated, foreign JSON, binary and a missing file: one sentence."""
    good = gzip.decompress(SHIPPED["a100_alexnet_forward"].read_bytes())
    assert "blank" in _one_sentence(b"")
    assert "blank" in _one_sentence(b"   \n ")
    assert "truncated" in _one_sentence(good[: len(good) // 2])
    assert "traceEvents" in _one_sentence(b'{"rows": [1, 2, 3]}')
    assert "traceEvents" in _one_sentence(b"[1, 2, 3]")
    assert "UTF-8" in _one_sentence(bytes(range(256)) * 4)
    assert "exists" in _one_sentence(str(tmp_path / "nope.json"))
    assert "gzip" in _one_sentence(b"\x1f\x8b" + b"\0" * 40)


def test_huge_traces_are_refused_without_reading_them(tmp_path):
    """A 1 GiB file is refused by its size before any byte is read; 1 GiB of whitespace
    gzipped to a few MB is refused after decompressing 64 MiB, not 1 GiB."""
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(1 << 30)
    assert "MiB" in _one_sentence(str(big))
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)
    chunk = b" " * (1 << 20)
    parts = [comp.compress(chunk) for _ in range(1024)] + [comp.flush()]
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(b"".join(parts))
    assert bomb.stat().st_size < 8 << 20
    assert "decompress" in _one_sentence(str(bomb))


def test_explain_cli_prints_the_ranked_fixes_and_json(capsys):
    """`dlperf explain NAME` accepts a shipped trace's name; --json carries the findings."""
    assert main(["explain", "a100_alexnet_forward"]) == 0
    assert "pin host memory" in capsys.readouterr().out
    assert main(["explain", "a100_alexnet_forward", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["findings"][0]["fix"].startswith("pin host memory")
    assert main(["explain", "no-such-trace.json"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1


def test_gemv_finding_is_the_models_time_per_row_at_twice_the_rows():
    """For a recorded skinny GEMM, the 'batch these GEMVs' fix recovers the measured time x
    (1 - t(2 rows) / (2 t(rows))), both times from the GEMM model (recomputed here)."""
    from dlperf_widgets.core.gemm import gemm_sweep

    r = explain(SHIPPED["distributed_recsys_rank0"], "A100")
    f = next(f for f in r.findings if f.fix.startswith("batch these GEMVs"))
    rows = [k for k in r.kernels if k.gemm and f"{k.op} {k.gemm[0]}x{k.gemm[1]}x"
            f"{k.gemm[2]}" == f.where]  # fmt: skip
    m, n, k, nb = rows[0].gemm
    m2, n2 = (2 * m, n) if m <= n else (m, 2 * n)
    one = float(gemm_sweep(m, n, k, batch=nb, dtype=rows[0].dtype, gpu="A100").predicted_time_s)
    two = float(gemm_sweep(m2, n2, k, batch=nb, dtype=rows[0].dtype, gpu="A100").predicted_time_s)
    expected = sum(x.time_s for x in rows) * (1 - two / (2 * one))
    assert f.recoverable_s == pytest.approx(expected, rel=1e-6)
    assert f.kernels == len(rows)


def test_malformed_events_give_kit_errors_or_a_report():
    """Events with wrong types in every field (NaN, huge integers, lists for ids, strings for
    times, absurd shapes) never raise anything but the kit's one-sentence error."""
    import random

    from dlperf_widgets.core.errors import DlperfError

    rnd = random.Random(7)
    junk = [None, 1, -5, 1e308, float("nan"), "x", [], {}, [1, 2], True, 10**30, 10**400]
    dims = [[[2, 3], [3, 4]], "x", [[None]], [[2**40, 3], [3, 2**40]], [[4], [2, 3, 4], [2, 4, 5]]]
    for _ in range(400):
        events = [
            {
                "ph": rnd.choice(["X", "X", "i"]),
                "cat": rnd.choice(["kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", None]),
                "name": rnd.choice(["aten::mm", "aten::bmm", "Memcpy HtoD (Pageable)", 5]),
                "ts": rnd.choice([*junk, 0, 10]),
                "dur": rnd.choice([*junk, 1, 5]),
                "tid": rnd.choice([*junk, 1]),
                "args": rnd.choice(
                    [
                        {
                            "correlation": rnd.choice([*junk, 1]),
                            "bytes": rnd.choice(junk),
                            "Input Dims": rnd.choice(dims),
                            "Input type": ["float"] * 3,
                            "stream": rnd.choice(junk),
                        },
                        None,
                    ]
                ),
            }
            for _ in range(rnd.randint(0, 6))
        ]
        text = json.dumps({"traceEvents": events}).encode()
        try:
            explain(text, rnd.choice([None, "A100"]))
        except DlperfError as exc:
            assert "\n" not in str(exc)


def _one_gemm_trace(dims, dur_us):
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1000, "tid": 1,
         "args": {"Input Dims": dims, "Input type": ["c10::Half", "c10::Half"]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 2,
         "tid": 1, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "sm80_xmma_gemm_f16f16_f16f32", "ts": 5,
         "dur": dur_us, "args": {"correlation": 1, "stream": 7}},
    ]  # fmt: skip
    return json.dumps({"traceEvents": ev}).encode()


def test_fill_the_last_wave_on_a_recorded_gemm():
    """A 3072x4096x4096 FP16 GEMM on an A100 in 256x128 tiles: 12 x 32 = 384 tiles in 4 waves
    of 108 SMs (432 slots, 89 % full); 13 tile rows (3328 rows, 416 tiles) still fit in 4
    waves, so the fix proposes 3328 rows and recovers the model's time per row difference."""
    from dlperf_widgets.core.gemm import gemm_sweep

    r = explain(_one_gemm_trace([[3072, 4096], [4096, 4096]], 470), "A100")
    f = next(f for f in r.findings if f.fix.startswith("fill the last wave"))
    assert "3328 rows instead of 3072" in f.fix
    per_row = [float(gemm_sweep(m, 4096, 4096, dtype="fp16", gpu="A100").predicted_time_s) / m
               for m in (3072, 3328)]  # fmt: skip
    assert f.recoverable_s == pytest.approx(470e-6 * (1 - per_row[1] / per_row[0]))
    assert r.priced_share == 1.0


def test_pad_k_on_a_recorded_gemm():
    """K = 4095 in FP16 misses the Tensor Cores' multiple of 8: the fix pads K to 4096, and
    what it recovers is the measured time x (1 - model(4096) / model(4095))."""
    from dlperf_widgets.core.gemm import gemm_sweep

    r = explain(_one_gemm_trace([[4096, 4095], [4095, 4096]], 900), "A100")
    f = next(f for f in r.findings if "pad" in f.fix and "k" in f.fix.lower())
    t = [float(gemm_sweep(4096, 4096, k, dtype="fp16", gpu="A100").predicted_time_s)
         for k in (4095, 4096)]  # fmt: skip
    assert f.recoverable_s == pytest.approx(900e-6 * (1 - t[1] / t[0]))
    assert r.findings[0] is f
