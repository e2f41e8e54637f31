"""Explain the gap between a plain roofline, the model and a measurement.

A plain roofline says a GEMM takes max(FLOPs / peak, bytes / bandwidth) at the datasheet
figures. The model of ``core.gemm`` adds what real GPUs do on top of it: achievable
fractions of peak and bandwidth (``core.calibration``), tile and wave quantization, the tile
shape's efficiency, the alignment penalty (NVIDIA slides "NN Performance optimization",
"Tile and wave quantization"; "Get Started With Deep Learning Performance", 2.2), imperfect
overlap of math and data movement and a fixed cost per kernel. This module takes the
model's own walk (:meth:`GemmResult.steps`) and adds the measurement at its end:

    math at peak -> + memory bound -> + achievable -> + tile -> + wave -> + tile shape
    -> + alignment [-> + split-K] -> + overlap -> + overhead (= the model)
    -> + unexplained (= the measurement)

The order is a choice and the split depends on it; the total does not.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core._validate import check_number
from ..core.assumptions import DEFAULT_CACHE, DEFAULT_CONTEXT
from ..core.errors import InvalidParameter
from ..core.gemm import GemmResult, gemm
from ..core.gpus import Gpu
from ..core.results import ResultMixin, format_quantity

__all__ = [
    "EFFECTS",
    "MODEL_EFFECTS",
    "Effect",
    "ErrorSummary",
    "Reconciliation",
    "error_summary",
    "reconcile",
    "reconcile_gemm",
    "relative_error",
    "roofline_time_s",
]

EFFECTS = (
    "math_peak",
    "memory",
    "achievable",
    "tile",
    "wave",
    "tile_shape",
    "alignment",
    "l2",
    "split_k",
    "epilogue",
    "power",
    "overlap",
    "quantize",
    "overhead",
    "unexplained",
)
MODEL_EFFECTS = EFFECTS[2:-1]


def roofline_time_s(model: GemmResult) -> float:
    """Plain roofline time: max(FLOPs / peak, bytes / bandwidth) at the datasheet figures."""
    return model.roofline_time_s


def relative_error(predicted: float, measured: float) -> float:
    """|predicted - measured| / measured: the error as a fraction of the measurement."""
    return abs(predicted - measured) / measured


@dataclass(frozen=True)
class Effect:
    """One step of the walk: the effect, its efficiency (1 = no loss), the time after the
    step, the time it adds, and its share of the gap between the roofline and the end."""

    effect: str
    efficiency: float | None
    time_s: float
    added_time_s: float
    share_of_gap: float | None


@dataclass(frozen=True)
class Reconciliation(ResultMixin):
    """Roofline, model and (optionally) measurement of one GEMM, with the gap split by effect.

    ``roofline_error`` and ``model_error`` are relative errors against the measurement
    (None without one); ``explained_share`` is the part of the measured gap above the
    roofline that the model's effects account for.
    """

    m: int
    n: int
    k: int
    batch: int
    dtype: str
    gpu: str
    math_peak_time_s: float
    roofline_time_s: float
    predicted_time_s: float
    measured_time_s: float | None
    effects: tuple[Effect, ...]
    roofline_error: float | None
    model_error: float | None
    explained_share: float | None

    @property
    def dominant_effect(self) -> str | None:
        """The model effect that adds the most time above the roofline, or None."""
        model_steps = [e for e in self.effects if e.effect in MODEL_EFFECTS and e.added_time_s > 0]
        if not model_steps:
            return None
        return max(model_steps, key=lambda e: e.added_time_s).effect

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["dominant_effect"] = self.dominant_effect
        return out

    def _title(self) -> str:
        b = f"{self.batch} x " if self.batch != 1 else ""
        return f"Where the time goes: GEMM {b}{self.m} x {self.n} x {self.k} ({self.dtype}) on {self.gpu}"

    def table(self) -> str:
        """The walk as an aligned text table."""
        head = f"{'step':<12} {'efficiency':>10} {'time':>12} {'adds':>12} {'share of gap':>13}"
        lines = [head]
        for e in self.effects:
            eff = "-" if e.efficiency is None else f"{e.efficiency:.1%}"
            share = "-" if e.share_of_gap is None else f"{e.share_of_gap:.0%}"
            lines.append(
                f"{e.effect:<12} {eff:>10} {format_quantity(e.time_s, 's'):>12} "
                f"{format_quantity(e.added_time_s, 's'):>12} {share:>13}"
            )
        return "\n".join(lines)

    def _rows(self) -> list[tuple[str, str]]:
        rows = [
            ("plain roofline", format_quantity(self.roofline_time_s, "s")),
            ("model", format_quantity(self.predicted_time_s, "s")),
        ]
        if self.measured_time_s is not None:
            rows.append(("measured", format_quantity(self.measured_time_s, "s")))
            rows.append(("roofline error", f"{self.roofline_error:.1%}"))
            rows.append(("model error", f"{self.model_error:.1%}"))
            if self.explained_share is not None:
                rows.append(("gap explained by the model", f"{self.explained_share:.0%}"))
        for e in self.effects[1:]:
            if e.effect == "unexplained" or e.added_time_s > 0:
                eff = "" if e.efficiency is None else f" (efficiency {e.efficiency:.1%})"
                rows.append((f"+ {e.effect}", f"{format_quantity(e.added_time_s, 's')}{eff}"))
        return rows

    def __str__(self) -> str:
        return super().__str__() + "\n" + self.table()


def reconcile(model: Any, measured_time_s: float | None = None) -> Reconciliation:
    """Split the gap roofline -> model (-> measurement) of one GEMM by effect.

    ``model`` is a :class:`GemmResult` or a measured ``GemmTiming`` with a model (its
    median is the measurement unless ``measured_time_s`` is given).
    """
    if not isinstance(model, GemmResult):
        timing = model
        inner = getattr(timing, "model", None)
        if inner is None:
            raise InvalidParameter(
                "'model' must be a GemmResult or a GPU GemmTiming that has a model "
                f"prediction (got {type(timing).__name__} without one)"
            )
        if measured_time_s is None:
            measured_time_s = float(timing.measured_time_s)
        model = inner
    if measured_time_s is not None:
        measured_time_s = check_number("measured_time_s", measured_time_s, minimum=0, strict=True)

    # The model's own walk from the ideal time to its prediction (GemmResult.steps).
    steps: list[tuple[str, float | None, float]] = [
        (st.effect, st.efficiency, st.time_s) for st in model.steps()
    ]
    predicted = model.predicted_time_s
    if measured_time_s is not None:
        steps.append(("unexplained", None, measured_time_s))

    roof = steps[1][2]
    end = steps[-1][2]
    gap = end - roof
    effects = []
    previous = 0.0
    for i, (name, eff, t) in enumerate(steps):
        added = t if i == 0 else t - previous
        share = added / gap if (i >= 2 and gap > 0) else None
        effects.append(Effect(name, eff, t, added, share))
        previous = t

    roof_err: float | None = None
    model_err: float | None = None
    explained: float | None = None
    if measured_time_s is not None:
        roof_err = relative_error(roof, measured_time_s)
        model_err = relative_error(predicted, measured_time_s)
        measured_gap = measured_time_s - roof
        explained = (predicted - roof) / measured_gap if measured_gap > 0 else None
    return Reconciliation(
        m=model.m,
        n=model.n,
        k=model.k,
        batch=model.batch,
        dtype=model.dtype,
        gpu=model.gpu,
        math_peak_time_s=steps[0][2],
        roofline_time_s=roof,
        predicted_time_s=predicted,
        measured_time_s=measured_time_s,
        effects=tuple(effects),
        roofline_error=roof_err,
        model_error=model_err,
        explained_share=explained,
    )


def reconcile_gemm(
    m: int,
    n: int,
    k: int,
    *,
    dtype: str = "fp16",
    gpu: str | Gpu = "A100",
    batch: int = 1,
    beta: float = 0.0,
    measured_time_s: float | None = None,
    context: str = DEFAULT_CONTEXT,
    cache: str = DEFAULT_CACHE,
    quantize: str = "none",
    sustained: bool = False,
) -> Reconciliation:
    """:func:`reconcile` for a GEMM given by its sizes (the model is run here), in the timing
    context, cache state, power state (``sustained``: the board already at its power limit)
    and FP8 recipe the measurement was taken in (like with like).

    >>> r = reconcile_gemm(8192, 8192, 8192, dtype="fp16", gpu="A100")
    >>> r.roofline_time_s <= r.predicted_time_s
    True
    """
    model = gemm(
        m,
        n,
        k,
        dtype=dtype,
        gpu=gpu,
        batch=batch,
        beta=beta,
        context=context,
        cache=cache,
        quantize=quantize,
        sustained=sustained,
    )
    return reconcile(model, measured_time_s)


@dataclass(frozen=True)
class ErrorSummary(ResultMixin):
    """Relative errors of the model and of a plain roofline over ``count`` measurements
    (errors as fractions of the measured time): median, 90th percentile and worst, and the
    median of measured / predicted (above 1: the model is too fast)."""

    count: int
    model_median_error: float
    model_p90_error: float
    model_worst_error: float
    roofline_median_error: float
    roofline_p90_error: float
    roofline_worst_error: float
    median_measured_over_predicted: float
    median_measured_over_roofline: float

    def _rows(self) -> list[tuple[str, str]]:
        return [
            ("measurements", str(self.count)),
            (
                "model error (median / p90 / worst)",
                f"{self.model_median_error:.1%} / {self.model_p90_error:.1%} / "
                f"{self.model_worst_error:.1%}",
            ),
            (
                "plain roofline error (median / p90 / worst)",
                f"{self.roofline_median_error:.1%} / {self.roofline_p90_error:.1%} / "
                f"{self.roofline_worst_error:.1%}",
            ),
            ("median measured / model", f"{self.median_measured_over_predicted:.2f}"),
            ("median measured / roofline", f"{self.median_measured_over_roofline:.2f}"),
        ]


def _p90(values: Sequence[float]) -> float:
    """The 90th percentile, linear between order statistics (numpy's default)."""
    ordered = sorted(values)
    pos = 0.9 * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def error_summary(
    measured: Sequence[float], predicted: Sequence[float], roofline: Sequence[float]
) -> ErrorSummary:
    """Relative errors of predictions and rooflines against measurements, summarised.

    >>> error_summary([1.0, 2.0], [1.1, 2.0], [0.5, 1.0]).model_worst_error
    0.10000000000000009
    """
    if not (len(measured) == len(predicted) == len(roofline)) or not measured:
        raise InvalidParameter(
            "'measured' must be a non-empty sequence as long as 'predicted' and 'roofline' "
            f"(got {len(measured)}, {len(predicted)} and {len(roofline)} values)"
        )
    model_err = [relative_error(p, t) for p, t in zip(predicted, measured, strict=True)]
    roof_err = [relative_error(r, t) for r, t in zip(roofline, measured, strict=True)]
    return ErrorSummary(
        count=len(measured),
        model_median_error=statistics.median(model_err),
        model_p90_error=_p90(model_err),
        model_worst_error=max(model_err),
        roofline_median_error=statistics.median(roof_err),
        roofline_p90_error=_p90(roof_err),
        roofline_worst_error=max(roof_err),
        median_measured_over_predicted=statistics.median(
            t / p for t, p in zip(measured, predicted, strict=True)
        ),
        median_measured_over_roofline=statistics.median(
            t / r for t, r in zip(measured, roofline, strict=True)
        ),
    )
