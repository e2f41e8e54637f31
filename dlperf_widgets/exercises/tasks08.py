"""Tasks of exercises/08_memory_and_parallelism_exercises.ipynb: training memory, ZeRO, steps."""

from __future__ import annotations

from typing import Any

from ._check import Mistake, Params, Task, first_design


def _mem(p: Params, **change: Any) -> Any:
    from ..core.memory import training_memory

    q = {**p, **change}
    return training_memory(q.pop("params"), **q)


ACTS = {"layers": 24, "hidden": 1024, "seq_len": 512, "heads": 16}

# A 1.3B-parameter model (24 layers, hidden 2048, 16 heads) on 2048-token sequences.
GPT_1B3 = {"params": 1.3e9, "layers": 24, "hidden": 2048, "seq_len": 2048, "heads": 16}


def _micro_problem(p: Params, micro: int) -> str:
    """'' when ``micro`` divides the effective batch, needs at most ``max_steps``
    accumulation steps and fits the GPU's memory."""
    from ..core.gpus import gpu

    target = p["effective_batch"]
    if target % micro:
        return (
            f"{micro} does not divide {target}: whole accumulation steps of {micro} samples "
            f"cannot add up to {target}."
        )
    if target // micro > p["max_steps"]:
        return (
            f"{target // micro} accumulation steps is more than {p['max_steps']}: each step's "
            "GEMMs get thin and slow; take a larger micro-batch."
        )
    need = _mem(
        {k: v for k, v in p.items() if k not in ("effective_batch", "max_steps", "gpu")},
        batch=micro,
    ).per_gpu_bytes
    have = gpu(p["gpu"]).memory_bytes
    if need > have:
        return (
            f"micro-batch {micro} needs {need / 2**30:.0f} GiB, more than the "
            f"{have / 2**30:.0f} GiB of the GPU: activations grow with the micro-batch; "
            "take a smaller one and more accumulation steps."
        )
    return ""


def _largest_micro(p: Params) -> int:
    return first_design(_micro_problem, p, range(p["effective_batch"], 0, -1), "micro-batch")


def _oom_fix(p: Params) -> str:
    """The fix for the larger of the two parts: model state (ZeRO splits it) or
    activations (checkpointing recomputes them)."""
    r = _mem(p)
    return "zero" if r.model_state_bytes > r.activations_bytes else "checkpointing"


TASKS = [
    Task(
        id="08.zero1_per_gpu",
        question="model-state bytes on each GPU with ZeRO stage 1",
        kind="number",
        unit="B",
        params={"params": 7e9, "data_parallel": 8, "zero": 1},
        expected=lambda p: _mem(p).per_gpu_bytes,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "no partitioning",
                lambda p: _mem(p, zero=0).per_gpu_bytes,
                "plain data parallelism copies everything to every GPU; ZeRO-1 splits the "
                "optimizer states (FP32 master weights included) over the GPUs.",
            ),
            Mistake(
                "split everything",
                lambda p: _mem(p, zero=3).per_gpu_bytes,
                "that splits weights and gradients too (stage 3); stage 1 splits only the "
                "optimizer states.",
            ),
            Mistake(
                "master weights kept",
                lambda p: _mem(p, zero=0).per_gpu_bytes - _mem(p, zero=0).optimizer_bytes * 7 / 8,
                "ZeRO counts the FP32 master weights as optimizer state: they are split too.",
            ),
            Mistake(
                "the ZeRO paper's 16-bit gradients",
                lambda p: _mem(p, convention="zero-paper").per_gpu_bytes,
                "that is the ZeRO paper's convention (2-byte gradients, 4 Psi + 12 Psi / N); "
                "this course keeps FP32 gradients (4 B), as the slides and Megatron-LM do: "
                "6 Psi + 12 Psi / N.",
            ),
        ),
        hint="2 B + 4 B per parameter stay whole; the 12 B of master weights and moments "
        "are divided by the number of GPUs.",
    ),
    Task(
        id="08.effective_batch",
        question="samples per optimizer step (the effective batch) over all GPUs",
        kind="integer",
        params={"params": 1e9, "batch": 32, "accumulation_steps": 4, "data_parallel": 2, **ACTS},
        expected=lambda p: _mem(p).effective_batch,
        mistakes=(
            Mistake(
                "forgot the data-parallel copies",
                lambda p: p["batch"],
                "every data-parallel replica processes its own samples: multiply by them.",
            ),
            Mistake(
                "micro-batch",
                lambda p: _mem(p).micro_batch,
                "that is one micro-batch; the gradients of all accumulation steps add up "
                "before the optimizer step.",
            ),
            Mistake(
                "multiplied by the accumulation again",
                lambda p: p["batch"] * p["accumulation_steps"] * p["data_parallel"],
                "the batch of 32 is already split into 4 micro-batches of 8; don't multiply "
                "by the accumulation steps again.",
            ),
        ),
        hint="micro-batch × accumulation steps × data-parallel replicas.",
    ),
    Task(
        id="08.checkpoint_segment",
        question="layers per segment with √n gradient checkpointing",
        kind="integer",
        params={"layers": 100, "checkpointing": "sqrt"},
        expected=lambda p: _segment(p),
        mistakes=(
            Mistake(
                "no checkpointing",
                lambda p: p["layers"],
                "storing every layer's activations is what checkpointing avoids: split the "
                "n layers into about √n segments of √n layers.",
            ),
            Mistake(
                "half",
                lambda p: p["layers"] // 2,
                "halving is not the optimum: segments of √n layers minimise stored "
                "checkpoints plus one segment's activations.",
            ),
        ),
        hint="√n layers per segment.",
    ),
    Task(
        id="08.micro_batch",
        question="micro-batch that reaches the effective batch by accumulation and fits the GPU",
        kind="design",
        params={**GPT_1B3, "effective_batch": 32, "max_steps": 16, "gpu": "A100-SXM4-80GB"},
        expected=_largest_micro,
        validate=_micro_problem,
        mistakes=(
            Mistake(
                "no accumulation",
                lambda p: p["effective_batch"],
                "the whole batch at once stores the activations of every sample: split it "
                "into micro-batches and accumulate their gradients.",
            ),
        ),
        hint="try micro-batches that divide the effective batch with training_memory(batch=...).",
    ),
    Task(
        id="08.oom_fix",
        question="the run is out of memory: which technique attacks the larger part",
        kind="choice",
        choices=("zero", "checkpointing"),
        params={
            "params": 7e9,
            "batch": 1,
            "layers": 32,
            "hidden": 4096,
            "seq_len": 2048,
            "heads": 32,
            "data_parallel": 8,
        },
        expected=_oom_fix,
        mistakes=(
            Mistake(
                "checkpointing",
                lambda p: "checkpointing",
                "checkpointing shrinks the activations, the smaller part here; the weights, "
                "gradients and AdamW states (18 B per parameter) dominate, and ZeRO splits "
                "them over the data-parallel GPUs.",
            ),
            Mistake(
                "zero",
                lambda p: "zero",
                "ZeRO splits weights, gradients and optimizer states, the smaller part here; "
                "the activations dominate, and checkpointing recomputes them instead of "
                "storing them.",
            ),
        ),
        hint="compare model_state_bytes with activations_bytes of the breakdown.",
    ),
]


def _segment(p: Params) -> int:
    from ..core.memory import checkpoint_segment

    seg = checkpoint_segment(p["layers"], p["checkpointing"])
    if seg is None:
        raise ValueError("no checkpointing: no segments")
    return seg


# -- hardware FLOPs utilization: the work recomputation adds ----------------------------------
# A training run of a 24-layer, hidden-2048 transformer (about 1.2B weights in its blocks) on
# 2048-token sequences, 8 A100s in BF16, full activation recomputation (checkpointing).
HFU_RUN = {
    "tokens_per_s": 80_000.0,
    "layers": 24,
    "hidden": 2048,
    "seq_len": 2048,
    "gpus": 8,
    "gpu": "A100",
    "dtype": "bf16",
    "recompute": "full",
}


def _utilization(p: Params, **change: Any) -> Any:
    """mfu() for the run, its parameters counted by transformer_params (12 L h^2)."""
    from ..core.mfu import mfu, transformer_params

    q = {**p, **change}
    weights = transformer_params(q["layers"], q["hidden"])
    return mfu(
        q["tokens_per_s"],
        weights,
        layers=q["layers"],
        hidden=q["hidden"],
        seq_len=q["seq_len"],
        gpus=q["gpus"],
        gpu=q["gpu"],
        dtype=q["dtype"],
        recompute=q["recompute"],
    )


TASKS.append(
    Task(
        id="08.hfu",
        question=(
            "hardware FLOPs utilization of the run, counting the forward pass that full "
            "recomputation repeats (a fraction)"
        ),
        kind="number",
        unit="fraction",
        params=HFU_RUN,
        expected=lambda p: _utilization(p).hfu,
        rel_tol=0.02,
        mistakes=(
            Mistake(
                "model FLOPs",
                lambda p: _utilization(p).mfu,
                "that is the MFU: it counts only the FLOPs the model needs (6N + 12Lhs per "
                "token). HFU adds the forward pass that recomputation runs again.",
            ),
            Mistake(
                "selective",
                lambda p: _utilization(p, recompute="selective").hfu,
                "that adds only the attention scores (selective recomputation); full "
                "recomputation repeats the whole forward pass: 2N + 4Lhs more per token.",
            ),
            Mistake(
                "one GPU",
                lambda p: _utilization(p).hfu * p["gpus"],
                "the tokens per second are the whole run's: divide them over the GPUs "
                "before comparing with one GPU's peak.",
            ),
        ),
        hint="per GPU: tokens/s ÷ GPUs × (8N + 16Lhs) FLOPs per token ÷ the BF16 peak.",
        explain=lambda p: (
            f"The MFU of the same run is {_utilization(p).mfu:.3f}. HFU is higher because it "
            "counts the recomputed work; runs are compared by MFU, which does not reward it."
        ),
    )
)
