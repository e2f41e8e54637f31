"""Analyse a real PyTorch model: run it once on an example input and model every layer.

Forward hooks record, in execution order, each supported module and the shapes it saw;
each becomes a :class:`~dlperf_widgets.core.network.LayerSpec` and the analytical core
models its forward and backward passes, so a learner gets the same table and class split
as :func:`dlperf_widgets.core.network.transformer` for their own network.

Supported modules: Linear, Conv2d, LSTM, GRU, MultiheadAttention (self-attention),
BatchNorm1d/2d/3d, LayerNorm, ReLU (and its variants), GELU, Sigmoid, Tanh, Softmax,
Dropout, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d and Embedding. Other modules are
looked into (their children are hooked); operations called as plain functions inside a
``forward`` are not seen.
"""

from __future__ import annotations

import math
from typing import Any

from .._optional import require
from ..core.errors import InvalidParameter
from ..core.network import LayerSpec, NetworkResult, network

__all__ = ["SUPPORTED_MODULES", "analyze_module", "module_layers"]

# torch class name -> core layer kind (activations map to the op with the same cost class)
SUPPORTED_MODULES: dict[str, str] = {
    "Linear": "linear",
    "Conv2d": "conv2d",
    "LSTM": "lstm",
    "GRU": "gru",
    "MultiheadAttention": "attention",
    "BatchNorm1d": "batchnorm",
    "BatchNorm2d": "batchnorm",
    "BatchNorm3d": "batchnorm",
    "LayerNorm": "layernorm",
    "ReLU": "relu",
    "ReLU6": "relu",
    "LeakyReLU": "relu",
    "GELU": "gelu",
    "Sigmoid": "sigmoid",
    "Tanh": "tanh",
    "Softmax": "softmax",
    "Dropout": "dropout",
    "MaxPool2d": "maxpool",
    "AvgPool2d": "avgpool",
    "AdaptiveAvgPool2d": "avgpool",
    "Embedding": "embedding",
}

_TORCH_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


def _kind_of(module: Any) -> str | None:
    for cls in type(module).__mro__:
        if cls.__name__ in SUPPORTED_MODULES and cls.__module__.startswith("torch.nn"):
            return SUPPORTED_MODULES[cls.__name__]
    return None


def _pair(v: Any) -> tuple[int, int]:
    return (int(v[0]), int(v[1])) if isinstance(v, (tuple, list)) else (int(v), int(v))


def _spec(name: str, kind: str, m: Any, args: tuple[Any, ...], out: Any) -> list[LayerSpec]:
    """Layer specs for one call of module ``m`` (usually one; LSTM layers give several)."""
    torch = require("torch", "analysing a PyTorch module")
    x = args[0] if args else None
    if kind == "linear":
        rows = math.prod(x.shape[:-1]) if x.dim() > 1 else 1
        return [
            LayerSpec(
                name, kind, {"batch": rows, "inputs": m.in_features, "outputs": m.out_features}
            )
        ]
    if kind == "conv2d":
        xb = x if x.dim() == 4 else x.unsqueeze(0)
        n, c, h, w = xb.shape
        if isinstance(m.padding, str):
            pad = (
                (0, 0)
                if m.padding == "valid"
                else tuple(d * (k - 1) // 2 for d, k in zip(m.dilation, m.kernel_size, strict=True))
            )
        else:
            pad = _pair(m.padding)
        nhwc = xb.is_contiguous(memory_format=torch.channels_last) and not xb.is_contiguous()
        return [
            LayerSpec(
                name,
                kind,
                {
                    "batch": n,
                    "in_channels": c,
                    "out_channels": m.out_channels,
                    "height": h,
                    "width": w,
                    "kernel_size": _pair(m.kernel_size),
                    "stride": _pair(m.stride),
                    "padding": pad,
                    "dilation": _pair(m.dilation),
                    "groups": m.groups,
                    "layout": "nhwc" if nhwc else "nchw",
                },
            )
        ]
    if kind in ("lstm", "gru"):
        if x.dim() == 2:
            seq, batch = x.shape[0], 1
        elif m.batch_first:
            batch, seq = x.shape[0], x.shape[1]
        else:
            seq, batch = x.shape[0], x.shape[1]
        dirs = 2 if m.bidirectional else 1
        specs = []
        for layer_index in range(m.num_layers):
            inputs = m.input_size if layer_index == 0 else m.hidden_size * dirs
            specs.append(
                LayerSpec(
                    f"{name}.layer{layer_index}",
                    kind,
                    {
                        "batch": batch,
                        "input_size": inputs,
                        "hidden_size": m.hidden_size,
                        "seq_len": seq,
                    },
                    dirs,
                )
            )
        return specs
    if kind == "attention":
        if x.dim() == 2:
            seq, batch = x.shape[0], 1
        elif m.batch_first:
            batch, seq = x.shape[0], x.shape[1]
        else:
            seq, batch = x.shape[0], x.shape[1]
        return [
            LayerSpec(
                name,
                kind,
                {"batch": batch, "seq_len": seq, "hidden": m.embed_dim, "heads": m.num_heads},
            )
        ]
    if kind == "embedding":
        return [
            LayerSpec(
                name,
                kind,
                {
                    "batch": int(x.numel()),
                    "seq_len": 1,
                    "vocab": m.num_embeddings,
                    "hidden": m.embedding_dim,
                },
            )
        ]
    if kind in ("maxpool", "avgpool"):
        shape = tuple(x.shape)
        if type(m).__name__ == "AdaptiveAvgPool2d":
            oh, ow = _pair(m.output_size if m.output_size is not None else 1)
            h, w = shape[-2], shape[-1]
            kernel = (h // (oh or h), w // (ow or w))
            return [LayerSpec(name, kind, {"shape": shape, "kernel_size": kernel})]
        opts: dict[str, Any] = {
            "shape": shape,
            "kernel_size": _pair(m.kernel_size),
            "padding": _pair(m.padding),
        }
        if m.stride is not None:
            opts["stride"] = _pair(m.stride)
        return [LayerSpec(name, kind, opts)]
    # element-wise and normalizations: the input tensor's shape
    return [LayerSpec(name, kind, {"shape": tuple(int(s) for s in x.shape)})]


def module_layers(module: Any, *example_inputs: Any, **example_kwargs: Any) -> list[LayerSpec]:
    """Run ``module`` once on the example input and list the supported layers it called.

    A supported module inside another supported module (the output projection inside
    MultiheadAttention) is covered by the outer one and not listed again.
    """
    torch = require("torch", "analysing a PyTorch module")
    if not isinstance(module, torch.nn.Module):
        raise InvalidParameter(f"'module' must be a torch.nn.Module (got {type(module).__name__})")
    records: list[LayerSpec] = []
    handles = []
    covered: set[str] = set()
    for name, m in module.named_modules():
        kind = _kind_of(m)
        if kind is None or any(name.startswith(c + ".") for c in covered):
            continue
        if kind in ("attention", "lstm", "gru", "linear", "conv2d"):
            covered.add(name)
        if kind == "dropout" and getattr(m, "p", 0) == 0:
            continue

        def hook(
            mod: Any, args: Any, out: Any, _name: str = name or "model", _kind: str = kind
        ) -> None:
            records.extend(_spec(_name, _kind, mod, tuple(args), out))

        handles.append(m.register_forward_hook(hook))
    try:
        with torch.no_grad():
            module(*example_inputs, **example_kwargs)
    finally:
        for h in handles:
            h.remove()
    return records


def analyze_module(
    module: Any,
    *example_inputs: Any,
    dtype: str | None = None,
    gpu: Any = "A100",
    training: bool = True,
    **example_kwargs: Any,
) -> NetworkResult:
    """Model a PyTorch module's layers on a GPU: the op list, times and class split.

    ``dtype`` defaults to the dtype of the module's first floating-point parameter
    (``torch.float16`` -> 'fp16'); pass ``dtype='fp16'`` to ask what half precision
    would give. The example input only fixes the shapes; the module runs once on CPU.
    """
    if dtype is None:
        params = [p for p in module.parameters() if p.is_floating_point()]
        dtype = (
            _TORCH_DTYPES.get(str(params[0].dtype).replace("torch.", ""), "fp32")
            if params
            else "fp32"
        )
    specs = module_layers(module, *example_inputs, **example_kwargs)
    if not specs:
        raise InvalidParameter(
            f"'module' must contain at least one supported layer ({', '.join(SUPPORTED_MODULES)}) "
            f"(got {type(module).__name__} with none)"
        )
    return network(type(module).__name__, specs, dtype=dtype, gpu=gpu, training=training)
