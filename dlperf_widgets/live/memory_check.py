"""Check the training-memory model against what PyTorch really keeps, on the CPU.

Two measurements, each compared with :mod:`dlperf_widgets.core.memory`:

- :func:`measure_training_state` trains a small model for one optimizer step and adds up
  the bytes of its parameters, gradients and optimizer states (each storage counted once).
  The tensors with one value per parameter (Adam's two moments, SGD's momentum buffer)
  must equal the model's bytes per parameter exactly; PyTorch's Adam also keeps one
  4-byte ``step`` counter per parameter tensor, reported apart as bookkeeping.
  ``precision='mixed-bf16'`` (or ``'mixed-fp16'``) keeps an FP32 master model and a 16-bit
  working copy, as the slides' 6 bytes per parameter assume: forward and backward run on
  the copy, its gradients are moved into FP32 on the master, the optimizer updates the
  master, and the master is copied back. That is the scheme of Micikevicius et al. (2018,
  "Mixed Precision Training"), used by Megatron-LM and DeepSpeed, not what ``torch.autocast``
  does.
- :func:`measure_autocast_state` runs the workflow ``torch.autocast`` teaches: the model
  stays FP32 (4-byte weights and gradients), and inside the autocast region each weight
  is cast to 16 bits when an op needs it. Those casts are temporary: autograd holds the ones
  it needs for the backward pass (counted with saved-tensor hooks) and frees them after it.
- :func:`measure_activations` runs one transformer block forward and records, with
  ``torch.autograd.graph.saved_tensors_hooks``, every tensor autograd keeps for the backward
  pass (parameters excluded, each storage counted once), beside the saved tensors of the
  step's kernel list (:func:`block_model_bytes`, a view of
  :func:`dlperf_widgets.core.workload.workload`). The block runs explicit attention (no
  fused kernel, which would not keep the s x s scores), so it keeps the tensors Korthikanti
  et al. (2022) count. Two differences remain and are stated: on the CPU, dropout keeps its
  mask in the activation dtype (the kernel list's 1-byte masks are counted at the element
  size), and LayerNorm keeps its mean and 1/std (2 values per token and LayerNorm), which
  the kernel list leaves out.
"""

from __future__ import annotations

import copy
import functools
import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from .._optional import require
from ..core._validate import check_choice, check_int, check_number, describe
from ..core.errors import InvalidParameter
from ..core.memory import OPTIMIZER_BYTES, training_memory
from ..core.results import ResultMixin
from ..core.workload import (
    LlmSpec,
    SavedActivations,
    dropout_mask_elements,
    saved_activations,
    workload,
)

__all__ = [
    "ActivationMeasurement",
    "AllocationTracker",
    "AutocastStateMeasurement",
    "SavedTensorTracker",
    "StateMeasurement",
    "measure_activations",
    "measure_autocast_state",
    "measure_training_state",
    "transformer_block",
]

_TORCH_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def _torch() -> Any:
    return require("torch", "live memory checks")


def storage_bytes(tensors: Any) -> int:
    """Bytes of the distinct storages behind ``tensors`` (views counted once)."""
    seen: dict[int, int] = {}
    for t in tensors:
        if t is None:
            continue
        st = t.untyped_storage()
        seen[st.data_ptr()] = st.nbytes()
    return sum(seen.values())


# --------------------------------------------------------------------------------------
# Parameters, gradients and optimizer states
# --------------------------------------------------------------------------------------


_STATE_FIELDS = (
    "weights_bytes",
    "gradients_bytes",
    "optimizer_bytes",
    "model_weights_bytes",
    "model_gradients_bytes",
    "model_optimizer_bytes",
)


def _byte_units(extra: str) -> dict[str, str]:
    return {k: "B" for k in (*_STATE_FIELDS, extra)}


def _optimizer_state_bytes(torch: Any, opt: Any, params: Any) -> tuple[int, int]:
    """(bytes of one-value-per-parameter states, bytes of the other optimizer tensors)."""
    per_param = bookkeeping = 0
    for p in params:
        for value in opt.state.get(p, {}).values():
            if not torch.is_tensor(value):
                continue
            if value.numel() == p.numel():
                per_param += storage_bytes([value])
            else:
                bookkeeping += storage_bytes([value])
    return per_param, bookkeeping


@dataclass(frozen=True)
class StateMeasurement(ResultMixin):
    """Measured bytes of weights, gradients and optimizer states, beside the model's.

    ``optimizer_bookkeeping_bytes``: optimizer tensors that are not one value per
    parameter (Adam's per-tensor ``step`` counters), which the model leaves out.
    """

    optimizer: str
    precision: str
    params: int
    param_tensors: int
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    optimizer_bookkeeping_bytes: int
    model_weights_bytes: float
    model_gradients_bytes: float
    model_optimizer_bytes: float
    matches: bool

    _units: ClassVar[dict[str, str]] = _byte_units("optimizer_bookkeeping_bytes")

    def _title(self) -> str:
        return f"Measured training state: {self.precision}, {self.optimizer}"


def _default_model(torch: Any) -> Any:
    nn = torch.nn
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64), nn.LayerNorm(64))


def _make_optimizer(torch: Any, name: str, params: Any) -> Any:
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-2)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-2, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3)
    raise InvalidParameter(
        f"'optimizer' must be one of sgd, sgd-momentum, adam, adamw for a live measurement "
        f"(got {describe(name)}; 8-bit Adam needs bitsandbytes and a GPU)"
    )


def measure_training_state(
    model: Any = None,
    *,
    optimizer: str = "adamw",
    precision: str = "fp32",
    inputs: Any = None,
) -> StateMeasurement:
    """Run one optimizer step on ``model`` (default: a small MLP) and measure its bytes.

    ``inputs``: a batch for the model (default: random, shaped for the default model).
    The loss is the mean square of the output, only to have gradients.
    """
    torch = _torch()
    opt_name = check_choice("optimizer", optimizer, tuple(OPTIMIZER_BYTES))
    prec = check_choice("precision", precision, ("fp32", "mixed-fp16", "mixed-bf16"))
    master = _default_model(torch) if model is None else model
    x = torch.randn(16, 64) if inputs is None else inputs
    master_params = [p for p in master.parameters() if p.requires_grad]
    opt = _make_optimizer(torch, opt_name, master_params)

    if prec == "fp32":
        master(x).float().pow(2).mean().backward()
        opt.step()
        weights = storage_bytes(master_params)
    else:
        low_dtype = torch.bfloat16 if prec == "mixed-bf16" else torch.float16
        work = copy.deepcopy(master).to(low_dtype)
        work_params = [p for p in work.parameters() if p.requires_grad]
        work(x.to(low_dtype)).float().pow(2).mean().backward()
        with torch.no_grad():
            for pm, pw in zip(master_params, work_params, strict=True):
                pm.grad = pw.grad.float()  # gradients live in FP32 on the master
                pw.grad = None
        opt.step()
        with torch.no_grad():
            for pm, pw in zip(master_params, work_params, strict=True):
                pw.copy_(pm)
        weights = storage_bytes(master_params) + storage_bytes(work_params)
    grads = storage_bytes(p.grad for p in master_params)
    per_param, bookkeeping = _optimizer_state_bytes(torch, opt, master_params)
    n = sum(p.numel() for p in master_params)
    mod = training_memory(n, optimizer=opt_name, precision=prec)
    return StateMeasurement(
        optimizer=opt_name,
        precision=prec,
        params=n,
        param_tensors=len(master_params),
        weights_bytes=weights,
        gradients_bytes=grads,
        optimizer_bytes=per_param,
        optimizer_bookkeeping_bytes=bookkeeping,
        model_weights_bytes=mod.weights_bytes,
        model_gradients_bytes=mod.gradients_bytes,
        model_optimizer_bytes=mod.optimizer_bytes,
        matches=(weights, grads, per_param)
        == (mod.weights_bytes, mod.gradients_bytes, mod.optimizer_bytes),
    )


@dataclass(frozen=True)
class AutocastStateMeasurement(ResultMixin):
    """Bytes of an FP32 model trained one step under ``torch.autocast``.

    ``weights_bytes``, ``gradients_bytes`` and ``optimizer_bytes`` persist between steps and
    are compared with the model's FP32 accounting (``training_memory(precision='fp32')``);
    ``weight_casts_bytes`` are the 16-bit copies of weights that autograd held for the
    backward pass of this step (gone after it).
    """

    optimizer: str
    dtype: str
    params: int
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    weight_casts_bytes: int
    model_weights_bytes: float
    model_gradients_bytes: float
    model_optimizer_bytes: float
    matches: bool

    _units: ClassVar[dict[str, str]] = _byte_units("weight_casts_bytes")

    def _title(self) -> str:
        return (
            f"Measured autocast training state: FP32 weights, {self.dtype} casts, {self.optimizer}"
        )


def measure_autocast_state(
    model: Any = None, *, optimizer: str = "adamw", dtype: str = "bf16", inputs: Any = None
) -> AutocastStateMeasurement:
    """One optimizer step of an FP32 ``model`` (default: a small MLP) under ``torch.autocast``.

    Runs on the CPU with ``dtype`` 'bf16' (CPU autocast's type) or 'fp16'. The 16-bit weight
    casts are the saved tensors of that dtype whose shape is a parameter's shape.
    """
    torch = _torch()
    opt_name = check_choice("optimizer", optimizer, tuple(OPTIMIZER_BYTES))
    dt = check_choice("dtype", dtype, ("bf16", "fp16"))
    low = getattr(torch, _TORCH_DTYPES[dt])
    net = _default_model(torch) if model is None else model
    x = torch.randn(16, 64) if inputs is None else inputs
    params = [p for p in net.parameters() if p.requires_grad]
    opt = _make_optimizer(torch, opt_name, params)
    shapes = {tuple(p.shape) for p in params if p.dim() > 1}
    with SavedTensorTracker(exclude=params) as tracker:
        with torch.autocast(device_type="cpu", dtype=low):
            loss = net(x).float().pow(2).mean()
        casts = {}
        for shape, name, nbytes in tracker.saved:
            if shape in shapes and name == _TORCH_DTYPES[dt]:
                casts[shape] = nbytes
        loss.backward()
    opt.step()
    weights = storage_bytes(params)
    grads = storage_bytes(p.grad for p in params)
    per_param, _ = _optimizer_state_bytes(torch, opt, params)
    n = sum(p.numel() for p in params)
    mod = training_memory(n, optimizer=opt_name, precision="fp32")
    return AutocastStateMeasurement(
        optimizer=opt_name,
        dtype=dt,
        params=n,
        weights_bytes=weights,
        gradients_bytes=grads,
        optimizer_bytes=per_param,
        weight_casts_bytes=sum(casts.values()),
        model_weights_bytes=mod.weights_bytes,
        model_gradients_bytes=mod.gradients_bytes,
        model_optimizer_bytes=mod.optimizer_bytes,
        matches=(weights, grads, per_param)
        == (mod.weights_bytes, mod.gradients_bytes, mod.optimizer_bytes),
    )


# --------------------------------------------------------------------------------------
# Saved tensors: what autograd keeps for the backward pass
# --------------------------------------------------------------------------------------


class _Held:
    """A saved tensor wrapped so the tracker knows when autograd lets go of it."""

    __slots__ = ("key", "tensor", "tracker")

    def __init__(self, tracker: SavedTensorTracker, key: int, nbytes: int, tensor: Any) -> None:
        self.tracker, self.key, self.tensor = tracker, key, tensor
        entry = tracker._live.get(key)
        if entry is None:
            tracker._live[key] = [1, nbytes]
            tracker.current_bytes += nbytes
            tracker.peak_bytes = max(tracker.peak_bytes, tracker.current_bytes)
        else:
            entry[0] += 1

    def __del__(self) -> None:
        entry = self.tracker._live.get(self.key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] == 0:
            self.tracker.current_bytes -= entry[1]
            del self.tracker._live[self.key]


class SavedTensorTracker:
    """Context manager counting the bytes autograd saves for backward, live and at peak.

    Every tensor autograd saves passes through ``pack``; tensors whose storage belongs to
    one of ``exclude`` (the parameters) are ignored, and a storage saved by several ops
    counts once. When autograd frees a saved tensor (after the backward pass reaches it)
    its bytes leave ``current_bytes``; ``peak_bytes`` keeps the maximum. Run the backward
    pass inside the ``with`` block to see recomputation (reentrant checkpointing).
    """

    def __init__(self, exclude: Any = ()) -> None:
        torch = _torch()
        self._torch = torch
        self._exclude = {p.untyped_storage().data_ptr() for p in exclude}
        self._live: dict[int, list[int]] = {}
        self.current_bytes = 0
        self.peak_bytes = 0
        self.saved: list[tuple[tuple[int, ...], str, int]] = []  # shape, dtype, storage bytes
        self._ctx: Any = None

    def _pack(self, t: Any) -> Any:
        st = t.untyped_storage()
        key = st.data_ptr()
        if key in self._exclude:
            return t
        self.saved.append((tuple(t.shape), str(t.dtype).replace("torch.", ""), st.nbytes()))
        return _Held(self, key, st.nbytes(), t)

    @staticmethod
    def _unpack(h: Any) -> Any:
        return h.tensor if isinstance(h, _Held) else h

    def __enter__(self) -> SavedTensorTracker:
        self._ctx = self._torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._ctx.__exit__(*exc)


class AllocationTracker:
    """Context manager counting the bytes of every tensor the ops inside it create, live
    and at peak (a measurement on the CPU, where PyTorch keeps no allocator statistics).

    Each aten op's outputs pass through a ``TorchDispatchMode``; a storage not seen before
    (and not one of ``existing``: parameters, gradients, optimizer states) adds its bytes,
    and leaves ``current_bytes`` when its last reference dies. ``peak_bytes`` keeps the
    maximum. Memory an op uses only inside itself (a kernel's workspace) is not seen.
    Autograd's backward pass on the CPU runs its ops inside the same mode.
    """

    def __init__(self, existing: Any = ()) -> None:
        import weakref

        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten

        torch = _torch()
        seen = {t.untyped_storage().data_ptr() for t in existing}
        tracker = self
        self.current_bytes = 0
        self.peak_bytes = 0

        def free(key: int, nbytes: int) -> None:
            seen.discard(key)
            tracker.current_bytes -= nbytes

        class _Mode(TorchDispatchMode):  # type: ignore[misc]
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                out = func(*args, **(kwargs or {}))
                for t in tree_flatten(out)[0]:
                    if not isinstance(t, torch.Tensor):
                        continue
                    st = t.untyped_storage()
                    key, nbytes = st.data_ptr(), st.nbytes()
                    if nbytes == 0 or key in seen:
                        continue
                    seen.add(key)
                    tracker.current_bytes += nbytes
                    tracker.peak_bytes = max(tracker.peak_bytes, tracker.current_bytes)
                    weakref.finalize(st, free, key, nbytes)
                return out

        self._mode = _Mode()

    def __enter__(self) -> AllocationTracker:
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._mode.__exit__(*exc)


@functools.lru_cache(maxsize=1)
def _block_class() -> Any:
    torch = _torch()
    nn = torch.nn
    functional = torch.nn.functional

    class TransformerBlock(nn.Module):
        """Pre-LayerNorm transformer layer with explicit attention, as the paper counts it."""

        def __init__(self, hidden: int, heads: int, dropout: float) -> None:
            super().__init__()
            self.heads, self.p = heads, dropout
            self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.q, self.k, self.v = (nn.Linear(hidden, hidden) for _ in range(3))
            self.proj = nn.Linear(hidden, hidden)
            self.fc1, self.fc2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
            self.act = nn.GELU()

        def forward(self, x: Any) -> Any:
            b, s, h = x.shape
            a, d = self.heads, h // self.heads
            y = self.ln1(x)

            def split(t: Any) -> Any:
                return t.view(b, s, a, d).transpose(1, 2)

            q, k, v = split(self.q(y)), split(self.k(y)), split(self.v(y))
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            probs = functional.dropout(scores.softmax(-1), self.p, self.training)
            context = (probs @ v).transpose(1, 2).reshape(b, s, h)
            x = x + functional.dropout(self.proj(context), self.p, self.training)
            y = self.fc2(self.act(self.fc1(self.ln2(x))))
            return x + functional.dropout(y, self.p, self.training)

    return TransformerBlock


def transformer_block(hidden: int = 64, heads: int = 4, dropout: float = 0.1) -> Any:
    """A torch transformer layer that keeps exactly the tensors of Korthikanti et al. 2022."""
    hidden = check_int("hidden", hidden, allow_array=False)
    heads = check_int("heads", heads, allow_array=False)
    dropout = check_number("dropout", dropout, minimum=0, maximum=1)
    if hidden % heads:
        raise InvalidParameter(f"'hidden' must be a multiple of heads ({heads}) (got {hidden})")
    return _block_class()(hidden, heads, dropout)


def block_model_bytes(
    seq_len: int, batch: int, hidden: int, heads: int, *, dtype: str = "fp32",
    dropout: bool = True,
) -> tuple[float, float, SavedActivations]:  # fmt: skip
    """(bytes one :func:`transformer_block` saves on the CPU, its input's bytes, the
    kernel list's activation view) by the step's kernel list: one layer of eager
    attention with a GELU MLP (:func:`dlperf_widgets.core.workload.workload`) trained in
    ``dtype``, its forward kernels' saved tensors
    (:func:`dlperf_widgets.core.workload.saved_activations`), with each dropout mask at the
    element size, as PyTorch's CPU dropout keeps it (1 byte in the kernel list, as on a
    GPU)."""
    spec = LlmSpec(name="transformer block", layers=1, hidden=hidden, heads=heads,
                   kv_heads=heads, head_dim=hidden // heads, ffn=4 * hidden, vocab=1,
                   gated_mlp=False, rotary=False)  # fmt: skip
    w = workload(spec, phase="training", batch=batch, seq=seq_len, precision=dtype,
                 attention="eager", causal=False, dropout=dropout)  # fmt: skip
    view = saved_activations(w, head=False)
    elem = 4.0 if dtype == "fp32" else 2.0
    cpu_masks = dropout_mask_elements(w) * (elem - 1.0)
    return view.per_layer_bytes + cpu_masks, view.layer_input_bytes, view


@dataclass(frozen=True)
class ActivationMeasurement(ResultMixin):
    """Bytes saved for backward by one transformer block: measured vs the model (the
    kernel list's saved tensors, :func:`block_model_bytes`).

    ``layernorm_stats_bytes`` is the part of the measurement the kernel list leaves out
    (the LayerNorms' mean and 1/std); ``ratio`` = measured / model.
    """

    seq_len: int
    batch: int
    hidden: int
    heads: int
    dtype: str
    dropout: float
    checkpoint: bool
    measured_bytes: int
    model_bytes: float
    ratio: float
    layernorm_stats_bytes: int
    saved_tensors: int
    model: SavedActivations

    _hidden: ClassVar[tuple[str, ...]] = ("model",)
    _units: ClassVar[dict[str, str]] = {
        "measured_bytes": "B",
        "model_bytes": "B",
        "layernorm_stats_bytes": "B",
    }

    def _title(self) -> str:
        return "Activation bytes of a transformer block: measured vs model"


def measure_activations(
    seq_len: int = 64,
    batch: int = 2,
    hidden: int = 64,
    heads: int = 4,
    *,
    dtype: str = "fp32",
    dropout: float = 0.1,
    checkpoint: bool = False,
    seed: int = 0,
) -> ActivationMeasurement:
    """Measure the activations one transformer block keeps, and the model's count (the
    step's kernel list: :func:`block_model_bytes`).

    With ``checkpoint=True`` the block runs under ``torch.utils.checkpoint`` and keeps only
    its input, which the model predicts as the layer-input bytes (s*b*h elements).
    """
    torch = _torch()
    s = check_int("seq_len", seq_len, allow_array=False)
    b = check_int("batch", batch, allow_array=False)
    name = check_choice("dtype", dtype, tuple(_TORCH_DTYPES))
    tdtype = getattr(torch, _TORCH_DTYPES[name])
    torch.manual_seed(seed)
    block = transformer_block(hidden, heads, dropout).to(tdtype).train()
    x = torch.randn(b, s, hidden, dtype=tdtype, requires_grad=True)
    tracker = SavedTensorTracker(exclude=list(block.parameters()))
    with tracker:
        if checkpoint:
            out = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        else:
            out = block(x)
        measured = tracker.current_bytes
    out.float().sum().backward()  # the graph was real: backward runs
    layer, layer_input, view = block_model_bytes(
        s, b, hidden, heads, dtype=name, dropout=dropout > 0
    )
    predicted = layer_input if checkpoint else layer
    stats = sum(n for shape, _, n in tracker.saved if shape == (b, s, 1))
    return ActivationMeasurement(
        seq_len=s,
        batch=b,
        hidden=hidden,
        heads=heads,
        dtype=name,
        dropout=float(dropout),
        checkpoint=bool(checkpoint),
        measured_bytes=int(measured),
        model_bytes=float(predicted),
        ratio=measured / predicted,
        layernorm_stats_bytes=int(stats),
        saved_tensors=len(tracker.saved),
        model=view,
    )


# --------------------------------------------------------------------------------------
# Saved tensors of a whole model, by module
# --------------------------------------------------------------------------------------

__all__ += ["SavedByModule", "measure_saved_by_module"]

_BLOCK_PATH = re.compile(r"^(.*\.(?:h|layers|layer|blocks)\.\d+)(?:\.|$)")


@dataclass(frozen=True)
class SavedByModule(ResultMixin):
    """Bytes autograd keeps for backward after one forward pass of a model (measured).

    ``blocks_bytes`` lists the repeated blocks (``transformer.h.0``, ``model.layers.1``, ...)
    in order; ``other_bytes`` maps every other module (embeddings, final norm, head, the
    model itself for its loss) to its bytes. Parameters are excluded, each storage counted
    once, at the module running when autograd saved it first.
    """

    total_bytes: int
    blocks_bytes: tuple[int, ...]
    other_bytes: dict[str, int]
    autocast: str

    _units: ClassVar[dict[str, str]] = {"total_bytes": "B"}

    def _title(self) -> str:
        return "Bytes saved for backward, by module (measured on the CPU)"


def measure_saved_by_module(
    model: Any, *inputs: Any, autocast: str | None = None, **kwargs: Any
) -> SavedByModule:
    """Run ``model(*inputs, **kwargs)`` forward under ``saved_tensors_hooks`` and count
    what autograd keeps, by module; ``autocast='bf16'`` (or 'fp16') runs it under
    ``torch.autocast('cpu', dtype=...)``. Pass ``labels=`` to a transformers model to
    include its loss."""
    torch = _torch()
    from torch.utils.module_tracker import ModuleTracker

    if not isinstance(model, torch.nn.Module):
        raise InvalidParameter(f"'model' must be a torch.nn.Module (got {type(model).__name__})")
    if autocast is not None:
        autocast = check_choice("autocast", autocast, ("bf16", "fp16"))
    params = {p.untyped_storage()._cdata for p in model.parameters()}
    seen: dict[int, tuple[str, int]] = {}
    tracker = ModuleTracker()
    root = type(model).__name__

    def pack(t: Any) -> Any:
        st = t.untyped_storage()
        key = st._cdata
        if key not in params and key not in seen:
            names = [p for p in tracker.parents if p != "Global"]
            path = max(names, key=len) if names else root
            seen[key] = (path[len(root) + 1 :] if path.startswith(root + ".") else "", st.nbytes())
        return t

    ctx = (
        torch.autocast("cpu", dtype=getattr(torch, _TORCH_DTYPES[autocast]))
        if autocast
        else torch.autocast("cpu", enabled=False)
    )
    with tracker, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), ctx:
        model(*inputs, **kwargs)
    blocks: dict[str, int] = {}
    other: dict[str, int] = {}
    for path, nbytes in seen.values():
        m = _BLOCK_PATH.match(path)
        if m:
            blocks[m.group(1)] = blocks.get(m.group(1), 0) + nbytes
        else:
            key = path.split(".")[-1] if path else "(model)"
            other[key] = other.get(key, 0) + nbytes
    order = sorted(blocks, key=lambda k: int(k.rsplit(".", 1)[1]))
    return SavedByModule(
        total_bytes=int(sum(n for _, n in seen.values())),
        blocks_bytes=tuple(blocks[k] for k in order),
        other_bytes=other,
        autocast=autocast or "fp32",
    )
