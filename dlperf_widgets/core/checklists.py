"""The guides' checklists as findings: what to change in a layer, and what it would save.

Sources: NVIDIA "Get Started With Deep Learning Performance" (2.1: tuning only helps a
math-bound operation; 2.2: multiples of 4 / 8 / 16 for TF32 / FP16 / INT8, the relevant
parameters per layer type; 2.3: sizes divisible by 64 to 256; chapter 3, the checklists);
NVIDIA slides "NN Performance optimization" ("Convolutions": NHWC, C = 4 first-layer
kernels; "Linear Layers": batch and neuron counts above 128; "Transformers": vocabulary a
multiple of 8, padding the batch for the weight gradient; "Maximizing Tensor Core usage":
pad sequence lengths, concatenate Q, K and V; "Recommendations for hierarchical models");
A. Minnaar, "Deep Learning GPU Performance Analysis: Optimal Parameter Checklist" (a first
layer with C = 3 padded to 4 with stride 2); NVIDIA "Optimizing Memory-Limited Layers"
(no parameter tweaks help; fewer passes, e.g. persistent batch normalization).

Every finding names one layer parameter; where the fix is a change of that parameter, the
layer is modelled again with it and the finding carries the predicted time (all passes)
before and after.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .alignment import Finding, alignment_findings, next_multiple
from .dtypes import Dtype
from .gpus import Gpu
from .layers import LAYER_KINDS, build_passes, register_findings, resolve_options, total_time
from .memlimited import PassResult

__all__ = [
    "LINEAR_MIN_SIZE",
    "convolution_checklist",
    "fully_connected_checklist",
    "hierarchical_findings",
    "layer_findings",
    "memory_limited_checklist",
    "recurrent_checklist",
    "transformer_checklist",
]

# "choose batch sizes and neuron counts greater than 128 to avoid being limited by memory
# bandwidth" (slides, "Linear Layers"; A100, similar for V100).
LINEAR_MIN_SIZE = 128


def _time(kind: str, opts: dict[str, Any], d: Dtype, g: Gpu, **changes: Any) -> float | None:
    try:
        _, fixed = resolve_options(kind, {**opts, **changes})
        return total_time(build_passes(kind, fixed, d, g))
    except ValueError:
        return None


def _timed(
    f: Finding, kind: str, opts: dict[str, Any], d: Dtype, g: Gpu, before: float, **changes: Any
) -> Finding:
    """Attach before/after times: the layer re-modelled with ``changes`` (default: the
    finding's own parameter set to its suggested value)."""
    if not changes:
        if f.suggested_value is None or f.parameter not in opts:
            return f
        changes = {f.parameter: f.suggested_value}
    after = _time(kind, opts, d, g, **changes)
    severity, message = f.severity, f.message
    if after is not None and after >= before and severity == "warning" and f.fix.startswith("pad"):
        # The size advice is general; when this layer would not gain, say so.
        severity = "info"
        message += " For this layer the model predicts no gain from the change."
    return Finding(severity, f.parameter, message, f.fix, f.value, f.suggested_value, before, after)


def _forward(passes: Sequence[PassResult], op: str | None = None) -> PassResult:
    for p in passes:
        if p.pass_ == "forward" and (op is None or p.op == op):
            return p
    return passes[0]


def _not_math_bound(p: PassResult, what: str, parameter: str, fix: str) -> Finding:
    """The guide's rule: tuning helps only math-bound operations; say so, with the numbers."""
    if p.limiter == "latency":
        why = "too small to fill the GPU (fewer parallel tiles than SMs)"
    else:
        why = (
            f"memory-bound: its arithmetic intensity {p.arithmetic_intensity:.3g} FLOP/B is "
            f"below the GPU's {p.ops_per_byte:.3g} FLOP/B"
        )
    return Finding(
        "info",
        parameter,
        f"The {what} is {why}, so alignment and size tweaks help little until it is math-bound.",
        fix,
    )


def _align(
    kind: str,
    dims: dict[str, int],
    opts: dict[str, Any],
    d: Dtype,
    g: Gpu,
    before: float,
    memory_bound: bool,
    note: dict[str, str] | None = None,
) -> list[Finding]:
    out = []
    found = alignment_findings(dims, d, g, memory_bound=memory_bound)
    # A GEMM runs at the aligned rate only when all its dimensions are aligned, so the
    # padding fixes are timed together.
    pads = {f.parameter: f.suggested_value for f in found if f.fix.startswith("pad ")}
    for f in found:
        if note and f.parameter in note:
            f = Finding(
                f.severity,
                f.parameter,
                f"{f.message} {note[f.parameter]}",
                f.fix,
                f.value,
                f.suggested_value,
            )
        if f.fix.startswith("pad ") and len(pads) > 1:
            f = Finding(
                f.severity,
                f.parameter,
                f"{f.message} (Time after: with {', '.join(sorted(pads))} padded.)",
                f.fix,
                f.value,
                f.suggested_value,
            )
            out.append(_timed(f, kind, opts, d, g, before, **pads))
        else:
            out.append(_timed(f, kind, opts, d, g, before))
    return out


# -- the checklists ------------------------------------------------------------------------


def fully_connected_checklist(
    opts: dict[str, Any], d: Dtype, g: Gpu, passes: Sequence[PassResult], kind: str = "linear"
) -> list[Finding]:
    """Batch, inputs and outputs aligned (4/8/16 by dtype) and large enough to be math-bound.

    ``kind='projection'`` reads the options of a vocabulary projection (hidden -> vocab).
    """
    before = total_time(passes)
    fwd = _forward(passes)
    memory_bound = fwd.limiter != "math"
    if kind == "projection":
        dims = {"vocab": opts["vocab"], "hidden": opts["hidden"]}
        note = {"vocab": 'Pad the vocabulary with unused tokens (slides, "Transformers").'}
    else:
        dims = {"outputs": opts["outputs"], "inputs": opts["inputs"]}
        note = {}
    tokens_param = "batch" if opts["seq_len"] == 1 else "seq_len"
    dims[tokens_param] = opts[tokens_param]
    note[tokens_param] = (
        f"The {'batch' if tokens_param == 'batch' else 'token count (batch x seq_len)'} is N "
        "of the forward and activation-gradient GEMMs and K of the weight-gradient GEMM "
        '(slides, "Transformers": pad the batch for the weight gradient).'
    )
    if (
        tokens_param == "seq_len"
        and (opts["batch"] * opts["seq_len"]) % d.tensor_core_multiple == 0
    ):
        dims.pop("seq_len")  # the product is aligned even if seq_len alone is not
    found = _align(kind, dims, opts, d, g, before, memory_bound, note)
    if memory_bound:
        small = [
            k
            for k in ("batch", "inputs", "outputs", "hidden")
            if k in opts and opts[k] < LINEAR_MIN_SIZE
        ]
        what = ", ".join(small) if small else "the batch"
        found.append(
            _not_math_bound(
                fwd,
                "forward GEMM",
                "batch",
                f'make {what} larger than {LINEAR_MIN_SIZE} (slides, "Linear Layers"), e.g. by '
                "batching more samples",
            )
        )
    return found


def convolution_checklist(
    opts: dict[str, Any], d: Dtype, g: Gpu, passes: Sequence[PassResult]
) -> list[Finding]:
    """Channels multiple of 8 (FP16) / 4 (TF32); C = 3 -> 4 in a first layer; NHWC."""
    before = total_time(passes)
    fwd = _forward(passes)
    memory_bound = fwd.limiter != "math"
    c, k, groups = opts["in_channels"], opts["out_channels"], opts["groups"]
    found: list[Finding] = []
    depthwise = groups > 1 and c // groups == 1
    if depthwise:
        found.append(
            Finding(
                "warning" if memory_bound else "info",
                "groups",
                f"A depthwise convolution (groups = {groups}) does only "
                f"{fwd.arithmetic_intensity:.3g} FLOP per byte moved and is memory-limited"
                + (" here." if memory_bound else "; in a math-limited (later) layer that is fine."),
                "in memory-limited, usually early, layers use a dense convolution instead "
                '(slides, "Recommendations for hierarchical models"; e.g. fused MBConv)',
                groups,
            )
        )
    elif groups == 1:
        two_byte = d.bytes_per_element == 2 and g.supports(d) and g.unit_for(d) == "tensor"
        dims = {"out_channels": k}
        if c < 4 and two_byte:
            f = Finding(
                "warning",
                "in_channels",
                f"in_channels = {c}: a first layer this narrow cannot use the Tensor Core "
                "kernels; cuDNN has specialized kernels for C = 4 in NHWC (slides, Figure 8; "
                "Minnaar: pad to 4 with stride 2).",
                f"pad the input from {c} to 4 channels (a zero channel) and use channels_last",
                c,
                4,
            )
            found.append(_timed(f, "conv2d", opts, d, g, before, in_channels=4, layout="nhwc"))
        elif not (c == 4 and two_byte):
            dims = {"in_channels": c, **dims}
        found += _align("conv2d", dims, opts, d, g, before, memory_bound)
    else:
        cg, kg = c // groups, k // groups
        mult = d.tensor_core_multiple
        for name, total, per in (("in_channels", c, cg), ("out_channels", k, kg)):
            if per % mult:
                fixed = next_multiple(per, mult) * groups
                f = Finding(
                    "info" if memory_bound else "warning",
                    name,
                    f"{name} / groups = {per} is not a multiple of {mult} ({d.name}): each "
                    "group's GEMM is misaligned for Tensor Cores.",
                    f"pad {name} from {total} to {fixed}",
                    total,
                    fixed,
                )
                found.append(_timed(f, "conv2d", opts, d, g, before))
    if opts["layout"] != "nhwc":
        f = Finding(
            "warning",
            "layout",
            "NCHW data: Tensor Core convolutions work on NHWC, so every pass transposes its "
            'input and output (slides, "Convolutions", Figure 2).',
            "use channels_last: model = model.to(memory_format=torch.channels_last) and "
            "x = x.to(memory_format=torch.channels_last)",
        )
        after = _time("conv2d", opts, d, g, layout="nhwc")
        found.append(Finding(f.severity, f.parameter, f.message, f.fix, None, None, before, after))
    if memory_bound and not depthwise:
        found.append(
            _not_math_bound(
                fwd,
                "forward convolution",
                "batch",
                "larger batch, channels or images raise the GEMM sizes; otherwise accept it and "
                "fuse what follows (bias, BN, ReLU)",
            )
        )
    return found


def recurrent_checklist(
    opts: dict[str, Any], d: Dtype, g: Gpu, passes: Sequence[PassResult], kind: str = "lstm"
) -> list[Finding]:
    """Minibatch and hidden sizes aligned; the per-step recurrent GEMM is usually memory-bound."""
    before = total_time(passes)
    rec = _forward(passes, "recurrent_gates")
    memory_bound = rec.limiter != "math"
    dims = {
        "batch": opts["batch"],
        "hidden_size": opts["hidden_size"],
        "input_size": opts["input_size"],
    }
    found = _align(kind, dims, opts, d, g, before, memory_bound)
    if memory_bound:
        found.append(
            _not_math_bound(
                rec,
                "recurrent GEMM of one time step (N = minibatch)",
                "batch",
                "a larger minibatch raises the recurrent GEMM's intensity; the hidden size sets "
                "its M and K",
            )
        )
    return found


def _head_candidates(hidden: int, heads: int, mult: int) -> int | None:
    options = [h for h in range(1, hidden + 1) if hidden % h == 0 and (hidden // h) % mult == 0]
    return min(options, key=lambda h: (abs(h - heads), h)) if options else None


def transformer_checklist(
    kind: str, opts: dict[str, Any], d: Dtype, g: Gpu, passes: Sequence[PassResult]
) -> list[Finding]:
    """Attention, embedding and vocabulary projection: vocab, sequence, heads, QKV."""
    before = total_time(passes)
    mult = d.tensor_core_multiple
    if kind == "projection":
        return fully_connected_checklist(opts, d, g, passes, kind="projection")
    found: list[Finding] = []
    if kind == "embedding":
        vocab = opts["vocab"]
        if vocab % mult:
            found.append(
                Finding(
                    "info",
                    "vocab",
                    f"vocab = {vocab} is not a multiple of {mult}: the lookup does not care, but "
                    "the vocabulary projection that usually shares this matrix does.",
                    f"pad the vocabulary from {vocab} to {next_multiple(vocab, mult)}",
                    vocab,
                    next_multiple(vocab, mult),
                )
            )
        return found
    # attention
    seq, hid, heads = opts["seq_len"], opts["hidden"], opts["heads"]
    fwd = _forward(passes)
    memory_bound = fwd.limiter != "math"
    if seq % mult:
        f = Finding(
            "warning",
            "seq_len",
            f"seq_len = {seq} is not a multiple of {mult} ({d.name}): the score and context "
            "GEMMs are misaligned, and so are the projections unless batch x seq_len is.",
            f"pad sequences from {seq} to {next_multiple(seq, mult)} tokens (mask the padding)",
            seq,
            next_multiple(seq, mult),
        )
        found.append(_timed(f, kind, opts, d, g, before))
    head = hid // heads
    if head % mult:
        better = _head_candidates(hid, heads, mult)
        f = Finding(
            "warning",
            "heads",
            f"head size hidden / heads = {head} is not a multiple of {mult}: K of Q K^T and "
            "N of the context GEMM are misaligned.",
            f"choose heads so that hidden / heads is a multiple of {mult}"
            + (f" (e.g. {better} heads)" if better else ""),
            heads,
            better,
        )
        found.append(_timed(f, kind, opts, d, g, before))
    found += _align(kind, {"hidden": hid}, opts, d, g, before, memory_bound)
    if opts["qkv"] == "separate":
        after = _time(kind, opts, d, g, qkv="concatenated")
        found.append(
            Finding(
                "warning",
                "qkv",
                "Q, K and V are three GEMMs of hidden outputs each; one GEMM of 3 x hidden "
                'outputs makes larger tiles and fewer launches (slides, "Maximizing Tensor '
                'Core usage").',
                "concatenate the three weight matrices into one projection (qkv='concatenated')",
                None,
                None,
                before,
                after,
            )
        )
    return found


def memory_limited_checklist(
    kind: str, opts: dict[str, Any], d: Dtype, g: Gpu, passes: Sequence[PassResult]
) -> list[Finding]:
    """No parameter tweak helps; fewer passes (fusion, persistent kernels) do."""
    before = total_time(passes)
    found = [
        Finding(
            "info",
            "layer",
            f"{kind} is memory-limited: its time is the bytes it moves over the bandwidth, and "
            "no choice of sizes changes that (memory-limited-layers guide, checklist).",
            "reduce passes over memory: fuse it with its neighbours (bias and ReLU into the "
            "GEMM or convolution epilogue, BN + ReLU), or remove it",
        )
    ]
    if opts.get("persistent") is False and kind == "batchnorm":
        after = _time(kind, opts, d, g, persistent=True)
        found.append(
            Finding(
                "warning",
                "persistent",
                "Non-persistent batch normalization reads its input once for the statistics and "
                "again to normalize it.",
                "use a persistent (single-pass) implementation; cuDNN picks one when the input "
                "is small enough to stay on chip",
                None,
                None,
                before,
                after,
            )
        )
    if any(p.limiter == "latency" for p in passes):
        found.append(
            Finding(
                "info",
                "shape",
                "The tensor is too small to saturate memory bandwidth: the kernel's fixed "
                "start-up cost outlasts moving its bytes, so its time hardly depends on its "
                "size (core.memlimited.saturation_bytes; the cost per architecture is in "
                "core/data/achievable.csv).",
                "fuse it with other work, or process more data per launch",
            )
        )
    return found


def layer_findings(
    kind: str, opts: dict[str, Any], d: Dtype, g: Gpu, passes: Sequence[PassResult]
) -> list[Finding]:
    """The checklist that applies to ``kind``, as findings."""
    if kind == "linear":
        return fully_connected_checklist(opts, d, g, passes)
    if kind == "conv2d":
        return convolution_checklist(opts, d, g, passes)
    if kind in ("lstm", "gru"):
        return recurrent_checklist(opts, d, g, passes, kind)
    if kind in ("attention", "embedding", "projection"):
        return transformer_checklist(kind, opts, d, g, passes)
    if LAYER_KINDS[kind].category == "memory":
        return memory_limited_checklist(kind, opts, d, g, passes)
    return []


register_findings(layer_findings)


# -- whole-model advice ------------------------------------------------------------------


def hierarchical_findings(
    layers: Sequence[tuple[str, str, dict[str, Any], Sequence[PassResult]]],
) -> list[Finding]:
    """The slides' "Recommendations for hierarchical models" over a CNN's layer list.

    ``layers`` holds (name, kind, options, passes) in network order. A layer counts as
    memory-limited when its forward pass is not math-bound.
    """
    found: list[Finding] = []
    previous: tuple[str, str, dict[str, Any], Sequence[PassResult]] | None = None
    conv_before: tuple[str, str, dict[str, Any], Sequence[PassResult]] | None = None
    for name, kind, opts, passes in layers:
        fwd = _forward(passes) if passes else None
        limited = fwd is not None and fwd.limiter != "math"
        if kind == "conv2d":
            conv_before = (name, kind, opts, passes)
            if opts["groups"] > 1 and opts["in_channels"] // opts["groups"] == 1 and limited:
                found.append(
                    Finding(
                        "warning",
                        name,
                        "Depthwise convolution in a memory-limited stage.",
                        "use a dense convolution here; keep depthwise for later, math-limited "
                        "stages (slides, hierarchical models; EfficientNetV2's fused MBConv)",
                    )
                )
        conv_limited = conv_before is not None and _forward(conv_before[3]).limiter != "math"
        if kind == "se" and conv_limited:
            found.append(
                Finding(
                    "warning",
                    name,
                    "Squeeze-and-excitation adds global pooling and small memory-bound layers "
                    "to a stage that is already memory-limited.",
                    "drop SE blocks in early stages; they are fine in math-limited ones",
                )
            )
        if kind == "layernorm" and conv_limited:
            found.append(
                Finding(
                    "warning",
                    name,
                    "LayerNorm in a memory-limited convolutional stage cannot be folded into "
                    "the convolution at inference, unlike BatchNorm.",
                    "use BatchNorm here (foldable); LayerNorm hurts less in math-limited stages",
                )
            )
        if kind == "batchnorm" and previous is not None and previous[1] == "conv2d":
            saved = sum(p.predicted_time_s for p in passes if p.pass_ == "forward")
            found.append(
                Finding(
                    "info",
                    name,
                    f"BatchNorm after {previous[0]} can be folded into the convolution's weights "
                    "for inference (TensorRT does it), and the convolution needs no bias.",
                    "fold BN into the convolution at export; drop the convolution's bias",
                    None,
                    None,
                    saved,
                    0.0,
                )
            )
        if (
            kind in ("gelu", "sigmoid", "tanh")
            and previous is not None
            and (previous[1] in ("conv2d", "batchnorm"))
        ):
            found.append(
                Finding(
                    "info",
                    name,
                    f"{kind} after {previous[0]}: ReLU is the activation that fuses with "
                    "convolution and BatchNorm into one kernel.",
                    "prefer ReLU after conv-BN in memory-limited stages",
                )
            )
        if kind == "upsample" and opts.get("height", 0) * opts.get("factor", 1) >= 256:
            found.append(
                Finding(
                    "info",
                    name,
                    "Upsampling to a large resolution makes every later layer work on a big "
                    "tensor.",
                    "compute at low resolution with factor^2 more channels and finish with "
                    "torch.nn.PixelShuffle(upscale_factor)",
                )
            )
        previous = (name, kind, opts, passes)
    return found
