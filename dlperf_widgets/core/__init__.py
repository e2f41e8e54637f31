"""The analytical model of the kit: standard library and numpy only.

Everything a widget shows, a notebook prints or the CLI reports is computed here.
"""

from __future__ import annotations

from . import checklists  # noqa: F401  (registers the layer findings with core.layers)
from .alignment import Finding, alignment_findings, next_multiple
from .dtypes import Dtype, dtype, dtype_names
from .errors import DlperfError, InvalidParameter, MissingDependency, UnknownGPU
from .gemm import GemmResult, GemmSweep, arithmetic_intensity, gemm, gemm_sweep
from .gpus import Gpu, custom_gpu, gpu, gpu_names, gpus, register_gpu
from .tiles import TILE_SHAPES, TileWave, tile_wave
from .toast import ToastResult, toast

__all__ = [
    "TILE_SHAPES",
    "DlperfError",
    "Dtype",
    "Finding",
    "GemmResult",
    "GemmSweep",
    "Gpu",
    "InvalidParameter",
    "MissingDependency",
    "TileWave",
    "ToastResult",
    "UnknownGPU",
    "alignment_findings",
    "arithmetic_intensity",
    "custom_gpu",
    "dtype",
    "dtype_names",
    "gemm",
    "gemm_sweep",
    "gpu",
    "gpu_names",
    "gpus",
    "next_multiple",
    "register_gpu",
    "tile_wave",
    "toast",
]
