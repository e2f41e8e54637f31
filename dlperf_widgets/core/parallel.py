"""Parallel training: what each GPU holds and what it sends per step.

The slides "NN Performance optimization" ("Data with model parallelism", "Model
parallelism") describe the strategies: data parallelism copies the model and exchanges
gradients; pipeline (inter-layer) parallelism splits the layers across devices; tensor
(intra-layer) parallelism splits each layer and exchanges activations. The figures here:

- Collectives use the ring algorithm (Patarasuk & Yuan 2009, as in NCCL and gloo): an
  all-reduce of S bytes on n ranks sends 2(n-1)/n * S bytes from every rank; a
  reduce-scatter or an all-gather sends (n-1)/n * S.
- ZeRO (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
  Parameter Models", Figure 1 and section 7): with mixed-precision Adam a model of Psi
  parameters keeps 2 Psi bytes of FP16 weights, 2 Psi of FP16 gradients and K Psi = 12 Psi
  of optimizer state (FP32 weights, momentum, variance). Per GPU over N_d data-parallel
  ranks: baseline (4 + K) Psi; stage 1 (P_os) 4 Psi + K Psi / N_d; stage 2 (P_os+g)
  2 Psi + (2 + K) Psi / N_d; stage 3 (P_os+g+p) (4 + K) Psi / N_d. Communication: 2 Psi
  elements per step for plain data parallelism and stages 1-2, 3 Psi for stage 3.
- Gradient conventions (``GRADIENT_CONVENTIONS``): the ZeRO paper keeps the gradients in
  16 bits (2 Psi, 16 bytes per parameter with Adam); Megatron-LM with BF16 parameters
  accumulates them in FP32 (4 Psi, 18 bytes per parameter; its README, "Distributed
  optimizer": 18 bytes, and 6 + 12/d with the distributed optimizer over d ranks), as the
  slides do ("gradients are always kept in fp32"). ``convention`` picks one by name.
- Tensor parallelism (Shoeybi et al. 2019, "Megatron-LM", section 3): each transformer
  layer does two all-reduces of its b x s x h activations in the forward pass and two in
  the backward pass.
- Pipeline parallelism: each stage boundary passes a b x s x h activation forward and its
  gradient backward per micro-batch; with the 1F1B schedule the first stage holds up to
  ``pipeline_parallel`` micro-batches of activations at once (Narayanan et al. 2021,
  "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validate import check_bool, check_choice, check_int, check_number, describe, is_array
from .errors import InvalidParameter

__all__ = [
    "GRADIENT_CONVENTIONS",
    "ZERO_K_ADAM",
    "allgather_bytes",
    "allreduce_bytes",
    "pipeline_parallel_comm_bytes",
    "reduce_scatter_bytes",
    "tensor_parallel_comm_bytes",
    "zero_communication_elements",
    "zero_model_state_bytes",
]

# ZeRO paper: K = 12 bytes of optimizer state per parameter for mixed-precision Adam.
ZERO_K_ADAM = 12

# Bytes per parameter of the gradients in mixed-precision training, by convention name
# (None: the working precision's bytes, 2 for FP16/BF16). Sources in the module docstring.
GRADIENT_CONVENTIONS: dict[str, int | None] = {
    "fp32-grads": 4,  # Megatron-LM (BF16 params, FP32 grads), the slides
    "zero-paper": None,  # ZeRO paper, Figure 1: FP16 gradients
}


def gradient_bytes_per_param(convention: str, working_bytes: float) -> float:
    """Gradient bytes per parameter under ``convention`` with ``working_bytes`` weights.

    ``'fp32-grads'`` keeps FP32 gradients (4 bytes); ``'zero-paper'`` keeps them in the
    working precision (2 bytes in mixed precision, 4 in FP32 training).
    """
    conv = check_choice("convention", convention, tuple(GRADIENT_CONVENTIONS))
    fixed = GRADIENT_CONVENTIONS[conv]
    return float(working_bytes if fixed is None else fixed)


def _check_bytes(size_bytes: Any) -> Any:
    if is_array(size_bytes):
        raw = np.asarray(size_bytes)
        arr = raw.astype(np.float64) if raw.dtype.kind in "iuf" else None
        if arr is None or arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise InvalidParameter(
                f"'size_bytes' must be non-negative finite number(s) (got {describe(size_bytes)})"
            )
        return arr
    return check_number("size_bytes", size_bytes, minimum=0)


def allreduce_bytes(size_bytes: Any, ranks: int) -> Any:
    """Bytes each rank sends in a ring all-reduce of ``size_bytes``: 2(n-1)/n * S."""
    ranks = check_int("ranks", ranks, allow_array=False)
    size_bytes = _check_bytes(size_bytes)
    return 2.0 * (ranks - 1) / ranks * size_bytes


def reduce_scatter_bytes(size_bytes: Any, ranks: int) -> Any:
    """Bytes each rank sends in a ring reduce-scatter of ``size_bytes``: (n-1)/n * S."""
    ranks = check_int("ranks", ranks, allow_array=False)
    size_bytes = _check_bytes(size_bytes)
    return (ranks - 1) / ranks * size_bytes


def allgather_bytes(size_bytes: Any, ranks: int) -> Any:
    """Bytes each rank sends in a ring all-gather producing ``size_bytes``: (n-1)/n * S."""
    ranks = check_int("ranks", ranks, allow_array=False)
    size_bytes = _check_bytes(size_bytes)
    return (ranks - 1) / ranks * size_bytes


def zero_model_state_bytes(
    params: float,
    stage: int,
    data_parallel: int,
    *,
    k: float = ZERO_K_ADAM,
    weight_bytes: float = 2,
    convention: str = "zero-paper",
) -> float:
    """Model-state bytes per GPU with ZeRO, as in the ZeRO paper's Figure 1.

    ``zero_model_state_bytes(7.5e9, 1, 64)`` = 4 Psi + 12 Psi / 64 = 31.4 GB (the paper's
    16-bit gradients). ``convention='fp32-grads'`` keeps 4-byte gradients instead, as
    ``training_memory`` does by default: 6 Psi + 12 Psi / 64 = 46.4 GB at stage 1.
    """
    psi = check_number("params", params, minimum=0, strict=True)
    stage = check_int("stage", stage, minimum=0, maximum=3, allow_array=False)
    nd = check_int("data_parallel", data_parallel, allow_array=False)
    k = check_number("k", k, minimum=0)
    weight_bytes = check_number("weight_bytes", weight_bytes, minimum=0)
    grad_bytes = gradient_bytes_per_param(convention, weight_bytes)
    w, g, o = weight_bytes * psi, grad_bytes * psi, k * psi
    if stage >= 1:
        o /= nd
    if stage >= 2:
        g /= nd
    if stage >= 3:
        w /= nd
    return w + g + o


def zero_communication_elements(params: float, stage: int) -> float:
    """Elements each GPU moves per step (ZeRO paper, section 7): 2 Psi, or 3 Psi at stage 3.

    Plain data parallelism all-reduces the gradients (a reduce-scatter and an all-gather,
    Psi each); stages 1 and 2 reduce-scatter gradients and all-gather updated weights (the
    same 2 Psi); stage 3 also all-gathers the weights again for the backward pass.
    """
    psi = check_number("params", params, minimum=0, strict=True)
    stage = check_int("stage", stage, minimum=0, maximum=3, allow_array=False)
    return (3.0 if stage == 3 else 2.0) * psi


def tensor_parallel_comm_bytes(
    layers: int,
    activation_bytes: float,
    tensor_parallel: int,
    *,
    micro_batches: int = 1,
    recompute: bool = False,
) -> float:
    """Bytes each GPU sends per step for Megatron-style tensor parallelism.

    ``activation_bytes`` is one b x s x h activation of a micro-batch. Per layer and
    micro-batch: 2 all-reduces forward + 2 backward, and 2 more when checkpointing
    repeats the forward pass.
    """
    layers = check_int("layers", layers, allow_array=False)
    tensor_parallel = check_int("tensor_parallel", tensor_parallel, allow_array=False)
    micro_batches = check_int("micro_batches", micro_batches, allow_array=False)
    recompute = check_bool("recompute", recompute)
    activation_bytes = check_number("activation_bytes", activation_bytes, minimum=0)
    if tensor_parallel == 1:
        return 0.0
    per_layer = (6 if recompute else 4) * allreduce_bytes(activation_bytes, tensor_parallel)
    return float(per_layer * layers * micro_batches)


def pipeline_parallel_comm_bytes(
    activation_bytes: float, pipeline_parallel: int, *, micro_batches: int = 1
) -> float:
    """Most bytes any GPU sends per step between pipeline stages.

    A middle stage sends each micro-batch's activation forward and its gradient backward
    (2 transfers); with two stages each GPU sends in one direction only.
    """
    pipeline_parallel = check_int("pipeline_parallel", pipeline_parallel, allow_array=False)
    micro_batches = check_int("micro_batches", micro_batches, allow_array=False)
    activation_bytes = check_number("activation_bytes", activation_bytes, minimum=0)
    if pipeline_parallel == 1:
        return 0.0
    transfers = 2 if pipeline_parallel > 2 else 1
    return float(transfers * activation_bytes * micro_batches)
