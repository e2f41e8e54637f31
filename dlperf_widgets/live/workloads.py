"""Whole-workload measurements beside the kernel-by-kernel model.

The shipped file ``live/data/workloads/e2e_workloads.csv`` holds published figures of whole
workloads (training throughput and step times, prefill times, decode rates, attention kernel
times, training memory), each with the configuration the kit prices it at. This module prices
every row with :func:`dlperf_widgets.core.workload.workload` and
:func:`~dlperf_widgets.core.workload.price` and reports the error by kind. Needs numpy only.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from importlib import resources
from typing import Any, ClassVar

import numpy as np

from ..core.errors import InvalidParameter
from ..core.inference import LlmSpec, llm
from ..core.results import ResultMixin
from ..core.workload import WorkloadTime, price, workload
from .reconcile import _p90, relative_error

__all__ = [
    "WorkloadError",
    "WorkloadErrorReport",
    "load_workload_measurements",
    "predict_measurement",
    "workload_error_report",
]

_SPEC_INTS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "head_vocab")
_SPEC_BOOLS = ("gated_mlp", "tied_embeddings")


def load_workload_measurements() -> list[dict[str, str]]:
    """The shipped rows, as dicts keyed by the file's columns (comment lines skipped)."""
    text = (
        resources.files("dlperf_widgets.live.data")
        .joinpath("workloads/e2e_workloads.csv")
        .read_text("utf-8")
    )
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return [dict(r) for r in csv.DictReader(lines)]


def _value(text: str) -> Any:
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        return text


def _model(text: str) -> LlmSpec:
    """A model name, or 'name:key=value;...' for an LlmSpec of the row's own."""
    if ":" not in text:
        return llm(text)
    name, _, rest = text.partition(":")
    kw: dict[str, Any] = {}
    for item in rest.split(";"):
        key, _, val = item.partition("=")
        kw[key] = _value(val)
    kw.setdefault("head_dim", kw["hidden"] // kw["heads"])
    return LlmSpec(name=name, **kw)


def _options(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    build: dict[str, Any] = {}
    pricing: dict[str, Any] = {}
    for item in text.split(";"):
        key, _, val = item.partition("=")
        target = pricing if key.startswith("price.") else build
        target[key.removeprefix("price.")] = _value(val)
    return build, pricing


def _layer_time(p: WorkloadTime, passes: tuple[str, ...]) -> float:
    w = p.workload
    sel = np.array([k.path.startswith("layers") and k.pass_ in passes for k in w.kernels])
    total = float((p.times_s * w.column("count"))[sel].sum())
    return total / (w.spec.layers // w.pipeline_parallel) / w.micro_batches


def predict_measurement(row: dict[str, str]) -> tuple[float, WorkloadTime]:
    """The model's prediction of one row's metric (in the row's unit), and the priced step."""
    build, pricing = _options(row["options"])
    w = workload(_model(row["model"]), **build)
    p = price(w, row["gpu"], **pricing)
    metric = row["metric"]
    if metric == "tokens_per_s_per_gpu":
        value = w.tokens / p.step_s
    elif metric == "step_s":
        value = p.step_s
    elif metric == "samples_per_s":
        value = w.batch * w.micro_batches / p.step_s
    elif metric == "memory_mib":
        value = p.memory_bytes / 2**20
    elif metric == "decode_tokens_per_s":
        value = w.batch / p.step_s
    elif metric == "prefill_s":
        # time to the first token: one forward over every prompt (a row priced as another
        # phase would compare a prefill with a different step)
        if w.phase != "prefill":
            raise InvalidParameter(
                f"'options' must say phase=prefill for metric 'prefill_s' (got phase={w.phase!r})"
            )
        value = p.step_s
    elif metric == "attention_forward_s":
        sel = np.array([k.path.endswith(".attn") and k.name != "rotary" for k in w.kernels])
        value = float((p.times_s * w.column("count"))[sel].sum())
    elif metric in ("layer_forward_s", "layer_backward_s", "layer_step_s"):
        passes = {"layer_forward_s": ("forward",), "layer_backward_s": ("backward", "recompute")}
        value = _layer_time(p, passes.get(metric, ("forward", "backward", "recompute")))
    else:
        raise InvalidParameter(f"'metric' must be a known metric (got {metric!r})")
    unit = row["unit"]
    scale = {"ms": 1e3, "s": 1.0}.get(unit, 1.0)
    if metric.endswith("_s") and unit in ("ms", "s"):
        value *= scale
    return value, p


@dataclass(frozen=True)
class WorkloadError(ResultMixin):
    """One published measurement and the model's prediction of it."""

    id: str
    kind: str
    gpu: str
    metric: str
    unit: str
    measured: float
    predicted: float
    error: float
    measured_over_predicted: float


@dataclass(frozen=True)
class WorkloadErrorReport(ResultMixin):
    """Errors of the kernel-by-kernel model on the shipped whole-workload measurements:
    by kind, count, median and 90th-percentile relative error, worst, and rows more than
    2x off (in either direction)."""

    rows: tuple[WorkloadError, ...]
    by_kind: dict[str, dict[str, float]]

    _hidden: ClassVar[tuple[str, ...]] = ("rows",)

    def _title(self) -> str:
        return f"Model against {len(self.rows)} published whole-workload measurements"

    def __str__(self) -> str:
        lines = [self._title(), "  kind        rows  median  p90     worst   beyond 2x"]
        for kind, s in self.by_kind.items():
            lines.append(
                f"  {kind:<10}  {int(s['count']):>4}  {s['median_error']:>6.1%}  "
                f"{s['p90_error']:>6.1%}  {s['worst_error']:>6.1%}  {int(s['beyond_2x']):>3}"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return "<pre>" + str(self) + "</pre>"


def workload_error_report() -> WorkloadErrorReport:
    """Price every shipped whole-workload measurement and summarise the errors by kind."""
    out: list[WorkloadError] = []
    for row in load_workload_measurements():
        pred, _ = predict_measurement(row)
        meas = float(row["published_value"])
        out.append(
            WorkloadError(
                id=row["id"],
                kind=row["kind"],
                gpu=row["gpu"],
                metric=row["metric"],
                unit=row["unit"],
                measured=meas,
                predicted=pred,
                error=relative_error(pred, meas),
                measured_over_predicted=meas / pred,
            )
        )
    by_kind: dict[str, dict[str, float]] = {}
    for kind in dict.fromkeys(r.kind for r in out):
        errs = [r.error for r in out if r.kind == kind]
        ratios = [r.measured_over_predicted for r in out if r.kind == kind]
        by_kind[kind] = {
            "count": float(len(errs)),
            "median_error": statistics.median(errs),
            "p90_error": _p90(errs),
            "worst_error": max(errs),
            "beyond_2x": float(sum(1 for q in ratios if q > 2 or q < 0.5)),
            "median_measured_over_predicted": statistics.median(ratios),
        }
    return WorkloadErrorReport(rows=tuple(out), by_kind=by_kind)
