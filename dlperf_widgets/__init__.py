"""dlperf_widgets: learn why a GPU runs a deep-learning model fast or slow.

The analytical core (:mod:`dlperf_widgets.core`) needs only numpy. Widgets (ipywidgets,
matplotlib) and live timing (torch) load on first use, so ``import dlperf_widgets`` works
with numpy alone.
"""

from __future__ import annotations

import importlib
from typing import Any

from .core import (
    DlperfError,
    Finding,
    GemmResult,
    Gpu,
    InvalidParameter,
    MissingDependency,
    UnknownGPU,
    arithmetic_intensity,
    custom_gpu,
    dtype,
    gemm,
    gemm_sweep,
    gpu,
    gpus,
    register_gpu,
    tile_wave,
    toast,
)

__version__ = "0.1.0"

# Public names that live in modules with optional dependencies, or in later parts of the
# core, are resolved on first access (PEP 562) so that importing the package stays cheap.
_LAZY: dict[str, str] = {
    # core part II: layers, checklists, networks
    "layer": "dlperf_widgets.core.layers",
    "transformer": "dlperf_widgets.core.network",
    # core part III: number formats, precision, memory, sparsity
    "number_format": "dlperf_widgets.core.formats",
    "training_memory": "dlperf_widgets.core.memory",
    # widgets (ipywidgets + matplotlib)
    "GpuCard": "dlperf_widgets.widgets",
    "GemmExplorer": "dlperf_widgets.widgets",
    "Roofline": "dlperf_widgets.widgets",
    "TileExplorer": "dlperf_widgets.widgets",
    "WaveExplorer": "dlperf_widgets.widgets",
    "DimensionSweep": "dlperf_widgets.widgets",
    "LayerChecklist": "dlperf_widgets.widgets",
    "FormatExplorer": "dlperf_widgets.widgets",
    "LossScalingExplorer": "dlperf_widgets.widgets",
    "MemoryCalculator": "dlperf_widgets.widgets",
    "NetworkBreakdown": "dlperf_widgets.widgets",
    "SparsityExplorer": "dlperf_widgets.widgets",
    "Predict": "dlperf_widgets.widgets",
    # beyond the guides: fusion and LLM inference
    "fusion_chain": "dlperf_widgets.core.fusion",
    "attention": "dlperf_widgets.core.fusion",
    "launch_overhead": "dlperf_widgets.core.fusion",
    "llm_inference": "dlperf_widgets.core.inference",
    # whole workloads: a step as the kernels it runs, priced kernel by kernel
    "workload": "dlperf_widgets.core.workload",
    "price_workload": "dlperf_widgets.core.workload",
    "kv_cache_bytes": "dlperf_widgets.core.inference",
    "FusionExplorer": "dlperf_widgets.widgets",
    "InferenceExplorer": "dlperf_widgets.widgets",
    # low precision at scale: FP8 / block scaling, MFU, training on N GPUs
    "fp8_quantize": "dlperf_widgets.core.scaling",
    "block_quantize": "dlperf_widgets.core.scaling",
    "mfu": "dlperf_widgets.core.mfu",
    "step_time": "dlperf_widgets.core.scaleout",
    "pipeline_schedule": "dlperf_widgets.core.scaleout",
    "Fp8ScalingExplorer": "dlperf_widgets.widgets",
    "StepTimeCalculator": "dlperf_widgets.widgets",
    # block-scaled formats with an outlier; pipeline schedules and their bubble
    "block_outlier_study": "dlperf_widgets.core.scaling",
    "BlockFormatExplorer": "dlperf_widgets.widgets",
    "PipelineExplorer": "dlperf_widgets.widgets",
    # the device at hand: fit the model's constants to it (torch)
    "calibrate": "dlperf_widgets.live.calibrate",
    # serving LLMs at scale, and explaining a profile
    "kv_budget": "dlperf_widgets.core.serving",
    "serving_slo": "dlperf_widgets.core.serving",
    "speculative": "dlperf_widgets.core.serving",
    "moe_decode": "dlperf_widgets.core.serving",
    "explain": "dlperf_widgets.live.profile",
    "read_profile": "dlperf_widgets.live.profile",
    "ServingExplorer": "dlperf_widgets.widgets",
    "TraceExplorer": "dlperf_widgets.widgets",
}

__all__ = [
    "DlperfError",
    "Finding",
    "GemmResult",
    "Gpu",
    "InvalidParameter",
    "MissingDependency",
    "UnknownGPU",
    "__version__",
    "arithmetic_intensity",
    "custom_gpu",
    "dtype",
    "gemm",
    "gemm_sweep",
    "gpu",
    "gpus",
    "load_ipython_extension",
    "register_gpu",
    "tile_wave",
    "toast",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dlperf_widgets' has no attribute {name!r}")
    try:
        return getattr(importlib.import_module(module), name)
    except MissingDependency:
        raise
    except ImportError as exc:
        from ._optional import missing_dependency

        raise missing_dependency(exc, name) from exc


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(_LAZY))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext dlperf_widgets``: register the ``%dlperf`` magic."""
    from .magics import load_ipython_extension as _load

    _load(ipython)


# Inside IPython, cells whose first line is `# needs: torch` print one line instead of failing
# where PyTorch is missing (dlperf_widgets.cell_needs). Outside IPython this does nothing.
def _guard_cells() -> None:
    from .cell_needs import register_in_running_shell

    register_in_running_shell()


_guard_cells()
