"""Layers as GEMMs and memory-limited passes: forward, activation gradient, weight gradient.

Every GEMM a layer launches is modelled by :func:`dlperf_widgets.core.gemm.gemm_sweep`;
the memory-limited parts (activations, normalizations, pooling, layout changes) by
:mod:`dlperf_widgets.core.memlimited`. Pass names: ``forward``; ``dgrad``, the gradient
with respect to the layer's input (activation gradient); ``wgrad``, the gradient with
respect to its weights; ``backward`` for memory-limited ops, whose one backward kernel
does both. Every pass is priced in the ``kernel`` timing context (an isolated kernel timed
on the device, what ``dlperf time`` and a profiler report), and the result says so.

GEMM mappings (A is M x K, B is K x N, C is M x N; FLOPs 2 M N K):

- Linear (NVIDIA "Optimizing Linear/Fully-Connected Layers" guide, as in the slides'
  table of arithmetic intensities): forward M = outputs, N = batch, K = inputs;
  dgrad M = inputs, N = batch, K = outputs; wgrad M = inputs, N = outputs, K = batch.
  In a transformer the batch is the number of tokens, batch x sequence length.
- Conv2d as implicit GEMM (NVIDIA "Optimizing Convolutional Layers" guide): forward
  M = N*P*Q, N = K (output channels), K = C*R*S; dgrad M = N*H*W, N = C, K = K*R*S;
  wgrad M = C*R*S, N = K, K = N*P*Q; with ``groups`` the GEMM runs once per group on C/g
  and K/g channels (a batched GEMM). Depthwise convolutions (one input channel per group)
  are modelled as direct, memory-limited kernels rather than GEMMs. Two refinements, both
  modelling choices: (1) implicit GEMM never builds the unrolled C*R*S matrix, so bytes
  are those of the real tensors (input, filter, output) rather than of the GEMM operands;
  (2) the guide's dgrad (M = N*H*W, K = K*R*S) holds for stride 1; with stride s only
  about R*S/s^2 filter taps reach a given input pixel, and the exact work equals the
  forward pass's (every forward multiply-add has one partner in dgrad), so dgrad is
  modelled as M = N*P*Q, N = C, K = K*R*S, the same FLOPs as forward. The Tensor Core alignment rule is applied to the channel
  counts (the vectorised dimension of NHWC data), and C = 4 in NHWC counts as aligned:
  the slides' Figure 8 shows specialized C = 4 first-layer kernels.
  Layout: Tensor Core convolutions work on NHWC; with ``layout='nchw'`` each pass also
  transposes its activation input and output (the slides' Figure 2: kernels that need a
  transpose are slower).
- LSTM (4 gates) and GRU (3 gates) with hidden size H: the input part of all gates for
  all time steps is one GEMM, M = G*H, N = batch*seq, K = input; the recurrent part must
  wait for the previous step, so it runs seq_len times with M = G*H, N = batch, K = H;
  a fused element-wise cell kernel follows each step. Backward mirrors it, and the two
  weight gradients are single GEMMs over all batch*seq columns (NVIDIA "Optimizing
  Recurrent Layers" guide).
- Multi-head attention with hidden size h, a heads of size d = h / a, sequence S, tokens
  T = batch*S is not described here: it is the attention block of a one-layer training
  step (or prefill, without training) in :mod:`.workload`'s kernel list, priced by
  :func:`.workload.price` (kernel durations summed). Its GEMMs take that list's
  orientation, M = tokens: Q, K and V projections (one GEMM M = T, N = 3h, K = h when
  concatenated, else three with N = h); scores Q K^T as batch*a GEMMs M = S, N = S,
  K = d; softmax over batch*a*S*S values; context P V as batch*a GEMMs M = S, N = d,
  K = S; the output projection M = T, N = h, K = h (slides, "Transformer example").
  Attention is eager (the scores go through DRAM) and not causal, as in BERT. The layer
  keeps its weights in its dtype, as the other kinds do: the step's FP32 master weights and
  their casts are left out (an FP8 GEMM keeps the cast of its input, an ``input_cast``
  pass). The gradients of Q K^T and P V, both of activations, are ``dgrad`` passes.
- Split-K: when a GEMM's output has fewer tiles than the GPU has SMs (a weight gradient
  with a huge K, a small layer), libraries split K across thread blocks and sum the
  partial results; the GEMM model (core.gemm) takes the fastest plain or split schedule.
- Embedding lookup: a gather, no arithmetic; its weight gradient fills a dense
  vocab x hidden gradient and scatter-adds T rows into it. The vocabulary projection is a
  linear layer with outputs = vocabulary.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from ._validate import check_bool, check_choice, check_int, describe
from .alignment import Finding
from .assumptions import TIMING_CONTEXT_DESCRIPTIONS
from .calibration import achievable
from .dtypes import Dtype
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gemm import gemm_sweep, overlap_time
from .gpus import Gpu
from .gpus import gpu as _gpu
from .memlimited import (
    ELEMENTWISE_OPS,
    MEMORY_OPS,
    NORMALIZATION_OPS,
    PassResult,
    check_training,
    describe_passes,
    memory_op,
    memory_pass,
    pool_output_size,
)
from .results import ResultMixin, format_quantity
from .workload import (
    _MAX_TOKENS,
    DTYPE_PRECISIONS,
    LlmSpec,
    attention_block,
    forward_name,
    gemm_limiters,
    kernel_pass,
    price,
    workload,
)

__all__ = [
    "LAYER_KINDS",
    "LayerKind",
    "LayerOption",
    "LayerResult",
    "PassResult",
    "build_passes",
    "conv_output_size",
    "layer",
    "resolve_options",
]


# -- the catalogue of kinds and options --------------------------------------------------


@dataclass(frozen=True)
class LayerOption:
    """One option of a layer kind: name (Python spelling), type, default, help.

    ``type`` is 'int', 'pair' (an int or a pair of ints: kernel sizes, strides), 'choice'
    (one of ``choices``), 'bool', 'shape' (comma-separated ints) or 'optional_int'.
    """

    name: str
    type: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class LayerKind:
    """A kind of layer: its options with defaults, and whether it is a GEMM layer."""

    name: str
    category: str  # 'gemm' or 'memory'
    description: str
    options: tuple[LayerOption, ...]

    def defaults(self) -> dict[str, Any]:
        return {o.name: o.default for o in self.options}

    def option(self, name: str) -> LayerOption:
        for o in self.options:
            if o.name == name:
                return o
        raise KeyError(name)


def _o(
    name: str, type_: str, default: Any, help_: str, choices: tuple[str, ...] = ()
) -> LayerOption:
    return LayerOption(name, type_, default, help_, choices)


_TRAINING = _o("training", "bool", True, "include the backward passes (training)")
# A network's first layer needs no gradient for its input (the images or tokens): its
# activation-gradient pass (dgrad) never runs. Only weight gradients train the layer.
_INPUT_GRAD = _o(
    "input_grad",
    "bool",
    True,
    "compute the input's gradient (dgrad); False for a network's first layer",
)
_SHAPE = _o("shape", "shape", (32, 64, 56, 56), "input tensor shape, e.g. 32,64,56,56 (N,C,H,W)")
_ELEMENTS = _o("elements", "optional_int", None, "number of elements (instead of shape)")

# LSTM and GRU take the same sizes; they differ in their gate count (4 vs 3).
_RECURRENT_OPTIONS = (
    _o("batch", "int", 64, "minibatch size"),
    _o("input_size", "int", 1024, "input features"),
    _o("hidden_size", "int", 1024, "hidden size H"),
    _o("seq_len", "int", 50, "time steps"),
    _TRAINING,
)

_GEMM_KINDS = (
    LayerKind(
        "linear",
        "gemm",
        "fully-connected layer y = W x",
        (
            _o("batch", "int", 512, "batch size (rows of x)"),
            _o("inputs", "int", 1024, "input features"),
            _o("outputs", "int", 4096, "output features"),
            _o("seq_len", "int", 1, "sequence length; the GEMM batch is batch x seq_len"),
            _TRAINING,
            _INPUT_GRAD,
        ),
    ),
    LayerKind(
        "conv2d",
        "gemm",
        "2-D convolution as an implicit GEMM",
        (
            _o("batch", "int", 32, "batch size N"),
            _o("in_channels", "int", 64, "input channels C"),
            _o("out_channels", "int", 64, "output channels K"),
            _o("height", "int", 56, "input height H"),
            _o("width", "int", 56, "input width W"),
            _o("kernel_size", "pair", 3, "filter size R (or R,S)"),
            _o("stride", "pair", 1, "stride (or sh,sw)"),
            _o("padding", "pair", 1, "zero padding (or ph,pw)", ()),
            _o("dilation", "pair", 1, "dilation (or dh,dw)"),
            _o("groups", "int", 1, "groups (in_channels for depthwise)"),
            _o("layout", "choice", "nhwc", "memory layout", ("nhwc", "nchw")),
            _TRAINING,
            _INPUT_GRAD,
        ),
    ),
    LayerKind(
        "lstm",
        "gemm",
        "LSTM layer (4 gates)",
        _RECURRENT_OPTIONS,
    ),
    LayerKind(
        "gru",
        "gemm",
        "GRU layer (3 gates)",
        _RECURRENT_OPTIONS,
    ),
    LayerKind(
        "attention",
        "gemm",
        "multi-head self-attention",
        (
            _o("batch", "int", 8, "batch size"),
            _o("seq_len", "int", 512, "sequence length S"),
            _o("hidden", "int", 1024, "hidden size h"),
            _o("heads", "int", 16, "attention heads (must divide hidden)"),
            _o(
                "qkv",
                "choice",
                "concatenated",
                "Q/K/V projections as one GEMM or three",
                ("concatenated", "separate"),
            ),
            _TRAINING,
        ),
    ),
    LayerKind(
        "embedding",
        "memory",
        "embedding lookup (a gather)",
        (
            _o("batch", "int", 8, "batch size"),
            _o("seq_len", "int", 512, "sequence length"),
            _o("vocab", "int", 32768, "vocabulary size"),
            _o("hidden", "int", 1024, "embedding size"),
            _TRAINING,
        ),
    ),
    LayerKind(
        "projection",
        "gemm",
        "vocabulary projection (a linear layer with outputs = vocab)",
        (
            _o("batch", "int", 8, "batch size"),
            _o("seq_len", "int", 512, "sequence length"),
            _o("hidden", "int", 1024, "input features"),
            _o("vocab", "int", 32768, "vocabulary size"),
            _TRAINING,
        ),
    ),
)


def _memory_kind(name: str) -> LayerKind:
    opts: tuple[LayerOption, ...] = (_SHAPE, _ELEMENTS)
    if name in NORMALIZATION_OPS:
        persistent = NORMALIZATION_OPS[name].persistent_default
        opts += (_o("persistent", "bool", persistent, "single-pass (persistent) kernel"),)
        desc = f"{name}: {NORMALIZATION_OPS[name].note}"
    elif name in ELEMENTWISE_OPS:
        desc = f"{name}: {ELEMENTWISE_OPS[name].note}"
    else:
        desc = f"{name[:3]} pooling over a window"
        opts = (
            _SHAPE,
            _o("kernel_size", "pair", 3, "window size (or h,w)"),
            _o("stride", "pair", None, "stride (default: the window)"),
            _o("padding", "pair", 0, "zero padding (or ph,pw)"),
        )
    return LayerKind(name, "memory", desc, (*opts, _TRAINING))


LAYER_KINDS: dict[str, LayerKind] = {k.name: k for k in _GEMM_KINDS}
LAYER_KINDS.update({name: _memory_kind(name) for name in MEMORY_OPS})


# -- option checking ---------------------------------------------------------------------


def _pair(name: str, value: Any, minimum: int = 1) -> tuple[int, int]:
    if isinstance(value, str):
        parts = re.split(r"\s*[,x]\s*", value.strip().lower())
        if not all(p.isdigit() for p in parts):
            raise InvalidParameter(
                f"'{name}' must be an integer or two comma-separated integers "
                f"(got {describe(value)})"
            )
        if any(len(p) > 13 for p in parts):  # 2**40 has 13 digits; int() of 5000 digits fails
            raise InvalidParameter(
                f"'{name}' must be integers no larger than 2**40 (got {describe(value)})"
            )
        value = tuple(int(p) for p in parts)
        if len(value) == 1:
            value = value[0]
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise InvalidParameter(
                f"'{name}' must be an integer or a pair of integers (got {describe(value)})"
            )
        return (
            check_int(name, value[0], minimum=minimum, allow_array=False),
            check_int(name, value[1], minimum=minimum, allow_array=False),
        )
    v = check_int(name, value, minimum=minimum, allow_array=False)
    return v, v


def resolve_options(kind: str, options: dict[str, Any]) -> tuple[LayerKind, dict[str, Any]]:
    """Check ``options`` against the kind's catalogue; fill defaults; normalize types."""
    kind = check_choice("kind", kind, LAYER_KINDS)
    spec = LAYER_KINDS[kind]
    names = [o.name for o in spec.options]
    for key in options:
        if key not in names:
            raise InvalidParameter(
                f"'{key}' is not an option of {kind} (options: {', '.join(names)})"
            )
    out = spec.defaults()
    out.update({k: v for k, v in options.items()})
    if spec.category == "memory" and kind != "embedding" and options.get("elements") is not None:
        if options.get("shape") is not None:
            raise InvalidParameter("'shape' and 'elements' are alternatives; give one (got both)")
        out["shape"] = None
    for o in spec.options:
        value = out[o.name]
        if o.type == "int":
            minimum = 0 if o.name == "padding" else 1
            out[o.name] = check_int(o.name, value, minimum=minimum, allow_array=False)
        elif o.type == "optional_int":
            out[o.name] = None if value is None else check_int(o.name, value, allow_array=False)
        elif o.type == "pair":
            if value is None and o.default is None:  # e.g. stride: None means "the window"
                continue
            minimum = 0 if o.name == "padding" else 1
            out[o.name] = _pair(o.name, value, minimum)
        elif o.type == "choice":
            out[o.name] = check_choice(o.name, value, o.choices)
        elif o.type == "bool":
            if o.name == "training":
                out[o.name] = check_training(value)
            else:
                out[o.name] = check_bool(o.name, value)
    return spec, out


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """floor((H + 2 pad - dilation (R - 1) - 1) / stride) + 1, as PyTorch's Conv2d."""
    return pool_output_size(size, kernel, stride, padding, dilation)


# -- passes ------------------------------------------------------------------------------


def _gemm_pass(
    op: str,
    pass_: str,
    m: int,
    n: int,
    k: int,
    d: Dtype,
    g: Gpu,
    *,
    batch: int = 1,
    count: int = 1,
    tensor_bytes: float | None = None,
    aligned: bool | None = None,
) -> PassResult:
    """One GEMM pass from the GEMM model; optional conv refinements (see module doc)."""
    s = gemm_sweep(m, n, k, dtype=d.name, gpu=g, batch=batch)
    flops = float(s.flops)
    nbytes = float(s.bytes)
    math_time = float(s.math_time_s)
    memory_time = float(s.memory_time_s)
    lim = str(s.limiter)
    time = float(s.predicted_time_s)
    refined = False
    if aligned is not None and g.unit_for(d) == "tensor":
        eff = 1.0 if aligned else achievable(g, d).misaligned_efficiency
        math_time = math_time * float(s.alignment_efficiency) / eff
        refined = True
    if tensor_bytes is not None:
        nbytes = float(tensor_bytes)
        memory_time = nbytes / (g.memory_bandwidth_bytes_per_s * float(s.memory_fraction))
        refined = True
    ai = flops / nbytes
    if refined:
        time = float(s.kernel_overhead_s) + overlap_time(math_time, memory_time)
        if lim != "latency":
            lim = "math" if ai > float(s.ops_per_byte) else "memory"
    return PassResult(
        op=op,
        pass_=pass_,
        op_class="tensor_contraction",
        m=m,
        n=n,
        k=k,
        batch=batch,
        count=count,
        flops=flops * count,
        bytes=nbytes * count,
        arithmetic_intensity=ai,
        ops_per_byte=float(s.ops_per_byte),
        limiter=lim,
        math_time_s=math_time * count,
        memory_time_s=memory_time * count,
        predicted_time_s=time * count,
    )


def _linear(
    op: str,
    tokens: int,
    inputs: int,
    outputs: int,
    d: Dtype,
    g: Gpu,
    training: bool,
    count: int = 1,
    input_grad: bool = True,
) -> list[PassResult]:
    # NVIDIA linear-layer guide mapping (module docstring).
    passes = [_gemm_pass(op, "forward", outputs, tokens, inputs, d, g, count=count)]
    if training and input_grad:
        passes.append(_gemm_pass(op, "dgrad", inputs, tokens, outputs, d, g, count=count))
    if training:
        passes.append(_gemm_pass(op, "wgrad", inputs, outputs, tokens, d, g, count=count))
    return passes


def _conv2d(o: dict[str, Any], d: Dtype, g: Gpu) -> list[PassResult]:
    n, c, kout = o["batch"], o["in_channels"], o["out_channels"]
    h, w, groups = o["height"], o["width"], o["groups"]
    (r, s), (sh, sw), (ph, pw), (dh, dw) = (
        o["kernel_size"],
        o["stride"],
        o["padding"],
        o["dilation"],
    )
    if c % groups or kout % groups:
        raise InvalidParameter(
            f"'groups' must divide in_channels ({c}) and out_channels ({kout}) (got {groups})"
        )
    if dh * (r - 1) + 1 > h + 2 * ph or dw * (s - 1) + 1 > w + 2 * pw:
        raise InvalidParameter(
            f"'kernel_size' must fit in the padded input {h + 2 * ph}x{w + 2 * pw} "
            f"(got {r}x{s} with dilation {dh}x{dw})"
        )
    p = conv_output_size(h, r, sh, ph, dh)
    q = conv_output_size(w, s, sw, pw, dw)
    cg, kg = c // groups, kout // groups
    b = d.bytes_per_element
    x_bytes, y_bytes = n * c * h * w * b, n * kout * p * q * b
    w_bytes = kout * cg * r * s * b
    # Alignment on the channel counts; specialized C = 4 kernels for first layers (NHWC).
    mult = d.tensor_core_multiple
    first_layer_c4 = cg == 4 and b == 2 and o["layout"] == "nhwc"
    aligned = (cg % mult == 0 or first_layer_c4) and kg % mult == 0
    if groups > 1 and cg == 1:
        # Depthwise: as a GEMM each group would have N = out_channels / groups (usually 1)
        # and K = R*S; libraries run direct kernels on CUDA cores instead, memory-limited.
        dw_flops = 2.0 * n * kout * p * q * r * s
        sizes_dw = {
            "forward": x_bytes + w_bytes + y_bytes,
            "dgrad": y_bytes + w_bytes + x_bytes,
            "wgrad": x_bytes + y_bytes + w_bytes,
        }
        names: tuple[str, ...] = ("forward", "dgrad", "wgrad") if o["training"] else ("forward",)
        names = tuple(x for x in names if x != "dgrad" or o["input_grad"])
        return [
            memory_pass(
                "conv2d_depthwise", name, "tensor_contraction", dw_flops, sizes_dw[name], g, d
            )
            for name in names
        ]
    passes = [
        _gemm_pass(
            "conv2d",
            "forward",
            n * p * q,
            kg,
            cg * r * s,
            d,
            g,
            batch=groups,
            tensor_bytes=x_bytes + w_bytes + y_bytes,
            aligned=aligned,
        )
    ]
    if o["training"] and o["input_grad"]:
        # The input gradient is the transposed convolution of dy: each multiply-add of the
        # forward pass has exactly one partner, so it is the forward GEMM with N and K
        # exchanged (M = N*P*Q output pixels, K = K*R*S per group), for any stride. Sizing
        # it over every input pixel with ceil(R/s) x ceil(S/s) taps overcounts strided
        # convolutions (4x for a 1x1 stride-2 one).
        passes.append(
            _gemm_pass(
                "conv2d",
                "dgrad",
                n * p * q,
                cg,
                kg * r * s,
                d,
                g,
                batch=groups,
                tensor_bytes=y_bytes + w_bytes + x_bytes,
                aligned=aligned,
            )
        )
    if o["training"]:
        passes.append(
            _gemm_pass(
                "conv2d",
                "wgrad",
                cg * r * s,
                kg,
                n * p * q,
                d,
                g,
                batch=groups,
                tensor_bytes=x_bytes + y_bytes + w_bytes,
                aligned=aligned,
            )
        )
    if o["layout"] == "nchw":
        # Two layout transposes around each pass: its activation input and its output.
        sizes = {
            "forward": (x_bytes, y_bytes),
            "dgrad": (y_bytes, x_bytes),
            "wgrad": (x_bytes, y_bytes),
        }
        extra = []
        for pss in passes:
            t_in, t_out = sizes[pss.pass_]
            nbytes = 2 * (t_in + t_out)  # each transpose reads and writes its tensor
            extra.append(memory_pass("nchw_transpose", pss.pass_, "elementwise", 0.0, nbytes, g, d))
        passes += extra
    return passes


def _recurrent(kind: str, o: dict[str, Any], d: Dtype, g: Gpu) -> list[PassResult]:
    gates = 4 if kind == "lstm" else 3
    bsz, inp, hid, seq = o["batch"], o["input_size"], o["hidden_size"], o["seq_len"]
    tokens = bsz * seq
    gh = gates * hid
    b = d.bytes_per_element
    units = bsz * hid  # hidden units updated per step
    # Cell kernel per step and hidden unit (module memlimited's convention): LSTM 3
    # sigmoids, 2 tanh, 4 gate sums, 3 products, 1 sum = 22 operations; it reads the two
    # gate pre-activation halves and c, writes h and c. GRU: 2 sigmoids, 1 tanh, gate sums
    # and the interpolation (1 - z) n + z h, about 16 operations; reads both halves and h.
    cell_flops = 22 if kind == "lstm" else 16
    cell_tensors = 2 * gates + 3 if kind == "lstm" else 2 * gates + 2
    passes = [
        _gemm_pass("input_gates", "forward", gh, tokens, inp, d, g),
        _gemm_pass("recurrent_gates", "forward", gh, bsz, hid, d, g, count=seq),
        memory_pass(
            f"{kind}_cell",
            "forward",
            "elementwise",
            units * cell_flops,
            units * cell_tensors * b,
            g,
            d,
            count=seq,
        ),
    ]
    if o["training"]:
        passes += [
            memory_pass(
                f"{kind}_cell",
                "backward",
                "elementwise",
                units * 2 * cell_flops,
                units * (2 * gates + 4) * b,
                g,
                d,
                count=seq,
            ),
            _gemm_pass("recurrent_gates", "dgrad", hid, bsz, gh, d, g, count=seq),
            _gemm_pass("input_gates", "dgrad", inp, tokens, gh, d, g),
            _gemm_pass("input_gates", "wgrad", inp, gh, tokens, d, g),
            _gemm_pass("recurrent_gates", "wgrad", hid, gh, tokens, d, g),
        ]
    return passes


# The layer's names for the attention block's kernels (the slides' "Transformer example").
_ATTENTION_OPS = {
    "qkv_proj": "qkv_projection",
    "scores Q K^T": "scores_qk",
    "softmax": "attention_softmax",
    "context P V": "context_pv",
    "o_proj": "output_projection",
}
# Kernel-name suffixes and the layer's pass names; both gradients of the attention core's
# products (Q K^T, P V) are gradients of activations, so both are 'dgrad' passes here.
_ATTENTION_PASSES = {" dgrad": "dgrad", " wgrad": "wgrad", " backward": "backward"}
# The parts of a linear layer's kernels besides its GEMM (core.workload's casts).
_CAST_PARTS = {" weight cast": "weight_cast", " cast": "input_cast"}


def _attention(o: dict[str, Any], d: Dtype, g: Gpu) -> list[PassResult]:
    """The attention block of a one-layer step's kernel list (core.workload), priced there."""
    bsz, seq, hid, heads = o["batch"], o["seq_len"], o["hidden"], o["heads"]
    if hid % heads:
        raise InvalidParameter(f"'heads' must divide hidden ({hid}) (got {heads})")
    # the kernel list's limits (core.workload), checked here under the layer's names
    for name, value, cap in (("batch", bsz, 1 << 20), ("seq_len", seq, 1 << 22),
                             ("hidden", hid, 1 << 20)):  # fmt: skip
        check_int(name, value, allow_array=False, maximum=cap)
    if bsz * seq > _MAX_TOKENS:
        raise InvalidParameter(
            f"'batch' x 'seq_len' must be at most {_MAX_TOKENS:,} tokens (got {bsz * seq:,})"
        )
    if d.name not in DTYPE_PRECISIONS:
        raise InvalidParameter(
            f"'dtype' must be one of {', '.join(DTYPE_PRECISIONS)} for an attention layer "
            f"(got {describe(d.name)})"
        )
    training = o["training"]
    # one layer of a BERT-style encoder: every head its own K and V, no rotary embedding,
    # eager attention over the whole sequence (the scores go through DRAM); the MLP and the
    # head the step also builds are left out by attention_block
    spec = LlmSpec("attention", layers=1, hidden=hid, heads=heads, kv_heads=heads,
                   head_dim=hid // heads, ffn=hid, vocab=1, gated_mlp=False,
                   tied_embeddings=True, rotary=False)  # fmt: skip
    w = attention_block(
        workload(spec, phase="training" if training else "prefill", batch=bsz, seq=seq,
                 precision=DTYPE_PRECISIONS[d.name], attention="eager", causal=False)
    )  # fmt: skip
    # The layer keeps its weights in ``dtype``, as the other layer kinds and `dlperf time
    # layer` do: the step's FP32 master weights and their casts to 16 bits (or FP8) for
    # every forward pass belong to the mixed-precision recipe, not to the layer. An FP8
    # GEMM's cast of its input stays: the GEMM cannot run without it.
    kernels = [k for k in w.kernels if " weight cast" not in k.name]
    qkv = "qkv_projection"
    if o["qkv"] == "separate":
        # Q, K and V as three projections of hidden outputs each: each is the output
        # projection's linear layer (hidden x hidden weights on the same tokens, the same
        # saved input), so its kernels are those of o_proj, three times
        qkv = "q_k_v_projections"
        own = [k for k in kernels if forward_name(k.name) == "qkv_proj"]
        three = [
            replace(k, name=k.name.replace("o_proj", "qkv_proj", 1), count=3 * k.count)
            for k in kernels
            if forward_name(k.name) == "o_proj"
        ]
        first = kernels.index(own[0])
        kernels = [k for k in kernels if k not in own]
        kernels[first:first] = [k for k in three if k.pass_ == "forward"]
        kernels += [k for k in three if k.pass_ != "forward"]
    w = replace(w, kernels=tuple(kernels))
    priced = price(w, g, timing="kernel", isolated=True)
    limiters = gemm_limiters(w, g)
    passes = []
    for i, k in enumerate(w.kernels):
        base = forward_name(k.name)
        op = qkv if base == "qkv_proj" else _ATTENTION_OPS.get(base, base)
        rest = k.name.removeprefix(base)
        pass_ = "forward"
        for suffix, name in _ATTENTION_PASSES.items():
            if rest.endswith(suffix):
                rest, pass_ = rest.removesuffix(suffix), name
        if pass_ == "wgrad" and k.path.endswith(".attn"):
            pass_ = "dgrad"
        if rest:
            op = f"{op}.{_CAST_PARTS[rest]}"
        passes.append((pass_ != "forward", kernel_pass(priced, i, g, op, pass_, limiters.get(i))))
    # forward passes in the order they run, then backward ones in the order autograd runs
    # them (the reverse of their forward kernels)
    fwd = [p for back, p in passes if not back]
    order = {op: i for i, op in enumerate(dict.fromkeys(p.op.split(".")[0] for p in fwd))}
    bwd = sorted((p for back, p in passes if back), key=lambda p: -order[p.op.split(".")[0]])
    return fwd + bwd


def _embedding(o: dict[str, Any], d: Dtype, g: Gpu) -> list[PassResult]:
    tokens = o["batch"] * o["seq_len"]
    hid, vocab = o["hidden"], o["vocab"]
    b = d.bytes_per_element
    index_bytes = 8 * tokens  # int64 token ids
    passes = [
        memory_pass(
            "embedding", "forward", "elementwise", 0.0, 2 * tokens * hid * b + index_bytes, g, d
        )
    ]
    if o["training"]:
        # Dense weight gradient: write vocab x hidden zeros, then read-modify-write T rows
        # with the incoming gradient (T rows read).
        nbytes = vocab * hid * b + 3 * tokens * hid * b + index_bytes
        passes.append(memory_pass("embedding", "wgrad", "elementwise", tokens * hid, nbytes, g, d))
    return passes


def build_passes(kind: str, options: dict[str, Any], d: Dtype, g: Gpu) -> list[PassResult]:
    """Passes of a layer whose options have been through :func:`resolve_options`."""
    if kind == "linear":
        tokens = options["batch"] * options["seq_len"]
        return _linear(
            "linear",
            tokens,
            options["inputs"],
            options["outputs"],
            d,
            g,
            options["training"],
            input_grad=options["input_grad"],
        )
    if kind == "projection":
        tokens = options["batch"] * options["seq_len"]
        return _linear(
            "vocab_projection",
            tokens,
            options["hidden"],
            options["vocab"],
            d,
            g,
            options["training"],
        )
    if kind == "conv2d":
        return _conv2d(options, d, g)
    if kind in ("lstm", "gru"):
        return _recurrent(kind, options, d, g)
    if kind == "attention":
        return _attention(options, d, g)
    if kind == "embedding":
        return _embedding(options, d, g)
    extra = {
        k: options[k] for k in ("persistent", "kernel_size", "stride", "padding") if k in options
    }
    return list(
        memory_op(
            kind,
            shape=options["shape"],
            elements=options.get("elements"),
            dtype=d,
            gpu=g,
            training=options["training"],
            **extra,
        )
    )


# -- the result --------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerResult(ResultMixin):
    """The model of one layer: its passes, totals and checklist findings.

    Attribute names are the JSON keys of ``dlperf layer`` (``passes`` use ``pass`` and
    ``class`` for ``pass_`` and ``op_class``).
    """

    layer: str
    dtype: str
    gpu: str
    options: dict[str, Any]
    passes: tuple[PassResult, ...]
    flops: float
    bytes: float
    forward_time_s: float
    backward_time_s: float
    predicted_time_s: float
    limiter: str
    findings: tuple[Finding, ...] = field(default=())

    _units: ClassVar[dict[str, str]] = {
        "flops": "FLOP",
        "bytes": "B",
        "forward_time_s": "s",
        "backward_time_s": "s",
        "predicted_time_s": "s",
    }

    def pass_named(self, pass_: str, op: str | None = None) -> PassResult:
        """The first pass called ``pass_`` (and of operation ``op`` if given)."""
        for p in self.passes:
            if p.pass_ == pass_ and (op is None or p.op == op):
                return p
        raise KeyError(f"{self.layer} has no {pass_} pass" + (f" of {op}" if op else ""))

    def _title(self) -> str:
        opts = ", ".join(
            f"{k}={'x'.join(map(str, v)) if isinstance(v, tuple) else v}"
            for k, v in self.options.items()
            if v is not None and k != "training"
        )
        return f"{self.layer} ({opts}) in {self.dtype} on {self.gpu}"

    def _rows(self) -> list[tuple[str, str]]:
        return [
            ("FLOPs", format_quantity(self.flops, "FLOP")),
            ("bytes moved", format_quantity(self.bytes, "B")),
            ("forward time", format_quantity(self.forward_time_s, "s")),
            ("backward time", format_quantity(self.backward_time_s, "s")),
            ("predicted time", format_quantity(self.predicted_time_s, "s")),
            ("limiter (longest pass)", self.limiter),
            # every pass is priced as its kernel alone (see the module docstring)
            ("timing", f"kernel: {TIMING_CONTEXT_DESCRIPTIONS['kernel']}"),
        ]

    def __str__(self) -> str:
        text = super().__str__() + "\n" + describe_passes(self.passes)
        if self.findings:
            text += "\nfindings:\n" + "\n".join(f"  {f}" for f in self.findings)
        return text

    def _repr_html_(self) -> str:
        import html

        out = super()._repr_html_()
        out += f"<pre>{html.escape(describe_passes(self.passes))}</pre>"
        if self.findings:
            items = "".join(f"<li>{html.escape(str(f))}</li>" for f in self.findings)
            out += f"<ul class='dlperf-findings'>{items}</ul>"
        return out


# The checklists (core.checklists) build on this module's passes, so this module does not
# import them; they register their finder here when imported (core/__init__ imports them).
_FINDINGS: list[Callable[..., list[Finding]]] = []


def register_findings(finder: Callable[..., list[Finding]]) -> None:
    """Use ``finder(kind, options, dtype, gpu, passes)`` for :func:`layer`'s findings."""
    _FINDINGS[:] = [finder]


def total_time(passes: Sequence[PassResult]) -> float:
    return float(sum(p.predicted_time_s for p in passes))


def layer(
    kind: str,
    *,
    dtype: str | Dtype = "fp16",
    gpu: str | Gpu = "A100",
    findings: bool = True,
    **options: Any,
) -> LayerResult:
    """Model one layer: its GEMM and memory passes, totals, and checklist findings.

    ``kind`` is a key of :data:`LAYER_KINDS`; ``options`` are that kind's options (names
    with underscores, as listed there with their defaults).

    >>> r = layer("linear", batch=512, inputs=1024, outputs=4096, dtype="fp16", gpu="V100")
    >>> fwd = r.pass_named("forward")
    >>> (fwd.m, fwd.n, fwd.k), round(fwd.arithmetic_intensity), fwd.limiter
    ((4096, 512, 1024), 315, 'math')
    """
    spec, opts = resolve_options(kind, options)
    d = _dtype(dtype)
    g = _gpu(gpu)
    g.peak_flops(d)  # the standard message if the GPU does not run this dtype
    findings = check_bool("findings", findings)
    passes = build_passes(spec.name, opts, d, g)
    found: list[Finding] = []
    if findings and _FINDINGS:
        found = _FINDINGS[0](spec.name, opts, d, g, passes)
    longest = max(passes, key=lambda p: p.predicted_time_s)
    return LayerResult(
        layer=spec.name,
        dtype=d.name,
        gpu=g.name,
        options=opts,
        passes=tuple(passes),
        flops=float(sum(p.flops for p in passes)),
        bytes=float(sum(p.bytes for p in passes)),
        forward_time_s=total_time([p for p in passes if p.pass_ == "forward"]),
        backward_time_s=total_time([p for p in passes if p.pass_ != "forward"]),
        predicted_time_s=total_time(passes),
        limiter=longest.limiter,
        findings=tuple(found),
    )
