"""Serving an LLM at scale: the paged KV cache, batching, chunked prefill, speculative decoding,
mixture of experts, tensor-parallel inference, split-KV attention and energy per token.

Every step time here is the model's prediction: the kernels of :mod:`.workload`, priced by
:func:`~.workload.price` in the CUDA-graph timing context (serving engines capture their
decode steps in graphs). The counts (blocks, bytes, expected tokens, experts hit) are exact
arithmetic; each function's docstring says which is which.

Sources:

- Paged KV cache: Kwon et al., "Efficient Memory Management for Large Language Model Serving
  with PagedAttention", SOSP 2023 (section 4.1: the cache is split into fixed blocks of
  ``block_size`` tokens mapped by a per-sequence block table, so a sequence wastes less than
  one block; section 3: systems that reserve the maximum length per request waste the rest).
  vLLM sizes the cache as ``gpu_memory_utilization`` (0.9 by default) of the card minus the
  weights and the peak activations of a profiling forward pass (vLLM docs, "Engine
  Arguments").
- Iteration-level scheduling (continuous batching): Yu et al., "Orca", OSDI 2022, section
  3.1: a finished sequence leaves the batch at the end of its step and a waiting one joins.
- Chunked prefill: Agrawal et al., "Sarathi-Serve", OSDI 2024, section 4: a prompt is split
  into chunks that ride along with the decode steps of the running batch ("stall-free
  batching"), so a long prefill never stalls the decodes.
- Speculative decoding: Leviathan, Kalman and Matias, "Fast Inference from Transformers via
  Speculative Decoding", ICML 2023, equation (1) and theorem 3.8: with per-token acceptance
  rate ``a`` and ``k`` drafted tokens, one target pass yields (1 - a^(k+1)) / (1 - a) tokens
  on average, and the walltime improvement is that over (k c + 1), with ``c`` the draft's
  cost relative to one target step.
- Mixture of experts: Jiang et al., "Mixtral of Experts", 2024, and its model card (8 experts,
  2 active, 46.7 B total and 12.9 B active parameters); expert parallelism moves each token to
  its experts and back with two all-to-alls (Lepikhin et al., "GShard", 2021).
- Tensor parallelism: Shoeybi et al., "Megatron-LM", 2019, section 3: heads and the MLP's
  hidden size split across GPUs, two all-reduces per layer.
- Split-KV attention: Dao, Haziza, Massa and Sizov, "Flash-Decoding for long-context
  inference" (PyTorch blog, October 2023): at small batch a decode attention has too few
  (batch x heads) thread blocks to fill the GPU; splitting the keys into chunks fills it and
  a small reduction combines the partial results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from ._validate import check_choice, check_int, check_number, describe
from .assumptions import CUDA_GRAPH_LAUNCH_S
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gpus import Gpu
from .gpus import gpu as _gpu
from .inference import LlmSpec, llm
from .results import ResultMixin, format_quantity
from .workload import PRECISIONS, Workload, price, workload, workload_memory

__all__ = [
    "MIXTRAL_8X7B",
    "BatchingResult",
    "EnergyResult",
    "KvBudget",
    "MixedStep",
    "MoeDecode",
    "ServingSlo",
    "SpeculativeResult",
    "SplitKvResult",
    "TensorParallelRow",
    "block_table",
    "board_power_w",
    "energy_per_token",
    "expected_accepted_tokens",
    "experts_hit",
    "kv_budget",
    "mixed_step",
    "moe_decode",
    "serving_slo",
    "simulate_batching",
    "simulate_speculative",
    "speculative",
    "split_kv",
    "tensor_parallel_inference",
]

# vLLM's default share of the card the engine may use (``gpu_memory_utilization``, vLLM
# "Engine Arguments"); the rest is left for the CUDA context and other processes.
GPU_MEMORY_UTILIZATION = 0.9
# vLLM's default KV block size in tokens (PagedAttention paper, section 7.2, and vLLM's
# ``block_size`` default).
BLOCK_SIZE = 16
# Tokens of the profiling forward pass that sizes the activations (vLLM's default
# ``max_num_batched_tokens`` with chunked prefill on).
PROFILE_TOKENS = 2048
# Memory outside weights, KV and activations: cuBLAS and NCCL workspaces and the CUDA graphs'
# memory pool. An assumption, not a published figure: about half a GiB is what a CUDA
# context with cuBLAS workspaces holds in PyTorch; we round up for the graph pools.
WORKSPACE_BYTES = 1 << 30

# Mixtral 8x7B's shape from its config.json on the Hugging Face Hub
# (mistralai/Mixtral-8x7B-v0.1): 32 layers, hidden 4096, 32 heads, 8 KV heads, FFN 14336,
# vocabulary 32000; 8 experts, 2 per token.
MIXTRAL_8X7B = LlmSpec("mixtral-8x7b", 32, 4096, 32, 8, 128, 14336, 32000, True, False,
                       "mistralai/Mixtral-8x7B-v0.1")  # fmt: skip
MIXTRAL_EXPERTS, MIXTRAL_TOP_K = 8, 2

_MAX_LEN = 1 << 24
_MAX_BATCH = 1 << 16
_MAX_SEQS = 1 << 20


def _fmt_table(title: str, header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [title, "  " + "  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def _spec_of(model: str | LlmSpec) -> LlmSpec:
    if isinstance(model, str) and model.lower() == MIXTRAL_8X7B.name:
        return MIXTRAL_8X7B
    return llm(model)


def _moe_of(spec: LlmSpec, experts: int | None, top_k: int | None) -> tuple[int, int]:
    """(experts, top_k): Mixtral's own unless given."""
    if spec is MIXTRAL_8X7B:
        default = (MIXTRAL_EXPERTS, MIXTRAL_TOP_K)
    else:
        default = (1, 1)
    ne = default[0] if experts is None else check_int("experts", experts, allow_array=False,
                                                       maximum=1 << 12)  # fmt: skip
    tk = default[1] if top_k is None else check_int("top_k", top_k, allow_array=False,
                                                    maximum=1 << 12)  # fmt: skip
    if tk > ne:
        raise InvalidParameter(f"'top_k' must be at most experts ({ne}) (got {tk})")
    return ne, tk


def _kv_bytes_per_token(spec: LlmSpec, kv_dtype: str, tp: int) -> float:
    """K and V of one token on one GPU: 2 x layers x KV heads (split by TP, at least one
    each) x head dim x bytes (PagedAttention paper, section 3)."""
    kvh = max(1, spec.kv_heads // tp)
    per_head = spec.kv_values_per_token // spec.kv_heads  # 2 x layers x head dim
    return float(per_head * kvh) * _dtype(kv_dtype).bytes_per_element


# ----------------------------------------------------------------------------- paged cache


def block_table(lengths: Any, block_size: int = BLOCK_SIZE) -> tuple[Any, Any]:
    """Blocks each sequence's block table maps, and the token slots it wastes (exact).

    A sequence of ``n`` tokens holds ceil(n / block_size) blocks; only its last block is
    partly empty, so it wastes fewer than ``block_size`` slots (PagedAttention, section 4.1).
    Vectorised over ``lengths``.

    >>> block_table([1, 16, 17], 16)
    (array([1, 1, 2]), array([15,  0, 15]))
    """
    n = check_int("lengths", lengths, maximum=_MAX_LEN)
    bs = check_int("block_size", block_size, allow_array=False, maximum=1 << 12)
    blocks = -(-np.asarray(n, dtype=np.int64) // bs)
    waste = blocks * bs - np.asarray(n, dtype=np.int64)
    if np.ndim(blocks) == 0:
        return int(blocks), int(waste)
    return blocks, waste


@dataclass(frozen=True)
class KvBudget(ResultMixin):
    """How many sequences fit in the KV cache one GPU can spare (exact arithmetic on the
    model's memory accounting).

    ``kv_budget_bytes`` = ``gpu_memory_utilization`` x capacity - weights - activations -
    workspace. ``sequences_paged``: sequences of ``prompt_len + output_len`` tokens that fit
    when each holds whole blocks (PagedAttention); ``sequences_reserved``: those that fit when
    each reserves ``max_model_len`` tokens up front, as systems before paging did.
    ``fragmentation``: share of a paged sequence's block slots left empty.
    """

    model: str
    gpu: str
    capacity_bytes: float
    usable_bytes: float
    weights_bytes: float
    activation_bytes: float
    workspace_bytes: float
    kv_budget_bytes: float
    kv_bytes_per_token: float
    block_size: int
    block_bytes: float
    blocks: int
    prompt_len: int
    output_len: int
    max_model_len: int
    blocks_per_sequence: int
    sequences_paged: int
    sequences_reserved: int
    fragmentation: float

    _units: ClassVar[dict[str, str]] = {
        "capacity_bytes": "iB",
        "usable_bytes": "iB",
        "weights_bytes": "iB",
        "activation_bytes": "iB",
        "workspace_bytes": "iB",
        "kv_budget_bytes": "iB",
        "kv_bytes_per_token": "iB",
        "block_bytes": "iB",
    }

    def _title(self) -> str:
        return (
            f"{self.model} KV cache on {self.gpu}: {self.blocks:,} blocks of {self.block_size} "
            f"tokens, {self.sequences_paged:,} sequences of "
            f"{self.prompt_len + self.output_len} tokens (paged) vs "
            f"{self.sequences_reserved:,} (reserving {self.max_model_len})"
        )


def kv_budget(
    model: str | LlmSpec = "llama-2-7b",
    gpu: str | Gpu = "A100",
    *,
    precision: str = "fp16",
    kv_dtype: str | None = None,
    block_size: int = BLOCK_SIZE,
    prompt_len: int = 512,
    output_len: int = 256,
    max_model_len: int | None = None,
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
    workspace_bytes: float = WORKSPACE_BYTES,
    profile_tokens: int = PROFILE_TOKENS,
    tensor_parallel: int = 1,
) -> KvBudget:
    """Size the paged KV cache on one GPU and count the sequences that fit (see
    :class:`KvBudget`). Weights come from the workload model's kernel list (per GPU under
    ``tensor_parallel``); activations are its largest buffer in a prefill of
    ``profile_tokens`` tokens, as vLLM's profiling pass measures them."""
    spec = _spec_of(model)
    g = _gpu(gpu)
    prec = check_choice("precision", precision, PRECISIONS)
    bs = check_int("block_size", block_size, allow_array=False, maximum=1 << 12)
    p = check_int("prompt_len", prompt_len, allow_array=False, maximum=_MAX_LEN)
    o = check_int("output_len", output_len, minimum=0, allow_array=False, maximum=_MAX_LEN)
    mml = p + o if max_model_len is None else check_int("max_model_len", max_model_len,
                                                       allow_array=False, maximum=_MAX_LEN)  # fmt: skip
    if mml < p + o:
        raise InvalidParameter(
            f"'max_model_len' must be at least prompt_len + output_len ({p + o}) (got {mml})"
        )
    util = check_number("gpu_memory_utilization", gpu_memory_utilization, minimum=0.0,
                        strict=True, maximum=1.0)  # fmt: skip
    ws = check_number("workspace_bytes", workspace_bytes, minimum=0.0)
    pt = check_int("profile_tokens", profile_tokens, allow_array=False, maximum=1 << 20)
    tp = check_int("tensor_parallel", tensor_parallel, allow_array=False, maximum=1024)
    ne, tk = _moe_of(spec, None, None)
    kvd = kv_dtype if kv_dtype is not None else ("fp16" if prec in ("fp8", "fp32", "tf32")
                                                 else prec)  # fmt: skip
    w = workload(spec, phase="prefill", batch=1, seq=pt, precision=prec, kv_dtype=kvd,
                 tensor_parallel=tp, experts=ne, top_k=tk)  # fmt: skip
    mem = workload_memory(w)
    weights = mem.weights_bytes
    act = mem.transient_bytes
    cap = float(g.memory_bytes)
    usable = util * cap
    budget = usable - weights - act - ws
    per_tok = _kv_bytes_per_token(spec, w.kv_dtype, tp)
    block_bytes = per_tok * bs
    blocks = max(0, int(budget // block_bytes))
    per_seq, waste = block_table(p + o, bs)
    reserved = max(0, int(budget // (per_tok * mml)))
    return KvBudget(
        model=spec.name,
        gpu=g.name,
        capacity_bytes=cap,
        usable_bytes=usable,
        weights_bytes=weights,
        activation_bytes=act,
        workspace_bytes=ws,
        kv_budget_bytes=budget,
        kv_bytes_per_token=per_tok,
        block_size=bs,
        block_bytes=block_bytes,
        blocks=blocks,
        prompt_len=p,
        output_len=o,
        max_model_len=mml,
        blocks_per_sequence=per_seq,
        sequences_paged=blocks // per_seq,
        sequences_reserved=reserved,
        fragmentation=waste / (per_seq * bs),
    )


# ------------------------------------------------------------------ iteration-level batching


@dataclass(frozen=True)
class BatchingResult(ResultMixin):
    """Decode steps to finish a queue of requests, batch by batch or iteration by iteration
    (exact: a step-by-step simulation, no timing).

    ``steps``: decode iterations until the last request finishes; ``slot_utilisation``:
    generated tokens over steps x ``max_batch`` (the share of batch slots doing useful work).
    """

    policy: str
    requests: int
    max_batch: int
    tokens: int
    steps: int
    slot_utilisation: float

    def _title(self) -> str:
        return (
            f"{self.policy} batching of {self.requests} requests, batch {self.max_batch}: "
            f"{self.steps:,} steps, {self.slot_utilisation:.0%} of slots busy"
        )


BATCHING_POLICIES = ("static", "continuous")


def simulate_batching(
    output_lens: Any, max_batch: int = 8, policy: str = "continuous"
) -> BatchingResult:
    """Simulate decoding requests of ``output_lens`` tokens, all queued at time zero.

    'static': take ``max_batch`` requests, run until the longest finishes, then the next
    batch (request-level batching). 'continuous': iteration-level scheduling (Orca, section
    3.1): a request that finishes frees its slot at the end of that step and the next queued
    request takes it at the following step.
    """
    lens = np.atleast_1d(check_int("output_lens", output_lens, maximum=_MAX_LEN))
    if lens.ndim != 1 or lens.size == 0 or lens.size > _MAX_SEQS:
        raise InvalidParameter(
            f"'output_lens' must be a non-empty list of at most {_MAX_SEQS:,} lengths "
            f"(got {describe(output_lens)})"
        )
    b = check_int("max_batch", max_batch, allow_array=False, maximum=_MAX_BATCH)
    pol = check_choice("policy", policy, BATCHING_POLICIES)
    lens = lens.astype(np.int64)
    if pol == "static":
        steps = int(sum(int(lens[i : i + b].max()) for i in range(0, lens.size, b)))
    else:
        # each slot is a lane; a request starts on the lane that frees first (a min-heap of
        # lane end times), so the makespan is that of list scheduling in arrival order
        import heapq

        lanes = [0] * min(b, lens.size)
        heapq.heapify(lanes)
        end = 0
        for n in lens.tolist():
            start = heapq.heappop(lanes)
            heapq.heappush(lanes, start + n)
            end = max(end, start + n)
        steps = end
    tokens = int(lens.sum())
    return BatchingResult(pol, int(lens.size), b, tokens, steps, tokens / (steps * b))


# -------------------------------------------------------------- chunked prefill and the SLO


def _priced(w: Workload, g: Gpu) -> tuple[np.ndarray, np.ndarray]:
    t = price(w, g, timing="kernel")
    return t.times_s * w.column("count").astype(np.float64), w.column("kind")


def _priced_each(ws: list[Workload], g: Gpu) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`_priced` of every workload of ``ws`` (same options, different sizes) from one
    :func:`price` call. A kernel's time there depends on that kernel alone, so pricing the
    kernels of several steps together gives each step the times it would get on its own,
    with one vectorised GEMM-model call instead of one per step."""
    t, kinds = _priced(replace(ws[0], kernels=tuple(k for w in ws for k in w.kernels)), g)
    ends = np.cumsum([len(w.kernels) for w in ws])
    return [
        (t[e - len(w.kernels) : e], kinds[e - len(w.kernels) : e])
        for w, e in zip(ws, ends, strict=True)
    ]


@lru_cache(maxsize=64)
def _linear_many(spec: LlmSpec, g: Gpu, rows: tuple[int, ...], prec: str,
                 tp: int) -> tuple[tuple[float, float], ...]:  # fmt: skip
    """(linear, communication) of the mixed steps carrying ``rows`` rows each: the
    non-attention kernels of a one-sequence prefill of that many tokens (as
    :func:`_mixed_parts`), all steps priced together and cached per sweep."""
    ne, tk = _moe_of(spec, None, None)
    opts: dict[str, Any] = {"precision": prec, "tensor_parallel": tp, "experts": ne, "top_k": tk}
    ws = [workload(spec, phase="prefill", batch=1, seq=r, **opts) for r in rows]
    out = []
    for t, kinds in _priced_each(ws, g):
        lin = float(t[(kinds != "attention") & (kinds != "collective")].sum())
        out.append((lin, float(t[kinds == "collective"].sum())))
    return tuple(out)


@lru_cache(maxsize=64)
def _decode_attention_many(spec: LlmSpec, g: Gpu, batches: tuple[int, ...], ctx: int,
                           prec: str, tp: int) -> tuple[float, ...]:  # fmt: skip
    """Decode attention of each batch against ``ctx`` cached tokens (as :func:`_attention_s`;
    0 for an empty batch): only the attention kernels of each decode step, priced together."""
    ne, tk = _moe_of(spec, None, None)
    opts: dict[str, Any] = {"precision": prec, "tensor_parallel": tp, "experts": ne, "top_k": tk}
    live = [b for b in batches if b]
    ws = []
    for b in live:
        w = workload(spec, phase="decode", batch=b, context=ctx, **opts)
        ws.append(replace(w, kernels=tuple(k for k in w.kernels if k.kind == "attention")))
    priced = _priced_each(ws, g) if ws else []
    attn = {
        b: float(t[kinds == "attention"].sum()) for b, (t, kinds) in zip(live, priced, strict=True)
    }
    return tuple(attn.get(b, 0.0) for b in batches)


@dataclass(frozen=True)
class MixedStep(ResultMixin):
    """One serving iteration: ``decode_batch`` sequences each add a token while a prefill
    chunk of ``chunk`` prompt tokens rides along (the model's prediction, CUDA-graph timing).

    The linear layers, norms and activations run once over ``decode_batch + chunk`` rows (so
    the weights are read once for both); attention runs per kind: the decodes against their
    ``context`` cached tokens, the chunk against itself (a first chunk; later chunks also read
    the earlier chunks' keys, which this leaves out).
    """

    model: str
    gpu: str
    decode_batch: int
    context: int
    chunk: int
    linear_s: float
    decode_attention_s: float
    prefill_attention_s: float
    communication_s: float
    step_s: float

    _units: ClassVar[dict[str, str]] = {
        "linear_s": "s",
        "decode_attention_s": "s",
        "prefill_attention_s": "s",
        "communication_s": "s",
        "step_s": "s",
    }

    def _title(self) -> str:
        return (
            f"{self.model} on {self.gpu}: {self.decode_batch} decodes + a {self.chunk}-token "
            f"prefill chunk, {format_quantity(self.step_s, 's')} per step"
        )


@lru_cache(maxsize=512)
def _mixed_parts(spec: LlmSpec, g: Gpu, b: int, ctx: int, ch: int, prec: str,
                 tp: int) -> tuple[float, float, float, float]:  # fmt: skip
    """(linear, decode attention, chunk attention, communication) of a mixed step, priced
    once per configuration (a sweep and a widget ask for the same steps again and again)."""
    ne, tk = _moe_of(spec, None, None)
    opts: dict[str, Any] = {"precision": prec, "tensor_parallel": tp, "experts": ne, "top_k": tk}
    dec_attn = pre_attn = 0.0
    if b and not ch:
        # a pure decode step is the workload model's decode phase as it is
        t, kinds = _priced(workload(spec, phase="decode", batch=b, context=ctx, **opts), g)
        dec_attn = float(t[kinds == "attention"].sum())
        lin = float(t[(kinds != "attention") & (kinds != "collective")].sum())
        comm = float(t[kinds == "collective"].sum())
    else:
        # one pass of the non-attention kernels over all rows (prefill phase, one sequence)
        t, kinds = _priced(workload(spec, phase="prefill", batch=1, seq=b + ch, **opts), g)
        lin = float(t[(kinds != "attention") & (kinds != "collective")].sum())
        comm = float(t[kinds == "collective"].sum())
        dec_attn = _attention_s(spec, g, "decode", b, ctx, prec, tp) if b else 0.0
        pre_attn = _attention_s(spec, g, "prefill", 1, ch, prec, tp)
    return lin, dec_attn, pre_attn, comm


@lru_cache(maxsize=512)
def _attention_s(spec: LlmSpec, g: Gpu, phase: str, batch: int, n: int, prec: str,
                 tp: int) -> float:  # fmt: skip
    """Attention kernels' time of a decode (``n`` cached tokens) or a prefill of ``n``."""
    ne, tk = _moe_of(spec, None, None)
    opts: dict[str, Any] = {"precision": prec, "tensor_parallel": tp, "experts": ne, "top_k": tk}
    size: dict[str, Any] = {"context": n} if phase == "decode" else {"seq": n}
    t, kinds = _priced(workload(spec, phase=phase, batch=batch, **size, **opts), g)
    return float(t[kinds == "attention"].sum())


def mixed_step(
    model: str | LlmSpec = "llama-2-7b",
    gpu: str | Gpu = "A100",
    *,
    decode_batch: int = 32,
    context: int = 1024,
    chunk: int = 512,
    precision: str = "fp16",
    tensor_parallel: int = 1,
) -> MixedStep:
    """Predict one iteration mixing ``decode_batch`` decodes and a ``chunk``-token prefill
    (Sarathi-Serve's stall-free batching); see :class:`MixedStep`."""
    spec = _spec_of(model)
    g = _gpu(gpu)
    b = check_int("decode_batch", decode_batch, minimum=0, allow_array=False, maximum=_MAX_BATCH)
    ctx = check_int("context", context, allow_array=False, maximum=_MAX_LEN)
    ch = check_int("chunk", chunk, minimum=0, allow_array=False, maximum=1 << 20)
    if b + ch == 0:
        raise InvalidParameter("'decode_batch' + 'chunk' must be at least 1 (got 0)")
    prec = check_choice("precision", precision, PRECISIONS)
    tp = check_int("tensor_parallel", tensor_parallel, allow_array=False, maximum=1024)
    lin, dec_attn, pre_attn, comm = _mixed_parts(spec, g, b, ctx, ch, prec, tp)
    step = lin + dec_attn + pre_attn + comm + CUDA_GRAPH_LAUNCH_S
    return MixedStep(spec.name, g.name, b, ctx, ch, lin, dec_attn, pre_attn, comm, step)


@dataclass(frozen=True)
class ServingSlo(ResultMixin):
    """Time to first token and time per output token against a batch of running decodes,
    and the largest batch that meets both SLOs and fits the KV cache (the model's
    prediction).

    Steady state under chunked prefill: every step carries one ``chunk`` of a new prompt, so
    TPOT is one mixed step and a prompt of ``prompt_len`` waits ceil(prompt_len / chunk)
    mixed steps for its first token. ``batches``, ``ttft_s``, ``tpot_s``: the sweep;
    ``best_batch``: the largest batch meeting both SLOs (0 if none).
    """

    model: str
    gpu: str
    prompt_len: int
    output_len: int
    chunk: int
    ttft_slo_s: float
    tpot_slo_s: float
    kv_limit: int
    best_batch: int
    best_tokens_per_s: float
    batches: Any
    ttft_s: Any
    tpot_s: Any

    _units: ClassVar[dict[str, str]] = {"ttft_slo_s": "s", "tpot_slo_s": "s"}
    _hidden: ClassVar[tuple[str, ...]] = ("batches", "ttft_s", "tpot_s")

    def _title(self) -> str:
        return (
            f"{self.model} on {self.gpu}, prompt {self.prompt_len}, chunk {self.chunk}: largest "
            f"batch meeting TTFT <= {format_quantity(self.ttft_slo_s, 's')} and TPOT <= "
            f"{format_quantity(self.tpot_slo_s, 's')} is {self.best_batch}"
        )

    def table(self) -> str:
        """The sweep as text: batch, TTFT, TPOT, whether it meets the SLOs and fits."""
        rows = []
        for b, f, p in zip(self.batches, self.ttft_s, self.tpot_s, strict=True):
            ok = f <= self.ttft_slo_s and p <= self.tpot_slo_s and b <= self.kv_limit
            rows.append([str(b), format_quantity(f, "s"), format_quantity(p, "s"),
                         "yes" if ok else "no"])  # fmt: skip
        return _fmt_table(self._title(), ["batch", "TTFT", "TPOT", "meets"], rows)


def serving_slo(
    model: str | LlmSpec = "llama-2-7b",
    gpu: str | Gpu = "A100",
    *,
    prompt_len: int = 1024,
    output_len: int = 256,
    chunk: int = 512,
    ttft_slo_s: float = 0.5,
    tpot_slo_s: float = 0.05,
    precision: str = "fp16",
    tensor_parallel: int = 1,
    batches: Any = None,
) -> ServingSlo:
    """Sweep the decode batch (powers of two to 512 unless ``batches`` is given) and find the
    largest that meets both SLOs and whose sequences fit the paged KV cache."""
    spec = _spec_of(model)
    g = _gpu(gpu)
    p = check_int("prompt_len", prompt_len, allow_array=False, maximum=_MAX_LEN)
    o = check_int("output_len", output_len, allow_array=False, maximum=_MAX_LEN)
    ch = check_int("chunk", chunk, allow_array=False, maximum=1 << 20)
    f_slo = check_number("ttft_slo_s", ttft_slo_s, minimum=0.0, strict=True)
    p_slo = check_number("tpot_slo_s", tpot_slo_s, minimum=0.0, strict=True)
    bs = np.atleast_1d(check_int("batches", [2**i for i in range(10)] if batches is None
                                 else batches, maximum=_MAX_BATCH))  # fmt: skip
    if bs.ndim != 1 or bs.size > 64:
        raise InvalidParameter(f"'batches' must be a list of at most 64 sizes (got {bs.size})")
    bs = np.unique(bs)
    ctx = p + o // 2  # a running sequence is on average half-way through its output
    kv = kv_budget(spec, g, precision=precision, prompt_len=p, output_len=o,
                   tensor_parallel=tensor_parallel)  # fmt: skip
    # the steps of mixed_step(decode_batch=b) for every b, priced in two calls (cached per
    # sweep): a new prompt length reprices only the decode attention, a new chunk only the
    # linear layers
    ctx = check_int("context", ctx, allow_array=False, maximum=_MAX_LEN)
    prec = check_choice("precision", precision, PRECISIONS)
    tp = check_int("tensor_parallel", tensor_parallel, allow_array=False, maximum=1024)
    bl = tuple(int(b) for b in bs)
    lin_comm = _linear_many(spec, g, tuple(b + ch for b in bl), prec, tp)
    dec = _decode_attention_many(spec, g, bl, ctx, prec, tp)
    pre = _attention_s(spec, g, "prefill", 1, ch, prec, tp)
    tpot = np.array([lin + d + pre + comm + CUDA_GRAPH_LAUNCH_S
                     for (lin, comm), d in zip(lin_comm, dec, strict=True)])  # fmt: skip
    ttft = math.ceil(p / ch) * tpot
    ok = (ttft <= f_slo) & (tpot <= p_slo) & (bs <= kv.sequences_paged)
    best = int(bs[ok].max()) if ok.any() else 0
    best_tps = float(best / tpot[bs == best][0]) if best else 0.0
    return ServingSlo(spec.name, g.name, p, o, ch, f_slo, p_slo, kv.sequences_paged, best,
                      best_tps, bs, ttft, tpot)  # fmt: skip


# ------------------------------------------------------------------- speculative decoding


def expected_accepted_tokens(acceptance: Any, draft_len: Any) -> Any:
    """Tokens one target pass yields on average: (1 - a^(k+1)) / (1 - a), k + 1 at a = 1
    (Leviathan et al. 2023, equation 1). Exact; vectorised over both arguments.

    >>> float(expected_accepted_tokens(0.0, 4)), float(expected_accepted_tokens(1.0, 4))
    (1.0, 5.0)
    """
    a = np.asarray(_check_rate("acceptance", acceptance), dtype=np.float64)
    k = np.asarray(check_int("draft_len", draft_len, minimum=0, maximum=1 << 10), np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(a < 1.0, (1.0 - a ** (k + 1)) / np.where(a < 1.0, 1.0 - a, 1.0), k + 1)
    return float(out) if out.ndim == 0 else out


def _check_rate(name: str, value: Any) -> Any:
    arr = np.asarray(value, dtype=object)
    if arr.ndim == 0:
        return check_number(name, value, minimum=0.0, maximum=1.0)
    out = np.array([check_number(name, v, minimum=0.0, maximum=1.0) for v in arr.ravel()])
    return out.reshape(arr.shape)


def simulate_speculative(
    acceptance: float, draft_len: int, iterations: int = 100_000, seed: int = 0
) -> float:
    """Monte-Carlo mean of the tokens one target pass yields: each drafted token is accepted
    with probability ``acceptance`` until the first rejection; the target then adds one token
    of its own (the correction, or the bonus token after k acceptances)."""
    a = check_number("acceptance", acceptance, minimum=0.0, maximum=1.0)
    k = check_int("draft_len", draft_len, minimum=0, allow_array=False, maximum=1 << 10)
    n = check_int("iterations", iterations, allow_array=False, maximum=1 << 24)
    s = check_int("seed", seed, minimum=0, allow_array=False, maximum=(1 << 32) - 1)
    rng = np.random.default_rng(s)
    ok = rng.random((n, k)) < a
    # accepted drafts = length of the leading run of True in each row
    run = np.where(ok.all(axis=1), k, np.argmin(ok, axis=1)) if k else np.zeros(n)
    return float(np.mean(run + 1))


@dataclass(frozen=True)
class SpeculativeResult(ResultMixin):
    """Speculative decoding with a draft model (the model's prediction for the step times,
    Leviathan et al.'s expectation for the tokens).

    ``cost_ratio`` (c): one draft step over one target decode step. ``verify_s``: the target
    scoring ``draft_len + 1`` tokens per sequence in one pass. ``speedup``: tokens per
    second with speculation over plain decoding; below 1 it loses.
    """

    target: str
    draft: str
    gpu: str
    batch: int
    acceptance: float
    draft_len: int
    expected_tokens: float
    target_step_s: float
    draft_step_s: float
    verify_s: float
    cost_ratio: float
    iteration_s: float
    speedup: float
    best_draft_len: int
    best_speedup: float

    _units: ClassVar[dict[str, str]] = {
        "target_step_s": "s",
        "draft_step_s": "s",
        "verify_s": "s",
        "iteration_s": "s",
    }

    def _title(self) -> str:
        verdict = "wins" if self.speedup > 1 else "loses"
        return (
            f"speculative decoding {self.draft} -> {self.target} on {self.gpu} (a = "
            f"{self.acceptance:g}, k = {self.draft_len}): {self.speedup:.2f}x, {verdict}"
        )


def _decode_s(spec: LlmSpec, g: Gpu, batch: int, context: int, prec: str, tokens: int) -> float:
    """One target pass over ``tokens`` new tokens per sequence (1: a decode step; more: a
    verification, whose linear layers see batch x tokens rows)."""
    if tokens == 1:
        return mixed_step(spec, g, decode_batch=batch, context=context, chunk=0,
                          precision=prec).step_s  # fmt: skip
    # the verification reads the weights once for batch x tokens rows and each sequence's
    # cache once: the decodes of the batch plus the other drafted rows as a small chunk
    return mixed_step(spec, g, decode_batch=batch, context=context,
                      chunk=batch * (tokens - 1), precision=prec).step_s  # fmt: skip


def speculative(
    target: str | LlmSpec = "llama-2-70b",
    draft: str | LlmSpec = "llama-2-7b",
    gpu: str | Gpu = "H100",
    *,
    acceptance: float = 0.8,
    draft_len: int = 4,
    batch: int = 1,
    context: int = 1024,
    precision: str = "fp16",
) -> SpeculativeResult:
    """Price speculative decoding: k draft steps plus one verification yield
    (1 - a^(k+1)) / (1 - a) tokens; compare with as many plain target steps. Also the
    draft length (1 to 16) that maximises the speed-up."""
    t_spec, d_spec = _spec_of(target), _spec_of(draft)
    g = _gpu(gpu)
    a = check_number("acceptance", acceptance, minimum=0.0, maximum=1.0)
    k = check_int("draft_len", draft_len, allow_array=False, maximum=64)
    b = check_int("batch", batch, allow_array=False, maximum=4096)
    ctx = check_int("context", context, allow_array=False, maximum=_MAX_LEN)
    prec = check_choice("precision", precision, PRECISIONS)
    t1 = _decode_s(t_spec, g, b, ctx, prec, 1)
    td = _decode_s(d_spec, g, b, ctx, prec, 1)

    def speed(kk: int) -> tuple[float, float, float]:
        ver = _decode_s(t_spec, g, b, ctx, prec, kk + 1)
        it = kk * td + ver
        return float(expected_accepted_tokens(a, kk)) * t1 / it, ver, it

    sp, ver, it = speed(k)
    trials = {kk: speed(kk)[0] for kk in range(1, 17)}
    best_k = max(trials, key=lambda kk: trials[kk])
    return SpeculativeResult(
        target=t_spec.name,
        draft=d_spec.name,
        gpu=g.name,
        batch=b,
        acceptance=a,
        draft_len=k,
        expected_tokens=float(expected_accepted_tokens(a, k)),
        target_step_s=t1,
        draft_step_s=td,
        verify_s=ver,
        cost_ratio=td / t1,
        iteration_s=it,
        speedup=sp,
        best_draft_len=best_k,
        best_speedup=trials[best_k],
    )


# ---------------------------------------------------------------------- mixture of experts


def experts_hit(batch: Any, experts: int = 8, top_k: int = 2) -> Any:
    """Expected distinct experts a decode step of ``batch`` tokens touches in one layer, with
    uniform routing: E x (1 - (1 - k/E)^B), since one token misses a given expert with
    probability 1 - k/E (exact expectation; vectorised over ``batch``)."""
    b = np.asarray(check_int("batch", batch, maximum=1 << 24), dtype=np.float64)
    e = check_int("experts", experts, allow_array=False, maximum=1 << 12)
    k = check_int("top_k", top_k, allow_array=False, maximum=1 << 12)
    if k > e:
        raise InvalidParameter(f"'top_k' must be at most experts ({e}) (got {k})")
    out = e * (1.0 - (1.0 - k / e) ** b)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class MoeDecode(ResultMixin):
    """A mixture-of-experts model at decode time (exact counts; bytes at the weight dtype).

    ``total_params``: every weight; ``active_params``: those one token uses (attention,
    ``top_k`` experts per layer, router, embeddings, norms, head). ``experts_hit``: expected
    experts a step of ``batch`` tokens reads per layer; ``weight_bytes_per_step``: the
    weights that step streams; ``tokens_per_expert``: rows of each grouped expert GEMM;
    ``all_to_all_bytes``: what one GPU sends per layer under expert parallelism (dispatch
    and combine).
    """

    model: str
    experts: int
    top_k: int
    batch: int
    total_params: float
    active_params: float
    experts_hit: float
    weight_bytes_per_step: float
    dense_equivalent_bytes: float
    tokens_per_expert: float
    expert_parallel: int
    all_to_all_bytes: float

    _units: ClassVar[dict[str, str]] = {
        "total_params": "",
        "active_params": "",
        "weight_bytes_per_step": "B",
        "dense_equivalent_bytes": "B",
        "all_to_all_bytes": "B",
    }

    def _title(self) -> str:
        return (
            f"{self.model} decode at batch {self.batch}: {self.total_params / 1e9:.1f} B "
            f"total, {self.active_params / 1e9:.1f} B active, {self.experts_hit:.2f} of "
            f"{self.experts} experts hit per layer"
        )


def moe_decode(
    model: str | LlmSpec = MIXTRAL_8X7B,
    *,
    batch: int = 1,
    experts: int | None = None,
    top_k: int | None = None,
    weight_dtype: str = "bf16",
    expert_parallel: int = 1,
) -> MoeDecode:
    """Parameters and bytes of a MoE decode step (see :class:`MoeDecode`). A model given by
    name other than Mixtral is dense unless ``experts`` is given."""
    spec = _spec_of(model)
    ne, tk = _moe_of(spec, experts, top_k)
    b = check_int("batch", batch, allow_array=False, maximum=1 << 20)
    wb = _dtype(check_choice("weight_dtype", weight_dtype, ("fp32", "fp16", "bf16", "fp8",
                                                            "int8"))).bytes_per_element  # fmt: skip
    ep = check_int("expert_parallel", expert_parallel, allow_array=False, maximum=1024)
    if ne % ep:
        raise InvalidParameter(f"'expert_parallel' must divide experts ({ne}) (got {ep})")
    attn = sum(n * k for name, n, k in spec.linears() if name in ("qkv", "out"))
    expert = sum(n * k for name, n, k in spec.linears() if name not in ("qkv", "out"))
    router = spec.hidden * ne if ne > 1 else 0
    other = spec.params - spec.linear_params  # embeddings, LM head, norms
    total = spec.layers * (attn + ne * expert + router) + other
    active = spec.layers * (attn + tk * expert + router) + other
    hit = float(experts_hit(b, ne, tk)) if ne > 1 else 1.0
    # the input embedding is a lookup of B rows, not a stream of the table
    streamed_other = other - spec.vocab * spec.hidden
    step_bytes = wb * (spec.layers * (attn + hit * expert + router) + streamed_other)
    dense = wb * (spec.layers * (attn + ne * expert + router) + streamed_other)
    # each token's hidden vector goes to top_k experts and comes back; (ep - 1) / ep of them
    # live on other GPUs
    a2a = 2.0 * b * tk * spec.hidden * wb * (ep - 1) / ep
    return MoeDecode(spec.name, ne, tk, b, float(total), float(active), hit, step_bytes,
                     dense, b * tk / ne, ep, a2a)  # fmt: skip


# ---------------------------------------------------------------- tensor-parallel inference


@dataclass(frozen=True)
class TensorParallelRow(ResultMixin):
    """A decode step split over ``tensor_parallel`` GPUs (the model's prediction)."""

    tensor_parallel: int
    weights_bytes_per_gpu: float
    kv_bytes_per_gpu: float
    all_reduces_per_step: int
    compute_s: float
    communication_s: float
    step_s: float
    speedup: float

    _units: ClassVar[dict[str, str]] = {
        "weights_bytes_per_gpu": "iB",
        "kv_bytes_per_gpu": "iB",
        "compute_s": "s",
        "communication_s": "s",
        "step_s": "s",
    }


def tensor_parallel_inference(
    model: str | LlmSpec = "llama-2-70b",
    gpu: str | Gpu = "H100",
    *,
    batch: int = 1,
    context: int = 2048,
    precision: str = "fp16",
    degrees: Any = (1, 2, 4, 8),
) -> list[TensorParallelRow]:
    """One decode step at each tensor-parallel degree: per-GPU weights and KV, the
    all-reduces (two per layer, Megatron-LM), compute and communication time, and the
    speed-up over one GPU (whether or not one GPU could hold the model)."""
    spec = _spec_of(model)
    g = _gpu(gpu)
    b = check_int("batch", batch, allow_array=False, maximum=_MAX_BATCH)
    ctx = check_int("context", context, allow_array=False, maximum=_MAX_LEN)
    prec = check_choice("precision", precision, PRECISIONS)
    ds = np.atleast_1d(check_int("degrees", list(degrees) if isinstance(degrees, tuple)
                                 else degrees, maximum=1024))  # fmt: skip
    if ds.ndim != 1 or ds.size > 16:
        raise InvalidParameter(f"'degrees' must be a list of at most 16 sizes (got {ds.size})")
    ne, tk = _moe_of(spec, None, None)
    rows = []
    base = None
    for d in sorted({int(x) for x in ds}):
        w = workload(spec, phase="decode", batch=b, context=ctx, precision=prec,
                     tensor_parallel=d, sequence_parallel=False, experts=ne, top_k=tk)  # fmt: skip
        t = price(w, g, timing="graph")
        n_ar = sum(k.count for k in w.kernels if k.collective == "all-reduce")
        comm = t.communication_s
        step = t.step_s
        base = step if base is None and d == 1 else base
        rows.append(TensorParallelRow(d, t.memory.weights_bytes, t.memory.kv_cache_bytes,
                                      int(n_ar), t.device_time_s, comm, step, 0.0))  # fmt: skip
    ref = base if base is not None else rows[0].step_s * rows[0].tensor_parallel
    return [TensorParallelRow(**{**r.__dict__, "speedup": ref / r.step_s}) for r in rows]


# ------------------------------------------------------------------- split-KV attention


@dataclass(frozen=True)
class SplitKvResult(ResultMixin):
    """Decode attention with and without splitting the keys (FlashDecoding), by the guide's
    wave arithmetic: thread blocks fill the SMs in waves, each block streams its share of the
    cache at the SM's share of the achievable bandwidth (exact arithmetic on that model).

    ``blocks``: batch x KV heads without splitting; ``splits``: the chunks per (sequence,
    head) that fill the GPU; ``time_s`` / ``split_time_s``: predicted times, the split one
    including the reduction of the partial results.
    """

    gpu: str
    batch: int
    kv_heads: int
    context: int
    kv_bytes: float
    sms: int
    blocks: int
    waves: int
    splits: int
    split_waves: int
    time_s: float
    split_time_s: float
    speedup: float

    _units: ClassVar[dict[str, str]] = {"kv_bytes": "B", "time_s": "s", "split_time_s": "s"}

    def _title(self) -> str:
        return (
            f"decode attention on {self.gpu}, batch {self.batch} x {self.kv_heads} KV heads, "
            f"{self.context:,} keys: {self.blocks} blocks for {self.sms} SMs; split "
            f"{self.splits} ways: {self.speedup:.2f}x"
        )


def split_kv(
    model: str | LlmSpec = "llama-2-7b",
    gpu: str | Gpu = "A100",
    *,
    batch: int = 1,
    context: int = 32768,
    kv_dtype: str = "fp16",
    tensor_parallel: int = 1,
) -> SplitKvResult:
    """Time of one layer's decode attention with one thread block per (sequence, KV head) and
    with the keys split so that every SM has work (see :class:`SplitKvResult`)."""
    spec = _spec_of(model)
    g = _gpu(gpu)
    b = check_int("batch", batch, allow_array=False, maximum=_MAX_BATCH)
    ctx = check_int("context", context, allow_array=False, maximum=_MAX_LEN)
    tp = check_int("tensor_parallel", tensor_parallel, allow_array=False, maximum=1024)
    kvd = check_choice("kv_dtype", kv_dtype, ("fp16", "bf16", "fp8", "int8"))
    from .calibration import achievable

    kvh = max(1, spec.kv_heads // tp)
    per_layer = _kv_bytes_per_token(spec, kvd, tp) / spec.layers * ctx * b
    cal = achievable(g, "fp16")
    sm_bw = g.memory_bandwidth_bytes_per_s * cal.memory_fraction / g.sms
    blocks = b * kvh
    waves = -(-blocks // g.sms)
    t = cal.kernel_overhead_s + waves * (per_layer / blocks) / sm_bw

    def split_time(n: int) -> tuple[float, int]:
        sb = blocks * n
        sw = -(-sb // g.sms)
        if n == 1:
            return cal.kernel_overhead_s + sw * (per_layer / sb) / sm_bw, sw
        # the reduction: a second small kernel reads each split's partial output (head dim
        # values and a log-sum-exp per query head, in FP32) and writes the result
        part = 4.0 * b * spec.heads / tp * (spec.head_dim + 1) * n
        red = cal.kernel_overhead_s + part / (g.memory_bandwidth_bytes_per_s
                                              * cal.memory_fraction)  # fmt: skip
        return cal.kernel_overhead_s + sw * (per_layer / sb) / sm_bw + red, sw

    # FlashDecoding's chunks hold at least 256 keys; the kernel picks the split count that
    # is fastest (here: by the same wave arithmetic)
    options = range(1, max(1, min(128, ctx // 256)) + 1)
    splits = min(options, key=lambda n: split_time(n)[0])
    ts, swaves = split_time(splits)
    return SplitKvResult(g.name, b, kvh, ctx, per_layer, g.sms, blocks, waves, splits, swaves,
                         t, ts, t / ts)  # fmt: skip


# --------------------------------------------------------------------------------- energy


def board_power_w(gpu: str | Gpu = "A100") -> float:
    """The board power limit of ``gpu`` in W (the ``tdp_w`` column of ``data/gpus.csv``,
    with its datasheet source there)."""
    g = _gpu(gpu)
    if not g.tdp_w:
        raise InvalidParameter(f"'gpu' must be a GPU with a known board power (got {g.name!r})")
    return float(g.tdp_w)


@dataclass(frozen=True)
class EnergyResult(ResultMixin):
    """Joules per generated token at each batch: board power x step time / tokens (the
    model's step time; the power is the board limit unless ``power_w`` was given, so the
    energy is an upper bound for a board that draws less)."""

    model: str
    gpu: str
    gpus: int
    power_w: float
    batches: Any
    step_s: Any
    tokens_per_s: Any
    joules_per_token: Any

    _units: ClassVar[dict[str, str]] = {"power_w": "W"}
    _hidden: ClassVar[tuple[str, ...]] = ("batches", "step_s", "tokens_per_s", "joules_per_token")

    def _title(self) -> str:
        return (
            f"{self.model} decode on {self.gpus} x {self.gpu} at {self.power_w:g} W each: "
            f"{self.joules_per_token[0]:.3g} J/token at batch {self.batches[0]}, "
            f"{self.joules_per_token[-1]:.3g} at batch {self.batches[-1]}"
        )

    def table(self) -> str:
        rows = [[str(b), format_quantity(s, "s"), f"{t:,.0f}", f"{j:.3g}"]
                for b, s, t, j in zip(self.batches, self.step_s, self.tokens_per_s,
                                      self.joules_per_token, strict=True)]  # fmt: skip
        return _fmt_table(self._title(), ["batch", "step", "tokens/s", "J/token"], rows)


def energy_per_token(
    model: str | LlmSpec = "llama-2-7b",
    gpu: str | Gpu = "A100",
    *,
    batches: Any = (1, 8, 64),
    context: int = 1024,
    precision: str = "fp16",
    tensor_parallel: int = 1,
    power_w: float | None = None,
) -> EnergyResult:
    """Energy per decoded token as the batch grows: every GPU of the tensor-parallel group
    draws ``power_w`` (default: its board limit) for one step, which yields ``batch`` tokens."""
    spec = _spec_of(model)
    g = _gpu(gpu)
    bs = np.atleast_1d(check_int("batches", list(batches) if isinstance(batches, tuple)
                                 else batches, maximum=_MAX_BATCH))  # fmt: skip
    if bs.ndim != 1 or bs.size > 64:
        raise InvalidParameter(f"'batches' must be a list of at most 64 sizes (got {bs.size})")
    ctx = check_int("context", context, allow_array=False, maximum=_MAX_LEN)
    prec = check_choice("precision", precision, PRECISIONS)
    tp = check_int("tensor_parallel", tensor_parallel, allow_array=False, maximum=1024)
    pw = board_power_w(g) if power_w is None else check_number("power_w", power_w,
                                                               minimum=0.0, strict=True)  # fmt: skip
    ne, tk = _moe_of(spec, None, None)
    steps = np.array([price(workload(spec, phase="decode", batch=int(b), context=ctx,
                                     precision=prec, tensor_parallel=tp, experts=ne,
                                     top_k=tk), g, timing="graph").step_s
                      for b in bs])  # fmt: skip
    tps = bs / steps
    return EnergyResult(spec.name, g.name, tp, pw, bs, steps, tps, pw * tp / tps)
