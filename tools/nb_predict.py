#!/usr/bin/env python3
"""Turn every "Predict" moment of the course notebooks into a `Predict` cell.

    python tools/nb_predict.py            # rewrite notebooks/NN_*.ipynb in place
    python tools/nb_predict.py --check    # exit 1 if running it would change a notebook

For each moment of ``MOMENTS`` the script inserts, right after the markdown cell that asks
the question (its *anchor*, found by cell id), a code cell with a fixed id holding a
``dw.Predict(...)`` widget whose answer is a call into the core, and it collapses the outputs
of the cells that reveal the answer (``metadata.jupyter.outputs_hidden``; their source stays
visible). Before each notebook's ``## Summary`` it adds a one-line note and a
``dw.Predict.scoreboard()`` cell.

It is idempotent: cells it owns (ids starting with ``pq-NN-``) are removed and rebuilt on
every run, so a second run changes nothing. A missing anchor or reveal cell (someone deleted
it) is reported and skipped. No other cell's source or outputs are touched.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

MATH_MEMORY_LATENCY = ("math", "memory", "latency")
TILES = ("256x128", "128x256", "128x128", "256x64", "64x256", "128x64", "64x128", "64x64")


def _literal(value: object) -> str:
    """A Python literal in double quotes (JSON text is one for strings and lists of them)."""
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class Moment:
    """One prediction: where it goes, what it asks, and how the core answers it."""

    notebook: str  # the two-digit prefix of the notebook file
    anchor: str  # id of the markdown cell that asks the question
    cell_id: str  # fixed id of the Predict cell inserted after the anchor
    question: str
    answer: str  # source of a zero-argument lambda that calls the core
    unit: str = ""
    choices: tuple[str, ...] | None = None
    tolerance: float = 0.1
    explain: str = ""
    reveal: tuple[str, ...] = ()  # ids of cells whose output gives the answer away
    imports: str = ""  # extra import lines the answer needs (besides `import dlperf_widgets as dw`)

    def answer_source(self) -> str:
        """The answer lambda as the cell writes it (double quotes, as the notebooks do)."""
        return self.answer.replace("'", '"')

    def source(self) -> str:
        """The code of the Predict cell."""
        lines = ["import dlperf_widgets as dw", *filter(None, self.imports.splitlines()), ""]
        lines.append("dw.Predict(")
        lines.append(f"    {_literal(self.question)},")
        lines.append(f"    answer={self.answer_source()},")
        if self.choices is not None:
            lines.append(f"    choices={_literal(list(self.choices))},")
        if self.unit:
            lines.append(f"    unit={_literal(self.unit)},")
        if self.tolerance != 0.1:
            lines.append(f"    tolerance={self.tolerance!r},")
        if self.explain:
            lines.append(f"    explain={_literal(self.explain)},")
        lines.append(")")
        return "\n".join(lines)

    def build(self):
        """The answer function, built the way the notebook cell builds it."""
        scope: dict = {}
        exec("import dlperf_widgets as dw\n" + self.imports, scope)
        return eval(self.answer_source(), scope)


M = Moment

MOMENTS: tuple[Moment, ...] = (
    # -- 00 start here ------------------------------------------------------------------
    M(
        "00",
        "25ddf1cf",
        "pq-00-01",
        "Three slices, a pan for two, one minute a side: the shortest time for all three toasts?",
        "lambda: dw.toast(slices=3, capacity=2, minutes_per_side=1).best_minutes",
        unit="min",
        tolerance=0.05,
        explain="Six sides, two places: three full rounds if you fry sides, not slices.",
        reveal=("00400e6f",),
    ),
    M(
        "00",
        "38de528f",
        "pq-00-02",
        "Five slices, the same pan: the shortest time with the best schedule?",
        "lambda: dw.toast(slices=5, capacity=2).best_minutes",
        unit="min",
        tolerance=0.05,
        explain="Ten sides in rounds of two: ceil(work / places) rounds.",
        reveal=("8fa3db98",),
    ),
    # -- 01 GEMM and intensity ------------------------------------------------------------
    M(
        "01",
        "c6074c90",
        "pq-01-01",
        "The A100's memory bandwidth?",
        "lambda: dw.gpu('A100').memory_bandwidth_bytes_per_s / 1e9",
        unit="GB/s",
        tolerance=0.2,
        explain="HBM2e on the 80 GB board: about 2 TB/s, from the datasheet.",
        reveal=("09f210b3",),
    ),
    M(
        "01",
        "9097f2d0",
        "pq-01-02",
        "How many GFLOP is an 8192 x 128 x 8192 GEMM?",
        "lambda: dw.gemm(8192, 128, 8192, dtype='fp16', gpu='V100').flops / 1e9",
        unit="GFLOP",
        explain="2 M N K: one multiply and one add per multiply-add.",
        reveal=("3d5dfa1a",),
    ),
    M(
        "01",
        "474160ec",
        "pq-01-03",
        "How many MB does the same GEMM move in FP8 (1 byte per element)?",
        "lambda: gemm_bytes(8192, 128, 8192, dw.dtype('fp8_e4m3').bytes_per_element) / 1e6",
        unit="MB",
        explain="Half the FP16 bytes: the element count is the same, each is half as big.",
        reveal=("44afcfe6",),
        imports="from dlperf_widgets.core.gemm import gemm_bytes",
    ),
    M(
        "01",
        "925580df",
        "pq-01-04",
        "How many times the thin GEMM's intensity does the square 8192^3 GEMM have?",
        "lambda: dw.gemm(8192, 8192, 8192, dtype='fp16', gpu='V100').arithmetic_intensity"
        " / dw.gemm(8192, 128, 8192, dtype='fp16', gpu='V100').arithmetic_intensity",
        unit="x",
        tolerance=0.15,
        explain="Square FP16 GEMMs reach n / 3; the thin one is capped near N.",
        reveal=("609b2077",),
    ),
    M(
        "01",
        "47582f3e",
        "pq-01-05",
        "The arithmetic intensity of 8192 x 1 x 8192 in FP16?",
        "lambda: dw.gemm(8192, 1, 8192, dtype='fp16', gpu='V100').arithmetic_intensity",
        unit="FLOP/B",
        explain="One multiply-add (2 FLOPs) per 2-byte weight read.",
        reveal=("e18ee831",),
    ),
    M(
        "01",
        "8195297d",
        "pq-01-06",
        "The A100's dense FP16 Tensor Core peak?",
        "lambda: dw.gpu('A100').peak_flops('fp16') / 1e12",
        unit="TFLOP/s",
        tolerance=0.05,
        explain="108 SMs x 1.41 GHz x 1024 FMA per clock per SM x 2.",
        reveal=("b44b02ca",),
    ),
    M(
        "01",
        "be790db8",
        "pq-01-07",
        "From V100 to H100, has the FP16 ops:byte ratio gone up or down?",
        "lambda: 'up' if dw.gpu('H100').ops_per_byte('fp16') > dw.gpu('V100').ops_per_byte('fp16')"
        " else 'down'",
        choices=("up", "down"),
        explain="Compute grew faster than bandwidth: newer GPUs need more FLOPs per byte.",
        reveal=("0bcd0d87",),
    ),
    # -- 02 bounds and roofline -----------------------------------------------------------
    M(
        "02",
        "9d521fbb",
        "pq-02-01",
        "Which of the two GEMMs is math-bound on a V100 in FP16?",
        "lambda: {(True, False): '8192 x 128 x 8192', (False, True): '8192 x 8192 x 8192',"
        " (True, True): 'both', (False, False): 'neither'}[tuple(dw.gemm(8192, n, 8192,"
        " dtype='fp16', gpu='V100').limiter == 'math' for n in (128, 8192))]",
        choices=("8192 x 128 x 8192", "8192 x 8192 x 8192", "both", "neither"),
        explain="Math-bound when the intensity exceeds the ops:byte ratio (139 on a V100).",
        reveal=("a03fe0fa",),
    ),
    M(
        "02",
        "2480e0d1",
        "pq-02-02",
        "Where does the tiny 256 x 256 x 256 GEMM land on a V100?",
        "lambda: dw.gemm(256, 256, 256, dtype='fp16', gpu='V100').limiter",
        choices=MATH_MEMORY_LATENCY,
        explain="Too few tiles to fill the SMs and over in microseconds: neither roof applies.",
    ),
    M(
        "02",
        "c4a1e001",
        "pq-02-03",
        "What share of the H100's bf16 datasheet peak do the best measured GEMMs reach?",
        "lambda: min((('100 %', 1.0), ('about 80 %', 0.8), ('about 50 %', 0.5)),"
        " key=lambda c: abs(c[1] - float((measured_gemms(dw.gpu('H100-SXM'), 'bf16')['flops']"
        " / measured_gemms(dw.gpu('H100-SXM'), 'bf16')['measured_time_s']).max()"
        " / dw.gpu('H100-SXM').peak_flops('bf16'))))[0]",
        choices=("100 %", "about 80 %", "about 50 %"),
        explain="Published measurements (XLA's table), not the model: no GEMM reaches the datasheet.",
        reveal=("c4a1e003",),
        imports="from dlperf_widgets.live.traces import measured_gemms",
    ),
    M(
        "02",
        "1c704169",
        "pq-02-04",
        "From which batch on is the 4096 x 1024 linear layer math-bound on a V100?",
        "lambda: int(np.argmax(dw.gemm_sweep(4096, np.arange(1, 1025), 1024, dtype='fp16',"
        " gpu='V100').limiter == 'math')) + 1",
        unit="rows",
        tolerance=0.15,
        explain="The intensity stays a little below N, so the batch must clear 139 by a margin.",
        reveal=("4458e7f6",),
        imports="import numpy as np",
    ),
    M(
        "02",
        "6fe60b26",
        "pq-02-05",
        "The Q.K^T product inside attention (512 x 512 x 64 per head): math- or memory-bound?",
        "lambda: dw.layer('attention', dtype='fp16', gpu='V100', training=False)"
        ".pass_named('forward', 'scores_qk').limiter",
        choices=MATH_MEMORY_LATENCY,
        explain="Its inner dimension is the head size, 64: too short for a high intensity.",
        reveal=("1c912524",),
    ),
    M(
        "02",
        "660efecc",
        "pq-02-06",
        "What share of a BERT-large training step do normalizations and element-wise ops take?",
        "lambda: 100 * (1 - dw.transformer(layers=24, hidden=1024, heads=16, seq_len=512, batch=8,"
        " dtype='fp16', gpu='V100').by_class['tensor_contraction']['runtime_share'])",
        unit="%",
        tolerance=0.2,
        explain="0.3 % of the FLOPs, but memory-bound: a large share of the time.",
        reveal=("63133e69",),
    ),
    M(
        "02",
        "8390ddd0",
        "pq-02-07",
        "256 x 256 x 256 in FP16 on an A100: what limits it?",
        "lambda: dw.gemm(256, 256, 256, dtype='fp16', gpu='A100').limiter",
        choices=MATH_MEMORY_LATENCY,
        explain="16 blocks of 64 x 64 for 108 SMs: not enough parallelism.",
        reveal=("83a62f06",),
    ),
    M(
        "02",
        "3ca683b5",
        "pq-02-08",
        "N = 96 instead of 128: the model's time as a multiple of the N = 128 time?",
        "lambda: dw.gemm(8192, 96, 8192, dtype='fp16', gpu='V100').predicted_time_s"
        " / dw.gemm(8192, 128, 8192, dtype='fp16', gpu='V100').predicted_time_s",
        unit="x",
        tolerance=0.05,
        explain="The 128-wide tiles are only three-quarters full: the math takes as long.",
        reveal=("c55d4baf",),
    ),
    M(
        "02",
        "c1278b2b",
        "pq-02-09",
        "Sequence 2048 with batch 2 (same tokens): does the contractions' share of the time go up or down?",
        "lambda: 'down' if dw.transformer(layers=24, hidden=1024, heads=16, seq_len=2048, batch=2,"
        " dtype='fp16', gpu='V100').by_class['tensor_contraction']['runtime_share']"
        " < dw.transformer(layers=24, hidden=1024, heads=16, seq_len=512, batch=8, dtype='fp16',"
        " gpu='V100').by_class['tensor_contraction']['runtime_share'] else 'up'",
        choices=("up", "down"),
        explain="The attention scores, and everything done to them, grow with the sequence squared.",
    ),
    # -- 03 tiles and waves ---------------------------------------------------------------
    M(
        "03",
        "26ee4e7d",
        "pq-03-01",
        "A 1024 x 1024 output in 256 x 128 tiles: how many thread blocks?",
        "lambda: dw.tile_wave(1024, 1024, tile='256x128', sms=dw.gpu('A100').sms).tiles",
        unit="blocks",
        tolerance=0.01,
        explain="4 tile rows x 8 tile columns.",
        reveal=("459ad840",),
    ),
    M(
        "03",
        "ebd4cfd2",
        "pq-03-02",
        "257 x 256 in 128 x 128 tiles: the tile efficiency?",
        "lambda: 100 * dw.tile_wave(257, 256, tile='128x128', sms=dw.gpu('A100').sms).tile_efficiency",
        unit="%",
        tolerance=0.05,
        explain="One extra row costs a whole row of tiles: 6 instead of 4.",
        reveal=("538a67e9",),
    ),
    M(
        "03",
        "771f22b6",
        "pq-03-03",
        "M = 4104 instead of 4096: the time as a multiple of M = 4096's?",
        "lambda: dw.gemm(4104, 4096, 4096, dtype='fp16', gpu='A100', tile='256x128')"
        ".predicted_time_s / dw.gemm(4096, 4096, 4096, dtype='fp16', gpu='A100',"
        " tile='256x128').predicted_time_s",
        unit="x",
        tolerance=0.05,
        explain="Eight rows add a row of 32 tiles and a sixth wave.",
        reveal=("f1589b2f",),
    ),
    M(
        "03",
        "fd9a695e",
        "pq-03-04",
        "12 blocks on 8 SMs, one block each: how many waves?",
        "lambda: dw.tile_wave(768, 512, tile='256x128', sms=8, blocks_per_sm=1).waves",
        unit="waves",
        tolerance=0.01,
        explain="ceil(12 / 8); the second wave is half empty.",
        reveal=("99391dd4",),
    ),
    M(
        "03",
        "a433bb87",
        "pq-03-05",
        "109 tiles of 256 x 128 on an A100: how many waves?",
        "lambda: dw.tile_wave(109 * 256, 128, tile='256x128', sms=dw.gpu('A100').sms).waves",
        unit="waves",
        tolerance=0.01,
        explain="A wave holds 108 tiles; the 109th starts a second one.",
        reveal=("7ecb8e21",),
    ),
    M(
        "03",
        "c28346a4",
        "pq-03-06",
        "110 tiles (2816 x 1280 x 8192) against 108 (2304 x 1536 x 8192): how many times longer?",
        "lambda: dw.gemm(2816, 1280, 8192, dtype='fp16', gpu='A100', tile='256x128')"
        ".predicted_time_s / dw.gemm(2304, 1536, 8192, dtype='fp16', gpu='A100',"
        " tile='256x128').predicted_time_s",
        unit="x",
        explain="Two tiles past a full wave cost a whole second wave.",
        reveal=("0bbca583",),
    ),
    M(
        "03",
        "db7cc2bf",
        "pq-03-07",
        "Frying whole slices (both sides before the next): how many minutes?",
        "lambda: dw.toast(slices=3, capacity=2, minutes_per_side=1).naive_minutes",
        unit="min",
        tolerance=0.05,
        explain="The last slice fries alone: a half-empty tail wave.",
        reveal=("791d70ca",),
    ),
    M(
        "03",
        "856f6eb1",
        "pq-03-08",
        "8192^3 on an A100 with 64 x 64 tiles: the time as a multiple of 256 x 128 tiles'?",
        "lambda: dw.gemm(8192, 8192, 8192, dtype='fp16', gpu='A100', tile='64x64').predicted_time_s"
        " / dw.gemm(8192, 8192, 8192, dtype='fp16', gpu='A100', tile='256x128').predicted_time_s",
        unit="x",
        tolerance=0.05,
        explain="Small tiles reuse operands less, so each runs slower.",
        reveal=("d17a0430",),
    ),
    M(
        "03",
        "8bbae99b",
        "pq-03-09",
        "2048 x 1024 x 1024 on an A100: which tile does the model pick?",
        "lambda: dw.gemm(2048, 1024, 1024, dtype='fp16', gpu='A100').tile",
        choices=TILES,
        explain="64 tiles of 256 x 128 leave 44 SMs idle; many small tiles fill the GPU.",
        reveal=("58e28eb4",),
    ),
    M(
        "03",
        "80fc4684",
        "pq-03-10",
        "512 x 512 in 128 x 128 tiles without split-K: what share of the A100's SMs is busy?",
        "lambda: 100 * dw.tile_wave(512, 512, tile='128x128', sms=dw.gpu('A100').sms)"
        ".wave_efficiency",
        unit="%",
        explain="16 tiles for 108 SMs.",
        reveal=("e93a7d33",),
    ),
    M(
        "03",
        "d3a50001",
        "pq-03-11",
        "For the 110-tile GEMM, which step adds the most time?",
        "lambda: {'achievable': 'achievable fraction', 'wave': 'second wave', 'overhead':"
        " 'fixed cost per kernel'}.get(max(dw.gemm(2816, 1280, 8192, dtype='fp16', gpu='A100',"
        " tile='256x128').steps()[2:], key=lambda s: s.added_time_s).effect, 'another step')",
        choices=("achievable fraction", "second wave", "fixed cost per kernel", "another step"),
        explain="At 51 % wave efficiency the second wave doubles the time.",
        reveal=("d3a50002",),
    ),
    M(
        "03",
        "d3a50003",
        "pq-03-12",
        "DeepBench on a V100: N = 128 takes how many times as long as N = 16 (M = 7680, K = 2560)?",
        "lambda: (lambda p: float(p['time_s'][list(p['x']).index(128)]"
        " / p['time_s'][list(p['x']).index(16)]))(measured_along('V100', 'fp16', 'n', 7680, 0,"
        " 2560, 16, 128))",
        unit="x",
        tolerance=0.2,
        explain="Measured (DeepBench): a thin GEMM streams A, so extra columns come almost free.",
        reveal=("d3a50005",),
        imports="from dlperf_widgets.live.traces import measured_along",
    ),
    # -- 04 Tensor Cores and alignment -----------------------------------------------------
    M(
        "04",
        "222f8c26",
        "pq-04-01",
        "With a current cuBLAS, INT8 sizes should be multiples of what?",
        "lambda: dw.dtype('int8').tensor_core_multiple",
        unit="elements",
        tolerance=0.01,
        explain="16 bytes per row: 16 one-byte elements.",
        reveal=("b26e2307",),
    ),
    M(
        "04",
        "8f08cc89",
        "pq-04-02",
        "K = 4095 instead of 4096 (V100, FP16, current cuBLAS): how many times slower?",
        "lambda: dw.gemm(1024, 1024, 4095, dtype='fp16', gpu='V100').predicted_time_s"
        " / dw.gemm(1024, 1024, 4096, dtype='fp16', gpu='V100').predicted_time_s",
        unit="x",
        explain=(
            "A misaligned K runs the Tensor Cores at half rate in the model (the slides' V100 "
            "sweep); the fixed cost per kernel keeps the ratio just under 2."
        ),
        reveal=("a3e8e1c0",),
    ),
    M(
        "04",
        "315d1c63",
        "pq-04-03",
        "Vocabulary 33708 on a V100: by what factor does the kit's fix cut the time?",
        "lambda: (lambda f: f.predicted_time_s_before / f.predicted_time_s_after)(next(f for f in dw.gemm(33708,"
        " 5120, 1024, dtype='fp16', gpu='V100').findings if f.parameter == 'm'))",
        unit="x",
        explain="Pad M to a multiple of 8: the gain is the misalignment penalty the model assumes.",
        reveal=("8d4d2c86", "70a6cd9e"),
    ),
    M(
        "04",
        "8fbcfdae",
        "pq-04-04",
        "M = 520 in 128-row tiles: what share of the launched rows is useful?",
        "lambda: 100 * dw.tile_wave(520, 8192, tile='128x128', sms=dw.gpu('A100').sms).tile_efficiency",
        unit="%",
        tolerance=0.05,
        explain="Eight rows past 512 launch a whole fifth row of tiles.",
        reveal=("44175224",),
    ),
    M(
        "04",
        "cdad22fd",
        "pq-04-05",
        "M = 520 on an A100: pad it to which size?",
        "lambda: dw.gemm(520, 8192, 8192, dtype='fp16', gpu='A100').findings[0].suggested_value",
        unit="rows",
        tolerance=0.01,
        explain="The next multiple of 64; the extra rows were launched anyway.",
        reveal=("ce934fff",),
    ),
    M(
        "04",
        "5616d570",
        "pq-04-06",
        "4096 x 4096 x 3 in FP16 on an A100: what limits it?",
        "lambda: dw.gemm(4096, 4096, 3, dtype='fp16', gpu='A100').limiter",
        choices=MATH_MEMORY_LATENCY,
        explain="Three FLOPs per byte: alignment cannot help a memory-bound GEMM.",
        reveal=("8acb6cb2",),
    ),
    # -- 05 layer checklists -----------------------------------------------------------------
    M(
        "05",
        "371a3240",
        "pq-05-01",
        "The 4096 x 1024 layer at batch 512 on a V100: math- or memory-bound?",
        "lambda: dw.layer('linear', batch=512, inputs=1024, outputs=4096, dtype='fp16',"
        " gpu='V100').pass_named('wgrad').limiter",
        choices=MATH_MEMORY_LATENCY,
        explain="All three passes do the same FLOPs on the same bytes: about 315 FLOP/B.",
        reveal=("861605c8",),
    ),
    M(
        "05",
        "b2c002b2",
        "pq-05-02",
        "The same layer at batch 1: its arithmetic intensity?",
        "lambda: dw.layer('linear', batch=1, inputs=1024, outputs=4096, dtype='fp16',"
        " gpu='V100').pass_named('forward').arithmetic_intensity",
        unit="FLOP/B",
        explain="2 FLOPs per 2-byte weight.",
        reveal=("842bcde0",),
    ),
    M(
        "05",
        "0651627d",
        "pq-05-03",
        "From which batch is the forward GEMM math-bound on an A100?",
        "lambda: next(str(b) for b in (64, 128, 192, 256, 512) if dw.layer('linear', batch=b,"
        " inputs=1024, outputs=4096, gpu='A100', findings=False).pass_named('forward').limiter"
        " == 'math')",
        choices=("64", "128", "192", "256", "512"),
        explain="The intensity is a little below the batch; the A100 needs 153.",
        reveal=("bd581650",),
    ),
    M(
        "05",
        "906eac83",
        "pq-05-04",
        "Batch 500 padded to 504 on an A100: how many times faster?",
        "lambda: (lambda f: f.predicted_time_s_before / f.predicted_time_s_after)(next(f for f in"
        " dw.layer('linear', batch=500, inputs=1024, outputs=4096, dtype='fp16', gpu='A100')"
        ".findings if f.fix.startswith('pad')))",
        unit="x",
        tolerance=0.15,
        explain="The batch is N of two GEMMs and K of the weight gradient: all three misaligned.",
        reveal=("02bc164c",),
    ),
    M(
        "05",
        "3fdcb9a0",
        "pq-05-05",
        "The 3x3, 64 -> 64 convolution at batch 32, 56 x 56: M of its forward GEMM?",
        "lambda: dw.layer('conv2d', batch=32, in_channels=64, out_channels=64, height=56,"
        " width=56, kernel_size=3, padding=1, dtype='fp16', gpu='A100').pass_named('forward').m",
        unit="rows",
        tolerance=0.01,
        explain="M = N P Q = 32 x 56 x 56.",
        reveal=("2521f2b6",),
    ),
    M(
        "05",
        "fa7cb668",
        "pq-05-06",
        "60 -> 60 channels in FP16: does the checklist ask for padding?",
        "lambda: 'yes' if any(f.fix.startswith('pad') for f in dw.layer('conv2d', batch=32,"
        " in_channels=60, out_channels=60, height=56, width=56, kernel_size=3, padding=1,"
        " dtype='fp16', gpu='A100').findings) else 'no'",
        choices=("yes", "no"),
        explain="FP16 wants multiples of 8; 60 is not one (TF32's 4 is).",
        reveal=("6d77f3cc",),
    ),
    M(
        "05",
        "418d50f4",
        "pq-05-07",
        "The 3-channel stem convolution: pad the input to how many channels?",
        "lambda: next(f for f in dw.layer('conv2d', batch=32, in_channels=3, out_channels=64,"
        " height=224, width=224, kernel_size=7, stride=2, padding=3, dtype='fp16', gpu='A100')"
        ".findings if f.parameter == 'in_channels').suggested_value",
        unit="channels",
        tolerance=0.01,
        explain="A zero channel and channels_last.",
        reveal=("90b7fc19",),
    ),
    M(
        "05",
        "00c4fb34",
        "pq-05-08",
        "In NCHW, what share of the conv layer's time do the transposes take?",
        "lambda: (lambda r: 100 * sum(p.predicted_time_s for p in r.passes if p.op =="
        " 'nchw_transpose') / r.predicted_time_s)(dw.layer('conv2d', batch=32, in_channels=64,"
        " out_channels=64, height=56, width=56, kernel_size=3, padding=1, layout='nchw',"
        " dtype='fp16', gpu='A100'))",
        unit="%",
        tolerance=0.2,
        explain="One memory-bound transpose per GEMM pass.",
        reveal=("b920e707",),
    ),
    M(
        "05",
        "70ea5a3e",
        "pq-05-09",
        "LSTM, minibatch 64: which GEMM is memory-bound?",
        "lambda: (lambda r: {(True, False): 'input GEMM', (False, True): 'recurrent GEMM',"
        " (True, True): 'both', (False, False): 'neither'}[(r.pass_named('forward',"
        " 'input_gates').limiter == 'memory', r.pass_named('forward', 'recurrent_gates').limiter"
        " == 'memory')])(dw.layer('lstm', batch=64, input_size=1024, hidden_size=1024, seq_len=50,"
        " dtype='fp16', gpu='V100'))",
        choices=("input GEMM", "recurrent GEMM", "both", "neither"),
        explain="The recurrent GEMM's N is the minibatch, 64; the input GEMM's is 64 x 50 steps.",
        reveal=("d6a324f6",),
    ),
    M(
        "05",
        "683d6712",
        "pq-05-10",
        "From which minibatch is the recurrent GEMM math-bound on a V100?",
        "lambda: next(str(b) for b in (32, 64, 128, 256, 512) if dw.layer('lstm', batch=b,"
        " input_size=1024, hidden_size=1024, seq_len=50, gpu='V100', findings=False)"
        ".pass_named('forward', 'recurrent_gates').limiter == 'math')",
        choices=("32", "64", "128", "256", "512"),
        explain="Its N is the minibatch; it must clear 139 with a margin.",
        reveal=("5252dc1b",),
    ),
    M(
        "05",
        "7aa77fcf",
        "pq-05-11",
        "Vocabulary 33708: the next multiple of 8?",
        "lambda: next(f for f in dw.layer('projection', batch=10, seq_len=512, hidden=1024,"
        " vocab=33708, dtype='fp16', gpu='V100').findings if f.parameter == 'vocab')"
        ".suggested_value",
        unit="tokens",
        tolerance=1e-5,
        explain="Four unused tokens align every vocabulary GEMM.",
        reveal=("66c66ad4", "dc0a7270"),
    ),
    M(
        "05",
        "fbff9702",
        "pq-05-12",
        "4095 tokens through the 4096 x 1024 layer: which pass is hit hardest?",
        "lambda: max(('forward', 'dgrad', 'wgrad'), key=lambda p: dw.layer('linear', batch=4095,"
        " inputs=1024, outputs=4096, dtype='fp16', gpu='V100').pass_named(p).predicted_time_s"
        " / dw.layer('linear', batch=4096, inputs=1024, outputs=4096, dtype='fp16', gpu='V100')"
        ".pass_named(p).predicted_time_s)",
        choices=("forward", "dgrad", "wgrad"),
        explain="The tokens are K of the weight gradient, the dimension alignment matters most for.",
        reveal=("1b98b559",),
    ),
    M(
        "05",
        "811772e9",
        "pq-05-13",
        "The dense 3x3 block's time as a multiple of depthwise + 1x1's?",
        "lambda: (lambda s: cnn([{'kind': 'conv2d', 'out_channels': 64, 'kernel_size': 3},"
        " 'batchnorm'], **s).total_time_s / cnn([{'kind': 'conv2d', 'out_channels': 32, 'groups':"
        " 'depthwise'}, 'batchnorm', 'relu', {'kind': 'conv2d', 'out_channels': 64, 'kernel_size':"
        " 1}, 'batchnorm'], **s).total_time_s)(dict(batch=32, channels=32, height=112, width=112,"
        " dtype='fp16', gpu='A100'))",
        unit="x",
        tolerance=0.15,
        explain=(
            "Seven times the FLOPs, yet the dense block is the faster one here: the "
            "depthwise passes are memory-bound and pay a fixed cost per kernel."
        ),
        reveal=("4456e3e0",),
        imports="from dlperf_widgets.core.network import cnn",
    ),
    M(
        "05",
        "80d2a9f6",
        "pq-05-14",
        "conv -> BatchNorm -> ReLU in inference: the share of BN and ReLU?",
        "lambda: (lambda b: 100 * sum(o.predicted_time_s for o in b.ops[1:]) / b.total_time_s)("
        "cnn([{'kind': 'conv2d', 'out_channels': 64}, 'batchnorm', 'relu'], training=False,"
        " batch=32, channels=64, height=56, width=56, dtype='fp16', gpu='A100'))",
        unit="%",
        tolerance=0.15,
        explain="Two memory passes over a large tensor each.",
        reveal=("19f0d2e0",),
        imports="from dlperf_widgets.core.network import cnn",
    ),
    # -- 06 memory-limited layers ----------------------------------------------------------------
    M(
        "06",
        "e0f3e559",
        "pq-06-01",
        "The arithmetic intensity of a ReLU in FP16?",
        "lambda: memory_op('relu', shape=(32, 64, 56, 56), dtype='fp16', gpu='V100')[0]"
        ".arithmetic_intensity",
        unit="FLOP/B",
        explain="One operation per 4 bytes (2 read, 2 written).",
        reveal=("6af83cd3",),
        imports="from dlperf_widgets.core.memlimited import memory_op",
    ),
    M(
        "06",
        "730a8ad5",
        "pq-06-02",
        "The ReLU at batch 64 instead of 32 takes how many times t?",
        "lambda: memory_op('relu', shape=(64, 64, 56, 56), dtype='fp16', gpu='V100')[0]"
        ".predicted_time_s / memory_op('relu', shape=(32, 64, 56, 56), dtype='fp16',"
        " gpu='V100')[0].predicted_time_s",
        unit="x",
        explain="Memory-bound: time follows bytes.",
        reveal=("d2a7edca",),
        imports="from dlperf_widgets.core.memlimited import memory_op",
    ),
    M(
        "06",
        "ee5522eb",
        "pq-06-03",
        "BatchNorm forward: non-persistent time over persistent time?",
        "lambda: memory_op('batchnorm', shape=(32, 64, 56, 56), persistent=False, dtype='fp16',"
        " gpu='V100')[0].predicted_time_s / memory_op('batchnorm', shape=(32, 64, 56, 56),"
        " persistent=True, dtype='fp16', gpu='V100')[0].predicted_time_s",
        unit="x",
        explain="Three tensor passes against two: close to the ratio of the bytes.",
        reveal=("09c47bbd",),
        imports="from dlperf_widgets.core.memlimited import memory_op",
    ),
    M(
        "06",
        "9dbc8844",
        "pq-06-04",
        "The intensity of 7x7 max pooling at stride 1 in FP16?",
        "lambda: memory_op('maxpool', shape=(32, 64, 56, 56), kernel_size=7, stride=1, padding=3,"
        " dtype='fp16', gpu='V100')[0].arithmetic_intensity",
        unit="FLOP/B",
        tolerance=0.15,
        explain="49 comparisons per 4 bytes: still far below 139.",
        reveal=("7410aae6",),
        imports="from dlperf_widgets.core.memlimited import memory_op",
    ),
    M(
        "06",
        "82a9765a",
        "pq-06-05",
        "BatchNorm on N x 64 x 14 x 14: does batch 16 take twice batch 8's time?",
        "lambda: 'yes' if memory_op('batchnorm', shape=(16, 64, 14, 14), dtype='fp16',"
        " gpu='V100')[0].predicted_time_s > 1.5 * memory_op('batchnorm', shape=(8, 64, 14, 14),"
        " dtype='fp16', gpu='V100')[0].predicted_time_s else 'no'",
        choices=("yes", "no"),
        explain="Too small to keep the memory system busy: the kernel's fixed cost dominates.",
        reveal=("442329e7",),
        imports="from dlperf_widgets.core.memlimited import memory_op",
    ),
    M(
        "06",
        "0e9b6a2e",
        "pq-06-06",
        "BatchNorm with 60 or 64 channels: which is faster?",
        "lambda: min(('C = 60', 60), ('C = 64', 64), key=lambda c: dw.layer('batchnorm',"
        " shape=(32, c[1], 56, 56), persistent=True, dtype='fp16', gpu='V100')"
        ".predicted_time_s)[0]",
        choices=("C = 60", "C = 64"),
        explain="Memory-limited: fewer values, fewer bytes, less time; alignment buys nothing.",
        reveal=("3ba58991",),
    ),
    M(
        "06",
        "98941436",
        "pq-06-07",
        "ReLU in FP32 or FP16: which is faster?",
        "lambda: min(('FP32', 'fp32'), ('FP16', 'fp16'), key=lambda d: memory_op('relu',"
        " shape=(32, 64, 56, 56), dtype=d[1], gpu='V100')[0].predicted_time_s)[0]",
        choices=("FP32", "FP16"),
        explain=(
            "Half the bytes, a little more than half the time: the kernel's fixed cost "
            "does not shrink."
        ),
        reveal=("08fc2717",),
        imports="from dlperf_widgets.core.memlimited import memory_op",
    ),
    # -- 07 mixed precision and sparsity --------------------------------------------------------
    M(
        "07",
        "2f0715f5",
        "pq-07-01",
        "The largest finite FP16 number?",
        "lambda: dw.number_format('fp16').max",
        tolerance=0.5,
        explain="(2 - 2^-10) x 2^15 = 65,504: the order of magnitude is what matters.",
        reveal=("d5e1df14",),
    ),
    M(
        "07",
        "5ddfd671",
        "pq-07-02",
        "1.001 in FP16 and in BF16: which keeps the .001?",
        "lambda: 'FP16' if float(simulate_cast([1.001], 'fp16').values[0]) != 1.0 else 'BF16'",
        choices=("FP16", "BF16"),
        explain="FP16 steps near 1 are 2^-10 apart, BF16's 2^-7.",
        reveal=("5ea04599",),
        imports="from dlperf_widgets.core.formats import simulate_cast",
    ),
    M(
        "07",
        "72a0b6af",
        "pq-07-03",
        "Without loss scaling, what share of these gradients does FP16 flush to zero?",
        "lambda: 100 * loss_scale_effect(1.0, format='fp16').underflow_fraction",
        unit="%",
        explain="Everything below FP16's smallest subnormal becomes 0.",
        reveal=("44030bbd",),
        imports="from dlperf_widgets.core.loss_scaling import loss_scale_effect",
    ),
    M(
        "07",
        "a1673910",
        "pq-07-04",
        "Which power of two (the exponent) keeps the most gradients?",
        "lambda: int(np.argmax(loss_scale_effect(2.0 ** np.arange(33)).kept_fraction))",
        unit="(2^x)",
        tolerance=0.2,
        explain="A broad plateau: being on it matters, not the exact value.",
        reveal=("277b7abc",),
        imports="import numpy as np\nfrom dlperf_widgets.core.loss_scaling import loss_scale_effect",
    ),
    M(
        "07",
        "38c586a9",
        "pq-07-05",
        "Largest gradient 4.0, scale starting at 65,536: how many steps are skipped?",
        "lambda: int(simulate_grad_scaler(max_abs_grad=[4.0] * 8).skipped_steps)",
        unit="steps",
        tolerance=0.01,
        explain="Halve until 4 x scale stays below 65,520.",
        reveal=("8e36a699",),
        imports="from dlperf_widgets.core.loss_scaling import simulate_grad_scaler",
    ),
    M(
        "07",
        "c8c4ca7c",
        "pq-07-06",
        "Growth interval 2, an overflow at step 3: the scale after 8 steps?",
        "lambda: simulate_grad_scaler([i == 3 for i in range(8)], init_scale=65536.0,"
        " growth_interval=2).final_scale",
        tolerance=0.01,
        explain="Doubles after every two clean steps, halves on the skipped one (the core's replay).",
        reveal=("addd0509",),
        imports="from dlperf_widgets.core.loss_scaling import simulate_grad_scaler",
    ),
    M(
        "07",
        "807e12fd",
        "pq-07-07",
        "Which four weights survive 2:4 pruning?",
        "lambda: ', '.join(f'{w:g}' for w in prune_2_4(np.array([[0.9, -0.1, 0.05, -0.7, 0.2, 0.3,"
        " -0.25, 0.01]])).weights[0] if w != 0)",
        choices=("0.9, -0.7, 0.3, -0.25", "0.9, 0.2, 0.3, 0.01", "0.9, 0.05, 0.2, 0.3"),
        explain="The two largest magnitudes of each group of four, whatever their sign.",
        reveal=("86ca2548",),
        imports="import numpy as np\nfrom dlperf_widgets.core.sparsity import prune_2_4",
    ),
    M(
        "07",
        "1e2da6aa",
        "pq-07-08",
        "Which of the two GEMMs gains from 2:4 weights?",
        "lambda: {(True, False): 'the large GEMM', (False, True): 'the matrix-vector product',"
        " (True, True): 'both', (False, False): 'neither'}[tuple(sparse_gemm(8192, n, 8192,"
        " dtype='fp16', gpu='A100').gemm_speedup > 1.05 for n in (8192, 1))]",
        choices=("the large GEMM", "the matrix-vector product", "both", "neither"),
        explain="Only the math time halves; a memory-bound GEMM still reads its weights.",
        reveal=("e4499531",),
        imports="from dlperf_widgets.core.sparsity import sparse_gemm",
    ),
    M(
        "07",
        "b868f4b2",
        "pq-07-09",
        "Half of the step runs 2x faster: how much faster is the step?",
        "lambda: amdahl_speedup(0.5, 2.0)",
        unit="x",
        tolerance=0.05,
        explain="Amdahl: 1 / (0.5 + 0.5 / 2).",
        reveal=("e1c67895",),
        imports="from dlperf_widgets.core.sparsity import amdahl_speedup",
    ),
    M(
        "07",
        "7bc04c2b",
        "pq-07-10",
        "An A100's TF32 Tensor Core peak as a multiple of its FP32 CUDA-core peak?",
        "lambda: dw.gpu('A100').peak_flops('tf32') / dw.gpu('A100').peak_flops('fp32')",
        unit="x",
        explain="156 against 19.5 TFLOP/s, for a 10-bit significand.",
        reveal=("46e6ee97", "54e4c75d"),
    ),
    # -- 08 memory and parallelism ------------------------------------------------------------------
    M(
        "08",
        "a3079ce1",
        "pq-08-01",
        "7B parameters, mixed precision, AdamW: how many GB of model states?",
        "lambda: dw.training_memory(7e9, optimizer='adamw', precision='mixed-fp16')"
        ".model_state_bytes / 1e9",
        unit="GB",
        explain="18 bytes per parameter: weights, gradients, two moments.",
        reveal=("ccf51ab8",),
    ),
    M(
        "08",
        "1db8f771",
        "pq-08-02",
        "7B model, batch 8, 2048 tokens: which is bigger?",
        "lambda: (lambda r: 'activations' if r.activations_bytes > r.model_state_bytes else"
        " 'model states')(dw.training_memory(7e9, layers=32, hidden=4096, seq_len=2048, batch=8,"
        " heads=32, gpu='A100'))",
        choices=("model states", "activations"),
        explain="Activations grow with batch x sequence (and the scores with its square).",
        reveal=("b1428319",),
    ),
    M(
        "08",
        "da258cdb",
        "pq-08-03",
        "Ring all-reduce on 1024 GPUs: each GPU sends how many times the gradients?",
        "lambda: allreduce_bytes(1.0, 1024)",
        unit="x",
        tolerance=0.1,
        explain="2 (n - 1) / n: it approaches 2 and stays there.",
        reveal=("f2be26f3",),
        imports="from dlperf_widgets.core.parallel import allreduce_bytes",
    ),
    M(
        "08",
        "1ab662ef",
        "pq-08-04",
        "7.5B parameters on 64 GPUs with ZeRO stage 1: GB of model states per GPU?",
        "lambda: zero_model_state_bytes(7.5e9, 1, 64) / 1e9",
        unit="GB",
        tolerance=0.15,
        explain="Only the optimizer states are split 64 ways.",
        reveal=("fcfb50ab",),
        imports="from dlperf_widgets.core.parallel import zero_model_state_bytes",
    ),
    M(
        "08",
        "1f1ca625",
        "pq-08-05",
        "Which of the three 8-GPU arrangements fit in 80 GB per GPU?",
        "lambda: (lambda fit: {(False, True, True): 'tensor and pipeline parallel',"
        " (True, True, True): 'all three', (False, True, False): 'tensor parallel only',"
        " (False, False, True): 'pipeline parallel only'}.get(fit, 'another set'))(tuple("
        "dw.training_memory(7e9, layers=32, hidden=4096, seq_len=2048, batch=8, heads=32,"
        " gpu='A100', **s).fits for s in (dict(data_parallel=8, zero=3),"
        " dict(tensor_parallel=8), dict(pipeline_parallel=8))))",
        choices=(
            "tensor and pipeline parallel",
            "all three",
            "tensor parallel only",
            "pipeline parallel only",
            "another set",
        ),
        explain="ZeRO splits the model states but every GPU still holds its batch's activations.",
        reveal=("a311937b",),
    ),
    M(
        "08",
        "65e60315",
        "pq-08-09",
        "Batch 16 as 4 micro-batches of 4: one micro-batch keeps how many times fewer activations?",
        "lambda: transformer_activation_bytes(16, 16, 32, 4).total_bytes"
        " / transformer_activation_bytes(16, 4, 32, 4).total_bytes",
        unit="x",
        tolerance=0.05,
        explain="Saved activations scale with the batch; the gradients agree up to float rounding.",
        reveal=("34251b81", "c8aa3324"),
        imports="from dlperf_widgets.core.memory import transformer_activation_bytes",
    ),
    M(
        "08",
        "dfc26499",
        "pq-08-06",
        "16 layers with sqrt(n) checkpointing: what share of the peak memory remains?",
        "lambda: (lambda a: 100 * checkpoint_activation_bytes(16, a.total_bytes,"
        " a.layer_input_bytes, 'sqrt')[1] / checkpoint_activation_bytes(16, a.total_bytes,"
        " a.layer_input_bytes, 'none')[1])(transformer_activation_bytes(16, 2, 32, 4,"
        " bytes_per_element=4, mask_bytes=4, dropout=False))",
        unit="%",
        tolerance=0.25,
        explain="Four checkpoints plus one segment of four layers rebuilt at a time.",
        reveal=("2700a2c2",),
        imports="from dlperf_widgets.core.memory import (checkpoint_activation_bytes,"
        " transformer_activation_bytes)",
    ),
    M(
        "08",
        "ca9ef5e4",
        "pq-08-07",
        "From 16 to 64 layers with sqrt(n) checkpointing: the peak grows by?",
        "lambda: (lambda a: checkpoint_activation_bytes(64, a.total_bytes, a.layer_input_bytes,"
        " 'sqrt')[1] / checkpoint_activation_bytes(16, a.total_bytes, a.layer_input_bytes,"
        " 'sqrt')[1])(transformer_activation_bytes(16, 2, 32, 4, bytes_per_element=4,"
        " mask_bytes=4, dropout=False))",
        unit="x",
        explain="sqrt(4) = 2.",
        reveal=("8fd1e239", "b2a0d5e6"),
        imports="from dlperf_widgets.core.memory import (checkpoint_activation_bytes,"
        " transformer_activation_bytes)",
    ),
    M(
        "08",
        "e493ea42",
        "pq-08-08",
        "Mixed precision training: memory, speed, or both?",
        "lambda: (lambda t: 'both' if t.saves_memory and t.speeds_up else 'memory only' if"
        " t.saves_memory else 'speed only')(next(t for t in optimization_techniques() if"
        " t.technique == 'Mixed precision training'))",
        choices=("memory only", "speed only", "both"),
        explain="It halves activations but adds FP32 master weights: its point is speed.",
        reveal=("4c68a093",),
        imports="from dlperf_widgets.core.memory import optimization_techniques",
    ),
    # -- 09 measure for real -----------------------------------------------------------------------
    M(
        "09",
        "6dc1d97a",
        "pq-09-01",
        "ampere_sgemm_128x64_nn: Tensor Core, CUDA core, or no matrix kernel?",
        "lambda: classify_kernel('ampere_sgemm_128x64_nn')[0]",
        choices=("tensor_core", "cuda_core", "other"),
        explain="'sgemm' is a plain FP32 GEMM; Tensor Core kernels carry shapes like s16816.",
        reveal=("fcdea65c",),
        imports="from dlperf_widgets.live.tensorcores import classify_kernel",
    ),
    M(
        "09",
        "69ff15f2",
        "pq-09-02",
        "Fusing bias and ReLU into the GEMM saves what share of the time?",
        "lambda: (lambda ts: 100 * (1 - ts[0] / sum(ts)))([dw.layer('linear', batch=4096,"
        " inputs=1024, outputs=4096, dtype='fp16', gpu='A100', training=False, findings=False)"
        ".pass_named('forward').predicted_time_s] + [memory_op(k, elements=4096 * 4096,"
        " dtype='fp16', gpu='A100', training=False)[0].predicted_time_s for k in ('bias',"
        " 'relu')])",
        unit="%",
        tolerance=0.15,
        explain="Bias and ReLU are pure memory traffic, each moving more bytes than the GEMM.",
        reveal=("b2d32639",),
        imports="from dlperf_widgets.core.memlimited import memory_op",
    ),
    M(
        "09",
        "88aae2f8",
        "pq-09-03",
        "The A100's INT8 Tensor Core peak as a multiple of its FP16 peak?",
        "lambda: dw.gpu('A100').peak_flops('int8') / dw.gpu('A100').peak_flops('fp16')",
        unit="x",
        explain="Twice the rate at half the bytes: the ops:byte ratio doubles too.",
        reveal=("59eec596",),
    ),
    M(
        "09",
        "ba86f289",
        "pq-09-04",
        "4096 x 512 x 1024 on an A100: which tile is fastest?",
        "lambda: dw.gemm(4096, 512, 1024, dtype='fp16', gpu='A100').tile",
        choices=TILES,
        explain="64 big tiles leave 44 SMs idle; 512 small ones fill five waves.",
        reveal=("6e13ec89",),
    ),
    M(
        "09",
        "476a5d0d",
        "pq-09-05",
        "1024 x 8 x 1024 on an A100: what limits it?",
        "lambda: dw.gemm(1024, 8, 1024, dtype='fp16', gpu='A100').limiter",
        choices=MATH_MEMORY_LATENCY,
        explain=(
            "The guide's count gives 64 blocks (64 x 64 tiles, K split) for 108 SMs: too "
            "few to fill the GPU; the kernel is over in a few microseconds."
        ),
        reveal=("4b467687",),
    ),
    M(
        "09",
        "c57a3aa5",
        "pq-09-06",
        "The model's time for 1024^3 in FP16 on an A100?",
        "lambda: dw.gemm(1024, 1024, 1024, dtype='fp16', gpu='A100').predicted_time_s * 1e6",
        unit="us",
        tolerance=0.25,
        explain="The model's prediction, not a measurement.",
        reveal=("edb75334",),
    ),
    M(
        "09",
        "c5217236",
        "pq-09-07",
        "M = K = 256 on an A100, N from 64 to 1024: how does the model's time change with N?",
        "lambda: (lambda t: 'not at all' if t.max() < 1.01 * t.min() else 'in proportion to N' if"
        " t.max() > 10 * t.min() else 'in steps')(dw.gemm_sweep(256, np.arange(64, 1025, 64), 256,"
        " dtype='fp32', gpu='A100').predicted_time_s)",
        choices=("in proportion to N", "in steps", "not at all"),
        explain="Every N fits one wave of tiles: the time of one tile.",
        reveal=("bf60b02a",),
        imports="import numpy as np",
    ),
    M(
        "09",
        "7b9ca281",
        "pq-09-08",
        "4096 x 1000 x 4096 on an A100: which effect costs the most?",
        "lambda: {'achievable': 'achievable fraction', 'tile': 'tiles', 'wave': 'waves',"
        " 'tile_shape': 'tile shape', 'alignment': 'alignment'}.get(reconcile_gemm(4096, 1000,"
        " 4096, dtype='fp16', gpu='A100').dominant_effect, 'another effect')",
        choices=(
            "achievable fraction",
            "tiles",
            "waves",
            "tile shape",
            "alignment",
            "another effect",
        ),
        explain="The tiles that fit N = 1000 best are smaller and run less efficiently.",
        reveal=("1a6675c9",),
        imports="from dlperf_widgets.live.reconcile import reconcile_gemm",
    ),
    M(
        "09",
        "90eee644",
        "pq-09-09",
        "The plain roofline's median error against the published measurements?",
        "lambda: min((('about 5 %', 0.05), ('about 20 %', 0.2), ('about 50 %', 0.5)),"
        " key=lambda c: abs(c[1] - model_error_report().overall.roofline_median_error))[0]",
        choices=("about 5 %", "about 20 %", "about 50 %"),
        explain="Real GPUs are slower than their datasheets, always in the same direction.",
        reveal=("4d4402b2",),
        imports="from dlperf_widgets.live.traces import model_error_report",
    ),
    M(
        "09",
        "30510d6a",
        "pq-09-10",
        "GPT-2 small on an A100: what share of the step do the contractions take?",
        "lambda: 100 * dw.transformer(layers=12, hidden=768, heads=12, seq_len=1024, batch=8,"
        " vocab=50257, dtype='fp16', gpu='A100').by_class['tensor_contraction']['runtime_share']",
        unit="%",
        tolerance=0.15,
        explain="Over 99 % of the FLOPs, well under all of the time.",
        reveal=("42c577f7",),
    ),
    M(
        "09",
        "f1fb7b6d",
        "pq-09-11",
        "Which single operation of the step takes the longest?",
        "lambda: {'head.projection': 'the vocabulary projection', 'block.attention_softmax':"
        " 'the attention softmax', 'block.ffn.up': 'an FFN GEMM', 'block.ffn.down': 'an FFN GEMM',"
        " 'block.qkv_projection': 'the QKV projection'}.get(max(dw.transformer(layers=12,"
        " hidden=768, heads=12, seq_len=1024, batch=8, vocab=50257, dtype='fp16', gpu='A100').ops,"
        " key=lambda p: p.predicted_time_s).op, 'another operation')",
        choices=(
            "the vocabulary projection",
            "the attention softmax",
            "an FFN GEMM",
            "the QKV projection",
            "another operation",
        ),
        explain="The vocabulary makes the projection the largest GEMM of the model.",
        reveal=("4cc1dc75",),
    ),
    M(
        "09",
        "ba729bdb",
        "pq-09-12",
        "Padding the vocabulary to 50,264: what share of the step is saved?",
        "lambda: 100 * (1 - dw.transformer(layers=12, hidden=768, heads=12, seq_len=1024, batch=8,"
        " vocab=50264, dtype='fp16', gpu='A100').total_time_s / dw.transformer(layers=12,"
        " hidden=768, heads=12, seq_len=1024, batch=8, vocab=50257, dtype='fp16', gpu='A100')"
        ".total_time_s)",
        unit="%",
        tolerance=0.2,
        explain="Seven unused tokens align all three of the projection's GEMMs.",
        reveal=("03ed327b",),
    ),
    M(
        "09",
        "86b33f0a",
        "pq-09-13",
        "GPT-2 small (124 M parameters), batch 8 x 1024: which is larger?",
        "lambda: (lambda r: 'activations' if r.activations_bytes > r.model_state_bytes else"
        " 'model states')(dw.training_memory(124e6, optimizer='adamw', precision='mixed-fp16',"
        " heads=12, layers=12, hidden=768, seq_len=1024, batch=8, gpu='V100'))",
        choices=("model states", "activations"),
        explain="18 B per parameter is about 2 GiB; the attention scores grow with the sequence squared.",
        reveal=("f41b0638",),
    ),
    # -- 10 fusion and launch overhead --------------------------------------------------------
    M(
        "10",
        "2ff346d7",
        "pq-10-01",
        "Fusing bias, dropout, residual and LayerNorm: what share of the DRAM traffic goes away?",
        "lambda: 100 * fusion_chain(['bias', 'dropout', 'residual', 'layernorm'],"
        " elements=8 * 2048 * 1024, dtype='fp16', gpu='A100').bytes_saved_fraction",
        unit="%",
        explain="Nine tensor passes (plus the mask) become three.",
        reveal=("08149773", "98bf6947"),
        imports="from dlperf_widgets.core.fusion import fusion_chain",
    ),
    M(
        "10",
        "998048ec",
        "pq-10-02",
        "Standard attention at N = 4096 (16 heads, batch 8): GiB kept for the backward pass?",
        "lambda: attention(4096, head_dim=64, heads=16, batch=8, dtype='fp16', gpu='A100')"
        ".saved_bytes_standard / 2**30",
        unit="GiB",
        explain="The N x N probabilities of every head: they grow with N squared.",
        reveal=("af198f53", "7a293821"),
        imports="from dlperf_widgets.core.fusion import attention",
    ),
    M(
        "10",
        "4e3f6f3d",
        "pq-10-03",
        "Head size 128 instead of 64: does FlashAttention's traffic advantage grow or shrink?",
        "lambda: 'grows' if attention(4096, head_dim=128, heads=16, batch=8, sram_bytes=100 * 1024)"
        ".traffic_ratio > attention(4096, head_dim=64, heads=16, batch=8, sram_bytes=100 * 1024)"
        ".traffic_ratio else 'shrinks'",
        choices=("grows", "shrinks"),
        explain="Bigger heads mean fewer keys per SRAM block, so more passes over Q and O.",
        reveal=("cb6ce84a",),
        imports="from dlperf_widgets.core.fusion import attention",
    ),
    M(
        "10",
        "e2f1037a",
        "pq-10-04",
        "Ten tiny element-wise kernels launched one by one on an H100: how long does the chain take?",
        "lambda: fusion_chain(['scale', 'add'] * 5, elements=4096, gpu='H100').launch_unfused"
        ".eager_time_s * 1e6",
        unit="us",
        tolerance=0.25,
        explain="Ten launches at the model's per-kernel overhead; the work itself is nanoseconds.",
        reveal=("1bac4246",),
        imports="from dlperf_widgets.core.fusion import fusion_chain",
    ),
    # -- 11 LLM inference ----------------------------------------------------------------------
    M(
        "11",
        "2a0515cc",
        "pq-11-01",
        "Llama-2-7B in FP16 on an A100, batch 1: decode tokens per second?",
        "lambda: llm_inference('llama-2-7b', gpu='A100', batch=1, context=512).tokens_per_s_per_user",
        unit="tokens/s",
        tolerance=0.2,
        explain="Each step reads every weight: bytes over bandwidth, below the datasheet rate.",
        reveal=("4811a379", "9f66320f"),
        imports="from dlperf_widgets.core.inference import llm_inference",
    ),
    M(
        "11",
        "e5472248",
        "pq-11-02",
        "OPT-13B: KV-cache bytes per token?",
        "lambda: kv_cache_bytes('opt-13b', context=1) / 1e3",
        unit="kB",
        tolerance=0.05,
        explain="2 (K and V) x 40 layers x 5120 x 2 bytes.",
        reveal=("3d0fbb1a",),
        imports="from dlperf_widgets.core.inference import kv_cache_bytes",
    ),
    M(
        "11",
        "1fcc3057",
        "pq-11-03",
        "Batch 64 instead of 1: the total tokens per second grows by what factor?",
        "lambda: llm_inference('llama-2-7b', gpu='A100', batch=64, context=512).tokens_per_s"
        " / llm_inference('llama-2-7b', gpu='A100', batch=1, context=512).tokens_per_s",
        unit="x",
        tolerance=0.2,
        explain="The weights are read once per step whatever the batch; the caches are not shared.",
        reveal=("8ca100e6",),
        imports="from dlperf_widgets.core.inference import llm_inference",
    ),
    M(
        "11",
        "ba920211",
        "pq-11-04",
        "Int4 weights (group 128): how many times faster is decode at batch 1?",
        "lambda: llm_inference('llama-2-7b', gpu='A100', batch=1, context=512).decode_step_s"
        " / llm_inference('llama-2-7b', gpu='A100', batch=1, context=512, weight_dtype='int4')"
        ".decode_step_s",
        unit="x",
        tolerance=0.15,
        explain="About 4.1 bits per weight instead of 16; the dequantisation hides behind memory.",
        reveal=("21bce90f",),
        imports="from dlperf_widgets.core.inference import llm_inference",
    ),
    # -- 12 low precision and scale ------------------------------------------------------------
    M(
        "12",
        "369e517f",
        "pq-12-01",
        "How many binades lie between E4M3's smallest subnormal and its largest value?",
        "lambda: (lambda f: float(np.log2(f.max / f.min_subnormal)))(number_format('fp8_e4m3'))",
        unit="binades",
        tolerance=0.15,
        explain="448 down to 2^-9: about 18, against 261 for BF16.",
        reveal=("86878de8",),
        imports="import numpy as np\nfrom dlperf_widgets.core.formats import number_format",
    ),
    M(
        "12",
        "90317579",
        "pq-12-02",
        "With the amax mapped onto the format's maximum, can a value still saturate?",
        "lambda: 'yes' if fp8_quantize(np.random.default_rng(0).normal(0, 1e-3, 10_000),"
        " 'fp8_e4m3').saturation_fraction > 0 else 'no'",
        choices=("yes", "no"),
        explain="The largest value lands on the maximum; the small ones can still underflow.",
        reveal=("6d2317c2",),
        imports="import numpy as np\nfrom dlperf_widgets.core.scaling import fp8_quantize",
    ),
    M(
        "12",
        "33895fa3",
        "pq-12-03",
        "NVFP4 (16 FP4 values share an FP8 scale): bits per element?",
        "lambda: block_format('nvfp4').bits_per_element",
        unit="bits",
        tolerance=0.02,
        explain="4 bits plus 8 / 16 for the shared scale.",
        reveal=("cdffa3e7",),
        imports="from dlperf_widgets.core.scaling import block_format",
    ),
    M(
        "12",
        "b95de49f",
        "pq-12-04",
        "One value 10,000 times the rest: which loses the most small values?",
        "lambda: (lambda x: max((('FP8, one scale', fp8_quantize(x, 'fp8_e4m3')"
        ".underflow_fraction), ('MXFP8', block_quantize(x, 'mxfp8_e4m3').underflow_fraction),"
        " ('MXFP4', block_quantize(x, 'mxfp4').underflow_fraction), ('NVFP4', block_quantize(x,"
        " 'nvfp4').underflow_fraction)), key=lambda c: c[1])[0])((lambda v: np.where(np.arange(4096)"
        " == 100, 1e4 * np.abs(v).max(), v))(np.random.default_rng(2).normal(0, 1e-3, 4096)))",
        choices=("FP8, one scale", "MXFP8", "MXFP4", "NVFP4"),
        explain="FP4 holds only 3.6 binades per block, whatever the outlier.",
        reveal=("23a9dbee",),
        imports="import numpy as np\n"
        "from dlperf_widgets.core.scaling import block_quantize, fp8_quantize",
    ),
    M(
        "12",
        "826e3057",
        "pq-12-05",
        "PaLM 540B on 6144 TPU v4 chips: its MFU?",
        "lambda: 100 * mfu(238.3e3, 540.35e9, layers=118, hidden=18432, seq_len=2048, gpus=6144,"
        " peak_flops_per_s=275e12).mfu",
        unit="%",
        explain="(6N + 12 L h s) FLOPs per token x tokens/s over the chips' peak.",
        reveal=("44ff275b",),
        imports="from dlperf_widgets.core.mfu import mfu",
    ),
    M(
        "12",
        "8206dab6",
        "pq-12-06",
        "4 stages, 8 micro-batches, GPipe: what share of the step is bubble?",
        "lambda: 100 * pipeline_bubble(4, 8, 'gpipe')",
        unit="%",
        explain="(p - 1) / (m + p - 1) = 3 / 11; 1F1B has the same bubble and less memory.",
        reveal=("214ca7be", "59ac4e98"),
        imports="from dlperf_widgets.core.scaleout import pipeline_bubble",
    ),
    M(
        "12",
        "c45edad2",
        "pq-12-07",
        "All-reducing 14 GB of gradients over one 8-GPU NVLink server: how long?",
        "lambda: allreduce_time(14e9, 8, link=interconnect('NVLink4')) * 1e3",
        unit="ms",
        tolerance=0.2,
        explain="Each GPU sends 2 (n - 1) / n x 14 GB at NVLink's bandwidth.",
        reveal=("d30dea70",),
        imports="from dlperf_widgets.core.scaleout import allreduce_time, interconnect",
    ),
    M(
        "12",
        "416cb723",
        "pq-12-08",
        "70B-like model on 512 H100s: which layout gives the shortest step?",
        "lambda: min((('TP 8 x PP 1', 8, 1, 1), ('TP 8 x PP 4', 8, 4, 1), ('TP 4 x PP 8', 4, 8, 1),"
        " ('TP 8 x PP 8', 8, 8, 1), ('TP 8 x PP 4, ZeRO 3', 8, 4, 3)), key=lambda c: step_time("
        "tensor_parallel=c[1], pipeline_parallel=c[2], zero=c[3], layers=80, hidden=8192,"
        " heads=64, seq_len=4096, vocab=32000, global_batch=1024, gpus=512, gpu='H100').step_s)[0]",
        choices=("TP 8 x PP 1", "TP 8 x PP 4", "TP 4 x PP 8", "TP 8 x PP 8", "TP 8 x PP 4, ZeRO 3"),
        explain="The model's prediction: less tensor-parallel traffic against a larger bubble.",
        reveal=("facd6424",),
        imports="from dlperf_widgets.core.scaleout import step_time",
    ),
)

# Notebooks whose prediction moments have no Predict cell, and why (kept for the record).
SKIPPED: dict[tuple[str, str], str] = {
    ("02", "cedcb3f8"): "asks why the batch-1 layer has intensity 1 (an explanation)",
    ("02", "d4427baa"): "asks which tensor the slow operations work on (open-ended)",
    ("09", "c22eed7f"): "the answer depends on the machine running the notebook",
    ("09", "123bb26c"): "reading an nvidia-smi screen: judged from text the notebook parses",
    ("10", "c30d0b9a"): "read off a plot: where the launch-bound lines bend",
    ("12", "6a03ac14"): "asks on which steps a replayed random tensor saturates (notebook data)",
}

BOARD_MD = (
    "**Your predictions.** The table below scores every first guess you made in this "
    "notebook's Predict cells (this session only)."
)
BOARD_CODE = "import dlperf_widgets as dw\n\ndw.Predict.scoreboard()"


def _notebook_path(prefix: str) -> Path | None:
    found = sorted(NOTEBOOKS.glob(f"{prefix}_*.ipynb"))
    return found[0] if found else None


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _code_cell(cell_id: str, source: str) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": cell_id,
        "metadata": {},
        "outputs": [],
        "source": _lines(source),
    }


def _markdown_cell(cell_id: str, source: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": _lines(source)}


def apply(nb: dict, prefix: str, warn=print) -> dict:
    """Return ``nb`` with the Predict cells of notebook ``prefix`` (re)built.

    A cell the script owns whose source has not changed is kept as it is, outputs and
    execution count included, so running the script on an executed notebook changes nothing.
    """
    owned = f"pq-{prefix}-"
    previous = {c.get("id"): c for c in nb["cells"] if str(c.get("id", "")).startswith(owned)}
    cells = [c for c in nb["cells"] if not str(c.get("id", "")).startswith(owned)]

    def reuse(new: dict) -> dict:
        old = previous.get(new["id"])
        same = old is not None and old["cell_type"] == new["cell_type"]
        return old if same and "".join(old["source"]) == "".join(new["source"]) else new

    for m in (m for m in MOMENTS if m.notebook == prefix):
        ids = [c.get("id") for c in cells]
        if m.anchor not in ids:
            warn(f"warning: {prefix}: anchor cell {m.anchor} not found; {m.cell_id} skipped")
            continue
        cells.insert(ids.index(m.anchor) + 1, reuse(_code_cell(m.cell_id, m.source())))
        for rid in m.reveal:
            cell = next((c for c in cells if c.get("id") == rid), None)
            if cell is None:
                warn(f"warning: {prefix}: reveal cell {rid} not found ({m.cell_id})")
                continue
            cell.setdefault("metadata", {}).setdefault("jupyter", {})["outputs_hidden"] = True
    summary = next(
        (
            i
            for i, c in enumerate(cells)
            if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("## Summary")
        ),
        None,
    )
    if summary is None:
        warn(f"warning: {prefix}: no '## Summary' cell; the scoreboard goes at the end")
        summary = len(cells)
    cells[summary:summary] = [
        reuse(_markdown_cell(f"{owned}board-md", BOARD_MD)),
        reuse(_code_cell(f"{owned}board", BOARD_CODE)),
    ]
    return {**nb, "cells": cells}


def dumps(nb: dict) -> str:
    """Serialise the way nbformat writes the committed notebooks."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def prefixes() -> list[str]:
    """Notebooks this script manages: every one with a moment in the table."""
    return sorted({m.notebook for m in MOMENTS})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report, do not write")
    args = parser.parse_args(argv)
    changed = []
    for prefix in prefixes():
        path = _notebook_path(prefix)
        if path is None:
            print(f"warning: no notebook {prefix}_*.ipynb; skipped")
            continue
        text = path.read_text()
        new = dumps(apply(json.loads(text), prefix))
        if new != text:
            changed.append(path.name)
            if not args.check:
                path.write_text(new)
    verb = "would change" if args.check else "changed"
    print(f"{verb}: {', '.join(changed) if changed else 'nothing'}")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
