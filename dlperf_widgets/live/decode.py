"""Decode measured on this machine: a small Llama-style model with a KV cache, in PyTorch.

:func:`decoder` builds a decoder-only transformer from an
:class:`~dlperf_widgets.core.inference.LlmSpec` (RMSNorm, grouped-query attention, gated MLP,
untied LM head: the Llama layout), with random weights: speed and memory do not depend on
what the weights say. :func:`measure_decode` fills a KV cache of ``context`` tokens for
``batch`` sequences, then times decode steps (one token per sequence each) and reports the
bytes of the weights and of the cache as PyTorch holds them, beside the core's counts.
"""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from .._optional import require
from ..core._validate import check_choice, check_int
from ..core.inference import LlmSpec, kv_cache_bytes, llm, weight_bytes
from ..core.results import ResultMixin

__all__ = ["TINY_MODEL", "DecodeMeasurement", "decoder", "measure_decode"]

# A model small enough to decode quickly on a laptop CPU (about 20 M parameters, 39 MB in
# FP16), with grouped-query attention (4 query heads per K/V head).
TINY_MODEL = LlmSpec(
    name="tiny-llama",
    layers=4,
    hidden=512,
    heads=8,
    kv_heads=2,
    head_dim=64,
    ffn=1408,
    vocab=8192,
    source="built here: the Llama layout at a small size",
)


def _torch() -> Any:
    return require("torch", "decode measurements")


@functools.lru_cache(maxsize=1)
def _classes() -> tuple[Any, Any]:
    torch = _torch()
    nn = torch.nn
    fn = torch.nn.functional

    class Layer(nn.Module):
        def __init__(self, s: LlmSpec) -> None:
            super().__init__()
            self.s = s
            q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
            self.norm1 = nn.RMSNorm(s.hidden)
            self.qkv = nn.Linear(s.hidden, q + 2 * kv, bias=False)
            self.out = nn.Linear(q, s.hidden, bias=False)
            self.norm2 = nn.RMSNorm(s.hidden)
            self.gate_up = nn.Linear(s.hidden, 2 * s.ffn, bias=False)
            self.down = nn.Linear(s.ffn, s.hidden, bias=False)

        def forward(self, x: Any, cache: tuple[Any, Any], pos: int) -> Any:
            s = self.s
            b, t, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(
                [s.heads * s.head_dim, s.kv_heads * s.head_dim, s.kv_heads * s.head_dim], -1
            )
            q = q.view(b, t, s.heads, s.head_dim).transpose(1, 2)
            k = k.view(b, t, s.kv_heads, s.head_dim).transpose(1, 2)
            v = v.view(b, t, s.kv_heads, s.head_dim).transpose(1, 2)
            kc, vc = cache
            kc[:, :, pos : pos + t] = k
            vc[:, :, pos : pos + t] = v
            keys, values = kc[:, :, : pos + t], vc[:, :, : pos + t]
            a = fn.scaled_dot_product_attention(
                q, keys, values, is_causal=t > 1, enable_gqa=s.heads != s.kv_heads
            )
            x = x + self.out(a.transpose(1, 2).reshape(b, t, -1))
            g, u = self.gate_up(self.norm2(x)).chunk(2, -1)
            return x + self.down(fn.silu(g) * u)

    class Decoder(nn.Module):
        def __init__(self, s: LlmSpec) -> None:
            super().__init__()
            self.s = s
            self.embed = nn.Embedding(s.vocab, s.hidden)
            self.layers = nn.ModuleList(Layer(s) for _ in range(s.layers))
            self.norm = nn.RMSNorm(s.hidden)
            self.head = nn.Linear(s.hidden, s.vocab, bias=False)

        def new_cache(self, batch: int, context: int) -> list[tuple[Any, Any]]:
            s = self.s
            p = self.head.weight
            shape = (batch, s.kv_heads, context, s.head_dim)
            return [
                (
                    torch.zeros(shape, dtype=p.dtype, device=p.device),
                    torch.zeros(shape, dtype=p.dtype, device=p.device),
                )
                for _ in range(s.layers)
            ]

        def forward(self, tokens: Any, cache: list[tuple[Any, Any]], pos: int) -> Any:
            x = self.embed(tokens)
            for layer, c in zip(self.layers, cache, strict=True):
                x = layer(x, c, pos)
            return self.head(self.norm(x[:, -1:]))

    return Layer, Decoder


def decoder(spec: str | LlmSpec = TINY_MODEL, dtype: str = "fp32") -> Any:
    """A torch decoder of ``spec``'s shape with random weights (``dtype`` fp32 or bf16)."""
    torch = _torch()
    s = llm(spec)
    dtype = check_choice("dtype", dtype, ("fp32", "bf16"))
    td = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    torch.manual_seed(0)
    return _classes()[1](s).to(td).eval()


@dataclass(frozen=True)
class DecodeMeasurement(ResultMixin):
    """Decode on this machine (a measurement) beside the core's byte counts."""

    model: str
    device: str
    dtype: str
    batch: int
    context: int
    params_measured: int
    params_model: int
    weight_bytes_measured: int
    weight_bytes_model: float
    kv_cache_bytes_measured: int
    kv_cache_bytes_model: float
    prefill_time_s: float
    decode_step_s: float
    tokens_per_s: float

    _units: ClassVar[dict[str, str]] = {
        "weight_bytes_measured": "iB",
        "weight_bytes_model": "iB",
        "kv_cache_bytes_measured": "iB",
        "kv_cache_bytes_model": "iB",
        "prefill_time_s": "s",
        "decode_step_s": "s",
    }

    def _title(self) -> str:
        return f"decode of {self.model} on {self.device} (measured), batch {self.batch}"


def measure_decode(
    spec: str | LlmSpec = TINY_MODEL,
    *,
    batch: int = 1,
    context: int = 128,
    steps: int = 8,
    dtype: str = "fp32",
) -> DecodeMeasurement:
    """Prefill ``context`` - ``steps`` tokens, then time ``steps`` decode steps (CPU)."""
    torch = _torch()
    s = llm(spec)
    b = check_int("batch", batch, allow_array=False, maximum=256)
    c = check_int("context", context, allow_array=False, minimum=2, maximum=8192)
    n = check_int("steps", steps, allow_array=False, maximum=c - 1)
    dtype = check_choice("dtype", dtype, ("fp32", "bf16"))
    model = decoder(s, dtype)
    cache = model.new_cache(b, c)
    prompt = c - n
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, s.vocab, (b, prompt), generator=gen)
    times = []
    with torch.inference_mode():
        t0 = time.perf_counter()
        logits = model(tokens, cache, 0)
        prefill = time.perf_counter() - t0
        for i in range(n):
            nxt = logits.argmax(-1)
            t0 = time.perf_counter()
            logits = model(nxt, cache, prompt + i)
            times.append(time.perf_counter() - t0)
    step = statistics.median(times)
    params = sum(p.numel() for p in model.parameters())
    wbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    kv = sum(t.numel() * t.element_size() for pair in cache for t in pair)
    kv_dtype = "bf16" if dtype == "bf16" else "fp16"
    scale = 2.0 if dtype == "fp32" else 1.0  # the core counts 16-bit values; FP32 is twice
    return DecodeMeasurement(
        model=s.name,
        device="cpu",
        dtype=dtype,
        batch=b,
        context=c,
        params_measured=params,
        params_model=s.params,
        weight_bytes_measured=wbytes,
        weight_bytes_model=weight_bytes(s, "fp16") * scale,
        kv_cache_bytes_measured=kv,
        kv_cache_bytes_model=kv_cache_bytes(s, context=c, batch=b, kv_dtype=kv_dtype) * scale,
        prefill_time_s=prefill,
        decode_step_s=step,
        tokens_per_s=b / step,
    )
