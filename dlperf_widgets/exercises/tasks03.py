"""Tasks of exercises/03_tiles_and_waves_exercises.ipynb: tiles, waves, the toast puzzle."""

from __future__ import annotations

import math

from ..core.gemm import gemm
from ..core.gpus import gpu
from ..core.tiles import parse_tile, tile_wave
from ..core.toast import toast
from ._check import Mistake, Params, Task

GRID = {"m": 3000, "n": 2000, "tile": "256x128", "gpu": "A100", "blocks_per_sm": 1}
ROUND_UP = (
    "a partial tile still needs a whole thread block: round each dimension up "
    "(ceil), then multiply."
)


def _tw(p: Params, **change: int):  # type: ignore[no-untyped-def]
    q = {**p, **change}
    return tile_wave(
        q["m"], q["n"], tile=q["tile"], sms=gpu(q["gpu"]).sms, blocks_per_sm=q["blocks_per_sm"]
    )


def _tile(p: Params) -> tuple[int, int]:
    shape = parse_tile(p["tile"])
    if shape is None:
        raise ValueError("the exercise needs an explicit tile shape")
    return shape


def _floor_tiles(p: Params) -> int:
    tm, tn = _tile(p)
    return (p["m"] // tm) * (p["n"] // tn)


def _area_tiles(p: Params) -> list[int]:
    tm, tn = _tile(p)
    ratio = p["m"] * p["n"] / (tm * tn)
    return [math.floor(ratio), math.ceil(ratio)]


def _one_wave_n(p: Params, step_extra: int = 0) -> int:
    """Largest N, a multiple of the tile width, whose M x N output fits in one wave."""
    _, tn = _tile(p)
    n = tn
    while _tw(p, n=n + tn).waves == 1:
        n += tn
    return n + step_extra * tn


def _time_ratio(p: Params) -> float:
    def t(n: int) -> float:
        return gemm(
            p["m"], n, p["k"], dtype=p["dtype"], gpu=p["gpu"], tile=p["tile"]
        ).predicted_time_s

    return t(p["n_after"]) / t(p["n_before"])


TASKS = [
    Task(
        id="03.tiles",
        question="thread-block tiles launched for the M×N output",
        kind="integer",
        params=GRID,
        expected=lambda p: _tw(p).tiles,
        mistakes=(
            Mistake("floor instead of ceil", _floor_tiles, ROUND_UP),
            Mistake("divided the areas", _area_tiles, ROUND_UP),
        ),
        hint="ceil(M / tile height) × ceil(N / tile width).",
    ),
    Task(
        id="03.wave_efficiency",
        question="share of thread-block slots doing useful work over all waves (0 to 1)",
        kind="number",
        unit="fraction",
        params=GRID,
        expected=lambda p: _tw(p).wave_efficiency,
        rel_tol=0.01,
        mistakes=(
            Mistake(
                "last wave only",
                lambda p: _tw(p).tail_tiles / _tw(p).slots,
                "that is how full the last wave is; the question asks over all waves: "
                "tiles / (waves × slots).",
            ),
        ),
        hint="tiles ÷ (waves × SMs × blocks per SM).",
    ),
    Task(
        id="03.one_wave_n",
        question="largest N (a multiple of the tile width) that keeps the GEMM in one wave",
        kind="integer",
        params={**GRID, "m": 3072, "n": 128},
        expected=_one_wave_n,
        mistakes=(
            Mistake(
                "one column too many",
                lambda p: _one_wave_n(p, step_extra=1),
                "that adds one column of tiles too many: the wave overflows by a few tiles "
                "and a second, nearly empty wave follows.",
            ),
            Mistake(
                "ignored the rows",
                lambda p: gpu(p["gpu"]).sms * p["blocks_per_sm"] * _tile(p)[1],
                "the tile grid has rows too: with M = 3072 and 256-high tiles, each column "
                "of tiles holds 12 tiles.",
            ),
        ),
        hint="tiles per column = ceil(M / 256); columns that fit = SMs ÷ tiles per column.",
    ),
    Task(
        id="03.time_ratio",
        question="predicted time with N = n_after divided by the time with N = n_before",
        kind="number",
        unit="",
        params={
            "m": 3072,
            "k": 8192,
            "n_before": 1152,
            "n_after": 1280,
            "dtype": "fp16",
            "gpu": "A100",
            "tile": "256x128",
        },
        expected=_time_ratio,
        rel_tol=0.05,
        mistakes=(
            Mistake(
                "proportional to work",
                lambda p: p["n_after"] / p["n_before"],
                "11 % more work, but the extra tiles need a second wave: the time goes with "
                "the number of waves.",
            ),
        ),
        hint="count the waves before and after; a wave costs about the same however full it is.",
    ),
    Task(
        id="03.toast",
        question="shortest time (minutes) to toast the slices on both sides",
        kind="number",
        unit="min",
        params={"slices": 5, "capacity": 2, "sides": 2, "minutes_per_side": 1.0},
        expected=lambda p: toast(**p).best_minutes,
        rel_tol=1e-9,
        mistakes=(
            Mistake(
                "naive schedule",
                lambda p: toast(**p).naive_minutes,
                "that is the naive schedule, whole slices at a time: the last pan-load runs "
                "half empty. Treat each side as one unit of work.",
            ),
        ),
        hint="count the sides to toast and how many fit in the pan at once.",
    ),
]
