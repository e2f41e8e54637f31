"""Shared behaviour of result objects: JSON-ready dicts, plain and HTML tables."""

from __future__ import annotations

import dataclasses
import html
import math
from typing import Any, ClassVar

import numpy as np

__all__ = ["ResultMixin", "format_quantity", "to_jsonable"]

_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]


def format_quantity(value: Any, unit: str = "", digits: int = 4) -> str:
    """``1.25e14, 'FLOP/s'`` -> ``'125 TFLOP/s'``; seconds get ms/us.

    Unit ``'B'`` (traffic) and ``'B/s'`` take decimal prefixes as NVIDIA publishes bandwidth;
    ``'iB'`` (capacities: memory sizes, footprints) takes binary ones. ``'OPS'`` (integer
    operations per second, as NVIDIA quotes INT8 peaks) -> ``'624 TOPS'``.
    """
    if value is None:
        return "-"
    if isinstance(value, (bool, str)):
        return str(value)
    if isinstance(value, np.ndarray):
        return f"array{value.shape}"
    v = float(value)
    if unit == "s":
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
            if abs(v) >= scale or scale == 1e-9:
                return f"{v / scale:.{digits}g} {name}"
    if unit == "iB":  # capacities: binary prefixes, as memory is sized (80 GiB, not 85.9 GB)
        for scale, prefix in ((2**40, "Ti"), (2**30, "Gi"), (2**20, "Mi"), (2**10, "Ki")):
            if abs(v) >= scale:
                return f"{v / scale:.{digits}g} {prefix}B"
        return f"{v:.{digits}g} B"
    if unit in ("FLOP", "FLOP/s", "B", "B/s", "OPS"):
        for scale, prefix in _PREFIXES:
            if abs(v) >= scale:
                return f"{v / scale:.{digits}g} {prefix}{unit}"
    if math.isfinite(v) and v == int(v) and abs(v) < 1e15 and not unit:
        return f"{int(v):,}"
    return f"{v:.{digits}g}{(' ' + unit) if unit else ''}"


def to_jsonable(value: Any) -> Any:
    """Numpy scalars and arrays, tuples and nested dataclasses to plain JSON types."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_dict"):
            return value.to_dict()
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class ResultMixin:
    """Mixed into frozen result dataclasses.

    Subclasses list ``_units`` (field -> unit for display) and may override ``_title``.
    ``to_dict()`` gives the JSON object whose keys are the attribute names.
    """

    _units: ClassVar[dict[str, str]] = {}
    _hidden: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: to_jsonable(getattr(self, f.name))
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
            if not f.name.startswith("_")
        }

    def _title(self) -> str:
        return type(self).__name__

    def _rows(self) -> list[tuple[str, str]]:
        rows = []
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name.startswith("_") or f.name in self._hidden:
                continue
            value = getattr(self, f.name)
            if isinstance(value, (list, tuple, dict)) and value and not isinstance(value, str):
                continue  # nested collections get their own rendering
            rows.append((f.name, format_quantity(value, self._units.get(f.name, ""))))
        return rows

    def __str__(self) -> str:
        rows = self._rows()
        width = max((len(k) for k, _ in rows), default=0)
        lines = [self._title()] + [f"  {k.ljust(width)}  {v}" for k, v in rows]
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain-text form: the aligned table, not the dataclass field dump."""
        printer.text(str(self) if not cycle else f"{type(self).__name__}(...)")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # IPython prefers a class's own __repr__ (which @dataclass writes) to an inherited
        # _repr_pretty_, so each result class gets the method in its own namespace.
        super().__init_subclass__(**kwargs)
        if "_repr_pretty_" not in cls.__dict__:
            cls._repr_pretty_ = ResultMixin._repr_pretty_  # type: ignore[method-assign]

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td style='text-align:right'>{html.escape(v)}</td></tr>"
            for k, v in self._rows()
        )
        return (
            f"<table class='dlperf-result'><caption style='text-align:left'><b>"
            f"{html.escape(self._title())}</b></caption>{body}</table>"
        )
