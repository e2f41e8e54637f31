"""Tile and wave quantization of a GEMM (vectorised).

A GEMM kernel splits the M x N output into thread-block tiles; each tile is one thread
block, and the GPU runs ``SMs x blocks_per_sm`` blocks at once (one *wave*). NVIDIA slides
"NN Performance optimization", "GPU Implementation", "Tile Quantization" and "Wave
quantization"; NVIDIA "Matrix Multiplication Background User's Guide".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validate import check_int, check_product, describe
from .assumptions import TILE_REUSE_R0
from .errors import InvalidParameter
from .results import ResultMixin

__all__ = [
    "BATCHED_SIMT_TILES",
    "SIMT_TILE_SHAPES",
    "TILE_SHAPES",
    "TileWave",
    "parse_tile",
    "tile_count",
    "tile_efficiency",
    "tile_shape_efficiency",
    "tile_wave",
    "wave_count",
    "wave_efficiency",
]

# The thread-block tiles cuBLAS commonly picks, largest first (Matrix Multiplication
# Background User's Guide, "Typical Tile Dimensions in cuBLAS and Performance").
TILE_SHAPES: tuple[tuple[int, int], ...] = (
    (256, 128),
    (128, 256),
    (128, 128),
    (256, 64),
    (64, 256),
    (128, 64),
    (64, 128),
    (64, 64),
)

# The tiles of cuBLAS's SIMT (CUDA-core) SGEMM kernels, largest first: the names of the
# kernels it launched for NeuSight's FP32 GEMMs (ampere_sgemm_128x128_nn, volta_sgemm_128x64_tn,
# ..._32x32_sliced1x4_tn, sm80_xmma_gemm_..._tilesize64x64x8_...; the shipped neusight_*
# traces keep each row's kernel). Batched calls (torch.bmm) ran every batch entry as whole-K
# tiles (grid z = batch in every profiled call: no split-K, no matrix-vector kernel), so
# the model offers neither to a batched SIMT GEMM.
SIMT_TILE_SHAPES: tuple[tuple[int, int], ...] = (
    (128, 128),
    (128, 64),
    (64, 128),
    (128, 32),
    (32, 128),
    (64, 64),
    (64, 32),
    (32, 32),
)


# The tiles cuBLAS offers a *batched* SIMT SGEMM (torch.bmm: cublasSgemmStridedBatched), by
# architecture, either orientation. In NeuSight's profiles (the shipped neusight_* traces keep
# each row's kernel) every one of the 2,390 batched FP32 calls on the A100 PCIe 40 GB and
# 80 GB and on the L4 ran ampere_sgemm_128x128_nn, whatever the shape: the heuristic of the
# sm80/sm86/sm89 library offers one batched tile, where an unbatched call picks among all of
# SIMT_TILE_SHAPES. On the T4 (volta_sgemm kernels) the 1,073 batched calls ran 128x64,
# 64x64, 128x32 or 32x128, and 6 of them the 32x32 sliced kernel, never 128x128.
# GA10x (sm86) ships the same ampere_sgemm kernels and heuristic as GA100 and Ada. An
# architecture not listed offers every SIMT tile (no profile of its batched calls).
BATCHED_SIMT_TILES: dict[str, tuple[tuple[int, int], ...]] = {
    "ampere_ga100": ((128, 128),),
    "ampere_ga10x": ((128, 128),),
    "ada": ((128, 128),),
    "turing": ((128, 64), (64, 64), (128, 32)),
}


def parse_tile(tile: Any) -> tuple[int, int] | None:
    """``'256x128'``, ``(256, 128)`` -> ``(256, 128)``; ``'auto'`` or ``None`` -> ``None``."""
    if tile is None or (isinstance(tile, str) and tile.strip().lower() == "auto"):
        return None
    if isinstance(tile, str):
        parts = tile.lower().replace("×", "x").split("x")
        if len(parts) == 2 and all(p.strip().isdigit() for p in parts):
            tm, tn = int(parts[0]), int(parts[1])
            if tm > 0 and tn > 0:
                return tm, tn
        raise InvalidParameter(
            f"'tile' must be 'auto' or HEIGHTxWIDTH with positive integers, "
            f"e.g. '256x128' (got {describe(tile)})"
        )
    if isinstance(tile, (tuple, list)) and len(tile) == 2:
        return (
            check_int("tile height", tile[0], allow_array=False),
            check_int("tile width", tile[1], allow_array=False),
        )
    raise InvalidParameter(
        f"'tile' must be 'auto' or HEIGHTxWIDTH, e.g. '256x128' (got {describe(tile)})"
    )


# Operand reuse makes larger tiles more efficient: see core.assumptions.TILE_REUSE_R0.


def tile_shape_efficiency(
    tile_m: int, tile_n: int, r0: float = TILE_REUSE_R0, reference: tuple[int, int] = (256, 128)
) -> float:
    """Throughput of a tile shape relative to ``reference`` (256x128, the largest Tensor Core
    tile; 128x128, the largest SIMT tile), from its operand reuse (see above; ``r0``:
    :data:`~dlperf_widgets.core.assumptions.SIMT_TILE_REUSE_R0` for SIMT kernels)."""

    def busy(a: int, b: int) -> float:
        r = a * b / (a + b)
        return r / (r + r0)

    return min(1.0, busy(tile_m, tile_n) / busy(*reference))


def _ceil_div(a: Any, b: Any) -> Any:
    return -(-np.asarray(a, dtype=np.int64) // np.asarray(b, dtype=np.int64))


def tile_count(m: Any, n: Any, tile_m: int, tile_n: int, batch: Any = 1) -> Any:
    """Thread blocks launched: ceil(M / tile_m) x ceil(N / tile_n) x batch."""
    return _ceil_div(m, tile_m) * _ceil_div(n, tile_n) * np.asarray(batch, dtype=np.int64)


def tile_efficiency(m: Any, n: Any, tile_m: Any, tile_n: Any) -> Any:
    """Useful output elements / elements the launched tiles compute (tile quantization)."""
    m = np.asarray(m, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    launched = (
        _ceil_div(m.astype(np.int64), tile_m)
        * tile_m
        * _ceil_div(n.astype(np.int64), tile_n)
        * tile_n
    )
    return (m * n) / launched


def wave_count(tiles: Any, slots: Any) -> Any:
    """Waves = ceil(tiles / (SMs x blocks per SM))."""
    return _ceil_div(tiles, slots)


def wave_efficiency(tiles: Any, slots: Any) -> Any:
    """tiles / (waves x slots): the share of thread-block slots doing work, over all waves.

    The 8-SM, 12-block example of the NVIDIA slides gives 12 / (2 x 8) = 0.75.
    """
    tiles_a = np.asarray(tiles, dtype=np.float64)
    return tiles_a / (wave_count(tiles, slots) * np.asarray(slots, dtype=np.float64))


MAX_ASSIGNED_TILES = 1 << 22
"""Most tiles :meth:`TileWave.wave_assignment` lists (4,194,304: 32 MB of wave numbers)."""


@dataclass(frozen=True)
class TileWave(ResultMixin):
    """Tiles and waves of one GEMM output on one GPU."""

    m: int
    n: int
    batch: int
    tile: str
    tiles_m: int
    tiles_n: int
    tiles: int
    sms: int
    blocks_per_sm: int
    slots: int
    waves: int
    full_waves: int
    tail_tiles: int
    tile_efficiency: float
    wave_efficiency: float
    tile_shape_efficiency: float

    def _title(self) -> str:
        return f"Tiles and waves: {self.m}x{self.n} output, {self.tile} tiles, {self.sms} SMs"

    def wave_assignment(self) -> np.ndarray:
        """Wave number (0-based) of each tile in launch order, shape (batch, tiles_m, tiles_n).

        Listed for at most :data:`MAX_ASSIGNED_TILES` tiles (a picture of more tiles than a
        screen has pixels would show nothing more); refused before anything is allocated.
        """
        if self.tiles > MAX_ASSIGNED_TILES:
            raise InvalidParameter(
                f"'m', 'n' and 'batch' must give at most {MAX_ASSIGNED_TILES:,} tiles to list "
                f"wave by wave (got {self.tiles:,} tiles); the counts above hold for any size"
            )
        order = np.arange(self.tiles).reshape(self.batch, self.tiles_m, self.tiles_n)
        return order // self.slots


def tile_wave(
    m: int,
    n: int,
    *,
    tile: Any = (256, 128),
    sms: int,
    blocks_per_sm: int = 1,
    batch: int = 1,
) -> TileWave:
    """Tile grid and wave schedule of an M x N output (scalar inputs)."""
    m = check_int("m", m, allow_array=False)
    n = check_int("n", n, allow_array=False)
    batch = check_int("batch", batch, allow_array=False)
    sms = check_int("sms", sms, allow_array=False)
    blocks_per_sm = check_int("blocks_per_sm", blocks_per_sm, allow_array=False)
    check_product(("m", "n", "batch"), (m, n, batch))
    shape = parse_tile(tile)
    if shape is None:
        raise InvalidParameter("'tile' must be a tile shape such as '256x128' here (got 'auto')")
    tm, tn = shape
    tiles = int(tile_count(m, n, tm, tn, batch))
    slots = sms * blocks_per_sm
    waves = int(wave_count(tiles, slots))
    return TileWave(
        m=m,
        n=n,
        batch=batch,
        tile=f"{tm}x{tn}",
        tiles_m=int(_ceil_div(m, tm)),
        tiles_n=int(_ceil_div(n, tn)),
        tiles=tiles,
        sms=sms,
        blocks_per_sm=blocks_per_sm,
        slots=slots,
        waves=waves,
        full_waves=tiles // slots,
        tail_tiles=tiles % slots,
        tile_efficiency=float(tile_efficiency(m, n, tm, tn)),
        wave_efficiency=float(wave_efficiency(tiles, slots)),
        tile_shape_efficiency=tile_shape_efficiency(tm, tn),
    )
