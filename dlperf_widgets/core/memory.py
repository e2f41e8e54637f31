"""Training memory: weights, gradients, optimizer states and activations, per GPU.

Bytes per parameter (slides "NN Performance optimization", "GPU memory"):

- weights: 4 (FP32 training) or 6 (mixed precision: an FP32 master copy plus a 16-bit
  copy for the forward and backward passes);
- gradients: 4 ("gradients are always kept in fp32");
- optimizer states: AdamW 8 (two FP32 moments), 8-bit AdamW 2 (bitsandbytes), SGD with
  momentum 4 (one buffer), plain SGD 0.

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

from ._validate import check_bool, check_choice, check_int, check_number, describe
from .errors import InvalidParameter
from .gpus import Gpu
from .gpus import gpu as _gpu
from .parallel import (
    allgather_bytes,
    allreduce_bytes,
    pipeline_parallel_comm_bytes,
    reduce_scatter_bytes,
    tensor_parallel_comm_bytes,
)
from .results import ResultMixin

__all__ = [
    "GRADIENT_BYTES",
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

# Bytes per parameter of the weights: (working copy used by forward/backward, FP32 master).
# FP32 training has one copy that is both.
PRECISIONS: dict[str, tuple[int, int]] = {
    "fp32": (4, 0),
    "mixed-fp16": (2, 4),
    "mixed-bf16": (2, 4),
}
ACTIVATION_ELEMENT_BYTES = {"fp32": 4, "mixed-fp16": 2, "mixed-bf16": 2}
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
    k = checkpoint_segment(layers, checkpointing)
    if k is None:
        return layers * layer_bytes, layers * layer_bytes, 0
    stored = math.ceil(layers / k) * input_bytes
    return stored, stored + k * layer_bytes - input_bytes, layers


@dataclass(frozen=True)
class MemoryResult(ResultMixin):
    """GPU memory of one training configuration.

    ``weights_bytes``, ``gradients_bytes``, ``optimizer_bytes``, ``activations_bytes`` and
    their sum ``total_bytes`` are for one whole model replica without any splitting
    (activations at one micro-batch, peak of the backward pass); ``per_gpu_bytes`` is what
    the busiest GPU holds once ZeRO, tensor and pipeline parallelism have split it, and
    ``fits`` compares it with the GPU's memory (None without a GPU). Communication fields
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
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        text = value.strip().lower().replace("_", "").replace(",", "")
        match = re.fullmatch(r"([-+]?[0-9.]+(?:e[-+]?[0-9]+)?)\s*([kmbgt]?)", text)
        if match:
            try:
                return float(match.group(1)) * _COUNT_SUFFIX[match.group(2)]
            except ValueError:
                pass
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
        if dims["batch"] % accum:
            raise InvalidParameter(
                f"'accumulation_steps' must divide batch ({dims['batch']}) (got {accum})"
            )
    else:
        checkpoint_segment(10**9, checkpointing)  # validates the spelling

    work_b, master_b = PRECISIONS[prec]
    opt_b = OPTIMIZER_BYTES[opt]
    weights = (work_b + master_b) * psi
    grads = GRADIENT_BYTES * psi
    states = opt_b * psi

    # Model states per GPU: tensor x pipeline split, then ZeRO over the data-parallel ranks.
    split = tp * pp
    local = psi / split
    work = work_b * local
    master = master_b * local
    g_loc = GRADIENT_BYTES * local
    o_loc = opt_b * local
    if stage >= 1:
        master /= dp
        o_loc /= dp
    if stage >= 2:
        g_loc /= dp
    if stage >= 3:
        work /= dp
    per_w, per_g, per_o = work + master, g_loc, o_loc

    # Activations
    act_elem = ACTIVATION_ELEMENT_BYTES[prec]
    mode = checkpointing if isinstance(checkpointing, str) else f"every-{checkpointing}"
    if dims is not None:
        n_layers = dims["layers"]
        micro = dims["batch"] // accum
        whole = transformer_activation_bytes(
            dims["seq_len"], micro, dims["hidden"], dims["heads"], bytes_per_element=act_elem
        )
        stored_all, activations, recomputed = checkpoint_activation_bytes(
            n_layers, whole.total_bytes, whole.layer_input_bytes, checkpointing
        )
        seg = checkpoint_segment(n_layers, checkpointing)
        stage_layers = n_layers // pp
        split_act = transformer_activation_bytes(
            dims["seq_len"],
            micro,
            dims["hidden"],
            dims["heads"],
            bytes_per_element=act_elem,
            tensor_parallel=tp,
            sequence_parallel=sequence_parallel,
        )
        stage_stored, stage_peak, _ = checkpoint_activation_bytes(
            stage_layers,
            split_act.total_bytes,
            split_act.layer_input_bytes,
            _stage_checkpointing(checkpointing, seg, stage_layers),
        )
        in_flight = min(pp, accum) if pp > 1 else 1
        per_act = in_flight * stage_stored + (stage_peak - stage_stored)
        per_layer = whole.total_bytes
        boundary = dims["seq_len"] * micro * dims["hidden"] * act_elem
        tp_comm: float | None = tensor_parallel_comm_bytes(
            stage_layers, boundary, tp, micro_batches=accum, recompute=seg is not None
        )
        pp_comm: float | None = pipeline_parallel_comm_bytes(boundary, pp, micro_batches=accum)
        effective: int | None = dims["batch"] * dp
        micro_out: int | None = micro
    else:
        activations = per_act = 0.0
        stored_all = None
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
        gradients_bytes_per_param=GRADIENT_BYTES,
        optimizer_bytes_per_param=opt_b,
        model_state_bytes=weights + grads + states,
        per_gpu_weights_bytes=per_w,
        per_gpu_gradients_bytes=per_g,
        per_gpu_optimizer_bytes=per_o,
        per_gpu_activations_bytes=float(per_act),
        activations_included=dims is not None,
        activations_per_layer_bytes=None if per_layer is None else float(per_layer),
        activations_after_forward_bytes=None if stored_all is None else float(stored_all),
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
        activation_formula=ACTIVATION_SOURCE,
    )


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
