"""Tasks of exercises/03_tiles_and_waves_exercises.ipynb: tiles, waves, a size chosen to fill
the waves and a profile to debug."""

from __future__ import annotations

import math

from ..core.gemm import gemm
from ..core.gpus import gpu
from ..core.tiles import parse_tile, tile_wave
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
]


# -- design: an N whose waves are (nearly) full ---------------------------------------------
WAVE_DESIGN = {
    "m": 3072,
    "tile": "256x128",
    "gpu": "A100",
    "blocks_per_sm": 1,
    "n_min": 1280,
    "n_max": 4096,
    "min_efficiency": 0.9,
}


def _wave_ok(p: Params, n: int) -> tuple[bool, str]:
    _, tn = _tile(p)
    if not p["n_min"] <= n <= p["n_max"]:
        return False, f"N must lie between {p['n_min']} and {p['n_max']} (got {n})."
    if n % tn:
        return False, (
            f"N = {n} is not a multiple of the tile width {tn}: its last column of tiles "
            "is partly empty; round it to a multiple of the tile width."
        )
    tw = _tw(p, n=n)
    if tw.wave_efficiency < p["min_efficiency"]:
        return False, (
            f"N = {n} gives {tw.tiles} tiles in {tw.waves} waves of {tw.slots}: only "
            f"{tw.wave_efficiency:.0%} of the slots work. Aim for a tile count just at or "
            "below a multiple of the slots."
        )
    return True, f"N = {n}: {tw.tiles} tiles in {tw.waves} waves, {tw.wave_efficiency:.0%} full."


def _multiples(p: Params) -> range:
    _, tn = _tile(p)
    return range(-(-p["n_min"] // tn) * tn, p["n_max"] + 1, tn)


def _just_short(p: Params) -> list[int]:
    """Multiples of the tile width within 5 points below the required wave efficiency."""
    low = p["min_efficiency"] - 0.05
    return [n for n in _multiples(p) if low <= _tw(p, n=n).wave_efficiency < p["min_efficiency"]]


def _wave_n(p: Params) -> int:
    for n in _multiples(p):
        if _wave_ok(p, n)[0]:
            return n
    raise ValueError("no multiple of the tile width in the range fills the waves enough")


# -- debugging: a profile with a half-empty second wave -------------------------------------
PROFILE = {"m": 3072, "n": 1280, "k": 8192, "dtype": "fp16", "gpu": "A100", "tile": "256x128"}
FIXES = ("smaller tiles", "pad k", "tf32")


def _fix_time(p: Params, fix: str) -> float:
    q = dict(p)
    if fix == "smaller tiles":
        q["tile"] = "128x128"
    elif fix == "pad k":
        q["k"] = -(-p["k"] // 64) * 64
    else:
        q["dtype"] = "tf32"
    return gemm(
        q["m"], q["n"], q["k"], dtype=q["dtype"], gpu=q["gpu"], tile=q["tile"]
    ).predicted_time_s


def _best_fix(p: Params) -> str:
    return min(FIXES, key=lambda f: _fix_time(p, f))


TASKS += [
    Task(
        id="03.wave_design",
        question=(
            "an N (a multiple of the tile width, n_min to n_max) whose tiles fill the waves "
            "to at least min_efficiency"
        ),
        kind="design",
        params=WAVE_DESIGN,
        expected=_wave_n,
        validate=_wave_ok,
        mistakes=(
            Mistake(
                "one column past a full wave",
                lambda p: p["n_min"],
                "that is one column of tiles past a full wave: the last wave runs almost "
                "empty. Grow N until the last wave is (nearly) full too.",
            ),
            Mistake(
                "just short",
                _just_short,
                "close, but just short of min_efficiency: move N by a column or two of tiles "
                "so the tile count sits at or just below a multiple of the slots.",
            ),
        ),
        hint="tiles = 12 rows × N/128 columns; a wave holds 108; look for tile counts at or "
        "just below 216, 324, 432.",
    ),
    Task(
        id="03.profile_fix",
        question=(
            "the profiled GEMM runs 2 waves, the second half empty: which change shortens "
            "it most, 'smaller tiles', 'pad k' or 'tf32'?"
        ),
        kind="choice",
        choices=FIXES,
        params=PROFILE,
        expected=_best_fix,
        mistakes=(
            Mistake(
                "pad k",
                lambda p: "pad k",
                "K = 8192 is already a multiple of 64, and K does not change the number of "
                "tiles: the waves stay as they are.",
            ),
            Mistake(
                "tf32",
                lambda p: "tf32",
                "TF32 halves the Tensor Core peak and doubles the bytes: every wave gets "
                "slower, the empty half stays.",
            ),
        ),
        hint="the waste is in the wave count: what changes how many tiles there are?",
    ),
]

# A GEMM whose operands fit in the L40S's 96 MiB L2 (data/gpus.csv), called again on the same
# tensors ('warm') or with L2 flushed first ('cold', what the kit's timer measures).
L2_GEMM = {"m": 4096, "n": 16, "k": 1024, "dtype": "bf16", "gpu": "L40S"}


def _cached(p: Params, cache: str) -> float:
    r = gemm(p["m"], p["n"], p["k"], dtype=p["dtype"], gpu=p["gpu"], cache=cache)
    return float(r.predicted_time_s)


def _l2_over_dram(p: Params) -> float:
    g = gpu(p["gpu"])
    return float((g.l2_bandwidth_bytes_per_s or 0.0) / g.memory_bandwidth_bytes_per_s)


TASKS += [
    Task(
        id="03.l2_speedup",
        question="how many times faster the model predicts the GEMM when its operands are "
        "still in L2 (cache='warm') than when they come from DRAM (cache='cold')",
        kind="number",
        unit="x",
        params=L2_GEMM,
        expected=lambda p: _cached(p, "cold") / _cached(p, "warm"),
        rel_tol=0.02,
        mistakes=(
            Mistake(
                "upside down",
                lambda p: _cached(p, "warm") / _cached(p, "cold"),
                "that is warm ÷ cold, below 1; the speed-up is cold ÷ warm.",
            ),
            Mistake(
                "the bandwidth ratio",
                _l2_over_dram,
                "that is the ratio of the L2 to the DRAM bandwidth: only the bytes' time "
                "shrinks by it, not the fixed cost every kernel pays.",
            ),
        ),
        hint="gemm(..., cache='cold').predicted_time_s ÷ the same with cache='warm'.",
    ),
]
