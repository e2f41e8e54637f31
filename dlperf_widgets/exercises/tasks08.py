"""Tasks of exercises/08_memory_and_parallelism_exercises.ipynb: training memory, ZeRO, steps."""

from __future__ import annotations

from typing import Any

from ._check import Mistake, Params, Task


def _mem(p: Params, **change: Any) -> Any:
    from ..core.memory import training_memory

    q = {**p, **change}
    return training_memory(q.pop("params"), **q)


ACTS = {"layers": 24, "hidden": 1024, "seq_len": 512, "heads": 16}

TASKS = [
    Task(
        id="08.bytes_per_param",
        question="bytes of model state per parameter (weights + gradients + optimizer)",
        kind="number",
        unit="B",
        params={"params": 1, "precision": "mixed-fp16", "optimizer": "adamw"},
        expected=lambda p: _mem(p).model_state_bytes / p["params"],
        rel_tol=1e-6,
        mistakes=(
            Mistake(
                "fp32 weights only",
                lambda p: _mem(p, precision="fp32").model_state_bytes / p["params"],
                "16 B is what torch.autocast keeps (FP32 weights and gradients) and also the "
                "ZeRO paper's count (16-bit gradients); the slides' mixed-precision scheme "
                "asked for here keeps an FP16 working copy (2 B) beside the FP32 master "
                "weights (4 B), 6 B of weights, and FP32 gradients (4 B).",
            ),
            Mistake(
                "forgot the gradients",
                lambda p: (_mem(p).model_state_bytes - _mem(p).gradients_bytes) / p["params"],
                "the gradients take memory too: 4 B per parameter.",
            ),
            Mistake(
                "forgot the optimizer",
                lambda p: (_mem(p).model_state_bytes - _mem(p).optimizer_bytes) / p["params"],
                "AdamW keeps two FP32 moments per parameter: 8 B.",
            ),
            Mistake(
                "bits",
                lambda p: _mem(p).model_state_bytes / p["params"] * 8,
                "that looks like bits; give bytes.",
            ),
        ),
        hint="weights (6 B mixed) + gradients (4 B) + AdamW moments (8 B).",
    ),
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
]


def _segment(p: Params) -> int:
    from ..core.memory import checkpoint_segment

    seg = checkpoint_segment(p["layers"], p["checkpointing"])
    if seg is None:
        raise ValueError("no checkpointing: no segments")
    return seg
