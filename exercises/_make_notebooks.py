"""Write the exercise notebooks (the source versions, with solutions and nbgrader metadata).

    python exercises/_make_notebooks.py [01 02 ...]      # then:
    python tools/nbtools.py execute exercises/NN_*_exercises.ipynb
    python tools/nb_colab.py        # Colab badge and install cell; refreshes exercises/student/

Cells follow nbgrader's conventions: the answer cell is a solution cell whose solution sits
between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` below a line that sets the answer to
``...``; the check cell is a locked, graded test cell whose assertion sits in a hidden-tests
region (so the student copy only shows the check, and never stops on an unanswered task).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.nbtools import code, md, write  # noqa: E402

HERE = Path(__file__).resolve().parent

# Cells that print the model's (or a shipped table's) numbers a task relies on: nbval compares
# their saved output, so a core change that moves one of those numbers fails the exercise's
# notebook test instead of silently contradicting its text. Live measurements are not tagged.
CHECK_OUTPUT = ["nbval-check-output"]


def _meta(cell, grade_id: str, *, grade: bool, solution: bool, locked: bool, points=None):  # type: ignore[no-untyped-def]
    nbg = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
    }
    if points is not None:
        nbg["points"] = points
    cell.metadata["nbgrader"] = nbg
    return cell


def setup(src: str, grade_id: str = "setup"):  # type: ignore[no-untyped-def]
    return _meta(code(src), grade_id, grade=False, solution=False, locked=True)


def answer(grade_id: str, prompt: str, var: str, solution: str):  # type: ignore[no-untyped-def]
    src = f"# {prompt}\n{var} = ...\n### BEGIN SOLUTION\n{solution.strip()}\n### END SOLUTION"
    return _meta(code(src), grade_id, grade=False, solution=True, locked=False)


def test(task_id: str, var: str, points: int = 1, params: str = ""):  # type: ignore[no-untyped-def]
    extra = f", {params}" if params else ""
    src = (
        "### BEGIN HIDDEN TESTS\n"
        f'check("{task_id}", {var}{extra}).assert_correct()\n'
        "### END HIDDEN TESTS\n"
        f'check("{task_id}", {var}{extra})'
    )
    gid = "check_" + task_id.replace(".", "_")
    return _meta(code(src), gid, grade=True, solution=False, locked=True, points=points)


def open_answer(grade_id: str, text: str, points: int = 2):  # type: ignore[no-untyped-def]
    return _meta(md(text), grade_id, grade=True, solution=True, locked=False, points=points)


HOW = """
**How this works.** Each task has an answer cell: replace the `...` with your answer (a number,
or a word in quotes) and run it, then run the check cell below it. The check says at once
whether you are right and, when you are not, what you most likely got wrong. Answers are plain
numbers in base units (FLOP, bytes, seconds, FLOP/s) unless the task says otherwise; you may
use Python as a calculator and the `dlperf_widgets` functions the lesson introduced.
"""

SETUP = """
from dlperf_widgets.exercises import check
"""


def nb01():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 1: GEMM cost and arithmetic intensity\n\n"
            "Goes with `notebooks/01_gemm_and_intensity.ipynb`. You will size a GEMM so it "
            "crosses the ridge within a memory budget, predict how its time scales before "
            "timing it on this machine, and predict how long its data alone takes to move."
        ),
        md(HOW),
        setup(
            SETUP + "import math\n\n"
            "import numpy as np\n\n"
            "from dlperf_widgets import gemm, gpu\n"
            "from dlperf_widgets.core.gemm import arithmetic_intensity, gemm_bytes\n"
            "from dlperf_widgets.live.timing import time_gemm\n\n"
            "M, N, K = 8192, 128, 8192"
        ),
        md(
            "## Task 1 (design): a batch that crosses the ridge\n\n"
            "A layer multiplies an 8192×8192 FP16 weight matrix A (M = K = 8192) by a batch B "
            "of N columns on an A100. Choose N so that the GEMM is math-bound by the "
            "guide's test (its arithmetic intensity above the GPU's ops:byte ratio, "
            "`gpu('A100').ops_per_byte('fp16')`) **and** A, B and C together take at most "
            "200 MB (200e6 bytes). Many values of N work; the check accepts any of them and "
            "tells you which constraint a wrong one breaks. `arithmetic_intensity(m, n, k, "
            "'fp16')` and `gemm_bytes(m, n, k, 2)` compute the two sides for you."
        ),
        answer(
            "ridge_batch",
            "your batch N",
            "batch_n",
            "ratio = gpu('A100').ops_per_byte('fp16')\n"
            "n = np.arange(1, 4097)\n"
            "ok = (arithmetic_intensity(8192, n, 8192, 'fp16') > ratio) & "
            "(gemm_bytes(8192, n, 8192, 2) <= 200e6)\n"
            "print('valid N from', n[ok].min(), 'to', n[ok].max())\n"
            "batch_n = 256",
        ),
        test("01.ridge_batch", "batch_n", points=2),
        md(
            "## Task 2 (estimate, then measure): how does the time scale?\n\n"
            "Before timing anything: a 512×512×512 GEMM against a 256×256×256 one, both in "
            "FP32. If both ran at the same FLOP rate, how many times longer would the large "
            "one take? Commit to a number, check it, then run the cell after the check: it "
            "times both GEMMs on this machine (a CPU if there is no GPU; a few milliseconds)."
        ),
        answer(
            "predict_ratio",
            "time(512³) / time(256³), predicted",
            "ratio",
            "ratio = (2 * 512**3) / (2 * 256**3)",
        ),
        test("01.predict_ratio", "ratio"),
        code(
            "try:  # needs PyTorch; no check depends on what it measures\n"
            "    small = time_gemm(256, 256, 256, dtype='fp32', repeats=5, warmup=2)\n"
            "    large = time_gemm(512, 512, 512, dtype='fp32', repeats=5, warmup=2)\n"
            "    print(f'measured on {small.device}: 256³ {small.measured_time_s * 1e6:.0f} us, '\n"
            "          f'512³ {large.measured_time_s * 1e6:.0f} us, '\n"
            "          f'ratio {large.measured_time_s / small.measured_time_s:.1f} (measured)')\n"
            "except ImportError as exc:\n"
            "    print(exc)"
        ),
        md(
            "## Task 3 (explain the gap)\n\n"
            "Your measured ratio will rarely equal the prediction. On most machines it comes "
            "out below it: the small GEMM is slower than its share of FLOPs says. Which cost "
            "stays the same whatever the GEMM's size, and so weighs more on the small one: "
            "`'fixed cost per call'`, `'FLOPs'` or `'bytes'`? (If your ratio came out above "
            "the prediction, the large GEMM probably left the CPU's caches: bytes that the "
            "small one found close by had to come from memory.)"
        ),
        answer(
            "gap_reason",
            "'fixed cost per call', 'FLOPs' or 'bytes'",
            "reason",
            'reason = "fixed cost per call"',
        ),
        test("01.gap_reason", "reason"),
        md(
            "## Task 4: predict, then look\n\n"
            "On a V100 (900 GB/s of DRAM bandwidth), how many seconds does the FP16 GEMM "
            "with M = 8192, N = 128, K = 8192 (set above) need just to move its bytes, A and "
            "B read once and C written once? Predict it, check it, then run the cell "
            "after the check to see the model's full picture of the same GEMM: is the "
            "memory time or the math time the longer one? (For this shape the model may "
            "split K across more thread blocks, which adds a little traffic for the partial "
            "sums, so its memory time can sit slightly above yours.)"
        ),
        answer(
            "memory_time",
            "seconds to move the bytes",
            "memory_time",
            "memory_time = (M * K + K * N + M * N) * 2 / 900e9",
        ),
        test("01.memory_time", "memory_time"),
        code('gemm(M, N, K, dtype="fp16", gpu="V100")', tags=CHECK_OUTPUT),
        md(
            "## Task 5 (open): why is this GEMM so much less intense than a square one?\n\n"
            "The 8192×8192×8192 GEMM reaches about 2730 FLOP/B, this one only about 124. "
            "Explain where the difference comes from, in two or three sentences."
        ),
        open_answer(
            "open_intensity",
            "**Model answer.** The FLOPs grow with M·N·K but the bytes with M·K + K·N + M·N. "
            "With N = 128 the dominant traffic is the 8192×8192 matrix A, read once while "
            "each of its elements takes part in only 128 multiply-adds; in the square GEMM "
            "every element loaded is reused 8192 times. Intensity follows the smallest "
            "dimension: roughly 2·M·N·K / (2·M·K) = N for a wide K and M, so N = 128 "
            "caps it near 128 FLOP/B in FP16.",
        ),
    ]


def nb02():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 2: what limits an operation?\n\n"
            "Goes with `notebooks/02_bounds_and_roofline.ipynb`: the GPU's ops:byte ratio, "
            "the three limiters and the intensity of everyday layers."
        ),
        md(HOW),
        setup(
            SETUP + "import math\n\n"
            "import numpy as np\n\n"
            "from dlperf_widgets import gemm, gpu\n"
            "from dlperf_widgets.core.gemm import gemm_sweep\n"
            "from dlperf_widgets.live.traces import measured_gemms"
        ),
        md(
            "## Task 1: the GPU's ops:byte ratio\n\n"
            "A V100 runs FP16 on its Tensor Cores at about 125 TFLOP/s and reads DRAM at "
            "900 GB/s. How many FLOPs must an operation do per byte to keep the math busy?"
        ),
        answer("ops_per_byte", "FLOP per byte", "ops_per_byte", "ops_per_byte = 125e12 / 900e9"),
        test("02.ops_per_byte", "ops_per_byte"),
        md(
            "## Task 2: classify\n\n"
            "An FP16 GEMM with M = 8192, N = 128, K = 8192 on a V100: is it limited by "
            "`'math'`, `'memory'` or `'latency'`?"
        ),
        answer(
            "limiter_tall",
            "'math', 'memory' or 'latency'",
            "limiter_tall",
            'limiter_tall = "memory"',
        ),
        test("02.limiter_tall", "limiter_tall"),
        md(
            "## Task 3: classify a small one\n\n"
            "An FP16 GEMM with M = N = K = 256 on an A100 (108 SMs)?"
        ),
        answer(
            "limiter_small",
            "'math', 'memory' or 'latency'",
            "limiter_small",
            'limiter_small = "latency"',
        ),
        test("02.limiter_small", "limiter_small"),
        md(
            "## Task 4: a Linear layer\n\n"
            "A fully-connected layer with 1024 inputs and 4096 outputs runs forward on a "
            "batch of 512 in FP16. As a GEMM, M = outputs, N = batch, K = inputs. What is "
            "its arithmetic intensity?"
        ),
        answer(
            "linear_ai",
            "FLOP per byte",
            "linear_ai",
            "m, n, k = 4096, 512, 1024\nlinear_ai = 2 * m * n * k / ((m * k + k * n + m * n) * 2)",
        ),
        test("02.linear_ai", "linear_ai"),
        md(
            "## Task 5: ReLU\n\n"
            "What is the arithmetic intensity of a ReLU forward pass in FP16 (one comparison "
            "per element)?"
        ),
        answer("relu_ai", "FLOP per byte", "relu_ai", "relu_ai = 1 / (2 + 2)"),
        test("02.relu_ai", "relu_ai"),
        md(
            "## Task 6: predict, then sweep\n\n"
            "Keep the Linear layer of Task 4 (4096 outputs, 1024 inputs, FP16, V100) and "
            "vary the batch. From which batch size on is the forward GEMM math-bound? Work "
            "it out on paper from AI(N) > ops:byte, then run the sweep below the check to "
            "see the model's limiter for every batch size."
        ),
        answer(
            "math_batch",
            "smallest math-bound batch size",
            "math_batch",
            "ratio = gpu('V100').ops_per_byte('fp16')\n"
            "# 2·M·N·K / (2·(M·K + K·N + M·N)) > ratio, solved for N:\n"
            "math_batch = math.floor(ratio * 4096 * 1024 / (4096 * 1024 - ratio * (4096 + 1024))) + 1",
        ),
        test("02.math_batch", "math_batch"),
        code(
            "batches = np.arange(1, 1025)\n"
            "sweep = gemm_sweep(4096, batches, 1024, dtype='fp16', gpu='V100')\n"
            "print('first math-bound batch size:', batches[np.argmax(sweep.limiter == 'math')])",
            tags=CHECK_OUTPUT,
        ),
        md(
            "## Task 7 (debug): a published measurement\n\n"
            "The kit ships the XLA team's published matmul timings on an H100 SXM. The cell "
            "below pulls one of them out of `measured_gemms('H100-SXM', 'bf16')`: a "
            "256×4096×4096 BF16 GEMM (say 256 tokens through a 4096×4096 weight). It reaches "
            "well under half of the BF16 peak. What limits it: `'math'`, `'memory'` or "
            "`'latency'`? Use `gemm(...)` for its intensity and the GPU's ops:byte ratio."
        ),
        code(
            "t = measured_gemms('H100-SXM', 'bf16')\n"
            "row = (t['m'] == 256) & (t['n'] == 4096) & (t['k'] == 4096) & (t['batch'] == 1)\n"
            "measured = float(np.median(t['measured_time_s'][row]))\n"
            "rate = 2 * 256 * 4096 * 4096 / measured\n"
            "print(f'measured (XLA table, H100 SXM): {measured * 1e6:.1f} us, '\n"
            "      f'{rate / 1e12:.0f} TFLOP/s = '\n"
            "      f\"{rate / gpu('H100-SXM').peak_flops('bf16'):.0%} of the BF16 peak\")",
            tags=CHECK_OUTPUT,
        ),
        answer(
            "trace_limiter",
            "'math', 'memory' or 'latency'",
            "measured_limiter",
            "r = gemm(256, 4096, 4096, dtype='bf16', gpu='H100-SXM')\n"
            "print(r.arithmetic_intensity, r.ops_per_byte)  # below the ratio\n"
            'measured_limiter = "memory"',
        ),
        test("02.trace_limiter", "measured_limiter"),
        md(
            "## Task 8 (debug): which fix?\n\n"
            "Three proposals to get more useful FLOP/s out of the same work: "
            "`'more rows per call'` (send 4× the tokens through the weight at once), "
            "`'pad to a multiple of 64'` (pad every dimension) or `'tf32'` (run it in TF32). "
            "Which one helps most? Decide from the limiter, then confirm with `gemm(...)`."
        ),
        answer(
            "trace_fix",
            "'more rows per call', 'pad to a multiple of 64' or 'tf32'",
            "fix",
            "now = gemm(256, 4096, 4096, dtype='bf16', gpu='H100-SXM')\n"
            "batched = gemm(1024, 4096, 4096, dtype='bf16', gpu='H100-SXM')\n"
            "print(now.predicted_flops_per_s / 1e12, batched.predicted_flops_per_s / 1e12)\n"
            'fix = "more rows per call"',
        ),
        test("02.trace_fix", "fix"),
        md(
            "## Task 9 (open): FLOPs versus runtime in a transformer\n\n"
            "Profiles of transformer training show tensor contractions doing about 99.8 % of "
            "the FLOPs but taking only about 61 % of the runtime; normalizations and "
            "element-wise operations take most of the rest. Explain why, with the vocabulary "
            "of this notebook."
        ),
        open_answer(
            "open_transformer",
            "**Model answer.** Contractions (GEMMs, batched matmuls) have high arithmetic "
            "intensity and run near the Tensor Core peak, so their enormous FLOP count costs "
            "comparatively little time. Normalizations and element-wise operations do only a "
            "few operations per element they read and write (intensities around 0.25 to a "
            "few FLOP/B, far below an ops:byte ratio above 100), so they are memory-bound: "
            "their time is set by bytes, not FLOPs, and their tiny share of FLOPs turns into "
            "a large share of runtime. Fusing them, or keeping tensors in fewer passes, is "
            "how the time comes down.",
        ),
    ]


def nb03():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 3: tiles, waves and toast\n\n"
            "Goes with `notebooks/03_tiles_and_waves.ipynb`. All tasks use 256×128 "
            "thread-block tiles and an A100 (108 SMs, one thread block per SM at a time)."
        ),
        md(HOW),
        setup(
            SETUP + "import math\n\n"
            "from dlperf_widgets import gemm\n"
            "from dlperf_widgets.core.tiles import tile_wave"
        ),
        md(
            "## Task 1: count the tiles\n\n"
            "The GEMM's output C is 3000×2000 (M×N). How many 256×128 tiles, one thread "
            "block each, does the kernel launch?"
        ),
        answer(
            "tiles",
            "number of tiles",
            "tiles",
            "tiles = math.ceil(3000 / 256) * math.ceil(2000 / 128)",
        ),
        test("03.tiles", "tiles"),
        md(
            "## Task 2: how full are the waves?\n\n"
            "The A100 runs 108 of those thread blocks at a time. Over all the waves, what "
            "fraction of the thread-block slots does useful work? (A number between 0 and 1.)"
        ),
        answer(
            "wave_efficiency",
            "fraction between 0 and 1",
            "wave_efficiency",
            "waves = math.ceil(tiles / 108)\nwave_efficiency = tiles / (waves * 108)",
        ),
        test("03.wave_efficiency", "wave_efficiency"),
        md(
            "## Task 3: choose N so the GEMM fits one wave\n\n"
            "Now M = 3072. What is the largest N, a multiple of 128, for which all tiles run "
            "in a single wave?"
        ),
        answer(
            "one_wave_n",
            "largest N",
            "one_wave_n",
            "rows = math.ceil(3072 / 256)  # tiles per column of the grid\none_wave_n = (108 // rows) * 128",
        ),
        test("03.one_wave_n", "one_wave_n"),
        md(
            "## Task 4: predict, then look\n\n"
            "Keep M = 3072 and take K = 8192 (FP16, A100, 256×128 tiles). Predict how many "
            "times longer the GEMM with N = 1280 runs than the one with N = 1152. Then run "
            "the cell after the check: the model's tile and wave view of both."
        ),
        answer(
            "time_ratio",
            "time(N = 1280) / time(N = 1152)",
            "time_ratio",
            "time_ratio = 2 / 1  # two waves instead of one",
        ),
        test("03.time_ratio", "time_ratio"),
        code(
            "for n in (1152, 1280):\n"
            "    tw = tile_wave(3072, n, tile='256x128', sms=108)\n"
            "    r = gemm(3072, n, 8192, dtype='fp16', gpu='A100', tile='256x128')\n"
            "    print(f'N = {n}: {tw.tiles} tiles, {tw.waves} wave(s), '\n"
            "          f'predicted {r.predicted_time_s * 1e6:.0f} us')",
            tags=CHECK_OUTPUT,
        ),
        md(
            "## Task 5 (design): grow the layer without wasting a wave\n\n"
            "The layer of Task 3 (M = 3072, 256×128 tiles, A100) has to grow past N = 1152: "
            "it needs at least 1280 outputs, and at most 4096. Choose an N, a multiple of "
            "128, whose tiles fill the waves to at least 90 % (tiles ÷ (waves × 108) >= 0.9). "
            "Several values work; the check accepts any of them."
        ),
        answer(
            "wave_design",
            "your N",
            "wave_n",
            "for n in range(1280, 4097, 128):\n"
            "    tw = tile_wave(3072, n, tile='256x128', sms=108)\n"
            "    if tw.wave_efficiency >= 0.9:\n"
            "        print(n, tw.tiles, tw.waves, f'{tw.wave_efficiency:.0%}')\n"
            "wave_n = 2304",
        ),
        test("03.wave_design", "wave_n", points=2),
        md(
            "## Task 6 (debug): a profile with a lonely second wave\n\n"
            "A profile of the 3072×1280×8192 FP16 GEMM on the A100 shows the kernel below: "
            "256×128 tiles, two waves, the second one mostly idle. You may change one thing: "
            "`'smaller tiles'` (128×128), `'pad k'` (to a multiple of 64) or `'tf32'`. Which "
            "one shortens it most? Reason from the waves, then confirm with `gemm(..., "
            "tile=...)`."
        ),
        code(
            "tw = tile_wave(3072, 1280, tile='256x128', sms=108)\n"
            "print(f'{tw.tiles} tiles, {tw.waves} waves, {tw.wave_efficiency:.0%} of the slots busy')",
            tags=CHECK_OUTPUT,
        ),
        answer(
            "profile_fix",
            "'smaller tiles', 'pad k' or 'tf32'",
            "fix",
            "for tile in ('256x128', '128x128'):\n"
            "    r = gemm(3072, 1280, 8192, dtype='fp16', gpu='A100', tile=tile)\n"
            "    print(tile, r.tiles, r.waves, f'{r.predicted_time_s * 1e6:.0f} us')\n"
            'fix = "smaller tiles"',
        ),
        test("03.profile_fix", "fix"),
        md(
            "## Task 7 (open): what do toast and waves have in common?\n\n"
            "Five slices of bread, a pan that holds two, one minute per side: the shortest "
            "schedule takes 5 minutes, not 6 (notebook 00). Explain the link between the "
            "toast puzzle and wave quantization, and what a GEMM "
            "has in place of 'treat each side as a unit of work'."
        ),
        open_answer(
            "open_toast",
            "**Model answer.** The pan is the GPU, a place in the pan an SM (a thread-block "
            "slot), a side of bread a tile and a minute one wave. Frying whole slices leaves "
            "the pan half empty in the last minute, exactly like a last wave with only a few "
            "tiles: it costs a full wave of time for a fraction of the work. The trick breaks "
            "the work into smaller independent units so every wave is full. A GEMM does the "
            "same by choosing sizes whose tile count is a multiple of the SM count (or just "
            "below it), by using smaller tiles, or by splitting K so more thread blocks share "
            "the work.",
        ),
    ]


def nb04():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 4: Tensor Cores and alignment\n\n"
            "Goes with `notebooks/04_tensor_cores_and_alignment.ipynb`: which sizes Tensor "
            "Cores like, how to pad, and when padding is worth it."
        ),
        md(HOW),
        setup(
            SETUP + "import numpy as np\n\n"
            "from dlperf_widgets import gemm, gpu\n"
            "from dlperf_widgets.core.alignment import next_multiple\n"
            "from dlperf_widgets.live.traces import measured_gemms"
        ),
        md(
            "## Task 1 (design): pad the vocabulary within a budget\n\n"
            "A language model's output layer maps a hidden size of 1024 to a vocabulary of "
            "33708 words, for 8192 tokens at a time, in FP16 on an A100 (as a GEMM: M = 8192 "
            "tokens, N = vocabulary, K = 1024). Pad the vocabulary: choose a size that holds "
            "every word, keeps the layer's weights (size × 1024 × 2 bytes) within 69.5 MB "
            "(69.5e6 bytes), and whose predicted time is within 1 % of the fastest size that "
            "fits. Tensor Cores read operands in 16-byte pieces. Any such size passes."
        ),
        answer(
            "vocab_design",
            "your padded vocabulary size",
            "vocab",
            "unpadded = gemm(8192, 33708, 1024, dtype='fp16', gpu='A100').predicted_time_s\n"
            "padded = gemm(8192, next_multiple(33708, 8), 1024, dtype='fp16', gpu='A100')\n"
            "print(f'{unpadded * 1e3:.3f} ms -> {padded.predicted_time_s * 1e3:.3f} ms')\n"
            "vocab = next_multiple(33708, 8)",
        ),
        test("04.vocab_design", "vocab", points=2),
        md(
            "## Task 2: predict, then look\n\n"
            "A 4096×4096 output with K = 4095 versus K = 4096, FP16 on an A100. According "
            "to the model, how many times longer does the K = 4095 GEMM take? Compute it "
            "with `gemm(...)`, then look at the findings the model prints for K = 4095."
        ),
        answer(
            "speedup",
            "time(K = 4095) / time(K = 4096)",
            "speedup",
            "speedup = (gemm(4096, 4096, 4095, dtype='fp16', gpu='A100').predicted_time_s\n"
            "           / gemm(4096, 4096, 4096, dtype='fp16', gpu='A100').predicted_time_s)",
        ),
        test("04.speedup", "speedup"),
        code(
            "for f in gemm(4096, 4096, 4095, dtype='fp16', gpu='A100').findings:\n    print(f)",
            tags=CHECK_OUTPUT,
        ),
        md(
            "## Task 3: is it worth it at batch 1?\n\n"
            "Same K = 4095 → 4096, but now N = 1 (one sample through a 4095-input layer). "
            "Does padding K shorten the predicted time by 10 % or more? Answer `'yes'` or "
            "`'no'`."
        ),
        answer("helps_batch1", "'yes' or 'no'", "helps", 'helps = "no"'),
        test("04.helps_batch1", "helps"),
        md(
            "## Task 4 (debug): a slow published measurement\n\n"
            "Baidu's DeepBench timed a 40×8457×1760 GEMM with FP16 inputs on a V100 (the "
            "kit ships the published times; the cell below reads them). It reaches a small "
            "share of the FP16 peak. Three proposals: `'pad n'` (to a multiple of 8), "
            "`'batch 8x more rows'` (M = 320: eight requests per call instead of one) or "
            "`'fp32'`. Which raises the useful FLOP/s most? Find the limiter first."
        ),
        code(
            "t = measured_gemms('V100', 'fp16')\n"
            "row = (t['m'] == 40) & (t['n'] == 8457) & (t['k'] == 1760)\n"
            "measured = float(np.median(t['measured_time_s'][row]))\n"
            "rate = 2 * 40 * 8457 * 1760 / measured\n"
            "print(f'measured (DeepBench, V100): {measured * 1e6:.0f} us, {rate / 1e12:.1f} '\n"
            "      f\"TFLOP/s = {rate / gpu('V100').peak_flops('fp16'):.0%} of the FP16 peak\")",
            tags=CHECK_OUTPUT,
        ),
        answer(
            "trace_fix",
            "'pad n', 'batch 8x more rows' or 'fp32'",
            "fix",
            "r = gemm(40, 8457, 1760, dtype='fp16', gpu='V100', beta=1.0)\n"
            "print(r.limiter)  # memory: the weights are read for only 40 rows\n"
            'fix = "batch 8x more rows"',
        ),
        test("04.trace_fix", "fix"),
        md(
            "## Task 5 (debug): Tensor Cores or not?\n\n"
            "DeepBench also timed 5128×9124×4096 (FP16 inputs, FP32 math, V100). N = 9124 is "
            "not a multiple of 8, so the 16-byte rule is broken. Did the GEMM run on Tensor "
            "Cores? Compare its measured rate (below) with what the V100 can do without "
            "them (`gpu('V100')` lists the peaks). Answer `'yes'` or `'no'`."
        ),
        code(
            "row = (t['m'] == 5128) & (t['n'] == 9124) & (t['k'] == 4096)\n"
            "measured = float(np.median(t['measured_time_s'][row]))\n"
            "print(f'measured (DeepBench, V100): {2 * 5128 * 9124 * 4096 / measured / 1e12:.0f} "
            "TFLOP/s')",
            tags=CHECK_OUTPUT,
        ),
        answer(
            "trace_tensor_cores",
            "'yes' or 'no'",
            "tensor_cores",
            "rate = 2 * 5128 * 9124 * 4096 / measured\n"
            "tensor_cores = 'yes' if rate > gpu('V100').peak_flops('fp32') else 'no'",
        ),
        test("04.trace_tensor_cores", "tensor_cores"),
        md(
            "## Task 6 (open): 512 vs 520, 5120 vs 5128\n\n"
            "NVIDIA's guide says choosing 512 instead of 520 matters more than choosing "
            "5120 instead of 5128. Both pairs differ by 8. Why does the smaller pair matter "
            "more?"
        ),
        open_answer(
            "open_sizes",
            "**Model answer.** Both 520 and 5128 are multiples of 8, so Tensor Cores are "
            "used either way; the cost is tile quantization. A dimension that overshoots a "
            "multiple of the tile size by a little launches one more row of mostly empty "
            "tiles. For 520 with 128-wide tiles that is 5 tiles instead of 4: 640 rows "
            "launched for 520 useful ones, about 19 % of the launched work wasted (as in "
            "notebook 04); for 5128 it is 41 tiles instead of 40, about 2.3 %. The same "
            "absolute overshoot is a much larger fraction of a small dimension. A size "
            "that is a multiple of the tile width wastes nothing; a multiple of 64 can "
            "still waste part of a wider tile (576 with 128-wide tiles: 5 tiles, 10 % "
            "wasted), which is why the guide prefers multiples of 256.",
        ),
    ]


def nb05():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 5: layer checklists\n\n"
            "Goes with `notebooks/05_layer_checklists.ipynb`: every layer is a handful of "
            "GEMMs or memory passes, and its checklist follows from their dimensions."
        ),
        md(HOW),
        setup(SETUP + "from dlperf_widgets.core.layers import layer"),
        md(
            "## Task 1: the weight-gradient GEMM\n\n"
            "A Linear layer with 1024 inputs and 4096 outputs trains on batches of 512. Its "
            "weight gradient dW = dY·Xᵀ is a GEMM too. What is its K, the dimension it sums "
            "over?"
        ),
        answer("wgrad_k", "K of the wgrad GEMM", "wgrad_k", "wgrad_k = 512  # the batch"),
        test("05.wgrad_k", "wgrad_k"),
        md(
            "## Task 2: a convolution as a GEMM\n\n"
            "A 3×3 convolution with 64 input and 64 output channels on 56×56 images, batch "
            "32 (stride 1, padding 1). In its forward implicit GEMM, what is K? Check your "
            "answer, then look at all three passes the model builds."
        ),
        answer("conv_k", "K of the implicit GEMM", "conv_k", "conv_k = 64 * 3 * 3"),
        test("05.conv_k", "conv_k"),
        code(
            "conv = layer('conv2d', batch=32, in_channels=64, out_channels=64, height=56, "
            "width=56, kernel_size=3, dtype='fp16', gpu='A100')\n"
            "for p in conv.passes:\n"
            "    print(f'{p.pass_:8s} M={p.m:>7} N={p.n:>4} K={p.k:>7}  {p.limiter}')",
            tags=CHECK_OUTPUT,
        ),
        md(
            "## Task 3: the RGB input layer\n\n"
            "The first convolution of an image network sees 3 channels (7×7 filter, stride "
            "2, FP16, A100). To how many channels should the input be padded so Tensor Core "
            "kernels can run it?"
        ),
        answer("first_conv_channels", "padded channel count", "channels", "channels = 4"),
        test("05.first_conv_channels", "channels"),
        md(
            "## Task 4: batch 1\n\n"
            "The Linear layer of Task 1 serves single requests (batch 1, FP16, V100). What "
            "limits its forward pass: `'math'`, `'memory'` or `'latency'`?"
        ),
        answer("limiter_batch1", "'math', 'memory' or 'latency'", "limiter", 'limiter = "memory"'),
        test("05.limiter_batch1", "limiter"),
        md(
            "## Task 5: depthwise convolution\n\n"
            "Make the convolution of Task 2 depthwise (groups = 64: each filter sees one "
            "channel). What limits its forward pass?"
        ),
        answer("depthwise", "'math', 'memory' or 'latency'", "depthwise", 'depthwise = "memory"'),
        test("05.depthwise", "depthwise"),
        md(
            "## Task 6 (design): size a layer under two budgets\n\n"
            "A Linear layer with 1024 inputs trains at batch 512 in FP16 on an A100. Choose "
            "its number of outputs: at least 1024, a multiple of 8, weights (outputs × 1024 × "
            "2 bytes) of at most 4 MiB (4 × 2**20 bytes), a training step (forward and "
            "backward: the layer's `predicted_time_s`) of at most 45 us, and every pass "
            "math-bound. Any width that meets all of it passes."
        ),
        answer(
            "width_design",
            "your number of outputs",
            "outputs",
            "for h in range(1024, 2049, 128):\n"
            "    lin = layer('linear', batch=512, inputs=1024, outputs=h, dtype='fp16', gpu='A100')\n"
            "    print(h, f'{lin.predicted_time_s * 1e6:.1f} us', [p.limiter for p in lin.passes])\n"
            "outputs = 1024",
        ),
        test("05.width_design", "outputs", points=2),
        md(
            "## Task 7 (design): a batch past the ridge for every pass\n\n"
            "A 4096→4096 Linear layer in FP16 on an A100. Choose a batch size, a multiple "
            "of 8, that makes all three of its GEMMs (forward, dgrad, wgrad) math-bound while "
            "its input and output activations (batch × (4096 + 4096) × 2 bytes) fit in 4 MiB."
        ),
        answer(
            "batch_design",
            "your batch size",
            "batch",
            "for b in range(128, 265, 8):\n"
            "    lin = layer('linear', batch=b, inputs=4096, outputs=4096, dtype='fp16', gpu='A100')\n"
            "    print(b, [p.limiter for p in lin.passes])\n"
            "batch = 256",
        ),
        test("05.batch_design", "batch", points=2),
        md(
            "## Task 8 (open): batch norm after a convolution\n\n"
            "At inference time, a network has convolution → batch norm → ReLU blocks. Name "
            "two ways to make such a block faster without changing its results, and say why "
            "each helps."
        ),
        open_answer(
            "open_block",
            "**Model answer.** First, fold the batch norm into the convolution: at inference "
            "its mean, variance, scale and shift are constants, so they can be absorbed into "
            "the filter weights and the bias, and one memory-bound pass over the activations "
            "disappears. Second, fuse the ReLU into the convolution's epilogue: the "
            "convolution applies it while the result is still on chip, so the activation is "
            "not written and read back once more. Both remove memory traffic from "
            "memory-bound operations, which is where their time goes.",
        ),
    ]


def nb06():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 6: memory-limited layers\n\n"
            "Goes with `notebooks/06_memory_limited_layers.ipynb`: normalization, "
            "activations and pooling are paced by bytes, and tiny tensors by latency."
        ),
        md(HOW),
        setup(
            SETUP + "from dlperf_widgets.core.memlimited import memory_op\n"
            "from dlperf_widgets.live.timing import time_callable"
        ),
        md(
            "## Task 1: batch-norm traffic\n\n"
            "A batch-norm forward pass in training over an FP16 activation of shape "
            "32×64×56×56 (N×C×H×W). The non-persistent kernel reads the input once to "
            "gather the statistics, reads it again to normalize, and writes the output. "
            "How many bytes does it move?"
        ),
        answer("bn_bytes", "bytes moved", "bn_bytes", "bn_bytes = 3 * 32 * 64 * 56 * 56 * 2"),
        test("06.bn_bytes", "bn_bytes"),
        md(
            "## Task 2: pooling\n\n"
            "3×3 max pooling at stride 1 (padding 1, so the output is as large as the "
            "input), FP16. What is its arithmetic intensity?"
        ),
        answer("pool_ai", "FLOP per byte", "pool_ai", "pool_ai = 9 / (2 + 2)"),
        test("06.pool_ai", "pool_ai"),
        md(
            "## Task 3: predict, then look\n\n"
            "How long does a ReLU forward pass over the same 32×64×56×56 FP16 tensor take "
            "on an A100 at its full datasheet bandwidth (2039 GB/s)? Then compare with the "
            "model's passes below, which add the share of the bandwidth a kernel achieves "
            "and a fixed cost per kernel."
        ),
        answer(
            "relu_time",
            "seconds",
            "relu_time",
            "relu_time = 2 * 32 * 64 * 56 * 56 * 2 / 2039e9",
        ),
        test("06.relu_time", "relu_time"),
        code(
            "for p in memory_op('relu', shape=(32, 64, 56, 56), dtype='fp16', gpu='A100'):\n"
            "    print(f'{p.pass_:8s} {p.bytes / 1e6:7.1f} MB  "
            "{p.predicted_time_s * 1e6:6.2f} us  {p.limiter}')",
            tags=CHECK_OUTPUT,
        ),
        md(
            "## Task 4: a tiny tensor\n\n"
            "Now the ReLU runs on a 1×64×8×8 tensor. What limits it: `'math'`, `'memory'` "
            "or `'latency'`?"
        ),
        answer("small_limiter", "'math', 'memory' or 'latency'", "small", 'small = "latency"'),
        test("06.small_limiter", "small"),
        md(
            "## Task 5 (estimate, then measure): two sizes of ReLU\n\n"
            "A ReLU in FP32 over 2**16 elements and over 2**22 elements. Both are "
            "memory-bound. Predict first: if both stream at the same bandwidth, how many "
            "times longer does the large one take? Check it, then run the cell after the "
            "check: it times both on this machine's CPU (without flushing the cache between "
            "repeats)."
        ),
        answer(
            "predict_ratio",
            "time(2**22 elements) / time(2**16 elements), predicted",
            "ratio",
            "small_op = memory_op('relu', elements=2**16, dtype='fp32', gpu='A100')[0]\n"
            "large_op = memory_op('relu', elements=2**22, dtype='fp32', gpu='A100')[0]\n"
            "ratio = large_op.bytes / small_op.bytes",
        ),
        test("06.predict_ratio", "ratio"),
        code(
            "try:  # needs PyTorch; no check depends on what it measures\n"
            "    import torch\n\n"
            "    torch.set_num_threads(1)  # one core: steadier timings on a busy machine\n"
            "    x_small, x_large = torch.randn(2**16), torch.randn(2**22)\n"
            "    kw = dict(device='cpu', flush_l2=False, repeats=7, warmup=2)\n"
            "    t_small = time_callable(lambda: torch.relu(x_small), **kw)\n"
            "    t_large = time_callable(lambda: torch.relu(x_large), **kw)\n"
            "    print(f'measured on this CPU: {t_small.measured_time_s * 1e6:.0f} us and '\n"
            "          f'{t_large.measured_time_s * 1e6:.0f} us, '\n"
            "          f'ratio {t_large.measured_time_s / t_small.measured_time_s:.0f} (measured)')\n"
            "except ImportError as exc:\n"
            "    print(exc)"
        ),
        md(
            "## Task 6 (explain the gap)\n\n"
            "Your measured ratio will differ from the prediction, and it can land on either "
            "side. Timed this way, why can it come out **above** the bytes ratio: "
            "`'cache'`, `'fixed cost per call'` or `'math'`? (And which of the three pulls "
            "it below? Say it to yourself before checking.)"
        ),
        answer(
            "gap_reason",
            "'cache', 'fixed cost per call' or 'math'",
            "reason",
            'reason = "cache"  # 256 KB stays in the cache between repeats; 16 MB does not',
        ),
        test("06.gap_reason", "reason"),
        md(
            "## Task 7 (open): why fuse?\n\n"
            "A block computes `y = relu(x * scale + bias)` as three separate kernels. "
            "Estimate how much faster a single fused kernel would be, and explain why."
        ),
        open_answer(
            "open_fuse",
            "**Model answer.** Each of the three element-wise kernels reads one tensor and "
            "writes one, so unfused the data crosses DRAM six times (three reads, three "
            "writes, with scale and bias as tiny vectors). Fused, x is read once and y "
            "written once: two crossings. The work is memory-bound, so time follows bytes "
            "and the fused kernel is close to three times faster. The FLOPs do not change; "
            "only the traffic does.",
        ),
    ]


def nb07():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 7: number formats, loss scaling and sparsity\n\n"
            "Goes with `notebooks/07_mixed_precision_and_sparsity.ipynb`."
        ),
        md(HOW),
        setup(
            SETUP + "import math\n\n"
            "from dlperf_widgets.core.formats import number_format\n"
            "from dlperf_widgets.core.sparsity import sparse_gemm"
        ),
        md(
            "## Task 1: BF16's precision\n\n"
            "BF16 keeps FP32's 8 exponent bits but only 7 significand bits. What is the gap "
            "between 1.0 and the next larger BF16 number?"
        ),
        answer("bf16_epsilon", "epsilon", "bf16_eps", "bf16_eps = 2**-7"),
        test("07.bf16_epsilon", "bf16_eps"),
        md(
            "## Task 2: how much loss scaling?\n\n"
            "A gradient of 1e-8 would be flushed to zero in FP16. What is the smallest "
            "whole k such that the gradient times the loss scale 2**k is at least the "
            "smallest positive FP16 number (a subnormal)? Then look at the format card."
        ),
        answer(
            "scale_exponent",
            "k",
            "k",
            "k = math.ceil(math.log2(2**-24 / 1e-8))",
        ),
        test("07.scale_exponent", "k"),
        code("number_format('fp16')", tags=CHECK_OUTPUT),
        md(
            "## Task 3: 2:4 sparsity end to end\n\n"
            "Pruning the weights 2:4 doubles the Tensor Core rate of a large math-bound "
            "GEMM (8192³, FP16, A100). If such GEMMs take 60 % of a training step's time, "
            "how much faster does the whole step run?"
        ),
        answer(
            "sparse_end_to_end", "speed-up factor", "speedup", "speedup = 1 / ((1 - 0.6) + 0.6 / 2)"
        ),
        test("07.sparse_end_to_end", "speedup"),
        md(
            "## Task 4 (design): enough tokens for sparsity to pay\n\n"
            "A Linear layer with 4096 inputs and 4096 outputs is pruned 2:4 and runs in FP16 "
            "on an A100: a GEMM of M tokens × N = 4096 × K = 4096. Choose a number of tokens "
            "M per call such that 2:4 sparsity speeds the GEMM up **at least 1.5×** and the "
            "sparse GEMM still takes **at most 100 µs** (the model's prediction). Many M "
            "work; the check verifies yours with `sparse_gemm`. Predict first: why does a "
            "small M gain little?"
        ),
        answer(
            "sparse_batch",
            "tokens M (a whole number)",
            "tokens",
            "ok = [m for m in range(64, 4097, 64)\n"
            "      if sparse_gemm(m, 4096, 4096, dtype='fp16', gpu='A100').gemm_speedup >= 1.5\n"
            "      and sparse_gemm(m, 4096, 4096, dtype='fp16', gpu='A100').sparse_time_s"
            " <= 100e-6]\n"
            "tokens = ok[0]",
        ),
        test("07.sparse_batch", "tokens", points=2),
        code(
            "for m in (16, 128, 512, 2048):\n"
            "    r = sparse_gemm(m, 4096, 4096, dtype='fp16', gpu='A100')\n"
            "    print(f'M = {m:5d}: {r.limiter:6s}-bound, speed-up {r.gemm_speedup:.2f}x, '\n"
            "          f'sparse {r.sparse_time_s * 1e6:6.1f} us (model)')",
            tags=CHECK_OUTPUT,
        ),
        md(
            "## Task 5 (debugging): inf in the forward pass\n\n"
            "A model trains in FP16 with dynamic loss scaling. The scaler keeps halving the "
            "scale and skipping steps, and a probe shows an activation whose largest "
            "magnitude (amax) is 1.2e5, while the gradients are around 1e-3. Which fix "
            "addresses the cause: `'loss scaling'` (a different scale), `'bf16'` (train in "
            "BF16) or `'nothing'`?"
        ),
        answer(
            "overflow_fix",
            "'loss scaling', 'bf16' or 'nothing'",
            "fix",
            "fix = 'bf16' if 1.2e5 > number_format('fp16').max else 'loss scaling'",
        ),
        test("07.overflow_fix", "fix", points=2),
        md(
            "## Task 6 (open): dynamic loss scaling\n\n"
            "PyTorch's `GradScaler` starts with a large scale, halves it when a step "
            "produces inf or NaN gradients (and skips that step), and doubles it again after "
            "a run of good steps. Why this design rather than one fixed scale?"
        ),
        open_answer(
            "open_scaler",
            "**Model answer.** The right scale is not known in advance and changes during "
            "training as gradient magnitudes drift. Too small a scale lets small gradients "
            "underflow to zero in FP16; too large a scale overflows to inf. Overflow is "
            "cheap to detect, so the scaler probes: it keeps the scale as large as it can "
            "(to save the smallest gradients), backs off by half the moment anything "
            "overflows, throws that step away so no inf reaches the weights, and creeps back "
            "up after many clean steps. A few skipped steps cost little; lost gradients or a "
            "wrong fixed guess could cost the whole run.",
        ),
    ]


def nb08():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 8: training memory and parallelism\n\n"
            "Goes with `notebooks/08_memory_and_parallelism.ipynb`."
        ),
        md(HOW),
        setup(
            SETUP + "import math\n\n"
            "from dlperf_widgets import gpu\n"
            "from dlperf_widgets.core.memory import training_memory"
        ),
        md(
            "## Task 1: ZeRO stage 1\n\n"
            "A 7-billion-parameter model trains in mixed precision (FP16) with AdamW on 8 "
            "data-parallel GPUs with "
            "ZeRO stage 1, which splits the optimizer states (ZeRO counts the FP32 master "
            "weights among them) over the GPUs. How many bytes of model state does each GPU "
            "hold? Check, then compare with the calculator below."
        ),
        answer(
            "zero1_per_gpu",
            "bytes per GPU",
            "per_gpu",
            "params = 7e9\nper_gpu = params * (2 + 4) + params * (4 + 8) / 8",
        ),
        test("08.zero1_per_gpu", "per_gpu"),
        code(
            "for zero in (0, 1, 2, 3):\n"
            "    r = training_memory(7e9, data_parallel=8, zero=zero)\n"
            "    print(f'ZeRO-{zero}: {r.per_gpu_bytes / 1e9:6.1f} GB per GPU')",
            tags=CHECK_OUTPUT,
        ),
        md(
            "## Task 2: gradient accumulation\n\n"
            "Each of 2 data-parallel replicas runs a batch of 32 as 4 accumulation steps of "
            "8 samples. How many samples contribute to one optimizer step?"
        ),
        answer("effective_batch", "samples per step", "effective", "effective = 8 * 4 * 2"),
        test("08.effective_batch", "effective"),
        md(
            "## Task 3: checkpointing\n\n"
            "A 100-layer network uses √n gradient checkpointing: it stores the activations "
            "only at segment boundaries and recomputes each segment in the backward pass. "
            "How many layers should a segment hold?"
        ),
        answer("checkpoint_segment", "layers per segment", "segment", "segment = int(100**0.5)"),
        test("08.checkpoint_segment", "segment"),
        md(
            "## Task 4 (design): a micro-batch that fits\n\n"
            "A 1.3-billion-parameter model (24 layers, hidden 2048, 16 heads, 2048-token "
            "sequences, mixed precision, AdamW) must train with an effective batch of 32 "
            "sequences on one A100-SXM4-80GB. Choose a micro-batch: it must divide 32 (whole "
            "accumulation steps), need at most 16 accumulation steps (thinner steps make the "
            "GEMMs inefficient), and fit in the GPU's memory by `training_memory`. More than "
            "one answer is right."
        ),
        answer(
            "micro_batch",
            "micro-batch (a whole number)",
            "micro",
            "shape = dict(layers=24, hidden=2048, seq_len=2048, heads=16)\n"
            "capacity = gpu('A100-SXM4-80GB').memory_bytes\n"
            "fits = [b for b in (2, 4, 8, 16, 32)\n"
            "        if training_memory(1.3e9, batch=b, **shape).per_gpu_bytes <= capacity]\n"
            "micro = max(fits)",
        ),
        test("08.micro_batch", "micro", points=2),
        md(
            "## Task 5 (debugging): read the breakdown, pick the fix\n\n"
            "A 7-billion-parameter model (32 layers, hidden 4096, 32 heads, 2048-token "
            "sequences, micro-batch 1) runs out of memory on 8 data-parallel GPUs. The "
            "breakdown below is what the memory calculator reports for one GPU. Which "
            "technique attacks the larger part: `'zero'` (ZeRO, splitting model state over "
            "the GPUs) or `'checkpointing'` (recomputing activations)?"
        ),
        code(
            "oom = training_memory(7e9, batch=1, layers=32, hidden=4096, seq_len=2048, heads=32,\n"
            "                      data_parallel=8)\n"
            "for part in ('weights', 'gradients', 'optimizer', 'activations'):\n"
            "    print(f'{part:12s} {getattr(oom, part + \"_bytes\") / 2**30:7.1f} GiB')",
            tags=CHECK_OUTPUT,
        ),
        answer(
            "oom_fix",
            "'zero' or 'checkpointing'",
            "fix",
            "fix = 'zero' if oom.model_state_bytes > oom.activations_bytes else 'checkpointing'",
        ),
        test("08.oom_fix", "fix", points=2),
        md(
            "## Task 6 (open): out of memory\n\n"
            "Your model trains at batch 64 but runs out of memory at the batch 256 you "
            "want. Name two techniques from the optimization table that fix it, and what "
            "each costs in speed."
        ),
        open_answer(
            "open_oom",
            "**Model answer.** Gradient accumulation runs batch 256 as four micro-batches of "
            "64 and adds their gradients before one optimizer step: the same update, "
            "activation memory of batch 64, and almost no speed cost beyond smaller GEMMs. "
            "Gradient checkpointing stores activations only every √n layers and recomputes "
            "the rest during the backward pass: activation memory drops to about O(√n) for "
            "one extra forward pass, roughly 20-30 % more time. (Mixed precision, an 8-bit "
            "optimizer or ZeRO also cut memory; mixed precision even speeds training up.)",
        ),
    ]


def nb09():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 9: measure for real\n\n"
            "Goes with `notebooks/09_measure_for_real.ipynb`. The measurement runs on "
            "whatever this machine has: a GPU if there is one, otherwise the CPU (a few "
            "milliseconds; the checks use your own measured time)."
        ),
        md(HOW),
        setup(
            SETUP + "from dlperf_widgets import gemm\n"
            "from dlperf_widgets.live.timing import time_gemm"
        ),
        md(
            "## Task 1: predict first\n\n"
            "Before measuring anything: according to the model, how long does an "
            "8192×8192×8192 FP16 GEMM take on an A100? (Hint: it is math-bound.)"
        ),
        answer(
            "model_time",
            "seconds",
            "model_time",
            "model_time = gemm(8192, 8192, 8192, dtype='fp16', gpu='A100').predicted_time_s",
        ),
        test("09.model_time", "model_time"),
        md(
            "## Task 2: measure, then compute the rate\n\n"
            "The next cell times a 512×512×512 FP32 GEMM properly (warm-up, several "
            "repeats, the median). From its `measured_time_s`, compute the achieved FLOP/s "
            "yourself. The cell also prints the fastest run: on a busy machine the median "
            "can be several times the minimum, and then the time says more about the "
            "machine than about the GEMM (run it again when it is quieter)."
        ),
        code(
            "t = time_gemm(512, 512, 512, dtype='fp32', repeats=20, warmup=3)\n"
            "print(f'median of {t.repeats} repeats: {t.measured_time_s * 1e3:.3f} ms, '\n"
            "      f'fastest {min(t.times_s) * 1e3:.3f} ms (measured on {t.device})')\n"
            "if t.note:\n"
            "    print('note:', t.note)"
        ),
        answer(
            "achieved_flops",
            "achieved FLOP/s",
            "achieved",
            "achieved = 2 * 512**3 / t.measured_time_s",
        ),
        test("09.achieved_flops", "achieved", params="time_s=t.measured_time_s"),
        md(
            "## Task 3: and the bandwidth\n\n"
            "With the same measured time, how many bytes per second did the GEMM move at "
            "least (A and B read once, C written once, FP32)?"
        ),
        answer(
            "achieved_bandwidth",
            "bytes per second",
            "bandwidth",
            "bandwidth = 3 * 512 * 512 * 4 / t.measured_time_s",
        ),
        test("09.achieved_bandwidth", "bandwidth", params="time_s=t.measured_time_s"),
        md(
            "## Task 4 (open): a fair measurement\n\n"
            "A colleague times a GEMM with `start = time.time(); c = a @ b; print(time.time() "
            "- start)` on a GPU and finds it slow the first time and 'impossibly fast' on "
            "every call after. List what is wrong and how a proper measurement fixes each "
            "point."
        ),
        open_answer(
            "open_measure",
            "**Model answer.** GPU work is launched asynchronously, so the host clock stops "
            "before the GEMM has finished: the later calls time only the launch, hence "
            "'impossibly fast'; the time must be taken with CUDA events or after a "
            "synchronize. The first call is slow because it pays one-off costs (library heuristics, "
            "module loading, memory allocation, clocks ramping up), so a few untimed warm-up "
            "runs come first. One run is noisy: repeat and report the median. Repeats can "
            "hit operands still sitting in L2, flattering the result, so flush the cache "
            "between them. And the inputs should be random, not zeros or uninitialised "
            "memory, which some hardware handles faster.",
        ),
        md(
            "## Task 5 (estimation before measurement): the fixed cost of a call\n\n"
            "Predict before you measure. For a tiny 64×64×64 FP16 GEMM on an A100, what share "
            "of the model's predicted time is the fixed cost the model charges per kernel "
            "(`kernel_overhead_s`), as a fraction? Read it off `gemm(...)`, not from a "
            "measurement."
        ),
        answer(
            "overhead_share",
            "fraction of the predicted time",
            "share",
            "tiny = gemm(64, 64, 64, dtype='fp16', gpu='A100')\n"
            "share = tiny.kernel_overhead_s / tiny.predicted_time_s",
        ),
        test("09.overhead_share", "share", points=2),
        md(
            "Now measure the same effect on this machine: a 32³ and a 512³ FP32 GEMM (on a "
            "CPU too, every call has a fixed cost: the Python call, the library dispatch, "
            "allocating the output). Your numbers differ from anyone else's; the task below "
            "asks only why they differ so much from each other."
        ),
        code(
            "for size in (32, 512):\n"
            "    tm = time_gemm(size, size, size, dtype='fp32', repeats=5, warmup=1)\n"
            "    rate = 2 * size**3 / tm.measured_time_s\n"
            "    print(f'{size:4d}^3: {tm.measured_time_s * 1e6:9.1f} us, '\n"
            "          f'{rate / 1e9:8.2f} GFLOP/s (measured on {tm.device})')"
        ),
        md(
            "## Task 6 (estimation before measurement): explain the gap\n\n"
            "The small GEMM reaches a far lower FLOP/s than the large one, here and in the "
            "model's A100 prediction of Task 5. What explains it: `'fixed cost per call'`, "
            "`'memory bandwidth'` or `'math peak'`?"
        ),
        answer(
            "gap_reason",
            "one of the three explanations",
            "reason",
            "reason = 'fixed cost per call'",
        ),
        test("09.gap_reason", "reason", points=2),
    ]


def nb10():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 10: fusion and the launch-bound regime\n\n"
            "Goes with `notebooks/10_fusion_and_launch_overhead.ipynb`. Everything here is "
            "arithmetic on the kit's counts; no GPU is needed."
        ),
        md(HOW),
        setup(
            SETUP + "from dlperf_widgets.core.fusion import attention, fusion_chain, "
            "launch_overhead"
        ),
        md(
            "## Task 1: what a fused chain moves\n\n"
            "After an MLP's first GEMM come a bias add, GELU, and (in some blocks) a residual "
            "add, over 16 Mi FP16 values (16 × 2**20). Fused into one kernel, how many bytes "
            "does the chain read and write in DRAM? (Check with `fusion_chain`.)"
        ),
        answer(
            "fused_bytes",
            "bytes",
            "fused_bytes",
            "fused_bytes = 3 * 16 * 2**20 * 2  # read x and the residual, write the output",
        ),
        test("10.fused_bytes", "fused_bytes"),
        md(
            "## Task 2: standard attention's traffic\n\n"
            "One attention head with N = 2048 and d = 64 in FP16, computed the standard way "
            "(S = QKᵀ, P = softmax(S), O = PV as three kernels). How many bytes cross HBM?"
        ),
        answer(
            "std_bytes",
            "bytes",
            "std_bytes",
            "n, d = 2048, 64\nstd_bytes = (4 * n * d + 4 * n * n) * 2",
        ),
        test("10.standard_attention_bytes", "std_bytes"),
        md(
            "## Task 3: the memory FlashAttention saves\n\n"
            "Training with batch 8, 16 heads, N = 4096 in FP16: how many bytes does standard "
            "attention keep for the backward pass in its probability matrices P (per layer)?"
        ),
        answer(
            "saved",
            "bytes",
            "saved",
            "saved = 8 * 16 * 4096 * 4096 * 2",
        ),
        test("10.saved_probabilities", "saved"),
        code(
            "a = attention(4096, head_dim=64, heads=16, batch=8)\n"
            "print(f'FlashAttention keeps {a.saved_bytes_flash / 2**20:.0f} MiB instead')",
            tags=CHECK_OUTPUT,
        ),
        md(
            "## Task 4: launch-bound\n\n"
            "A decode step of a small model launches 200 kernels, each with 1 µs of work; "
            "launching one from the host takes 5 µs. How long does the step take launched "
            "kernel by kernel?"
        ),
        answer(
            "step_s",
            "seconds",
            "step_s",
            "step_s = 200 * max(1e-6, 5e-6)",
        ),
        test("10.launch_bound_time", "step_s"),
        md(
            "## Task 5 (design): a batch that ends the launch-bound regime\n\n"
            "Stay with the step of Task 4 (200 kernels, 1 µs of work each at today's batch, "
            "5 µs per launch) and suppose each kernel's work grows in proportion to the "
            "batch. Choose a whole multiplier of the batch such that the step is **no longer "
            "launch-bound** and, launched kernel by kernel, takes **at most 2 ms**. Several "
            "multipliers are right; the check verifies yours with `launch_overhead`."
        ),
        answer(
            "batch_scale",
            "batch multiplier (a whole number)",
            "scale",
            "ok = [s for s in range(1, 50)\n"
            "      if not launch_overhead([s * 1e-6] * 200, launch_overhead_s=5e-6).launch_bound\n"
            "      and launch_overhead([s * 1e-6] * 200, launch_overhead_s=5e-6).eager_time_s"
            " <= 2e-3]\n"
            "scale = ok[0]",
        ),
        test("10.batch_scale", "scale", points=2),
        md(
            "## Task 6 (debugging): a profile of the MLP's tail\n\n"
            "A profile of one step shows the bias, GELU and residual-add kernels of Task 1 "
            "(16 Mi FP16 values) as three kernels back to back, each launched on its own from "
            "the host (5 µs per launch). The cell below prints the model's work time for each "
            "kernel. Which fix attacks what dominates: `'fuse'` the three kernels or capture "
            "them in a `'cuda graph'`?"
        ),
        code(
            "chain = fusion_chain(('bias', 'gelu', 'residual'), elements=16 * 2**20, "
            "dtype='fp16', gpu='A100')\n"
            "for q in chain.to_dict()['passes']:\n"
            "    work = max(q['math_time_s'], q['memory_time_s'])\n"
            "    print(f\"{q['op']:9s} {q['limiter']:6s}-bound, {work * 1e6:5.1f} us of work "
            '(model)")',
            tags=CHECK_OUTPUT,
        ),
        answer(
            "profile_fix",
            "'fuse' or 'cuda graph'",
            "fix",
            "worst = max(max(q['math_time_s'], q['memory_time_s'])\n"
            "            for q in chain.to_dict()['passes'])\n"
            "fix = 'fuse' if worst > 5e-6 else 'cuda graph'",
        ),
        test("10.profile_fix", "fix", points=2),
        md(
            "## Task 7 (open): three cures\n\n"
            "For the step of Task 4, compare fusing kernels, capturing the step in a CUDA graph "
            "and doubling the batch. What does each remove, and which would you try first?"
        ),
        open_answer(
            "open_cures",
            "**Model answer.** The step is launch-bound: 200 × 5 µs = 1 ms of launches for "
            "0.2 ms of work, so the GPU idles 80 % of the time. A CUDA graph submits the 200 "
            "kernels with one launch and brings the step close to its work (about 0.2 ms plus "
            "a little per kernel), with no change to the kernels: the cheapest first step. "
            "Fusion removes kernels (and their DRAM round trips) and helps in both regimes, but "
            "needs a compiler or hand-written kernels. Doubling the batch doubles each kernel's "
            "work at the same launch cost: while the work stays under 5 µs the step takes the "
            "same time for twice the tokens, so throughput doubles.",
        ),
    ]


def nb11():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 11: LLM inference\n\n"
            "Goes with `notebooks/11_llm_inference.ipynb`. Model shapes are in "
            "`llm(name)` (layers, hidden, heads, kv_heads, head_dim, ffn, vocab)."
        ),
        md(HOW),
        setup(
            SETUP + "from dlperf_widgets import gemm, gpu\n"
            "from dlperf_widgets.core.inference import kv_cache_bytes, llm, llm_inference, "
            "weight_bytes"
        ),
        md(
            "## Task 1: the KV cache of a GQA model\n\n"
            "Llama-3-8B has 32 layers, 32 query heads and 8 K/V heads of size 128. How many "
            "bytes of FP16 KV cache does one token of one sequence take?"
        ),
        code(
            "s = llm('llama-3-8b')\nprint(s.layers, s.heads, s.kv_heads, s.head_dim)",
            tags=CHECK_OUTPUT,
        ),
        answer(
            "kv_token",
            "bytes",
            "kv_token",
            "kv_token = 2 * s.layers * s.kv_heads * s.head_dim * 2",
        ),
        test("11.kv_per_token", "kv_token"),
        md(
            "## Task 2: what limits batch × context\n\n"
            "Llama-2-13B in FP16 on an A100-SXM4-80GB (80 GiB). How many sequences of 4096 "
            "tokens can decode together before their KV caches and the weights overflow the "
            "memory? (Ignore activations and workspace.)"
        ),
        answer(
            "max_batch",
            "an integer",
            "max_batch",
            "r = llm_inference('llama-2-13b', gpu='A100-SXM4-80GB', context=4096)\n"
            "max_batch = int((gpu('A100-SXM4-80GB').memory_bytes - r.weight_bytes)\n"
            "                // kv_cache_bytes('llama-2-13b', context=4096))",
        ),
        test("11.max_batch", "max_batch"),
        md(
            "## Task 3: decode at batch 1\n\n"
            "If every decode step must read all of Llama-2-7B's FP16 weights at the "
            "A100-80GB's datasheet bandwidth, how many tokens per second can one user get "
            "at best? (The ideal: the model's prediction is lower.)"
        ),
        answer(
            "tokens_per_s",
            "tokens per second",
            "tokens_per_s",
            "r = llm_inference('llama-2-7b', gpu='A100-SXM4-80GB', context=1)\n"
            "tokens_per_s = gpu('A100-SXM4-80GB').memory_bandwidth_bytes_per_s / r.decode_bytes",
        ),
        test("11.ideal_tokens_per_s", "tokens_per_s"),
        md(
            "## Task 4 (design): a batch that crosses the ridge\n\n"
            "Llama-2-7B decodes in FP16 on an H100-SXM, with short requests of 128 tokens of "
            "context. Its largest decode GEMM is the MLP up-projection: weights of ffn × "
            "hidden (`llm('llama-2-7b')`) times a batch of B token vectors. Choose a batch B "
            "for which that GEMM is **math-bound** (`gemm(s.ffn, B, s.hidden, dtype='fp16', "
            "gpu='H100-SXM').limiter`) while the FP16 weights (`weight_bytes`) and all B KV "
            "caches (`kv_cache_bytes(..., context=128)` each) **fit** in the GPU's memory. "
            "Many B are right."
        ),
        answer(
            "decode_batch",
            "a batch size (a whole number)",
            "batch",
            "s = llm('llama-2-7b')\n"
            "ok = [b for b in range(64, 2049, 64)\n"
            "      if gemm(s.ffn, b, s.hidden, dtype='fp16', gpu='H100-SXM').limiter == 'math'\n"
            "      and weight_bytes(s) + b * kv_cache_bytes(s, context=128)\n"
            "      <= gpu('H100-SXM').memory_bytes]\n"
            "batch = ok[0]",
        ),
        test("11.decode_batch", "batch", points=2),
        md(
            "## Task 5: int4 weights\n\n"
            "Weights stored in int4 with one FP16 scale per group of 64 weights: how many bits "
            "are stored per weight?"
        ),
        answer("bits", "bits per weight", "bits", "bits = 4 + 16 / 64"),
        test("11.int4_bits", "bits"),
        md(
            "## Task 6 (debugging): a published measurement\n\n"
            "The kit ships published GEMM timings measured on real GPUs "
            "(`dlperf_widgets.live.traces.measured_gemms`). On an H100-SXM in BF16, a "
            "256×256×256 GEMM was measured at the time printed below. From the measurement, "
            "compute the share of the datasheet BF16 peak and of the DRAM bandwidth it "
            "achieved. What limits it: `'math'`, `'memory'`, or, when it reaches neither a "
            "tenth of the peak nor of the bandwidth, the `'fixed cost per kernel'`?"
        ),
        code(
            "from dlperf_widgets.live.traces import measured_gemms\n\n"
            "meas = measured_gemms('H100-SXM', 'bf16')\n"
            "row = ((meas['m'] == 256) & (meas['n'] == 256) & (meas['k'] == 256)\n"
            "       & (meas['batch'] == 1)).nonzero()[0][0]\n"
            "t_meas, f_meas, b_meas = (meas[c][row] for c in ('measured_time_s', 'flops', "
            "'bytes'))\n"
            "print(f'{t_meas * 1e6:.2f} us measured, {f_meas:.3g} FLOP, {b_meas:.3g} B '\n"
            "      f'(published, {meas[\"traces\"][0]})')",
            tags=CHECK_OUTPUT,
        ),
        answer(
            "measured_limiter",
            "'math', 'memory' or 'fixed cost per kernel'",
            "limiter",
            "h100 = gpu('H100-SXM')\n"
            "math_share = f_meas / t_meas / h100.peak_flops('bf16')\n"
            "memory_share = b_meas / t_meas / h100.memory_bandwidth_bytes_per_s\n"
            "if max(math_share, memory_share) < 0.1:\n"
            "    limiter = 'fixed cost per kernel'\n"
            "else:\n"
            "    limiter = 'math' if math_share >= memory_share else 'memory'",
        ),
        test("11.measured_limiter", "limiter", points=2),
        md(
            "## Task 7 (open): a chat service\n\n"
            "You serve Llama-3-8B on one H100 to users who want at least 30 tokens/s each, with "
            "4096-token contexts. Use `llm_inference` (or the widget of notebook 11) to find the "
            "largest batch that meets the target in FP16, then with int4 weights and an FP8 KV "
            "cache. Explain what limits each."
        ),
        open_answer(
            "open_service",
            "**Model answer.** Increase the batch until `tokens_per_s_per_user` falls below 30. "
            "In FP16 the step streams 16 GB of weights plus batch × 512 MiB of KV cache; the KV "
            "traffic grows with the batch and soon dominates, so the batch is set by bandwidth "
            "(and, further on, by the memory for the caches). int4 weights shrink the fixed "
            "part and an FP8 cache halves the per-sequence part, so more users fit in the same "
            "step time; at large batch the dequantisation work and the arithmetic start to "
            "count, and the memory capacity caps the batch × context.",
        ),
    ]


def nb12():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 12: low precision, MFU and training at scale\n\n"
            "Goes with `notebooks/12_low_precision_and_scale.ipynb`. You will compute an "
            "FP8 scale, a run's MFU, a pipeline bubble and an all-reduce time, design an FP8 "
            "layer under a time and a memory budget, and find what a step loses most to."
        ),
        md(HOW),
        setup(
            SETUP + "from dlperf_widgets import gemm\n"
            "from dlperf_widgets.core.formats import number_format\n"
            "from dlperf_widgets.core.scaleout import allreduce_time\n"
            "from dlperf_widgets.core.scaling import fp8_quantize"
        ),
        md(
            "## Task 1: a per-tensor FP8 scale\n\n"
            "An activation tensor's largest magnitude (amax) is 3.5. With current scaling and "
            "no margin, by what factor is it multiplied before the cast to FP8 E4M3?"
        ),
        answer("fp8_scale", "scale factor", "scale", "scale = number_format('fp8_e4m3').max / 3.5"),
        test("12.fp8_scale", "scale"),
        md(
            "## Task 2: MFU of a run\n\n"
            "A 7-billion-parameter model trains at 60,000 tokens per second on 8 H100 SXM GPUs "
            "in BF16 (dense peak 989.4 TFLOP/s each). Counting 6 N FLOPs per token (leave out "
            "the attention term), what is its model FLOPs utilization, as a fraction?"
        ),
        answer("mfu", "MFU (fraction)", "mfu", "mfu = 60_000 * 6 * 7e9 / (8 * 989.4e12)"),
        test("12.mfu", "mfu"),
        md(
            "## Task 3: the pipeline bubble\n\n"
            "A model is split into 8 pipeline stages and each step runs 24 micro-batches with "
            "the 1F1B schedule. What share of the step does each stage sit idle?"
        ),
        answer("bubble", "idle share", "bubble", "bubble = (8 - 1) / (24 + 8 - 1)"),
        test("12.bubble", "bubble"),
        md(
            "## Task 4: all-reduce the gradients\n\n"
            "The 7B model's BF16 gradients (14 GB) are all-reduced over the 8 GPUs of a server "
            "with the ring algorithm. NVLink 4 moves 450 GB/s per GPU in each direction. How "
            "many seconds does it take, ignoring latency?"
        ),
        answer("allreduce", "seconds", "t", "t = 2 * (8 - 1) / 8 * 14e9 / 450e9"),
        test("12.allreduce", "t"),
        md(
            "## Task 5 (design): size an FP8 layer\n\n"
            "You are sizing an h × h Linear layer that runs in FP8 (E4M3) on an H100-SXM over "
            "8192 tokens per call: a GEMM of 8192 × h × h. Choose h such that it suits FP8 "
            "Tensor Cores (16-byte aligned), the GEMM is **math-bound**, the model predicts "
            "**at most 200 µs** per call (`gemm(8192, h, h, dtype='fp8_e4m3', "
            "gpu='H100-SXM').predicted_time_s`) and the FP8 weights take **at most 16 MiB**. "
            "Many h are right; the check verifies yours."
        ),
        answer(
            "fp8_hidden",
            "hidden size h (a whole number)",
            "h",
            "ok = [h for h in range(256, 8193, 256)\n"
            "      if h * h <= 16 * 2**20\n"
            "      and gemm(8192, h, h, dtype='fp8_e4m3', gpu='H100-SXM').limiter == 'math'\n"
            "      and gemm(8192, h, h, dtype='fp8_e4m3', gpu='H100-SXM').predicted_time_s"
            " <= 200e-6]\n"
            "h = ok[-1]",
        ),
        test("12.fp8_hidden", "h", points=2),
        md(
            "## Task 6 (debugging): where does the step go?\n\n"
            "A profile of one training step: each pipeline stage computes for 1.2 s in total "
            "over its 8 micro-batches, the model is split into 8 stages (1F1B), and at the "
            "end 14 GB of gradients are all-reduced over 8 GPUs at 450 GB/s per direction, "
            "not overlapped with compute. Which idle time costs the step more: the `'pipeline "
            "bubble'` or the `'all-reduce'`? Compute both."
        ),
        answer(
            "step_loss",
            "'pipeline bubble' or 'all-reduce'",
            "loss",
            "bubble_s = 1.2 * (8 - 1) / 8\n"
            "allreduce_s = allreduce_time(14e9, 8, bandwidth_bytes_per_s=450e9)\n"
            "loss = 'pipeline bubble' if bubble_s >= allreduce_s else 'all-reduce'",
        ),
        test("12.step_loss", "loss", points=2),
        md(
            "## Task 7 (open): delayed scaling\n\n"
            "Transformer Engine's delayed scaling takes the scale from the largest amax of "
            "recent steps instead of the tensor being cast. What does that buy, and what "
            "happens on a step where the tensor suddenly grows 16 times larger?"
        ),
        open_answer(
            "open_delayed",
            "**Model answer.** The scale is known before the cast, so the cast needs no "
            "extra pass over the tensor to find its amax (a read of the whole tensor saved, "
            "and the amax is computed as a by-product of the cast for the next steps). The "
            "price is a lag: if the tensor grows 16x in one step, the scale still maps the "
            "old amax to 448, so everything above 448/16 of the new range is clamped to +-448 "
            "(saturated) on that step. The amax is recorded and the next steps' scale "
            "adapts; a margin of a few binades, or current scaling for tensors known to jump, "
            "protects against it.",
        ),
        code(
            "fp8_quantize([0.1, 1.0, 16.0], recipe='delayed', amax_history=[1.0])",
            tags=CHECK_OUTPUT,
        ),
    ]


BUILDERS = {
    "01": ("01_gemm_and_intensity_exercises.ipynb", nb01),
    "02": ("02_bounds_and_roofline_exercises.ipynb", nb02),
    "03": ("03_tiles_and_waves_exercises.ipynb", nb03),
    "04": ("04_tensor_cores_and_alignment_exercises.ipynb", nb04),
    "05": ("05_layer_checklists_exercises.ipynb", nb05),
    "06": ("06_memory_limited_layers_exercises.ipynb", nb06),
    "07": ("07_mixed_precision_and_sparsity_exercises.ipynb", nb07),
    "08": ("08_memory_and_parallelism_exercises.ipynb", nb08),
    "09": ("09_measure_for_real_exercises.ipynb", nb09),
    "10": ("10_fusion_and_launch_overhead_exercises.ipynb", nb10),
    "11": ("11_llm_inference_exercises.ipynb", nb11),
    "12": ("12_low_precision_and_scale_exercises.ipynb", nb12),
}


# -- Exercises 13 and 14: serving LLMs at scale, and reading a profile ----------------------


def nb13():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 13: serving LLMs at scale\n\n"
            "Goes with `notebooks/13_serving_llms.ipynb`. The serving model is in "
            "`dlperf_widgets.core.serving` (imported below as `sv`)."
        ),
        md(HOW),
        setup(SETUP + "from dlperf_widgets.core import serving as sv"),
        md(
            "## Task 1: the KV budget\n\n"
            "Llama-2-7B in FP16 on an A100-SXM4-80GB, sized the way vLLM does it: 0.9 of the "
            "card, minus the weights, the activations of a 2048-token profiling pass and a 1 GiB "
            "workspace. How many KV blocks of 16 tokens does that leave?"
        ),
        code(
            "r = sv.kv_budget('llama-2-7b', 'A100-SXM4-80GB')\nprint(r.weights_bytes, "
            "r.activation_bytes, r.kv_bytes_per_token)"
        ),
        answer("kv_blocks", "an integer", "kv_blocks", "kv_blocks = r.blocks"),
        test("13.kv_blocks", "kv_blocks"),
        md(
            "## Task 2: paged sequences\n\n"
            "OPT-13B on an A100-SXM4-40GB serves requests of 500 prompt tokens and 190 output "
            "tokens. How many such requests fit the paged KV cache at once?"
        ),
        answer(
            "paged",
            "an integer",
            "paged",
            "paged = sv.kv_budget('opt-13b', 'A100-SXM4-40GB', prompt_len=500, "
            "output_len=190).sequences_paged",
        ),
        test("13.paged_sequences", "paged"),
        md(
            "## Task 3 (design): a chunk size for an SLO\n\n"
            "Sixteen Llama-2-7B decodes run on an A100-SXM4-80GB; new requests bring 2048-token "
            "prompts. Choose a prefill chunk (tokens) so that time to first token stays within "
            "0.4 s and time per output token within 50 ms. Any chunk that meets both is right."
        ),
        answer(
            "chunk",
            "a chunk size in tokens",
            "chunk",
            "for chunk in range(64, 2049, 64):\n"
            "    r = sv.serving_slo('llama-2-7b', 'A100-SXM4-80GB', prompt_len=2048, chunk=chunk,\n"
            "                       ttft_slo_s=0.4, tpot_slo_s=0.05, batches=[16])\n"
            "    if r.best_batch == 16:\n"
            "        break",
        ),
        test("13.chunk_for_slo", "chunk"),
        md(
            "## Task 4: speculative decoding\n\n"
            "A draft model's tokens are accepted with probability 0.7 each; it drafts 3 tokens "
            "per iteration. How many tokens does one target pass yield on average?"
        ),
        answer("spec", "tokens", "spec", "spec = (1 - 0.7**4) / (1 - 0.7)"),
        test("13.spec_tokens", "spec"),
        md(
            "## Task 5: experts hit\n\n"
            "Mixtral routes each token to 2 of 8 experts. With uniform routing, how many distinct "
            "experts does one layer read, on average, in a decode step of 3 tokens?"
        ),
        answer("hit", "experts", "hit", "hit = 8 * (1 - (1 - 2 / 8) ** 3)"),
        test("13.experts_hit", "hit"),
        md(
            "## Task 6 (debug): out of KV blocks\n\n"
            "A team serves Llama-2-13B on an A100-SXM4-40GB with requests of 2048 prompt tokens "
            "and up to 2048 output tokens, and sets the batch to 24. The engine keeps preempting "
            "sequences for lack of free blocks. How many such sequences actually fit?"
        ),
        answer(
            "fit",
            "an integer",
            "fit",
            "fit = sv.kv_budget('llama-2-13b', 'A100-SXM4-40GB', prompt_len=2048, "
            "output_len=2048).sequences_paged",
        ),
        test("13.out_of_blocks", "fit"),
        md(
            "## Task 7 (open): what would you change?\n\nName two changes that let more of "
            "these sequences run, and what each costs."
        ),
        open_answer(
            "open_kv",
            "**Model answer.** An FP8 KV cache halves the bytes per token (twice the blocks) at "
            "a small accuracy risk; tensor parallelism over two GPUs halves the weights and the "
            "KV per GPU (more than twice the blocks) at the cost of two all-reduces per layer "
            "and a second GPU; a shorter maximum output length or a smaller model also work. "
            "Check each with `sv.kv_budget(..., kv_dtype='fp8')` or `tensor_parallel=2`.",
        ),
    ]


def nb14():  # type: ignore[no-untyped-def]
    return [
        md(
            "# Exercises 14: reading a profile\n\n"
            "Goes with `notebooks/14_reading_a_profile.ipynb`. The traces are the kit's "
            "shipped recordings of real GPU runs (`shipped_profiles()`)."
        ),
        md(HOW),
        setup(
            SETUP + "from dlperf_widgets.live.profile import explain, read_profile, "
            "shipped_profiles\ntraces = shipped_profiles()"
        ),
        md(
            "## Task 1: busy or idle\n\n"
            "In the V100 CNN training trace, what share of the span between the first and the "
            "last kernel is the GPU busy (a fraction)?"
        ),
        answer(
            "busy",
            "a fraction",
            "busy",
            "r = explain(traces['v100_cnn_training'])\nbusy = r.gpu_busy_s / r.span_s",
        ),
        test("14.busy_share", "busy"),
        md(
            "## Task 2: where the GPU's time goes\n\n"
            "In the A100 AlexNet trace, what share of the GPU's kernel time is host-device "
            "copying?"
        ),
        answer(
            "copies",
            "a fraction",
            "copies",
            "r = explain(traces['a100_alexnet_forward'])\n"
            "copies = sum(k.time_s for k in r.kernels if k.kind == 'memcpy') / r.kernel_time_s",
        ),
        test("14.copy_share", "copies"),
        md(
            "## Task 3: what pinning would give\n\n"
            "Read the bytes of the AlexNet trace's pageable copies from the raw events "
            "(`read_profile(...).gpu_events`, `args['bytes']`). How long would they take at the "
            "PCIe 4 x16 link's 32 GB/s, in seconds (the model adds a few microseconds per copy)?"
        ),
        answer(
            "pinned",
            "seconds",
            "pinned",
            "events = read_profile(traces['a100_alexnet_forward']).gpu_events\n"
            "pinned = sum(e['args']['bytes'] for e in events if 'Pageable' in e['name']) / 32e9",
        ),
        test("14.pinned_time", "pinned"),
        md(
            "## Task 4: the first fix\n\n"
            "Which fix does `explain` rank first for the 128-GPU job's trace? Answer with its "
            "first word: pin, pad, batch, fuse or capture."
        ),
        answer(
            "first",
            "a word",
            "first",
            "first = explain(traces['distributed_recsys_rank0']).findings[0].fix.split()[0]",
        ),
        test("14.top_fix", "first"),
        md(
            "## Task 5: hidden communication\n\n"
            "In the same trace, what share of the communication kernels' time overlaps "
            "computation?"
        ),
        answer(
            "hidden",
            "a fraction",
            "hidden",
            "r = explain(traces['distributed_recsys_rank0'])\n"
            "hidden = r.communication_overlapped_s / r.communication_s",
        ),
        test("14.comm_overlap", "hidden"),
        md(
            "## Task 6 (open): your next profile\n\nThe V100 trace can be priced for only 1 % "
            "of its time. What would you record differently, and what would each addition let "
            "you see?"
        ),
        open_answer(
            "open_profile",
            "**Model answer.** `record_shapes=True`, so every operator carries its input shapes "
            "and dtypes and the model can price its kernels (and find misaligned or skinny "
            "GEMMs); keep `deviceProperties` (PyTorch 2 writes them) so the GPU is known; add "
            "NVTX or `record_function` ranges around the data loading, forward, backward and "
            "optimizer so gaps can be attributed; and profile a few steady-state steps with a "
            "schedule (wait, warmup, active) rather than the first steps. For one slow kernel, "
            "Nsight Compute then gives its SOL %, roofline and occupancy.",
        ),
    ]


BUILDERS.update(
    {
        "13": ("13_serving_llms_exercises.ipynb", nb13),
        "14": ("14_reading_a_profile_exercises.ipynb", nb14),
    }
)


def main(which: list[str]) -> None:
    for key in which or list(BUILDERS):
        name, build = BUILDERS[key]
        print(write(HERE / name, build()))


if __name__ == "__main__":
    main(sys.argv[1:])
