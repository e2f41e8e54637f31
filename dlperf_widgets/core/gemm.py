"""GEMM cost, roofline bounds and predicted time (vectorised core).

C = alpha * A @ B + beta * C with A: M x K, B: K x N, C: M x N.

- FLOPs = 2 * M * N * K per GEMM: M*N*K fused multiply-adds, each a multiply and an add
  (NVIDIA slides "NN Performance optimization", "Math and Memory bounds").
- Bytes = (M*K + K*N + M*N) * element size: A and B read once, C written once; C is read
  too when beta != 0. Arithmetic intensity = FLOPs / bytes (same slide: 124.1 FLOPS/B for
  8192 x 128 x 8192 in FP16, 2730 for 8192^3).
- Limiter: the guide's three steps ("How to find a problem?"): enough parallelism? then
  math if arithmetic intensity > the GPU's ops:byte ratio, else memory.
- Ideal time (``roofline_time_s``, the guide's arithmetic) = max(FLOPs / datasheet peak,
  bytes / datasheet bandwidth).
- Predicted time (``predicted_time_s``, what a real GPU is expected to take) = the kernel's
  fixed cost + overlap(math time, memory time) (:mod:`dlperf_widgets.core.calibration`).
  Math time runs at the achievable fraction of the peak scaled by tile (quantization)
  efficiency x wave efficiency x tile-shape efficiency x alignment efficiency; memory time
  moves the bytes above at the achievable fraction of the DRAM bandwidth. When the output
  has too few tiles to fill the GPU, split-K is considered: K is cut into S slices, S x more
  thread blocks run, and the FP32 partial sums add traffic. A thin output (M or N of a few
  elements) may instead run a matrix-vector kernel that streams the large operand.
- The calibrated constants are data (``data/achievable.csv``); the choices of form no guide
  publishes are in :mod:`dlperf_widgets.core.assumptions`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ._validate import (
    as_floats,
    check_bool,
    check_choice,
    check_int,
    check_number,
    check_product,
    describe,
    is_array,
)
from .alignment import LIBRARIES, Finding, alignment_findings, legacy_required_multiple
from .assumptions import (
    CACHE_STATES,
    DEFAULT_CACHE,
    DEFAULT_CONTEXT,
    L2_USABLE_FRACTION,
    LATENCY_SPLIT_K_DEPTH,
    LATENCY_TILE,
    MISALIGNED_EFFICIENCY,
    QUANT_BLOCK_WAVE_S,
    QUANT_BLOCKS_PER_SM,
    QUANT_KERNEL_FIXED_SHARE,
    QUANT_SCHEMES,
    SIMT_TILE_REUSE_R0,
    SPLIT_K_ACCUMULATOR_BYTES,
    SPLIT_K_FACTORS,
    THIN_OUTPUT_MAX,
    THIN_OUTPUT_PAD,
    THIN_TILE,
    TILE_REUSE_R0,
    TIMING_CONTEXT_DESCRIPTIONS,
)
from .calibration import achievable, check_context, overlap_time, power_limited_math_time
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gpus import Gpu
from .gpus import gpu as _gpu
from .results import ResultMixin, format_quantity
from .tiles import (
    BATCHED_SIMT_TILES,
    SIMT_TILE_SHAPES,
    TILE_SHAPES,
    parse_tile,
    tile_efficiency,
    tile_shape_efficiency,
    wave_count,
    wave_efficiency,
)
from .uncertainty import error_band_for, format_time_range

__all__ = [
    "LATENCY_SPLIT_K_DEPTH",
    "LATENCY_TILE",
    "LIMITERS",
    "MISALIGNED_EFFICIENCY",
    "GemmResult",
    "GemmSweep",
    "TimeStep",
    "activation_quant_bytes",
    "arithmetic_intensity",
    "attainable_flops_per_s",
    "gemm",
    "gemm_bytes",
    "gemm_flops",
    "gemm_sweep",
    "ideal_time_s",
    "limiter",
    "overlap_time",
]

LIMITERS = ("math", "memory", "latency")


def gemm_flops(m: Any, n: Any, k: Any, batch: Any = 1) -> Any:
    """2 * M * N * K * batch (vectorised)."""
    return 2.0 * _f(m) * _f(n) * _f(k) * _f(batch)


def gemm_bytes(
    m: Any, n: Any, k: Any, bytes_per_element: float, batch: Any = 1, beta: float = 0.0
) -> Any:
    """(M*K + K*N + M*N [x2 if beta != 0]) * element size * batch (vectorised)."""
    c_passes = 2.0 if beta != 0 else 1.0
    return (
        (_f(m) * _f(k) + _f(k) * _f(n) + c_passes * _f(m) * _f(n)) * bytes_per_element * _f(batch)
    )


# The activation an FP8 linear layer quantises arrives in bf16 (2 bytes an element) and
# leaves as FP8 (1 byte); scales are FP32 (4 bytes).
_QUANT_IN_BYTES, _QUANT_OUT_BYTES, _SCALE_BYTES = 2.0, 1.0, 4.0


def activation_quant_bytes(m: Any, k: Any, batch: Any = 1, scheme: str = "per-tensor") -> Any:
    """Bytes the kernels that quantise an M x K bf16 activation to FP8 move (vectorised).

    Every pass over the input reads it (2 bytes an element); the last writes FP8 (1 byte) and
    the FP32 scales: one per tensor, per row, or per group of elements along K
    (:data:`~dlperf_widgets.core.assumptions.QUANT_SCHEMES`). Per-tensor: 2 + 2 + 1 = 5 bytes
    an element; per-row and block: 3, plus their scales.
    """
    m, k, batch = (check_int(name, v) for name, v in (("m", m), ("k", k), ("batch", batch)))
    check_product(("m", "k", "batch"), (m, k, batch))
    scheme = check_choice("quantize", scheme, QUANT_SCHEMES)
    _kernels, passes, group = QUANT_SCHEMES[scheme]
    if not passes:
        return 0.0 * _f(m)
    elements = _f(m) * _f(k) * _f(batch)
    if group == 0:
        scales = 1.0 * _f(batch)
    elif group < 0:
        scales = _f(m) * _f(batch)
    else:
        scales = _f(m) * np.ceil(_f(k) / group) * _f(batch)
    return elements * (passes * _QUANT_IN_BYTES + _QUANT_OUT_BYTES) + scales * _SCALE_BYTES


def arithmetic_intensity(m: Any, n: Any, k: Any, dtype: Any = "fp16", beta: float = 0.0) -> Any:
    """FLOPs / bytes of a GEMM, in FLOP per byte (vectorised; symmetric in M and N)."""
    m, n, k = (check_int(name, v) for name, v in (("m", m), ("n", n), ("k", k)))
    beta = check_number("beta", beta)
    d = _dtype(dtype)
    return gemm_flops(m, n, k) / gemm_bytes(m, n, k, d.bytes_per_element, beta=beta)


def attainable_flops_per_s(ai: Any, gpu: str | Gpu = "A100", dtype: str = "fp16") -> Any:
    """The roofline: min(peak, AI x bandwidth) in FLOP/s, for one AI or an array of them.

    NVIDIA "GPU Performance Background User's Guide" (math vs memory bound); the bend is at
    the GPU's ops:byte ratio.
    """
    g = _gpu(gpu)
    a = as_floats("ai", ai, "positive finite number(s)")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise InvalidParameter(f"'ai' must be positive finite number(s) (got {describe(ai)})")
    out = np.minimum(g.peak_flops(dtype), a * g.memory_bandwidth_bytes_per_s)
    return float(out) if out.ndim == 0 else out


def ideal_time_s(flops: Any, nbytes: Any, gpu: str | Gpu = "A100", dtype: Any = "fp16") -> Any:
    """The guide's ideal (plain roofline) time: max(FLOPs / datasheet peak, bytes /
    datasheet bandwidth), vectorised. Every 'ideal' or 'roofline' time the kit shows is this."""
    g = _gpu(gpu)
    return np.maximum(
        np.asarray(flops, dtype=np.float64) / g.peak_flops(dtype),
        np.asarray(nbytes, dtype=np.float64) / g.memory_bandwidth_bytes_per_s,
    )


def _f(x: Any) -> Any:
    return np.asarray(x, dtype=np.float64) if is_array(x) else float(x)


_LIMITER_NAMES = np.array(LIMITERS)  # codes 0, 1, 2 -> 'math', 'memory', 'latency'


def _limiter_codes(ai: Any, ops_per_byte: float, parallel_blocks: Any, sms: int) -> Any:
    code = np.where(np.asarray(ai) > ops_per_byte, 0, 1)
    code[np.asarray(parallel_blocks) < sms] = 2
    return code


def limiter(ai: Any, ops_per_byte: float, parallel_blocks: Any, sms: int) -> Any:
    """'latency' if parallel_blocks < sms, else 'math' if ai > ops_per_byte, else 'memory'."""
    code = _limiter_codes(np.atleast_1d(ai), ops_per_byte, np.atleast_1d(parallel_blocks), sms)
    out = _LIMITER_NAMES[code]
    return out.item() if np.ndim(ai) == 0 and np.ndim(parallel_blocks) == 0 else out


def _parallel_blocks(m: Any, n: Any, k: Any, batch: Any) -> Any:
    t = LATENCY_TILE
    m, n, k, batch = (np.asarray(x, dtype=np.int64) for x in (m, n, k, batch))
    return (-(-m // t)) * (-(-n // t)) * batch * np.maximum(1, k // LATENCY_SPLIT_K_DEPTH)


@dataclass(frozen=True)
class GemmSweep(ResultMixin):
    """Model of many GEMMs at once: every field is a numpy array (or a shared scalar).

    ``time_low_s`` and ``time_high_s`` bound each prediction's error band
    (:mod:`~dlperf_widgets.core.uncertainty`); ``band_basis[band_index]`` is the sentence
    saying what each band rests on."""

    m: Any
    n: Any
    k: Any
    batch: Any
    dtype: str
    gpu: str
    beta: float
    library: str
    blocks_per_sm: int
    flops: Any
    bytes: Any
    arithmetic_intensity: Any
    ops_per_byte: float
    peak_flops_per_s: float
    limiter: Any
    time_limiter: Any
    tile: Any
    split_k: Any
    tiles: Any
    waves: Any
    tile_efficiency: Any
    wave_efficiency: Any
    tile_shape_efficiency: Any
    alignment_efficiency: Any
    math_fraction: float
    memory_fraction: float
    kernel_overhead_s: float
    calibration: str
    context: str
    cache: str
    quantize: str
    clock_fraction: float
    burst_s: float
    l2_resident: Any
    kernels: Any
    quantize_time_s: Any
    math_time_s: Any
    memory_time_s: Any
    roofline_time_s: Any
    predicted_time_s: Any
    predicted_flops_per_s: Any
    time_low_s: Any
    time_high_s: Any
    band_basis: tuple[str, ...]
    band_index: Any

    def __len__(self) -> int:
        return int(np.size(self.predicted_time_s))


def gemm_sweep(
    m: Any,
    n: Any,
    k: Any,
    *,
    dtype: str = "fp16",
    gpu: str | Gpu = "A100",
    tile: Any = "auto",
    blocks_per_sm: int = 1,
    batch: Any = 1,
    beta: float = 0.0,
    library: str = "current",
    context: str = DEFAULT_CONTEXT,
    cache: str = DEFAULT_CACHE,
    quantize: str = "none",
    sustained: bool = False,
) -> GemmSweep:
    """Vectorised GEMM model: M, N, K and batch may be numpy arrays (broadcast together).

    ``tile='auto'`` takes, for each shape, the tile of :data:`TILE_SHAPES` with the lowest
    predicted time (the largest tile on ties, in the order of that list). ``context`` is the
    timing context the predicted time is for ('kernel', 'back-to-back' or 'eager', see
    :data:`~dlperf_widgets.core.assumptions.TIMING_CONTEXTS`); ``cache`` says whether the
    operands start in DRAM ('cold') or were just used ('warm': a working set that fits in
    L2 moves at the L2 bandwidth). ``quantize`` adds the kernels an FP8 layer runs to
    quantise its bf16 activation ('per-tensor', 'per-row' or 'block'; FP8 dtypes only).
    ``sustained``: the board is already at its power limit when the GEMM starts (a kernel
    inside a long stream of work, such as a training step), so a power-limited board runs it
    at its sustained clock throughout, with no boost burst from idle.
    """
    m = check_int("m", m)
    n = check_int("n", n)
    k = check_int("k", k)
    batch = check_int("batch", batch)
    check_product(("m", "n", "k", "batch"), (m, n, k, batch))
    blocks_per_sm = check_int("blocks_per_sm", blocks_per_sm, allow_array=False)
    beta = check_number("beta", beta)
    library = check_choice("library", library, LIBRARIES)
    context = check_context(context)
    cache = check_choice("cache", cache, CACHE_STATES)
    quantize = check_choice("quantize", quantize, QUANT_SCHEMES)
    d = _dtype(dtype)
    g = _gpu(gpu)
    if quantize != "none" and not d.name.startswith("fp8"):
        raise InvalidParameter(
            f"'quantize' must be 'none' unless the dtype is an FP8 type (got "
            f"{describe(quantize)} with {d.name})"
        )
    try:
        m, n, k, batch = np.broadcast_arrays(
            *(np.asarray(x, dtype=np.int64) for x in (m, n, k, batch))
        )
    except ValueError as exc:
        raise InvalidParameter(
            f"'m', 'n', 'k' and 'batch' must have shapes that broadcast together "
            f"(got {np.shape(m)}, {np.shape(n)}, {np.shape(k)}, {np.shape(batch)})"
        ) from exc

    peak = g.peak_flops(d)
    bw = g.memory_bandwidth_bytes_per_s
    cal = achievable(g, d)
    burst_s = 0.0 if check_bool("sustained", sustained) else cal.burst_s
    flops = gemm_flops(m, n, k, batch)
    nbytes = gemm_bytes(m, n, k, d.bytes_per_element, batch, beta)
    ai = flops / nbytes

    # Alignment: M, N and K must all be multiples of 16 bytes for the fast Tensor Core path.
    # An M or N smaller than the multiple (a batch-1 linear layer's N = 1) makes a
    # matrix-vector product, not a misaligned matrix: no penalty (core.assumptions); its
    # cost shows through the thin-output kernel and memory traffic instead.
    if g.unit_for(d) == "tensor":
        mult = d.tensor_core_multiple
        matrix_vector = (m < mult) | (n < mult)
        aligned = matrix_vector | ((m % mult == 0) & (n % mult == 0) & (k % mult == 0))
        k_off = ~matrix_vector & (k % mult != 0)
        if library == "legacy":
            need = legacy_required_multiple(d)
            if need is None:
                aligned = np.zeros_like(aligned)
            else:
                aligned = (m % need == 0) & (n % need == 0) & (k % need == 0)
            # Older libraries fall back to CUDA cores when Tensor Cores cannot be used.
            fallback = next(
                (g.peak_flops(x, unit="cuda") for x in (d.name, "fp32") if _has_cuda(g, x)),
                peak,
            )
            align_eff = np.where(aligned, 1.0, fallback / peak)
        else:
            # A misaligned K narrows the loads of both operands along the reduction; an M or N
            # off the multiple costs far less (data/achievable.csv, both measured).
            align_eff = np.where(
                aligned,
                1.0,
                np.where(k_off, cal.misaligned_efficiency, cal.misaligned_mn_efficiency),
            )
    else:
        align_eff = np.ones(m.shape)

    slots = g.sms * blocks_per_sm
    chosen = parse_tile(tile)
    simt = g.unit_for(d) == "cuda" if g.supports(d) else True
    auto_shapes = SIMT_TILE_SHAPES if simt else TILE_SHAPES
    shapes: tuple[tuple[int, int], ...] = auto_shapes if chosen is None else (chosen,)
    r0 = SIMT_TILE_REUSE_R0 if simt else TILE_REUSE_R0
    ref = SIMT_TILE_SHAPES[0] if simt else TILE_SHAPES[0]
    shape_eff = np.array([tile_shape_efficiency(*t, r0, ref) for t in shapes])
    out_shape = m.shape
    mf, nf, kf, bf = (x.astype(np.float64).ravel() for x in (m, n, k, batch))
    kk = k.ravel()
    # What the GPU sustains (core.calibration): a fraction of the datasheet peak and bandwidth.
    achievable_peak = peak * cal.math_fraction
    bw_real = bw * cal.memory_fraction
    rate: Any = (
        (achievable_peak * align_eff).ravel() if np.ndim(align_eff) else achievable_peak * align_eff
    )
    # The L2 term (core.assumptions.L2_USABLE_FRACTION): a warm working set that fits in L2
    # moves at the L2 bandwidth.
    bw_at: Any = bw_real
    l2_resident = np.zeros(np.shape(nbytes), dtype=bool)
    if cache == "warm" and g.l2_bandwidth_bytes_per_s and g.l2_bytes:
        l2_resident = nbytes <= L2_USABLE_FRACTION * g.l2_bytes
        if l2_resident.any():
            l2_bw = max(bw, g.l2_bandwidth_bytes_per_s) * cal.memory_fraction
            bw_at = np.where(l2_resident, l2_bw, bw_real).ravel()
    base_memory_time = nbytes.ravel() / bw_at
    # a tile's fixed cost (prologue, epilogue) in steps of K (data/achievable.csv, epilogue_k)
    epilogue_k = cal.epilogue_k

    tms = np.array([t[0] for t in shapes], dtype=np.float64)
    tns = np.array([t[1] for t in shapes], dtype=np.float64)

    unbatched = bool(np.all(bf == 1))
    rows: dict[float, Any] = {}
    cols: dict[float, Any] = {}

    def _rows(tm: float) -> Any:  # ceil(M / tm), computed once per tile height
        if tm not in rows:
            rows[tm] = np.ceil(mf / tm)
        return rows[tm]

    def _cols(tn: float) -> Any:
        if tn not in cols:
            cols[tn] = np.ceil(nf / tn)
        return cols[tn]

    def _burst(math: Any) -> Any:
        # A board limited by its power starts a kernel at the boost clock and holds it for
        # cal.burst_s (core.calibration.boost_burst_s) before settling at the sustained
        # clock. Every kernel is priced so, in every timing context: the model keeps no power
        # history from one kernel to the next (a long stream of kernels may run nearer the
        # sustained clock), so the fixed costs alone order eager >= kernel >= back-to-back.
        return power_limited_math_time(math, cal.clock_fraction, burst_s)

    def _time(idx: Any, split: Any, sel: Any = slice(None)) -> tuple[Any, Any]:
        # Math time = FLOPs launched in whole waves / (per-slot rate x slots): the same as
        # FLOPs / (rate x tile eff x wave eff x shape eff x alignment eff) for split = 1.
        # ``idx`` (tile index) and ``split`` are scalars or arrays aligned with ``sel``.
        tm, tn = tms[idx], tns[idx]
        plain = np.ndim(split) == 0 and split == 1
        if plain and isinstance(sel, slice):  # the full arrays: reuse per-size tile counts
            tiles = _rows(tm) * _cols(tn)
        else:
            tiles = np.ceil(mf[sel] / tm) * np.ceil(nf[sel] / tn)
        if not unbatched:
            tiles *= bf[sel]
        if not plain:
            tiles *= split
        launched = np.ceil(tiles / slots, out=tiles)
        launched *= slots * 2.0 * tm * tn
        launched *= (kf[sel] if plain else np.ceil(kf[sel] / split)) + epilogue_k
        r = rate[sel] if np.ndim(rate) else rate
        math = _burst(launched / (r * shape_eff[idx]))
        memory = base_memory_time[sel]
        if not plain:  # FP32 partial sums written by every K slice and read back
            partial = 2.0 * (split > 1) * split * mf[sel] * nf[sel] * bf[sel]
            b = bw_at[sel] if np.ndim(bw_at) else bw_at
            memory = memory + partial * SPLIT_K_ACCUMULATOR_BYTES / b
        return math, memory

    # A batched SIMT GEMM gets only the tiles the library offers batched calls on this
    # architecture (core.tiles.BATCHED_SIMT_TILES).
    offered = BATCHED_SIMT_TILES.get(g.architecture) if simt and chosen is None else None
    barred = None
    if offered is not None and not unbatched:
        barred = [
            bf > 1 if tuple(sorted(t)) not in {tuple(sorted(o)) for o in offered} else None
            for t in shapes
        ]

    def _plain_math(i: int) -> Any:
        t = _time(i, 1)[0]
        if barred is not None and barred[i] is not None:
            t[barred[i]] = np.inf
        return t

    # Plain tiles all move the same bytes, so the fastest is the one with the least math
    # time; strict '<' keeps the largest tile on ties.
    best_math = _plain_math(0)
    best_idx = np.zeros(best_math.shape, dtype=np.int64)
    for i in range(1, len(shapes)):
        t = _plain_math(i)
        better = t < best_math
        best_idx[better] = i
        np.minimum(best_math, t, out=best_math)
    best_memory = base_memory_time.copy()
    best_split = np.ones_like(best_idx)
    # fixed cost of the first kernel in the timing context; a split K adds a reduction
    # kernel, queued right behind it, so it costs the back-to-back fixed cost
    fixed_cost = cal.fixed_cost_s(context)
    queued_cost = cal.fixed_cost_s("back-to-back")
    best_kernels = np.ones(best_idx.shape, dtype=np.int64)
    # Split-K, tile shape by tile shape, only where that shape leaves SMs idle without it.
    deep = kk >= 2 * LATENCY_SPLIT_K_DEPTH
    if simt:  # batched SIMT GEMMs run whole K per tile (core.tiles.SIMT_TILE_SHAPES)
        deep &= bf == 1
    for i in range(len(shapes)):
        plain_tiles = np.ceil(mf / tms[i]) * np.ceil(nf / tns[i]) * bf
        cand = np.nonzero((plain_tiles < slots) & deep)[0]
        for split in SPLIT_K_FACTORS:
            cand = cand[kk[cand] // split >= LATENCY_SPLIT_K_DEPTH]
            if not cand.size:
                break
            t_math, t_mem = _time(i, split, cand)
            better = overlap_time(t_math, t_mem) + queued_cost < (
                overlap_time(best_math[cand], best_memory[cand])
                + (best_kernels[cand] - 1) * queued_cost
            )
            pick = cand[better]
            best_math[pick], best_memory[pick] = t_math[better], t_mem[better]
            best_idx[pick], best_split[pick], best_kernels[pick] = i, split, 2

    # Thin outputs: a matrix-vector style kernel (core.assumptions, THIN_*), where it is faster.
    thin_dim = np.minimum(mf, nf)
    thin_ok = (thin_dim <= THIN_OUTPUT_MAX) & ~(simt & (bf > 1))
    thin = np.nonzero(thin_ok)[0] if chosen is None else np.array([], int)
    best_gemv = np.zeros(best_idx.shape, dtype=bool)
    if thin.size:
        padded = np.ceil(thin_dim[thin] / THIN_OUTPUT_PAD) * THIN_OUTPUT_PAD
        r = rate[thin] if np.ndim(rate) else rate
        t_math = _burst(flops.ravel()[thin] * (padded / thin_dim[thin]) / r)
        t_mem = base_memory_time[thin]
        # A true matrix-vector product (the thin side within one vector width) runs one
        # kernel that spreads its rows over the SMs; a wider thin output, or a K deeper than
        # the long side, is split along K when too few row blocks would occupy the SMs, and
        # the slices are summed by a second kernel (core.assumptions, split-K).
        long_dim = np.maximum(mf, nf)[thin]
        long_blocks = np.ceil(long_dim / THIN_TILE) * bf[thin]
        split_thin = (thin_dim[thin] > THIN_OUTPUT_PAD) | (kf[thin] > long_dim)
        kernels = np.where(
            split_thin & (long_blocks < slots) & (kk[thin] >= 2 * LATENCY_SPLIT_K_DEPTH), 2, 1
        )
        better = overlap_time(t_math, t_mem) + (kernels - 1) * queued_cost < (
            overlap_time(best_math[thin], best_memory[thin])
            + (best_kernels[thin] - 1) * queued_cost
        )
        pick = thin[better]
        best_math[pick], best_memory[pick] = t_math[better], t_mem[better]
        best_split[pick] = 1
        best_kernels[pick] = kernels[better]
        best_gemv[pick] = True

    work_time = overlap_time(best_math, best_memory)
    best_time = work_time + fixed_cost + queued_cost * (best_kernels - 1)
    # An FP8 layer's activation quantisation: its own kernels, each with the context's fixed
    # cost, moving activation_quant_bytes at the bandwidth the GEMM's bytes move at.
    quant_time: Any = 0.0
    if quantize != "none":
        q_bytes = np.asarray(activation_quant_bytes(m, k, batch, quantize), dtype=np.float64)
        quant_kernels = QUANT_SCHEMES[quantize][0]
        # one block per row, in waves of QUANT_BLOCKS_PER_SM blocks per SM (core.assumptions)
        row_waves = np.ceil(mf * bf / (QUANT_BLOCKS_PER_SM * g.sms))
        quant_time = (
            quant_kernels
            * (QUANT_KERNEL_FIXED_SHARE * queued_cost + row_waves * QUANT_BLOCK_WAVE_S)
            + q_bytes.ravel() / bw_at
        )
        best_time = best_time + quant_time
    tm_sel = tms[best_idx].astype(np.int64)
    tn_sel = tns[best_idx].astype(np.int64)
    best_tiles = (-(-m.ravel() // tm_sel)) * (-(-n.ravel() // tn_sel)) * batch.ravel() * best_split
    best_te = tile_efficiency(m.ravel(), n.ravel(), tm_sel, tn_sel)
    best_se = shape_eff[best_idx]
    if best_gemv.any():
        long_dim = np.maximum(m.ravel(), n.ravel())[best_gemv]
        short = np.minimum(m.ravel(), n.ravel())[best_gemv]
        best_tiles[best_gemv] = -(-long_dim // THIN_TILE) * batch.ravel()[best_gemv]
        best_te = np.where(best_gemv, 1.0, best_te)
        best_te[best_gemv] = short / (-(-short // THIN_OUTPUT_PAD) * THIN_OUTPUT_PAD)
        best_se = np.where(best_gemv, 1.0, best_se)
    best_waves = wave_count(best_tiles, slots)
    best_we = np.where(best_gemv, 1.0, wave_efficiency(best_tiles, slots))
    roof_time = ideal_time_s(flops, nbytes, g, d)

    def _shaped(a: Any) -> Any:
        return np.asarray(a).reshape(out_shape)

    best_idx, best_split, best_tiles, best_waves = map(
        _shaped, (best_idx, best_split, best_tiles, best_waves)
    )
    best_te, best_we, best_se, best_math, memory_time, best_time = map(
        _shaped, (best_te, best_we, best_se, best_math, best_memory, best_time)
    )

    names = np.array([f"{a}x{b}" for a, b in shapes] + ["gemv"])
    tile_names = names[np.where(_shaped(best_gemv), len(shapes), best_idx)]
    # The guide's classification ("How to find a problem?"): parallelism, then intensity.
    code = _limiter_codes(
        np.atleast_1d(ai), g.ops_per_byte(d), np.atleast_1d(_parallel_blocks(m, n, k, batch)), g.sms
    ).reshape(out_shape)
    lim = _LIMITER_NAMES[code]
    # Which term is the largest part of the predicted time: math, memory, or the fixed cost
    # per kernel ('latency'). It can differ from the guide's limiter: tile and wave
    # quantization can stretch the math time past the memory time below the ridge.
    time_code = np.where(best_math >= memory_time, 0, 1)
    time_code[np.maximum(best_math, memory_time) < fixed_cost] = 2
    time_lim = _LIMITER_NAMES[time_code]
    # Where measured GEMMs of the same regime fell around the prediction (core.uncertainty).
    band = error_band_for(g, d, time_code, best_time, cal.basis)
    return GemmSweep(
        m=m,
        n=n,
        k=k,
        batch=batch,
        dtype=d.name,
        gpu=g.name,
        beta=beta,
        library=library,
        blocks_per_sm=blocks_per_sm,
        flops=flops,
        bytes=nbytes,
        arithmetic_intensity=ai,
        ops_per_byte=g.ops_per_byte(d),
        peak_flops_per_s=peak,
        limiter=np.asarray(lim),
        time_limiter=time_lim,
        tile=tile_names,
        split_k=best_split,
        tiles=best_tiles,
        waves=best_waves,
        tile_efficiency=best_te,
        wave_efficiency=best_we,
        tile_shape_efficiency=best_se,
        alignment_efficiency=align_eff,
        math_fraction=cal.math_fraction,
        memory_fraction=cal.memory_fraction,
        kernel_overhead_s=fixed_cost,
        calibration=cal.basis,
        context=context,
        cache=cache,
        quantize=quantize,
        clock_fraction=cal.clock_fraction,
        burst_s=burst_s,
        l2_resident=l2_resident,
        kernels=_shaped(best_kernels),
        quantize_time_s=_shaped(quant_time) if np.ndim(quant_time) else quant_time,
        math_time_s=best_math,
        memory_time_s=memory_time,
        roofline_time_s=_shaped(roof_time),
        predicted_time_s=best_time,
        predicted_flops_per_s=flops / best_time,
        time_low_s=band.low_s,
        time_high_s=band.high_s,
        band_basis=band.basis,
        band_index=band.basis_index,
    )


def _has_cuda(g: Gpu, dt: str) -> bool:
    return any(p.unit == "cuda" and p.dtype == dt for p in g.peaks)


@dataclass(frozen=True)
class TimeStep:
    """One step of :meth:`GemmResult.steps`: the effect, its efficiency (1 = no loss; None
    where the step is not a single efficiency), the time with it, and the time it adds."""

    effect: str
    efficiency: float | None
    time_s: float
    added_time_s: float


@dataclass(frozen=True)
class GemmResult(ResultMixin):
    """The model of one GEMM. Attribute names are the JSON keys of ``dlperf gemm``.

    ``limiter`` is the guide's classification (parallelism, then intensity against the
    GPU's ops:byte ratio); ``time_limiter`` says which term is the largest part of
    ``predicted_time_s`` (math, memory, or 'latency' when the kernel's fixed cost outweighs
    both) once tile, wave and alignment effects are counted. ``roofline_time_s`` is the
    guide's ideal time; :meth:`steps` walks from it to the prediction. ``context`` is the
    timing context ``predicted_time_s`` is for, and ``kernel_overhead_s`` the fixed cost per
    kernel in that context (the host's launch overhead included when it is 'eager'). ``time_low_s`` to
    ``time_high_s`` is the band measured GEMMs of the same regime fell in around such a
    prediction, and ``band_basis`` says what it rests on (:mod:`~dlperf_widgets.core.uncertainty`).
    """

    m: int
    n: int
    k: int
    batch: int
    dtype: str
    gpu: str
    beta: float
    library: str
    blocks_per_sm: int
    flops: float
    bytes: float
    arithmetic_intensity: float
    ops_per_byte: float
    peak_flops_per_s: float
    limiter: str
    time_limiter: str
    tile: str
    split_k: int
    tiles: int
    waves: int
    tile_efficiency: float
    wave_efficiency: float
    tile_shape_efficiency: float
    alignment_efficiency: float
    math_fraction: float
    memory_fraction: float
    kernel_overhead_s: float
    calibration: str
    context: str
    cache: str
    quantize: str
    clock_fraction: float
    burst_s: float
    l2_resident: bool
    kernels: int
    quantize_time_s: float
    math_time_s: float
    memory_time_s: float
    roofline_time_s: float
    predicted_time_s: float
    predicted_flops_per_s: float
    time_low_s: float
    time_high_s: float
    band_basis: str
    findings: tuple[Finding, ...] = field(default=())

    _units: ClassVar[dict[str, str]] = {
        "flops": "FLOP",
        "bytes": "B",
        "peak_flops_per_s": "FLOP/s",
        "predicted_flops_per_s": "FLOP/s",
        "math_time_s": "s",
        "memory_time_s": "s",
        "roofline_time_s": "s",
        "kernel_overhead_s": "s",
        "burst_s": "s",
        "quantize_time_s": "s",
        "predicted_time_s": "s",
        "time_low_s": "s",
        "time_high_s": "s",
    }

    def _title(self) -> str:
        b = f"{self.batch} x " if self.batch != 1 else ""
        return f"GEMM {b}{self.m} x {self.n} x {self.k} ({self.dtype}) on {self.gpu}"

    def steps(self) -> tuple[TimeStep, ...]:
        """From the guide's ideal time to the model's prediction, one effect at a time.

        Each step's time is what the GEMM would take with every effect up to and including
        that one; ``added_time_s`` is what the step adds. The walk:

        1. ``math_peak``: FLOPs at the datasheet peak;
        2. ``memory``: the plain roofline, max(math at peak, bytes at datasheet bandwidth);
        3. ``achievable``: math at ``math_fraction`` of the peak (at the boost clock:
           ``math_fraction / clock_fraction``), bytes at ``memory_fraction`` of the bandwidth
           (what real GPUs sustain);
        4. ``tile``, ``wave``, ``tile_shape``, ``alignment``: the math time divided by each
           efficiency in turn (quantization, tile reuse, misalignment);
        5. ``l2`` (a warm working set that fits in L2): its bytes at the L2 bandwidth;
           ``split_k`` (when the K dimension is split): whole K slices per wave and FP32
           partial sums, or else ``epilogue``: each tile's fixed cost along K; ``power`` (a
           board whose power limit holds its clock below boost, ``clock_fraction``): the
           kernel's math after its first ``burst_s`` at the sustained clock;
        6. ``overlap``: math and data movement do not overlap perfectly
           (:func:`overlap_time`);
        7. ``quantize`` (an FP8 layer): the activation's quantisation kernels;
        8. ``overhead``: the fixed cost of the kernel in its timing context. The last step
           equals ``predicted_time_s``.

        The order is a choice and the split between steps depends on it; the total does not.
        """
        out: list[TimeStep] = []

        def add(name: str, eff: float | None, t: float) -> None:
            prev = out[-1].time_s if out else 0.0
            out.append(TimeStep(name, eff, t, t - prev))

        peak_math = self.flops / self.peak_flops_per_s
        add("math_peak", None, peak_math)
        add("memory", None, self.roofline_time_s)
        # the achievable step runs at the boost clock; a board's power limit comes last
        limited = self.clock_fraction < 1
        math = peak_math / (self.math_fraction / self.clock_fraction)
        memory = self.bytes / (self.peak_flops_per_s / self.ops_per_byte * self.memory_fraction)
        add("achievable", None, max(math, memory))
        for name, eff in (
            ("tile", self.tile_efficiency),
            ("wave", self.wave_efficiency),
            ("tile_shape", self.tile_shape_efficiency),
            ("alignment", self.alignment_efficiency),
        ):
            math = math / eff
            add(name, eff, max(math, memory))
        if self.l2_resident:
            add("l2", None, max(math, self.memory_time_s))
        # the math time had the whole kernel run at the boost clock: math_time_s with the
        # power limit's effect (core.calibration.power_limited_math_time) taken out
        at_boost = self.math_time_s
        if limited:
            cf = self.clock_fraction
            at_boost = (
                self.math_time_s
                if self.burst_s and self.math_time_s <= self.burst_s
                else (self.math_time_s + self.burst_s * (1 / cf - 1)) * cf
            )
        if self.split_k > 1:
            add("split_k", None, max(at_boost, self.memory_time_s))
        elif abs(at_boost - math) > 1e-9 * math:  # the tiles' fixed cost along K
            add("epilogue", None, max(at_boost, self.memory_time_s))
        if limited:
            add("power", None, max(self.math_time_s, self.memory_time_s))
        add("overlap", None, overlap_time(self.math_time_s, self.memory_time_s))
        if self.quantize_time_s:
            add("quantize", None, out[-1].time_s + self.quantize_time_s)
        add("overhead", None, self.predicted_time_s)
        return tuple(out)

    def predicted_text(self) -> str:
        """The predicted time with its band: '1.23 ms (0.98-1.45 ms, 80 % band from ...)'."""
        return f"{format_quantity(self.predicted_time_s, 's')} ({self.band_text()})"

    def band_text(self) -> str:
        """The band alone: '0.98-1.45 ms, 80 % band from 452 H100-SXM rows (...)'."""
        return f"{format_time_range(self.time_low_s, self.time_high_s)}, {self.band_basis}"

    def steps_table(self) -> str:
        """:meth:`steps` as an aligned text table."""
        lines = [f"{'step':<11} {'efficiency':>10} {'time':>11} {'adds':>11}"]
        for st in self.steps():
            eff = "-" if st.efficiency is None else f"{st.efficiency:.1%}"
            lines.append(
                f"{st.effect:<11} {eff:>10} {format_quantity(st.time_s, 's'):>11} "
                f"{format_quantity(st.added_time_s, 's'):>11}"
            )
        return "\n".join(lines)

    def _rows(self) -> list[tuple[str, str]]:
        rows = [
            ("FLOPs", format_quantity(self.flops, "FLOP")),
            ("bytes moved", format_quantity(self.bytes, "B")),
            ("arithmetic intensity", f"{self.arithmetic_intensity:.1f} FLOP/B"),
            ("GPU ops:byte", f"{self.ops_per_byte:.1f} FLOP/B"),
            ("limiter", self.limiter),
            ("time set by", self.time_limiter),
            (
                "tile",
                f"{self.tile}{f', split-K x{self.split_k}' if self.split_k > 1 else ''}"
                f"{', + a reduction kernel' if self.kernels > 1 else ''} "
                f"({self.tiles} thread blocks, {self.waves} wave{'s' * (self.waves != 1)})",
            ),
            ("tile efficiency", f"{self.tile_efficiency:.1%}"),
            ("wave efficiency", f"{self.wave_efficiency:.1%}"),
            ("tile-shape efficiency", f"{self.tile_shape_efficiency:.1%}"),
            ("ideal (roofline) time", format_quantity(self.roofline_time_s, "s")),
            (
                "achievable",
                f"{self.math_fraction:.0%} of peak, {self.memory_fraction:.0%} of bandwidth, "
                f"+{self.kernel_overhead_s * 1e6:.1f} us per kernel ({self.calibration})",
            ),
            ("timing context", f"{self.context}: {TIMING_CONTEXT_DESCRIPTIONS[self.context]}"),
            (
                "cache",
                f"{self.cache}"
                + (", working set read from L2" if self.l2_resident else "")
                + (
                    f"; sustained clock {self.clock_fraction:.0%} of boost (power limit)"
                    + (
                        f", boost for the first {format_quantity(self.burst_s, 's')}"
                        if self.burst_s
                        else ""
                    )
                    if self.clock_fraction < 1
                    else ""
                ),
            ),
            ("predicted time", self.predicted_text()),
            ("predicted throughput", format_quantity(self.predicted_flops_per_s, "FLOP/s")),
        ]
        if self.alignment_efficiency < 1:
            rows.insert(9, ("alignment efficiency", f"{self.alignment_efficiency:.0%}"))
        return rows

    def __str__(self) -> str:
        text = super().__str__()
        if self.findings:
            text += "\nfindings:\n" + "\n".join(f"  {f}" for f in self.findings)
        return text

    def _repr_html_(self) -> str:
        import html

        out = super()._repr_html_()
        if self.findings:
            items = "".join(f"<li>{html.escape(str(f))}</li>" for f in self.findings)
            out += f"<ul class='dlperf-findings'>{items}</ul>"
        return out


def gemm(
    m: int,
    n: int,
    k: int,
    *,
    dtype: str = "fp16",
    gpu: str | Gpu = "A100",
    tile: Any = "auto",
    blocks_per_sm: int = 1,
    batch: int = 1,
    beta: float = 0.0,
    library: str = "current",
    context: str = DEFAULT_CONTEXT,
    cache: str = DEFAULT_CACHE,
    quantize: str = "none",
    sustained: bool = False,
) -> GemmResult:
    """Model one GEMM: cost, arithmetic intensity, limiter, tiles, waves, time, findings.

    The options are :func:`gemm_sweep`'s (``sustained``: the board is already at its power
    limit, as inside a loop of kernels).

    >>> r = gemm(8192, 128, 8192, dtype="fp16", gpu="V100")
    >>> round(r.arithmetic_intensity, 1), r.limiter
    (124.1, 'memory')
    """
    for name, value in (("m", m), ("n", n), ("k", k), ("batch", batch)):
        if is_array(value) and np.ndim(value) > 0:  # a 0-d array is one number
            raise InvalidParameter(
                f"'{name}' must be a single integer here; use gemm_sweep() for arrays "
                f"(got an array)"
            )
    m, n, k, batch = (
        check_int(name, v) for name, v in (("m", m), ("n", n), ("k", k), ("batch", batch))
    )
    check_product(("m", "n", "k", "batch"), (m, n, k, batch))
    d = _dtype(dtype)
    g = _gpu(gpu)
    # The guide's rule (Get Started 2.3): size tweaks help math-bound operations only; the
    # guide's limiter needs no tiles, so the findings come first and every fix they suggest
    # is modelled in the same vectorised call as the GEMM itself.
    beta_checked = check_number("beta", beta)
    ai = gemm_flops(m, n, k, batch) / gemm_bytes(m, n, k, d.bytes_per_element, batch, beta_checked)
    code = _limiter_codes(
        np.atleast_1d(ai),
        g.ops_per_byte(d),
        np.atleast_1d(_parallel_blocks(m, n, k, batch)),
        g.sms,
    )
    findings = alignment_findings(
        {"m": m, "n": n, "k": k}, d, g, library=library, memory_bound=int(code[0]) != 0
    )
    if g.architecture == "cpu":  # a CPU entry (live.calibrate): GPU alignment rules do not apply
        findings = []
    fixable = [
        i
        for i, f in enumerate(findings)
        if f.suggested_value is not None and f.parameter in ("m", "n", "k")
    ]
    dims = {
        x: np.full(1 + len(fixable), v, dtype=np.int64) for x, v in (("m", m), ("n", n), ("k", k))
    }
    for j, i in enumerate(fixable, start=1):
        dims[findings[i].parameter][j] = int(findings[i].suggested_value or 0)
    every = gemm_sweep(
        dims["m"],
        dims["n"],
        dims["k"],
        dtype=d.name,
        gpu=g,
        tile=tile,
        blocks_per_sm=blocks_per_sm,
        batch=batch,
        beta=beta_checked,
        library=library,
        context=context,
        cache=cache,
        quantize=quantize,
        sustained=sustained,
    )
    s = _First(every)
    before = float(s.predicted_time_s)
    for j, i in enumerate(fixable, start=1):
        f = findings[i]
        after_s = float(np.asarray(every.predicted_time_s)[j])
        # A 'warning' promises time back: one whose fix gains nothing in the model is advice
        # only.
        severity = (
            "info" if f.severity == "warning" and after_s >= before * (1 - 1e-9) else f.severity
        )
        findings[i] = Finding(
            severity, f.parameter, f.message, f.fix, f.value, f.suggested_value, before, after_s
        )
    return GemmResult(
        m=int(s.m),
        n=int(s.n),
        k=int(s.k),
        batch=int(s.batch),
        dtype=s.dtype,
        gpu=s.gpu,
        beta=s.beta,
        library=s.library,
        blocks_per_sm=s.blocks_per_sm,
        flops=float(s.flops),
        bytes=float(s.bytes),
        arithmetic_intensity=float(s.arithmetic_intensity),
        ops_per_byte=float(s.ops_per_byte),
        peak_flops_per_s=float(s.peak_flops_per_s),
        limiter=str(s.limiter),
        time_limiter=str(s.time_limiter),
        tile=str(s.tile),
        split_k=int(s.split_k),
        tiles=int(s.tiles),
        waves=int(s.waves),
        tile_efficiency=float(s.tile_efficiency),
        wave_efficiency=float(s.wave_efficiency),
        tile_shape_efficiency=float(s.tile_shape_efficiency),
        alignment_efficiency=float(s.alignment_efficiency),
        math_fraction=float(s.math_fraction),
        memory_fraction=float(s.memory_fraction),
        kernel_overhead_s=float(s.kernel_overhead_s),
        calibration=s.calibration,
        context=s.context,
        cache=s.cache,
        quantize=s.quantize,
        clock_fraction=float(s.clock_fraction),
        burst_s=float(s.burst_s),
        l2_resident=bool(s.l2_resident),
        kernels=int(s.kernels),
        quantize_time_s=float(s.quantize_time_s),
        math_time_s=float(s.math_time_s),
        memory_time_s=float(s.memory_time_s),
        roofline_time_s=float(s.roofline_time_s),
        predicted_time_s=float(s.predicted_time_s),
        predicted_flops_per_s=float(s.predicted_flops_per_s),
        time_low_s=float(s.time_low_s),
        time_high_s=float(s.time_high_s),
        band_basis=s.band_basis[int(s.band_index)],
        findings=tuple(findings),
    )


class _First:
    """The first GEMM of a sweep: each field read as a scalar when it is asked for (building
    a whole sweep of scalars costs more than the few fields a caller reads)."""

    __slots__ = ("_s",)

    def __init__(self, s: GemmSweep) -> None:
        self._s = s

    def __getattr__(self, name: str) -> Any:
        v = getattr(self._s, name)
        return v.ravel()[0] if isinstance(v, np.ndarray) else v
