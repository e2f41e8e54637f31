"""Input checks shared by every public function of the core.

All checks accept Python scalars and numpy arrays (every element is checked), and raise
:class:`InvalidParameter` with the kit's one message template.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from .errors import InvalidParameter

__all__ = [
    "check_choice",
    "check_int",
    "check_number",
    "closest",
    "describe",
    "is_array",
]


def describe(value: Any) -> str:
    """Short text of a bad value for an error message."""
    if isinstance(value, np.ndarray):
        return f"array with {value.size} element(s)"
    if isinstance(value, str):
        return repr(value)
    return repr(value)


def is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or (
        isinstance(value, (list, tuple)) and not isinstance(value, str)
    )


def _first_bad(arr: np.ndarray, ok: np.ndarray) -> Any:
    bad = arr[~ok]
    return bad.flat[0].item() if bad.size else None


def check_int(
    name: str,
    value: Any,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    allow_array: bool = True,
) -> Any:
    """Return ``value`` as an int (or an int64 array) if every element is an integer in range.

    ``minimum=1`` reads as "a positive integer", ``minimum=0`` as "a non-negative integer".
    Integral floats (``8192.0``) are accepted; bools, fractions, NaN and strings are not.
    """
    rule = {1: "a positive integer", 0: "a non-negative integer"}.get(
        minimum, f"an integer >= {minimum}"
    )
    if maximum is not None:
        rule = f"an integer between {minimum} and {maximum}"
    if allow_array and is_array(value):
        try:
            arr = np.asarray(value)
        except Exception as exc:  # ragged lists and the like
            raise InvalidParameter(f"'{name}' must be {rule} (got {describe(value)})") from exc
        if arr.size == 0:
            raise InvalidParameter(f"'{name}' must be {rule} (got an empty array)")
        if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
            raise InvalidParameter(f"'{name}' must be {rule} (got an array of {arr.dtype})")
        if arr.dtype.kind == "f":
            finite = np.isfinite(arr)
            integral = finite & (np.floor(np.where(finite, arr, 0)) == np.where(finite, arr, 0))
            if not integral.all():
                raise InvalidParameter(
                    f"'{name}' must be {rule} (got {_first_bad(arr, integral)!r})"
                )
            arr = arr.astype(np.int64)
        else:
            arr = arr.astype(np.int64)
        ok = arr >= minimum
        if maximum is not None:
            ok &= arr <= maximum
        if not ok.all():
            raise InvalidParameter(f"'{name}' must be {rule} (got {_first_bad(arr, ok)!r})")
        return arr
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameter(f"'{name}' must be {rule} (got {describe(value)})")
    if isinstance(value, numbers.Integral):
        ivalue = int(value)
    else:
        fvalue = float(value)
        if not math.isfinite(fvalue) or not fvalue.is_integer():
            raise InvalidParameter(f"'{name}' must be {rule} (got {value!r})")
        ivalue = int(fvalue)
    if ivalue < minimum or (maximum is not None and ivalue > maximum):
        raise InvalidParameter(f"'{name}' must be {rule} (got {value!r})")
    return ivalue


def check_number(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    strict: bool = False,
    maximum: float | None = None,
) -> float:
    """Return ``value`` as a finite float within the bounds (``strict``: above ``minimum``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameter(f"'{name}' must be a finite number (got {describe(value)})")
    fvalue = float(value)
    if not math.isfinite(fvalue):
        raise InvalidParameter(f"'{name}' must be a finite number (got {value!r})")
    if minimum is not None and (fvalue <= minimum if strict else fvalue < minimum):
        rule = (
            ("a positive number" if strict else "a non-negative number")
            if minimum == 0
            else f"a number {'>' if strict else '>='} {minimum:g}"
        )
        raise InvalidParameter(f"'{name}' must be {rule} (got {value!r})")
    if maximum is not None and fvalue > maximum:
        raise InvalidParameter(f"'{name}' must be a number <= {maximum:g} (got {value!r})")
    return fvalue


def closest(word: str, options: Iterable[str], n: int = 3) -> list[str]:
    """Names from ``options`` that look like ``word`` (case-insensitive)."""
    opts = list(options)
    lowered = {o.lower(): o for o in opts}
    hits = difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=0.4)
    return [lowered[h] for h in hits]


def check_choice(name: str, value: Any, options: Iterable[str]) -> str:
    """Return the canonical spelling of ``value`` among ``options`` (case-insensitive)."""
    opts = list(options)
    if not isinstance(value, str):
        raise InvalidParameter(f"'{name}' must be one of {', '.join(opts)} (got {describe(value)})")
    for option in opts:
        if option.lower() == value.strip().lower():
            return option
    raise InvalidParameter(f"'{name}' must be one of {', '.join(opts)} (got {value!r})")
