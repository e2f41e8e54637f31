"""Analyse any PyTorch model: every aten operation it runs, priced by the analytical core.

The module runs once (forward, and for training a backward pass from the sum of its
output) under a recorder at PyTorch's dispatcher (a ``TorchDispatchMode``), so every
kernel-level operation is seen whatever module class or function issued it: transformers'
``Conv1D``, attention written as ``torch.matmul``, ``F.silu``, RMSNorm built from ``pow``
and ``mean``. Each operation becomes a core operation:

- matrix products (``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``_trilinear`` of
  ``nn.Bilinear``), convolutions of any rank
  (transposed and grouped included; their backward split into the input gradient and the
  weight gradient) and fused attention (``_scaled_dot_product_*``) become GEMM passes with
  their M, N, K, priced by :func:`dlperf_widgets.core.layers._gemm_pass`;
- element-wise operations, reductions, normalizations, softmax, embeddings and copies
  become memory-limited passes whose bytes are the real tensors read and written, priced by
  :func:`dlperf_widgets.core.memlimited.memory_pass`;
- views (``view``, ``transpose``, ``expand``, ...) launch no kernel and cost nothing;
- anything else is listed in ``unpriced_ops`` with its count: nothing is dropped silently.

FLOP convention (that of ``torch.utils.flop_counter.FlopCounterMode``): 2 M N K per GEMM;
a convolution's input and weight gradients each do the forward's work; fused attention
counts its two forward products and four backward products (flash kernels also recompute
the scores in backward, which this count, like PyTorch's, leaves out). Element-wise
operations count one operation per output element (normalizations five); they are
reported under their classes but are not what the tests check to 0.5 %.

Each operation keeps the module path that ran it (``transformer.h.0.attn.c_attn``); the
same operation with the same shapes in the same module is listed once with its count.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .._optional import require
from ..core.alignment import Finding, alignment_findings
from ..core.dtypes import Dtype
from ..core.dtypes import dtype as _dtype
from ..core.errors import InvalidParameter
from ..core.gpus import Gpu
from ..core.gpus import gpu as _gpu
from ..core.layers import _gemm_pass
from ..core.memlimited import PassResult, check_training, memory_pass
from ..core.network import NetworkResult, _assemble

__all__ = [
    "Bytes",
    "TracedOp",
    "analyze_module",
    "module_dtype",
    "module_result",
    "price_ops",
    "trace_module",
]

_TORCH_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}

# Operations that launch no kernel: new views of existing storage, metadata, no-ops.
_VIEWS = frozenset(
    "view _unsafe_view reshape alias t transpose permute expand slice select unsqueeze "
    "squeeze split split_with_sizes unbind as_strided detach lift_fresh empty empty_like "
    "empty_strided new_empty new_empty_strided unfold diagonal narrow chunk _reshape_alias "
    "view_as _to_copy_noop set_ resize_ is_same_size".split()
)
# Statistical normalizations: reductions over an axis (the slides' class).
_NORMS = frozenset(
    "native_layer_norm native_layer_norm_backward _softmax _safe_softmax softmax "
    "_softmax_backward_data _log_softmax _log_softmax_backward_data native_batch_norm "
    "native_batch_norm_backward _native_batch_norm_legit _native_batch_norm_legit_functional "
    "_native_batch_norm_legit_no_training cudnn_batch_norm cudnn_batch_norm_backward "
    "native_group_norm native_group_norm_backward sum mean amax amin max min var var_mean "
    "std std_mean norm linalg_vector_norm logsumexp prod max_pool2d_with_indices "
    "max_pool2d_with_indices_backward max_pool3d_with_indices "
    "max_pool3d_with_indices_backward avg_pool2d avg_pool2d_backward avg_pool3d "
    "avg_pool3d_backward _adaptive_avg_pool2d _adaptive_avg_pool2d_backward "
    "_adaptive_avg_pool3d _adaptive_avg_pool3d_backward nll_loss_forward nll_loss_backward "
    "nll_loss2d_forward nll_loss2d_backward _fused_rms_norm _fused_rms_norm_backward "
    "argmax argmin cumsum".split()
)
# Element-wise operations, gathers and copies named explicitly (pointwise ops are also
# recognised by PyTorch's own ``pointwise`` tag).
_ELEMENTWISE = frozenset(
    "clone copy_ _to_copy contiguous cat stack embedding embedding_dense_backward "
    "index_select index index_put index_put_ gather scatter scatter_add masked_fill "
    "masked_fill_ where native_dropout native_dropout_backward bernoulli bernoulli_ "
    "zeros zeros_like ones ones_like full full_like fill_ zero_ arange scalar_tensor "
    "new_zeros new_ones new_full tril triu tril_ triu_ slice_backward select_backward "
    "constant_pad_nd repeat roll flip _unsafe_index upsample_nearest2d "
    "upsample_nearest2d_backward upsample_bilinear2d upsample_bilinear2d_backward "
    "threshold_backward gelu_backward silu_backward tanh_backward sigmoid_backward "
    "hardtanh_backward leaky_relu_backward elu_backward _unsafe_index_put rand randn "
    "uniform_ normal_ pixel_shuffle pixel_unshuffle col2im im2col".split()
)
_NORM_FLOPS_PER_ELEMENT = 5  # the convention above; core.memlimited uses 5 for softmax forward
# One launch of a contraction: (pass, m, n, k, batch, tensor bytes or None, style), style
# 'gemm' (a GEMM pass), 'direct' (a depthwise convolution: direct kernel, memory-limited,
# as core.layers models it) or 'transpose' (an NCHW <-> NHWC copy of `tensor bytes`); or a
# memory-bound kernel inside a composite operation: (pass, flops, 0, 0, 0, tensor bytes,
# '<class>:<label>'), class 'elementwise' or 'statistical_normalization'.
_Launch = tuple[str, int, int, int, int, "Bytes | None", str]


@dataclass(frozen=True)
class TracedOp:
    """One aten operation as the model ran it (before pricing).

    ``kind``: 'gemm' (``gemms`` holds its GEMM launches as (pass, m, n, k, batch,
    tensor_bytes or None)), 'memory' (``op_class`` and ``bytes``), 'view' or 'unknown'.
    ``count`` identical calls (same module, operation, pass and shapes) are merged. Bytes
    are :class:`Bytes`, sized when the operations are priced, so one trace serves every
    dtype.
    """

    module: str
    aten: str
    pass_: str
    kind: str
    op_class: str
    shapes: tuple[tuple[int, ...], ...]
    flops: float
    bytes: Bytes
    gemms: tuple[_Launch, ...] = ()
    count: int = 1

    @property
    def name(self) -> str:
        return f"{self.module}:{self.aten}"


def _tensors(obj: Any, torch: Any) -> list[Any]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in _tensors(x, torch)]
    return []


def _numel(shape: Any) -> int:
    return int(math.prod(int(s) for s in shape))


@dataclass(frozen=True)
class Bytes:
    """Bytes of traced tensors: floating-point elements (sized at whatever dtype the model
    is priced in) plus bytes of other tensors (integer indices, boolean masks)."""

    float_elements: float = 0.0
    other_bytes: float = 0.0

    def at(self, bytes_per_element: float) -> float:
        return self.float_elements * bytes_per_element + self.other_bytes

    def __add__(self, o: Any) -> Bytes:
        if isinstance(o, Bytes):
            return Bytes(self.float_elements + o.float_elements, self.other_bytes + o.other_bytes)
        if o == 0:
            return self
        return NotImplemented

    __radd__ = __add__

    def __mul__(self, k: float) -> Bytes:
        return Bytes(self.float_elements * k, self.other_bytes * k)

    __rmul__ = __mul__

    def __truediv__(self, k: float) -> Bytes:
        return Bytes(self.float_elements / k, self.other_bytes / k)


class _Sizer:
    """Bytes of a tensor: floating-point elements counted apart (see :class:`Bytes`)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def __call__(self, t: Any) -> Bytes:
        if t.is_floating_point():
            return Bytes(float(t.numel()), 0.0)
        return Bytes(0.0, float(t.numel()) * t.element_size())


def _conv_gemms(args: Any, out: Any, backward: bool, mask: Any, sizer: _Sizer) -> list[_Launch]:
    """Implicit-GEMM launches of a convolution or its backward (core.layers' mapping)."""
    if backward:
        grad_out, x, w = args[0], args[1], args[2]
        transposed, groups = bool(args[7]), int(args[9])
        y = grad_out
    else:
        x, w = args[0], args[1]
        transposed, groups = bool(args[6]), int(args[8])
        y = out
    n = int(x.shape[0])
    kernel = _numel(w.shape[2:])
    if transposed:
        # a transposed convolution is the input gradient of the ordinary one: the GEMM
        # runs over the input pixels, with weight (C_in, C_out/g, *kernel)
        cin, kg = int(w.shape[0]), int(w.shape[1])
        pixels = n * _numel(x.shape[2:])
        cg = cin // groups
    else:
        kout, cg = int(w.shape[0]), int(w.shape[1])
        kg = kout // groups
        pixels = n * _numel(y.shape[2:])
    tb = sizer(x) + sizer(w) + sizer(y)  # implicit GEMM moves the real tensors only
    # depthwise (one input channel per group): direct kernels, as in core.layers
    style = "direct" if groups > 1 and cg == 1 and not transposed else "gemm"
    launches: list[_Launch] = []
    if not backward:
        launches.append(("forward", pixels, kg, cg * kernel, groups, tb, style))
    if backward and mask[0]:
        launches.append(("dgrad", pixels, cg, kg * kernel, groups, tb, style))
    if backward and mask[1]:
        launches.append(("wgrad", cg * kernel, kg, pixels, groups, tb, style))
    nhwc = (
        x.dim() == 4
        and x.is_contiguous(memory_format=sizer.torch.channels_last)
        and (not x.is_contiguous())
    )
    if x.dim() == 4 and style == "gemm" and not nhwc and not transposed:
        # Tensor Core convolutions run on NHWC: NCHW data is transposed around each pass,
        # activation input and output, each copy reading and writing its tensor (as
        # core.layers' layout='nchw')
        sizes = {"forward": (x, y), "dgrad": (y, x), "wgrad": (x, y)}
        for launch in list(launches):
            t_in, t_out = sizes[launch[0]]
            copy = 2.0 * (sizer(t_in) + sizer(t_out))
            launches.append((launch[0], 0, 0, 0, 0, copy, "transpose"))
    return launches


def _sdpa_gemms(args: Any, backward: bool, sizer: _Sizer) -> list[_Launch]:
    """Fused attention as its products; bytes are the real inputs and outputs (the score
    matrix stays on chip in fused kernels)."""
    if backward:
        go, q, k, v = args[0], args[1], args[2], args[3]
    else:
        q, k, v = args[0], args[1], args[2]
        go = None
    bh = _numel(q.shape[:-2])
    lq, e = int(q.shape[-2]), int(q.shape[-1])
    lk, ev = int(k.shape[-2]), int(v.shape[-1])
    bq, bk, bv = sizer(q), sizer(k), sizer(v)
    if not backward:
        bo = bq * ev / e
        return [
            ("forward", lq, lk, e, bh, bq + bk, "gemm"),
            ("forward", lq, ev, lk, bh, bv + bo, "gemm"),
        ]
    bo = sizer(go)
    return [
        ("dgrad", lk, ev, lq, bh, bo + bv, "gemm"),  # dV = P^T dO
        ("dgrad", lq, lk, ev, bh, bo + bv, "gemm"),  # dP = dO V^T
        ("dgrad", lq, e, lk, bh, bk + bq, "gemm"),  # dQ = dS K
        ("dgrad", lk, e, lq, bh, bq + bk, "gemm"),  # dK = dS^T Q
    ]


def _fused_gemms(name: str, args: Any, out: Any, pass_: str, sizer: _Sizer) -> list[_Launch]:
    """GEMM launches of three composite kernels the dispatcher sees as one operation.

    - ``_grouped_mm`` (mixture-of-experts layers): A (tokens, K) x B (experts, K, N) with
      row offsets per expert is one GEMM of the tokens' rows, priced as ``experts`` GEMMs
      of tokens / experts rows each; (G, M, K) x (G, K, N) is a batched GEMM; 2-D x 2-D
      with offsets (the weight gradient) splits the contraction into G groups.
    - ``mkldnn_rnn_layer`` (an LSTM layer on the CPU's oneDNN path): input (T, B, I),
      weights (4H, I) and (4H, H): the input projection for all steps, one GEMM of T B
      rows, and the recurrent product, T GEMMs of B rows (priced as a batch of T: the model
      lets them overlap, real steps run one after another); its backward does twice that.
    - ``_native_multi_head_attention`` (nn.MultiheadAttention's inference fast path): what
      PyTorch's native_multi_head_attention runs on the CPU, and on CUDA unless it hands
      the core to a fused scaled_dot_product_attention kernel (attention.cpp, attention.cu):
      the QKV projection (3E x E); the bias add and 1/sqrt(d) scaling of Q into per-head
      Q, K, V (_transform_bias_rescale_qkv); the scores per head; the softmax over them,
      masked when a mask is given (turned into a boolean mask first when it is not one);
      the context per head; its copy back to (B, L, E) order (transform_0213); the output
      projection with its bias; and with ``need_weights`` and ``average_attn_weights`` the
      probabilities summed over heads and divided by their number.
    """
    if name == "_grouped_mm":
        a, b = args[0], args[1]
        if a.dim() == 2 and b.dim() == 3:
            groups, k, n = (int(x) for x in b.shape)
            rows = -(-int(a.shape[0]) // groups)
            return [(pass_, rows, n, k, groups, None, "gemm")]
        if a.dim() == 3 and b.dim() == 3:
            groups, m, k = (int(x) for x in a.shape)
            return [(pass_, m, int(b.shape[-1]), k, groups, None, "gemm")]
        if a.dim() == 3:  # (G, M, K) x (K, N_total): N split over the groups
            groups, m, k = (int(x) for x in a.shape)
            return [(pass_, m, -(-int(b.shape[-1]) // groups), k, groups, None, "gemm")]
        groups = int(out.shape[0]) if out.dim() == 3 else 1  # 2-D x 2-D: K split in groups
        m, k, n = int(a.shape[0]), int(a.shape[1]), int(b.shape[-1])
        return [(pass_, m, n, -(-k // groups), groups, None, "gemm")]
    if name.startswith("mkldnn_rnn_layer"):
        backward = name.endswith("_backward")
        x, w_ih, w_hh = args[0], args[1], args[2]  # forward and backward alike
        steps, batch = int(x.shape[0]), int(x.shape[1])
        gates, inputs, hidden = int(w_ih.shape[0]), int(w_ih.shape[1]), int(w_hh.shape[1])
        launches: list[_Launch] = [
            (pass_, steps * batch, gates, inputs, 1, None, "gemm"),
            (pass_, batch, gates, hidden, steps, None, "gemm"),
        ]
        return launches * 2 if backward else launches
    # _native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight,
    # qkv_bias, proj_weight, proj_bias, mask=None, need_weights=True,
    # average_attn_weights=True, mask_type=None): the dispatcher leaves out trailing defaults
    q, k = args[0], args[1]
    embed, heads = int(args[3]), int(args[4])
    mask = args[9] if len(args) > 9 else None
    need_weights = bool(args[10]) if len(args) > 10 else True
    average = bool(args[11]) if len(args) > 11 else True
    bsz, lq, lk = int(q.shape[0]), int(q.shape[1]), int(k.shape[1])
    d = embed // heads
    same = args[0] is args[1] is args[2]
    qkv: list[_Launch] = (
        [(pass_, bsz * lq, 3 * embed, embed, 1, None, "gemm")]
        if same
        else [(pass_, bsz * lq, embed, embed, 1, None, "gemm"),
              (pass_, bsz * lk, 2 * embed, embed, 1, None, "gemm")]
    )  # fmt: skip
    rows = bsz * lq * embed  # elements of Q (and of the context)
    scores = bsz * heads * lq * lk
    f = Bytes(1.0)  # one floating-point element
    # bias add on Q, K and V, scaling on Q: 4 operations per (q, k, v) element triple
    launches: list[_Launch] = [
        *qkv, (pass_, 4 * rows, 0, 0, 0, f * (6.0 * rows), "elementwise:bias_rescale"),
        (pass_, lq, lk, d, bsz * heads, None, "gemm"),  # Q K^T
    ]  # fmt: skip
    softmax = f * (2.0 * scores)  # read the scores, write the probabilities
    if mask is not None:
        if mask.dtype != sizer.torch.bool:
            boolean = Bytes(0.0, float(mask.numel()))
            launches.append((pass_, 0, 0, 0, 0, sizer(mask) + boolean, "elementwise:mask_to_bool"))
        softmax = softmax + Bytes(0.0, float(mask.numel()))
    launches += [
        (pass_, _NORM_FLOPS_PER_ELEMENT * scores, 0, 0, 0, softmax,
         "statistical_normalization:softmax"),
        (pass_, lq, d, lk, bsz * heads, None, "gemm"),  # P V
        (pass_, 0, 0, 0, 0, f * (2.0 * rows), "elementwise:transform_0213"),
        (pass_, bsz * lq, embed, embed, 1, None, "gemm"),  # output projection
    ]  # fmt: skip
    if need_weights and average:
        averaged = bsz * lq * lk
        launches += [
            (pass_, scores, 0, 0, 0, f * (scores + averaged), "statistical_normalization:sum"),
            (pass_, averaged, 0, 0, 0, f * (2.0 * averaged), "elementwise:divide"),
        ]
    return launches


def _storage(t: Any) -> int:
    """Identity of a tensor's storage, shared by its views (on the meta device too)."""
    return int(t.untyped_storage()._cdata)


def _classify(
    name: str,
    func: Any,
    args: Any,
    kwargs: Any,
    out: Any,
    torch: Any,
    sizer: _Sizer,
    backward: bool,
    params: tuple[set[tuple[int, ...]], set[int]],
) -> tuple[str, str, float, Bytes, list[_Launch]]:
    """(kind, class, flops, bytes, gemm launches) of one aten call."""
    none = Bytes()
    pass_ = "backward" if backward else "forward"
    if name in ("mm", "addmm", "bmm", "baddbmm"):
        a, b = (args[1], args[2]) if name in ("addmm", "baddbmm") else (args[0], args[1])
        batch = int(a.shape[0]) if a.dim() == 3 else 1
        m, k, n = int(a.shape[-2]), int(a.shape[-1]), int(b.shape[-1])
        if backward:
            # an operand that is a parameter (a view of one) makes it an input gradient;
            # else an output shaped like a parameter makes it a weight gradient
            shape = tuple(int(s) for s in out.shape)
            if any(_storage(t) in params[1] for t in (a, b)):
                pass_ = "dgrad"
            elif shape in params[0] or shape[::-1] in params[0]:
                pass_ = "wgrad"
            else:
                pass_ = "dgrad"
        g: list[_Launch] = [(pass_, m, n, k, batch, None, "gemm")]
        return "gemm", "tensor_contraction", 2.0 * m * n * k * batch, none, g
    if name in ("convolution", "convolution_backward"):
        mask = args[10] if name == "convolution_backward" else None
        g = _conv_gemms(args, out, name == "convolution_backward", mask, sizer)
        return (
            "gemm",
            "tensor_contraction",
            sum(2.0 * x[1] * x[2] * x[3] * x[4] for x in g),
            none,
            g,
        )
    if name.startswith("_scaled_dot_product") and "attention" in name:
        g = _sdpa_gemms(args, name.endswith("_backward"), sizer)
        return (
            "gemm",
            "tensor_contraction",
            sum(2.0 * x[1] * x[2] * x[3] * x[4] for x in g),
            none,
            g,
        )
    if name in ("_grouped_mm", "_native_multi_head_attention") or name.startswith(
        "mkldnn_rnn_layer"
    ):
        g = _fused_gemms(name, args, out, pass_, sizer)
        return (
            "gemm",
            "tensor_contraction",
            sum(2.0 * x[1] * x[2] * x[3] * x[4] for x in g),
            none,
            g,
        )
    if name == "_trilinear":
        # nn.Bilinear: sum over the reduced dims of i1 * i2 * i3, broadcast; one multiply-add
        # per element of the broadcast shape, priced as one dot product per output element
        shapes = []
        for t, expand in zip(args[:3], args[3:6], strict=True):
            shape = [int(x) for x in t.shape]
            for dim in sorted(int(e) for e in expand):
                shape.insert(dim, 1)  # the dims each input is unsqueezed at
            shapes.append(tuple(shape))
        full = _numel(torch.broadcast_shapes(*shapes))
        rows = max(1, int(out.numel()))
        g = [(pass_, rows, 1, max(1, full // rows), 1, None, "gemm")]
        return "gemm", "tensor_contraction", 2.0 * full, none, g
    if name in _VIEWS:
        return "view", "", 0.0, none, []
    outs = _tensors(out, torch)
    ins = _tensors(list(args) + list((kwargs or {}).values()), torch)
    if name == "embedding":  # a gather reads the rows it copies, not the whole table
        ins = ins[1:] + outs
    nbytes = sum((sizer(t) for t in ins), none) + sum((sizer(t) for t in outs), none)
    out_elements = float(sum(t.numel() for t in outs))
    if name in _NORMS:
        in_elements = float(sum(t.numel() for t in ins))
        flops = _NORM_FLOPS_PER_ELEMENT * max(in_elements, out_elements)
        return "memory", "statistical_normalization", flops, nbytes, []
    if name in _ELEMENTWISE or torch.Tag.pointwise in getattr(func, "tags", ()):
        return "memory", "elementwise", out_elements, nbytes, []
    return "unknown", "", 0.0, nbytes, []


def _example_loss(out: Any, torch: Any) -> Any:
    loss = getattr(out, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    if not isinstance(out, torch.Tensor):
        values = out.values() if hasattr(out, "values") else out
        found = [t for t in _tensors(list(values), torch) if t.is_floating_point()]
        if not found:
            raise InvalidParameter(
                "'module' must return a floating-point tensor to train through "
                f"(got {type(out).__name__})"
            )
        out = found[0]
    return out.sum()


def trace_module(
    module: Any,
    *example_inputs: Any,
    training: bool = True,
    **example_kwargs: Any,
) -> list[TracedOp]:
    """Run ``module`` once (and its backward pass when ``training``) and list its aten ops.

    The module and inputs run where they are (CPU or meta tensors, which need no memory).
    With ``training`` the backward pass starts from the model's ``loss`` when it returns
    one, else from the sum of its first floating-point output. Tensors that do not require
    a gradient (input images, token ids) get none, as in PyTorch training.
    """
    torch = require("torch", "analysing a PyTorch module")
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.module_tracker import ModuleTracker

    if not isinstance(module, torch.nn.Module):
        raise InvalidParameter(f"'module' must be a torch.nn.Module (got {type(module).__name__})")
    training = check_training(training)
    sizer = _Sizer(torch)
    params = (
        {tuple(int(s) for s in p.shape) for p in module.parameters()},
        {_storage(p) for p in module.parameters()},
    )
    root = type(module).__name__
    counts: Counter[tuple[Any, ...]] = Counter()
    details: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    state = {"phase": "forward"}

    # Backward operations are attributed to the module whose forward operation created
    # the autograd node being run (matched through the node's sequence number).
    seq_path: dict[int, str] = {}
    seq_nr = torch._C._autograd._get_sequence_nr
    current_node = torch._C._current_autograd_node

    class _Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None):
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            backward = state["phase"] == "backward"
            kind, cls, flops, nbytes, gemms = _classify(
                name, func, args, kwargs, out, torch, sizer, backward, params
            )
            if backward:
                node = current_node()
                # outside any node: the engine summing gradients of a reused tensor
                path = seq_path.get(node._sequence_nr(), "(loss)") if node else "(autograd)"
            elif state["phase"] == "loss":
                path = "(loss)"
            else:
                parents = [p for p in tracker.parents if p != "Global"]
                path = max(parents, key=len) if parents else root
                path = path[len(root) + 1 :] if path.startswith(root + ".") else "(model)"
                seq_path.setdefault(seq_nr() - 1, path)
            shapes = tuple(tuple(int(s) for s in t.shape) for t in _tensors(list(args), torch))
            pass_ = gemms[0][0] if gemms else ("backward" if backward else "forward")
            key = (path, name, pass_, shapes, tuple(gemms))
            counts[key] += 1
            details[key] = (kind, cls, flops, nbytes)
            return out

    tracker = ModuleTracker()
    grad_ctx = torch.enable_grad() if training else torch.no_grad()
    with grad_ctx, _Recorder():
        with tracker:
            out = module(*example_inputs, **example_kwargs)
        if training:
            state["phase"] = "loss"
            loss = _example_loss(out, torch)
            if not loss.requires_grad:
                raise InvalidParameter(
                    "'module' must have parameters that require a gradient to be analysed "
                    "for training (got none; pass training=False)"
                )
            state["phase"] = "backward"
            loss.backward()
    module.zero_grad(set_to_none=True)
    ops = []
    for key, count in counts.items():
        path, name, pass_, shapes, gemms = key
        kind, cls, flops, nbytes = details[key]
        ops.append(TracedOp(path, name, pass_, kind, cls, shapes, flops, nbytes, gemms, count))
    return ops


def module_dtype(module: Any) -> str:
    """The kit's name of the dtype of a module's first floating-point parameter ('fp32'
    when it has none)."""
    for p in module.parameters():
        if p.is_floating_point():
            return _TORCH_DTYPES.get(str(p.dtype).replace("torch.", ""), "fp32")
    return "fp32"


def _at(b: Bytes | None, d: Dtype) -> float:
    return 0.0 if b is None else b.at(d.bytes_per_element)


def price_ops(
    ops: list[TracedOp], dtype: str | Dtype, gpu: str | Gpu
) -> tuple[list[PassResult], dict[str, int]]:
    """Price traced operations with the core models; also the unpriced ones with counts."""
    d, g = _dtype(dtype), _gpu(gpu)
    g.peak_flops(d)  # the standard message if the GPU does not run this dtype
    passes: list[PassResult] = []
    unpriced: Counter[str] = Counter()
    gemm_cache: dict[tuple[Any, ...], PassResult] = {}
    for op in ops:
        if op.kind == "gemm":
            for pass_, m, n, k, batch, tb, style in op.gemms:
                if ":" in style:  # a memory-bound kernel of a composite operation
                    cls, label = style.split(":")
                    name = f"{op.name}.{label}"
                    passes.append(
                        memory_pass(name, pass_, cls, float(m), _at(tb, d), g, d, op.count)
                    )
                    continue
                if style == "transpose":
                    name = f"{op.name}.nchw_transpose"
                    passes.append(
                        memory_pass(name, pass_, "elementwise", 0.0, _at(tb, d), g, d, op.count)
                    )
                    continue
                if style == "direct":
                    flops = 2.0 * m * n * k * batch
                    cls = "tensor_contraction"
                    passes.append(
                        memory_pass(op.name, pass_, cls, flops, _at(tb, d), g, d, op.count)
                    )
                    continue
                tensor_bytes = None if tb is None else _at(tb, d)
                key = (pass_, m, n, k, batch, tensor_bytes)
                if key not in gemm_cache:
                    gemm_cache[key] = _gemm_pass(
                        op.aten, pass_, m, n, k, d, g, batch=batch, tensor_bytes=tensor_bytes
                    )
                p = gemm_cache[key].with_name(op.name)
                passes.append(p.scaled(op.count) if op.count != 1 else p)
        elif op.kind == "memory":
            passes.append(
                memory_pass(
                    op.name, op.pass_, op.op_class, op.flops, _at(op.bytes, d), g, d, op.count
                )
            )
        elif op.kind == "unknown":
            unpriced[op.aten] += op.count
    return passes, dict(unpriced)


def _top_findings(passes: list[PassResult], d: Dtype, g: Gpu, top: int = 5) -> list[Finding]:
    """Checklist findings for the operations that take the most predicted time."""
    found: list[Finding] = []
    total = sum(p.predicted_time_s for p in passes) or 1.0
    for p in sorted(passes, key=lambda p: -p.predicted_time_s)[:top]:
        share = p.predicted_time_s / total
        if p.is_gemm:
            dims = {"m": int(p.m or 1), "n": int(p.n or 1), "k": int(p.k or 1)}
            for f in alignment_findings(dims, d, g, memory_bound=p.limiter != "math"):
                found.append(
                    Finding(
                        f.severity,
                        f"{p.op} ({p.pass_}) {f.parameter}",
                        f.message,
                        f.fix,
                        f.value,
                        f.suggested_value,
                    )
                )
        elif p.limiter in ("memory", "latency"):
            found.append(
                Finding(
                    "info",
                    f"{p.op} ({p.pass_})",
                    f"{p.limiter}-limited and {share:.1%} of the predicted time.",
                    "fuse it with its neighbours (torch.compile, a fused kernel) so the "
                    "tensor is read and written once",
                )
            )
    return found


def analyze_module(
    module: Any,
    *example_inputs: Any,
    dtype: str | None = None,
    gpu: Any = "A100",
    training: bool = True,
    **example_kwargs: Any,
) -> NetworkResult:
    """Model a PyTorch module on a GPU: every aten op it runs, priced, and the class split.

    ``dtype`` defaults to the dtype of the module's first floating-point parameter
    (``torch.float16`` -> 'fp16'); pass ``dtype='fp16'`` to ask what half precision
    would give (floating-point tensors are then sized at 2 bytes). The example input fixes
    the shapes; the module runs once where it is (CPU or meta tensors). Operations the
    kit cannot price are listed in ``unpriced_ops`` with their count.
    """
    torch = require("torch", "analysing a PyTorch module")
    if not isinstance(module, torch.nn.Module):
        raise InvalidParameter(f"'module' must be a torch.nn.Module (got {type(module).__name__})")
    d = dtype if dtype is not None else module_dtype(module)
    _gpu(gpu).peak_flops(_dtype(d))  # bad GPU or dtype: one sentence, before running
    ops = trace_module(module, *example_inputs, training=training, **example_kwargs)
    return module_result(ops, type(module).__name__, d, gpu)


def module_result(
    ops: list[TracedOp], name: str, dtype: str | Dtype, gpu: str | Gpu
) -> NetworkResult:
    """Price traced operations (:func:`trace_module`) on a GPU in a dtype: the op table,
    class split, findings on the slowest ops and the unpriced ops with counts."""
    d, g = _dtype(dtype), _gpu(gpu)
    passes, unpriced = price_ops(ops, d, g)
    if not passes:
        raise InvalidParameter(
            f"'module' must run at least one operation the kit can price (got {name} with none)"
        )
    result = _assemble(name, passes, d, g, _top_findings(passes, d, g))
    return dataclasses.replace(result, unpriced_ops=unpriced)
