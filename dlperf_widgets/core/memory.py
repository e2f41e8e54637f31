"""Training memory: weights, gradients, optimizer states and activations, per GPU.

Bytes per parameter (slides "NN Performance optimization", "GPU memory"):

- weights: 4 (FP32 training) or 6 (mixed precision: an FP32 master copy plus a 16-bit
  copy for the forward and backward passes);
- gradients: 4 ("gradients are always kept in fp32"; Megatron-LM's convention with BF16
  parameters) by default, or the working precision's 2 bytes with
  ``convention='zero-paper'`` (the ZeRO paper's 16 bytes per parameter for mixed-precision
  Adam; see :mod:`.parallel`);
- optimizer states: AdamW 8 (two FP32 moments), 8-bit AdamW 2 (bitsandbytes), SGD with
  momentum 4 (one buffer), plain SGD 0.

Activations in :func:`training_memory` are the model's count from the step's kernel list
(:func:`.workload.saved_activations`): the tensors each forward kernel saves for the
backward pass, as PyTorch's autograd keeps them, for the chosen attention implementation,
dropout, grouped-query attention, gated MLP, head and recomputation, plus the transients
that set the backward's peak. Checked against PyTorch's measured peak on the CPU
(tests/live/test_training_memory_peak.py). :func:`saved_activation_bytes` is the same
view for transformers' GPT-2 and Llama code, with what that code keeps beyond the kernel
list named part by part.

The published closed form below (:func:`transformer_activation_bytes`) is kept as the
paper's arithmetic, for the lessons and as an independent check of the kernel list (which
gives it exactly under the paper's assumptions: eager attention, dropout, no head).
Activations of a transformer layer (Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models", section 4.1) with sequence length s, micro-batch
b, hidden size h, a heads: ``s*b*h*(34 + 5*a*s/h)`` bytes with 16-bit activations and 1-byte
dropout masks. The tensors it counts, kept for the backward pass:

- attention: the input of the Q/K/V projections (sbh), Q and K (2 sbh), the softmax output
  (a s^2 b) and its dropout mask (a s^2 b, 1 byte) and output (a s^2 b), V (sbh), the
  input of the output projection (sbh) and the dropout mask after it (sbh, 1 byte);
- MLP: the input of the first linear layer (sbh), the GeLU input (4 sbh) and output (4 sbh),
  the dropout mask (sbh, 1 byte);
- the inputs of the two LayerNorms (2 sbh).

Here the element size ``p`` and the mask size ``m`` are parameters, which gives
``s*b*h*(16 p + 2 m) + a*s^2*b*(2 p + m)`` (p = 2, m = 1 is the paper's formula). It leaves
out the LayerNorm statistics (2 sb values per LayerNorm), the embeddings and the loss.
PyTorch on the CPU keeps dropout masks in the activation dtype (m = p); fused GPU kernels
keep 1-byte masks. With tensor parallelism t (no sequence parallelism) the paper's
``s*b*h*(10 + 24/t + 5*a*s/(h*t))``: the LayerNorm and projection inputs and the two
post-block masks stay whole on every GPU.

Gradient checkpointing (slides "Activation Re-computation"; Chen et al. 2016, "Training
Deep Nets with Sublinear Memory Cost"): keep only the input of every k-th layer (segments
of k layers) and recompute a segment's activations during its backward pass. After the
forward pass ceil(n/k) inputs are stored; the peak adds one segment's full activations
(its first layer's input is already stored): ``ceil(n/k) X + k A - X``. ``k = sqrt(n)``
gives O(sqrt(n)) memory for one extra forward pass.
"""

from __future__ import annotations

import csv
import functools
import math
import numbers
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, ClassVar

from ._validate import (
    check_bool,
    check_choice,
    check_int,
    check_number,
    describe,
    plain_number,
)
from .errors import InvalidParameter
from .gpus import Gpu
from .gpus import gpu as _gpu
from .parallel import (
    GRADIENT_CONVENTIONS,
    allgather_bytes,
    allreduce_bytes,
    gradient_bytes_per_param,
    pipeline_parallel_comm_bytes,
    reduce_scatter_bytes,
    tensor_parallel_comm_bytes,
)
from .results import ResultMixin

__all__ = [
    "GRADIENT_BYTES",
    "GRADIENT_CONVENTIONS",
    "OPTIMIZERS",
    "OPTIMIZER_BYTES",
    "PRECISIONS",
    "ActivationResult",
    "MemoryResult",
    "Technique",
    "checkpoint_activation_bytes",
    "checkpoint_segment",
    "optimization_techniques",
    "training_memory",
    "transformer_activation_bytes",
]

ACTIVATION_SOURCE = (
    "Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer "
    "Models', section 4.1: s*b*h*(34 + 5*a*s/h) bytes per layer (16-bit)"
)
KERNEL_LIST_SOURCE = (
    "the step's kernel list (core.workload.saved_activations): the tensors each forward "
    "kernel saves for the backward pass, plus the backward's transients"
)

# Bytes per parameter of the weights: (working copy used by forward/backward, FP32 master).
# FP32 training has one copy that is both.
# torch.autocast keeps only the FP32 weights; its 16-bit casts live for one op or are
# saved as activations (PyTorch "Automatic Mixed Precision" docs).
PRECISIONS: dict[str, tuple[int, int]] = {
    "fp32": (4, 0),
    "mixed-fp16": (2, 4),
    "mixed-bf16": (2, 4),
    "fp16-autocast": (4, 0),
    "bf16-autocast": (4, 0),
}
ACTIVATION_ELEMENT_BYTES = {
    "fp32": 4,
    "mixed-fp16": 2,
    "mixed-bf16": 2,
    "fp16-autocast": 2,
    "bf16-autocast": 2,
}
GRADIENT_BYTES = 4
OPTIMIZER_BYTES: dict[str, int] = {
    "sgd": 0,
    "sgd-momentum": 4,
    "adam": 8,
    "adamw": 8,
    "adam8bit": 2,
}
OPTIMIZERS = tuple(OPTIMIZER_BYTES)
CHECKPOINTING = ("none", "every", "sqrt", "every-K")


@dataclass(frozen=True)
class ActivationResult(ResultMixin):
    """Bytes one transformer layer keeps for its backward pass, by group of tensors."""

    seq_len: Any
    batch: Any
    hidden: Any
    heads: Any
    bytes_per_element: float
    mask_bytes: float
    tensor_parallel: int
    sequence_parallel: bool
    layernorm_inputs_bytes: Any
    attention_projections_bytes: Any
    attention_scores_bytes: Any
    mlp_bytes: Any
    dropout_masks_bytes: Any
    total_bytes: Any
    layer_input_bytes: Any
    source: str = ACTIVATION_SOURCE

    _units: ClassVar[dict[str, str]] = {
        k: "iB"
        for k in (
            "layernorm_inputs_bytes",
            "attention_projections_bytes",
            "attention_scores_bytes",
            "mlp_bytes",
            "dropout_masks_bytes",
            "total_bytes",
            "layer_input_bytes",
        )
    }

    def _title(self) -> str:
        return "Activations of one transformer layer"


def transformer_activation_bytes(
    seq_len: Any,
    batch: Any,
    hidden: Any,
    heads: Any,
    *,
    bytes_per_element: float = 2,
    mask_bytes: float = 1,
    dropout: bool = True,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
) -> ActivationResult:
    """Activation bytes of one transformer layer (Korthikanti et al. 2022), vectorised.

    ``transformer_activation_bytes(s, b, h, a).total_bytes == s*b*h*(34 + 5*a*s/h)``.
    ``dropout=False`` drops the masks and the separate dropout output of the attention
    probabilities (the softmax output is then what the value GEMM keeps).
    """
    s = check_int("seq_len", seq_len)
    b = check_int("batch", batch)
    h = check_int("hidden", hidden)
    a = check_int("heads", heads)
    p = check_number("bytes_per_element", bytes_per_element, minimum=0, strict=True)
    m = check_number("mask_bytes", mask_bytes, minimum=0) if dropout else 0.0
    t = check_int("tensor_parallel", tensor_parallel, allow_array=False)
    sequence_parallel = check_bool("sequence_parallel", sequence_parallel)
    sbh = s * b * h
    as2b = a * s * s * b
    # Without sequence parallelism every tensor-parallel rank keeps the LayerNorm inputs,
    # the inputs of the QKV and first MLP projections and the two post-block dropout masks
    # whole; the rest is split t ways (Korthikanti et al. 2022, section 4.2.2).
    rep = t if sequence_parallel else 1
    layernorm = 2 * sbh * p / rep
    qkv_input = sbh * p / rep
    mlp_input = sbh * p / rep
    q_k_v = 3 * sbh * p / t
    out_proj_input = sbh * p / t
    gelu_in_out = 8 * sbh * p / t
    # softmax output, and the dropout output the value GEMM reads (the same tensor
    # without dropout)
    scores = (2 if dropout else 1) * as2b * p / t
    masks = 2 * sbh * m / rep + as2b * m / t
    attention = qkv_input + q_k_v + out_proj_input
    mlp = mlp_input + gelu_in_out
    total = layernorm + attention + scores + mlp + masks
    return ActivationResult(
        seq_len=s,
        batch=b,
        hidden=h,
        heads=a,
        bytes_per_element=p,
        mask_bytes=m,
        tensor_parallel=t,
        sequence_parallel=bool(sequence_parallel),
        layernorm_inputs_bytes=layernorm,
        attention_projections_bytes=attention,
        attention_scores_bytes=scores,
        mlp_bytes=mlp,
        dropout_masks_bytes=masks,
        total_bytes=total,
        layer_input_bytes=sbh * p / rep,
    )


def checkpoint_segment(layers: int, checkpointing: Any) -> int | None:
    """Layers per checkpointed segment: None (no checkpointing), 1, round(sqrt(n)) or k.

    ``checkpointing``: 'none', 'every' (every layer), 'sqrt' (segments of about sqrt(n)
    layers, Chen et al. 2016), 'every-K' or an int K (a checkpoint every K layers).
    """
    n = check_int("layers", layers, allow_array=False)
    if isinstance(checkpointing, bool):
        raise InvalidParameter(
            f"'checkpointing' must be one of {', '.join(CHECKPOINTING)} (got {describe(checkpointing)})"
        )
    if isinstance(checkpointing, int):
        k = checkpointing
    elif isinstance(checkpointing, str) and checkpointing.strip().lower().startswith("every-"):
        text = checkpointing.strip()[6:]
        if not text.isdigit():
            raise InvalidParameter(
                f"'checkpointing' must be one of {', '.join(CHECKPOINTING)} with K a "
                f"positive integer (got {describe(checkpointing)})"
            )
        k = int(text)
    else:
        mode = check_choice("checkpointing", checkpointing, ("none", "every", "sqrt"))
        if mode == "none":
            return None
        return 1 if mode == "every" else max(1, round(math.sqrt(n)))
    if not 1 <= k <= n:
        raise InvalidParameter(
            f"'checkpointing' every-K must have K between 1 and the {n} layers (got {k})"
        )
    return k


def checkpoint_activation_bytes(
    layers: int, layer_bytes: float, input_bytes: float, checkpointing: Any = "none"
) -> tuple[float, float, int]:
    """(bytes stored after the forward pass, peak bytes, layers recomputed) for n layers.

    No checkpointing: n A stored, peak n A. Segments of k layers: ceil(n/k) X stored,
    peak ceil(n/k) X + k A - X, and every layer is run forward once more.
    """
    from .workload import checkpointed_bytes

    return checkpointed_bytes(
        layers, layer_bytes, input_bytes, checkpoint_segment(layers, checkpointing)
    )


@dataclass(frozen=True)
class MemoryResult(ResultMixin):
    """GPU memory of one training configuration.

    ``weights_bytes``, ``gradients_bytes``, ``optimizer_bytes``, ``activations_bytes`` and
    their sum ``total_bytes`` are for one whole model replica without any splitting
    (activations at one micro-batch, peak of the backward pass); ``per_gpu_bytes`` is what
    the busiest GPU holds once ZeRO, tensor and pipeline parallelism have split it, and
    ``fits`` compares it with the GPU's memory (None without a GPU). Activations are at
    the backward pass's peak (the saved tensors plus the transients that set it);
    ``activations_after_forward_bytes`` and ``per_gpu_activations_after_forward_bytes``
    are the saved tensors alone, when the forward pass ends. Communication fields
    are bytes one GPU sends per optimizer step (None where the layer sizes are unknown).
    """

    params: float
    optimizer: str
    precision: str
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    total_bytes: float
    per_gpu_bytes: float
    fits: bool | None
    gpu: str | None
    gpu_memory_bytes: int | None
    weights_bytes_per_param: int
    gradients_bytes_per_param: int
    optimizer_bytes_per_param: int
    model_state_bytes: float
    per_gpu_weights_bytes: float
    per_gpu_gradients_bytes: float
    per_gpu_optimizer_bytes: float
    per_gpu_activations_bytes: float
    activations_included: bool
    activations_per_layer_bytes: float | None
    activations_after_forward_bytes: float | None
    per_gpu_activations_after_forward_bytes: float | None
    checkpointing: str
    checkpoint_segment_layers: int | None
    recomputed_layers: int
    micro_batch: int | None
    effective_batch: int | None
    accumulation_steps: int
    data_parallel: int
    zero: int
    tensor_parallel: int
    pipeline_parallel: int
    gpus: int
    communication_bytes_per_step: float | None
    data_parallel_comm_bytes: float
    tensor_parallel_comm_bytes: float | None
    pipeline_parallel_comm_bytes: float | None
    activation_formula: str
    convention: str = "fp32-grads"

    _units: ClassVar[dict[str, str]] = {
        k: "iB"
        for k in (
            "weights_bytes",
            "gradients_bytes",
            "optimizer_bytes",
            "activations_bytes",
            "total_bytes",
            "per_gpu_bytes",
            "model_state_bytes",
            "per_gpu_weights_bytes",
            "per_gpu_gradients_bytes",
            "per_gpu_optimizer_bytes",
            "per_gpu_activations_bytes",
            "activations_per_layer_bytes",
            "activations_after_forward_bytes",
            "per_gpu_activations_after_forward_bytes",
            "communication_bytes_per_step",
            "data_parallel_comm_bytes",
            "tensor_parallel_comm_bytes",
            "pipeline_parallel_comm_bytes",
            "gpu_memory_bytes",
        )
    }
    _hidden: ClassVar[tuple[str, ...]] = ("activation_formula",)

    def _title(self) -> str:
        return f"Training memory: {self.params:,.0f} parameters, {self.precision}, {self.optimizer}"


def _optional_dims(**dims: Any) -> dict[str, int] | None:
    given = {k: v for k, v in dims.items() if v is not None}
    if not given:
        return None
    for k, v in given.items():  # a bad value given is named before a value missing
        check_int(k, v, allow_array=False)
    missing = [k for k, v in dims.items() if v is None]
    if missing:
        raise InvalidParameter(
            f"'{missing[0]}' must be a positive integer when {', '.join(given)} "
            f"{'is' if len(given) == 1 else 'are'} given, to count activations (got None)"
        )
    return {k: check_int(k, v, allow_array=False) for k, v in dims.items()}


_COUNT_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def parse_count(value: Any, name: str = "params") -> float:
    """A count as people write it: ``7e9``, ``"7B"``, ``"350M"``, ``"1.5 T"``, ``"125_000_000"``.

    Only the spelling is checked here; the caller checks the range.
    """
    value = plain_number(value)
    count: float | None = None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            count = float(value)
        except OverflowError:  # an int of hundreds of digits
            count = math.inf
    elif isinstance(value, str) and len(value) <= 100:
        text = value.strip().lower().replace("_", "").replace(",", "")
        match = re.fullmatch(r"([-+]?[0-9.]+(?:e[-+]?[0-9]+)?)\s*([kmbgt]?)", text)
        if match:
            try:
                count = float(match.group(1)) * _COUNT_SUFFIX[match.group(2)]
            except ValueError:
                pass
    if count is not None and math.isfinite(count):
        return count
    raise InvalidParameter(
        f"'{name}' must be a positive number such as 7e9, 7B or 350M (got {describe(value)})"
    )


def training_memory(
    params: float,
    *,
    optimizer: str = "adamw",
    precision: str = "mixed-fp16",
    layers: int | None = None,
    hidden: int | None = None,
    seq_len: int | None = None,
    batch: int | None = None,
    heads: int | None = None,
    checkpointing: Any = "none",
    accumulation_steps: int = 1,
    data_parallel: int = 1,
    zero: int = 0,
    tensor_parallel: int = 1,
    pipeline_parallel: int = 1,
    sequence_parallel: bool = False,
    gpu: str | Gpu | None = None,
    convention: str = "fp32-grads",
    attention: str = "eager",
    dropout: bool = True,
    kv_heads: int | None = None,
    ffn: int | None = None,
    gated_mlp: bool = False,
    vocab: int | None = None,
) -> MemoryResult:
    """Bytes of a training run, whole and per GPU (see the module docstring for sources).

    ``batch`` is the number of samples per optimizer step on one model replica; with
    ``accumulation_steps`` = k it runs as k micro-batches of batch / k (k must divide it),
    so activations shrink k-fold while the effective batch (batch x data_parallel) stays.
    Activations are counted when layers, hidden, seq_len, batch and heads are all given.

    ZeRO stages partition, over the ``data_parallel`` ranks: 1 the optimizer states and
    the FP32 master weights (ZeRO counts both as optimizer state), 2 also the gradients,
    3 also the working weights. Tensor and pipeline parallelism split the model states
    evenly; pipeline stages hold layers / pipeline_parallel layers and, with the 1F1B
    schedule, up to pipeline_parallel micro-batches of activations (the first stage).

    ``convention`` names the gradient bytes: ``'fp32-grads'`` (4 bytes; the slides and
    Megatron-LM with BF16 parameters: 18 bytes per parameter with mixed AdamW) or
    ``'zero-paper'`` (16-bit gradients: 16 bytes per parameter, the ZeRO paper's Figure 1).
    ``precision='bf16-autocast'`` (or ``'fp16-autocast'``) is ``torch.autocast``'s
    convention: FP32 weights and gradients only (4 + 4 bytes), 16-bit activations.

    Activations are what the kernel list of the step (:func:`.workload.workload`) saves for
    the backward pass: ``attention`` 'eager' keeps the s x s probabilities, 'sdpa' /
    'flash2' / 'flash1' keep Q, K, V, O and the row log-sum-exp only; ``dropout`` adds the
    masks; ``kv_heads`` (grouped-query attention), ``ffn`` (4 x hidden by default) and
    ``gated_mlp`` (SwiGLU) shape the layer. ``checkpointing='selective'`` recomputes attention's s x s tensors (Korthikanti
    et al. 2022) and keeps the rest. ``vocab`` adds the final norm, the LM head's
    input, the loss's FP32 log-probabilities and, at the loss backward, two FP32
    logits-sized tensors; without it the count stops at the last layer, as Korthikanti et
    al. (2022) do (with eager attention and dropout the kernel list then gives their
    ``s*b*h*(34 + 5*a*s/h)`` per layer). ZeRO-3 adds the gathered largest layer.
    """
    psi = check_number(
        "params", parse_count(params) if isinstance(params, str) else params, minimum=0, strict=True
    )
    opt = check_choice("optimizer", optimizer, OPTIMIZERS)
    prec = check_choice("precision", precision, tuple(PRECISIONS))
    accum = check_int("accumulation_steps", accumulation_steps, allow_array=False)
    dp = check_int("data_parallel", data_parallel, allow_array=False)
    stage = check_int("zero", zero, minimum=0, maximum=3, allow_array=False)
    tp = check_int("tensor_parallel", tensor_parallel, allow_array=False)
    pp = check_int("pipeline_parallel", pipeline_parallel, allow_array=False)
    dims = _optional_dims(layers=layers, hidden=hidden, seq_len=seq_len, batch=batch, heads=heads)
    # selective recomputation (Korthikanti et al. 2022) keeps every layer but not its s x s
    # tensors; the segment arithmetic then sees no checkpoints
    selective = isinstance(checkpointing, str) and checkpointing.strip().lower() == "selective"
    ckpt = "none" if selective else checkpointing
    attention = check_choice("attention", attention, ("eager", "sdpa", "flash2", "flash1"))
    dropout = check_bool("dropout", dropout)
    gated_mlp = check_bool("gated_mlp", gated_mlp)
    for name, value in (("kv_heads", kv_heads), ("ffn", ffn), ("vocab", vocab)):
        if value is not None:
            check_int(name, value, allow_array=False, maximum=1 << 24)
    sequence_parallel = check_bool("sequence_parallel", sequence_parallel)
    g = _gpu(gpu) if gpu is not None else None

    if dims is not None:
        if dims["hidden"] % dims["heads"]:
            raise InvalidParameter(
                f"'hidden' must be a multiple of heads ({dims['heads']}) (got {dims['hidden']})"
            )
        if dims["heads"] % tp:
            raise InvalidParameter(
                f"'tensor_parallel' must divide heads ({dims['heads']}) (got {tp})"
            )
        if dims["layers"] % pp:
            raise InvalidParameter(
                f"'pipeline_parallel' must divide layers ({dims['layers']}) (got {pp})"
            )
        if dims["batch"] * dims["seq_len"] > _MAX_TOKENS:
            raise InvalidParameter(
                f"'batch' x 'seq_len' must be at most {_MAX_TOKENS:,} tokens "
                f"(got {dims['batch'] * dims['seq_len']:,})"
            )
        if dims["batch"] % accum:
            raise InvalidParameter(
                f"'accumulation_steps' must divide batch ({dims['batch']}) (got {accum})"
            )
    else:
        checkpoint_segment(10**9, ckpt)  # validates the spelling

    work_b, master_b = PRECISIONS[prec]
    conv = check_choice("convention", convention, tuple(GRADIENT_CONVENTIONS))
    grad_b = int(gradient_bytes_per_param(conv, work_b))
    opt_b = OPTIMIZER_BYTES[opt]
    weights = (work_b + master_b) * psi
    grads = grad_b * psi
    states = opt_b * psi

    # Model states per GPU: tensor x pipeline split, then ZeRO over the data-parallel ranks.
    split = tp * pp
    local = psi / split
    work = work_b * local
    master = master_b * local
    g_loc = grad_b * local
    o_loc = opt_b * local
    if stage >= 1:
        master /= dp
        o_loc /= dp
    if stage >= 2:
        g_loc /= dp
    if stage >= 3:
        work /= dp
    per_w, per_g, per_o = work + master, g_loc, o_loc

    # Activations: views of the step's kernel list
    act_elem = ACTIVATION_ELEMENT_BYTES[prec]
    mode = checkpointing if isinstance(checkpointing, str) else f"every-{checkpointing}"
    mode = "selective" if selective else mode
    if dims is not None:
        n_layers = dims["layers"]
        micro = dims["batch"] // accum
        seg = checkpoint_segment(n_layers, ckpt)
        stage_layers = n_layers // pp
        shape = _layer_shape(dims, kv_heads, ffn, gated_mlp, vocab, attention, dropout, prec,
                             "selective" if selective else "none")  # fmt: skip
        whole_stored, activations, whole_layer, recomputed = _kernel_list_activations(
            shape, micro, 1, 1, 1, False, 1, 0, n_layers, ckpt
        )
        stored_all: float | None = whole_stored
        per_layer: float | None = whole_layer
        stage_stored, per_act, _, _ = _kernel_list_activations(
            shape, micro, accum, tp, pp, sequence_parallel, dp, stage, stage_layers,
            _stage_checkpointing(ckpt, seg, stage_layers),
        )  # fmt: skip
        per_stored: float | None = stage_stored
        boundary = dims["seq_len"] * micro * dims["hidden"] * act_elem
        tp_comm: float | None = tensor_parallel_comm_bytes(
            stage_layers, boundary, tp, micro_batches=accum, recompute=seg is not None
        )
        pp_comm: float | None = pipeline_parallel_comm_bytes(boundary, pp, micro_batches=accum)
        effective: int | None = dims["batch"] * dp
        micro_out: int | None = micro
    else:
        activations = per_act = 0.0
        stored_all = per_stored = None
        per_layer = None
        seg = None
        recomputed = 0
        # without the layer sizes the activation traffic is unknown
        tp_comm = 0.0 if tp == 1 else None
        pp_comm = 0.0 if pp == 1 else None
        effective = micro_out = None

    # Data-parallel traffic (ring collectives over dp ranks) for this GPU's model shard.
    # Collectives move elements of the working precision (FP16/BF16 gradients and weights
    # in mixed precision), as in the ZeRO paper's analysis (section 7: 2 Psi for plain data
    # parallelism and stages 1-2, 3 Psi for stage 3). PyTorch DDP under AMP all-reduces FP32
    # gradients instead: twice these bytes for stage 0.
    grad_shard = work_b * local
    weight_shard = work_b * local
    if dp == 1:
        dp_comm = 0.0
    elif stage == 0 or stage == 1:
        dp_comm = (
            allreduce_bytes(grad_shard, dp)
            if stage == 0
            else reduce_scatter_bytes(grad_shard, dp) + allgather_bytes(weight_shard, dp)
        )
    elif stage == 2:
        # partitioned gradients are reduce-scattered after every micro-batch
        dp_comm = accum * reduce_scatter_bytes(grad_shard, dp) + allgather_bytes(weight_shard, dp)
    else:
        # weights gathered for every micro-batch's forward and backward pass
        dp_comm = accum * (
            reduce_scatter_bytes(grad_shard, dp) + 2 * allgather_bytes(weight_shard, dp)
        )
    comm = None if tp_comm is None or pp_comm is None else dp_comm + tp_comm + pp_comm

    per_gpu = per_w + per_g + per_o + per_act
    return MemoryResult(
        params=psi,
        optimizer=opt,
        precision=prec,
        weights_bytes=weights,
        gradients_bytes=grads,
        optimizer_bytes=states,
        activations_bytes=float(activations),
        total_bytes=weights + grads + states + float(activations),
        per_gpu_bytes=float(per_gpu),
        fits=None if g is None else bool(per_gpu <= g.memory_bytes),
        gpu=None if g is None else g.name,
        gpu_memory_bytes=None if g is None else g.memory_bytes,
        weights_bytes_per_param=work_b + master_b,
        gradients_bytes_per_param=grad_b,
        optimizer_bytes_per_param=opt_b,
        model_state_bytes=weights + grads + states,
        per_gpu_weights_bytes=per_w,
        per_gpu_gradients_bytes=per_g,
        per_gpu_optimizer_bytes=per_o,
        per_gpu_activations_bytes=float(per_act),
        activations_included=dims is not None,
        activations_per_layer_bytes=None if per_layer is None else float(per_layer),
        activations_after_forward_bytes=None if stored_all is None else float(stored_all),
        per_gpu_activations_after_forward_bytes=None if per_stored is None else float(per_stored),
        checkpointing=mode if dims is not None else str(checkpointing),
        checkpoint_segment_layers=seg,
        recomputed_layers=recomputed,
        micro_batch=micro_out,
        effective_batch=effective,
        accumulation_steps=accum,
        data_parallel=dp,
        zero=stage,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        gpus=dp * tp * pp,
        communication_bytes_per_step=comm,
        data_parallel_comm_bytes=float(dp_comm),
        tensor_parallel_comm_bytes=tp_comm,
        pipeline_parallel_comm_bytes=pp_comm,
        activation_formula=KERNEL_LIST_SOURCE,
        convention=conv,
    )


# Tokens of one step the kernel list accepts (core.workload's limit).
_MAX_TOKENS = 1 << 26

# The kernel list's precision for each of training_memory's precisions.
_KERNEL_PRECISION = {
    "fp32": "fp32",
    "mixed-fp16": "fp16",
    "mixed-bf16": "bf16",
    "fp16-autocast": "fp16",
    "bf16-autocast": "bf16",
}


@dataclass(frozen=True)
class _Shape:
    """A transformer described by training_memory's arguments, for the kernel list."""

    spec: Any
    seq_len: int
    precision: str
    attention: str
    dropout: bool
    with_head: bool
    autocast: bool
    recompute: str


def _layer_shape(dims: dict[str, int], kv_heads: int | None, ffn: int | None,
                 gated_mlp: bool, vocab: int | None, attention: str, dropout: bool,
                 precision: str, recompute: str) -> _Shape:  # fmt: skip
    from .workload import LlmSpec

    h, a = dims["hidden"], dims["heads"]
    spec = LlmSpec(
        name="training_memory",
        layers=dims["layers"],
        hidden=h,
        heads=a,
        kv_heads=a if kv_heads is None else kv_heads,
        head_dim=h // a,
        ffn=4 * h if ffn is None else ffn,
        vocab=1 if vocab is None else vocab,
        gated_mlp=gated_mlp,
        rotary=False,  # rotary embeddings save nothing
    )
    return _Shape(spec, dims["seq_len"], _KERNEL_PRECISION[precision], attention, dropout,
                  vocab is not None, precision.endswith("-autocast"), recompute)  # fmt: skip


def _kernel_list_activations(
    shape: _Shape, micro: int, accum: int, tp: int, pp: int, sp: bool, dp: int, zero: int,
    stage_layers: int, checkpointing: Any,
) -> tuple[float, float, float, int]:  # fmt: skip
    """(held after the forward pass, peak, one layer's bytes, layers recomputed) on one
    GPU: the activation view of the step's kernel list (:func:`.workload.saved_activations`)
    with checkpointed segments as ``checkpointing`` says."""
    from .workload import saved_activations, workload

    w = workload(shape.spec, phase="training", batch=micro, seq=shape.seq_len,
                 precision=shape.precision, attention=shape.attention, dropout=shape.dropout,
                 micro_batches=accum, tensor_parallel=tp, sequence_parallel=sp,
                 pipeline_parallel=pp, data_parallel=dp, zero=zero,
                 autocast=shape.autocast, recompute=shape.recompute)  # fmt: skip
    v = saved_activations(w, segment=checkpoint_segment(stage_layers, checkpointing),
                          head=shape.with_head)  # fmt: skip
    return v.held_bytes, v.held_bytes + v.transient_bytes, v.per_layer_bytes, v.recomputed_layers


def _stage_checkpointing(checkpointing: Any, seg: int | None, stage_layers: int) -> Any:
    """The whole model's choice, applied to one pipeline stage's layers."""
    if seg is None:
        return "none"
    if checkpointing == "sqrt":
        return "sqrt"
    return min(seg, stage_layers)


@dataclass(frozen=True)
class Technique:
    """One row of the slides' optimization techniques table (speed vs memory)."""

    technique: str
    speed: str
    memory: str
    mechanism: str
    cost: str
    kit_function: str
    source: str

    @property
    def saves_memory(self) -> bool:
        return self.memory == "yes"

    @property
    def speeds_up(self) -> bool:
        return self.speed == "yes"


@functools.lru_cache(maxsize=1)
def optimization_techniques() -> tuple[Technique, ...]:
    """The techniques table from ``data/optimization_techniques.csv``."""
    text = (
        resources.files("dlperf_widgets.core.data")
        .joinpath("optimization_techniques.csv")
        .read_text("utf-8")
    )
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return tuple(
        Technique(**{k: (v or "").strip() for k, v in row.items()}) for row in csv.DictReader(lines)
    )


# -- saved activations of real transformers models ------------------------------------------

__all__ += ["SavedActivations", "recompute_activation_bytes", "saved_activation_bytes"]

FAMILIES = ("gpt2", "llama")
ATTENTIONS = ("eager", "sdpa")
RECOMPUTE = ("none", "selective", "full")
AUTOCAST = ("fp32", "bf16-autocast", "fp16-autocast")


def recompute_activation_bytes(
    seq_len: int,
    batch: int,
    hidden: int,
    heads: int,
    *,
    tensor_parallel: int = 1,
    recompute: str = "none",
) -> float:
    """One layer's activation bytes (16-bit) by recomputation strategy, Korthikanti et al.
    2022, Table 2 (tensor parallelism t, no sequence parallelism): none
    ``sbh(10 + 24/t + 5as/(ht))``, selective (the attention core recomputed)
    ``sbh(10 + 24/t)``, full (only the layer input kept) ``2sbh``.

    >>> recompute_activation_bytes(2048, 1, 12288, 96, tensor_parallel=8,
    ...                            recompute="selective") / (2048 * 12288)
    13.0
    """
    s = check_int("seq_len", seq_len, allow_array=False)
    b = check_int("batch", batch, allow_array=False)
    h = check_int("hidden", hidden, allow_array=False)
    a = check_int("heads", heads, allow_array=False)
    t = check_int("tensor_parallel", tensor_parallel, allow_array=False)
    mode = check_choice("recompute", recompute, RECOMPUTE)
    sbh = s * b * h
    if mode == "full":
        return 2.0 * sbh
    per = 10 + 24 / t + (5 * a * s / (h * t) if mode == "none" else 0.0)
    return float(sbh * per)


@dataclass(frozen=True)
class SavedActivations(ResultMixin):
    """Bytes autograd keeps for the backward pass of a transformers-style model.

    ``block_bytes`` is one block (``block_parts`` splits it); ``stored_bytes`` everything
    held when the forward pass ends; ``peak_bytes`` adds, under full recomputation, the
    one block whose activations are rebuilt during its backward pass.
    """

    family: str
    attention: str
    precision: str
    recompute: str
    device: str
    block_bytes: float
    block_parts: dict[str, float]
    blocks_bytes: float
    embeddings_bytes: float
    final_norm_bytes: float
    head_bytes: float
    loss_bytes: float
    stored_bytes: float
    peak_bytes: float

    _units: ClassVar[dict[str, str]] = {
        k: "iB"
        for k in (
            "block_bytes",
            "blocks_bytes",
            "embeddings_bytes",
            "final_norm_bytes",
            "head_bytes",
            "loss_bytes",
            "stored_bytes",
            "peak_bytes",
        )
    }
    _hidden: ClassVar[tuple[str, ...]] = ("block_parts",)

    def _title(self) -> str:
        return (
            f"Saved activations: {self.family}, {self.attention} attention, "
            f"{self.precision}, recompute {self.recompute}"
        )


def saved_activation_bytes(
    seq_len: int,
    batch: int,
    hidden: int,
    heads: int,
    *,
    layers: int = 1,
    vocab: int | None = None,
    ffn: int | None = None,
    family: str = "gpt2",
    attention: str = "eager",
    precision: str = "fp32",
    dropout: bool = True,
    device: str = "gpu",
    recompute: str = "none",
    gelu_tensors: int | None = None,
) -> SavedActivations:
    """The tensors PyTorch keeps for backward in a GPT-2 or Llama model, as transformers
    implements them, in bytes (checked against ``saved_tensors_hooks`` measurements).

    A view of the step's kernel list (:func:`.workload.workload` for the family's shape,
    :func:`.workload.saved_activations`' per-kernel saved tensors), grouped by part, plus
    what transformers' code keeps beyond the kernel list's kernels (each measured on the
    CPU with PyTorch 2 and transformers 4-5). With N = seq_len x batch tokens, S = heads x
    seq_len^2 x batch scores and P the activations' element size (4 in FP32, 2 under
    autocast):

    - norms: LayerNorm also keeps its mean and 1/std (2 FP32 values per token); Llama's
      RMSNorm, computed in FP32, its normalized FP32 output and 1/rms per token;
    - projection inputs: under autocast Llama's separate q, k, v and gate, up linear layers
      each keep their own 16-bit copy of the normed input (3 more than the kernel list's
      fused QKV and gate+up GEMMs);
    - attention: ``torch.autocast`` runs softmax in FP32, so its saved output is FP32
      ((4 - P) S more), and without dropout the P V product keeps its own 16-bit copy (P S);
      GPT-2 at batch 1 keeps its fused QKV output whole through a view (2 N h P more); the
      CPU's fused attention keeps contiguous copies of two of GPT-2's Q, K, V (2 N h P);
    - MLP: GPT-2's tanh GELU written as element-wise ops keeps ``gelu_tensors`` (4; 1 for a
      fused GELU) ffn-sized tensors where the kernel list's GELU keeps one;
    - dropout masks: 1 byte per element on a GPU (the kernel list's), the dropped tensor's
      element size on the CPU (PyTorch's CPU dropout multiplies by a float mask);
    - Llama's rotary cos and sin tables (2 x seq_len x head size, FP32).

    Around the blocks: the token ids (8 bytes each) and GPT-2's embedding dropout mask
    (the embedding is not a kernel of the list), the final norm, the LM head's input (and
    16-bit weight copy), and the loss's FP32 log-softmax over the shifted (seq_len - 1) x
    batch positions with its int64 labels. ``recompute``: 'selective' drops the S-sized
    tensors (the attention core is recomputed, Korthikanti et al. 2022); 'full' keeps each
    block's input only, and the peak adds one block.
    """
    s = check_int("seq_len", seq_len, allow_array=False)
    b = check_int("batch", batch, allow_array=False)
    h = check_int("hidden", hidden, allow_array=False)
    a = check_int("heads", heads, allow_array=False)
    n_layers = check_int("layers", layers, allow_array=False)
    fam = check_choice("family", family, FAMILIES)
    attn = check_choice("attention", attention, ATTENTIONS)
    prec = check_choice("precision", precision, AUTOCAST)
    dev = check_choice("device", device, ("gpu", "cpu"))
    mode = check_choice("recompute", recompute, RECOMPUTE)
    if not isinstance(dropout, bool):
        raise InvalidParameter(f"'dropout' must be True or False (got {describe(dropout)})")
    if h % a:
        raise InvalidParameter(f"'hidden' must be a multiple of heads ({a}) (got {h})")
    default_ffn = 4 * h if fam == "gpt2" else None
    if ffn is None and default_ffn is None:
        raise InvalidParameter("'ffn' must be given for family 'llama' (got None)")
    f = check_int("ffn", ffn if ffn is not None else default_ffn, allow_array=False)
    v = check_int("vocab", vocab, allow_array=False) if vocab is not None else None
    g = check_int("gelu_tensors", 4 if gelu_tensors is None else gelu_tensors, allow_array=False)
    drop = dropout and fam == "gpt2"  # Llama has no dropout by default
    if drop and attn == "sdpa":
        raise InvalidParameter(
            "'attention' must be 'eager' when dropout is on (got 'sdpa': PyTorch's CPU "
            "fused attention has no dropout and falls back to the eager tensors)"
        )
    from .workload import LlmSpec, dropout_mask_elements, workload

    autocast = prec != "fp32"
    p = 2.0 if autocast else 4.0
    fp32 = 4.0
    n = s * b
    nh = n * h
    gpt2 = fam == "gpt2"
    spec = LlmSpec(name=fam, layers=n_layers, hidden=h, heads=a, kv_heads=a, head_dim=h // a,
                   ffn=f, vocab=1 if v is None else v, gated_mlp=not gpt2,
                   tied_embeddings=gpt2, rotary=not gpt2)  # fmt: skip
    w = workload(spec, phase="training", batch=b, seq=s,
                 precision=_KERNEL_PRECISION[prec], attention="eager" if attn == "eager" else "flash2",
                 dropout=drop, autocast=autocast,
                 recompute="selective" if mode == "selective" else "none")  # fmt: skip
    forward = [k for k in w.kernels if k.pass_ == "forward"]
    parts = {part: 0.0 for part in (*_SAVED_PARTS, "rotary")}
    for k in forward:
        if k.path.startswith("layers"):
            parts[_saved_part(k.name)] += k.saved_bytes

    def cpu_mask(kernel: str, element: float) -> float:
        """Bytes a CPU mask adds to the kernel list's 1-byte masks of ``kernel``."""
        return 0.0 if dev == "gpu" else dropout_mask_elements(w, kernel) * (element - 1.0)

    # what transformers' implementation keeps beyond the kernel list (see the docstring)
    norm_extra = 2 * n * fp32 if gpt2 else nh * fp32 + n * fp32
    parts["norms"] += 2 * norm_extra
    if not gpt2 and autocast:
        parts["projection_inputs"] += 3 * nh * p
    if not gpt2:
        parts["rotary"] = 2 * s * (h // a) * fp32
    if attn == "eager":
        if gpt2 and b == 1:
            parts["attention"] += 2 * nh * p
        if mode != "selective":
            scores = float(a) * s * s * b
            # transformers' eager attention upcasts softmax to FP32 itself; under autocast the
            # kernel list already holds the FP32 probabilities and their 16-bit cast
            if not autocast:
                parts["attention_scores"] += (fp32 - p) * scores
            # transformers casts the probabilities back before dropout: a CPU mask in 16 bits
            parts["attention_scores"] += cpu_mask("attention dropout", p)
    elif gpt2 and dev == "cpu":
        parts["attention"] += 2 * nh * p
    if gpt2:
        parts["mlp"] += (g - 1) * n * f * p
    parts["dropout_masks"] += cpu_mask("hidden dropout", p)
    block = float(sum(parts.values()))
    block_input = nh * fp32  # the FP32 residual stream
    stored_block = block_input if mode == "full" else block
    around: dict[str, float] = {}
    for k in forward:
        if not k.path.startswith("layers"):
            part = _saved_part(k.name)
            around[part] = around.get(part, 0.0) + k.saved_bytes
    embeddings = n * 8.0 + (nh * (1.0 if dev == "gpu" else fp32) if drop else 0.0)
    final_norm = around.get("final_norm", 0.0) + norm_extra
    head = around.get("head", 0.0) if v else nh * p
    loss = around.get("loss", 0.0) * (s - 1) / s + n * 8.0 if v else 0.0
    stored = n_layers * stored_block + embeddings + final_norm + head + loss
    peak = stored + (block - block_input if mode == "full" else 0.0)
    return SavedActivations(
        family=fam,
        attention=attn,
        precision=prec,
        recompute=mode,
        device=dev,
        block_bytes=float(stored_block),
        block_parts={k: float(x) for k, x in parts.items()},
        blocks_bytes=float(n_layers * stored_block),
        embeddings_bytes=float(embeddings),
        final_norm_bytes=float(final_norm),
        head_bytes=float(head),
        loss_bytes=float(loss),
        stored_bytes=float(stored),
        peak_bytes=float(peak),
    )


# Parts of a block's saved tensors, by the kernel of the step's kernel list that saves them.
_SAVED_PARTS = (
    "norms",
    "projection_inputs",
    "weight_copies",
    "attention",
    "attention_scores",
    "mlp",
    "dropout_masks",
)
_PART_OF_KERNEL = {
    "attn_norm": "norms",
    "mlp_norm": "norms",
    "qkv_proj": "projection_inputs",
    "up_proj": "projection_inputs",
    "gate_up_proj": "projection_inputs",
    "down_proj": "projection_inputs",
    "scores Q K^T": "attention",
    "context P V": "attention",
    "o_proj": "attention",
    "flash1": "attention",
    "flash2": "attention",
    "softmax": "attention_scores",
    "attention dropout": "attention_scores",
    "gelu": "mlp",
    "silu x up": "mlp",
    "hidden dropout": "dropout_masks",
    "final_norm": "final_norm",
    "lm_head": "head",
    "cross-entropy": "loss",
}


def _saved_part(kernel: str) -> str:
    if kernel.endswith(" weight cast"):
        return "head" if kernel.startswith("lm_head") else "weight_copies"
    return _PART_OF_KERNEL.get(kernel, "attention")
