"""Matplotlib drawing functions: (core result, Axes) -> artists.

Each function takes a result of :mod:`dlperf_widgets.core` and an optional Axes (a new
figure in the kit's style when omitted), draws, and returns the artists it made as an
:class:`Artists`, so that a widget can update them in place and a test can inspect them.
Nothing here computes a performance figure: every number comes from the core.
"""

from __future__ import annotations

from ._artists import Artists
from .blockscale import plot_block_outlier
from .breakdown import plot_breakdown, plot_memory, plot_passes, plot_pruned
from .gpu import plot_gpu_peaks
from .precision import plot_formats, plot_loss_scaling
from .roofline import plot_gemm, plot_roofline
from .scaleout import plot_fp8_scaling, plot_pipeline_schedule, plot_step_timeline
from .sweep import plot_sweep
from .tiles import plot_tiles, plot_toast, plot_waves
from .workload import plot_time_categories

__all__ = [
    "Artists",
    "plot_block_outlier",
    "plot_breakdown",
    "plot_formats",
    "plot_fp8_scaling",
    "plot_gemm",
    "plot_gpu_peaks",
    "plot_loss_scaling",
    "plot_memory",
    "plot_passes",
    "plot_pipeline_schedule",
    "plot_pruned",
    "plot_roofline",
    "plot_step_timeline",
    "plot_sweep",
    "plot_tiles",
    "plot_time_categories",
    "plot_toast",
    "plot_waves",
]
