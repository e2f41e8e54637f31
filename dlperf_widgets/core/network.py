"""Whole networks: every operation with its passes, and the runtime split by operation class.

The classes are those of the slides' "Transformer example" (NVIDIA slides "NN Performance
optimization"): tensor contractions (linear layers and the matrix products inside
attention, convolutions), statistical normalizations (softmax, layer and batch
normalization, pooling: operations built on reductions) and element-wise operators
(biases, dropout, activations, residual connections, embedding gathers, layout copies).
Their measured PyTorch split for a transformer is 99.80 % of FLOPs but 61.0 % of runtime
for contractions, 0.17 % / 25.5 % for normalizations and 0.03 % / 13.5 % for element-wise
operators: contractions do nearly all the arithmetic, yet the memory-limited rest takes a
large share of the time. The model shows the same pattern, not those exact percentages.

Operations inside a repeated block (a transformer layer) are listed once, their ``count``
multiplied by the number of blocks.

:func:`transformer` is a view of the step's kernel list (:mod:`.workload`): the kernels a
training step runs, priced one by one, labelled and grouped by class. :func:`network` and
:func:`cnn` build other networks from the layer models of :mod:`.layers`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ._validate import check_int, describe
from .alignment import Finding
from .dtypes import Dtype
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gpus import Gpu
from .gpus import gpu as _gpu
from .layers import build_passes, conv_output_size, resolve_options
from .memlimited import (
    OP_CLASSES,
    PassResult,
    check_training,
    describe_passes,
    memory_pass,
)
from .results import ResultMixin, format_quantity
from .workload import (
    _MAX_TOKENS,
    DTYPE_PRECISIONS,
    LlmSpec,
    WorkloadTime,
    gemm_limiters,
    kernel_pass,
    price,
    workload,
)

__all__ = [
    "CNN_KINDS",
    "TRANSFORMER_DTYPES",
    "LayerSpec",
    "NetworkResult",
    "by_class",
    "cnn",
    "network",
    "transformer",
]


@dataclass(frozen=True)
class LayerSpec:
    """One layer of a network: a name, a kind of :data:`LAYER_KINDS`, its options, and how
    many identical copies run (``repeat``)."""

    name: str
    kind: str
    options: dict[str, Any]
    repeat: int = 1


@dataclass(frozen=True)
class NetworkResult(ResultMixin):
    """A network's operations (forward and backward passes) and their split by class.

    ``by_class`` maps each class of :data:`~dlperf_widgets.core.memlimited.OP_CLASSES` to
    ``flops``, ``time_s``, ``flops_share`` and ``runtime_share``. JSON keys are the
    attribute names (each op uses ``pass`` and ``class``, see ``PassResult``).
    """

    name: str
    dtype: str
    gpu: str
    ops: tuple[PassResult, ...]
    by_class: dict[str, dict[str, float]]
    flops: float
    bytes: float
    forward_time_s: float
    backward_time_s: float
    total_time_s: float
    findings: tuple[Finding, ...] = field(default=())
    # aten operations of an analysed PyTorch model that no core model prices, with counts
    unpriced_ops: dict[str, int] = field(default_factory=dict)

    _units: ClassVar[dict[str, str]] = {
        "flops": "FLOP",
        "bytes": "B",
        "forward_time_s": "s",
        "backward_time_s": "s",
        "total_time_s": "s",
    }

    def _title(self) -> str:
        return f"{self.name} in {self.dtype} on {self.gpu}"

    def _class_table(self) -> str:
        lines = [f"  {'class':<26} {'FLOPs':>8} {'runtime':>8}"]
        for cls, v in self.by_class.items():
            lines.append(f"  {cls:<26} {v['flops_share']:>8.2%} {v['runtime_share']:>8.1%}")
        return "\n".join(lines)

    def _rows(self) -> list[tuple[str, str]]:
        return [
            ("FLOPs", format_quantity(self.flops, "FLOP")),
            ("bytes moved", format_quantity(self.bytes, "B")),
            ("forward time", format_quantity(self.forward_time_s, "s")),
            ("backward time", format_quantity(self.backward_time_s, "s")),
            ("total time", format_quantity(self.total_time_s, "s")),
        ]

    def __str__(self) -> str:
        text = (
            super().__str__()
            + "\nby class:\n"
            + self._class_table()
            + "\n"
            + describe_passes(self.ops)
        )
        if self.findings:
            text += "\nfindings:\n" + "\n".join(f"  {f}" for f in self.findings)
        if self.unpriced_ops:
            text += "\n" + self._unpriced_line()
        return text

    def _unpriced_line(self) -> str:
        items = ", ".join(f"{k} x{v}" for k, v in sorted(self.unpriced_ops.items()))
        return f"not priced (no model for these operations): {items}"

    def _repr_html_(self) -> str:
        out = super()._repr_html_()
        out += f"<pre>{html.escape(self._class_table())}</pre>"
        out += f"<pre>{html.escape(describe_passes(self.ops))}</pre>"
        if self.unpriced_ops:
            out += f"<p class='dlperf-unpriced'>{html.escape(self._unpriced_line())}</p>"
        if self.findings:
            items = "".join(f"<li>{html.escape(str(f))}</li>" for f in self.findings)
            out += f"<ul class='dlperf-findings'>{items}</ul>"
        return out


def by_class(ops: Iterable[PassResult]) -> dict[str, dict[str, float]]:
    """FLOPs and time per operation class, and each class's share of the totals."""
    ops = list(ops)
    total_flops = sum(p.flops for p in ops) or 1.0
    total_time = sum(p.predicted_time_s for p in ops) or 1.0
    out = {}
    for cls in OP_CLASSES:
        flops = sum(p.flops for p in ops if p.op_class == cls)
        time = sum(p.predicted_time_s for p in ops if p.op_class == cls)
        out[cls] = {
            "flops": float(flops),
            "time_s": float(time),
            "flops_share": float(flops / total_flops),
            "runtime_share": float(time / total_time),
        }
    return out


def network(
    name: str,
    layers: Sequence[LayerSpec],
    *,
    dtype: str | Dtype = "fp16",
    gpu: str | Gpu = "A100",
    training: bool = True,
    findings: Sequence[Finding] = (),
) -> NetworkResult:
    """Model a list of layers and gather their passes into one :class:`NetworkResult`."""
    if not isinstance(name, str):
        raise InvalidParameter(f"'name' must be text (got {describe(name)})")
    if not isinstance(layers, Sequence) or not all(isinstance(s, LayerSpec) for s in layers):
        raise InvalidParameter(f"'layers' must be a list of LayerSpec (got {describe(layers)})")
    d = _dtype(dtype)
    g = _gpu(gpu)
    g.peak_flops(d)
    training = check_training(training)
    ops: list[PassResult] = []
    for spec in layers:
        ops += _spec_passes(spec, d, g, training)
    return _assemble(name, ops, d, g, findings)


def _spec_passes(spec: LayerSpec, d: Dtype, g: Gpu, training: bool) -> list[PassResult]:
    _, opts = resolve_options(spec.kind, {**spec.options, "training": training})
    passes = build_passes(spec.kind, opts, d, g)
    single = len({p.op for p in passes}) == 1  # one operation: it takes the layer's name
    out = []
    for p in passes:
        p = p.with_name(spec.name if single else f"{spec.name}.{p.op}")
        out.append(p.scaled(spec.repeat) if spec.repeat != 1 else p)
    return out


def _assemble(
    name: str, ops: Sequence[PassResult], d: Dtype, g: Gpu, findings: Sequence[Finding] = ()
) -> NetworkResult:
    return NetworkResult(
        name=name,
        dtype=d.name,
        gpu=g.name,
        ops=tuple(ops),
        by_class=by_class(ops),
        flops=float(sum(p.flops for p in ops)),
        bytes=float(sum(p.bytes for p in ops)),
        forward_time_s=float(sum(p.predicted_time_s for p in ops if p.pass_ == "forward")),
        backward_time_s=float(sum(p.predicted_time_s for p in ops if p.pass_ != "forward")),
        total_time_s=float(sum(p.predicted_time_s for p in ops)),
        findings=tuple(findings),
    )


# -- transformers ------------------------------------------------------------------------

# The dtypes a transformer step can run in, with the kernel list's name for each
# (core.workload.DTYPE_PRECISIONS: FP8 GEMMs in E4M3, FP4 in E2M1).
TRANSFORMER_DTYPES = DTYPE_PRECISIONS

# Labels of the kernel list's kernels in the class breakdown (the slides' operation names);
# the residual adds and output dropouts of the two halves of a layer share a kernel name
# and are told apart by the half they run in.
_OP_LABELS = {
    "attn_norm": "block.attention.layernorm",
    "qkv_proj": "block.qkv_projection",
    "scores Q K^T": "block.scores_qk",
    "softmax": "block.attention_softmax",
    "attention dropout": "block.attention.dropout",
    "context P V": "block.context_pv",
    "o_proj": "block.output_projection",
    "mlp_norm": "block.ffn.layernorm",
    "up_proj": "block.ffn.up",
    "gelu": "block.ffn.gelu",
    "down_proj": "block.ffn.down",
    "final_norm": "head.layernorm",
    "lm_head": "head.projection",
    "cross-entropy": "head.cross_entropy",
}
_HALF_LABELS = {
    ("attention", "hidden dropout"): "block.attention.output_dropout",
    ("attention", "residual add"): "block.attention.residual",
    ("ffn", "hidden dropout"): "block.ffn.dropout",
    ("ffn", "residual add"): "block.ffn.residual",
}
_SUFFIXES = ((" dgrad", "dgrad"), (" wgrad", "wgrad"), (" backward", "backward"))


def transformer(
    layers: int = 24,
    hidden: int = 1024,
    heads: int = 16,
    seq_len: int = 512,
    batch: int = 8,
    vocab: int = 30522,
    ffn_mult: int = 4,
    *,
    dtype: str | Dtype = "fp16",
    gpu: str | Gpu = "A100",
    backward: bool = True,
) -> NetworkResult:
    """A GPT/BERT-style stack trained in eager PyTorch: the class breakdown of the kernels
    its training step runs (the model's prediction, kernel durations summed).

    A view of the step's kernel list (:func:`.workload.workload`, priced by
    :func:`.workload.price` in the 'kernel' timing context): per layer a LayerNorm, the
    Q/K/V projection, eager attention (Q K^T, softmax, dropout, P V: the scores go through
    DRAM), the output projection, dropout and the residual add; a LayerNorm, the FFN
    (``ffn_mult`` x hidden, GELU), dropout and the residual add; then a final LayerNorm,
    the vocabulary projection and the cross-entropy loss. Mixed precision ('fp16', 'bf16')
    keeps FP32 weights and casts them for each GEMM, as ``torch.autocast`` does. The
    optimizer's update is left out, as the slides' measured split of the forward and
    backward passes leaves it out. ``backward=False``: the forward pass alone (no dropout,
    loss or weight casts: a model stored in ``dtype``), every position through the
    vocabulary projection.

    >>> r = transformer(layers=2, hidden=256, heads=4, seq_len=128, batch=4, vocab=1000)
    >>> r.by_class["tensor_contraction"]["flops_share"] > 0.95
    True
    """
    # the kernel list's limits (core.workload), checked here under this function's names
    layers = _size("layers", layers, 1 << 20)
    hidden = _size("hidden", hidden, 1 << 20)
    heads = _size("heads", heads, 1 << 20)
    seq_len = _size("seq_len", seq_len, 1 << 22)
    batch = _size("batch", batch, 1 << 20)
    vocab = _size("vocab", vocab, 1 << 22)
    ffn_mult = _size("ffn_mult", ffn_mult, 1 << 20)
    if ffn_mult * hidden > 1 << 20:
        raise InvalidParameter(
            f"'ffn_mult' x hidden must be at most {1 << 20:,} (got {ffn_mult * hidden:,})"
        )
    if batch * seq_len > _MAX_TOKENS:
        raise InvalidParameter(
            f"'batch' x 'seq_len' must be at most {_MAX_TOKENS:,} tokens (got {batch * seq_len:,})"
        )
    if not isinstance(backward, bool):
        raise InvalidParameter(f"'backward' must be True or False (got {describe(backward)})")
    if hidden % heads:
        raise InvalidParameter(f"'heads' must divide hidden ({hidden}) (got {heads})")
    d = _dtype(dtype)
    if d.name not in TRANSFORMER_DTYPES:
        raise InvalidParameter(
            f"'dtype' must be one of {', '.join(TRANSFORMER_DTYPES)} for a transformer "
            f"(got {describe(d.name)})"
        )
    g = _gpu(gpu)
    g.peak_flops(d)
    spec = LlmSpec(
        name="transformer",
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        head_dim=hidden // heads,
        ffn=ffn_mult * hidden,
        vocab=vocab,
        gated_mlp=False,
        tied_embeddings=True,
        rotary=False,
    )
    w = workload(
        spec,
        phase="training",
        batch=batch,
        seq=seq_len,
        precision=TRANSFORMER_DTYPES[d.name],
        attention="eager",
        causal=False,
        dropout=backward,
    )
    priced = price(w, g, timing="kernel", isolated=True)
    ops = _kernel_passes(priced, g, backward)
    label = (
        f"transformer: {layers} layers, hidden {hidden}, {heads} heads, seq {seq_len}, "
        f"batch {batch}, vocab {vocab}"
    )
    return _assemble(label, ops, d, g)


def _size(name: str, value: Any, cap: int) -> int:
    """A positive integer (the usual sentence when it is not) of at most ``cap``."""
    check_int(name, value, allow_array=False)
    return int(check_int(name, value, allow_array=False, maximum=cap))


def _kernel_passes(priced: WorkloadTime, g: Gpu, backward: bool) -> list[PassResult]:
    """The forward and backward kernels of a priced step as passes of named operations
    (times and FLOPs totals over the kernel's count, as :class:`PassResult` holds them)."""
    out: list[PassResult] = []
    half = "attention"
    kernels = priced.workload.kernels
    limiters = gemm_limiters(priced.workload, g)
    for i, k in enumerate(kernels):
        if k.pass_ not in ("forward", "backward", "recompute"):
            continue
        if not backward and (
            k.pass_ != "forward" or k.path == "loss" or k.name.endswith("weight cast")
        ):
            continue
        base, pass_ = k.name, k.pass_
        for suffix, name in _SUFFIXES:
            if base.endswith(suffix):
                base, pass_ = base.removesuffix(suffix), name
                break
        cast = base.endswith(" weight cast")
        base = base.removesuffix(" weight cast")
        if base in ("attn_norm", "mlp_norm"):
            half = "attention" if base == "attn_norm" else "ffn"
        op = _HALF_LABELS.get((half, base)) or _OP_LABELS.get(base) or f"{k.path}.{base}"
        op = f"{op}.weight_cast" if cast else op
        out.append(kernel_pass(priced, i, g, op, pass_, limiters.get(i)))
    return out


# -- convolutional networks ----------------------------------------------------------------

CNN_KINDS = (
    "conv2d",
    "batchnorm",
    "layernorm",
    "relu",
    "gelu",
    "sigmoid",
    "tanh",
    "maxpool",
    "avgpool",
    "se",
    "linear",
    "residual",
    "upsample",
    "pixel_shuffle",
)


def cnn(
    layers: Sequence[dict[str, Any] | tuple[str, dict[str, Any]] | str],
    *,
    batch: int = 32,
    channels: int = 3,
    height: int = 224,
    width: int = 224,
    dtype: str | Dtype = "fp16",
    gpu: str | Gpu = "A100",
    training: bool = True,
    input_grad: bool = True,
) -> NetworkResult:
    """A small CNN from a list of layers, with the tensor shape tracked from the input.

    Each layer is ``{"kind": ..., **options}``, ``(kind, options)`` or just ``kind``:
    ``conv2d`` (out_channels, kernel_size=3, stride=1, padding=kernel_size // 2, groups=1,
    layout='nhwc'; ``groups='depthwise'`` means one group per channel), ``batchnorm``,
    ``layernorm``, activations, ``maxpool``/``avgpool`` (kernel_size=2, stride, padding),
    ``se`` (squeeze-and-excitation, reduction=4), ``residual``, ``linear`` (outputs;
    flattens), ``upsample`` (factor, nearest) and ``pixel_shuffle`` (factor). Findings are
    the slides' recommendations for hierarchical models.

    ``input_grad=False`` says the first layer reads the network's data (images), whose
    gradient nobody needs: that convolution then has no activation-gradient pass. Keep the
    default (True) to model a block taken from inside a network.

    >>> r = cnn([{"kind": "conv2d", "out_channels": 64}, "batchnorm", "relu"], batch=8,
    ...         height=32, width=32)
    >>> [op.op for op in r.ops if op.pass_ == "forward"]
    ['0.conv2d', '1.batchnorm', '2.relu']
    """
    from .checklists import hierarchical_findings

    if isinstance(layers, (str, bytes, dict)) or not isinstance(layers, Sequence) or not layers:
        raise InvalidParameter(
            f"'layers' must be a non-empty list of layers (got {describe(layers)})"
        )
    n = check_int("batch", batch, allow_array=False)
    c = check_int("channels", channels, allow_array=False)
    h = check_int("height", height, allow_array=False)
    w = check_int("width", width, allow_array=False)
    training = check_training(training)
    if not isinstance(input_grad, bool):
        raise InvalidParameter(f"'input_grad' must be True or False (got {describe(input_grad)})")
    d = _dtype(dtype)
    g = _gpu(gpu)
    ops: list[PassResult] = []
    trace: list[tuple[str, str, dict[str, Any], list[PassResult]]] = []
    flat: int | None = None  # features after a linear layer
    b = d.bytes_per_element
    for i, item in enumerate(layers):
        kind, opts = _cnn_item(item)
        name = f"{i}.{kind}"
        shape = (n, c, h, w)
        new: list[LayerSpec] = []
        if kind == "conv2d":
            if "out_channels" not in opts:
                raise InvalidParameter(f"'out_channels' must be given for layer {name} (got none)")
            k = opts.get("kernel_size", 3)
            groups = opts.get("groups", 1)
            if groups == "depthwise":
                groups = c
            o = {
                "batch": n,
                # a network's data needs no gradient: see the input_grad argument
                **({"input_grad": False} if i == 0 and not input_grad else {}),
                "in_channels": c,
                "height": h,
                "width": w,
                "kernel_size": k,
                "padding": opts.get("padding", (k if isinstance(k, int) else k[0]) // 2),
                **{kk: v for kk, v in opts.items() if kk not in ("kernel_size", "padding")},
                "groups": groups,
            }
            _, full = resolve_options("conv2d", {**o, "training": training})
            new.append(LayerSpec(name, "conv2d", o))
            (r, s), (sh, sw), (ph, pw), (dh, dw) = (
                full["kernel_size"],
                full["stride"],
                full["padding"],
                full["dilation"],
            )
            c = full["out_channels"]
            h = conv_output_size(h, r, sh, ph, dh)
            w = conv_output_size(w, s, sw, pw, dw)
        elif kind in ("batchnorm", "layernorm", "relu", "gelu", "sigmoid", "tanh", "residual"):
            key = {"shape": shape} if flat is None else {"elements": n * flat}
            new.append(LayerSpec(name, kind, {**key, **opts}))
        elif kind in ("maxpool", "avgpool"):
            o = {"shape": shape, "kernel_size": opts.get("kernel_size", 2), **opts}
            _, full = resolve_options(kind, {**o, "training": training})
            new.append(LayerSpec(name, kind, o))
            (kh, kw), (ph, pw) = full["kernel_size"], full["padding"]
            sh, sw = full["stride"] or (kh, kw)
            h, w = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
        elif kind == "se":
            r_ = opts.get("reduction", 4)
            squeezed = max(1, c // r_)
            new += [
                LayerSpec(f"{name}.pool", "avgpool", {"shape": shape, "kernel_size": (h, w)}),
                LayerSpec(f"{name}.fc1", "linear", {"batch": n, "inputs": c, "outputs": squeezed}),
                LayerSpec(f"{name}.relu", "relu", {"elements": n * squeezed}),
                LayerSpec(f"{name}.fc2", "linear", {"batch": n, "inputs": squeezed, "outputs": c}),
                LayerSpec(f"{name}.sigmoid", "sigmoid", {"elements": n * c}),
                LayerSpec(f"{name}.excite", "scale", {"shape": shape}),
            ]
        elif kind == "linear":
            inputs = flat if flat is not None else c * h * w
            outputs = opts.get("outputs")
            if outputs is None:
                raise InvalidParameter(f"'outputs' must be given for layer {name} (got none)")
            new.append(
                LayerSpec(name, "linear", {"batch": n, "inputs": inputs, "outputs": outputs})
            )
            flat = check_int("outputs", outputs, allow_array=False)
        elif kind in ("upsample", "pixel_shuffle"):
            factor = check_int("factor", opts.get("factor", 2), allow_array=False)
            if kind == "pixel_shuffle" and c % (factor * factor):
                raise InvalidParameter(
                    f"'factor' squared must divide the channels ({c}) of {name} (got {factor})"
                )
            elements = n * c * h * w
            # nearest upsampling reads the input once and writes factor^2 times more;
            # pixel shuffle is a pure rearrangement (read once, write once).
            written = elements * factor * factor if kind == "upsample" else elements
            fwd = memory_pass(name, "forward", "elementwise", 0.0, (elements + written) * b, g, d)
            passes = [fwd]
            if training:
                passes.append(
                    memory_pass(
                        name,
                        "backward",
                        "elementwise",
                        float(written),
                        (elements + written) * b,
                        g,
                        d,
                    )
                )
            ops += passes
            trace.append((name, kind, {"height": h, "factor": factor}, passes))
            if kind == "upsample":
                h, w = h * factor, w * factor
            else:
                c, h, w = c // (factor * factor), h * factor, w * factor
            continue
        else:
            raise InvalidParameter(
                f"'kind' must be one of {', '.join(CNN_KINDS)} (got {describe(kind)})"
            )
        built: list[PassResult] = []
        for spec in new:
            built += _spec_passes(spec, d, g, training)
        ops += built
        _, full_opts = resolve_options(new[0].kind, {**new[0].options, "training": training})
        trace.append((name, kind, full_opts, built))
    label = f"cnn: {len(trace)} layers, input {n}x{channels}x{height}x{width}"
    return _assemble(label, ops, d, g, hierarchical_findings(trace))


def _cnn_item(item: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(item, str):
        kind, opts = item, {}
    elif isinstance(item, dict):
        opts = dict(item)
        kind = opts.pop("kind", None)
    elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], dict):
        kind, opts = item[0], dict(item[1])
    else:
        raise InvalidParameter(
            f"'layers' items must be a kind, a (kind, options) pair or a dict with 'kind' "
            f"(got {describe(item)})"
        )
    if kind not in CNN_KINDS:
        raise InvalidParameter(
            f"'kind' must be one of {', '.join(CNN_KINDS)} (got {describe(kind)})"
        )
    return kind, opts
