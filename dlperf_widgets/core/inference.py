"""LLM inference: prefill as GEMMs, decode as GEMVs, the KV cache and weight-only quantisation.

A decoder-only transformer serves a request in two phases. **Prefill** runs the whole prompt
through the model at once: every linear layer is a GEMM with M = batch x prompt tokens, so
it is math-bound like training. **Decode** then produces one token per step per sequence:
every linear layer is a GEMM with M = batch, a matrix-vector product at batch 1, and each
step must stream all the weights and every sequence's cached keys and values from DRAM.
At small batch that traffic, not the arithmetic, sets the time per token (the guides'
memory-bound regime, "Understanding Performance", with an intensity of about 2 x batch /
bytes per weight FLOP/B); batching amortises the weights and moves decode up the roofline
until it crosses the GPU's ops:byte ratio.

Sources: the KV cache holds 2 (K and V) x layers x KV heads x head dim values per token
(Kwon et al., "Efficient Memory Management for Large Language Model Serving with
PagedAttention", SOSP 2023, section 3: 800 KB per token for OPT-13B in FP16); grouped-query
attention shares each K/V head among several query heads (Ainslie et al., "GQA", EMNLP
2023), multi-query attention keeps one (Shazeer, "Fast Transformer Decoding", 2019).
Weight-only quantisation stores weights as int8 or int4 with one FP16 scale per group of
weights (Frantar et al., "GPTQ", ICLR 2023; Lin et al., "AWQ", MLSys 2024; group size 128
is their common setting) and dequantises them to FP16 inside the GEMM.

Times are the kit's model: the GEMMs' math through :func:`~dlperf_widgets.core.gemm.gemm`,
DRAM traffic through :func:`~dlperf_widgets.core.memlimited.memory_pass`. Not modelled: the
element-wise ops between GEMMs (fused in serving engines), the softmax of attention, the
host's launch overhead (serving engines capture decode in CUDA graphs), and workspace and
activation memory (a few per cent of the weights at these sizes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ._validate import check_bool, check_choice, check_int, describe
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gemm import gemm_sweep, ideal_time_s
from .gpus import Gpu
from .gpus import gpu as _gpu
from .memlimited import memory_pass
from .results import ResultMixin

__all__ = [
    "KV_DTYPES",
    "MODELS",
    "WEIGHT_DTYPES",
    "DecodeResult",
    "LlmSpec",
    "generation_latency_s",
    "kv_cache_bytes",
    "llm",
    "llm_inference",
    "model_names",
    "phase_gemms",
    "weight_bytes",
]

# Most tokens one prefill may hold (batch x prompt): four million keeps every GEMM's
# M x N x K x batch far inside exact integer range, and is far beyond any served batch.
MAX_PREFILL_TOKENS = 1 << 22

WEIGHT_DTYPES = ("fp16", "bf16", "fp8", "int8", "int4")
KV_DTYPES = ("fp16", "bf16", "fp8", "int8")

# Bits of the per-group scale of quantised weights (one FP16 scale per group).
SCALE_BITS = 16
# Operations to dequantise one weight (multiply by the scale, subtract the zero point).
DEQUANT_FLOPS_PER_WEIGHT = 2
# A quantised GEMM dequantises each weight tile once per block of this many rows of the
# activations (a common tile height; core.assumptions.LATENCY_TILE uses the same 64).
DEQUANT_ROWS = 64
# The GEMM model's smallest tile height, and the Tensor Core MMA's M (mma.m16n8k16).
SKINNY_TILE_ROWS = 64
MMA_ROWS = 16


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

    def __post_init__(self) -> None:
        # A custom spec is user input like any other: checked once, here.
        for label in ("name", "source"):
            text = getattr(self, label)
            if not isinstance(text, str) or len(text) > 200:
                raise InvalidParameter(f"'{label}' must be text (got {describe(text)})")
        for label in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab"):
            size = check_int(label, getattr(self, label), maximum=2**20, allow_array=False)
            object.__setattr__(self, label, size)
        if self.heads % self.kv_heads:
            raise InvalidParameter(
                f"'kv_heads' must divide 'heads' ({self.heads}): each key/value head serves "
                f"a whole group of query heads (got {self.kv_heads})"
            )
        for label in ("gated_mlp", "tied_embeddings"):
            object.__setattr__(self, label, check_bool(label, getattr(self, label)))

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
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

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


def _bits(name: str, dt: str, group_size: int) -> float:
    """Stored bits per value of a weight (or cache) dtype, with its group scales."""
    d = _dtype(dt)
    bits = float(d.bits)
    if d.name in ("int8", "int4"):
        bits += SCALE_BITS / group_size
    return bits


def weight_bytes(
    model: str | LlmSpec, weight_dtype: str = "fp16", *, group_size: int = 128
) -> float:
    """Bytes of the weights: linear layers in ``weight_dtype`` (int8/int4 with one FP16 scale
    per ``group_size`` weights), embeddings and norms in 16 bits (as GPTQ and AWQ keep them).

    >>> weight_bytes("llama-2-7b", "int4") / weight_bytes("llama-2-7b", "fp16") < 0.3
    True
    """
    spec = llm(model)
    wd = check_choice("weight_dtype", weight_dtype, WEIGHT_DTYPES)
    g = check_int("group_size", group_size, allow_array=False, maximum=1 << 20)
    lin = spec.linear_params * _bits("weight_dtype", wd, g) / 8
    return lin + (spec.params - spec.linear_params) * 2.0


def kv_cache_bytes(
    model: str | LlmSpec, *, context: Any, batch: Any = 1, kv_dtype: str = "fp16"
) -> Any:
    """2 x layers x KV heads x head dim x context x batch x bytes per value (vectorised).

    >>> kv_cache_bytes("llama-2-7b", context=1, batch=1)
    524288.0
    """
    spec = llm(model)
    c = check_int("context", context, maximum=1 << 24)
    b = check_int("batch", batch, maximum=1 << 20)
    kd = _dtype(check_choice("kv_dtype", kv_dtype, KV_DTYPES))
    out = spec.kv_values_per_token * kd.bytes_per_element * np.asarray(c, dtype=np.float64) * b
    return float(out) if np.ndim(out) == 0 else out


def _stream_time_s(g: Gpu, nbytes: float) -> float:
    """Predicted time to stream ``nbytes`` from DRAM (the kit's memory model, one kernel)."""
    return memory_pass(
        "stream", "forward", "elementwise", 0.0, nbytes, g, _dtype("fp16")
    ).predicted_time_s


@dataclass(frozen=True)
class DecodeResult(ResultMixin):
    """Serving ``batch`` sequences of a model on one GPU: prefill, decode and memory.

    ``time_to_first_token_s``: prefill of ``prompt_len`` tokens for the whole batch.
    ``decode_step_s``: one token for every sequence at ``context`` cached tokens;
    ``tokens_per_s_per_user`` = 1 / step, ``tokens_per_s`` = batch / step.
    ``decode_*`` place the step on the roofline (FLOPs over DRAM bytes, FLOPs over time).
    ``ridge_batch``: the batch at which the weights' intensity 2 x batch / bytes per
    weight reaches the GPU's FP16 ops:byte (where decode stops being memory-bound, if the
    KV cache did not grow with batch). ``max_batch``: sequences of ``context`` tokens whose
    KV cache fits beside the weights. Times are the model's predictions.
    """

    model: str
    gpu: str
    batch: int
    context: int
    prompt_len: int
    weight_dtype: str
    kv_dtype: str
    group_size: int
    params: int
    weight_bytes: float
    kv_cache_bytes: float
    memory_bytes: float
    capacity_bytes: float
    fits: bool
    max_batch: int
    prefill_flops: float
    time_to_first_token_s: float
    decode_flops: float
    decode_bytes: float
    decode_weight_bytes_per_token: float
    decode_kv_bytes_per_token: float
    decode_math_time_s: float
    decode_memory_time_s: float
    dequant_time_s: float
    decode_step_s: float
    decode_limiter: str
    decode_arithmetic_intensity: float
    decode_flops_per_s: float
    ops_per_byte: float
    ridge_batch: float
    tokens_per_s_per_user: float
    tokens_per_s: float
    ideal_decode_step_s: float
    memory_parts: dict[str, float] = field(default_factory=dict)

    _units: ClassVar[dict[str, str]] = {
        "params": "",
        "weight_bytes": "iB",
        "kv_cache_bytes": "iB",
        "memory_bytes": "iB",
        "capacity_bytes": "iB",
        "prefill_flops": "FLOP",
        "time_to_first_token_s": "s",
        "decode_flops": "FLOP",
        "decode_bytes": "B",
        "decode_weight_bytes_per_token": "B",
        "decode_kv_bytes_per_token": "B",
        "decode_math_time_s": "s",
        "decode_memory_time_s": "s",
        "dequant_time_s": "s",
        "decode_step_s": "s",
        "decode_flops_per_s": "FLOP/s",
        "ideal_decode_step_s": "s",
    }

    def _title(self) -> str:
        return (
            f"{self.model} on {self.gpu}: batch {self.batch}, context {self.context}, "
            f"weights {self.weight_dtype}, KV {self.kv_dtype}"
        )

    # For plots: the decode step as a point on the roofline.
    @property
    def arithmetic_intensity(self) -> float:
        return self.decode_arithmetic_intensity

    @property
    def predicted_flops_per_s(self) -> float:
        return self.decode_flops_per_s

    @property
    def limiter(self) -> str:
        return self.decode_limiter

    @property
    def memory_fractions(self) -> dict[str, float]:
        """Each memory part as a fraction of the GPU's capacity (for a bar chart)."""
        return {k: v / self.capacity_bytes for k, v in self.memory_parts.items()}


def _skinny_rows(rows: int) -> int:
    """Rows at which a decode GEMM is priced by the GEMM model (its smallest tile's height).

    The GEMM model pads M to its smallest tile (64 rows). Kernels for skinny GEMMs and
    GEMVs pad only to the Tensor Core instruction's M of 16 rows (PTX ISA, mma.m16n8k16),
    so below 64 rows the math time of 64 rows is scaled by :func:`_skinny_scale`.
    """
    return rows if rows >= SKINNY_TILE_ROWS else SKINNY_TILE_ROWS


def _skinny_scale(rows: int) -> float:
    if rows >= SKINNY_TILE_ROWS:
        return 1.0
    return math.ceil(rows / MMA_ROWS) * MMA_ROWS / SKINNY_TILE_ROWS


def llm_inference(
    model: str | LlmSpec = "llama-2-7b",
    *,
    gpu: str | Gpu = "A100",
    batch: int = 1,
    context: int = 2048,
    prompt_len: int | None = None,
    weight_dtype: str = "fp16",
    kv_dtype: str = "fp16",
    group_size: int = 128,
) -> DecodeResult:
    """Model serving ``model`` on ``gpu``: time to first token, decode speed and memory.

    Activations and the GEMMs' math run in FP16; weights are stored in ``weight_dtype`` and
    the KV cache in ``kv_dtype``. ``context`` is the number of cached tokens per sequence
    during decode; ``prompt_len`` (default: ``context``) the prompt that prefill processes.
    """
    spec = llm(model)
    g = _gpu(gpu)
    b = check_int("batch", batch, allow_array=False, maximum=1 << 16)
    c = check_int("context", context, allow_array=False, maximum=1 << 22)
    p = c if prompt_len is None else check_int("prompt_len", prompt_len, allow_array=False,
                                               maximum=1 << 22)  # fmt: skip
    wd = check_choice("weight_dtype", weight_dtype, WEIGHT_DTYPES)
    kd = check_choice("kv_dtype", kv_dtype, KV_DTYPES)
    gs = check_int("group_size", group_size, allow_array=False, maximum=1 << 20)
    if b * p > MAX_PREFILL_TOKENS:
        raise InvalidParameter(
            f"'batch' x 'prompt_len' must be at most {MAX_PREFILL_TOKENS:,} tokens in one "
            f"prefill (got {b * p:,})"
        )
    if spec.heads % spec.kv_heads:
        raise InvalidParameter(f"'kv_heads' must divide heads ({spec.heads}) (got {spec.kv_heads})")
    if not g.supports("fp16"):
        raise InvalidParameter(f"'gpu' must run FP16 GEMMs (got {describe(g.name)})")
    wbytes = weight_bytes(spec, wd, group_size=gs)
    kv_token = kv_cache_bytes(spec, context=1, batch=1, kv_dtype=kd)
    kv_total = kv_token * c * b

    # One vectorised call of the GEMM model prices every GEMM of both phases.
    # Prefill: linear GEMMs with M = batch x prompt; attention over the prompt (fused, so no
    # N x N traffic; the causal mask's halving is not modelled); the LM head for the last
    # token of each sequence only. Decode: the same linears and LM head with M = batch
    # (skinny: see _skinny_rows); attention of one query row per sequence over its cache.
    lin = spec.linears()
    group = spec.heads // spec.kv_heads
    bkv = b * spec.kv_heads
    hd = spec.head_dim
    skinny = _skinny_rows(b)
    rows = [(b * p, n, k, 1, spec.layers) for _, n, k in lin]
    rows += [(p * group, p, hd, bkv, spec.layers), (p * group, hd, p, bkv, spec.layers)]
    rows += [(b, spec.vocab, spec.hidden, 1, 1)]
    rows += [(skinny, n, k, 1, spec.layers) for _, n, k in lin]
    rows += [(group, c, hd, bkv, spec.layers), (group, hd, c, bkv, spec.layers)]
    rows += [(skinny, spec.vocab, spec.hidden, 1, 1)]
    m_, n_, k_, bt_, count = (np.array(col, dtype=np.int64) for col in zip(*rows, strict=True))
    sw = gemm_sweep(m_, n_, k_, batch=bt_, dtype="fp16", gpu=g)
    flops = np.asarray(sw.flops) * count
    pre = slice(0, 7)
    prefill_t = float((np.asarray(sw.predicted_time_s) * count)[pre].sum())
    prefill_f = float(flops[pre].sum())
    math_each = np.asarray(sw.math_time_s) * count
    # Skinny rows were priced at the model's smallest tile; scale to the rows padded.
    scale = np.ones(len(rows))
    scale[[7, 8, 9, 10, 13]] = _skinny_scale(b)
    math_t = float((math_each * scale)[7:].sum())
    dec_lin = [(b, n, k) for _, n, k in lin] + [(b, spec.vocab, spec.hidden)]
    dec_f = float(flops[11:13].sum())
    dec_f += sum(2.0 * mm * nn * kk * (spec.layers if i < 4 else 1)
                 for i, (mm, nn, kk) in enumerate(dec_lin))  # fmt: skip
    dequant_t = 0.0
    if wd in ("int8", "int4"):
        dq_flops = DEQUANT_FLOPS_PER_WEIGHT * spec.linear_params * math.ceil(b / DEQUANT_ROWS)
        dequant_t = memory_pass(
            "dequantize", "forward", "elementwise", dq_flops, 0.0, g, _dtype("fp16")
        ).math_time_s
    # Weights once per step (shared by the batch), each sequence's cache, the new K and V.
    # The embedding table is only indexed (batch rows); the LM head is read whole (with tied
    # embeddings they are one table).
    weights_read = wbytes - (0.0 if spec.tied_embeddings else spec.vocab * spec.hidden * 2.0)
    dec_bytes = weights_read + kv_total + kv_token * b
    memory_t = _stream_time_s(g, dec_bytes)
    step = max(math_t + dequant_t, memory_t)
    ideal_step = float(ideal_time_s(dec_f, dec_bytes, g, "fp16"))
    lim = "math" if math_t + dequant_t > memory_t else "memory"
    capacity = float(g.memory_bytes)
    free = capacity - wbytes
    per_seq = kv_token * c
    max_batch = int(free // per_seq) if free > 0 else 0
    bytes_per_weight = (wbytes - (spec.params - spec.linear_params) * 2.0) / spec.linear_params
    return DecodeResult(
        model=spec.name,
        gpu=g.name,
        batch=b,
        context=c,
        prompt_len=p,
        weight_dtype=wd,
        kv_dtype=kd,
        group_size=gs,
        params=spec.params,
        weight_bytes=wbytes,
        kv_cache_bytes=kv_total,
        memory_bytes=wbytes + kv_total,
        capacity_bytes=capacity,
        fits=wbytes + kv_total <= capacity,
        max_batch=max_batch,
        prefill_flops=prefill_f,
        time_to_first_token_s=prefill_t,
        decode_flops=dec_f,
        decode_bytes=dec_bytes,
        decode_weight_bytes_per_token=weights_read / b,
        decode_kv_bytes_per_token=kv_total / b,
        decode_math_time_s=math_t,
        decode_memory_time_s=memory_t,
        dequant_time_s=dequant_t,
        decode_step_s=step,
        decode_limiter=lim,
        decode_arithmetic_intensity=dec_f / dec_bytes,
        decode_flops_per_s=dec_f / step,
        ops_per_byte=g.ops_per_byte("fp16"),
        ridge_batch=g.ops_per_byte("fp16") * bytes_per_weight / 2.0,
        tokens_per_s_per_user=1.0 / step,
        tokens_per_s=b / step,
        ideal_decode_step_s=ideal_step,
        memory_parts={"weights": wbytes, "KV cache": kv_total},
    )


def generation_latency_s(
    model: str | LlmSpec = "llama-2-7b",
    *,
    gpu: str | Gpu = "A100",
    batch: int = 1,
    prompt_len: int = 128,
    output_len: int = 20,
    weight_dtype: str = "fp16",
    kv_dtype: str = "fp16",
) -> float:
    """Predicted time for ``batch`` requests of ``prompt_len`` tokens to produce ``output_len``
    tokens each: prefill (the first token), then ``output_len - 1`` decode steps, priced at
    the mean context of the generation.
    """
    out = check_int("output_len", output_len, allow_array=False, maximum=1 << 20)
    p = check_int("prompt_len", prompt_len, allow_array=False, maximum=1 << 22)
    first = llm_inference(model, gpu=gpu, batch=batch, context=p, weight_dtype=weight_dtype,
                          kv_dtype=kv_dtype)  # fmt: skip
    if out == 1:
        return first.time_to_first_token_s
    mid = llm_inference(model, gpu=gpu, batch=batch, context=p + out // 2, prompt_len=p,
                        weight_dtype=weight_dtype, kv_dtype=kv_dtype)  # fmt: skip
    return first.time_to_first_token_s + (out - 1) * mid.decode_step_s


def phase_gemms(
    model: str | LlmSpec = "llama-2-7b",
    *,
    phase: str = "decode",
    gpu: str | Gpu = "A100",
    batch: int = 1,
    tokens: int = 512,
) -> tuple[tuple[str, Any], ...]:
    """The linear layers of one transformer layer as GEMMs: ``(name, GemmResult)`` pairs.

    ``phase='prefill'``: M = batch x ``tokens`` (the prompt); ``'decode'``: M = batch, one
    new token per sequence (a matrix-vector product at batch 1). FP16, as a GEMM the guides
    describe: the weights are the K x N operand.
    """
    from .gemm import gemm

    spec = llm(model)
    ph = check_choice("phase", phase, ("prefill", "decode"))
    b = check_int("batch", batch, allow_array=False, maximum=1 << 16)
    n_tok = check_int("tokens", tokens, allow_array=False, maximum=1 << 22)
    m = b * n_tok if ph == "prefill" else b
    return tuple((name, gemm(m, n, k, dtype="fp16", gpu=gpu)) for name, n, k in spec.linears())
