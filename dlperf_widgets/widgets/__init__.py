"""Interactive widgets (ipywidgets + matplotlib).

Each widget is an ``ipywidgets.VBox`` that takes its initial values as keyword arguments,
calls one function of :mod:`dlperf_widgets.core` whenever a control moves, and exposes that
call's result as ``.result``. Bad input shows one inline message (CSS class
``dlperf-error``) and keeps the last good result.
"""

from __future__ import annotations

from .blockformat import BlockFormatExplorer
from .fusion import FusionExplorer
from .gemm import GemmExplorer
from .gpu import GpuCard
from .inference import InferenceExplorer
from .layers import LayerChecklist, NetworkBreakdown
from .memory import MemoryCalculator
from .pipeline import PipelineExplorer
from .precision import FormatExplorer, LossScalingExplorer
from .predict import Predict
from .roofline import Roofline
from .scaleout import Fp8ScalingExplorer, StepTimeCalculator
from .serving import ServingExplorer, TraceExplorer
from .sparsity import SparsityExplorer
from .sweep import DimensionSweep
from .tiles import TileExplorer, WaveExplorer

__all__ = [
    "BlockFormatExplorer",
    "DimensionSweep",
    "FormatExplorer",
    "Fp8ScalingExplorer",
    "FusionExplorer",
    "GemmExplorer",
    "GpuCard",
    "InferenceExplorer",
    "LayerChecklist",
    "LossScalingExplorer",
    "MemoryCalculator",
    "NetworkBreakdown",
    "PipelineExplorer",
    "Predict",
    "Roofline",
    "ServingExplorer",
    "SparsityExplorer",
    "StepTimeCalculator",
    "TileExplorer",
    "TraceExplorer",
    "WaveExplorer",
]
