"""Guards the notebooks' prose against drifting from the core: every number a markdown cell
states that the core computes is listed here with the core call that produces it, and the
course table (notebook 00, the README, each notebook's own **Time:** line) agrees.

Each claim names a notebook, a cell id, a regular expression whose first group captures the
number as the prose writes it, and a function that computes the same quantity with the core.
The number must equal the core's value rounded to the digits the prose shows (``rel`` allows
a looser match where the prose says "about"). A claim whose cell or phrase has disappeared
fails too, so a rewrite that drops a checked sentence must drop or update its entry here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from dlperf_widgets import gemm, gpu, layer, transformer
from dlperf_widgets.core.calibration import achievable
from dlperf_widgets.core.memory import (
    saved_activation_bytes,
    training_memory,
    transformer_activation_bytes,
)
from dlperf_widgets.core.sparsity import compressed_weight_fraction, sparse_gemm
from dlperf_widgets.core.tiles import tile_efficiency
from dlperf_widgets.core.workload import workload_constants
from dlperf_widgets.live.traces import measured_gemms, model_error_report
from dlperf_widgets.live.workloads import load_workload_measurements, predict_measurement

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
GiB = 2**30
# notebook 08's running example
LLM = dict(layers=32, hidden=4096, seq_len=2048, batch=8, heads=32, gpu="A100")


@dataclass(frozen=True)
class Claim:
    notebook: str
    cell: str
    pattern: str
    value: Callable[[], float]
    rel: float = 0.0  # 0: exact to the digits shown


def _zero_gb(stage: int, convention: str = "zero-paper") -> float:
    return (
        training_memory(
            7.5e9, optimizer="adam", data_parallel=64, zero=stage, convention=convention
        ).per_gpu_bytes
        / 1e9
    )


def _layer_7b():  # type: ignore[no-untyped-def]
    return transformer_activation_bytes(LLM["seq_len"], LLM["batch"], LLM["hidden"], LLM["heads"])


def _bert_v100():  # type: ignore[no-untyped-def]
    return transformer(
        layers=24, hidden=1024, heads=16, seq_len=512, batch=8, dtype="fp16", gpu="V100"
    )


def _gpt2_small_mem():  # type: ignore[no-untyped-def]
    return training_memory(
        124_438_272, heads=12, layers=12, hidden=768, seq_len=1024, batch=8, gpu="V100"
    )


def _fp16_ratio(board: str, unit: str | None) -> float:
    g = gpu(board)
    return g.peak_flops("fp16") / g.peak_flops("fp32" if unit is None else "fp16", unit=unit)


def _gpt2_small_step(vocab: int = 50257):  # type: ignore[no-untyped-def]
    """Notebook 09's capstone: GPT-2 small, batch 8 x 1024, mixed precision on an A100."""
    return transformer(
        layers=12,
        hidden=768,
        heads=12,
        seq_len=1024,
        batch=8,
        vocab=vocab,
        dtype="fp16",
        gpu="A100",
    )


def _head_ms(pass_: str, vocab: int = 50257) -> float:
    (op,) = [
        p for p in _gpt2_small_step(vocab).ops if p.op == "head.projection" and p.pass_ == pass_
    ]
    return op.predicted_time_s * 1e3


def _padding_saving() -> float:
    return 1 - _gpt2_small_step(50264).total_time_s / _gpt2_small_step().total_time_s


def _contraction_share() -> float:
    return _gpt2_small_step().by_class["tensor_contraction"]["runtime_share"]


def _fused_bias_relu_gemm():  # type: ignore[no-untyped-def]
    return layer(
        "linear",
        batch=4096,
        inputs=1024,
        outputs=4096,
        dtype="fp16",
        gpu="A100",
        training=False,
        findings=False,
    ).pass_named("forward")


def _around_blocks_mib() -> float:
    r = saved_activation_bytes(
        256,
        2,
        128,
        4,
        layers=2,
        vocab=1000,
        attention="eager",
        precision="fp32",
        dropout=False,
        device="cpu",
    )
    return (r.stored_bytes - r.blocks_bytes) / 2**20


# notebooks 10-13: the calibrated time model's figures the prose quotes
def _attn_block_ratio(d: int) -> float:
    """M / d^2 for the 100 KiB FP16 SRAM of notebook 10 (M recovered from B_c = M / 4d)."""
    from dlperf_widgets.core.fusion import attention

    a = attention(4096, head_dim=d, heads=16, batch=8, sram_bytes=100 * 1024)
    return a.block_cols * 4 * d / d**2


def _widest_band() -> tuple[float, float]:
    """The error band a GPU without shipped measurements gets: the widest of any regime."""
    from dlperf_widgets.core.uncertainty import ANY, WIDEST, _table

    row = _table().rows[(WIDEST, ANY, ANY, ANY)]
    return row["low_ratio"], row["high_ratio"]


def _fa_ratio(loop: str, d: int) -> float:
    """Standard over FlashAttention forward traffic at N = 4096, 100 KiB SRAM (notebook 10)."""
    from dlperf_widgets.core.fusion import attention_traffic

    std, fa = attention_traffic(4096, head_dim=d, heads=16, batch=8, loop=loop)
    return std / fa


def _gpt2m() -> tuple[float, float]:
    """Counted forward + backward GB, standard and FlashAttention, for the paper's GPT-2
    medium example (Dao et al. 2022, Figure 2)."""
    from dlperf_widgets.core.fusion import FLASH_PAPER_GPT2_MEDIUM as p
    from dlperf_widgets.core.fusion import attention_traffic

    std, fa = attention_traffic(
        p["seq_len"], head_dim=p["head_dim"], heads=p["heads"], batch=p["batch"], backward=True
    )
    return std / 1e9, fa / 1e9


def _chain10():  # type: ignore[no-untyped-def]
    from dlperf_widgets.core.fusion import fusion_chain

    return fusion_chain(
        ["bias", "dropout", "residual", "layernorm"], elements=8 * 2048 * 1024, gpu="A100"
    )


def _launch_overhead_us() -> float:
    from dlperf_widgets.core.fusion import launch_overhead

    return launch_overhead([0.0]).launch_overhead_s * 1e6


def _launch_work_us() -> float:
    """Work time that brings one kernel's device time (work plus the fixed cost) up to the
    host's launch overhead."""
    from dlperf_widgets.core.assumptions import HOST_LAUNCH_OVERHEAD_S, MIN_KERNEL_TIME_S

    return (HOST_LAUNCH_OVERHEAD_S - MIN_KERNEL_TIME_S) * 1e6


def _h100_kernel_overhead_us() -> float:
    """The calibrated fixed cost per kernel on an H100 (equal on the A100, notebook 10 says)."""
    from dlperf_widgets.core.calibration import achievable

    h100, a100 = (achievable(g, "fp16").kernel_overhead_s * 1e6 for g in ("H100", "A100"))
    assert h100 == a100, (h100, a100)
    return h100


def _launch_bytes_mb() -> float:
    """Bytes one H100 kernel moves, at the model's achievable bandwidth, in the time its work
    may take before its device time (work plus the fixed cost) reaches the launch overhead."""
    from dlperf_widgets.core.fusion import fusion_chain

    p = fusion_chain(["scale"], elements=2**24, gpu="H100").passes[0]
    work_s = _launch_overhead_us() * 1e-6 - _h100_kernel_overhead_us() * 1e-6
    return work_s * p.bytes / p.memory_time_s / 1e6


def _decode(batch: int = 1, weight_dtype: str = "fp16"):  # type: ignore[no-untyped-def]
    from dlperf_widgets.core.inference import llm_inference

    return llm_inference(
        "llama-2-7b", gpu="A100", batch=batch, context=512, weight_dtype=weight_dtype
    )


@functools.cache
def _in_tile(board: str, dtype: str) -> float:
    """The fitted share of the peak inside a tile, before the power limit's clock."""
    a = achievable(gpu(board), dtype)
    return a.math_fraction / a.clock_fraction


def _gpt_fast_ratios() -> dict[str, float]:
    """Notebook 11's gpt-fast comparison: published / model over the single-GPU dense decode
    rows, and the published int4 / bf16 speed-up of Llama-2-7B."""
    rows = [
        r
        for r in load_workload_measurements()
        if r["kind"] == "decode" and r["id"].startswith("GF-") and "gap" not in r["id"]
    ]
    ratios = {r["id"]: float(r["published_value"]) / predict_measurement(r)[0] for r in rows}
    pub = {r["id"]: float(r["published_value"]) for r in rows}
    return {
        "worst": max(abs(1 - v) for v in ratios.values()),
        "bf16_worst": max(abs(1 - v) for k, v in ratios.items() if k.endswith("-bf16")),
        "int4_speedup": pub["GF-l2-7b-int4"] / pub["GF-l2-7b-bf16"],
    }


@functools.cache
def _layouts13():  # type: ignore[no-untyped-def]
    from dlperf_widgets.core.scaleout import step_time

    shape = dict(
        layers=80,
        hidden=8192,
        heads=64,
        seq_len=4096,
        vocab=32000,
        global_batch=1024,
        gpus=512,
        gpu="H100",
    )
    return {
        (tp, pp, z): step_time(tensor_parallel=tp, pipeline_parallel=pp, zero=z, **shape)
        for tp, pp, z in ((8, 1, 1), (8, 4, 1), (4, 8, 1), (8, 8, 1), (8, 4, 3))
    }


def _ar13(link: str, ranks: int, **kw: int) -> float:
    """Notebook 13: the all-reduce of a 7B model's BF16 gradients (14 GB)."""
    from dlperf_widgets.core.scaleout import collective

    return collective(14e9, ranks, link=link, **kw).time_s


def _busbw13(gpu: str, network: str) -> float:
    """Notebook 13: the step model's all-reduce bus bandwidth (GB/s) over 8-GPU servers with
    8 NICs each, at the calibrated shares of NVLink and of a NIC."""
    from dlperf_widgets.core.links import interconnect, server_link
    from dlperf_widgets.core.topology import topology_bandwidth
    from dlperf_widgets.core.workload import workload_constants

    c = workload_constants(gpu)
    nvl = server_link(network).bandwidth_bytes_per_s * c["collective_bandwidth"].value
    nic = interconnect(network).bandwidth_bytes_per_s * c["network_bandwidth"].value
    return topology_bandwidth("all-reduce", 32, 8, 8, 8, nvl, nic) / 1e9


def _fastest13() -> tuple[int, int, int]:
    layouts = _layouts13()
    return min(layouts, key=lambda k: layouts[k].step_s)


def _outlier_loss(fmt: str, ratio: float) -> float:
    """Notebook 12: the share (%) of small values a format flushes to zero with one value
    ``ratio`` x the rest ('fp8': E4M3 with one scale per tensor)."""
    import numpy as np

    from dlperf_widgets.core.scaling import block_quantize, fp8_quantize

    x = np.random.default_rng(2).normal(0, 1e-3, 4096)
    x[100] = ratio * np.abs(x).max()
    if fmt == "fp8":
        return 100 * fp8_quantize(x, "fp8_e4m3").underflow_fraction
    return 100 * block_quantize(x, fmt).underflow_fraction


def _delayed_saturating_steps() -> int:
    """Notebook 12: the steps on which delayed scaling (amax history of up to 16 steps)
    saturates a tensor whose amax is 1 for ten steps, then doubles five times, then holds."""
    import numpy as np

    from dlperf_widgets.core.scaling import fp8_quantize

    amaxes = [1.0] * 10 + [2.0, 4.0, 8.0, 16.0, 32.0] + [32.0] * 4
    ramp = np.linspace(-1.0, 1.0, 2001)
    return sum(
        fp8_quantize(
            a * ramp, "fp8_e4m3", recipe="delayed", amax_history=amaxes[max(0, i - 16) : i]
        ).saturation_fraction
        > 0
        for i, a in enumerate(amaxes)
        if i
    )


def _ring_ms(ranks: int, link: str) -> float:
    """Notebook 13: a ring all-reduce of 7B BF16 gradients (14 GB) at the link's bandwidth."""
    from dlperf_widgets.core.scaleout import allreduce_time

    return 1e3 * allreduce_time(14e9, ranks, link=link)


def _ring_bytes_gb(ranks: int) -> float:
    """Notebook 13: the bytes (GB) each GPU sends in a ring all-reduce of 14 GB."""
    from dlperf_widgets.core.parallel import allreduce_bytes

    return allreduce_bytes(14e9, ranks) / 1e9


def _palm_mfu(kind: str) -> float:
    """Notebook 13: PaLM 540B's MFU (%) with the attention term at heads x head size ('mfu')
    or at the hidden size ('wide'), and its HFU under full recomputation ('hfu')."""
    from dlperf_widgets.core.mfu import mfu

    run = dict(layers=118, hidden=18432, seq_len=2048, gpus=6144, peak_flops_per_s=275e12)
    width = {} if kind == "wide" else {"attention_width": 48 * 256}
    recompute = "full" if kind == "hfu" else "none"
    r = mfu(238.3e3, 540.35e9, recompute=recompute, **width, **run)
    return 100 * (r.hfu if kind == "hfu" else r.mfu)


def _bubble(schedule: str, **kw: int) -> float:
    from dlperf_widgets.core.scaleout import pipeline_bubble

    return 100 * pipeline_bubble(8, 8, schedule, **kw)


def _a100_80_memory():  # type: ignore[no-untyped-def]
    """Notebook 11's A100-80GB: its calibrated DRAM fraction and datasheet bandwidth."""
    from dlperf_widgets.core.calibration import achievable

    g = gpu("A100-SXM4-80GB")
    return achievable(g, "fp16").memory_fraction, g.memory_bandwidth_bytes_per_s


def _weights_stream_ms() -> float:
    """Decode's weight bytes at batch 1 over the achievable bandwidth (notebook 11's estimate)."""
    frac, bw = _a100_80_memory()
    return _decode().decode_weight_bytes_per_token / (frac * bw) * 1e3


@functools.cache
def _deepbench_math() -> tuple[int, int, float]:
    """Notebook 03: of DeepBench's V100 FP16 GEMMs the model calls math-bound, how many lie
    within 10 % of its prediction, how many there are, and the largest relative error."""
    meas = measured_gemms(gpu("V100"), "fp16")
    errors = []
    for i in range(meas["m"].size):
        r = gemm(
            int(meas["m"][i]),
            int(meas["n"][i]),
            int(meas["k"][i]),
            batch=int(meas["batch"][i]),
            beta=float(meas["beta"][i]),
            dtype="fp16",
            gpu="V100",
        )
        if r.limiter == "math":
            errors.append(abs(meas["measured_time_s"][i] / r.predicted_time_s - 1))
    return sum(e <= 0.1 for e in errors), len(errors), max(errors)


def _thin_v100(n: int):  # type: ignore[no-untyped-def]
    """Notebook 02's thin GEMM, 8192 x n x 8192 in FP16 on a V100."""
    return gemm(8192, n, 8192, dtype="fp16", gpu="V100")


def _thin_blocks() -> tuple[int, int]:
    """Notebook 09's 1024 x 8 x 1024 FP16 GEMM on an A100: the guide's parallelism count (64 x 64
    tiles, K split in slices of 256) and the thread blocks of the kernel the model picks."""
    from dlperf_widgets.core.gemm import _parallel_blocks

    r = gemm(1024, 8, 1024, dtype="fp16", gpu="A100")
    return int(_parallel_blocks(1024, 8, 1024, 1)), r.tiles


def _tiny_params_m() -> float:
    from dlperf_widgets.live.decode import TINY_MODEL

    return TINY_MODEL.params / 1e6


def _opt13b_request_gb() -> float:
    from dlperf_widgets.core.inference import kv_cache_bytes

    return kv_cache_bytes("opt-13b", context=2048) / 1e9


CLAIMS = [
    # 08: ZeRO, the paper's convention and the slides'
    Claim("08", "1f1ca625", r"cuts (\d+) GB to", lambda: _zero_gb(0)),
    Claim("08", "1f1ca625", r"cuts \d+ GB to ([\d.]+) GB", lambda: _zero_gb(1)),
    Claim("08", "1f1ca625", r"reaches ([\d.]+) GB per GPU", lambda: _zero_gb(3)),
    Claim("08", "1f1ca625", r"so ([\d.]+) GB instead of", lambda: _zero_gb(1, "fp32-grads")),
    Claim("08", "1f1ca625", r"instead of ([\d.]+) GB, half", lambda: _zero_gb(1)),
    Claim(
        "08",
        "1f1ca625",
        r"differ by about ([\d.]+) GB",
        lambda: _zero_gb(2, "fp32-grads") - _zero_gb(2),
    ),
    Claim(
        "08",
        "1ab662ef",
        r"counts (\d+) bytes per parameter",
        lambda: training_memory(1).model_state_bytes,
    ),
    # 08: activations, unfused and fused attention
    Claim(
        "08",
        "48057692",
        r"These (\d+) GiB \(the",
        lambda: training_memory(7e9, **LLM).activations_bytes / GiB,
    ),
    Claim(
        "08",
        "48057692",
        r"the (\d+) GiB the forward pass saves",
        lambda: training_memory(7e9, **LLM).activations_after_forward_bytes / GiB,
    ),
    Claim(
        "08",
        "48057692",
        r"the output and the statistic, ([\d.]+) GiB",
        lambda: training_memory(7e9, **LLM, attention="sdpa").activations_bytes / GiB,
    ),
    Claim(
        "08",
        "48057692",
        r"the paper's ([\d.]+) GiB plus",
        lambda: 34 * 2048 * 8 * 4096 * 32 / GiB,
    ),
    Claim(
        "08",
        "48057692",
        r"(\d+) GiB of the [\d.]+ GiB here",
        lambda: (_layer_7b().total_bytes - 34 * 2048 * 8 * 4096) / GiB,
    ),
    Claim("08", "48057692", r"of the ([\d.]+) GiB here", lambda: _layer_7b().total_bytes / GiB),
    Claim(
        "08",
        "a8c3e1f7",
        r"from \d+ to (\d+) GiB",
        # the layer's bytes without the a*s^2*b terms (scores, their dropout mask and output)
        lambda: (_layer_7b().total_bytes - 5 * 32 * 2048**2 * 8) * 32 / GiB,
    ),
    # 07: 2:4 sparsity with compressed weights
    Claim(
        "07",
        "b868f4b2",
        r"instead of 64, (\d+) % of the dense",
        lambda: 100 * compressed_weight_fraction("fp16"),
    ),
    Claim(
        "07",
        "b868f4b2",
        r"reads\s+(\d+) % fewer bytes",
        lambda: 100 * (1 - compressed_weight_fraction("fp16")),
    ),
    Claim(
        "07",
        "b868f4b2",
        r"runs about ([\d.]+)× faster",
        lambda: sparse_gemm(8192, 1, 8192, compressed_weights=True).gemm_speedup,
    ),
    Claim(
        "07",
        "9b051065",
        r"weights in (\d+) % of the bytes",
        lambda: 100 * compressed_weight_fraction("fp16"),
    ),
    # 02: the model's split of a BERT-large-sized transformer
    Claim(
        "02",
        "d4427baa",
        r"arithmetic \(([\d.]+) %\)",
        lambda: 100 * _bert_v100().by_class["tensor_contraction"]["flops_share"],
    ),
    Claim(
        "02",
        "d4427baa",
        r"take only about two thirds of the time",
        lambda: _bert_v100().by_class["tensor_contraction"]["runtime_share"],
    ),
    # 04: tile quantization of 520 and 5128 with 128-wide tiles
    Claim(
        "04",
        "c7a88f4d",
        r"row of tiles: (\d+) % of the launched",
        lambda: 100 * (1 - tile_efficiency(520, 128, 128, 128)),
    ),
    Claim(
        "04",
        "c7a88f4d",
        r"among 41, a (\d+) % waste",
        lambda: 100 * (1 - tile_efficiency(5128, 128, 128, 128)),
    ),
    Claim(
        "08",
        "e2b8c6d4",
        r"4 \+ 4 \+ 8 = (\d+) bytes per parameter",
        lambda: training_memory(1, precision="fp32").model_state_bytes,
    ),
    Claim(
        "08",
        "b3f7a2c8",
        r"of the (\d+) bytes per parameter of mixed-precision",
        lambda: training_memory(1).model_state_bytes,
    ),
    Claim(
        "07",
        "284e1391",
        r"(Eight) times the FP32 peak",
        lambda: gpu("A100").peak_flops("tf32") / gpu("A100").peak_flops("fp32"),
    ),
    # 09: Tensor Cores against CUDA cores, GPT-2 small's memory
    Claim(
        "09",
        "2fa7a0d9",
        r"The (\d+) bytes per parameter of mixed-precision AdamW",
        lambda: _gpt2_small_mem().model_state_bytes / 124_438_272,
    ),
    # 03: the model against every math-bound DeepBench GEMM on the V100, not one shape
    Claim("03", "d3a50006", r"math-bound: (\d+) of the \d+ lie", lambda: _deepbench_math()[0]),
    Claim("03", "d3a50006", r"of the (\d+) lie within", lambda: _deepbench_math()[1]),
    Claim(
        "03",
        "d3a50006",
        r"and all within (\d+) %",
        lambda: 20 if _deepbench_math()[2] <= 0.2 else float("nan"),
    ),
    # 02: N = 96 against 128 in the slides' thin GEMM: the bytes hardly change
    Claim(
        "02",
        "ba57a821",
        r"about ([\d.]+) % of the bytes",
        lambda: 100 * (1 - _thin_v100(96).bytes / _thin_v100(128).bytes),
    ),
    Claim(
        "02", "ba57a821", r"memory time ([\d.]+) µs →", lambda: _thin_v100(128).memory_time_s * 1e6
    ),
    Claim("02", "ba57a821", r"→ ([\d.]+) µs\)", lambda: _thin_v100(96).memory_time_s * 1e6),
    Claim(
        "02",
        "dfac7786",
        r"transformer, ([\d.]+) % of the FLOPs",
        lambda: 100 * (1 - _bert_v100().by_class["tensor_contraction"]["flops_share"]),
    ),
    # 09: the thin GEMM's two block counts, the guide's parallelism check and the chosen kernel
    Claim("09", "2dfa482c", r"the guide's (\d+), the chosen", lambda: _thin_blocks()[0]),
    Claim("09", "2dfa482c", r"the chosen kernel's (\d+)\)", lambda: _thin_blocks()[1]),
    Claim("09", "2dfa482c", r"so (\d+) blocks, fewer", lambda: _thin_blocks()[0]),
    Claim("09", "2dfa482c", r"The (\d+) printed above", lambda: _thin_blocks()[1]),
    Claim("09", "2dfa482c", r"fewer\s+than the (\d+) SMs", lambda: gpu("A100").sms),
    Claim("09", "d581d3ff", r"FP16, (\d+) times the CUDA", lambda: _fp16_ratio("V100", None)),
    Claim("09", "d581d3ff", r"and (\d+) times on an A100", lambda: _fp16_ratio("A100", None)),
    Claim("09", "d581d3ff", r"and (\d+) times their FP16", lambda: _fp16_ratio("V100", "cuda")),
    Claim("09", "d581d3ff", r"and (\d+) times their FP16", lambda: _fp16_ratio("A100", "cuda")),
    Claim(
        "09",
        "2fa7a0d9",
        r"come to about (\d+) GiB",
        lambda: _gpt2_small_mem().model_state_bytes / GiB,
        rel=0.1,
    ),
    Claim(
        "09",
        "2fa7a0d9",
        r"are (four) times that",
        lambda: _gpt2_small_mem().activations_bytes / _gpt2_small_mem().model_state_bytes,
        rel=0.1,
    ),
    # 02: the calibrated model against the ideal roofline and the shipped measurements
    Claim(
        "02",
        "c4a1e004",
        r"about (\d+) times the roofline's ideal",
        lambda: (
            _tiny_h100_measured_s()
            / gemm(256, 256, 256, dtype="bf16", gpu="H100-SXM").roofline_time_s
        ),
        rel=0.1,
    ),
    Claim(
        "02",
        "c4a1e004",
        r"\((\d+) % for bf16 on Hopper",
        lambda: 100 * _in_tile("H100-SXM", "bf16"),
    ),
    Claim(
        "02",
        "c4a1e004",
        r"fraction of the bandwidth\*\* \((\d+) %\)",
        lambda: 100 * achievable(gpu("H100-SXM"), "bf16").memory_fraction,
    ),
    Claim(
        "02",
        "c4a1e004",
        r"Against all (\d+) published measurements",
        lambda: model_error_report().overall.count,
    ),
    Claim(
        "02", "c4a1e001", r"The kit ships (\d+) GEMMs", lambda: model_error_report().overall.count
    ),
    Claim(
        "02",
        "c4a1e004",
        r"to about (\d+) % \(`dlperf reconcile`",
        lambda: 100 * model_error_report().overall.model_median_error,
        rel=0.1,
    ),
    Claim(
        "02", "b24dfeac", r"fitted to (\d+) published", lambda: model_error_report().overall.count
    ),
    Claim(
        "02",
        "b24dfeac",
        r"median error about (\d+) % in-sample",
        lambda: 100 * model_error_report().overall.model_median_error,
        rel=0.1,
    ),
    Claim(
        "02",
        "b24dfeac",
        r"against the roofline's (\d+) %",
        lambda: 100 * model_error_report().overall.roofline_median_error,
        rel=0.05,
    ),
    Claim(
        "09", "c5217236", r"against the (\d+) published", lambda: model_error_report().overall.count
    ),
    Claim(
        "02",
        "c4a1e004",
        r"error from about (\d+) %",
        lambda: 100 * model_error_report().overall.roofline_median_error,
        rel=0.05,
    ),
    # 02: the contractions' runtime share with a longer sequence, and on an H100
    Claim(
        "02",
        "d4427baa",
        r"to about half \((\d+) % and\s+\d+ %\)",
        lambda: (
            100
            * _bert_v100_like(seq_len=2048, batch=2).by_class["tensor_contraction"]["runtime_share"]
        ),
        rel=0.03,
    ),
    Claim(
        "02",
        "d4427baa",
        r"to about half \(\d+ % and\s+(\d+) %\)",
        lambda: 100 * _bert_v100_like(gpu="H100").by_class["tensor_contraction"]["runtime_share"],
        rel=0.03,
    ),
    Claim(
        "02",
        "d4427baa",
        r"at about (\d+) % of the datasheet peak on average",
        lambda: 100 * _contraction_share_of_peak(),
        rel=0.05,
    ),
    Claim(
        "02",
        "c9d1e5f3",
        r"fixed costs are only about (\d+) % of this time",
        lambda: 100 * _fixed_cost_share_outside_contractions(),
        rel=0.15,
    ),
    # 02: what a V100 sustains in FP16, and its misalignment penalties
    Claim(
        "02",
        "ba57a821",
        r"\((\d+) % of its Tensor Core peak",
        lambda: 100 * achievable(gpu("V100"), "fp16").math_fraction,
    ),
    Claim(
        "02",
        "ba57a821",
        r"only (\d+) % of its bandwidth",
        lambda: 100 * achievable(gpu("V100"), "fp16").memory_fraction,
    ),
    Claim(
        "02",
        "ba57a821",
        r"runs the math at (\d+) % of the aligned rate",
        lambda: 100 * gemm(8192, 100, 8192, dtype="fp16", gpu="V100").alignment_efficiency,
    ),
    Claim(
        "02",
        "ba57a821",
        r"would halve the rate \((\d+) %\)",
        lambda: 100 * gemm(8192, 128, 8190, dtype="fp16", gpu="V100").alignment_efficiency,
    ),
    # 03: the 110-tile GEMM's steps on an A100
    Claim(
        "03",
        "d3a50003",
        r"at ([\d.]+) % wave efficiency",
        lambda: 100 * _gemm_110_tiles().wave_efficiency,
    ),
    Claim(
        "03",
        "d3a50003",
        r"so its (\d+) % is the documented default",
        lambda: 100 * achievable(gpu("A100"), "fp16").math_fraction,
    ),
    # 09: the capstone's split, its largest GEMM and what padding the vocabulary saves
    Claim("09", "f1fb7b6d", r"take only (\d+) % of the time", lambda: 100 * _contraction_share()),
    Claim(
        "09",
        "f1fb7b6d",
        r"FLOPs, takes about (\d+) %",
        lambda: 100 * (1 - _contraction_share()),
        rel=0.05,
    ),
    Claim(
        "09",
        "74ba1f2c",
        r"spends about (\d+) % of its time",
        lambda: 100 * (1 - _contraction_share()),
        rel=0.05,
    ),
    Claim("09", "4ea8b28a", r"\(`dgrad`\), ([\d.]+) ms", lambda: _head_ms("dgrad")),
    Claim("09", "4ea8b28a", r"twice the ([\d.]+) ms of the forward", lambda: _head_ms("forward")),
    Claim("09", "4ea8b28a", r"twice the ([\d.]+) ms of the forward", lambda: _head_ms("wgrad")),
    Claim(
        "09",
        "ba729bdb",
        r"about (\d+) % where it is M or N",
        lambda: 100 * (1 - achievable(gpu("A100"), "fp16").misaligned_mn_efficiency),
    ),
    Claim("09", "e944b633", r"save about (\d+) % of the step", lambda: 100 * _padding_saving()),
    Claim(
        "09",
        "e944b633",
        r"of the step \(([\d.]+) ms\)",
        lambda: _gpt2_small_step().total_time_s * 1e3 - _gpt2_small_step(50264).total_time_s * 1e3,
    ),
    Claim("09", "e944b633", r"\(([\d.]+) to [\d.]+ ms\)", lambda: _head_ms("dgrad")),
    Claim("09", "e944b633", r"\([\d.]+ to ([\d.]+) ms\)", lambda: _head_ms("dgrad", 50264)),
    Claim(
        "09",
        "e944b633",
        r"weight gradient\s+gain about (\d+) % each",
        lambda: 100 * (1 - _head_ms("forward", 50264) / _head_ms("forward")),
        rel=0.2,
    ),
    Claim(
        "09",
        "74ba1f2c",
        r"saves about\s+(\d+) % of the step",
        lambda: 100 * _padding_saving(),
    ),
    # 09: fusing bias and ReLU into a GEMM, and the model against published measurements
    Claim(
        "09",
        "88aae2f8",
        r"\((\d+) FLOP/B against",
        lambda: _fused_bias_relu_gemm().flops / _fused_bias_relu_gemm().bytes,
    ),
    Claim(
        "09",
        "88aae2f8",
        r"against the A100's (\d+)\)",
        lambda: gpu("A100").ops_per_byte("fp16"),
    ),
    Claim(
        "09",
        "c5217236",
        r"median error is about (\d+) %",
        lambda: 100 * model_error_report().overall.model_median_error,
        rel=0.1,
    ),
    # 08: 8-bit Adam's saving, the activations around GPT-2's blocks
    Claim(
        "08",
        "13a56c22",
        r"8-bit Adam takes (\d+) GiB off",
        lambda: (
            (
                training_memory(7e9).optimizer_bytes
                - training_memory(7e9, optimizer="adam8bit").optimizer_bytes
            )
            / GiB
        ),
    ),
    Claim("08", "a9686484", r"add about ([\d.]+) MiB", _around_blocks_mib, rel=0.05),
    Claim("09", "c5217236", r"predicted between ([\d.]+) and", lambda: _widest_band()[0]),
    Claim("09", "c5217236", r"predicted between [\d.]+ and (\d+\.\d+)", lambda: _widest_band()[1]),
    # 10: fusion, FlashAttention's blocks, the launch-bound regime
    Claim(
        "10",
        "999ecf2b",
        r"shrink to three: (\d+) % of the traffic",
        lambda: 100 * _chain10().bytes_saved_fraction,
    ),
    Claim(
        "10",
        "999ecf2b",
        r"([\d.]+) × fewer bytes",
        lambda: _chain10().bytes_unfused / _chain10().bytes_fused,
    ),
    Claim("10", "999ecf2b", r"([\d.]+) × less predicted time", lambda: _chain10().speedup),
    Claim("10", "097d7349", r"about ([\d.]+)× less predicted time", lambda: _chain10().speedup),
    Claim(
        "10",
        "998048ec",
        r"about (\d+) times smaller than M for d = 64",
        lambda: _attn_block_ratio(64),
        rel=0.05,
    ),
    Claim(
        "10",
        "998048ec",
        r"only about (\d+) times smaller for d = 128",
        lambda: _attn_block_ratio(128),
        rel=0.05,
    ),
    Claim(
        "10",
        "999ecf2b",
        r"about (\d+) % of the traffic goes away, not",
        lambda: (
            100
            * (1 - (_chain10().bytes_fused + _chain10().elements * 2) / _chain10().bytes_unfused)
        ),
    ),
    # the floor: forward Q, K, V, O; backward Q, K, V, O, dO, dQ, dK, dV; FP16, 64 x 16 heads
    Claim(
        "10",
        "fa-paper-note",
        r"once, about ([\d.]+) GB here",
        lambda: 12 * 1024 * 64 * 2 * 1024 / 1e9,
    ),
    Claim("10", "25b7637a", r"leaves about ([\d.]+)x:", lambda: _fa_ratio("fa1", 128)),
    Claim("10", "25b7637a", r"it keeps about ([\d.]+)x at d = 128", lambda: _fa_ratio("fa2", 128)),
    Claim("10", "fa-paper-note", r"40.3 GB against the counted ([\d.]+) GB", lambda: _gpt2m()[0]),
    Claim("10", "fa-paper-note", r"4.4 GB against the counted ([\d.]+) GB", lambda: _gpt2m()[1]),
    Claim(
        "10",
        "fa-paper-note",
        r"larger than the counted ([\d.]+)x",
        lambda: _gpt2m()[0] / _gpt2m()[1],
    ),
    Claim("10", "241d5231", r"reaches the ([\d.]+) µs launch", lambda: _launch_overhead_us()),
    Claim("10", "241d5231", r"must then take about (\d+) µs", lambda: _launch_work_us(), rel=0.05),
    Claim("10", "e2f1037a", r"device-side (\d+) µs its calibration", _h100_kernel_overhead_us),
    Claim("10", "e2f1037a", r"The host's ([\d.]+) µs", _launch_overhead_us),
    Claim("10", "241d5231", r"plus the\s+(\d+) µs fixed cost", _h100_kernel_overhead_us),
    Claim("10", "241d5231", r"must move about (\d+) MB", _launch_bytes_mb, rel=0.05),
    # 11: decode of Llama-2-7B on an A100, the KV cache, the gpt-fast comparison
    Claim(
        "11", "a5876f69", r"comes to ([\d.]+) TFLOP/s", lambda: _decode().decode_flops_per_s / 1e12
    ),
    Claim("11", "14bcbe2f", r"decimal units: ([\d.]+) GB", _opt13b_request_gb),
    Claim(
        "11",
        "ba920211",
        r"batch 4 gives ([\d.]+) × batch 1",
        lambda: _decode(4).tokens_per_s / _decode(1).tokens_per_s,
    ),
    Claim(
        "11",
        "ba920211",
        r"batch 16 still (\d+) ×",
        lambda: _decode(16).tokens_per_s / _decode(1).tokens_per_s,
    ),
    Claim(
        "11",
        "ba920211",
        r"the caches of (\d+) sequences weigh",
        lambda: _decode().decode_weight_bytes_per_token / _decode().kv_cache_bytes,
    ),
    Claim(
        "11",
        "ba920211",
        r"the step does (\d+) FLOP/B",
        lambda: _decode(256).decode_arithmetic_intensity,
    ),
    Claim(
        "11",
        "ba920211",
        r"each user to ([\d.]+) tokens/s",
        lambda: _decode(256).tokens_per_s_per_user,
    ),
    Claim(
        "11",
        "7a1b280b",
        r"int4 moves about ([\d.]+) × fewer bytes",
        lambda: _decode().decode_bytes / _decode(1, "int4").decode_bytes,
    ),
    Claim(
        "11",
        "7a1b280b",
        r"predicts a step (\d+) % longer",
        lambda: 100 * (_decode(256, "int4").decode_step_s / _decode(256).decode_step_s - 1),
    ),
    Claim(
        "11",
        "0bdacf0a",
        r"batch-1 decode ~([\d.]+) × faster",
        lambda: _decode().decode_step_s / _decode(1, "int4").decode_step_s,
    ),
    Claim(
        "11",
        "7a1b280b",
        r"speeds up only about\s+([\d.]+) ×",
        lambda: _decode().decode_step_s / _decode(1, "int4").decode_step_s,
    ),
    Claim(
        "11",
        "0bdacf0a",
        r"no faster \(~([\d.]+) ×",
        lambda: _decode(256).decode_step_s / _decode(256, "int4").decode_step_s,
    ),
    Claim("11", "2b9f5f93", r"about (\d+) M parameters", _tiny_params_m, rel=0.05),
    # 11: the first question states the bandwidth its answer assumes; the answer says what else
    Claim("11", "2a0515cc", r"bandwidth, (\d+) % of the A100", lambda: 100 * _a100_80_memory()[0]),
    Claim("11", "2a0515cc", r"datasheet ([\d.]+) TB/s", lambda: _a100_80_memory()[1] / 1e12),
    Claim("11", "a5876f69", r"per token\) at (\d+) % of", lambda: 100 * _a100_80_memory()[0]),
    Claim("11", "a5876f69", r"% of ([\d.]+) TB/s takes", lambda: _a100_80_memory()[1] / 1e12),
    Claim("11", "a5876f69", r"takes ([\d.]+) ms, about", _weights_stream_ms),
    Claim(
        "11",
        "a5876f69",
        r"Streaming the ([\d.]+) GB of weights",
        lambda: _decode().decode_weight_bytes_per_token / 1e9,
    ),
    Claim("11", "a5876f69", r"about (\d+) tokens/s;", lambda: 1e3 / _weights_stream_ms(), rel=0.05),
    Claim(
        "11",
        "a5876f69",
        r"the kit predicts\s+(\d+) tokens/s",
        lambda: _decode().tokens_per_s_per_user,
    ),
    # 12: block formats with an outlier; 13: the pipeline bubble, the 512-GPU layouts
    Claim("12", "09f69206", r"own block \(([\d.]+) %", lambda: _outlier_loss("mxfp8_e4m3", 1e6)),
    Claim("12", "09f69206", r"and NVFP4 (\d+) % at 10\^4", lambda: _outlier_loss("nvfp4", 1e4)),
    Claim("12", "09f69206", r"its usual (\d+) %", lambda: _outlier_loss("mxfp4", 1e6)),
    Claim(
        "12", "09f69206", r"one scale already flushes (\d+) %", lambda: _outlier_loss("fp8", 1e4)
    ),
    Claim("12", "07235f84", r"\*\*In short:\*\* (five): each", lambda: _delayed_saturating_steps()),
    Claim("12", "5bfa15fa", r"3\.35 = (\d+) FLOP/B", lambda: gpu("H100").ops_per_byte("fp8_e4m3")),
    Claim("13", "3f3858e2", r"The paper's ([\d.]+) % comes out exactly", lambda: _palm_mfu("mfu")),
    # 13: how far to trust a step: the shipped whole-workload rows and the fitted constant
    Claim("13", "trust-13", r"keeps (\d+) published", lambda: len(load_workload_measurements())),
    Claim(
        "13",
        "trust-13",
        r"came out at ([\d.]+)\.",
        lambda: workload_constants("A100")["training_gemm_efficiency"].value,
    ),
    # 02: the power limit of an H100's Tensor Cores
    Claim(
        "02",
        "c4a1e007",
        r"base clock, (\d+) % of the clock",
        lambda: 100 * achievable(gpu("H100-SXM"), "bf16").clock_fraction,
    ),
    Claim(
        "02",
        "c4a1e007",
        r"after its first ([\d.]+) ms",
        lambda: achievable(gpu("H100-SXM"), "bf16").burst_s * 1e3,
    ),
    # 11: the model against gpt-fast's published decode rates
    Claim(
        "11",
        "b09bf89d",
        r"within about (\d+) % of every published rate",
        lambda: 100 * _gpt_fast_ratios()["worst"],
        rel=0.5,
    ),
    Claim(
        "11",
        "b09bf89d",
        r"within about (\d+) % of both",
        lambda: 100 * _gpt_fast_ratios()["bf16_worst"],
        rel=0.5,
    ),
    Claim(
        "11", "b09bf89d", r"only\s+([\d.]+) × faster", lambda: _gpt_fast_ratios()["int4_speedup"]
    ),
    Claim(
        "13",
        "979121e2",
        r"Tensor Core GEMMs at ([\d.]+) of their",
        lambda: workload_constants("H100")["training_gemm_efficiency"].value,
    ),
    Claim("13", "1422b478", r"NVLink's 450 GB/s: about (\d+) ms", lambda: _ring_ms(8, "NVLink4")),
    Claim("13", "1422b478", r"= ([\d.]+) GB at NVLink", lambda: _ring_bytes_gb(8)),
    Claim(
        "13",
        "3f3858e2",
        r"hidden size the same formula gives ([\d.]+) %",
        lambda: _palm_mfu("wide"),
    ),
    Claim(
        "13", "3f3858e2", r"and the ([\d.]+) % that a full recomputation", lambda: _palm_mfu("hfu")
    ),
    Claim("13", "6e451af3", r"falls less: ([\d.]+) % to", lambda: _bubble("1f1b")),
    Claim(
        "13", "6e451af3", r"% to ([\d.]+) % for 8 stages", lambda: _bubble("interleaved", chunks=4)
    ),
    Claim(
        "13",
        "1422b478",
        r"only about ([\d.]+) times longer",
        lambda: _ar13("IB-NDR", 64) / _ar13("NVLink4", 8),
    ),
    Claim(
        "13",
        "1422b478",
        r"(\w+) times longer than inside",
        lambda: _ar13("IB-NDR", 64, nics_per_node=1) / _ar13("NVLink4", 8),
    ),
    Claim(
        "13",
        "72113dc2",
        r"pessimistic count, (\w+) times slower",
        lambda: _ar13("IB-NDR", 64, nics_per_node=1) / _ar13("IB-NDR", 64),
    ),
    Claim("13", "1422b478", r"the model gives (\d+) and", lambda: _busbw13("A100", "IB-HDR")),
    Claim(
        "13", "1422b478", r"the model gives \d+ and (\d+) GB/s", lambda: _busbw13("H100", "IB-NDR")
    ),
    Claim("13", "979121e2", r"shortest step here is TP (\d+) ×", lambda: _fastest13()[0]),
    Claim(
        "13",
        "979121e2",
        r"says ([\d.]+) GiB per 80 GiB GPU",
        lambda: _layouts13()[(8, 1, 1)].memory_bytes / 2**30,
    ),
    Claim("13", "979121e2", r"shortest step here is TP \d+ × PP (\d+)", lambda: _fastest13()[1]),
    Claim(
        "13",
        "979121e2",
        r"collectives from ([\d.]+) s",
        lambda: _layouts13()[(8, 4, 1)].tensor_parallel_s,
    ),
    Claim(
        "13",
        "979121e2",
        r"s to ([\d.]+) s, more than",
        lambda: _layouts13()[_fastest13()].tensor_parallel_s,
    ),
    Claim(
        "13",
        "979121e2",
        r"predicted MFUs, (\d+) to",
        lambda: 100 * min(r.mfu for r in _layouts13().values()),
    ),
    Claim(
        "13",
        "979121e2",
        r"predicted MFUs, \d+ to (\d+) %",
        lambda: 100 * max(r.mfu for r in _layouts13().values()),
    ),
]


def _tiny_h100_measured_s() -> float:
    meas = measured_gemms(gpu("H100-SXM"), "bf16")
    tiny = (meas["m"] == 256) & (meas["n"] == 256) & (meas["k"] == 256) & (meas["batch"] == 1)
    return float(meas["measured_time_s"][tiny][0])


def _bert_v100_like(**changes):  # type: ignore[no-untyped-def]
    kw = dict(layers=24, hidden=1024, heads=16, seq_len=512, batch=8, dtype="fp16", gpu="V100")
    return transformer(**(kw | changes))


def _fixed_cost_share_outside_contractions() -> float:
    rest = [p for p in _bert_v100().ops if p.op_class != "tensor_contraction"]
    total = sum(p.predicted_time_s for p in rest)
    return 1 - sum(p.memory_time_s for p in rest) / total


def _contraction_share_of_peak() -> float:
    net = _bert_v100()
    ops = [p for p in net.ops if p.op_class == "tensor_contraction"]
    rate = sum(p.flops for p in ops) / sum(p.predicted_time_s for p in ops)
    return rate / gpu("V100").peak_flops("fp16")


def _gemm_110_tiles():  # type: ignore[no-untyped-def]
    return gemm(2816, 1280, 8192, dtype="fp16", gpu="A100", tile="256x128")


# Notebooks 04-06 under the calibrated time model: per-dimension misalignment, fixed cost per
# kernel, sustained bandwidth. The core is imported inside the helpers to keep this block apart.
def _v100_gemm(m: int, n: int, k: int) -> float:
    from dlperf_widgets import gemm

    return gemm(m, n, k, dtype="fp16", gpu="V100").predicted_time_s


def _misaligned_m_loss() -> float:
    """Mean throughput of the misaligned M of notebook 04's sweep against the aligned ones."""
    import numpy as np

    from dlperf_widgets import gemm_sweep

    m = np.arange(256, 1025)
    s = gemm_sweep(m, 8192, 8192, dtype="fp16", gpu="A100").predicted_flops_per_s
    return 100 * (1 - s[m % 8 != 0].mean() / s[m % 8 == 0].mean())


def _finding(result, prefix: str = "pad"):  # type: ignore[no-untyped-def]
    return next(f for f in result.findings if f.fix.startswith(prefix))


def _projection():  # type: ignore[no-untyped-def]
    from dlperf_widgets import layer

    return layer(
        "projection", batch=10, seq_len=512, hidden=1024, vocab=33708, dtype="fp16", gpu="V100"
    )


def _vocab_pass_gain(name: str) -> float:
    from dlperf_widgets import layer

    def t(v: int) -> float:
        r = layer(
            "projection", batch=10, seq_len=512, hidden=1024, vocab=v, dtype="fp16", gpu="V100"
        )
        return r.pass_named(name).predicted_time_s

    return 100 * (t(33708) / t(33712) - 1)


def _linear(batch: int, board: str):  # type: ignore[no-untyped-def]
    from dlperf_widgets import layer

    return layer("linear", batch=batch, inputs=1024, outputs=4096, dtype="fp16", gpu=board)


def _token_loss(name: str) -> float:
    """Notebook 05's 4095 tokens against 4096 in one pass of the 4096 x 1024 layer, in %."""
    slow, fast = (_linear(b, "V100").pass_named(name).predicted_time_s for b in (4095, 4096))
    return 100 * (slow / fast - 1)


def _whole_model_gain() -> float:
    t = {v: transformer(vocab=v, gpu="V100").total_time_s for v in (33708, 33712)}
    return 100 * (1 - t[33712] / t[33708])


def _attention_500_gain() -> float:
    from dlperf_widgets import layer

    f = _finding(
        layer("attention", batch=8, seq_len=500, hidden=1024, heads=16, dtype="fp16", gpu="A100")
    )
    return 100 * (1 - f.predicted_time_s_after / f.predicted_time_s_before)


_STAGE = dict(batch=32, channels=32, height=112, width=112, dtype="fp16", gpu="A100")


def _dense_over_depthwise() -> float:
    from dlperf_widgets.core.network import cnn

    dense = cnn([{"kind": "conv2d", "out_channels": 64, "kernel_size": 3}, "batchnorm"], **_STAGE)
    depthwise = cnn(
        [
            {"kind": "conv2d", "out_channels": 32, "groups": "depthwise"},
            "batchnorm",
            "relu",
            {"kind": "conv2d", "out_channels": 64, "kernel_size": 1},
            "batchnorm",
        ],
        **_STAGE,
    )
    return dense.total_time_s / depthwise.total_time_s


def _bn_relu_share() -> float:
    from dlperf_widgets.core.network import cnn

    block = cnn(
        [{"kind": "conv2d", "out_channels": 64}, "batchnorm", "relu"],
        training=False,
        batch=32,
        channels=64,
        height=56,
        width=56,
        dtype="fp16",
        gpu="A100",
    )
    return 100 * sum(op.predicted_time_s for op in block.ops[1:]) / block.total_time_s


def _mem(kind: str, shape: tuple[int, ...], dtype: str = "fp16", **kw):  # type: ignore[no-untyped-def]
    from dlperf_widgets.core.memlimited import memory_op

    return memory_op(kind, shape=shape, dtype=dtype, gpu="V100", **kw)


def _relu_us(batch: int, dtype: str = "fp16") -> float:
    return _mem("relu", (batch, 64, 56, 56), dtype)[0].predicted_time_s * 1e6


def _bn_ratio(which: int) -> float:
    slow = _mem("batchnorm", (32, 64, 56, 56), persistent=False)[which].predicted_time_s
    fast = _mem("batchnorm", (32, 64, 56, 56), persistent=True)[which].predicted_time_s
    return slow / fast


def _calibration(board: str = "V100"):  # type: ignore[no-untyped-def]
    from dlperf_widgets.core.calibration import achievable

    return achievable(board, "fp16")


def _overhead_us(board: str) -> float:
    return _calibration(board).kernel_overhead_s * 1e6


def _conv_us(channels: int) -> float:
    from dlperf_widgets import layer

    r = layer(
        "conv2d",
        batch=32,
        in_channels=channels,
        out_channels=channels,
        height=56,
        width=56,
        kernel_size=3,
        padding=1,
        dtype="fp16",
        gpu="A100",
    )
    return r.predicted_time_s * 1e6


def _bn_layer_us(channels: int) -> float:
    from dlperf_widgets import layer

    r = layer("batchnorm", shape=(32, channels, 56, 56), persistent=True, dtype="fp16", gpu="V100")
    return r.predicted_time_s * 1e6


CLAIMS += [
    # 04: a misaligned K costs about 2x, a misaligned M or N about 5 %
    Claim(
        "04",
        "0ea747b5",
        r"grows by ([\d.]+)x rather than 2x",
        lambda: _v100_gemm(1024, 1024, 4095) / _v100_gemm(1024, 1024, 4096),
    ),
    Claim(
        "04",
        "0ea747b5",
        r"M or N\*\* costs only about (\d+) %",
        lambda: 100 * (1 - _calibration().misaligned_mn_efficiency),
    ),
    Claim("04", "3206f107", r"about (\d+) % lower on average", _misaligned_m_loss),
    Claim(
        "04", "a4f5f2a0", r"goes from ([\d.]+) ms to", lambda: _v100_gemm(33708, 5120, 1024) * 1e3
    ),
    Claim("04", "a4f5f2a0", r"ms to ([\d.]+) ms\.", lambda: _v100_gemm(33712, 5120, 1024) * 1e3),
    Claim(
        "04",
        "a4f5f2a0",
        r"predicts ([\d.]+) ms for it",
        lambda: _v100_gemm(1024, 5120, 33708) * 1e3,
    ),
    Claim(
        "04",
        "a4f5f2a0",
        r"padding and ([\d.]+) ms after",
        lambda: _v100_gemm(1024, 5120, 33712) * 1e3,
    ),
    # 05: the vocabulary, sequence padding, early stages, folding
    Claim(
        "05",
        "d918a9ee",
        r"drops from ([\d.]+) ms to",
        lambda: _finding(_projection()).predicted_time_s_before * 1e3,
    ),
    Claim(
        "05",
        "d918a9ee",
        r"ms to ([\d.]+) ms\.",
        lambda: _finding(_projection()).predicted_time_s_after * 1e3,
    ),
    Claim("05", "d918a9ee", r"gain about (\d+) % each", lambda: _vocab_pass_gain("forward")),
    Claim("05", "d918a9ee", r"gain about (\d+) % each", lambda: _vocab_pass_gain("wgrad")),
    Claim("05", "d918a9ee", r"smaller, about (\d+) %", _whole_model_gain),
    Claim(
        "05",
        "b2c002b2",
        r"about (\d+) FLOP per byte",
        lambda: _linear(512, "V100").pass_named("forward").arithmetic_intensity,
    ),
    Claim("05", "dd785888", r"lose only about (\d+) %", lambda: _token_loss("forward")),
    Claim("05", "dd785888", r"lose only about (\d+) %", lambda: _token_loss("dgrad")),
    Claim("05", "27b8c633", r"shrinks to about (\d+) %", _attention_500_gain),
    Claim("05", "87658b41", r"less time: ([\d.]+) times", _dense_over_depthwise),
    Claim("05", "b7878c1f", r"inference time \((\d+) %\)", _bn_relu_share),
    # 06: time = bytes / sustained bandwidth + a fixed cost per kernel
    Claim("06", "ee5522eb", r"\(([\d.]+)x from batch 32", lambda: _relu_us(64) / _relu_us(32)),
    Claim("06", "ee5522eb", r"([\d.]+)x from 64 to 128", lambda: _relu_us(128) / _relu_us(64)),
    Claim("06", "ee5522eb", r"\((\d+) µs on a V100", lambda: _overhead_us("V100")),
    Claim("06", "49cc3806", r"below \(([\d.]+) and", lambda: _bn_ratio(0)),
    Claim("06", "49cc3806", r"and ([\d.]+)\),", lambda: _bn_ratio(1)),
    Claim("06", "81a1b32d", r"`: (\d+) µs on a V100", lambda: _overhead_us("V100")),
    Claim("06", "81a1b32d", r"and (\d+) µs \(`MIN_KERNEL", lambda: _overhead_us("A100")),
    Claim(
        "06",
        "555e084f",
        r"batch 16 takes ([\d.]+) µs",
        lambda: _mem("batchnorm", (16, 64, 14, 14))[0].predicted_time_s * 1e6,
    ),
    Claim(
        "06",
        "555e084f",
        r"batch 8 ([\d.]+) µs",
        lambda: _mem("batchnorm", (8, 64, 14, 14))[0].predicted_time_s * 1e6,
    ),
    Claim("06", "0e9b6a2e", r"(\d+) µs with 60 channels", lambda: _conv_us(60)),
    Claim("06", "0e9b6a2e", r"(\d+) µs with 64\)", lambda: _conv_us(64)),
    Claim(
        "06",
        "98941436",
        r"about (\d+) % slower",
        lambda: 100 * (_bn_layer_us(64) / _bn_layer_us(60) - 1),
    ),
    Claim("06", "a6db4b58", r"\((\d+) µs against", lambda: _relu_us(32, "fp16")),
    Claim("06", "a6db4b58", r"against (\d+) µs", lambda: _relu_us(32, "fp32")),
]


_WORDS = {"two thirds": 2 / 3, "four": 4.0, "five": 5.0, "Eight": 8.0, "eight": 8.0, "ten": 10.0}


def _cell(notebook: str, cell_id: str) -> str:
    (path,) = NOTEBOOKS.glob(f"{notebook}_*.ipynb")
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.get("id") == cell_id:
            return " ".join(cell.source.split())  # line breaks inside phrases
    raise AssertionError(f"{path.name} has no cell {cell_id}")


def _digits(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: f"{c.notebook}-{c.cell}-{c.pattern[:24]}")
def test_prose_number_matches_the_core(claim: Claim):
    """The number the prose states equals the core's value at the digits the prose shows."""
    text = _cell(claim.notebook, claim.cell)
    match = re.search(claim.pattern, text)
    assert match, f"{claim.notebook}[{claim.cell}] no longer says {claim.pattern!r}"
    value = float(claim.value())
    if match.groups():
        shown = match.group(1)
        stated = _WORDS.get(shown)
        if stated is None:
            stated = float(shown)
    else:  # the phrase itself carries the number
        stated = next(v for k, v in _WORDS.items() if k in match.group(0))
        assert value == pytest.approx(stated, rel=0.1), (claim.pattern, value)
        return
    if claim.rel:
        assert value == pytest.approx(stated, rel=claim.rel), (claim.pattern, value)
    else:
        digits = _digits(shown) if shown[0].isdigit() else 0
        assert round(value, digits) == pytest.approx(stated), (claim.pattern, value)


def _minutes_in_notebooks() -> dict[str, tuple[int, int]]:
    """Each notebook's own time line: '**Time:** about N minutes' gives (N, N), '**Time:** N to
    M minutes' (or 'N-M minutes') gives (N, M)."""
    out = {}
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "markdown")
        m = re.search(r"\*\*Time:\*\* (?:about )?(\d+)(?: ?(?:to|-|–) ?(\d+))? min", first.source)
        assert m, f"{path.name}: the first cell has no '**Time:** about N (or N to M) minutes'"
        out[path.stem[:2]] = (int(m.group(1)), int(m.group(2) or m.group(1)))
    return out


def _minutes_in_table(text: str) -> dict[str, tuple[int, int]]:
    rows = re.findall(
        r"^\|[^|\n]*?(\d\d)[ _][^|\n]*\|.*\| (\d+)(?:[-–](\d+))? min \|$", text, flags=re.M
    )
    return {nb: (int(low), int(high or low)) for nb, low, high in rows}


def test_course_table_agrees_with_each_notebook_and_the_readme():
    """Notebook 00's course table, the README's table and every notebook's own time line
    give each notebook the same number of minutes (or the same range)."""
    own = _minutes_in_notebooks()
    nb00 = nbformat.read(NOTEBOOKS / "00_start_here.ipynb", as_version=4)
    table = "\n".join(c.source for c in nb00.cells if c.cell_type == "markdown")
    in_00 = _minutes_in_table(table)
    in_readme = _minutes_in_table((ROOT / "README.md").read_text())
    assert set(own) == set(in_00) == set(in_readme), (own, in_00, in_readme)
    assert in_00 == own
    assert in_readme == own


# The course's reading estimate: prose read at 120 words a minute (careful reading of technical
# text, folds included), 3 minutes for each prediction (think, commit a guess, read the answer)
# and 3 for each interactive widget. Notebooks 01-15 state it rounded to 5 minutes.
_WORDS_PER_MINUTE = 120
_MINUTES_PER_PREDICTION = 3
_MINUTES_PER_WIDGET = 3


def _reading_minutes(nb: nbformat.NotebookNode) -> float:
    from dlperf_widgets import widgets

    names = [n for n in widgets.__all__ if n[0].isupper() and n != "Predict"]
    made = re.compile(rf"\b({'|'.join(names)})\(")
    words = sum(len(c.source.split()) for c in nb.cells if c.cell_type == "markdown")
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    predictions = sum(1 for s in code if "Predict(" in s)
    shown = sum(1 for s in code if made.search(s))
    return (
        words / _WORDS_PER_MINUTE
        + _MINUTES_PER_PREDICTION * predictions
        + _MINUTES_PER_WIDGET * shown
    )


@pytest.mark.parametrize("number", [f"{i:02d}" for i in range(1, 16)])
def test_time_line_is_the_reading_estimate(number):
    """Each of notebooks 01-15 states, in its own **Time:** line, the time a learner who reads
    everything, makes every prediction and tries every widget needs: the estimate above, to
    within 5 minutes, so a lesson that grows cannot keep an old, short time."""
    (path,) = NOTEBOOKS.glob(f"{number}_*.ipynb")
    nb = nbformat.read(path, as_version=4)
    low, high = _minutes_in_notebooks()[number]
    stated = (low + high) / 2
    assert abs(stated - _reading_minutes(nb)) <= 5, (path.name, stated, _reading_minutes(nb))
