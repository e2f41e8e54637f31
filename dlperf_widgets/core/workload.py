"""A whole workload as the kernels one step runs, priced kernel by kernel.

A training step, a prefill or a decode step of a transformer is a list of kernels: the GEMMs
of its linear layers, its attention, the memory-bound kernels between them (norms,
activations, residual adds, rotary embeddings, the loss), the quantise / dequantise casts of
low-precision formats, the optimizer, and the collectives of its parallel layout. This
module builds that list once, from one model description (:class:`~.inference.LlmSpec`,
with grouped-query attention, gated MLPs and mixture-of-experts layers) and the run's
options, and prices it with one function (:func:`price`). Time, FLOPs, memory and the class
breakdown are views of the same list.

Identical layers are described once and carry a ``count``; so a 96-layer model is as cheap
to price as a 2-layer one.

Counting conventions (each line says where it comes from):

- A linear layer with N outputs and K inputs on T tokens is a GEMM of M = T rows: 2 T N K
  FLOPs forward; backward it is two GEMMs of the same FLOPs, the input gradient (T x K from
  T x N and N x K) and the weight gradient (K x N from K x T and T x N) (NVIDIA "Matrix
  Multiplication Background" user guide, section on the backward pass).
- Attention (Vaswani et al. 2017) of one query row against C keys costs 4 C d FLOPs per head
  (Q K^T and P V). The standard ("eager") implementation writes the scores and
  probabilities to DRAM; FlashAttention (Dao et al. 2022, section 3.1) keeps them on chip
  and reads Q, K, V and writes O once. That is the floor of its traffic (every re-read of a
  block served on chip or from L2); :func:`.fusion.attention_traffic` counts the papers'
  algorithms with no cache, the ceiling, and the paper's measurement lies between the two. A causal mask lets fused kernels skip half the
  score blocks. Fused backward recomputes the scores: 5 matrix products against the
  forward's 2, so 2.5 x the forward FLOPs (the count of Dao 2023, "FlashAttention-2").
- Memory-bound kernels move each tensor they read or write through DRAM once (NVIDIA
  "Optimizing Memory-Limited Layers" guide), with the operation counts of
  :mod:`.memlimited`.
- Saved tensors follow PyTorch's autograd: a linear layer saves its input, a norm its input,
  SiLU x up its two inputs, fused attention Q, K, V, O and the row log-sum-exp, eager
  attention also its s x s probabilities (Korthikanti et al. 2022, "Reducing Activation
  Recomputation in Large Transformer Models", section 4.1 lists the same tensors).
- Parallelism follows Megatron-LM (Shoeybi et al. 2019; Korthikanti et al. 2022 for
  sequence parallelism): tensor parallelism splits heads and the MLP's hidden size and adds
  two all-reduces per layer forward and two backward (with sequence parallelism: an
  all-gather and a reduce-scatter in place of each); ZeRO / FSDP (Rajbhandari et al. 2020)
  shards optimizer states (1), gradients (2) and weights (3); expert parallelism moves
  tokens with two all-to-alls per MoE layer (Lepikhin et al. 2021, "GShard").
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from ._validate import check_bool, check_choice, check_int, check_number, describe
from .assumptions import CUDA_GRAPH_LAUNCH_S
from .calibration import achievable, overlap_time
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gemm import gemm_sweep
from .gpus import Gpu
from .gpus import gpu as _gpu
from .links import Interconnect, default_links, interconnect
from .memlimited import NORMALIZATION_OPS, OP_CLASSES, PassResult, _cuda_peak
from .results import ResultMixin, format_quantity
from .topology import group_per_node, topology_bandwidth

__all__ = [
    "ATTENTION_IMPLS",
    "CATEGORIES",
    "DTYPE_PRECISIONS",
    "EAGER_LAYOUTS",
    "KINDS",
    "OPTIMIZERS",
    "PHASES",
    "PRECISIONS",
    "RECOMPUTE",
    "TIMINGS",
    "WEIGHT_FORMATS",
    "Kernel",
    "TimeBreakdown",
    "Workload",
    "WorkloadMemory",
    "WorkloadTime",
    "attention_block",
    "attention_parallel_share",
    "autocast_cache_bytes",
    "dropout_mask_elements",
    "fused_attention_time_s",
    "price",
    "workload",
    "workload_constants",
]

PHASES = ("training", "prefill", "decode")
KINDS = ("gemm", "attention", "memory", "quant", "optimizer", "collective")
# 'sdpa' is PyTorch's scaled_dot_product_attention on its FlashAttention-2 backend; 'triton'
# the Triton implementation of FlashAttention (flash_attn_triton.py of the flash-attention
# repository, 2022, as MosaicML's MPT trains with attn_impl: triton).
ATTENTION_IMPLS = ("eager", "flash1", "flash2", "sdpa", "triton")
# How eager attention hands Q, K and V to cuBLAS's batched GEMM. 'strided': Megatron-LM's
# [seq, batch, heads x d] tensors go in as strided batches and the 1/sqrt(d) scale rides in
# the Q K^T GEMM (torch.baddbmm's alpha), so the core is the two GEMMs and the softmax.
# 'einsum': torch.einsum on (batch, seq, heads, d) views of a packed QKV, as the
# flash-attention repository's reference attention (benchmarks/benchmark_flash_attention.py,
# attention_ref, 2022-05-26) runs it: K is scaled in an element-wise kernel of its own, and
# einsum copies each of Q, K and V into (batch x heads, seq, d) order before its batched GEMM
# (batch and heads cannot be merged into one stride of such a view); P V's output stays a
# permuted view, with no copy.
EAGER_LAYOUTS = ("strided", "einsum")
# Fused attention kernels whose grid has one thread block per (sequence, head) and no
# blocks along the sequence: FlashAttention-1's CUDA kernels (Dao et al. 2022, Algorithm 1
# runs the whole sequence of one head in one block; Dao 2023, section 3.2, names this as
# what FlashAttention-2 changes by splitting the sequence across blocks too). The Triton
# kernel's forward grid has a block per 128 query rows, and its backward is autotuned
# between one block per head and one per 128 key columns (flash_attn_triton.py): it fills
# the GPU like FlashAttention-2.
_HEAD_PARALLEL_ONLY = ("flash1",)
# the fused implementations (one kernel forward, one backward)
_FUSED = ("flash1", "flash2", "triton")
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "fp4")
# block-scaled narrow formats: GEMMs in them, activations in BF16 between kernels
_NARROW = {"fp8": ("fp8_e4m3", 1.0), "fp4": ("fp4_e2m1", 0.5)}
WEIGHT_FORMATS = ("same", "fp8", "int8", "int4", "w8a8")
# weight-only formats: weights stored narrow, dequantised to 16 bits inside the GEMM
_WEIGHT_ONLY = ("fp8", "int8", "int4")
RECOMPUTE = ("none", "selective", "full")
OPTIMIZERS = ("adamw", "adamw_fused", "sgd", "adafactor", "adamw_8bit")
TIMINGS = ("kernel", "back-to-back", "eager")
# a CUDA graph replays its kernels back to back: the same context
_TIMING_ALIASES = {"graph": "back-to-back", "cuda-graph": "back-to-back"}
# The stacked-bar categories of a priced step.
CATEGORIES = (
    "GEMMs",
    "attention",
    "memory-bound",
    "optimizer",
    "exposed communication",
    "pipeline bubble",
    "exposed launch",
)
_CATEGORY_OF_KIND = {
    "gemm": "GEMMs",
    "attention": "attention",
    "memory": "memory-bound",
    "quant": "memory-bound",
    "optimizer": "optimizer",
}

# Largest sizes a workload accepts (far beyond any real model; keeps the arithmetic exact).
_MAX_TOKENS = 1 << 26
_MAX_RANKS = 1 << 16

# Bits of the one FP16 scale per group of quantised weights (GPTQ, AWQ: group size 128).
_SCALE_BITS = 16
# Operations per element of the memory-bound kernels (core.memlimited's convention):
# RMSNorm / LayerNorm 8, SiLU x up 6 (sigmoid 4, two multiplies), GELU 5, add 1,
# rotary embedding 6 (two multiplies and an add per rotated pair, per element).
_NORM_FLOPS, _SWIGLU_FLOPS, _GELU_FLOPS, _ADD_FLOPS, _ROPE_FLOPS = 8, 6, 5, 1, 6
# Softmax forward and backward operations per element: core.memlimited's one count (max,
# subtract, exp, sum, divide; backward dx = y * (dy - sum(dy * y)): 4).
_SOFTMAX_FLOPS = NORMALIZATION_OPS["softmax"].forward_flops
_SOFTMAX_BACKWARD_FLOPS = NORMALIZATION_OPS["softmax"].backward_flops
# Cross-entropy over V logits: max, exp, sum, log and the gathered target, about 5 per logit.
_LOSS_FLOPS = 5
# AdamW per parameter (Loshchilov & Hutter 2019, Algorithm 2): about 12 operations; bytes:
# read the FP32 weight, gradient, m and v, write weight, m and v (28 B). SGD with momentum:
# read weight, gradient and momentum, write weight and momentum (20 B), 3 operations.
_ADAM_FLOPS, _ADAM_BYTES, _SGD_FLOPS, _SGD_BYTES = 12, 28, 3, 20
# Optimizer state bytes per parameter (FP32): AdamW keeps m and v, SGD the momentum.
_STATE_BYTES = {"adamw": 8, "adamw_fused": 8, "sgd": 4, "adafactor": 0, "adamw_8bit": 2}
# 8-bit Adam (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization",
# bitsandbytes): m and v stored in 8 bits with one FP32 scale per block of 2048 values
# (2 B per weight; the scales 4 / 2048 B, counted as 0); one kernel per tensor reads the FP32
# weight and gradient and the two 8-bit states, dequantises, updates and writes the weight and
# states back: 4 + 4 + 2 read, 4 + 2 written, 16 B per weight, AdamW's operations plus the
# (de)quantisation, about 16.
_ADAM8_FLOPS, _ADAM8_BYTES = 16, 16
# Adafactor (Shazeer & Stern 2018) without momentum keeps, per weight matrix, one row and one
# column of second-moment statistics instead of a value per weight: (rows + columns) x 4 B,
# a vanishing share of the weights (counted as 0 per weight). Its update reads the weight
# and gradient and writes the weight, plus the gradient squared reduced along rows and
# columns: about 16 B and 10 operations per weight, in several kernels per tensor.
_ADAFACTOR_FLOPS, _ADAFACTOR_BYTES = 10, 16
# Tensors of one layer the unfused optimizer updates with their own kernels: the four
# attention projections, two or three MLP matrices, two norm scales. torch.optim.AdamW's
# default multi-tensor ('foreach') path launches a few kernels per group of tensors; the
# unfused count here is one kernel per tensor per operation of the update (about 5).
_UNFUSED_ADAM_OPS = 5
# Selective recomputation (Korthikanti et al. 2022, "selective activation recomputation")
# recomputes the part of attention whose saved tensors grow with s^2: the scores, softmax
# and its dropout.
_SELECTIVE = ("scores Q K^T", "softmax", "attention dropout", "probabilities cast")


# -- the model description ----------------------------------------------------------------


@dataclass(frozen=True)
class LlmSpec(ResultMixin):
    """Shape of a decoder-only transformer (as in its Hugging Face ``config.json``)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    gated_mlp: bool = True
    tied_embeddings: bool = False
    source: str = ""
    # Outputs of the last layer when it is not a language-model head over the vocabulary
    # (a classifier's 2 classes on BERT); 0: the vocabulary.
    head_vocab: int = 0
    # Rotary position embeddings applied to Q and K in every layer (Llama, Mistral); False
    # for learned absolute positions (GPT, BERT, OPT) or ALiBi (MPT).
    rotary: bool = True

    def __post_init__(self) -> None:
        # A custom spec is user input like any other: checked once, here.
        for label in ("name", "source"):
            text = getattr(self, label)
            if not isinstance(text, str) or len(text) > 200:
                raise InvalidParameter(f"'{label}' must be text (got {describe(text)})")
        for label in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab"):
            cap = 2**22 if label == "vocab" else 2**20  # vocab: step_time's own cap
            size = check_int(label, getattr(self, label), maximum=cap, allow_array=False)
            object.__setattr__(self, label, size)
        head_vocab = check_int(
            "head_vocab", self.head_vocab, minimum=0, maximum=2**20, allow_array=False
        )
        object.__setattr__(self, "head_vocab", head_vocab)
        if self.heads % self.kv_heads:
            raise InvalidParameter(
                f"'kv_heads' must divide 'heads' ({self.heads}): each key/value head serves "
                f"a whole group of query heads (got {self.kv_heads})"
            )
        for label in ("gated_mlp", "tied_embeddings", "rotary"):
            object.__setattr__(self, label, check_bool(label, getattr(self, label)))

    @property
    def head_outputs(self) -> int:
        """Outputs of the final linear layer: ``head_vocab``, else the vocabulary."""
        return self.head_vocab or self.vocab

    def linears(self) -> list[tuple[str, int, int]]:
        """(name, out features N, in features K) of one layer's linear layers."""
        q = self.heads * self.head_dim
        kv = self.kv_heads * self.head_dim
        mlp_in = ("gate+up", 2 * self.ffn, self.hidden) if self.gated_mlp else None
        rows = [
            ("qkv", q + 2 * kv, self.hidden),
            ("out", self.hidden, q),
            mlp_in or ("up", self.ffn, self.hidden),
            ("down", self.hidden, self.ffn),
        ]
        return rows

    @property
    def linear_params(self) -> int:
        """Weights of the linear layers of all layers (the part that is quantised)."""
        return self.layers * sum(n * k for _, n, k in self.linears())

    @property
    def embedding_params(self) -> int:
        """Token embedding and (when not tied) the output projection (LM head)."""
        head = 0 if self.tied_embeddings else self.head_outputs
        return (self.vocab + head) * self.hidden

    @property
    def params(self) -> int:
        """All weights, counting the RMSNorm / LayerNorm scales (two per layer and a final one)."""
        norms = (2 * self.layers + 1) * self.hidden
        return self.linear_params + self.embedding_params + norms

    @property
    def kv_values_per_token(self) -> int:
        """K and V values cached per token: 2 x layers x KV heads x head dim."""
        return 2 * self.layers * self.kv_heads * self.head_dim


def _spec(name: str, layers: int, hidden: int, heads: int, kv: int, ffn: int, vocab: int,
          source: str, gated: bool = True, tied: bool = False) -> LlmSpec:  # fmt: skip
    return LlmSpec(name, layers, hidden, heads, kv, hidden // heads, ffn, vocab, gated, tied,
                   source)  # fmt: skip


# Shapes from each model's config.json on the Hugging Face Hub (the 'source' column).
MODELS: dict[str, LlmSpec] = {
    s.name: s
    for s in (
        _spec("llama-2-7b", 32, 4096, 32, 32, 11008, 32000, "meta-llama/Llama-2-7b-hf"),
        _spec("llama-2-13b", 40, 5120, 40, 40, 13824, 32000, "meta-llama/Llama-2-13b-hf"),
        _spec("llama-2-70b", 80, 8192, 64, 8, 28672, 32000, "meta-llama/Llama-2-70b-hf"),
        _spec("llama-3-8b", 32, 4096, 32, 8, 14336, 128256, "meta-llama/Meta-Llama-3-8B"),
        _spec("mistral-7b", 32, 4096, 32, 8, 14336, 32000, "mistralai/Mistral-7B-v0.1"),
        _spec("opt-13b", 40, 5120, 40, 40, 20480, 50272, "facebook/opt-13b", False, True),
    )
}


def model_names() -> list[str]:
    return list(MODELS)


def llm(model: str | LlmSpec) -> LlmSpec:
    """A model's shape by name (see :data:`MODELS`) or an :class:`LlmSpec` of your own."""
    if isinstance(model, LlmSpec):
        return model
    return MODELS[check_choice("model", model, MODELS)]


# -- the kernel list ----------------------------------------------------------------------


@dataclass(frozen=True)
class Kernel(ResultMixin):
    """One kernel of a step, run ``count`` times (once per identical layer).

    ``flops`` and ``bytes`` are for one run. GEMMs carry their shape (``m``, ``n``, ``k``,
    ``batch``; the GEMM model prices them); collectives their operation, group and ranks
    (``bytes`` is the buffer size, as NCCL counts it). ``saved_bytes``: what autograd keeps
    from this kernel for the backward pass (forward kernels of a training step only).
    ``weight_bytes``: bytes of the kernel's weight operand as stored (quantised GEMMs read
    fewer). ``overlappable``: a collective the framework overlaps with compute (gradient
    reduction, ZeRO-3 prefetch) instead of waiting on it.
    """

    name: str
    path: str
    pass_: str
    kind: str
    dtype: str
    flops: float
    bytes: float
    count: int = 1
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int = 1
    saved_bytes: float = 0.0
    weight_bytes: float = 0.0
    collective: str = ""
    group: str = ""
    ranks: int = 1
    overlappable: bool = False

    _units: ClassVar[dict[str, str]] = {"flops": "FLOP", "bytes": "B", "saved_bytes": "iB"}


def _row_cells(k: Kernel) -> list[str]:
    shape = (
        f"{k.m}x{k.n}x{k.k}" + (f" x{k.batch}" if k.batch > 1 else "")
        if k.kind in ("gemm",)
        else (f"{k.collective} /{k.ranks} ({k.group})" if k.kind == "collective" else "")
    )
    return [
        k.pass_,
        k.path,
        k.name,
        k.kind,
        k.dtype,
        shape,
        f"{k.count:,}",
        format_quantity(k.flops, "FLOP"),
        format_quantity(k.bytes, "B"),
        format_quantity(k.saved_bytes, "iB") if k.saved_bytes else "",
    ]


_HEADER = ["pass", "path", "kernel", "kind", "dtype", "shape", "count", "FLOPs", "bytes", "saved"]


def _table_text(header: list[str], rows: list[list[str]], title: str) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def _table_html(header: list[str], rows: list[list[str]], title: str) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
    )
    return (
        f"<table class='dlperf-result'><caption style='text-align:left'><b>"
        f"{html.escape(title)}</b></caption><tr>{head}</tr>{body}</table>"
    )


@dataclass(frozen=True)
class Workload(ResultMixin):
    """The kernels one step runs on one GPU (the slowest pipeline stage), with the options
    that built it. ``kernels`` is the table; ``model_flops`` the model FLOPs of the step on
    this GPU by PaLM's count (Chowdhery et al. 2022, appendix B: 6 N per token plus
    12 L x heads x head size x sequence, no recomputation), the numerator of MFU.
    """

    model: str
    phase: str
    batch: int
    seq: int
    context: int
    precision: str
    weights: str
    attention: str
    causal: bool
    recompute: str
    optimizer: str
    micro_batches: int
    data_parallel: int
    zero: int
    tensor_parallel: int
    sequence_parallel: bool
    pipeline_parallel: int
    pipeline_chunks: int
    context_parallel: int
    expert_parallel: int
    kv_dtype: str
    group_size: int
    gpus: int
    params: float
    params_per_gpu: float
    tokens: int
    model_flops: float
    spec: LlmSpec = field(repr=False)
    kernels: tuple[Kernel, ...] = field(repr=False, default=())
    autocast: bool = False
    eager_layout: str = "strided"

    _units: ClassVar[dict[str, str]] = {"params": "", "params_per_gpu": "", "model_flops": "FLOP"}
    _hidden: ClassVar[tuple[str, ...]] = ("spec",)

    def _title(self) -> str:
        return (
            f"{self.model}: {self.phase} step, batch {self.batch} x seq {self.seq}, "
            f"{self.precision}, {len(self.kernels)} distinct kernels on {self.gpus} GPU(s)"
        )

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.pop("spec", None)
        out["spec"] = self.spec.to_dict()
        return out

    def column(self, name: str) -> np.ndarray:
        """One field of every kernel as a numpy array (``'flops'``, ``'count'``, ...)."""
        return np.array([getattr(k, name) for k in self.kernels])

    @property
    def flops(self) -> float:
        """FLOPs the GPU executes in the step (recomputation included)."""
        return float(sum(k.flops * k.count for k in self.kernels))

    def by_kind(self) -> dict[str, dict[str, float]]:
        """FLOPs, bytes and kernel launches of the step by kind of kernel."""
        out: dict[str, dict[str, float]] = {}
        for k in self.kernels:
            row = out.setdefault(k.kind, {"flops": 0.0, "bytes": 0.0, "kernels": 0.0})
            row["flops"] += k.flops * k.count
            row["bytes"] += k.bytes * k.count
            row["kernels"] += k.count
        return out

    def __str__(self) -> str:
        rows = [_row_cells(k) for k in self.kernels]
        return _table_text(_HEADER, rows, self._title())

    def _repr_html_(self) -> str:
        return _table_html(_HEADER, [_row_cells(k) for k in self.kernels], self._title())


# -- building the list --------------------------------------------------------------------


@dataclass
class _Builder:
    """Accumulates kernels; ``act`` is the activation element size in bytes."""

    act: float
    dt: str
    kernels: list[Kernel] = field(default_factory=list)

    def add(self, **kw: Any) -> Kernel:
        kw.setdefault("dtype", self.dt)
        k = Kernel(**kw)
        self.kernels.append(k)
        return k


def _bits_per_weight(weights: str, precision: str, group_size: int) -> float:
    if weights == "fp8":
        return 8.0
    if weights in ("int8", "w8a8"):
        return 8 + _SCALE_BITS / group_size
    if weights == "int4":
        return 4 + _SCALE_BITS / group_size
    return (
        8.0 * _dtype(_NARROW[precision][0] if precision in _NARROW else precision).bytes_per_element
    )


def _linear(
    b: _Builder, name: str, path: str, t: int, n: int, kin: int, count: int,
    wbits: float, training: bool, gemm_dtype: str, saved_input: float,
) -> None:  # fmt: skip
    """A linear layer's forward GEMM (T x N x K), with what it saves and reads."""
    a = b.act
    wbytes = n * kin * wbits / 8
    b.add(
        name=name,
        path=path,
        pass_="forward",
        kind="gemm",
        dtype=gemm_dtype,
        flops=2.0 * t * n * kin,
        bytes=t * kin * a + wbytes + t * n * a,
        count=count,
        m=t,
        n=n,
        k=kin,
        saved_bytes=saved_input if training else 0.0,
        weight_bytes=wbytes,
    )


def _memory(
    b: _Builder, name: str, path: str, elements: float, flops_per: float, reads: float,
    writes: float, count: int, saved: float = 0.0, pass_: str = "forward",
) -> None:  # fmt: skip
    b.add(
        name=name,
        path=path,
        pass_=pass_,
        kind="memory",
        flops=flops_per * elements,
        bytes=(reads + writes) * elements * b.act,
        count=count,
        saved_bytes=saved,
    )


def _dropout(b: _Builder, name: str, path: str, elements: float, count: int,
             training: bool, saved_output: bool, elem: float | None = None) -> None:  # fmt: skip
    """Dropout in training: read x, write y and a 1-byte mask (memlimited's 'dropout'); the
    mask is saved, and the output too where the next op needs it (attention's P V).
    ``elem``: bytes per element when not the activations' (FP32 probabilities)."""
    if not training:
        return
    e = b.act if elem is None else elem
    saved = elements * (1.0 + (e if saved_output else 0.0))
    b.add(name=name, path=path, pass_="forward", kind="memory", flops=3.0 * elements,
          bytes=elements * (2 * e + 1), count=count, saved_bytes=saved)  # fmt: skip


def dropout_mask_elements(w: Workload, kernel: str | None = None) -> float:
    """Elements of the dropout masks that one layer's forward kernels (only those named
    ``kernel`` when given) save for one micro-batch of training step ``w``. The kernel list
    keeps each as a 1-byte mask, as CUDA's dropout kernels do; PyTorch's CPU dropout keeps
    a mask in its input's dtype, so a CPU measurement holds (element size - 1) bytes more
    per mask element."""
    if not isinstance(w, Workload):
        raise InvalidParameter(f"'workload' must be a Workload (got {describe(w)})")
    act = 4.0 if w.precision in ("fp32", "tf32") else 2.0  # the activations' element size
    per_layer = [
        k for k in w.kernels
        if k.pass_ == "forward" and k.name.endswith("dropout") and k.path.startswith("layers")
        and kernel in (None, k.name)
    ]  # fmt: skip
    # _dropout's traffic is elements x (2 act + 1): read x, write y and the mask
    return float(sum(k.bytes / (2 * act + 1) for k in per_layer))


def _backward_of(k: Kernel, act: float, wgrad_bytes: float) -> list[Kernel]:
    """The backward kernels of one forward kernel (see the module docstring).
    ``wgrad_bytes``: bytes a weight-gradient GEMM moves per element of its output
    (:func:`workload` says which convention gives which)."""
    if k.kind == "gemm":
        t, n, kin = k.m, k.n, k.k
        dgrad = replace(
            k, name=f"{k.name} dgrad", pass_="backward", m=t, n=kin, k=n,
            bytes=t * n * act + k.weight_bytes + t * kin * act, saved_bytes=0.0,
        )  # fmt: skip
        wgrad = replace(
            k, name=f"{k.name} wgrad", pass_="backward", m=kin, n=n, k=t,
            bytes=t * kin * act + t * n * act + kin * n * wgrad_bytes, saved_bytes=0.0,
            weight_bytes=0.0,
        )  # fmt: skip
        if k.batch > 1:
            # a batched product of two activations (eager attention's Q K^T and P V): each
            # gradient reads the output gradient and one operand and writes the other's
            # gradient, in 16 bits, once per batch entry
            io = k.batch * (t * n + n * kin + t * kin) * act
            dgrad, wgrad = replace(dgrad, bytes=io), replace(wgrad, bytes=io)
        return [dgrad, wgrad]
    if k.kind == "attention":
        # Fused backward: 2.5 x the forward FLOPs; reads Q, K, V, O, dO, writes dQ, dK, dV.
        if k.name in _FUSED:
            return [replace(k, name=f"{k.name} backward", pass_="backward",
                            flops=2.5 * k.flops, bytes=2.0 * k.bytes, saved_bytes=0.0)]  # fmt: skip
        return [replace(k, name=f"{k.name} backward", pass_="backward", saved_bytes=0.0)]
    if k.name == "softmax":
        # dx = y * (dy - sum(dy * y)): dy and the saved probabilities y read in y's width,
        # dx written in the scores' 16 bits (torch.autocast's FP32 softmax returns its input
        # gradient in its input's dtype: _softmax_backward_data's input_dtype)
        elements = k.flops / _SOFTMAX_FLOPS
        y = k.bytes / elements - act  # the forward read the scores, wrote y
        return [replace(k, name="softmax backward", pass_="backward",
                        flops=_SOFTMAX_BACKWARD_FLOPS * elements,
                        bytes=elements * (2 * y + act), saved_bytes=0.0)]  # fmt: skip
    if k.kind in ("memory", "quant"):
        # dy and the saved input read, dx written: 1.5 x the forward traffic of one read and
        # one write (memlimited's element-wise backward costs); the flops about the same.
        return [replace(k, name=f"{k.name} backward", pass_="backward",
                        bytes=1.5 * k.bytes, saved_bytes=0.0)]  # fmt: skip
    if k.kind == "collective" and not k.overlappable:
        # the gradient crosses the same boundary the other way: an all-reduce again, an
        # all-gather becomes a reduce-scatter and back (sequence parallelism), a send a recv
        swap = {"all-gather": "reduce-scatter", "reduce-scatter": "all-gather"}
        op = swap.get(k.collective, k.collective)
        return [replace(k, name=f"{k.name} backward", pass_="backward", collective=op)]
    return []


def _collective(
    b: _Builder, name: str, path: str, op: str, group: str, ranks: int, nbytes: float,
    count: int, pass_: str, overlappable: bool = False,
) -> None:  # fmt: skip
    if ranks > 1 and nbytes > 0:
        b.add(name=name, path=path, pass_=pass_, kind="collective", flops=0.0,
              bytes=float(nbytes), count=count, collective=op, group=group, ranks=ranks,
              overlappable=overlappable)  # fmt: skip


def _check_divides(name: str, value: int, what: str, target: int) -> None:
    if target % value:
        raise InvalidParameter(f"'{name}' must divide {what} ({target}) (got {value})")


def workload(
    model: str | LlmSpec = "llama-2-7b",
    *,
    phase: str = "training",
    batch: int = 1,
    seq: int = 2048,
    context: int | None = None,
    precision: str = "bf16",
    weights: str = "same",
    group_size: int = 128,
    kv_dtype: str | None = None,
    attention: str = "flash2",
    causal: bool = True,
    recompute: str = "none",
    optimizer: str = "adamw_fused",
    micro_batches: int = 1,
    data_parallel: int = 1,
    zero: int = 0,
    tensor_parallel: int = 1,
    sequence_parallel: bool | None = None,
    pipeline_parallel: int = 1,
    pipeline_chunks: int = 1,
    context_parallel: int = 1,
    expert_parallel: int = 1,
    grad_bytes: int | None = None,
    experts: int = 1,
    top_k: int = 1,
    capacity_factor: float = 1.0,
    dropout: bool = False,
    autocast: bool = False,
    eager_layout: str = "strided",
) -> Workload:
    """The kernels of one step of ``model`` on one GPU, as a :class:`Workload` table.

    ``phase``: 'training' (forward, backward, optimizer; ``batch`` sequences of ``seq``
    tokens per micro-batch, ``micro_batches`` per step), 'prefill' (``batch`` prompts of
    ``seq`` tokens) or 'decode' (one new token for each of ``batch`` sequences with
    ``context`` cached tokens, default ``seq``). ``precision``: the GEMMs' dtype ('bf16' and
    'fp16' are autocast: FP32 weights, 16-bit activations; 'fp8' runs GEMMs in E4M3 with
    per-tensor scaling casts, as Transformer Engine). ``weights`` (inference): 'int8' or
    'int4' weight-only with one FP16 scale per ``group_size``, or 'w8a8' (int8 weights and
    activations, int8 Tensor Core GEMMs). ``attention``: 'eager' (scores in DRAM), 'flash1',
    'flash2', 'sdpa' (= flash2) or 'triton' (FlashAttention in Triton). ``recompute``: 'selective' recomputes attention's scores,
    'full' whole layers from their inputs. ``zero``: 0-3 (3 = FSDP). ``experts`` > 1 makes
    every MLP a mixture of ``experts`` with ``top_k`` routing and ``capacity_factor``.
    ``optimizer``: 'adamw' (PyTorch's multi-tensor AdamW), 'adamw_fused', 'sgd' (with
    momentum), 'adafactor' (factored second moments, no momentum) or 'adamw_8bit' (block-wise
    8-bit states, bitsandbytes).
    ``dropout``: dropout after attention's softmax (eager attention; fused kernels drop in
    place) and after both residual branches, as BERT and GPT train (LLM pretraining
    usually runs without). ``autocast`` (training in 'bf16' or 'fp16'): the memory
    convention of ``torch.autocast`` instead of Megatron-LM's 16-bit model: the residual
    stream and the norms' saved inputs stay FP32, and every linear layer saves the 16-bit
    copy of its FP32 weight for the backward pass (PyTorch "Automatic Mixed Precision"
    docs: ops autocast to 16 bits cast their FP32 inputs, and autograd keeps what the
    backward uses). ``eager_layout`` (eager attention): 'strided' (Megatron-LM: Q, K, V passed
    to the batched GEMMs as strided batches, the scale fused into Q K^T) or 'einsum' (a
    plain PyTorch reference on (batch, seq, heads, d) tensors: a kernel scales K and each of
    Q, K, V is copied into per-head order first; see :data:`EAGER_LAYOUTS`).
    """
    spec = llm(model)
    ph = check_choice("phase", phase, PHASES)
    bsz = check_int("batch", batch, allow_array=False, maximum=1 << 20)
    s = check_int("seq", seq, allow_array=False, maximum=1 << 22)
    ctx = s if context is None else check_int("context", context, allow_array=False,
                                              maximum=1 << 24)  # fmt: skip
    prec = check_choice("precision", precision, PRECISIONS)
    wf = check_choice("weights", weights, WEIGHT_FORMATS)
    gs = check_int("group_size", group_size, allow_array=False, maximum=1 << 20)
    kvd = _dtype(check_choice("kv_dtype", kv_dtype, ("fp16", "bf16", "fp8", "int8"))
                 if kv_dtype is not None else ("fp16" if prec in ("fp8", "fp4", "fp32", "tf32") else prec))  # fmt: skip
    impl = check_choice("attention", attention, ATTENTION_IMPLS)
    impl = "flash2" if impl == "sdpa" else impl
    causal = check_bool("causal", causal)
    dropout = check_bool("dropout", dropout)
    layout = check_choice("eager_layout", eager_layout, EAGER_LAYOUTS)
    autocast = check_bool("autocast", autocast) and ph == "training" and prec in ("bf16", "fp16")
    rc = check_choice("recompute", recompute, RECOMPUTE)
    opt = check_choice("optimizer", optimizer, OPTIMIZERS)
    mbs = check_int("micro_batches", micro_batches, allow_array=False, maximum=1 << 16)
    dp = check_int("data_parallel", data_parallel, allow_array=False, maximum=_MAX_RANKS)
    z = check_int("zero", zero, minimum=0, maximum=3, allow_array=False)
    tp = check_int("tensor_parallel", tensor_parallel, allow_array=False, maximum=1024)
    sp = (tp > 1 and ph == "training") if sequence_parallel is None else check_bool("sequence_parallel",
                                                               sequence_parallel)  # fmt: skip
    pp = check_int("pipeline_parallel", pipeline_parallel, allow_array=False, maximum=1024)
    chunks = check_int("pipeline_chunks", pipeline_chunks, allow_array=False, maximum=64)
    cp = check_int("context_parallel", context_parallel, allow_array=False, maximum=1024)
    ep = check_int("expert_parallel", expert_parallel, allow_array=False, maximum=1024)
    gb = None if grad_bytes is None else check_int("grad_bytes", grad_bytes, allow_array=False,
                                                   maximum=8)  # fmt: skip
    ne = check_int("experts", experts, allow_array=False, maximum=1 << 12)
    topk = check_int("top_k", top_k, allow_array=False, maximum=1 << 12)
    cap = float(check_number("capacity_factor", capacity_factor, minimum=1.0))
    if cap > 64:
        raise InvalidParameter(
            f"'capacity_factor' must be at most 64 (got {describe(capacity_factor)})"
        )
    training = ph == "training"
    if wf != "same" and training:
        raise InvalidParameter(f"'weights' must be 'same' for training (got {describe(weights)})")
    if topk > ne:
        raise InvalidParameter(f"'top_k' must be at most experts ({ne}) (got {topk})")
    _check_divides("expert_parallel", ep, "experts", ne)
    _check_divides("expert_parallel", ep, "data_parallel", dp)
    _check_divides("tensor_parallel", tp, "heads", spec.heads)
    _check_divides("pipeline_parallel", pp, "layers", spec.layers)
    if spec.layers % (pp * chunks):
        raise InvalidParameter(
            f"'pipeline_chunks' x pipeline_parallel must divide layers ({spec.layers}) "
            f"(got {chunks} x {pp})"
        )
    _check_divides("context_parallel", cp, "seq", s)
    if spec.heads % spec.kv_heads:
        raise InvalidParameter(f"'kv_heads' must divide heads ({spec.heads}) (got {spec.kv_heads})")
    if sp and tp == 1:
        sp = False
    if ph == "decode" and cp > 1:
        raise InvalidParameter(f"'context_parallel' must be 1 for decode (got {cp})")
    tokens = bsz * (1 if ph == "decode" else s)
    if tokens * mbs > _MAX_TOKENS:
        raise InvalidParameter(
            f"'batch' x 'seq' x 'micro_batches' must be at most {_MAX_TOKENS:,} tokens "
            f"(got {tokens * mbs:,})"
        )

    gemm_dt = _NARROW[prec][0] if prec in _NARROW else prec
    if wf == "w8a8":
        gemm_dt = "int8"
    act_dt = (
        "fp32"
        if prec in ("fp32", "tf32")
        else ("bf16" if prec in ("bf16", "fp8", "fp4") else "fp16")
    )
    act = float(_dtype(act_dt).bytes_per_element)
    b = _Builder(act=act, dt=act_dt)
    wbits = _bits_per_weight(wf, act_dt if prec not in _NARROW else prec, gs)
    L = spec.layers // pp
    h, hd = spec.hidden, spec.head_dim
    heads, kvh = spec.heads // tp, max(1, spec.kv_heads // tp)
    q_out, kv_out = heads * hd, kvh * hd
    t_local = tokens // cp  # tokens this GPU processes (context parallelism splits the sequence)
    t_sp = t_local / tp if sp else t_local  # tokens of the replicated-width tensors with SP
    kv_len = ctx if ph == "decode" else s  # keys each query sees (all of them with CP)
    quant_w = wf in _WEIGHT_ONLY
    gemm_dt_w = gemm_dt if not quant_w else act_dt
    layer = "layers[*]"
    norm_in = 4.0 if autocast else act  # autocast runs the residual stream in FP32
    # Under torch.autocast the residual stream is FP32 (the embedding's output and every
    # residual add are FP32 by type promotion) and layer_norm is on autocast's FP32 list:
    # a norm reads and writes FP32, the next linear layer casts its output to 16 bits in a
    # kernel of its own, and a residual add reads the FP32 stream and the 16-bit branch and
    # writes FP32 (PyTorch "Automatic Mixed Precision package" docs); counted in units of
    # the 16-bit element
    wide = 4.0 / act if autocast else 1.0

    def norm(name: str, path: str, rows: float, cnt: int) -> None:
        _memory(b, name, path, rows * h, _NORM_FLOPS, wide, wide, cnt,
                saved=rows * h * norm_in if training else 0.0)  # fmt: skip
        if autocast:
            b.add(name=f"{name} cast", path=path, pass_="forward", kind="quant",
                  flops=1.0 * rows * h, bytes=rows * h * (4.0 + act), count=cnt)  # fmt: skip

    def residual(rows: float) -> None:
        _memory(b, "residual add", layer, rows * h, _ADD_FLOPS, 1 + wide, wide, L)

    def lin(name: str, n: int, kin: int, saved: float, path: str = layer, cnt: int = L,
            t: int = t_local) -> None:  # fmt: skip
        kind_dt = gemm_dt_w
        _linear(b, name, path, t, n, kin, cnt, wbits, training, kind_dt, saved)
        if training and (autocast or prec in _NARROW):
            # autocast (and FP8/FP4 recipes, which keep higher-precision weights): the FP32
            # weight is cast to the GEMM's dtype on every forward (read 4 B, write 2 B per
            # weight); under autocast its backward converts the 16-bit weight gradient to
            # the FP32 .grad. A 16-bit model without autocast (Megatron-LM's FP16/BF16
            # modules, FSDP with 16-bit parameters) keeps its weights in 16 bits and casts
            # nothing here: its optimizer writes the 16-bit copy once per step
            # (_optimizer_kernels)
            b.add(name=f"{name} weight cast", path=path, pass_="forward", kind="quant",
                  flops=1.0 * n * kin, bytes=6.0 * n * kin, count=cnt,
                  saved_bytes=2.0 * n * kin if autocast else 0.0)  # fmt: skip
        if prec in _NARROW or wf == "w8a8":
            # scaled casts: the input is cast to the narrow format before the GEMM (one
            # read, one narrow write per element), as Transformer Engine's recipes do
            narrow = _NARROW[prec][1] if prec in _NARROW else 1.0
            b.add(name=f"{name} cast", path=path, pass_="forward", kind="quant",
                  flops=2.0 * t * kin, bytes=t * kin * (act + narrow), count=cnt)  # fmt: skip

    # Norm before attention, QKV, rotary embedding, attention, output projection, residual.
    norm("attn_norm", f"{layer}.attn_norm", t_sp, L)
    if sp:
        _collective(b, "sp all-gather", layer, "all-gather", "tp", tp, t_local * h * act, L,
                    "forward")  # fmt: skip
    # with sequence parallelism Megatron-LM saves the sequence-split input of the QKV and
    # first MLP GEMMs and all-gathers it again in the backward pass (Korthikanti et al.
    # 2022, section 4.2.2: with sequence and tensor parallelism every activation of the
    # layer is split t ways, 34/t s b h)
    lin("qkv_proj", q_out + 2 * kv_out, h, t_sp * h * act)
    if spec.rotary:
        _memory(b, "rotary", f"{layer}.attn", t_local * (q_out + kv_out), _ROPE_FLOPS, 1, 1, L)
    # attention: queries T_local (decode: batch), keys kv_len, per local head
    nq = bsz * (1 if ph == "decode" else s // cp)
    pairs = float(nq) * kv_len * heads
    # a causal mask halves the score blocks fused kernels compute; context parallelism keeps
    # that saving when the sequence is split in balanced (zig-zag) chunks, as ring attention
    # implementations do
    if ph != "decode" and causal:
        pairs_done = pairs / 2 if impl != "eager" else pairs  # eager computes every score
    else:
        pairs_done = pairs
    if ph == "decode":
        # one query row per sequence against its cache: a memory-bound read of K and V
        kv_read = bsz * 2.0 * kvh * hd * ctx * kvd.bytes_per_element
        b.add(name="decode attention", path=f"{layer}.attn", pass_="forward",
              kind="attention", flops=4.0 * pairs * hd, bytes=kv_read + 2 * nq * q_out * act,
              count=L)  # fmt: skip
    elif impl == "eager":
        gq = heads // kvh
        sc_bytes = pairs * act
        # the batched products of the attention core run in the activations' dtype under
        # FP8/FP4 recipes and int8 GEMMs: Transformer Engine's fp8_autocast runs the linear
        # layers' GEMMs in FP8 and attention in 16 bits (FP8 attention is its recipes'
        # fp8_dpa option, off by default, for the fused backend only), and no int8 scheme
        # here quantises Q, K or P
        attn_dt = act_dt if prec in _NARROW or gemm_dt == "int8" else gemm_dt
        if layout == "einsum":
            # k / sqrt(d) (one read, one write of K), then einsum's copies of Q, K and V into
            # (batch x heads, seq, d) order (EAGER_LAYOUTS): one read and one write each
            k_elems = float(bsz * kv_len * kv_out)
            _memory(b, "key scale", f"{layer}.attn", k_elems, 1, 1, 1, L)
            _memory(b, "query copy", f"{layer}.attn", float(nq * q_out), 0, 1, 1, L)
            _memory(b, "key copy", f"{layer}.attn", k_elems, 0, 1, 1, L)
        b.add(name="scores Q K^T", path=f"{layer}.attn", pass_="forward", kind="gemm",
              dtype=attn_dt, flops=2.0 * pairs * hd,
              bytes=(nq * q_out + bsz * kv_len * kv_out) * act + sc_bytes, count=L,
              m=s // cp * gq, n=kv_len, k=hd, batch=bsz * kvh,
              saved_bytes=(nq * q_out + bsz * kv_len * kv_out) * act if training else 0.0)  # fmt: skip
        keep = training and rc == "none"
        if autocast:
            # torch.autocast runs softmax in FP32 (its "ops that autocast to float32" list):
            # the 16-bit scores come in, FP32 probabilities go out and are saved for its
            # backward; dropout works on them in FP32 and saves only its mask, and P V casts
            # them back to 16 bits first, a kernel of its own whose output the GEMM saves
            # (PyTorch "Automatic Mixed Precision package" docs, CUDA op-specific behavior)
            b.add(name="softmax", path=f"{layer}.attn", pass_="forward", kind="memory",
                  flops=_SOFTMAX_FLOPS * pairs, bytes=pairs * (act + 4.0), count=L,
                  saved_bytes=4.0 * pairs if keep else 0.0)  # fmt: skip
            if dropout:
                _dropout(b, "attention dropout", f"{layer}.attn", pairs, L, keep, False, 4.0)
            b.add(name="probabilities cast", path=f"{layer}.attn", pass_="forward",
                  kind="quant", flops=1.0 * pairs, bytes=pairs * (4.0 + act), count=L,
                  saved_bytes=sc_bytes if keep else 0.0)  # fmt: skip
        else:
            _memory(b, "softmax", f"{layer}.attn", pairs, _SOFTMAX_FLOPS, 1, 1, L,
                    saved=sc_bytes if keep else 0.0)  # fmt: skip
            if dropout:
                _dropout(b, "attention dropout", f"{layer}.attn", pairs, L, keep, True)
        if layout == "einsum":
            _memory(b, "value copy", f"{layer}.attn", float(bsz * kv_len * kv_out), 0, 1, 1, L)
        b.add(name="context P V", path=f"{layer}.attn", pass_="forward", kind="gemm",
              dtype=attn_dt, flops=2.0 * pairs * hd,
              bytes=sc_bytes + (bsz * kv_len * kv_out + nq * q_out) * act, count=L,
              m=s // cp * gq, n=hd, k=kv_len, batch=bsz * kvh,
              saved_bytes=bsz * kv_len * kv_out * act if training else 0.0)  # fmt: skip
    else:
        qkvo = (2 * nq * q_out + 2 * bsz * kv_len * kv_out) * act
        lse = nq * heads * 4.0
        # m, n, k: queries and keys per sequence and the head size; batch: the (sequence,
        # head) pairs, the parallel units of a kernel that gives each its own thread block
        b.add(name=impl, path=f"{layer}.attn", pass_="forward", kind="attention",
              flops=4.0 * pairs_done * hd, bytes=qkvo, count=L, m=nq // bsz, n=kv_len, k=hd,
              batch=bsz * heads, saved_bytes=qkvo + lse if training else 0.0)  # fmt: skip
    if cp > 1:
        # ring attention passes every other rank's K and V around the ring once
        _collective(b, "cp K/V ring", layer, "all-gather", "cp", cp,
                    bsz * s * 2 * kv_out * act, L, "forward")  # fmt: skip
    # fused attention kernels write O in (batch, seq, heads, head dim) order, so the output
    # projection's input is a view of the O they already saved; eager attention's P V
    # output must be copied into that order first, a tensor of its own
    lin("o_proj", h, q_out, t_local * q_out * act if impl == "eager" or ph == "decode" else 0.0)
    if dropout:
        _dropout(b, "hidden dropout", layer, t_sp * h, L, training, False)
    if tp > 1:
        op = "reduce-scatter" if sp else "all-reduce"
        _collective(b, f"tp {op}", layer, op, "tp", tp, t_local * h * act, L, "forward")
    residual(t_sp)
    # MLP (dense or mixture of experts)
    norm("mlp_norm", f"{layer}.mlp_norm", t_sp, L)
    if sp:
        _collective(b, "sp all-gather", layer, "all-gather", "tp", tp, t_local * h * act, L,
                    "forward")  # fmt: skip
    ffn = spec.ffn // tp
    up_n = 2 * ffn if spec.gated_mlp else ffn
    if ne > 1:
        lin("router", ne, h, t_local * h * act)
        routed = math.ceil(t_local * topk * cap)  # token slots this GPU's tokens fill
        local_e = ne // ep
        # Only experts that receive a token run: with T tokens routed uniformly to top_k of
        # E experts, an expert receives none with probability (1 - k/E)^T (at batch-1
        # decode, just the top_k experts' weights are read).
        group_tokens = t_local * ep
        active = local_e * (1.0 - (1.0 - topk / ne) ** group_tokens)
        run = max(1, min(local_e, math.ceil(active - 1e-9)))
        rows_here = math.ceil(group_tokens * topk * cap * local_e / ne)
        per_expert = math.ceil(rows_here / run)  # rows each running expert receives
        if ep > 1:
            _collective(b, "ep dispatch all-to-all", f"{layer}.experts", "all-to-all", "ep",
                        ep, routed * h * act, L, "forward")  # fmt: skip
        t_e = per_expert * run
        _linear(b, "experts up", f"{layer}.experts", per_expert, up_n, h, L * run, wbits,
                training, gemm_dt_w, per_expert * h * act)  # fmt: skip
        act_rows = t_e
    else:
        lin("up_proj" if not spec.gated_mlp else "gate_up_proj", up_n, h, t_sp * h * act)
        act_rows = t_local
    if spec.gated_mlp:
        # autograd of silu(gate) * up keeps gate and up (one tensor when gate and up come
        # from one GEMM) and silu's output: 3 x tokens x ffn (a fused SwiGLU kernel keeps 2)
        _memory(b, "silu x up", f"{layer}.mlp", act_rows * ffn, _SWIGLU_FLOPS, 2, 1, L,
                saved=3 * act_rows * ffn * act if training else 0.0)  # fmt: skip
    else:
        _memory(b, "gelu", f"{layer}.mlp", act_rows * ffn, _GELU_FLOPS, 1, 1, L,
                saved=act_rows * ffn * act if training else 0.0)  # fmt: skip
    if ne > 1:
        _linear(b, "experts down", f"{layer}.experts", per_expert, h, ffn, L * run, wbits,
                training, gemm_dt_w, per_expert * ffn * act)  # fmt: skip
        if ep > 1:
            _collective(b, "ep combine all-to-all", f"{layer}.experts", "all-to-all", "ep",
                        ep, routed * h * act, L, "forward")  # fmt: skip
    else:
        lin("down_proj", h, ffn, t_local * ffn * act)
    if dropout:
        _dropout(b, "hidden dropout", layer, t_sp * h, L, training, False)
    if tp > 1:
        op = "reduce-scatter" if sp else "all-reduce"
        _collective(b, f"tp {op}", layer, op, "tp", tp, t_local * h * act, L, "forward")
    residual(t_sp)
    if pp > 1:
        # one activation crosses each of the stage's chunk boundaries
        _collective(b, "pp send/recv", layer, "p2p", "pp", 2, t_sp * h * act, chunks, "forward")

    # The head (on the last stage, the slowest): final norm, LM head, loss. Prefill and
    # decode only need the last position's logits.
    head_rows = t_local if training else bsz
    norm("final_norm", "norm", head_rows, 1)
    vocab_local = math.ceil(spec.head_outputs / tp)
    lin("lm_head", vocab_local, h, head_rows * h * act, path="lm_head", cnt=1, t=head_rows)
    if training:
        # HF / Megatron upcast the logits to FP32 for the cross-entropy; its log-softmax
        # output (FP32) is saved for the backward.
        logits = float(head_rows) * vocab_local
        b.add(name="cross-entropy", path="loss", pass_="forward", kind="memory",
              flops=_LOSS_FLOPS * logits, bytes=logits * (act + 4 + 4), count=1,
              saved_bytes=4.0 * logits)  # fmt: skip

    forward = list(b.kernels)
    kernels = list(forward)
    params = float(spec.params if ne == 1 else _moe_params(spec, ne))
    local_params = _local_params(spec, ne, tp, pp, ep)
    if training:
        # recomputation runs forward kernels again during the backward pass
        if rc != "none":
            for k in forward:
                if k.path == "lm_head" or k.path in ("loss", "norm"):
                    continue
                if rc == "full" or (rc == "selective" and k.name in _SELECTIVE):
                    kernels.append(replace(k, pass_="recompute", saved_bytes=0.0))
        # Bytes a weight-gradient GEMM moves per weight, by convention: under torch.autocast
        # its operands are 16-bit and so is its output (the weight cast's backward converts
        # it to FP32); FP32 training writes FP32; Megatron-LM's 16-bit model and Transformer
        # Engine's FP8/FP4 recipes accumulate it into the FP32 main_grad buffer inside the
        # GEMM (gradient accumulation fusion: Apex's wgrad_gemm_accum_fp32 and TE's
        # fuse_wgrad_accumulation run the GEMM with beta = 1, reading and writing main_grad)
        wgrad_bytes = act if autocast else (4.0 if act == 4.0 else 8.0)
        for k in forward:
            if autocast and k.kind == "quant":
                # autocast's casts are dtype conversions: the backward converts the gradient
                # back, reading it in the narrow width and writing it in the wide one, the
                # forward's traffic with nothing saved read (for the weight cast, autograd's
                # AccumulateGrad then takes that FP32 tensor as .grad, no kernel, when .grad
                # is unset: PyTorch's accumulate_grad.h)
                kernels.append(replace(k, name=f"{k.name} backward", pass_="backward",
                                       saved_bytes=0.0))  # fmt: skip
            elif k.name.endswith(" weight cast"):
                # FP8/FP4 recipes cast the weight inside their linear layer's autograd
                # function, whose backward hands the gradient to the weight directly
                # (Transformer Engine's _Linear): the cast has no backward kernel
                continue
            else:
                kernels.extend(_backward_of(k, act, wgrad_bytes))
        if mbs > 1:
            kernels = [replace(k, count=k.count * mbs) for k in kernels]
        kernels.extend(_optimizer_kernels(opt, local_params, dp, z, spec, L,
                                          sixteen_bit_model=prec in ("fp16", "bf16")
                                          and not autocast))  # fmt: skip
        # gradients are reduced in the activations' width (PyTorch DDP / FSDP with 16-bit
        # parameters) unless grad_bytes says otherwise (Megatron can reduce in FP32)
        gbytes = float(gb) if gb is not None else (2.0 if act < 4 else 4.0)
        if dp > 1:
            if z < 2:
                kernels.append(Kernel(name="gradient all-reduce", path="*", pass_="backward",
                                      kind="collective", dtype=act_dt, flops=0.0,
                                      bytes=local_params * gbytes, collective="all-reduce",
                                      group="dp", ranks=dp, overlappable=True))  # fmt: skip
            else:
                kernels.append(Kernel(name="gradient reduce-scatter", path="*", pass_="backward",
                                      kind="collective", dtype=act_dt, flops=0.0,
                                      bytes=local_params * gbytes, collective="reduce-scatter",
                                      group="dp", ranks=dp, overlappable=True,
                                      count=mbs if z == 3 else 1))  # fmt: skip
                gathers = 2 * mbs if z == 3 else 1  # ZeRO-3 gathers weights fwd and bwd
                kernels.append(Kernel(name="weight all-gather", path="*", pass_="forward",
                                      kind="collective", dtype=act_dt, flops=0.0,
                                      bytes=local_params * gbytes, collective="all-gather",
                                      group="dp", ranks=dp, overlappable=True,
                                      count=gathers))  # fmt: skip
    # model FLOPs (PaLM, appendix B), per GPU, without recomputation; forward-only phases 2N
    attn_term = 12.0 * spec.layers * spec.heads * spec.head_dim * (ctx if ph == "decode" else s)
    n_active = _active_params(spec, ne, topk)
    per_token = (6.0 * n_active + attn_term) if training else (2.0 * n_active + attn_term / 3)
    gpus_count = dp * tp * pp * cp  # expert parallelism reuses the data-parallel ranks
    step_tokens = tokens * mbs * dp  # all replicas
    mflops = per_token * step_tokens / gpus_count
    return Workload(
        model=spec.name,
        phase=ph,
        batch=bsz,
        seq=s,
        context=ctx,
        precision=prec,
        weights=wf,
        attention=impl,
        causal=causal,
        recompute=rc,
        optimizer=opt,
        micro_batches=mbs,
        data_parallel=dp,
        zero=z,
        tensor_parallel=tp,
        sequence_parallel=sp,
        pipeline_parallel=pp,
        pipeline_chunks=chunks,
        context_parallel=cp,
        expert_parallel=ep,
        kv_dtype=kvd.name,
        group_size=gs,
        gpus=gpus_count,
        params=params,
        params_per_gpu=local_params,
        tokens=tokens * mbs,
        model_flops=mflops,
        spec=spec,
        kernels=tuple(kernels),
        autocast=autocast,
        eager_layout=layout,
    )


def _layer_params(spec: LlmSpec, experts: int) -> tuple[int, int]:
    """(attention, MLP) weights of one layer; a MoE layer has ``experts`` MLPs and a router."""
    attn = sum(n * k for name, n, k in spec.linears() if name in ("qkv", "out"))
    mlp = sum(n * k for name, n, k in spec.linears() if name not in ("qkv", "out"))
    return attn, (mlp * experts + (spec.hidden * experts if experts > 1 else 0))


def _moe_params(spec: LlmSpec, experts: int) -> float:
    attn, mlp = _layer_params(spec, experts)
    return float(spec.layers * (attn + mlp) + spec.params - spec.linear_params)


def _active_params(spec: LlmSpec, experts: int, top_k: int) -> float:
    """Weights one token uses (a MoE token runs top-k experts); the embedding table is a
    lookup, so PaLM's N counts the LM head but not the input embedding when untied."""
    attn, _ = _layer_params(spec, 1)
    _, mlp = _layer_params(spec, 1)
    per_layer = attn + mlp * (top_k if experts > 1 else 1)
    head = spec.head_outputs * spec.hidden
    return float(spec.layers * per_layer + head)


def _local_params(spec: LlmSpec, experts: int, tp: int, pp: int, ep: int) -> float:
    """Weights one GPU holds before ZeRO sharding: its stage's layers split by TP (experts
    by EP), plus the embedding and LM head split by TP (the first and last stages)."""
    attn, mlp = _layer_params(spec, experts)
    mlp_local = mlp / (ep if experts > 1 else 1)
    layers = spec.layers / pp
    emb = spec.embedding_params
    norms = (2 * spec.layers + 1) * spec.hidden / pp
    return float(layers * (attn + mlp_local) / tp + emb / tp + norms)


def _optimizer_kernels(
    opt: str, local_params: float, dp: int, zero: int, spec: LlmSpec, layers: int,
    sixteen_bit_model: bool = False,
) -> list[Kernel]:  # fmt: skip
    shard = local_params / (dp if zero >= 1 else 1)
    # A 16-bit model's weights come from the FP32 master copy once per step (Megatron-LM's
    # mixed-precision optimizer copies main params to model params; FSDP casts its FP32
    # shard before the all-gather): read 4 B, write 2 B each
    copy = [Kernel(name="16-bit weight copy", path="*", pass_="optimizer", kind="optimizer",
                   dtype="fp32", flops=shard, bytes=6.0 * shard)] if sixteen_bit_model else []  # fmt: skip
    return _optimizer_update(opt, shard, spec, layers) + copy


def _optimizer_update(opt: str, shard: float, spec: LlmSpec, layers: int) -> list[Kernel]:
    """The optimizer's update kernels over ``shard`` weights."""
    fl, by = {
        "sgd": (_SGD_FLOPS, _SGD_BYTES),
        "adafactor": (_ADAFACTOR_FLOPS, _ADAFACTOR_BYTES),
    }.get(opt, (_ADAM_FLOPS, _ADAM_BYTES))
    if opt == "adamw_fused":
        return [Kernel(name="fused AdamW", path="*", pass_="optimizer", kind="optimizer",
                       dtype="fp32", flops=fl * shard, bytes=by * shard)]  # fmt: skip
    tensors = layers * (len(spec.linears()) + 2) + 3
    if opt == "adamw_8bit":
        return [Kernel(name="8-bit AdamW (per tensor)", path="*", pass_="optimizer",
                       kind="optimizer", dtype="fp32", flops=_ADAM8_FLOPS * shard / tensors,
                       bytes=_ADAM8_BYTES * shard / tensors, count=tensors)]  # fmt: skip
    # unfused: several kernels per tensor, each a read-modify-write of its FP32 state, about
    # twice the fused kernel's traffic in all
    ops = _UNFUSED_ADAM_OPS if opt in ("adamw", "adafactor") else 2
    return [Kernel(name=f"{opt} (per tensor)", path="*", pass_="optimizer", kind="optimizer",
                   dtype="fp32", flops=fl * shard / (tensors * ops),
                   bytes=2.0 * by * shard / (tensors * ops), count=tensors * ops)]  # fmt: skip


# -- constants of the new kernel kinds ----------------------------------------------------


@dataclass(frozen=True)
class _Constant:
    value: float
    basis: str
    source: str


def _constants() -> dict[tuple[str, str], _Constant]:
    from .gpus import _read_csv

    return {
        (r["target"].lower(), r["constant"]): _Constant(float(r["value"]), r["basis"], r["source"])
        for r in _read_csv("kernel_efficiency.csv")
    }


_CONSTANTS: dict[tuple[str, str], _Constant] = {}


def workload_constants(gpu: str | Gpu = "A100") -> dict[str, _Constant]:
    """The calibrated constants of attention, quantised and collective kernels for ``gpu``
    (``data/kernel_efficiency.csv``: the GPU's row, else its architecture's, else the
    default), each with its basis and source."""
    g = _gpu(gpu)
    if not _CONSTANTS:
        _CONSTANTS.update(_constants())
    names = sorted({c for _, c in _CONSTANTS})
    out = {}
    for name in names:
        for target in (g.name.lower(), g.architecture.lower(), "default"):
            if (target, name) in _CONSTANTS:
                out[name] = _CONSTANTS[(target, name)]
                break
    return out


# -- pricing ------------------------------------------------------------------------------


# Memory-bound kernels built on reductions over a row (the forward kernel's name).
_REDUCTIONS = ("attn_norm", "mlp_norm", "final_norm", "softmax", "cross-entropy")


def _op_class(k: Kernel) -> str:
    if k.kind in ("gemm", "attention"):
        return "tensor_contraction"
    base = k.name.removesuffix(" backward")
    return "statistical_normalization" if base in _REDUCTIONS else "elementwise"


@dataclass(frozen=True, eq=False)
class WorkloadTime(ResultMixin):
    """A workload priced on one GPU: the model's prediction, in one timing context.

    ``times_s``: each kernel's device time (one run, fixed cost included), in the order of
    ``workload.kernels``; ``math_times_s`` and ``memory_times_s`` its math and DRAM times at
    the achievable rates (a kernel is math-bound where the first is larger). ``device_time_s``: all compute kernels back to back (what CUPTI
    sums); ``launch_exposed_s``: time the GPU waits for the host ('eager'), or the one graph
    launch ('back-to-back', a CUDA graph); ``communication_s`` and ``communication_exposed_s``: the collectives,
    and what of them is not hidden behind compute (``overlapped_exposed_s``: the part of the
    collectives meant to overlap, gradient reduction and ZeRO-3 gathers, that outlasts it); ``bubble_s``: pipeline fill and drain.
    ``step_s`` is their sum. ``mfu``: model FLOPs (PaLM's count) over step time and the
    GPU's dense peak in the GEMMs' dtype. ``memory``: what the step keeps on the GPU, and
    whether it fits.
    """

    gpu: str
    timing: str
    step_s: float
    device_time_s: float
    launch_exposed_s: float
    communication_s: float
    communication_exposed_s: float
    overlapped_exposed_s: float
    bubble_s: float
    tokens_per_s: float
    model_flops_per_s: float
    mfu: float
    memory_bytes: float
    capacity_bytes: float
    fits: bool
    categories: dict[str, float]
    times_s: Any = field(repr=False)
    math_times_s: Any = field(repr=False)
    memory_times_s: Any = field(repr=False)
    workload: Workload = field(repr=False)
    memory: WorkloadMemory = field(repr=False)

    _units: ClassVar[dict[str, str]] = {
        "step_s": "s",
        "device_time_s": "s",
        "launch_exposed_s": "s",
        "communication_s": "s",
        "communication_exposed_s": "s",
        "overlapped_exposed_s": "s",
        "bubble_s": "s",
        "model_flops_per_s": "FLOP/s",
        "memory_bytes": "iB",
        "capacity_bytes": "iB",
    }
    _hidden: ClassVar[tuple[str, ...]] = (
        "times_s",
        "math_times_s",
        "memory_times_s",
        "workload",
        "memory",
    )

    def _title(self) -> str:
        w = self.workload
        return (
            f"{w.model} {w.phase} on {self.gpu} ({self.timing} timing): "
            f"{format_quantity(self.step_s, 's')} per step, {self.feasibility}"
        )

    @property
    def feasibility(self) -> str:
        """'fits: 61.2 GiB of 80 GiB' or 'does not fit: 129 GiB per 80 GiB GPU'."""
        need = format_quantity(self.memory_bytes, "iB", 3)
        cap = format_quantity(self.capacity_bytes, "iB", 3)
        return f"fits: {need} of {cap}" if self.fits else f"does not fit: {need} per {cap} GPU"

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in super().to_dict().items() if k not in ("workload", "memory")}
        out["memory"] = self.memory.to_dict()
        out["feasibility"] = self.feasibility
        return out

    def _rows(self) -> list[tuple[str, str]]:
        rows = super()._rows()
        rows.append(("memory", self.feasibility))
        return rows

    def by_class(self) -> dict[str, dict[str, float]]:
        """The step's FLOPs and device time by operation class (the slides' "Transformer
        example": tensor contractions, statistical normalizations, element-wise operators),
        each with ``flops``, ``time_s``, ``flops_share`` and ``runtime_share``.

        GEMMs and attention kernels are contractions; norms, softmax and the loss (built on
        reductions) statistical normalizations; every other memory-bound kernel and cast
        element-wise. The optimizer and the collectives are left out, as the slides'
        measured split of the forward and backward passes does.
        """
        out = {c: {"flops": 0.0, "time_s": 0.0} for c in OP_CLASSES}
        for k, t in zip(self.workload.kernels, self.times_s, strict=True):
            if k.kind in ("optimizer", "collective"):
                continue
            out[_op_class(k)]["flops"] += k.flops * k.count
            out[_op_class(k)]["time_s"] += float(t) * k.count
        flops = sum(v["flops"] for v in out.values())
        time_s = sum(v["time_s"] for v in out.values())
        for v in out.values():
            v["flops_share"] = v["flops"] / flops if flops else 0.0
            v["runtime_share"] = v["time_s"] / time_s if time_s else 0.0
        return out

    def top_kernels(self, n: int = 10) -> list[tuple[Kernel, float]]:
        """The ``n`` kernels that take the most time in the step (time x count)."""
        n = check_int("n", n, allow_array=False, maximum=1 << 20)
        total = self.times_s * self.workload.column("count")
        order = np.argsort(-total)[:n]
        return [(self.workload.kernels[i], float(total[i])) for i in order]

    def kernel_table(self, n: int = 15) -> str:
        """The kernels that take the time, as text: one row per kernel, largest first."""
        return str(self.breakdown(n))

    def breakdown(self, n: int = 15) -> TimeBreakdown:
        """Which kernels take the time: the ``n`` largest and the step's categories."""
        top = self.top_kernels(n)
        return TimeBreakdown(
            title=self._title(),
            step_s=self.step_s,
            categories=dict(self.categories),
            kernels=tuple(
                {"pass": k.pass_, "path": k.path, "kernel": k.name, "kind": k.kind,
                 "count": k.count, "time_s": t,
                 "share": t / self.step_s if self.step_s else 0.0}
                for k, t in top
            ),
            _cells=tuple(
                (*_row_cells(k)[:7], format_quantity(t, "s"),
                 f"{t / self.step_s:.1%}" if self.step_s else "-")
                for k, t in top
            ),
        )  # fmt: skip


@dataclass(frozen=True)
class TimeBreakdown(ResultMixin):
    """Where a priced step's time goes: its categories (GEMMs, attention, memory-bound,
    optimizer, exposed communication, pipeline bubble, exposed launch; they add up to
    ``step_s``) and its largest kernels (time x count and share of the step)."""

    title: str
    step_s: float
    categories: dict[str, float]
    kernels: tuple[dict[str, Any], ...]
    _cells: tuple[tuple[str, ...], ...] = field(default=(), repr=False)

    _units: ClassVar[dict[str, str]] = {"step_s": "s"}

    def _title(self) -> str:
        return self.title

    def _table(self) -> tuple[list[str], list[list[str]]]:
        return [*_HEADER[:7], "time", "share"], [list(c) for c in self._cells]

    def __str__(self) -> str:
        header, rows = self._table()
        cats = "  ".join(
            f"{k} {format_quantity(v, 's')}" for k, v in self.categories.items() if v > 0
        )
        return _table_text(header, rows, self.title) + "\n" + cats

    def _repr_html_(self) -> str:
        header, rows = self._table()
        return _table_html(header, rows, self.title)


@dataclass(frozen=True)
class WorkloadMemory(ResultMixin):
    """Bytes one GPU holds at the step's peak, from the kernel list's saved tensors.

    ``weights_bytes``, ``gradients_bytes``, ``optimizer_bytes``: model states after ZeRO
    sharding (autocast convention: FP32 weights and gradients; 16-bit copies are made per
    op and freed). ``activations_bytes``: tensors the forward kernels save for backward,
    for the micro-batches alive at once. ``transient_bytes``: the largest short-lived
    buffers at the peak (the FP32 logits' gradient of the loss backward, ZeRO-3's gathered
    layer, one layer's recomputed activations). ``kv_cache_bytes``: inference only.
    """

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    transient_bytes: float
    kv_cache_bytes: float
    total_bytes: float

    _units: ClassVar[dict[str, str]] = {
        "weights_bytes": "iB",
        "gradients_bytes": "iB",
        "optimizer_bytes": "iB",
        "activations_bytes": "iB",
        "transient_bytes": "iB",
        "kv_cache_bytes": "iB",
        "total_bytes": "iB",
    }


def workload_memory(w: Workload) -> WorkloadMemory:
    """Peak bytes on one GPU for workload ``w`` (see :class:`WorkloadMemory`)."""
    if not isinstance(w, Workload):
        raise InvalidParameter(f"'workload' must be a Workload (got {describe(w)})")
    p = w.params_per_gpu
    spec = w.spec
    if w.phase != "training":
        # every weight this GPU holds, as stored (experts that run no token this step too);
        # the input embedding and the norms stay in 16 bits
        wbits = _bits_per_weight(w.weights, w.precision, w.group_size)
        emb = spec.vocab * spec.hidden / w.tensor_parallel * (not spec.tied_embeddings)
        norms = (2 * spec.layers + 1) * spec.hidden / w.pipeline_parallel
        weights = (p - emb - norms) * wbits / 8 + (emb + norms) * 2.0
        kv = 2.0 * spec.layers / w.pipeline_parallel * max(1, spec.kv_heads // w.tensor_parallel)
        kv *= spec.head_dim * w.context * w.batch * _dtype(w.kv_dtype).bytes_per_element
        act = max((k.bytes for k in w.kernels if k.kind != "collective"), default=0.0)
        total = weights + kv + act
        return WorkloadMemory(weights, 0.0, 0.0, 0.0, act, kv, total)
    z, dp = w.zero, w.data_parallel
    wb = 4.0  # FP32 weights (autocast and FP8/FP4 recipes keep FP32 masters)
    weights = p * wb / (dp if z >= 3 else 1)
    grads = p * wb / (dp if z >= 2 else 1)
    states = p * _STATE_BYTES[w.optimizer] / (dp if z >= 1 else 1)
    view = saved_activations(w, segment=1 if w.recompute == "full" else None)
    transient = max(view.transient_bytes, autocast_cache_bytes(w))
    total = weights + grads + states + view.held_bytes + transient
    return WorkloadMemory(weights, grads, states, view.held_bytes, transient, 0.0,
                          total)  # fmt: skip


def autocast_cache_bytes(w: Workload) -> float:
    """Bytes of 16-bit weight copies torch.autocast holds at the end of a forward pass that
    recomputes (0 otherwise).

    torch.autocast caches the 16-bit cast of every FP32 weight for the rest of the autocast
    region (its ``cache_enabled`` default; PyTorch "Automatic Mixed Precision package" docs)
    and drops the cache when the region exits, before the backward pass. Without
    recomputation autograd saves those copies anyway (they are in the saved tensors); with
    it, nothing saves them, yet all of them are alive when the forward pass ends: one copy of
    every weight the step casts, for one micro-batch.
    """
    if not isinstance(w, Workload):
        raise InvalidParameter(f"'workload' must be a Workload (got {describe(w)})")
    if not (w.autocast and w.recompute != "none"):
        return 0.0
    copies = sum(
        k.saved_bytes * k.count
        for k in w.kernels
        if k.pass_ == "forward" and k.name.endswith("weight cast")
    )
    return float(copies) / w.micro_batches


def checkpointed_bytes(
    layers: int, layer_bytes: float, input_bytes: float, segment: int | None
) -> tuple[float, float, int]:
    """(bytes stored after the forward pass, peak bytes, layers recomputed) of ``layers``
    layers saving ``layer_bytes`` each, checkpointed in segments of ``segment`` layers
    (None: no checkpointing; Chen et al. 2016): ceil(n/k) X stored, one segment rebuilt at
    a time, ceil(n/k) X + k A - X at the peak, every layer run forward once more."""
    if segment is None:
        return layers * layer_bytes, layers * layer_bytes, 0
    stored = math.ceil(layers / segment) * input_bytes
    return stored, stored + segment * layer_bytes - input_bytes, layers


@dataclass(frozen=True)
class SavedActivations:
    """What a training step's forward kernels leave for the backward pass on one GPU.

    ``held_bytes``: the saved tensors when the forward pass ends (the micro-batches alive
    at once); ``transient_bytes``: what the backward pass adds at its peak;
    ``per_layer_bytes``: one layer's saved tensors for one micro-batch;
    ``layer_input_bytes``: one layer's input; ``recomputed_layers``: layers run forward
    again.
    """

    held_bytes: float
    transient_bytes: float
    per_layer_bytes: float
    layer_input_bytes: float
    recomputed_layers: int


def saved_activations(
    w: Workload, *, segment: int | None = None, head: bool = True
) -> SavedActivations:
    """The activation view of a training workload's kernel list.

    One layer saves A bytes per micro-batch (the sum of its forward kernels' saved
    tensors) and its input is X. With checkpointed segments of ``segment`` layers (Chen et
    al. 2016) only every segment's input is kept, ceil(n / k) X, and the backward pass
    rebuilds one segment at a time, k A - X more (its first input is already kept). The
    first pipeline stage holds up to ``pipeline_parallel`` micro-batches (1F1B). The
    backward's peak adds the largest of: the rebuilt segment, the loss backward's
    logits-sized tensors, ZeRO-3's gathered layer, and eager attention's two
    probability-sized gradients (softmax's backward) in the first layer the backward
    reaches, by which time that layer has freed what it saved after its attention core and
    the head its tensors. ``head=False`` stops the count at the last layer (no final norm,
    LM head or loss), as Korthikanti et al. (2022) count.
    """
    spec = w.spec
    fwd = [k for k in w.kernels if k.pass_ == "forward" and k.saved_bytes]
    in_layer = [k for k in fwd if k.path.startswith("layers")]
    layer = float(sum(k.saved_bytes for k in in_layer))
    head_bytes = float(sum(k.saved_bytes for k in fwd if not k.path.startswith("layers")))
    n = spec.layers // w.pipeline_parallel
    # a layer's input is the residual stream: FP32 under autocast
    act = 4.0 if w.precision in ("fp32", "tf32") or w.autocast else 2.0
    x = w.tokens / w.micro_batches / w.context_parallel * spec.hidden * act
    if w.sequence_parallel:
        x /= w.tensor_parallel
    k_seg = None if segment is None else min(segment, n)
    stored, peak, recomputed = checkpointed_bytes(n, layer, x, k_seg)
    logits_grad, gathered = step_transients(w)
    if not head:
        head_bytes = logits_grad = 0.0
    every = [k for k in w.kernels if k.pass_ == "forward" and k.path.startswith("layers")]
    names = [k.name for k in every]
    attention = 0.0
    if "softmax" in names and "context P V" in names:
        after = float(sum(k.saved_bytes for k in every[names.index("context P V") + 1 :]))
        softmax = every[names.index("softmax")]
        probabilities = softmax.bytes / 2  # it reads and writes the probabilities once
        # selective recomputation rebuilds the probabilities too before their gradients
        tensors = 2.0 if softmax.saved_bytes else 3.0
        attention = (peak - stored) - after - head_bytes + tensors * probabilities
    alive = min(w.micro_batches, w.pipeline_parallel) if w.pipeline_parallel > 1 else 1
    return SavedActivations(
        held_bytes=alive * (stored + head_bytes),
        transient_bytes=max(peak - stored, logits_grad, gathered, attention),
        per_layer_bytes=layer,
        layer_input_bytes=x,
        recomputed_layers=recomputed,
    )


def step_transients(w: Workload) -> tuple[float, float]:
    """Short-lived buffers of a training step that can set its peak, in bytes:
    (at the loss backward, two logits-sized FP32 tensors, the gradient of the
    log-probabilities and that of the logits, beside the saved log-probabilities and the
    logits themselves, which the training loop holds as the model's output until the
    step ends; ZeRO-3's gathered 16-bit copy of the largest layer or of the LM head)."""
    loss = next((k for k in w.kernels if k.pass_ == "forward" and k.path == "loss"), None)
    act = 4.0 if w.precision in ("fp32", "tf32") else 2.0
    # the loss kernel saves FP32 log-probabilities: 4 bytes per logit
    logits_grad = (2.0 + act / 4.0) * loss.saved_bytes if loss is not None else 0.0
    gathered = 0.0
    if w.zero >= 3 and w.data_parallel > 1:
        attn, mlp = _layer_params(w.spec, 1)
        largest = max(attn + mlp, w.spec.head_outputs * w.spec.hidden) / w.tensor_parallel
        act_elem = 4.0 if w.precision in ("fp32", "tf32") else 2.0
        gathered = largest * act_elem
    return logits_grad, gathered


def _link_for(k: Kernel, stride: int, gpus_per_node: int, nics_per_node: int,
              intra: Interconnect, inter: Interconnect, eff_link: float,
              eff_net: float) -> tuple[float, float]:  # fmt: skip
    """Bus bandwidth and per-step latency of collective ``k`` over the topology.

    Inside a server the rings run over NVLink. A group that spans servers uses every NIC its
    GPUs sit next to (NCCL runs one ring per NIC; :mod:`.topology`): an 8-GPU data-parallel
    group per server moves at 8 NICs per server, a group with one GPU per server at one.
    ``eff_link`` and ``eff_net``: the shares of NVLink's and a NIC's one-way bandwidth a
    collective sustains (data/kernel_efficiency.csv).
    """
    per_node = group_per_node(k.ranks, stride, gpus_per_node)
    bw = topology_bandwidth(k.collective, k.ranks, per_node, gpus_per_node, nics_per_node,
                            intra.bandwidth_bytes_per_s * eff_link,
                            inter.bandwidth_bytes_per_s * eff_net)  # fmt: skip
    if per_node >= k.ranks:
        return bw, intra.latency_s
    return bw, max(intra.latency_s, inter.latency_s)


def _collective_time(k: Kernel, bw: float, lat: float) -> float:
    n, s = k.ranks, k.bytes
    if k.collective == "all-reduce":
        # ring: reduce-scatter then all-gather, 2 (n - 1) steps; NCCL switches to a (double
        # binary) tree for small messages, whose latency grows with log2 n instead (NCCL
        # documentation, NCCL_ALGO): the faster of the two
        ring = 2 * (n - 1) * lat + 2 * (n - 1) / n * s / bw
        tree = 2 * math.ceil(math.log2(n)) * lat + 2 * s / bw
        return min(ring, tree)
    if k.collective in ("all-gather", "reduce-scatter", "all-to-all"):
        return (n - 1) * lat + (n - 1) / n * s / bw
    return lat + s / bw  # p2p


def price(
    w: Workload,
    gpu: str | Gpu = "H100",
    *,
    timing: str = "back-to-back",
    gpus_per_node: int = 8,
    intra_link: str | None = None,
    inter_link: str | None = None,
    overlap: bool = True,
    nics_per_node: int | None = None,
    isolated: bool = False,
) -> WorkloadTime:
    """Price every kernel of ``w`` on ``gpu`` and assemble the step (the model's prediction).

    - GEMMs: the kit's GEMM model (:func:`~.gemm.gemm_sweep`), one vectorised call, at the
      sustained clock (a step is one turn of a loop that keeps the GPU busy, so a
      power-limited board is at its limit, not bursting from idle); a weight-only quantised
      GEMM streams its packed weights at the quantised kernels' achievable bandwidth and
      does its math at their efficiency.
    - Attention: fused kernels at a fraction of the Tensor Core peak per implementation and
      architecture, their IO at the achievable bandwidth; decode attention streams the cache.
    - Memory-bound kernels, casts and the optimizer: the achievable DRAM bandwidth of
      ``data/achievable.csv`` plus the device-side fixed cost per kernel.
    - Collectives: rings over NVLink inside a node; across nodes a group uses every NIC
      next to its GPUs, ``nics_per_node`` per node of ``gpus_per_node`` GPUs (default: one
      NIC per GPU), as NCCL's one ring per NIC does (:mod:`.topology`); ``nics_per_node=1``
      gives the pessimistic count of one flat ring through a single NIC per node.

    ``timing`` (core.assumptions' timing contexts): 'kernel' (the kernels' own durations
    summed), 'back-to-back' or its alias 'graph' (one CUDA graph launch, then the kernels
    back to back: never faster than 'kernel'), 'eager' (the host issues each kernel; the GPU
    idles whenever it runs ahead of the host).

    ``isolated``: price each kernel as if it ran alone, without the slowdown a training
    step's Tensor Core GEMMs show against the same GEMMs timed alone
    (``training_gemm_efficiency`` of ``data/kernel_efficiency.csv``): the per-layer and
    per-operation views use it; a whole training step does not.
    """
    if not isinstance(w, Workload):
        raise InvalidParameter(f"'workload' must be a Workload (got {describe(w)})")
    g = _gpu(gpu)
    if isinstance(timing, str) and timing.strip().lower() in _TIMING_ALIASES:
        timing = _TIMING_ALIASES[timing.strip().lower()]
    ctx = check_choice("timing", timing, TIMINGS)
    npn = check_int("gpus_per_node", gpus_per_node, allow_array=False, maximum=1024)
    nics = npn if nics_per_node is None else check_int(
        "nics_per_node", nics_per_node, allow_array=False, maximum=1024)  # fmt: skip
    overlap = check_bool("overlap", overlap)
    in_step = not check_bool("isolated", isolated) and w.phase == "training"
    intra, inter = default_links(g)
    if intra_link is not None:
        intra = interconnect(intra_link)
    if inter_link is not None:
        inter = interconnect(inter_link)
    ks = w.kernels
    count = w.column("count").astype(np.float64)
    kinds = w.column("kind")
    times = np.zeros(len(ks))
    math_s = np.zeros(len(ks))
    memory_s = np.zeros(len(ks))
    consts = workload_constants(g)
    bw = g.memory_bandwidth_bytes_per_s

    # GEMMs: one call of the GEMM model per dtype
    gemm_idx = np.flatnonzero(kinds == "gemm")
    for dt in sorted({ks[i].dtype for i in gemm_idx}):
        idx = np.array([i for i in gemm_idx if ks[i].dtype == dt])
        if not g.supports(dt):
            raise InvalidParameter(
                f"'precision' must be a dtype {g.name} runs (got {describe(dt)})"
            )
        m = np.array([ks[i].m for i in idx], dtype=np.int64)
        n = np.array([ks[i].n for i in idx], dtype=np.int64)
        kk = np.array([ks[i].k for i in idx], dtype=np.int64)
        bt = np.array([ks[i].batch for i in idx], dtype=np.int64)
        sw = gemm_sweep(m, n, kk, batch=bt, dtype=dt, gpu=g, sustained=True)
        t = np.asarray(sw.predicted_time_s, dtype=np.float64).copy()
        math_s[idx] = sw.math_time_s
        memory_s[idx] = sw.memory_time_s
        if w.weights in _WEIGHT_ONLY:
            cal = achievable(g, dt)
            fmt = "int8" if w.weights == "fp8" else w.weights
            eff_bw = consts[f"quant_{fmt}_bandwidth"].value
            eff_math = consts["quant_math"].value
            wq = np.array([ks[i].weight_bytes for i in idx])
            quant = wq > 0
            other = np.array([ks[i].bytes for i in idx]) - wq
            mem_t = wq / (bw * cal.memory_fraction * eff_bw) + other / (bw * cal.memory_fraction)
            math_t = np.asarray(sw.math_time_s, dtype=np.float64) / eff_math
            qt = cal.kernel_overhead_s + overlap_time(math_t, mem_t)
            t = np.where(quant, qt, t)
            math_s[idx] = np.where(quant, math_t, math_s[idx])
            memory_s[idx] = np.where(quant, mem_t, memory_s[idx])
        if in_step and g.unit_for(dt) == "tensor":
            # Tensor Core GEMMs inside a training step run slower than the same GEMMs timed
            # alone (data/kernel_efficiency.csv, training_gemm_efficiency: fitted to the
            # shipped A100 training rows; the model does not yet separate the causes, such
            # as clocks under a step's mixed load and communication kernels sharing the SMs)
            eff_step = consts["training_gemm_efficiency"].value
            t = t / eff_step
            math_s[idx] = math_s[idx] / eff_step
        times[idx] = t

    # attention, memory-bound, casts, optimizer
    for i, k in enumerate(ks):
        if k.kind in ("gemm", "collective"):
            continue
        cal = achievable(g, k.dtype if g.supports(k.dtype) else "fp32")
        k_mem = k.bytes / (bw * cal.memory_fraction)
        if k.kind == "attention" and k.name.split()[0] in _FUSED:
            k_math = _fused_attention_math_s(k.flops, k.name.split()[0], g, k.dtype, k.batch,
                                             k.n)  # fmt: skip
        else:
            k_math = k.flops / (_cuda_peak(g, _dtype(k.dtype)) * cal.math_fraction)
        times[i] = cal.kernel_overhead_s + overlap_time(k_math, k_mem)
        math_s[i], memory_s[i] = k_math, k_mem

    # collectives over the topology
    tp, cp, pp = w.tensor_parallel, w.context_parallel, w.pipeline_parallel
    stride = {"tp": 1, "cp": tp, "pp": tp * cp, "ep": tp * cp * pp, "dp": tp * cp * pp}
    eff_link = consts["collective_bandwidth"].value
    eff_net = consts["network_bandwidth"].value
    for i, k in enumerate(ks):
        if k.kind != "collective":
            continue
        lbw, lat = _link_for(k, stride[k.group], npn, nics, intra, inter, eff_link, eff_net)
        times[i] = _collective_time(k, lbw, lat)
        memory_s[i] = times[i]

    compute = kinds != "collective"
    dev = float((times * count)[compute].sum())
    is_comm = ~compute
    overl = np.array([k.overlappable for k in ks]) & is_comm
    crit = float((times * count)[is_comm & ~overl].sum())
    hidden_comm = float((times * count)[overl].sum())
    bwd = float(
        (times * count)[compute & np.isin(w.column("pass_"), ["backward", "recompute"])].sum()
    )
    # gradient all-reduce (ZeRO 0-2) runs in buckets during the last micro-batch's backward
    # pass (the others accumulate locally; Li et al. 2020, section 3.2.3); ZeRO-3's gathers
    # and reduce-scatters come with every micro-batch and overlap all of its compute
    window = (dev if w.zero >= 3 else bwd / w.micro_batches) if overlap else 0.0
    overlapped_exposed = max(0.0, hidden_comm - window)
    comm_exposed = crit + overlapped_exposed

    # pipeline bubble: (p - 1) micro-batch slots of the stage (1F1B / GPipe), divided by
    # the chunks of the interleaved schedule (Narayanan et al. 2021, section 2.2.2)
    bubble = 0.0
    if pp > 1:
        per_mb = (dev - float((times * count)[kinds == "optimizer"].sum())) / w.micro_batches
        bubble = (pp - 1) * (per_mb + crit / w.micro_batches) / w.pipeline_chunks

    # the timing context
    n_launch = float(count[compute].sum())
    if ctx == "kernel":
        launch = 0.0
    elif ctx == "back-to-back":
        launch = CUDA_GRAPH_LAUNCH_S
    else:
        # one micro-batch's chain, repeated; the optimizer's kernels after it
        # the host's time per eager call: the fitted launch overhead of data/achievable.csv
        # (the GPU's host where one was measured, else the default row), the same constant
        # the GEMM model adds to one eager call (core.assumptions.HOST_LAUNCH_OVERHEAD_S)
        host = achievable(g, _gemm_dt_of(ks)).launch_overhead_s
        r = w.micro_batches
        per_mb = compute & (kinds != "optimizer")
        launch = _eager_exposed(times[per_mb], count[per_mb] // r, host, r)
        opt = kinds == "optimizer"
        launch += _eager_exposed(times[opt], count[opt], host)
    step = dev + launch + comm_exposed + bubble
    cats = {c: 0.0 for c in CATEGORIES}
    for kind, cat in _CATEGORY_OF_KIND.items():
        cats[cat] += float((times * count)[kinds == kind].sum())
    cats["exposed communication"] = comm_exposed
    cats["pipeline bubble"] = bubble
    cats["exposed launch"] = launch
    del n_launch
    gemm_dt = _gemm_dt_of(ks)
    peak = g.peak_flops(gemm_dt if g.supports(gemm_dt) else "fp16")
    mem = workload_memory(w)
    cap = float(g.memory_bytes)
    return WorkloadTime(
        gpu=g.name,
        timing=ctx,
        step_s=step,
        device_time_s=dev,
        launch_exposed_s=launch,
        communication_s=crit + hidden_comm,
        communication_exposed_s=comm_exposed,
        overlapped_exposed_s=overlapped_exposed,
        bubble_s=bubble,
        tokens_per_s=w.tokens / step,
        model_flops_per_s=w.model_flops / step,
        mfu=w.model_flops / (step * peak),
        memory_bytes=mem.total_bytes,
        capacity_bytes=cap,
        fits=mem.total_bytes <= cap,
        categories=cats,
        times_s=times,
        math_times_s=math_s,
        memory_times_s=memory_s,
        workload=w,
        memory=mem,
    )


def attention_parallel_share(impl: str, units: int, gpu: str | Gpu = "A100") -> float:
    """Share of the GPU's SMs a fused attention kernel keeps busy over its run.

    A kernel with one thread block per (sequence, head) (``units`` of them, FlashAttention-1)
    runs them in waves of one block per SM, so the last wave leaves SMs idle:
    units / (ceil(units / SMs) x SMs), the tile-quantisation argument of the GEMM guide
    applied to attention's blocks (16 sequences x 8 heads on an A100's 108 SMs: 128 / 216 =
    0.59). Kernels that also split the sequence (FlashAttention-2, the Triton kernel) fill
    the GPU: 1. ``units`` 0 means unknown and counts as filling it.
    """
    g = _gpu(gpu)
    name = check_choice("impl", impl, ATTENTION_IMPLS)
    n = check_int("units", units, minimum=0, allow_array=False, maximum=1 << 40)
    if name not in _HEAD_PARALLEL_ONLY or n == 0:
        return 1.0
    return n / (math.ceil(n / g.sms) * g.sms)


def _gemm_dt_of(kernels: tuple[Kernel, ...]) -> str:
    """The dtype of a step's first GEMM (its precision), 'bf16' when it has none."""
    return next((k.dtype for k in kernels if k.kind == "gemm"), "bf16")


def _fused_attention_math_s(
    flops: float, impl: str, g: Gpu, dtype: str, units: int = 0, keys: int = 0
) -> float:
    """Math time of a fused attention kernel: its FLOPs at the implementation's calibrated
    share of the Tensor Core peak per busy SM (data/kernel_efficiency.csv), times the share
    of SMs its grid keeps busy (:func:`attention_parallel_share`), plus the fixed work of
    each block of query rows (loading it, rescaling and writing its output: as much as
    ``attention_block_keys`` more keys would take, the form of the GEMM model's per-tile
    epilogue cost), which matters when each query sees few ``keys`` (0: not counted)."""
    dt = dtype if g.supports(dtype) else "fp16"
    consts = workload_constants(g)
    eff = consts[f"attention_{impl}"].value
    fixed = 1.0 + (consts["attention_block_keys"].value / keys if keys > 0 else 0.0)
    return flops * fixed / (g.peak_flops(dt) * eff * attention_parallel_share(impl, units, g))


def fused_attention_time_s(
    flops: float, nbytes: float, gpu: str | Gpu = "A100", *, impl: str = "flash2",
    dtype: str = "fp16", units: int = 0, keys: int = 0,
) -> float:  # fmt: skip
    """Device time of one fused attention kernel doing ``flops`` on ``nbytes`` of DRAM traffic:
    the implementation's calibrated math rate and the achievable bandwidth, combined as
    every kernel is (imperfect overlap), plus the fixed cost per kernel (the model's
    prediction; the same pricing as the attention kernels of :func:`price`). ``units``:
    the (sequence, head) pairs, which set how many SMs a FlashAttention-1 kernel keeps busy
    (:func:`attention_parallel_share`; 0: all of them); ``keys``: the keys each query sees,
    which set the share of the fixed work per block of query rows (0: not counted)."""
    g = _gpu(gpu)
    name = check_choice("impl", impl, (*_FUSED, "sdpa"))
    name = "flash2" if name == "sdpa" else name
    f = float(check_number("flops", flops, minimum=0))
    nb = float(check_number("nbytes", nbytes, minimum=0))
    u = check_int("units", units, minimum=0, allow_array=False, maximum=1 << 40)
    nk = check_int("keys", keys, minimum=0, allow_array=False, maximum=1 << 40)
    cal = achievable(g, dtype if g.supports(dtype) else "fp32")
    mem = nb / (g.memory_bandwidth_bytes_per_s * cal.memory_fraction)
    return float(
        cal.kernel_overhead_s + overlap_time(_fused_attention_math_s(f, name, g, dtype, u, nk), mem)
    )


def _eager_exposed(dev: np.ndarray, count: np.ndarray, host: float, repeat: int = 1) -> float:
    """Time the GPU waits for the host when each kernel is launched eagerly.

    The host issues kernel j at (j + 1) x ``host``; the GPU runs kernels in order as soon as
    both the previous one is done and this one is issued. The chain then ends at
    max over j of ((j + 1) host + the device time of kernels j..n), so the exposed launch is
    that minus the device time alone: zero when every kernel outlasts a launch, n x host
    minus the work when none does. Kernels repeated ``count`` times are laid out in order.
    A chain repeated ``repeat`` times (micro-batches) ends (repeat - 1) x max(D, n host)
    later than one copy (D: one copy's device time, n its kernels), the exact value of the
    same maximum over the repeated chain.
    """
    seq = np.repeat(dev, count.astype(np.int64))
    if seq.size == 0:
        return 0.0
    suffix = np.cumsum(seq[::-1])[::-1]
    one = float(np.max(host * np.arange(1, seq.size + 1) + suffix))
    d = float(seq.sum())
    end = one + (repeat - 1) * max(d, seq.size * host)
    return end - repeat * d


# -- views of part of a step ----------------------------------------------------------------

# The dtype names of core.dtypes a transformer step can run in, with the kernel list's
# precision for each (FP8 GEMMs in E4M3 and FP4 in E2M1, activations in BF16 between them).
DTYPE_PRECISIONS = {
    "fp32": "fp32",
    "tf32": "tf32",
    "fp16": "fp16",
    "bf16": "bf16",
    "fp8_e4m3": "fp8",
    "fp4_e2m1": "fp4",
}

# Suffixes the kernel list gives the kernels derived from a forward kernel (its gradients,
# the casts of a linear layer's operands and their gradients), longest first.
_DERIVED = (" weight cast backward", " cast backward", " weight cast", " cast", " dgrad",
            " wgrad", " backward")  # fmt: skip
# Kernels of a layer's attention block outside its '.attn' path: the two projections around
# the attention core and, with context parallelism, the K/V ring.
_ATTENTION_PROJECTIONS = ("qkv_proj", "o_proj", "cp K/V ring")


def forward_name(name: str) -> str:
    """The forward kernel a kernel derives from: 'qkv_proj' for 'qkv_proj weight cast
    backward', 'softmax' for 'softmax backward'."""
    for suffix in _DERIVED:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


def attention_block(w: Workload) -> Workload:
    """``w`` with only its layers' attention block: the Q/K/V projection, the attention core
    (rotary embedding, scores, softmax and its dropout, context, or the fused kernel) and
    the output projection, with their casts, recomputation and gradients. The norm before
    the block, the residual add, the MLP, the head, the optimizer and the layer's
    collectives are left out. ``model_flops`` becomes the FLOPs of the kernels kept (once,
    without recomputation); the other fields describe the step it came from."""
    if not isinstance(w, Workload):
        raise InvalidParameter(f"'workload' must be a Workload (got {describe(w)})")
    kept = tuple(
        k for k in w.kernels
        if k.path.startswith("layers")
        and (k.path.endswith(".attn") or forward_name(k.name) in _ATTENTION_PROJECTIONS)
    )  # fmt: skip
    flops = float(sum(k.flops * k.count for k in kept if k.pass_ != "recompute"))
    return replace(w, kernels=kept, model_flops=flops)


def gemm_limiters(w: Workload, g: Gpu) -> dict[int, str]:
    """What limits each GEMM of ``w`` on ``g`` by the GEMM model ('math', 'memory', or
    'latency' for a GEMM too small to fill the GPU), by kernel index: one vectorised call
    per dtype, as :func:`price` makes."""
    out: dict[int, str] = {}
    gemms = [i for i, k in enumerate(w.kernels) if k.kind == "gemm"]
    for dt in sorted({w.kernels[i].dtype for i in gemms}):
        idx = [i for i in gemms if w.kernels[i].dtype == dt]
        ks = [w.kernels[i] for i in idx]
        sw = gemm_sweep(
            np.array([k.m for k in ks], dtype=np.int64),
            np.array([k.n for k in ks], dtype=np.int64),
            np.array([k.k for k in ks], dtype=np.int64),
            batch=np.array([k.batch for k in ks], dtype=np.int64),
            dtype=dt,
            gpu=g,
        )
        out.update(zip(idx, np.atleast_1d(np.asarray(sw.limiter)).astype(str), strict=True))
    return out


def kernel_pass(
    priced: WorkloadTime, index: int, g: Gpu, op: str, pass_: str, limiter: str | None = None
) -> PassResult:
    """Kernel ``index`` of ``priced`` (a workload priced on ``g``) as a
    :class:`~.memlimited.PassResult` called ``op`` / ``pass_``: FLOPs, bytes and times
    totalled over its count (one launch's arithmetic intensity), the time :func:`price`
    gave it. ``limiter`` where given (a GEMM's, from :func:`gemm_limiters`); else it is
    math-bound where its math time exceeds its DRAM time, and a kernel other than a GEMM
    whose work is shorter than the fixed cost per kernel is latency-bound."""
    k = priced.workload.kernels[index]
    n = k.count
    math_s = float(priced.math_times_s[index])
    mem_s = float(priced.memory_times_s[index])
    gemm = k.kind == "gemm"
    kd = _dtype(k.dtype)
    peak = g.peak_flops(kd) if k.kind in ("gemm", "attention") else _cuda_peak(g, kd)
    overhead = achievable(g, k.dtype if g.supports(k.dtype) else "fp32").kernel_overhead_s
    if limiter is None:
        if max(math_s, mem_s) < overhead and not gemm:
            limiter = "latency"
        else:
            limiter = "math" if math_s > mem_s else "memory"
    return PassResult(
        op=op,
        pass_=pass_,
        op_class=_op_class(k),
        m=k.m if gemm else None,
        n=k.n if gemm else None,
        k=k.k if gemm else None,
        batch=k.batch if gemm else None,
        count=n,
        flops=k.flops * n,
        bytes=k.bytes * n,
        arithmetic_intensity=k.flops / k.bytes if k.bytes else 0.0,
        ops_per_byte=peak / g.memory_bandwidth_bytes_per_s,
        limiter=limiter,
        math_time_s=math_s * n,
        memory_time_s=mem_s * n,
        predicted_time_s=float(priced.times_s[index]) * n,
    )


# The name the package exports at its top level (dlperf_widgets.price_workload).
price_workload = price
