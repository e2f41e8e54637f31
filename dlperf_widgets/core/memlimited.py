"""Memory-limited operations: element-wise ops, normalizations and pooling.

These layers do a handful of operations per value they read or write, so on any modern GPU
their time is the time to move their tensors through DRAM (NVIDIA "Optimizing
Memory-Limited Layers" user guide, sections 2-5; NVIDIA slides "NN Performance
optimization", "DNN Operation Categories").

Counting convention (it reproduces the slides' table "Examples of neural network operations
with their arithmetic intensities", FP16 on V100):

- One floating-point operation per elementary arithmetic step: an add, a multiply, a
  comparison (max, ReLU), or one transcendental function (exp, tanh, erf) counted as one.
  A fused multiply-add counts as two, as in the GEMM model.
- Bytes: every tensor the kernel reads or writes crosses DRAM once per pass over it, times
  the element size. Per-channel or per-row vectors (batch-norm scale and shift, running
  statistics, layer-norm mean and rstd) are a vanishing fraction and are left out.
- ReLU: one comparison per element over one element read and one written, 1 / (2 B + 2 B)
  = 0.25 FLOP/B in FP16 (R09).
- Pooling: each output costs one comparison (max) or addition (average) per window element,
  win_h * win_w of them; the input is read once and the output written once. A 3x3 window
  at unit stride, with the output as large as the input, gives 9 / (2 B + 2 B) = 2.25 FLOP/B
  (R08). The guide's point is the same: each input element is reused only win_h * win_w
  times, far too few to be math-limited.
- Layer normalization: 8 operations per element (mean 1, variance 3, normalize 2, scale and
  shift 2) over one read and one write = 2 FLOP/B in FP16, below the slides' bound of
  10 FLOP/B (R10).

Pass counts: the memory-limited-layers guide (3.1) contrasts non-persistent batch
normalization, which reads the input once to gather the statistics and again to normalize
it, with the persistent single-pass algorithm that keeps the input on chip. Here the
non-persistent forward pass reads the input twice and writes once (3 tensor passes), the
persistent one reads once and writes once (2); the backward pass does 5 and 3 (a reduction
over dy and x, then dx from dy and x). Layer norm and softmax have the same two variants;
their rows usually fit on chip, so they default to persistent.

Time: a memory-limited kernel moves its bytes at the DRAM bandwidth real GPUs sustain (a
fraction of the datasheet figure, ``core.calibration``) and pays the same fixed cost per
kernel as a GEMM (launch, ramp-up and drain), added to its work. Small tensors: the guide
observes that below some size the duration of batch normalization and activations stops
shrinking because the tensor is too small to saturate memory bandwidth (3.1 and 4, Figures
1 and 3). In the model that is where the fixed cost exceeds the transfer time: such a
kernel is reported with limiter ``'latency'``. Equivalently, bandwidth is saturated only
from :func:`saturation_bytes` on (achievable bandwidth x the fixed cost: about 4.7 MB on a
V100, 7.6 MB on an A100-80GB).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from ._validate import MAX_SIZE, check_bool, check_choice, check_int, check_product, describe
from .assumptions import MIN_KERNEL_TIME_S
from .calibration import achievable, overlap_time
from .dtypes import Dtype
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gpus import Gpu
from .gpus import gpu as _gpu
from .results import ResultMixin, format_quantity

__all__ = [
    "ELEMENTWISE_OPS",
    "MEMORY_OPS",
    "MIN_KERNEL_TIME_S",
    "NORMALIZATION_OPS",
    "OP_CLASSES",
    "POOLING_OPS",
    "PassResult",
    "check_training",
    "describe_passes",
    "memory_op",
    "memory_pass",
    "pool_output_size",
    "saturation_bytes",
]


# The operator classes of the slides' "Transformer example".
OP_CLASSES = ("tensor_contraction", "statistical_normalization", "elementwise")


@dataclass(frozen=True)
class PassResult(ResultMixin):
    """One pass (forward, dgrad, wgrad or backward) of one operation.

    ``m``, ``n``, ``k`` and ``batch`` describe one GEMM launch and are ``None`` for
    operations that are not GEMMs. ``count`` is how many such launches the pass makes
    (the recurrent GEMM of an LSTM runs once per time step); ``flops``, ``bytes`` and the
    times are totals over all of them, the arithmetic intensity is that of one launch.
    The JSON keys are the attribute names, except ``pass_`` -> ``pass`` and
    ``op_class`` -> ``class`` (Python keywords).
    """

    op: str
    pass_: str
    op_class: str
    m: int | None
    n: int | None
    k: int | None
    batch: int | None
    count: int
    flops: float
    bytes: float
    arithmetic_intensity: float
    ops_per_byte: float
    limiter: str
    math_time_s: float
    memory_time_s: float
    predicted_time_s: float

    _units: ClassVar[dict[str, str]] = {
        "flops": "FLOP",
        "bytes": "B",
        "math_time_s": "s",
        "memory_time_s": "s",
        "predicted_time_s": "s",
    }

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        renamed = {"pass_": "pass", "op_class": "class"}
        return {renamed.get(key, key): value for key, value in out.items()}

    @property
    def is_gemm(self) -> bool:
        return self.k is not None

    @property
    def predicted_flops_per_s(self) -> float:
        """FLOPs / predicted time: where the pass sits on a roofline (0 for data movement)."""
        return self.flops / self.predicted_time_s if self.predicted_time_s > 0 else 0.0

    @property
    def shape(self) -> str:
        """``'4096x512x1024'`` (with ``'16 x '`` in front for batched GEMMs), or ``'-'``."""
        if self.k is None:
            return "-"
        b = f"{self.batch} x " if self.batch and self.batch != 1 else ""
        return f"{b}{self.m}x{self.n}x{self.k}"

    def _title(self) -> str:
        return f"{self.op} ({self.pass_})"

    def with_name(self, op: str) -> PassResult:
        """The same pass under another operation name (e.g. prefixed by a module path)."""
        return dataclasses.replace(self, op=op)

    def scaled(self, times: int) -> PassResult:
        """The same pass repeated ``times`` more times (e.g. once per network layer)."""
        return dataclasses.replace(
            self,
            count=self.count * times,
            flops=self.flops * times,
            bytes=self.bytes * times,
            math_time_s=self.math_time_s * times,
            memory_time_s=self.memory_time_s * times,
            predicted_time_s=self.predicted_time_s * times,
        )


# -- operation tables ------------------------------------------------------------------


@dataclass(frozen=True)
class _Cost:
    """Per element of the (input) tensor: operations, tensors read, tensors written, and
    extra bytes per element that do not depend on the dtype (a 1-byte dropout mask)."""

    flops: float
    reads: float
    writes: float
    extra_bytes: float = 0.0


@dataclass(frozen=True)
class _ElementwiseSpec:
    forward: _Cost
    backward: _Cost | None  # None: the gradient passes through without a kernel
    note: str


# Operations per element follow the module docstring's convention. Backward passes read
# the incoming gradient dy and what the derivative needs (x or y) and write dx.
ELEMENTWISE_OPS: dict[str, _ElementwiseSpec] = {
    "relu": _ElementwiseSpec(_Cost(1, 1, 1), _Cost(1, 2, 1), "max(x, 0); dx = dy where y > 0"),
    "gelu": _ElementwiseSpec(
        _Cost(5, 1, 1), _Cost(9, 2, 1), "0.5 x (1 + erf(x / sqrt 2)); dx needs erf and exp"
    ),
    "sigmoid": _ElementwiseSpec(
        _Cost(4, 1, 1), _Cost(3, 2, 1), "1 / (1 + exp(-x)); dx = dy y (1 - y)"
    ),
    "tanh": _ElementwiseSpec(_Cost(1, 1, 1), _Cost(3, 2, 1), "tanh x; dx = dy (1 - y^2)"),
    "add": _ElementwiseSpec(_Cost(1, 2, 1), None, "x1 + x2; the gradient passes through"),
    "residual": _ElementwiseSpec(
        _Cost(1, 2, 1), None, "x + f(x), a skip connection; the gradient passes through"
    ),
    "bias": _ElementwiseSpec(
        _Cost(1, 1, 1), _Cost(1, 1, 0), "x + b per feature; backward reduces dy into db"
    ),
    "dropout": _ElementwiseSpec(
        _Cost(3, 1, 1, 1.0),
        _Cost(2, 1, 1, 1.0),
        "keep with probability 1 - p and scale; a 1-byte mask is written, then read back",
    ),
    "scale": _ElementwiseSpec(_Cost(1, 1, 1), _Cost(1, 1, 1), "x * constant"),
    "transpose": _ElementwiseSpec(
        _Cost(0, 1, 1), _Cost(0, 1, 1), "a layout change (e.g. NCHW <-> NHWC): pure copy"
    ),
}


@dataclass(frozen=True)
class _NormSpec:
    forward_flops: float
    backward_flops: float
    inference_flops: float
    persistent_default: bool
    note: str


# forward: persistent reads 1 + writes 1; non-persistent reads 2 (softmax: 3) + writes 1.
# backward: persistent reads dy and x (or y) + writes dx; non-persistent reads them twice.
# Softmax: forward max, subtract, exp, sum, divide (5 per element); backward
# dx = y * (dy - sum(dy * y)) along the row: multiply, add into the sum, subtract,
# multiply (4 per element), reading dy and the saved y and writing dx.
NORMALIZATION_OPS: dict[str, _NormSpec] = {
    "batchnorm": _NormSpec(5, 9, 2, False, "statistics per channel over N*H*W"),
    "layernorm": _NormSpec(8, 10, 8, True, "statistics per sample over the normalized shape"),
    "softmax": _NormSpec(5, 4, 5, True, "max, exp, sum and divide along the last axis"),
}

POOLING_OPS = ("maxpool", "avgpool")

MEMORY_OPS: tuple[str, ...] = (*ELEMENTWISE_OPS, *NORMALIZATION_OPS, *POOLING_OPS)


# -- the time model ----------------------------------------------------------------------


def _cuda_peak(g: Gpu, d: Dtype) -> float:
    """Rate of an element-wise kernel: the dtype on CUDA cores, else FP32 CUDA cores."""
    for name in (d.name, "fp32"):
        for p in g.peaks:
            if p.unit == "cuda" and p.dtype == name:
                return p.flops_per_s
    return g.peak_flops(d) if g.supports(d) else max(p.flops_per_s for p in g.peaks)


def saturation_bytes(gpu: str | Gpu = "A100", dtype: str = "fp16") -> float:
    """Bytes a memory-limited kernel must move before moving them takes longer than the
    kernel's fixed cost: achievable bandwidth x overhead (``core.calibration``)."""
    g = _gpu(gpu)
    cal = achievable(g, dtype)
    return g.memory_bandwidth_bytes_per_s * cal.memory_fraction * cal.kernel_overhead_s


def memory_pass(
    op: str,
    pass_: str,
    op_class: str,
    flops: float,
    nbytes: float,
    g: Gpu,
    d: Dtype,
    count: int = 1,
) -> PassResult:
    """Model one memory-limited pass: achievable rates, imperfect overlap, fixed cost.

    ``flops`` and ``nbytes`` are for one launch; ``count`` launches run one after another.
    The limiter is 'latency' when the kernel's fixed cost exceeds both its math and its
    memory time (too little work to saturate anything), else the guide's comparison of
    intensity with the ops:byte ratio.
    """
    peak = _cuda_peak(g, d)
    bw = g.memory_bandwidth_bytes_per_s
    cal = achievable(g, d.name if g.supports(d) else "fp32")
    math_time = flops / (peak * cal.math_fraction)
    memory_time = nbytes / (bw * cal.memory_fraction)
    time = cal.kernel_overhead_s + overlap_time(math_time, memory_time)
    ai = flops / nbytes if nbytes else 0.0
    ops_per_byte = peak / bw
    if max(math_time, memory_time) < cal.kernel_overhead_s:
        lim = "latency"
    else:
        lim = "math" if ai > ops_per_byte else "memory"
    return PassResult(
        op=op,
        pass_=pass_,
        op_class=op_class,
        m=None,
        n=None,
        k=None,
        batch=None,
        count=count,
        flops=float(flops) * count,
        bytes=float(nbytes) * count,
        arithmetic_intensity=float(ai),
        ops_per_byte=float(ops_per_byte),
        limiter=lim,
        math_time_s=math_time * count,
        memory_time_s=memory_time * count,
        predicted_time_s=time * count,
    )


# -- shapes ------------------------------------------------------------------------------


def _pair(name: str, value: Any, minimum: int = 1) -> tuple[int, int]:
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise InvalidParameter(
                f"'{name}' must be an integer or a pair of integers (got {describe(value)})"
            )
        a, b = value
        return (
            check_int(name, a, minimum=minimum, allow_array=False),
            check_int(name, b, minimum=minimum, allow_array=False),
        )
    v = check_int(name, value, minimum=minimum, allow_array=False)
    return v, v


def _shape(shape: Any, elements: Any) -> tuple[int, ...]:
    if shape is None and elements is None:
        raise InvalidParameter("'shape' or 'elements' must be given (got neither)")
    if shape is not None and elements is not None:
        raise InvalidParameter("'shape' and 'elements' are alternatives; give one (got both)")
    if shape is None:
        return (check_int("elements", elements, allow_array=False),)
    if isinstance(shape, str):
        parts = re.split(r"\s*[,x]\s*", shape.strip().lower())
        if not all(p.isdigit() and len(p) <= 13 for p in parts):  # 2**40 has 13 digits
            raise InvalidParameter(
                f"'shape' must be comma-separated positive integers no larger than 2**40 "
                f"such as 32,64,56,56 (got {describe(shape)})"
            )
        shape = tuple(int(p) for p in parts)
    if not isinstance(shape, (tuple, list)) or not shape:
        raise InvalidParameter(
            f"'shape' must be a non-empty sequence of positive integers (got {describe(shape)})"
        )
    dims = tuple(check_int("shape", s, allow_array=False) for s in shape)
    check_product([f"shape[{i}]" for i in range(len(dims))], dims, maximum=MAX_SIZE)
    return dims


def pool_output_size(size: int, window: int, stride: int, padding: int, dilation: int = 1) -> int:
    """floor((size + 2 padding - dilation (window - 1) - 1) / stride) + 1 (PyTorch's rule)."""
    return (size + 2 * padding - dilation * (window - 1) - 1) // stride + 1


# -- the public entry --------------------------------------------------------------------


def memory_op(
    kind: str,
    *,
    shape: Any = None,
    elements: Any = None,
    dtype: str | Dtype = "fp16",
    gpu: str | Gpu = "A100",
    training: bool = True,
    persistent: bool | None = None,
    kernel_size: Any = 3,
    stride: Any = None,
    padding: Any = 0,
) -> tuple[PassResult, ...]:
    """Passes of one memory-limited operation: forward, and backward when ``training``.

    ``shape`` is the input tensor's shape (NCHW for batch norm and pooling; any shape for
    the rest) or ``elements`` its size. Pooling takes ``kernel_size``, ``stride`` (default:
    the window, as in PyTorch) and ``padding``.

    >>> fwd = memory_op("relu", elements=2**24, dtype="fp16", gpu="V100")[0]
    >>> fwd.arithmetic_intensity, fwd.limiter
    (0.25, 'memory')
    """
    kind = check_choice("kind", kind, MEMORY_OPS)
    d = _dtype(dtype)
    g = _gpu(gpu)
    dims = _shape(shape, elements)
    b = d.bytes_per_element
    n = math.prod(dims)
    passes: list[PassResult] = []

    if kind in ELEMENTWISE_OPS:
        spec = ELEMENTWISE_OPS[kind]
        for name, cost in (("forward", spec.forward), ("backward", spec.backward)):
            if cost is None or (name == "backward" and not training):
                continue
            nbytes = n * ((cost.reads + cost.writes) * b + cost.extra_bytes)
            passes.append(memory_pass(kind, name, "elementwise", n * cost.flops, nbytes, g, d))
        return tuple(passes)

    if kind in NORMALIZATION_OPS:
        norm = NORMALIZATION_OPS[kind]
        persist = norm.persistent_default if persistent is None else bool(persistent)
        if kind == "batchnorm" and not training:
            # Inference: fixed statistics, one scale-and-shift pass (foldable into the conv).
            passes.append(
                memory_pass(
                    kind,
                    "forward",
                    "statistical_normalization",
                    n * norm.inference_flops,
                    2 * n * b,
                    g,
                    d,
                )
            )
            return tuple(passes)
        extra_reads = 0 if persist else (2 if kind == "softmax" else 1)
        passes.append(
            memory_pass(
                kind,
                "forward",
                "statistical_normalization",
                n * norm.forward_flops,
                (2 + extra_reads) * n * b,
                g,
                d,
            )
        )
        if training:
            tensors = 3 if persist else 5
            passes.append(
                memory_pass(
                    kind,
                    "backward",
                    "statistical_normalization",
                    n * norm.backward_flops,
                    tensors * n * b,
                    g,
                    d,
                )
            )
        return tuple(passes)

    # pooling over the last two dimensions (H, W)
    if len(dims) < 3:
        raise InvalidParameter(
            f"'shape' must have at least 3 dimensions (..., H, W) for {kind} (got {describe(dims)})"
        )
    kh, kw = _pair("kernel_size", kernel_size)
    sh, sw = _pair("stride", (kh, kw) if stride is None else stride)
    ph, pw = _pair("padding", padding, minimum=0)
    h, w = dims[-2], dims[-1]
    if ph > kh // 2 or pw > kw // 2:
        raise InvalidParameter(
            f"'padding' must be at most half the window for {kind} (got {describe(padding)} "
            f"with kernel_size {kernel_size!r})"
        )
    if kh > h + 2 * ph or kw > w + 2 * pw:
        raise InvalidParameter(
            f"'kernel_size' must fit in the padded input {h + 2 * ph}x{w + 2 * pw} "
            f"(got {describe(kernel_size)})"
        )
    p = pool_output_size(h, kh, sh, ph)
    q = pool_output_size(w, kw, sw, pw)
    lead = math.prod(dims[:-2])
    n_out = lead * p * q
    window_ops = n_out * kh * kw
    passes.append(
        memory_pass(kind, "forward", "statistical_normalization", window_ops, (n + n_out) * b, g, d)
    )
    if training:
        # backward: average pooling spreads dy over each window (reads dy, writes dx);
        # max pooling also re-reads x and y to find the maxima (cuDNN keeps no indices).
        tensors = (n_out + n) if kind == "avgpool" else (2 * n_out + 2 * n)
        passes.append(
            memory_pass(
                kind, "backward", "statistical_normalization", window_ops, tensors * b, g, d
            )
        )
    return tuple(passes)


def describe_passes(passes: tuple[PassResult, ...]) -> str:
    """An aligned text table of passes (used by the layer and network results)."""
    header = ("op", "pass", "GEMM MxNxK", "count", "FLOPs", "bytes", "AI", "limiter", "time")
    rows = [header]
    for p in passes:
        rows.append(
            (
                p.op,
                p.pass_,
                p.shape,
                str(p.count),
                format_quantity(p.flops, "FLOP", 3),
                format_quantity(p.bytes, "B", 3),
                f"{p.arithmetic_intensity:.3g}",
                p.limiter,
                format_quantity(p.predicted_time_s, "s", 3),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for j, r in enumerate(rows):
        cells = [
            c.ljust(w) if i < 3 or i == 7 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def check_training(value: Any) -> bool:
    """``training`` must be a bool."""
    return check_bool("training", value)
