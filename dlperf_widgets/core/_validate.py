"""Input checks shared by every public function of the core.

All checks accept Python scalars and numpy arrays (every element is checked), and raise
:class:`InvalidParameter` with the kit's one message template.
"""

from __future__ import annotations

import decimal
import difflib
import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from .errors import InvalidParameter

__all__ = [
    "MAX_PRODUCT",
    "MAX_SIZE",
    "as_floats",
    "check_bool",
    "check_choice",
    "check_int",
    "check_number",
    "check_product",
    "closest",
    "describe",
    "is_array",
    "plain_number",
]


MAX_SIZE = 2**40
"""The largest size (a dimension, a count of elements, tokens or layers) any entry accepts.

2**40 (about 1.1e12) is far beyond any real layer or model dimension, and small enough that
the model's arithmetic stays exact: the kit multiplies sizes as Python ints when it checks
them (:func:`check_product`), never in wrapping int64.
"""

MAX_PRODUCT = 2**62
"""The largest product of sizes (M*N*K*batch, elements of a shape) an entry accepts."""

MAX_TEXT = 60
"""Characters of a bad value shown in a message; longer inputs are cut with '...'."""


def _clip(text: str) -> str:
    return (
        text
        if len(text) <= MAX_TEXT
        else f"{text[: MAX_TEXT - 20]}...{text[-10:]} ({len(text)} characters)"
    )


def describe(value: Any) -> str:
    """Short text of a bad value for an error message (long inputs truncated)."""
    if isinstance(value, np.ndarray):
        return f"array with {value.size} element(s)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        # str() of a huge int is slow and refused past 4300 digits: count digits from bits.
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"an integer with about {digits} digits"
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__
        text = f"a {type(value).__name__}"
    return _clip(text)


def plain_number(value: Any) -> Any:
    """A 0-d numpy array or a ``Decimal`` as the Python number it holds; anything else as is.

    Both are numbers to a user (``np.float64(x).sum()`` style results, ``Decimal("0.5")``), but
    neither is a ``numbers.Real``: without this they were refused as arrays or as text.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf":
        return value.item()
    if isinstance(value, decimal.Decimal):
        if value.is_finite():
            if value.adjusted() > 30:  # far beyond any size: no exact int of a billion digits
                return float(value)
            if value == value.to_integral_value():
                return int(value)
            return float(value)
        return math.nan if value.is_nan() else float(value)  # refused as non-finite later
    return value


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
    maximum: int | None = MAX_SIZE,
    allow_array: bool = True,
) -> Any:
    """Return ``value`` as an int (or an int64 array) if every element is an integer in range.

    ``minimum=1`` reads as "a positive integer", ``minimum=0`` as "a non-negative integer".
    Integral floats (``8192.0``) are accepted; bools, fractions, NaN and strings are not.
    ``maximum`` defaults to :data:`MAX_SIZE`, so that no size can overflow the model's
    arithmetic; pass ``maximum=None`` only where a value never multiplies another.
    """
    # the common case first: a plain int in range (bool is a subclass, not this type)
    if type(value) is int and value >= minimum and (maximum is None or value <= maximum):
        return value
    rule = {1: "a positive integer", 0: "a non-negative integer"}.get(
        minimum, f"an integer >= {minimum}"
    )
    if maximum == MAX_SIZE:  # the cap is named only to a value that breaks it
        low_rule, high_rule = rule, f"{rule} no larger than 2**40"
    elif maximum is not None:
        low_rule = high_rule = rule = f"an integer between {minimum} and {maximum}"
    else:
        low_rule = high_rule = rule
    value = plain_number(value)
    if allow_array and is_array(value):
        try:
            arr = np.asarray(value)
        except Exception as exc:  # ragged lists and the like
            raise InvalidParameter(f"'{name}' must be {rule} (got {describe(value)})") from exc
        if arr.size == 0:
            raise InvalidParameter(f"'{name}' must be {rule} (got an empty array)")
        if arr.dtype == object:  # Python ints beyond int64, or mixed objects
            items = [
                _scalar_int(name, (low_rule, high_rule), v, minimum, maximum) for v in arr.ravel()
            ]
            return np.array(items, dtype=np.int64).reshape(arr.shape)
        if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
            raise InvalidParameter(f"'{name}' must be {rule} (got an array of {arr.dtype})")
        if arr.dtype.kind == "f":
            finite = np.isfinite(arr)
            safe = np.where(finite, arr, 0)
            integral = finite & (np.floor(safe) == safe)
            if not integral.all():
                raise InvalidParameter(
                    f"'{name}' must be {rule} (got {describe(_first_bad(arr, integral))})"
                )
            # Compare as floats before the cast: a cast of 1e30 to int64 wraps.
            ok = arr >= minimum
            if maximum is not None:
                ok &= arr <= maximum
            else:
                ok &= np.abs(arr) < 2.0**62
            if not ok.all():
                bad = _first_bad(arr, ok)
                which = low_rule if bad < minimum else high_rule
                raise InvalidParameter(f"'{name}' must be {which} (got {describe(bad)})")
            return arr.astype(np.int64)
        if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8:
            ok = arr <= (maximum if maximum is not None else 2**62)
            if not ok.all():
                raise InvalidParameter(
                    f"'{name}' must be {high_rule} (got {describe(_first_bad(arr, ok))})"
                )
        arr = arr.astype(np.int64)
        ok = arr >= minimum
        if maximum is not None:
            ok &= arr <= maximum
        if not ok.all():
            bad = _first_bad(arr, ok)
            which = low_rule if bad < minimum else high_rule
            raise InvalidParameter(f"'{name}' must be {which} (got {describe(bad)})")
        return arr
    return _scalar_int(name, (low_rule, high_rule), value, minimum, maximum)


def _scalar_int(
    name: str, rules: tuple[str, str], value: Any, minimum: int, maximum: int | None
) -> int:
    low_rule, high_rule = rules
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidParameter(f"'{name}' must be {low_rule} (got {describe(value)})")
    if isinstance(value, numbers.Integral):
        ivalue = int(value)
    else:
        fvalue = float(value)
        if not math.isfinite(fvalue) or not fvalue.is_integer():
            raise InvalidParameter(f"'{name}' must be {low_rule} (got {describe(value)})")
        ivalue = int(fvalue)
    if ivalue < minimum:
        raise InvalidParameter(f"'{name}' must be {low_rule} (got {describe(value)})")
    if maximum is not None and ivalue > maximum:
        raise InvalidParameter(f"'{name}' must be {high_rule} (got {describe(value)})")
    return ivalue


def check_product(names: Iterable[str], values: Iterable[Any], maximum: int = MAX_PRODUCT) -> int:
    """Multiply already-checked sizes exactly (Python ints) and refuse a product above ``maximum``.

    Arrays are multiplied element by element (broadcast together, as the sweep will use
    them) and count by their largest product. Returns the (largest) product.
    """
    label = list(names)
    items = list(values)
    product = 1
    if any(is_array(v) for v in items):
        try:
            arrays = list(np.broadcast_arrays(*(np.asarray(v, dtype=np.int64) for v in items)))
        except ValueError:  # shapes that do not broadcast: the caller says so itself
            arrays = [np.asarray(np.max(v) if is_array(v) else v) for v in items]
        # float64 products locate the largest element; it is then multiplied exactly
        approx = np.ones(arrays[0].shape, dtype=np.float64)
        for a in arrays:
            approx = approx * a.astype(np.float64)
        where = np.unravel_index(int(np.argmax(approx)), approx.shape) if approx.ndim else ()
        for a in arrays:
            product *= int(a[where])
    else:
        for v in items:
            product *= int(v)
    if product > maximum:
        joined = "*".join(label)
        raise InvalidParameter(
            f"'{label[0]}' and the other sizes must keep {joined} at most 2**{maximum.bit_length() - 1} "
            f"(got {joined} = {describe(product)})"
        )
    return product


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is True or False (numpy bools too); strings and numbers are refused.

    ``"no"`` is a non-empty string and so truthy in Python: accepting it would silently mean True.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidParameter(f"'{name}' must be True or False (got {describe(value)})")


def check_number(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    strict: bool = False,
    maximum: float | None = None,
) -> float:
    """Return ``value`` as a finite float within the bounds (``strict``: above ``minimum``)."""
    value = plain_number(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidParameter(f"'{name}' must be a finite number (got {describe(value)})")
    try:
        fvalue = float(value)
    except OverflowError:  # an int with hundreds of digits
        fvalue = math.inf
    if not math.isfinite(fvalue):
        raise InvalidParameter(f"'{name}' must be a finite number (got {describe(value)})")
    if minimum is not None and (fvalue <= minimum if strict else fvalue < minimum):
        rule = (
            ("a positive number" if strict else "a non-negative number")
            if minimum == 0
            else f"a number {'>' if strict else '>='} {minimum:g}"
        )
        raise InvalidParameter(f"'{name}' must be {rule} (got {describe(value)})")
    if maximum is not None and fvalue > maximum:
        raise InvalidParameter(f"'{name}' must be a number <= {maximum:g} (got {describe(value)})")
    return fvalue


def as_floats(name: str, value: Any, rule: str) -> np.ndarray:
    """``value`` (a number or an array of numbers) as a float64 array, or the kit's error."""
    value = plain_number(value)
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise InvalidParameter(f"'{name}' must be {rule} (got {describe(value)})")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter(f"'{name}' must be {rule} (got {describe(value)})") from None
    if arr.size == 0:
        raise InvalidParameter(f"'{name}' must be {rule} (got an empty array)")
    return arr


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
    raise InvalidParameter(f"'{name}' must be one of {', '.join(opts)} (got {describe(value)})")
