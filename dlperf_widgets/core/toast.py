"""The toast puzzle: a pan is a GPU, toast sides are thread blocks, a minute is a wave.

Three slices, a pan that holds two, one minute a side: the naive cook fries two slices
fully (2 minutes) and then the third (2 more minutes, the pan half empty) = 4 minutes. The
trick fries side A of slices 1 and 2, then side B of slice 1 with side A of slice 3, then
the two remaining B sides: 3 minutes with the pan always full (NVIDIA slides "NN
Performance optimization", "Making toast fast").

The work is ``slices x sides`` independent side-fryings; a minute is one wave of
``capacity`` slots, so the best time is ceil(slices x sides / capacity) minutes - wave
quantization - provided no slice has to be in the pan twice at once, which needs
``slices >= capacity`` (one slice alone still takes ``sides`` minutes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._validate import check_int, check_number
from .results import ResultMixin

__all__ = ["SCHEDULE_LIMIT", "ToastResult", "toast"]

SCHEDULE_LIMIT = 1000
"""Most side-fryings (slices x sides) listed in a schedule; bigger puzzles get times only."""


@dataclass(frozen=True)
class ToastResult(ResultMixin):
    """Times of the naive and the best schedule, and the best schedule itself."""

    slices: int
    capacity: int
    sides: int
    minutes_per_side: float
    naive_minutes: float
    best_minutes: float
    waves: int
    pan_utilisation: float
    # per wave: (slice, side) pairs, 1-based; empty when slices x sides > SCHEDULE_LIMIT
    schedule: tuple[tuple[tuple[int, int], ...], ...]

    def _title(self) -> str:
        return (
            f"Toast: {self.slices} slices, a pan for {self.capacity}, "
            f"{self.minutes_per_side:g} min a side"
        )


def toast(
    slices: int = 3, capacity: int = 2, sides: int = 2, minutes_per_side: float = 1.0
) -> ToastResult:
    """Naive and best frying times; 3 slices, pan of 2, 1 min a side -> 4 and 3 minutes."""
    slices = check_int("slices", slices, allow_array=False)
    capacity = check_int("capacity", capacity, allow_array=False)
    sides = check_int("sides", sides, allow_array=False)
    minutes = check_number("minutes_per_side", minutes_per_side, minimum=0, strict=True)

    # Naive: fill the pan with whole slices, fry every side before taking them out.
    naive_waves = math.ceil(slices / capacity) * sides
    # Best: every side is a unit of work; a slice can't be fried on two sides at once,
    # so no schedule beats `sides` waves either.
    best_waves = max(math.ceil(slices * sides / capacity), sides)
    # Round-robin schedule: side-fryings in order slice-major per side, spread over waves,
    # which never puts one slice in the pan twice in one wave when slices >= capacity.
    # The times are arithmetic on Python ints (any size); listing the schedule costs memory
    # in proportion to slices x sides, so only puzzles a person could read get one.
    waves: list[list[tuple[int, int]]] = []
    if slices * sides <= SCHEDULE_LIMIT:
        units = [(s + 1, side + 1) for side in range(sides) for s in range(slices)]
        waves = [[] for _ in range(best_waves)]
        for i, unit in enumerate(units):
            waves[i // capacity if slices >= capacity else i % best_waves].append(unit)
    return ToastResult(
        slices=slices,
        capacity=capacity,
        sides=sides,
        minutes_per_side=minutes,
        naive_minutes=naive_waves * minutes,
        best_minutes=best_waves * minutes,
        waves=best_waves,
        pan_utilisation=slices * sides / (best_waves * capacity),
        schedule=tuple(tuple(w) for w in waves),
    )
