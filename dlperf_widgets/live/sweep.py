"""Measure a GEMM while one dimension sweeps a range, beside the model's curve.

A sweep shows a progress bar (an ipywidgets ``IntProgress`` in a notebook, a text line
elsewhere, or your own callback), stops before a point that would overrun its time budget
and says so, and returns a table that joins each measurement with the model's prediction
and the model's efficiencies (tile, wave, tile shape, alignment) for the same shape.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core._validate import check_choice, check_int, check_number
from ..core.errors import InvalidParameter
from ..core.gemm import GemmSweep, gemm, gemm_sweep
from ..core.gpus import Gpu
from ..core.gpus import gpu as _gpu
from ..core.results import ResultMixin, format_quantity
from .device import detect_device
from .reconcile import Reconciliation, reconcile
from .timing import GemmTiming, time_gemm

__all__ = ["SWEEP_DIMS", "GemmSweepTiming", "sweep_gemm"]

SWEEP_DIMS = ("m", "n", "k", "batch")
ProgressCallback = Callable[[int, int, GemmTiming], None]


class _Progress:
    """Progress display: a callback, a notebook widget, a text line, or nothing."""

    def __init__(self, total: int, progress: bool | ProgressCallback, label: str) -> None:
        self.total = total
        self.label = label
        self.callback: ProgressCallback | None = progress if callable(progress) else None
        self.widget: Any = None
        self.text = False
        if self.callback is None and progress:
            self.widget = _notebook_bar(total, label)
            self.text = self.widget is None

    def update(self, done: int, timing: GemmTiming) -> None:
        if self.callback is not None:
            self.callback(done, self.total, timing)
        elif self.widget is not None:
            self.widget.value = done
            self.widget.description = f"{done}/{self.total}"
        elif self.text:
            sys.stderr.write(f"\r{self.label}: {done}/{self.total}")
            sys.stderr.flush()

    def close(self, message: str) -> None:
        if self.widget is not None:
            self.widget.bar_style = "success" if not message else "warning"
        elif self.text:
            sys.stderr.write(f"\r{self.label}: done{'; ' + message if message else ''}\n")
            sys.stderr.flush()


def _notebook_bar(total: int, label: str) -> Any:
    """An ipywidgets IntProgress shown in the running notebook, or None outside one."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
        return None
    try:
        import ipywidgets  # type: ignore[import-untyped]
    except ImportError:
        return None
    bar = ipywidgets.IntProgress(value=0, min=0, max=total, description=f"0/{total}")
    bar.layout.width = "50%"
    display(ipywidgets.HBox([ipywidgets.Label(label), bar]))
    return bar


@dataclass(frozen=True)
class GemmSweepTiming(ResultMixin):
    """Measurements along one dimension, joined with the model where there is a GPU model.

    ``requested`` is how many values were asked for; ``values`` those measured.
    ``completed`` is False when the time budget or an interrupt stopped the sweep, and
    ``stopped_reason`` says which. ``model`` is the vectorised model of the measured
    shapes (None on the CPU unless ``model_gpu`` was given).
    """

    dim: str
    values: tuple[int, ...]
    requested: int
    m: int
    n: int
    k: int
    batch: int
    dtype: str
    device: str
    device_kind: str
    timings: tuple[GemmTiming, ...]
    completed: bool
    stopped_reason: str
    elapsed_s: float
    time_budget_s: float
    model_gpu: str | None
    model: GemmSweep | None = field(default=None, repr=False)
    gpu_entry: Gpu | None = field(default=None, repr=False)

    @property
    def measured_time_s(self) -> np.ndarray:
        return np.array([t.measured_time_s for t in self.timings])

    @property
    def measured_flops_per_s(self) -> np.ndarray:
        return np.array([t.measured_flops_per_s for t in self.timings])

    @property
    def predicted_time_s(self) -> np.ndarray | None:
        return None if self.model is None else np.asarray(self.model.predicted_time_s)

    def table(self) -> list[dict[str, Any]]:
        """One dict per measured point: sizes, measured, predicted and the model's factors."""
        rows = []
        for i, t in enumerate(self.timings):
            row: dict[str, Any] = {
                self.dim: self.values[i],
                "m": t.m,
                "n": t.n,
                "k": t.k,
                "batch": t.batch,
                "measured_time_s": t.measured_time_s,
                "measured_flops_per_s": t.measured_flops_per_s,
            }
            if self.model is not None:
                mdl = self.model
                pred = float(np.asarray(mdl.predicted_time_s)[i])
                row.update(
                    predicted_time_s=pred,
                    predicted_flops_per_s=float(np.asarray(mdl.predicted_flops_per_s)[i]),
                    measured_over_predicted=t.measured_time_s / pred,
                    tile=str(np.asarray(mdl.tile)[i]),
                    split_k=int(
                        np.asarray(getattr(mdl, "split_k", 1)).ravel()[i]
                        if np.ndim(getattr(mdl, "split_k", 1))
                        else 1
                    ),
                    waves=int(np.asarray(mdl.waves)[i]),
                    tile_efficiency=float(np.asarray(mdl.tile_efficiency)[i]),
                    wave_efficiency=float(np.asarray(mdl.wave_efficiency)[i]),
                    alignment_efficiency=float(np.asarray(mdl.alignment_efficiency)[i]),
                    limiter=str(np.asarray(mdl.limiter)[i]),
                )
            rows.append(row)
        return rows

    def reconcile(self) -> list[Reconciliation]:
        """Each point's gap roofline -> model -> measurement split by effect (needs a model)."""
        if self.model is None:
            raise InvalidParameter(
                "'model_gpu' must be given to reconcile a CPU sweep with a GPU model "
                "(got none: the sweep ran on the CPU)"
            )
        out = []
        for t in self.timings:
            model = t.model or gemm(
                t.m,
                t.n,
                t.k,
                dtype=self.dtype,
                gpu=self.gpu_entry or str(self.model_gpu),
                batch=t.batch,
            )
            out.append(reconcile(model, t.measured_time_s))
        return out

    def to_dict(self) -> dict[str, Any]:
        out = {
            k: v for k, v in super().to_dict().items() if k not in ("timings", "model", "gpu_entry")
        }
        out["rows"] = self.table()
        return out

    def _title(self) -> str:
        return (
            f"Sweep of {self.dim} over {len(self.values)} of {self.requested} values "
            f"({self.dtype}) on {self.device}"
        )

    def _rows(self) -> list[tuple[str, str]]:
        rows = [
            (
                "fixed sizes",
                ", ".join(f"{d}={getattr(self, d)}" for d in SWEEP_DIMS if d != self.dim),
            ),
            ("elapsed", f"{self.elapsed_s:.2f} s of a {self.time_budget_s:g} s budget"),
        ]
        if not self.completed:
            rows.append(("stopped", self.stopped_reason))
        if self.model_gpu and self.device_kind == "cpu":
            rows.append(("note", f"model for {self.model_gpu}, measured on the CPU"))
        return rows

    def __str__(self) -> str:
        head = f"{self.dim:>7} {'measured':>11} {'FLOP/s':>14}"
        if self.model is not None:
            head += f" {'predicted':>11} {'meas/pred':>9} {'tile':>8} {'waves':>5}"
        lines = [super().__str__(), head]
        for row in self.table():
            line = (
                f"{row[self.dim]:>7} {format_quantity(row['measured_time_s'], 's'):>11} "
                f"{format_quantity(row['measured_flops_per_s'], 'FLOP/s'):>14}"
            )
            if "predicted_time_s" in row:
                line += (
                    f" {format_quantity(row['predicted_time_s'], 's'):>11} "
                    f"{row['measured_over_predicted']:>9.2f} {row['tile']:>8} {row['waves']:>5}"
                )
            lines.append(line)
        return "\n".join(lines)


def sweep_gemm(
    dim: str,
    values: Iterable[int],
    *,
    m: int = 1024,
    n: int = 1024,
    k: int = 1024,
    batch: int = 1,
    dtype: str = "fp16",
    device: str = "auto",
    repeats: int | None = None,
    warmup: int | None = None,
    flush_l2: bool = True,
    time_budget_s: float = 60.0,
    progress: bool | ProgressCallback = True,
    model_gpu: str | Gpu | None = None,
) -> GemmSweepTiming:
    """Time GEMMs with ``dim`` ('m', 'n', 'k' or 'batch') taking each of ``values`` and the
    other sizes fixed, and join the model's prediction for each shape.

    The sweep stops before a point when the time spent plus the last point's duration
    would pass ``time_budget_s``; the result says so. ``progress`` is True (a bar),
    False (silent) or a callback ``f(done, total, timing)``. On the CPU there is no
    prediction unless ``model_gpu`` names a GPU to compare shapes against.

    >>> s = sweep_gemm("k", [16, 32], m=32, n=32, dtype="fp32", device="cpu",
    ...                repeats=2, warmup=0, progress=False)
    >>> s.values, s.completed
    ((16, 32), True)
    """
    dim = check_choice("dim", dim, SWEEP_DIMS)
    vals = list(values)
    if not vals:
        raise InvalidParameter("'values' must hold at least one size (got an empty sequence)")
    vals = [check_int(dim, v, allow_array=False) for v in vals]
    fixed = {
        "m": check_int("m", m, allow_array=False),
        "n": check_int("n", n, allow_array=False),
        "k": check_int("k", k, allow_array=False),
        "batch": check_int("batch", batch, allow_array=False),
    }
    budget = check_number("time_budget_s", time_budget_s, minimum=0, strict=True)

    bar = _Progress(len(vals), progress, f"sweep {dim}")
    timings: list[GemmTiming] = []
    reason = ""
    start = time.perf_counter()
    last = 0.0
    try:
        for i, v in enumerate(vals):
            elapsed = time.perf_counter() - start
            if i > 0 and elapsed + last > budget:
                reason = (
                    f"time budget of {budget:g} s reached after {i} of {len(vals)} points "
                    f"({elapsed:.2f} s elapsed)"
                )
                break
            sizes = dict(fixed, **{dim: v})
            t0 = time.perf_counter()
            timings.append(
                time_gemm(
                    sizes["m"],
                    sizes["n"],
                    sizes["k"],
                    batch=sizes["batch"],
                    dtype=dtype,
                    device=device,
                    repeats=repeats,
                    warmup=warmup,
                    flush_l2=flush_l2,
                )
            )
            last = time.perf_counter() - t0
            bar.update(i + 1, timings[-1])
    except KeyboardInterrupt:
        reason = f"interrupted after {len(timings)} of {len(vals)} points"
    finally:
        bar.close(reason)
    elapsed = time.perf_counter() - start
    if not timings:
        raise InvalidParameter(f"'time_budget_s' must allow at least one point (got {budget:g})")

    first = timings[0]
    gpu_for_model: Any = model_gpu
    if gpu_for_model is None and first.device_kind == "cuda":
        gpu_for_model = detect_device("cuda").gpu  # the entry the timings were modelled with
    model = None
    if gpu_for_model is not None:
        arrays = {key: np.array([getattr(t, key) for t in timings]) for key in SWEEP_DIMS}
        model = gemm_sweep(
            arrays["m"],
            arrays["n"],
            arrays["k"],
            batch=arrays["batch"],
            dtype=first.dtype,
            gpu=gpu_for_model,
        )
        gpu_for_model = _gpu(gpu_for_model)
    return GemmSweepTiming(
        dim=dim,
        values=tuple(getattr(t, dim) for t in timings),
        requested=len(vals),
        m=fixed["m"],
        n=fixed["n"],
        k=fixed["k"],
        batch=fixed["batch"],
        dtype=first.dtype,
        device=first.device,
        device_kind=first.device_kind,
        timings=tuple(timings),
        completed=len(timings) == len(vals),
        stopped_reason=reason,
        elapsed_s=elapsed,
        time_budget_s=budget,
        model_gpu=model.gpu if model is not None else None,
        model=model,
        gpu_entry=gpu_for_model,
    )
