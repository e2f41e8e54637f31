"""Loss scaling: how many gradients FP16 keeps at a scale S, and dynamic scaling.

The slides "NN Performance optimization" ("Mixed precision training") show the histogram
of activation-gradient magnitudes of a Multibox SSD network trained in FP32 (from
Micikevicius et al. 2018, "Mixed Precision Training"): FP16's range could hold the whole
histogram, but unscaled, about half of the values fall below FP16's smallest subnormal and
become zero. Multiplying the loss by S multiplies every gradient by S (the chain rule is
linear) and shifts the histogram right by log2(S) binades; the optimizer divides by S again.

:func:`loss_scale_effect` gives the fractions lost to underflow and overflow at a scale S,
for a log-normal distribution of magnitudes (analytically) or for a given array (by
rounding it with :func:`~dlperf_widgets.core.formats.simulate_cast`).

:func:`simulate_grad_scaler` replays ``torch.amp.GradScaler``'s dynamic scaling
(``_amp_update_scale_``): a step whose gradients hold inf/NaN is skipped and the scale is
multiplied by ``backoff_factor``; after ``growth_interval`` clean steps in a row it is
multiplied by ``growth_factor`` (only if the result is finite in float32, where the scale
lives). Defaults are PyTorch's: 65536, 2, 0.5, 2000.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validate import as_floats, check_bool, check_int, check_number, describe, is_array
from .errors import InvalidParameter
from .formats import number_format, simulate_cast
from .results import ResultMixin

__all__ = [
    "SSD_LIKE_LOG2_MEAN",
    "SSD_LIKE_LOG2_STD",
    "GradScalerTrace",
    "LossScaleResult",
    "loss_scale_effect",
    "simulate_grad_scaler",
]

# An illustrative log-normal shaped like the slides' SSD histogram, not a fit to data: the
# median sits at FP16's underflow threshold (2**-25, half the smallest subnormal), so that
# unscaled "half of the activations would be cast to 0" as the slides say, and the spread
# (6 binades) puts the upper tail well inside FP16's range.
SSD_LIKE_LOG2_MEAN = -25.0
SSD_LIKE_LOG2_STD = 6.0


@dataclass(frozen=True)
class LossScaleResult(ResultMixin):
    """Fractions of gradient magnitudes lost (or kept) when scaled by ``scale`` and cast.

    ``underflow_fraction``: became zero; ``overflow_fraction``: became inf (a GradScaler
    would skip the step); ``subnormal_fraction``: non-zero but below the smallest normal
    number (fewer significant bits); ``kept_fraction`` = 1 - underflow - overflow. Fields
    are arrays when ``scale`` is an array.
    """

    format: str
    source: str  # "lognormal" or "array"
    scale: Any
    log2_scale: Any
    underflow_fraction: Any
    overflow_fraction: Any
    subnormal_fraction: Any
    kept_fraction: Any
    underflow_threshold: float
    overflow_threshold: float
    min_normal: float

    def _title(self) -> str:
        return f"Loss scaling into {self.format} ({self.source} gradients)"


def _phi(z: Any) -> Any:
    """Standard normal CDF, vectorised (math.erf through np.vectorize keeps numpy-only)."""
    return 0.5 * (1.0 + _erf(np.asarray(z, dtype=np.float64) / math.sqrt(2.0)))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def loss_scale_effect(
    scale: Any = 1.0,
    *,
    gradients: Any = None,
    log2_mean: float = SSD_LIKE_LOG2_MEAN,
    log2_std: float = SSD_LIKE_LOG2_STD,
    format: str = "fp16",
) -> LossScaleResult:
    """Fractions lost to underflow/overflow when gradients are multiplied by ``scale``.

    Without ``gradients``: magnitudes are log-normal, log2|g| ~ Normal(log2_mean,
    log2_std), and the fractions are exact normal probabilities (``scale`` may be an
    array). With ``gradients`` (any array, e.g. measured from a model): each value is
    multiplied by ``scale`` and rounded with the format's real rounding rules.
    """
    fmt = number_format(format)
    if fmt.kind != "float":
        raise InvalidParameter(f"'format' must be a floating-point format (got {describe(format)})")
    if is_array(scale):
        s = as_floats("scale", scale, "a positive number")
        if s.size == 0 or not np.all(np.isfinite(s) & (s > 0)):
            raise InvalidParameter(
                "'scale' must be a positive number (got an array with a non-positive or non-finite element)"
            )
    else:
        s = np.float64(check_number("scale", scale, minimum=0, strict=True))
    lo, hi = fmt.underflow_threshold, fmt.overflow_threshold
    if gradients is None:
        mu = check_number("log2_mean", log2_mean)
        sd = check_number("log2_std", log2_std, minimum=0, strict=True)
        shifted = mu + np.log2(s)
        under = _phi((math.log2(lo) - shifted) / sd)
        over = 1.0 - _phi((math.log2(hi) - shifted) / sd)
        below_normal = _phi((math.log2(fmt.min_normal) - shifted) / sd)
        sub = below_normal - under
        source = "lognormal"
    else:
        if is_array(scale):
            raise InvalidParameter(
                "'scale' must be a single number when 'gradients' is given (got an array)"
            )
        g = np.abs(as_floats("gradients", gradients, "an array of numbers")).ravel()
        g = g[np.isfinite(g)]
        if g.size == 0:
            raise InvalidParameter("'gradients' must hold at least one finite number (got none)")
        cast = simulate_cast(g * s, fmt.name)
        n = g.size
        under = np.float64(cast.underflow / n)
        over = np.float64(cast.overflow / n)
        sub = np.float64(cast.subnormal / n)
        source = "array"
    kept = 1.0 - under - over

    def out(v: Any) -> Any:
        v = np.asarray(v, dtype=np.float64)
        return float(v) if v.ndim == 0 else v

    return LossScaleResult(
        format=fmt.name,
        source=source,
        scale=out(s),
        log2_scale=out(np.log2(s)),
        underflow_fraction=out(under),
        overflow_fraction=out(over),
        subnormal_fraction=out(sub),
        kept_fraction=out(kept),
        underflow_threshold=lo,
        overflow_threshold=hi,
        min_normal=fmt.min_normal,
    )


@dataclass(frozen=True)
class GradScalerTrace(ResultMixin):
    """Step-by-step history of a dynamic loss scaler.

    ``scale[i]`` is the scale step i ran with (what ``GradScaler.get_scale()`` returns
    before ``step``); ``skipped[i]`` whether the optimizer step was skipped; ``final_scale``
    the scale after the last ``update()``; ``growth_tracker`` the count of clean steps
    since the last change.
    """

    steps: int
    init_scale: float
    growth_factor: float
    backoff_factor: float
    growth_interval: int
    scale: tuple[float, ...]
    skipped: tuple[bool, ...]
    skipped_steps: int
    applied_steps: int
    growths: int
    backoffs: int
    final_scale: float
    growth_tracker: int

    def _title(self) -> str:
        return f"Dynamic loss scaling over {self.steps} steps"


def simulate_grad_scaler(
    found_inf: Any = None,
    *,
    max_abs_grad: Any = None,
    format: str = "fp16",
    init_scale: float = 65536.0,
    growth_factor: float = 2.0,
    backoff_factor: float = 0.5,
    growth_interval: int = 2000,
) -> GradScalerTrace:
    """Replay ``torch.amp.GradScaler`` for a sequence of steps.

    Give either ``found_inf`` (one bool per step: did the scaled gradients hold inf/NaN?)
    or ``max_abs_grad`` (the largest unscaled gradient magnitude of each step; the step
    overflows when it times the current scale rounds to inf in ``format``, or is not
    finite itself). The replay is exact while the scale stays a normal float32 number
    (above 2**-126, i.e. always in practice); below that PyTorch's unscaling by the
    reciprocal misbehaves in ways this model does not follow.
    """
    if (found_inf is None) == (max_abs_grad is None):
        raise InvalidParameter(
            "'found_inf' or 'max_abs_grad' must be given, exactly one of them (got "
            f"{'both' if found_inf is not None else 'neither'})"
        )
    init = check_number("init_scale", init_scale, minimum=0, strict=True)
    growth = check_number("growth_factor", growth_factor, minimum=1, strict=True)
    backoff = check_number("backoff_factor", backoff_factor, minimum=0, strict=True, maximum=1)
    if backoff >= 1:
        raise InvalidParameter(
            f"'backoff_factor' must be a number < 1 (got {describe(backoff_factor)})"
        )
    interval = check_int("growth_interval", growth_interval, allow_array=False)
    if found_inf is not None:
        raw = np.asarray(found_inf, dtype=object).ravel() if is_array(found_inf) else [found_inf]
        flags = [check_bool("found_inf", v) for v in raw]
        grads = None
    else:
        grads = as_floats("max_abs_grad", max_abs_grad, "an array of numbers").ravel()
        flags = []
        threshold = number_format(format).overflow_threshold
    # The scale is a float32 tensor in torch; products are formed in double and stored.
    scale = np.float32(init)
    tracker = 0
    history: list[float] = []
    skipped: list[bool] = []
    growths = backoffs = 0
    n = len(flags) if grads is None else grads.size
    for i in range(n):
        history.append(float(scale))
        if grads is None:
            inf = flags[i]
        else:
            g = float(grads[i])  # Python floats overflow to inf without a warning
            inf = (not math.isfinite(g)) or abs(g) * float(scale) >= threshold
        skipped.append(inf)
        if inf:
            scale = np.float32(float(scale) * backoff)
            tracker = 0
            backoffs += 1
        else:
            tracker += 1
            if tracker == interval:
                with np.errstate(over="ignore"):
                    grown = np.float32(float(scale) * growth)
                if np.isfinite(grown):
                    scale = grown
                    growths += 1
                tracker = 0
    return GradScalerTrace(
        steps=n,
        init_scale=float(np.float32(init)),
        growth_factor=growth,
        backoff_factor=backoff,
        growth_interval=interval,
        scale=tuple(history),
        skipped=tuple(skipped),
        skipped_steps=sum(skipped),
        applied_steps=n - sum(skipped),
        growths=growths,
        backoffs=backoffs,
        final_scale=float(scale),
        growth_tracker=tracker,
    )
