"""Tasks of exercises/10_fusion_and_launch_overhead_exercises.ipynb."""

from __future__ import annotations

from ..core.dtypes import dtype
from ..core.fusion import attention, fusion_chain, launch_overhead, standard_attention_elements
from ._check import Mistake, Params, Task, first_design

MAX_KERNELS = 1_000_000
"""Most kernels a launch-overhead check lists (one float each): a step of a million kernels is
already far beyond any real training step, and the list stays a few tens of MB."""


# What follows the first GEMM of a transformer's MLP (GPT-2, BERT): a bias add, then GELU.
# The residual add comes after the second GEMM, so it is not part of this chain.
MLP_TAIL = ("bias", "gelu")


def _b(p: Params) -> float:
    return dtype(p["dtype"]).bytes_per_element


def _chain(p: Params):  # type: ignore[no-untyped-def]
    return fusion_chain(p["ops"], elements=p["elements"], dtype=p["dtype"], gpu="A100")


def _step(p: Params, scale: int):  # type: ignore[no-untyped-def]
    return launch_overhead([p["work_s"] * scale] * p["kernels"], launch_overhead_s=p["launch_s"])


def _scale_problem(p: Params, scale: int) -> str:
    """'' when the step at ``scale`` times the batch is no longer launch-bound and stays
    within the step-time budget."""
    r = _step(p, scale)
    if r.launch_bound:
        return (
            f"at {scale}x the batch each kernel works {p['work_s'] * scale * 1e6:.0f} us, "
            f"less than the {p['launch_s'] * 1e6:.0f} us launch: still launch-bound; "
            "take a larger batch."
        )
    if r.eager_time_s > p["budget_s"]:
        return (
            f"at {scale}x the step takes {r.eager_time_s * 1e3:.2f} ms, over the "
            f"{p['budget_s'] * 1e3:.1f} ms budget; take a smaller batch."
        )
    return ""


def _smallest_scale(p: Params) -> int:
    return first_design(_scale_problem, p, range(1, 1 << 16), "batch multiplier")


def _profile_fix(p: Params) -> str:
    """Fusion when each unfused kernel's own time exceeds the launch overhead (the time is
    DRAM traffic), a CUDA graph when the launches are the larger cost."""
    passes = _chain(p).to_dict()["passes"]
    per_kernel = max(max(q["math_time_s"], q["memory_time_s"]) for q in passes)
    return "fuse" if per_kernel > p["launch_s"] else "cuda graph"


# A training run: 24 layers of 16 heads (d = 64), batch 8, FP16; the probabilities P that
# standard attention keeps for backward may take at most 40 GiB across the layers.
CONTEXT_DESIGN = {
    "layers": 24,
    "heads": 16,
    "d": 64,
    "batch": 8,
    "dtype": "fp16",
    "budget_bytes": 40 * 2**30,
    "min_n": 2048,
}


MAX_CONTEXT_STEPS = 1024
"""Most context lengths (in steps of 256 tokens) a check tries when it looks for the longest."""


def _saved(p: Params, n: int, **change: int):  # type: ignore[no-untyped-def]
    q = {**p, **change}
    return attention(n, head_dim=q["d"], heads=q["heads"], batch=q["batch"], dtype=q["dtype"])


def _context_problem(p: Params, n: int, **change: int) -> str:
    """'' when N is a multiple of 256, at least ``min_n``, and P of every layer fits."""
    if n % 256:
        return f"N = {n} is not a multiple of 256."
    if n < p["min_n"]:
        return f"N = {n} is shorter than the {p['min_n']} tokens the run needs."
    layers = change.get("layers", p["layers"])
    need = _saved(p, n, **change).saved_bytes_standard * layers
    if need > p["budget_bytes"]:
        return (
            f"at N = {n} the probabilities take {need / 2**30:.1f} GiB over {layers} layers, "
            f"more than the {p['budget_bytes'] / 2**30:.0f} GiB budget: they grow with N², "
            "take a shorter N."
        )
    return ""


def _largest_context(p: Params, **change: int) -> int:
    """The longest N that a learner's count (with ``change`` applied) lets through."""
    best = 0
    start = -(-p["min_n"] // 256) * 256
    for n in range(start, start + 256 * MAX_CONTEXT_STEPS, 256):
        if _context_problem(p, n, **change):
            break
        best = n
    if not best:
        raise ValueError("no context length fits the budget")
    return best


def _flash_note(p: Params) -> str:
    n = _largest_context(p)
    flash = _saved(p, n).saved_bytes_flash * p["layers"]
    return (
        f"At N = {n} FlashAttention would keep {flash / 2**30:.2f} GiB instead: its saved "
        "output and statistics grow with N, not N²."
    )


TASKS = [
    Task(
        id="10.fused_bytes",
        question="DRAM bytes of the fused bias + GELU kernel after an MLP's first GEMM",
        kind="number",
        unit="B",
        params={"ops": MLP_TAIL, "elements": 16 * 2**20, "dtype": "fp16"},
        expected=lambda p: _chain(p).bytes_fused,
        mistakes=(
            Mistake(
                "unfused",
                lambda p: _chain(p).bytes_unfused,
                "that is the unfused traffic: fused, the chain reads its input once and "
                "writes its output once; the intermediate stays on chip.",
            ),
            Mistake(
                "read only",
                lambda p: p["elements"] * _b(p),
                "the fused kernel also writes its output to DRAM.",
            ),
            Mistake(
                "fp32 size",
                lambda p: _chain(p).bytes_fused * 2,
                "the tensors are FP16: 2 bytes per value.",
            ),
        ),
        hint="fused: read x once, write the output once: 2 tensor passes × 2 bytes (the bias "
        "vector is negligible).",
    ),
    Task(
        id="10.standard_attention_bytes",
        question="HBM bytes of standard attention for one head (Algorithm 0), FP16",
        kind="number",
        unit="B",
        params={"n": 2048, "d": 64, "dtype": "fp16"},
        expected=lambda p: standard_attention_elements(p["n"], p["d"]) * _b(p),
        mistakes=(
            Mistake(
                "S and P once",
                lambda p: (4 * p["n"] * p["d"] + 2 * p["n"] ** 2) * _b(p),
                "S is written and read back, and so is P: four N×N passes, not two.",
            ),
            Mistake(
                "elements",
                lambda p: standard_attention_elements(p["n"], p["d"]),
                "that is a count of values; multiply by 2 bytes for FP16.",
            ),
            Mistake(
                "no N squared",
                lambda p: 4 * p["n"] * p["d"] * _b(p),
                "that counts Q, K, V and O only; the N×N matrices S and P dominate.",
            ),
        ),
        hint="read Q, K, write S; read S, write P; read P, V, write O: 4Nd + 4N² values.",
    ),
    Task(
        id="10.context_design",
        question=(
            "a context length N (a multiple of 256, at least min_n) whose probability "
            "matrices, kept for backward by standard attention in every layer, fit the budget"
        ),
        kind="design",
        params=CONTEXT_DESIGN,
        expected=lambda p: first_design(
            _context_problem, p, [-(-p["min_n"] // 256) * 256], "context length"
        ),
        validate=_context_problem,
        mistakes=(
            Mistake(
                "forgot the heads",
                lambda p: _largest_context(p, heads=1),
                "every head keeps its own N×N matrix: multiply by the heads as well.",
            ),
            Mistake(
                "forgot the layers",
                lambda p: _largest_context(p, layers=1),
                "every layer keeps its own probabilities: multiply by the layers too.",
            ),
        ),
        hint="P of one layer is batch × heads × N × N values of 2 bytes; times the layers.",
        explain=lambda p: _flash_note(p),
    ),
    Task(
        id="10.launch_bound_time",
        question="time of the kernels launched one by one, in seconds",
        kind="number",
        unit="s",
        params={"kernels": 200, "work_s": 1e-6, "launch_s": 5e-6},
        limits={"kernels": MAX_KERNELS},
        expected=lambda p: (
            launch_overhead(
                [p["work_s"]] * p["kernels"], launch_overhead_s=p["launch_s"]
            ).eager_time_s
        ),
        mistakes=(
            Mistake(
                "work only",
                lambda p: p["kernels"] * p["work_s"],
                "that is the GPU's work; the host cannot launch faster than one kernel per "
                "launch overhead.",
            ),
            Mistake(
                "added both",
                lambda p: p["kernels"] * (p["work_s"] + p["launch_s"]),
                "launches are asynchronous: the next launch overlaps the running kernel, so "
                "each kernel costs the larger of the two, not their sum.",
            ),
        ),
        hint="each kernel costs max(its work, the launch overhead).",
    ),
    Task(
        id="10.batch_scale",
        question="batch multiplier that ends the launch-bound regime within the step budget",
        kind="design",
        params={"kernels": 200, "work_s": 1e-6, "launch_s": 5e-6, "budget_s": 2e-3},
        limits={"kernels": MAX_KERNELS},
        expected=_smallest_scale,
        validate=_scale_problem,
        mistakes=(
            Mistake(
                "present batch",
                lambda p: 1,
                "at the present batch the step is launch-bound: every kernel waits for "
                "its launch; a larger batch gives each launch more work.",
            ),
        ),
        hint="each kernel's work grows with the batch; find where it passes the launch "
        "overhead, then check the step time.",
        explain=lambda p: "Each launch now carries more work than it costs.",
    ),
    Task(
        id="10.profile_fix",
        question="a profile shows the bias and GELU kernels back to back: which fix",
        kind="choice",
        choices=("fuse", "cuda graph"),
        params={"ops": MLP_TAIL, "elements": 16 * 2**20, "dtype": "fp16", "launch_s": 5e-6},
        expected=_profile_fix,
        mistakes=(
            Mistake(
                "graph",
                lambda p: "cuda graph",
                "a CUDA graph removes launch gaps, but each of these kernels runs for tens "
                "of microseconds moving data through DRAM: fusion removes that traffic.",
            ),
            Mistake(
                "fuse small",
                lambda p: "fuse",
                "these kernels are so small that the launches cost more than their work: "
                "capture them in a CUDA graph first.",
            ),
        ),
        hint="compare one kernel's predicted time (fusion_chain's passes) with the launch "
        "overhead.",
    ),
]
