"""2:4 structured sparsity: prune, check, and predict the speed-up.

The slides "NN Performance optimization" ("Ampere sparsity"): in every group of 4
consecutive weights 2 are zero; pruning can be done by magnitude (sometimes followed by
fine-tuning); up to 30 % faster. Sparse Tensor Cores skip the zeros and run at twice the
dense math rate (the "Ampere, sparse" row of the multiply-add table: 1024 vs 512 TF32,
2048 vs 1024 FP16 FMA/clk/SM on A100).

Speed-up model: only the math time halves (the GPU's sparse peak over its dense peak), so
a GEMM whose time is set by math runs up to 2x faster and one whose time is set by memory
not at all - which term sets the time is the model's ``time_limiter``, which can be math
for a GEMM the guide's intensity rule calls memory-bound (tile and wave effects). By default
the compressed weights are not credited (a conservative choice); ``compressed_weights=True``
also shrinks the weight traffic to the compressed size. A 2:4 matrix is stored as its kept
half of the values plus a 2-bit index per kept value (NVIDIA, Mishra et al. 2021,
"Accelerating Sparse Deep Neural Networks", arXiv:2104.08378, section 3: 2-bit metadata per
non-zero for 16-bit data), so it takes ``0.5 * (1 + 2 / (8 * element bytes))`` of the dense
bytes: 56.25 % for FP16/BF16, 62.5 % for INT8. That helps exactly the GEMMs the faster math
cannot: weight-streaming matrix-vector products (batch-1 inference). The end-to-end
effect follows Amdahl's law: if a fraction f of the step time speeds up s times, the step
speeds up 1 / ((1 - f) + f / s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ._validate import as_floats, check_int, check_number, describe, is_array
from .calibration import overlap_time
from .dtypes import dtype as _dtype
from .errors import InvalidParameter
from .gemm import gemm
from .gpus import Gpu
from .gpus import gpu as _gpu
from .results import ResultMixin

__all__ = [
    "GROUP",
    "KEEP",
    "PruneResult",
    "SparseGemmResult",
    "amdahl_speedup",
    "check_2_4",
    "compressed_weight_fraction",
    "prune_2_4",
    "sparse_fraction_for_speedup",
    "sparse_gemm",
]

GROUP = 4  # weights per group along the reduction (input) dimension
KEEP = 2  # non-zeros kept per group


@dataclass(frozen=True)
class PruneResult(ResultMixin):
    """A weight matrix pruned to 2:4 by magnitude.

    ``weights`` (same shape and dtype as the input) and ``mask`` (True = kept) are arrays;
    ``kept_fraction`` is 0.5 by construction; ``kept_l1_fraction`` / ``kept_l2_fraction``
    say how much of the weights' L1 norm / squared L2 norm survives.
    """

    shape: tuple[int, ...]
    axis: int
    groups: int
    kept_fraction: float
    kept_l1_fraction: float
    kept_l2_fraction: float
    valid: bool
    weights: Any
    mask: Any

    _hidden: ClassVar[tuple[str, ...]] = ("weights", "mask", "shape")

    def _title(self) -> str:
        return f"2:4 pruning of a {' x '.join(map(str, self.shape))} matrix"


def _groups(w: np.ndarray, axis: int) -> tuple[np.ndarray, int]:
    """Move ``axis`` last and split it into groups of 4: shape (..., K/4, 4)."""
    if w.ndim == 0:
        raise InvalidParameter(
            "'weights' must be an array with at least one dimension (got a scalar)"
        )
    ax = axis % w.ndim
    size = w.shape[ax]
    if size % GROUP:
        raise InvalidParameter(
            f"'weights' must have a multiple of {GROUP} elements along axis {axis} for 2:4 "
            f"sparsity (got {size})"
        )
    moved = np.moveaxis(w, ax, -1)
    return moved.reshape(*moved.shape[:-1], size // GROUP, GROUP), ax


def prune_2_4(weights: Any, *, axis: int = -1) -> PruneResult:
    """Zero the 2 smallest-magnitude weights of every 4 consecutive ones along ``axis``.

    ``axis`` is the reduction dimension of the GEMM: the inputs of a Linear layer's
    ``(out_features, in_features)`` weight, i.e. its last axis. Ties keep the earlier
    weight. Vectorised: one stable argsort over all groups.
    """
    w, axis = _checked(weights, axis)
    g, ax = _groups(w, axis)
    order = np.argsort(-np.abs(g.astype(np.float64)), axis=-1, kind="stable")
    keep = np.zeros(g.shape, dtype=bool)
    np.put_along_axis(keep, order[..., :KEEP], True, axis=-1)
    pruned = np.where(keep, g, np.zeros((), dtype=w.dtype))
    shape_moved = np.moveaxis(w, ax, -1).shape
    out = np.moveaxis(pruned.reshape(shape_moved), -1, ax)
    mask = np.moveaxis(keep.reshape(shape_moved), -1, ax)
    a = np.abs(w.astype(np.float64))
    l1 = float(a.sum())
    l2 = float((a**2).sum())
    return PruneResult(
        shape=tuple(w.shape),
        axis=ax,
        groups=int(g.size // GROUP),
        kept_fraction=float(mask.mean()),
        kept_l1_fraction=float(a[mask].sum() / l1) if l1 else 1.0,
        kept_l2_fraction=float((a[mask] ** 2).sum() / l2) if l2 else 1.0,
        valid=bool(check_2_4(out, axis=ax)),
        weights=out,
        mask=mask,
    )


def check_2_4(weights: Any, *, axis: int = -1) -> bool:
    """True when every group of 4 consecutive weights along ``axis`` has at most 2 non-zeros."""
    w, axis = _checked(weights, axis)
    g, _ = _groups(w, axis)
    return bool(((g != 0).sum(axis=-1) <= KEEP).all())


def _checked(weights: Any, axis: Any) -> tuple[np.ndarray, int]:
    """``weights`` as a numeric array and ``axis`` as an integer, or the kit's error."""
    try:
        w = np.asarray(weights)
    except Exception as exc:  # ragged lists and the like
        raise InvalidParameter("'weights' must be a numeric array (got something else)") from exc
    if w.dtype.kind not in "fiu":
        raise InvalidParameter(f"'weights' must be a numeric array (got an array of {w.dtype})")
    if w.size == 0:
        raise InvalidParameter("'weights' must hold at least one group of 4 (got an empty array)")
    dims = max(w.ndim, 1)
    return w, check_int("axis", axis, minimum=-dims, maximum=dims - 1, allow_array=False)


@dataclass(frozen=True)
class SparseGemmResult(ResultMixin):
    """Dense vs 2:4-sparse time of one GEMM, and the step speed-up it implies."""

    m: int
    n: int
    k: int
    dtype: str
    gpu: str
    limiter: str
    dense_peak_flops_per_s: float
    sparse_peak_flops_per_s: float
    math_rate_ratio: float
    dense_time_s: float
    sparse_time_s: float
    gemm_speedup: float
    runtime_fraction: float | None
    end_to_end_speedup: float | None
    compressed_weights: bool = False
    weight_bytes_fraction: float = 1.0

    _units: ClassVar[dict[str, str]] = {
        "dense_peak_flops_per_s": "FLOP/s",
        "sparse_peak_flops_per_s": "FLOP/s",
        "dense_time_s": "s",
        "sparse_time_s": "s",
    }

    def _title(self) -> str:
        return f"2:4 sparse GEMM {self.m} x {self.n} x {self.k} ({self.dtype}) on {self.gpu}"


def sparse_gemm(
    m: int,
    n: int,
    k: int,
    *,
    dtype: str = "fp16",
    gpu: str | Gpu = "A100",
    runtime_fraction: float | None = None,
    compressed_weights: bool = False,
) -> SparseGemmResult:
    """Predicted speed-up of a GEMM whose M x K operand (the weights) is 2:4 sparse.

    Uses :func:`~dlperf_widgets.core.gemm.gemm` for the dense model and the GPU's sparse
    Tensor Core peak (``gpu.peak_flops(dtype, sparse=True)``) for the math rate; the memory
    time is unchanged, and so is the kernel's fixed cost (``core.calibration``).
    ``runtime_fraction``: the share of the whole training or inference
    step spent in GEMMs like this one, for the end-to-end (Amdahl) speed-up.
    ``compressed_weights``: read the weights in their compressed 2:4 form
    (:func:`compressed_weight_fraction` of the dense bytes) instead of crediting nothing.
    """
    g = _gpu(gpu)
    d = _dtype(dtype)
    dense = gemm(m, n, k, dtype=d.name, gpu=g)
    dense_peak = g.peak_flops(d)
    sparse_peak = g.peak_flops(d, sparse=True)
    ratio = sparse_peak / dense_peak
    if not isinstance(compressed_weights, bool):
        raise InvalidParameter(
            f"'compressed_weights' must be True or False (got {describe(compressed_weights)})"
        )
    frac = compressed_weight_fraction(d.name) if compressed_weights else 1.0
    # the weight bytes saved, at the (achievable) bandwidth gemm()'s memory term uses
    saved_s = (
        (1.0 - frac)
        * dense.m
        * dense.k
        * d.bytes_per_element
        / (g.memory_bandwidth_bytes_per_s * dense.memory_fraction)
    )
    # the same kernel with its math at the sparse rate: the dense time with its overlapped
    # work replaced (the fixed costs, a split-K reduction kernel included, do not shrink)
    fixed = dense.predicted_time_s - overlap_time(dense.math_time_s, dense.memory_time_s)
    sparse_time = fixed + overlap_time(dense.math_time_s / ratio, dense.memory_time_s - saved_s)
    speedup = dense.predicted_time_s / sparse_time
    e2e = None
    if runtime_fraction is not None:
        frac = check_number("runtime_fraction", runtime_fraction, minimum=0, maximum=1)
        e2e = float(amdahl_speedup(frac, speedup))
    return SparseGemmResult(
        m=dense.m,
        n=dense.n,
        k=dense.k,
        dtype=d.name,
        gpu=g.name,
        limiter=dense.limiter,
        dense_peak_flops_per_s=dense_peak,
        sparse_peak_flops_per_s=sparse_peak,
        math_rate_ratio=ratio,
        dense_time_s=dense.predicted_time_s,
        sparse_time_s=sparse_time,
        gemm_speedup=speedup,
        runtime_fraction=None if runtime_fraction is None else float(runtime_fraction),
        end_to_end_speedup=e2e,
        compressed_weights=compressed_weights,
        weight_bytes_fraction=frac,
    )


def compressed_weight_fraction(dtype: str = "fp16") -> float:
    """Bytes of a 2:4-compressed matrix over its dense bytes: half the values plus a 2-bit
    index per kept value, ``0.5 * (1 + 2 / (8 * element bytes))`` (0.5625 for FP16)."""
    d = _dtype(dtype)
    return KEEP / GROUP * (1.0 + 2.0 / (8.0 * d.bytes_per_element))


def amdahl_speedup(fraction: Any, speedup: Any) -> Any:
    """Whole-step speed-up when ``fraction`` of the time runs ``speedup`` times faster.

    1 / ((1 - f) + f / s), vectorised over numpy arrays.
    """
    f = as_floats("fraction", fraction, "a number between 0 and 1")
    s = as_floats("speedup", speedup, "a positive number")
    if np.any(~np.isfinite(f) | (f < 0) | (f > 1)):
        raise InvalidParameter(
            f"'fraction' must be a number between 0 and 1 (got {describe(fraction)})"
        )
    if np.any(~np.isfinite(s) | (s <= 0)):
        raise InvalidParameter(f"'speedup' must be a positive number (got {describe(speedup)})")
    out = 1.0 / ((1.0 - f) + f / s)
    return float(out) if out.ndim == 0 and not is_array(fraction) else out


def sparse_fraction_for_speedup(target: float, speedup: float = 2.0) -> float:
    """The runtime fraction that must speed up ``speedup`` times for a ``target`` overall.

    Inverse of Amdahl's law: f = (1 - 1/target) / (1 - 1/speedup). With 2x sparse GEMMs a
    30 % faster step needs f = 0.46 of the time in math-bound, sparsifiable GEMMs.
    """
    t = check_number("target", target, minimum=1)
    s = check_number("speedup", speedup, minimum=1, strict=True)
    f = (1 - 1 / t) / (1 - 1 / s)
    if f > 1:
        raise InvalidParameter(
            f"'target' must be at most the speed-up {s:g} itself (got {describe(target)})"
        )
    return f
