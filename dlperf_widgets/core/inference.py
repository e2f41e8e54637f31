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

Times are views of the kernel list (:mod:`.workload`): each phase is the kernels it runs
(the linear layers' GEMMs, attention, norms, activations, residual adds, rotary embeddings,
the LM head), priced kernel by kernel with the GEMM model, the achievable DRAM bandwidth and
the calibrated attention and quantised-kernel efficiencies, in one CUDA graph per phase (as
serving engines capture decode). So past the ridge batch the weight GEMMs turn math-bound
one by one while attention keeps streaming the cache. Not modelled: workspace and
activation memory (a few per cent of the weights at these sizes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ._validate import check_choice, check_int, describe
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gemm import ideal_time_s
from .gpus import Gpu
from .gpus import gpu as _gpu
from .results import ResultMixin
from .workload import (
    MODELS,
    LlmSpec,
    WorkloadTime,
    llm,
    model_names,
    price,
    workload,
    workload_constants,
)

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
    # the priced decode step, kernel by kernel (which kernels take the time)
    priced: WorkloadTime | None = field(default=None, repr=False, compare=False)

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

    _hidden: ClassVar[tuple[str, ...]] = ("priced",)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in super().to_dict().items() if k != "priced"}

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

    Both phases are views of their kernel lists (:func:`.workload.workload`), priced kernel
    by kernel (:func:`.workload.price`) as one CUDA graph each, as serving engines run them.
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
    prec = "bf16" if wd == "bf16" else "fp16"
    weights = "same" if wd in ("fp16", "bf16") else wd
    opts = dict(precision=prec, weights=weights, group_size=gs, kv_dtype=kd, batch=b)
    pre_w = workload(spec, phase="prefill", seq=p, **opts)
    dec_w = workload(spec, phase="decode", seq=p, context=c, **opts)
    pre = price(pre_w, g, timing="back-to-back")
    dec = price(dec_w, g, timing="back-to-back")
    wbytes = weight_bytes(spec, wd, group_size=gs)
    kv_token = kv_cache_bytes(spec, context=1, batch=1, kv_dtype=kd)
    kv_total = kv_token * c * b

    count = dec_w.column("count")
    is_gemm = dec_w.column("kind") == "gemm"
    math_t = float((dec.math_times_s * count).sum())
    memory_t = float((dec.memory_times_s * count).sum())
    # dequantisation: the math the quantised GEMMs add over an FP16 GEMM's (price() divides
    # their math time by the quantised kernels' efficiency)
    dequant_t = 0.0
    if weights != "same":
        eff = workload_constants(g)["quant_math"].value
        dequant_t = float((dec.math_times_s * count)[is_gemm].sum()) * (1.0 - eff)
    # The guide's arithmetic for the roofline point: the weights once per step (shared by
    # the batch) and each sequence's cache; the embedding table is only indexed.
    weights_read = float(sum(k.weight_bytes * k.count for k in dec_w.kernels))
    dec_bytes = weights_read + kv_total + kv_token * b
    dec_f = dec_w.flops
    step = dec.step_s
    ideal_step = float(ideal_time_s(dec_f, dec_bytes, g, "fp16"))
    # limiter: where most of the step's time goes, kernel by kernel
    t_each = dec.times_s * count
    math_bound = float(t_each[dec.math_times_s > dec.memory_times_s].sum())
    lim = "math" if math_bound > step / 2 else "memory"
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
        prefill_flops=pre_w.flops,
        time_to_first_token_s=pre.step_s,
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
        priced=dec,
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
