"""Kernel fusion, attention's memory traffic and the launch-bound regime.

Three models that go past the guides, each built on the kit's own time model (memory-bound
kernels priced by :func:`~dlperf_widgets.core.memlimited.memory_pass`, GEMMs by
:func:`~dlperf_widgets.core.gemm.gemm`):

- **Fusion of a chain of element-wise and normalisation ops.** Run op by op, every kernel
  reads its input from DRAM and writes its output back; fused into one kernel, the chain
  reads its external inputs once and writes its final output once, and the intermediate
  tensors never leave the chip. The per-op costs (operations, tensors read and written)
  are those of :mod:`~dlperf_widgets.core.memlimited`.
- **Attention, standard vs FlashAttention** (Dao et al., "FlashAttention: Fast and
  Memory-Efficient Exact Attention with IO-Awareness", NeurIPS 2022). The standard
  algorithm (the paper's Algorithm 0) writes the N x N score matrix S to HBM, reads it for
  the softmax, writes P, and reads P again for P V: 4 N d + 4 N^2 elements per head. The
  tiled algorithm (Algorithm 1) streams K and V once in blocks of B_c = ceil(M / 4d) rows
  and, for each of the T_c = ceil(N / B_c) blocks, reads and writes the output and its
  softmax statistics: Theta(N^2 d^2 / M) accesses for an SRAM of M elements (Theorem 2).
- **Launch overhead.** Each kernel launched from the host costs a fixed time; when a
  kernel's work is shorter than that, the GPU waits for the host (the launch-bound regime).
  A CUDA graph submits a whole sequence with one launch (CUDA Programming Guide, "CUDA
  Graphs"); fusion removes kernels altogether.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from . import assumptions
from ._validate import (
    as_floats,
    check_bool,
    check_choice,
    check_int,
    check_number,
    check_product,
    describe,
)
from .dtypes import Dtype
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gemm import GemmResult, gemm, ideal_time_s
from .gpus import Gpu
from .gpus import gpu as _gpu
from .memlimited import ELEMENTWISE_OPS, NORMALIZATION_OPS, PassResult, memory_pass
from .results import ResultMixin
from .workload import attention_parallel_share, fused_attention_time_s

__all__ = [
    "CHAINS",
    "FLASH_LOOPS",
    "FLASH_PAPER_GPT2_MEDIUM",
    "FUSABLE_OPS",
    "GRAPH_NODE_S",
    "AttentionResult",
    "FusionResult",
    "LaunchResult",
    "attention",
    "attention_traffic",
    "flash_attention_backward_elements",
    "flash_attention_elements",
    "fusion_chain",
    "launch_overhead",
    "parse_chain",
    "standard_attention_backward_elements",
    "standard_attention_elements",
]

# Row-wise normalisations fuse with their neighbours when a row fits on chip (the persistent
# variant of core.memlimited); batch norm needs a reduction over the whole batch first.
_FUSABLE_NORMS = ("layernorm", "softmax")
FUSABLE_OPS: tuple[str, ...] = (*ELEMENTWISE_OPS, *_FUSABLE_NORMS)

# Chains a transformer block runs between its GEMMs (forward). Each reads a tensor the
# preceding GEMM wrote; 'add'/'residual' read one more tensor of the same size.
CHAINS: dict[str, tuple[str, ...]] = {
    "MLP epilogue: bias, GELU": ("bias", "gelu"),
    "attention scores: scale, softmax, dropout": ("scale", "softmax", "dropout"),
    "after attention: bias, dropout, residual, LayerNorm": (
        "bias",
        "dropout",
        "residual",
        "layernorm",
    ),
    "SwiGLU gate: sigmoid, scale, multiply": ("sigmoid", "scale", "add"),
}

# In a CUDA graph the host launches the whole graph once; each kernel still starts on the
# device. The CUDA.jl documentation ("Graphs") measures 80 small broadcast kernels at 260 us
# launched one by one and 70 us as one graph: under 1 us per kernel, its work included.
GRAPH_NODE_S = 1e-6


def _launch_overhead_s() -> float:
    """Host time to launch one kernel from eager code (core.assumptions: a different constant
    from the device-side fixed cost inside every kernel, data/achievable.csv)."""
    return assumptions.HOST_LAUNCH_OVERHEAD_S


def _graph_launch_s(launch_overhead_s: float) -> float:
    """Host time to launch one captured CUDA graph: core.assumptions.CUDA_GRAPH_LAUNCH_S, the
    constant core.workload's 'back-to-back' steps pay, but never more than one eager launch
    on the same host (a graph launch is one driver call without the framework's dispatch
    that an eager launch also pays: core.assumptions)."""
    return min(assumptions.CUDA_GRAPH_LAUNCH_S, launch_overhead_s)


def _fusable(op: str) -> tuple[float, float, float, float]:
    """(flops, reads, writes, extra bytes) per element of the forward pass of ``op``."""
    if op in ELEMENTWISE_OPS:
        c = ELEMENTWISE_OPS[op].forward
        return c.flops, c.reads, c.writes, c.extra_bytes
    norm = NORMALIZATION_OPS[op]
    return norm.forward_flops, 1.0, 1.0, 0.0  # persistent: one read, one write


MAX_CHAIN_OPS = 256
"""Most operations a chain may list: far more than any fused kernel holds (a transformer
block's element-wise tail is 4 or 5), and few enough that the widget redraws at once."""


def parse_chain(ops: str | Sequence[str]) -> tuple[str, ...]:
    """``'bias, gelu'``, a list of names or the name of a preset in :data:`CHAINS`."""
    rule = f"a list of at most {MAX_CHAIN_OPS} operations"
    # sized before it is split: a 140 KB line is refused without building 20,000 names
    if isinstance(ops, str) and len(ops) > MAX_CHAIN_OPS * 24:
        raise InvalidParameter(f"'ops' must be {rule} (got {len(ops):,} characters)")
    if isinstance(ops, (list, tuple)) and len(ops) > MAX_CHAIN_OPS:
        raise InvalidParameter(f"'ops' must be {rule} (got {len(ops):,} operations)")
    if isinstance(ops, str):
        if ops in CHAINS:
            return CHAINS[ops]
        names = [p.strip().lower() for p in ops.replace(";", ",").split(",") if p.strip()]
    elif isinstance(ops, (list, tuple)):
        names = [str(p).strip().lower() for p in ops]
    else:
        raise InvalidParameter(
            f"'ops' must be a comma-separated list of operations such as 'bias, gelu' (got {describe(ops)})"
        )
    if not names:
        raise InvalidParameter(f"'ops' must name at least one operation (got {describe(ops)})")
    if len(names) > MAX_CHAIN_OPS:
        raise InvalidParameter(f"'ops' must be {rule} (got {len(names):,} operations)")
    for n in names:
        if n not in FUSABLE_OPS:
            raise InvalidParameter(
                f"'ops' must list operations among {', '.join(FUSABLE_OPS)} (got {describe(n)})"
            )
    return tuple(names)


@dataclass(frozen=True)
class LaunchResult(ResultMixin):
    """A sequence of kernels launched one by one from the host, or as one CUDA graph.

    ``work_time_s`` is the sum of the kernels' device times (what a profiler reports for
    each kernel: its work and the device-side fixed cost; no host launch cost). Launched one
    by one the host submits a kernel every ``launch_overhead_s`` at best, so each kernel
    takes max(its device time, the launch overhead): ``eager_time_s``. As a graph the host
    launches once (core.assumptions.CUDA_GRAPH_LAUNCH_S, at most one eager launch) and each
    kernel costs its device time, but at least :data:`GRAPH_NODE_S`: ``graph_time_s``, never
    less than the kernels' own time. ``launch_bound`` says whether
    the host, not the GPU, sets the pace eagerly.
    """

    kernels: int
    launch_overhead_s: float
    work_time_s: float
    eager_time_s: float
    graph_time_s: float
    gpu_idle_fraction: float
    launch_bound: bool

    _units: ClassVar[dict[str, str]] = {
        "launch_overhead_s": "s",
        "work_time_s": "s",
        "eager_time_s": "s",
        "graph_time_s": "s",
    }

    def _title(self) -> str:
        return f"{self.kernels} kernel launch(es)"


MAX_KERNEL_S = 1e6
"""Longest kernel time or launch overhead accepted (a million seconds, 11.6 days): far beyond
any real kernel, and small enough that sums over a step stay finite."""


def launch_overhead(kernel_times_s: Any, *, launch_overhead_s: float | None = None) -> LaunchResult:
    """Eager vs graph time of kernels with the given device times (seconds, one per kernel).

    >>> r = launch_overhead([1e-6] * 10, launch_overhead_s=5e-6)
    >>> round(r.eager_time_s * 1e6), round(r.graph_time_s * 1e6), r.launch_bound
    (50, 15, True)
    """
    rule = f"a non-empty list of non-negative times of at most {MAX_KERNEL_S:g} s"
    t = np.atleast_1d(as_floats("kernel_times_s", kernel_times_s, rule))
    if t.ndim != 1 or not np.all(np.isfinite(t)) or np.any(t < 0) or np.any(t > MAX_KERNEL_S):
        raise InvalidParameter(f"'kernel_times_s' must be {rule} (got {describe(kernel_times_s)})")
    over = (
        _launch_overhead_s()
        if launch_overhead_s is None
        else check_number("launch_overhead_s", launch_overhead_s, minimum=0, maximum=MAX_KERNEL_S)
    )
    work = float(t.sum())
    eager = float(np.maximum(t, over).sum())
    graph = _graph_launch_s(over) + float(np.maximum(t, GRAPH_NODE_S).sum())
    return LaunchResult(
        kernels=int(t.size),
        launch_overhead_s=over,
        work_time_s=work,
        eager_time_s=eager,
        graph_time_s=graph,
        gpu_idle_fraction=1.0 - work / eager if eager > 0 else 0.0,
        launch_bound=bool(t.size * over > work),
    )


@dataclass(frozen=True)
class FusionResult(ResultMixin):
    """A chain of memory-bound ops run as separate kernels vs fused into one.

    ``bytes_*`` count DRAM traffic (the kit's convention of core.memlimited);
    ``ideal_time_*_s`` is that traffic over the datasheet bandwidth (the guide's ideal);
    ``time_*_s`` is the model's prediction (the kernels' device times); ``eager_time_*_s``
    takes each kernel's device time or the host's launch overhead, whichever is longer
    (:class:`LaunchResult`), so it is never below ``time_*_s``. ``passes`` are the unfused kernels, ``fused`` the one kernel.
    """

    ops: tuple[str, ...]
    elements: int
    dtype: str
    gpu: str
    kernels_unfused: int
    kernels_fused: int
    flops: float
    bytes_unfused: float
    bytes_fused: float
    bytes_saved_fraction: float
    ideal_time_unfused_s: float
    ideal_time_fused_s: float
    time_unfused_s: float
    time_fused_s: float
    eager_time_unfused_s: float
    eager_time_fused_s: float
    speedup: float
    passes: tuple[PassResult, ...]
    fused: PassResult

    _units: ClassVar[dict[str, str]] = {
        "flops": "FLOP",
        "bytes_unfused": "B",
        "bytes_fused": "B",
        "ideal_time_unfused_s": "s",
        "ideal_time_fused_s": "s",
        "time_unfused_s": "s",
        "time_fused_s": "s",
        "eager_time_unfused_s": "s",
        "eager_time_fused_s": "s",
    }
    _hidden: ClassVar[tuple[str, ...]] = ("fused",)

    def _title(self) -> str:
        return f"fusing {' -> '.join(self.ops)} on {self.gpu} ({self.dtype})"

    @property
    def launch_unfused(self) -> LaunchResult:
        """The unfused kernels launched one by one or as a CUDA graph (their device times:
        work and fixed cost, so neither ever comes out below ``time_unfused_s``)."""
        return launch_overhead([p.predicted_time_s for p in self.passes])


def fusion_chain(
    ops: str | Sequence[str],
    *,
    elements: int,
    dtype: str | Dtype = "fp16",
    gpu: str | Gpu = "A100",
) -> FusionResult:
    """Bytes, kernels and time of a forward chain of ops on ``elements`` values, unfused vs fused.

    >>> r = fusion_chain("bias, gelu", elements=2**24, dtype="fp16", gpu="A100")
    >>> r.bytes_unfused / r.bytes_fused
    2.0
    """
    chain = parse_chain(ops)
    n = check_int("elements", elements, allow_array=False, maximum=1 << 40)
    d = _dtype(dtype)
    g = _gpu(gpu)
    b = d.bytes_per_element
    passes = []
    external_reads = 0.0
    extra = 0.0
    flops = 0.0
    for i, op in enumerate(chain):
        f, reads, writes, xb = _fusable(op)
        cls = "elementwise" if op in ELEMENTWISE_OPS else "statistical_normalization"
        passes.append(memory_pass(op, "forward", cls, n * f, n * ((reads + writes) * b + xb), g, d))
        # Fused: the first op reads its inputs from DRAM; later ops get one input on chip and
        # read only the others (the residual); side outputs (a dropout mask) are still written.
        external_reads += reads if i == 0 else reads - 1
        extra += xb
        flops += n * f
    fused_bytes = n * ((external_reads + 1) * b + extra)
    fused = memory_pass("+".join(chain), "forward", "elementwise", flops, fused_bytes, g, d)
    t_unfused = sum(p.predicted_time_s for p in passes)
    eager_unfused = launch_overhead([p.predicted_time_s for p in passes]).eager_time_s
    eager_fused = launch_overhead([fused.predicted_time_s]).eager_time_s
    bytes_unfused = sum(p.bytes for p in passes)
    return FusionResult(
        ops=chain,
        elements=n,
        dtype=d.name,
        gpu=g.name,
        kernels_unfused=len(passes),
        kernels_fused=1,
        flops=flops,
        bytes_unfused=bytes_unfused,
        bytes_fused=fused_bytes,
        bytes_saved_fraction=1.0 - fused_bytes / bytes_unfused,
        ideal_time_unfused_s=sum(_ideal_time_s(g, d, 0.0, p.bytes) for p in passes),
        ideal_time_fused_s=_ideal_time_s(g, d, 0.0, fused_bytes),
        time_unfused_s=t_unfused,
        time_fused_s=fused.predicted_time_s,
        eager_time_unfused_s=eager_unfused,
        eager_time_fused_s=eager_fused,
        speedup=t_unfused / fused.predicted_time_s,
        passes=tuple(passes),
        fused=fused,
    )


# -- attention --------------------------------------------------------------------------


def standard_attention_elements(n: Any, d: Any) -> Any:
    """HBM elements read and written by standard attention for one head: 4 N d + 4 N^2.

    Algorithm 0 of Dao et al. 2022: read Q, K, write S; read S, write P; read P, V, write O.
    """
    n = np.asarray(check_int("n", n), dtype=np.float64)
    d = np.asarray(check_int("d", d), dtype=np.float64)
    out = 4 * n * d + 4 * n * n
    return float(out) if out.ndim == 0 else out


def flash_block_sizes(n: int, d: int, sram_elements: int) -> tuple[int, int, int, int]:
    """(B_c, B_r, T_c, T_r) of FlashAttention's Algorithm 1 for an SRAM of M elements."""
    n = check_int("n", n, allow_array=False)
    d = check_int("d", d, allow_array=False)
    sram_elements = check_int("sram_elements", sram_elements, allow_array=False)
    bc = -(-sram_elements // (4 * d))  # ceil in exact integers
    br = min(bc, d)
    return bc, br, -(-n // bc), -(-n // br)


FLASH_LOOPS = ("fa1", "fa2")


def flash_attention_elements(
    n: int, d: int, sram_elements: int, loop: str = "fa1"
) -> tuple[float, float]:
    """(elements of Q, K, V, O moved, elements of the softmax statistics moved), forward.

    ``loop='fa1'``: Algorithm 1 of Dao et al. 2022 as written. K and V are loaded once
    (2 N d); the outer loop runs over the T_c blocks of K and V, and for each of them every
    block of Q and O is read and O written back (3 N d), with the row statistics l and m
    read and written (4 N).

    ``loop='fa2'``: FlashAttention-2's loop order (Dao 2023, Algorithm 1): the outer loop
    runs over the blocks of Q, each loaded once with its output written once (2 N d) and
    one log-sum-exp per row written (N); for each block of Q every block of K and V is
    loaded, T_r x 2 N d. Here both blocks hold B = ceil(M / 4d) rows (Q_i, O_i, K_j and V_j
    share the SRAM), the Algorithm 1 budget; T_r = ceil(N / B). Neither count credits a
    cache: every re-read comes from HBM, the paper's worst case.
    """
    loop = check_choice("loop", loop, FLASH_LOOPS)
    bc, _, tc, _ = flash_block_sizes(n, d, sram_elements)
    n, d = check_int("n", n, allow_array=False), check_int("d", d, allow_array=False)
    if loop == "fa2":
        tr = -(-n // bc)  # ceil in exact integers
        return 2.0 * n * d + tr * 2.0 * n * d, float(n)
    return 2.0 * n * d + tc * 3.0 * n * d, tc * 4.0 * n


def standard_attention_backward_elements(n: Any, d: Any) -> Any:
    """HBM elements read and written by standard attention's backward pass, one head.

    Algorithm 3 of Dao et al. 2022 (appendix B): read P, dO, write dV (N^2 + 2 N d); read
    dO, V, write dP (2 N d + N^2); read P, dP, write dS (3 N^2); read dS, K, write dQ and
    read dS, Q, write dK (2 N^2 + 4 N d): 7 N^2 + 8 N d.
    """
    n = np.asarray(n, dtype=np.float64)
    d = np.asarray(d, dtype=np.float64)
    out = 7 * n * n + 8 * n * d
    return float(out) if out.ndim == 0 else out


def flash_attention_backward_elements(n: int, d: int, sram_elements: int) -> tuple[float, float]:
    """(elements of Q, K, V, O, dO and the gradients moved, statistics moved), backward.

    Algorithm 4 of Dao et al. 2022 (appendix B.4) as written: dQ, dK, dV initialised to
    zero in HBM (3 N d); K_j and V_j loaded once (2 N d) and dK_j, dV_j written once (2 N d);
    for each of the T_c blocks of K and V, every block of Q, O, dO and dQ loaded and dQ
    written back (5 N d), with l and m loaded (2 N).
    """
    _, _, tc, _ = flash_block_sizes(n, d, sram_elements)
    n, d = check_int("n", n, allow_array=False), check_int("d", d, allow_array=False)
    return 7.0 * n * d + tc * 5.0 * n * d, tc * 2.0 * n


# The softmax statistics are kept in FP32 whatever the input dtype (as FlashAttention does).
_STAT_BYTES = 4


@dataclass(frozen=True)
class AttentionResult(ResultMixin):
    """Attention of ``batch`` x ``heads`` heads of length ``seq_len`` and size ``head_dim``.

    ``bytes_*``: HBM traffic of the forward pass; ``saved_bytes_*``: what the forward pass
    keeps for the backward pass besides Q, K, V (the N x N probabilities for the standard
    algorithm; the output and FP32 log-sum-exp for FlashAttention, which recomputes P).
    Times are the model's predictions: the standard algorithm as two batched GEMMs and a
    softmax pass; FlashAttention as one kernel doing the GEMMs' FLOPs at FlashAttention-1's
    calibrated share of the peak (core.workload.fused_attention_time_s) on the traffic above.
    ``flash_sm_share``: the share of the GPU's SMs that kernel keeps busy: it runs one thread
    block per (sequence, head), so batch x heads below the SM count leaves SMs idle, the
    limit FlashAttention-2 removed by splitting the sequence across blocks too.
    """

    seq_len: int
    head_dim: int
    heads: int
    batch: int
    dtype: str
    gpu: str
    sram_bytes: int
    block_cols: int
    block_rows: int
    flops: float
    bytes_standard: float
    bytes_flash: float
    traffic_ratio: float
    saved_bytes_standard: float
    saved_bytes_flash: float
    ideal_time_standard_s: float
    ideal_time_flash_s: float
    time_standard_s: float
    time_flash_s: float
    speedup: float
    flash_sm_share: float
    scores: GemmResult
    softmax: PassResult
    context: GemmResult

    _units: ClassVar[dict[str, str]] = {
        "sram_bytes": "iB",
        "flops": "FLOP",
        "bytes_standard": "B",
        "bytes_flash": "B",
        "saved_bytes_standard": "iB",
        "saved_bytes_flash": "iB",
        "ideal_time_standard_s": "s",
        "ideal_time_flash_s": "s",
        "time_standard_s": "s",
        "time_flash_s": "s",
    }
    _hidden: ClassVar[tuple[str, ...]] = ("scores", "softmax", "context")

    def _title(self) -> str:
        return (
            f"attention N={self.seq_len}, d={self.head_dim}, {self.batch}x{self.heads} heads "
            f"on {self.gpu} ({self.dtype})"
        )

    @property
    def arithmetic_intensity_flash(self) -> float:
        return self.flops / self.bytes_flash

    @property
    def arithmetic_intensity_standard(self) -> float:
        return self.flops / self.bytes_standard


def _ideal_time_s(g: Gpu, d: Dtype, flops: float, nbytes: float) -> float:
    """The guide's ideal: max(FLOPs / datasheet peak, bytes / datasheet bandwidth)."""
    return float(ideal_time_s(flops, nbytes, g, d))


def attention(
    seq_len: int,
    *,
    head_dim: int = 64,
    heads: int = 16,
    batch: int = 1,
    dtype: str | Dtype = "fp16",
    gpu: str | Gpu = "A100",
    sram_bytes: int | None = None,
) -> AttentionResult:
    """Forward attention, standard vs FlashAttention: HBM bytes, saved memory, time.

    ``sram_bytes`` is the on-chip memory one thread block tiles into (default: 100 KiB, the
    order the paper assumes: "M around 100KB"; an A100 SM has 192 KiB of SRAM).
    """
    n = check_int("seq_len", seq_len, allow_array=False, maximum=1 << 20)
    hd = check_int("head_dim", head_dim, allow_array=False, maximum=1024)
    h = check_int("heads", heads, allow_array=False, maximum=4096)
    bt = check_int("batch", batch, allow_array=False, maximum=1 << 16)
    sram = 100 * 1024 if sram_bytes is None else sram_bytes
    sram = check_int("sram_bytes", sram, allow_array=False, maximum=1 << 30)
    # the scores GEMM multiplies all of them: its cap, named in attention's own terms
    check_product(("seq_len", "seq_len", "head_dim", "heads", "batch"), (n, n, hd, h, bt))
    d = _dtype(dtype)
    g = _gpu(gpu)
    b = d.bytes_per_element
    m_elems = int(sram // b)
    if m_elems < 4 * hd:
        raise InvalidParameter(
            f"'sram_bytes' must hold at least 4 x head_dim elements ({4 * hd * b:g} B) (got {sram})"
        )
    bh = bt * h
    scores = gemm(n, n, hd, dtype=d.name, gpu=g, batch=bh)  # S = Q K^T
    softmax = memory_pass(
        "softmax",
        "forward",
        "statistical_normalization",
        5.0 * n * n * bh,
        2.0 * n * n * bh * b,
        g,
        d,
    )
    context = gemm(n, hd, n, dtype=d.name, gpu=g, batch=bh)  # O = P V
    bytes_standard = scores.bytes + softmax.bytes + context.bytes
    qkvo, stats = flash_attention_elements(n, hd, m_elems)
    bytes_flash = bh * (qkvo * b + stats * _STAT_BYTES)
    bc, br, _, _ = flash_block_sizes(n, hd, m_elems)
    time_standard = scores.predicted_time_s + softmax.predicted_time_s + context.predicted_time_s
    # FlashAttention (this function follows its first paper's Algorithm 1): its FLOPs at the
    # calibrated share of the peak a FlashAttention-1 kernel sustains per busy SM, on the
    # traffic above; its grid has one block per (sequence, head), bh of them
    time_flash = fused_attention_time_s(
        scores.flops + context.flops,
        bytes_flash,
        g,
        impl="flash1",
        dtype=d.name,
        units=bh,
        keys=n,
    )
    return AttentionResult(
        seq_len=n,
        head_dim=hd,
        heads=h,
        batch=bt,
        dtype=d.name,
        gpu=g.name,
        sram_bytes=sram,
        block_cols=bc,
        block_rows=br,
        flops=scores.flops + context.flops,
        bytes_standard=bytes_standard,
        bytes_flash=bytes_flash,
        traffic_ratio=bytes_standard / bytes_flash,
        saved_bytes_standard=float(bh * n * n * b),
        saved_bytes_flash=float(bh * (n * hd * b + n * _STAT_BYTES)),
        ideal_time_standard_s=_ideal_time_s(g, d, scores.flops, scores.bytes)
        + _ideal_time_s(g, d, 0.0, softmax.bytes)
        + _ideal_time_s(g, d, context.flops, context.bytes),
        ideal_time_flash_s=_ideal_time_s(g, d, scores.flops + context.flops, bytes_flash),
        time_standard_s=time_standard,
        time_flash_s=time_flash,
        speedup=time_standard / time_flash,
        flash_sm_share=attention_parallel_share("flash1", bh, g),
        scores=scores,
        softmax=softmax,
        context=context,
    )


# A published measurement, not a model output: Dao et al. 2022, Figure 2 (left), standard
# attention vs FlashAttention for GPT-2 medium (sequence 1024, head dimension 64, 16 heads,
# batch 64) on an A100, forward plus backward: GFLOPs, HBM reads and writes, runtime.
FLASH_PAPER_GPT2_MEDIUM: dict[str, Any] = {
    "source": "Dao et al. 2022, FlashAttention, Figure 2 (left); A100, forward + backward",
    "seq_len": 1024,
    "head_dim": 64,
    "heads": 16,
    "batch": 64,
    "gflops_standard": 66.6,
    "gflops_flash": 75.2,
    "hbm_gb_standard": 40.3,
    "hbm_gb_flash": 4.4,
    "runtime_ms_standard": 41.7,
    "runtime_ms_flash": 7.3,
}


def attention_traffic(
    seq_len: Any,
    *,
    head_dim: int = 64,
    heads: int = 16,
    batch: int = 1,
    dtype: str | Dtype = "fp16",
    sram_bytes: int | None = None,
    loop: str = "fa1",
    backward: bool = False,
) -> tuple[Any, Any]:
    """(standard, FlashAttention) HBM bytes of attention, counted as the papers write it.

    Forward only, or forward plus backward (``backward=True``: Algorithms 0 + 3 and 1 + 4 of
    Dao et al. 2022; the backward count is FlashAttention-1's, so it needs ``loop='fa1'``).
    ``seq_len`` may be an array. Statistics are FP32; no cache is credited (the paper's
    worst case), so a real kernel, whose re-reads partly hit L2, moves less.
    """
    checked = check_int("seq_len", seq_len, maximum=1 << 20)
    ns = [int(v) for v in np.atleast_1d(checked)]
    if len(ns) > 4096:
        raise InvalidParameter(f"'seq_len' must list at most 4096 lengths (got {len(ns)})")
    hd = check_int("head_dim", head_dim, allow_array=False, maximum=1024)
    bh = check_int("heads", heads, allow_array=False, maximum=4096) * check_int(
        "batch", batch, allow_array=False, maximum=1 << 16
    )
    loop = check_choice("loop", loop, FLASH_LOOPS)
    backward = check_bool("backward", backward)
    if backward and loop != "fa1":
        raise InvalidParameter(
            f"'loop' must be fa1 when backward=True (the counted backward is Algorithm 4) "
            f"(got {describe(loop)})"
        )
    b = _dtype(dtype).bytes_per_element
    sram = 100 * 1024 if sram_bytes is None else sram_bytes
    sram = check_int("sram_bytes", sram, allow_array=False, maximum=1 << 30)
    m_elems = int(sram // b)
    if m_elems < 4 * hd:
        raise InvalidParameter(
            f"'sram_bytes' must hold at least 4 x head_dim elements ({4 * hd * b:g} B) (got {sram})"
        )
    std, fl = [], []
    for n in ns:
        big, stats = flash_attention_elements(n, hd, m_elems, loop)
        s_el = standard_attention_elements(n, hd)
        if backward:
            big_b, stats_b = flash_attention_backward_elements(n, hd, m_elems)
            big, stats = big + big_b, stats + stats_b
            s_el += standard_attention_backward_elements(n, hd)
        std.append(bh * s_el * b)
        fl.append(bh * (big * b + stats * _STAT_BYTES))
    if np.ndim(checked) == 0:
        return std[0], fl[0]
    return np.array(std), np.array(fl)
