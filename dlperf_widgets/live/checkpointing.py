"""Gradient checkpointing measured on a real stack of transformer layers (CPU).

The slides "NN Performance optimization" ("Activation Re-computation") state that for a
feed-forward net of n layers checkpointing cuts activation memory to O(sqrt(n)) for one
extra forward pass. :func:`measure_checkpointing` checks both claims on PyTorch: it runs n
transformer blocks (segments of k blocks under ``torch.utils.checkpoint``), tracks with
saved-tensor hooks what autograd holds after the forward pass and at the peak of the
backward pass, counts how often each block runs forward, and puts the model of
:func:`dlperf_widgets.core.memory.checkpoint_activation_bytes` beside it.

The reentrant checkpoint (``use_reentrant=True``) is used because it recomputes through
autograd's ordinary saved tensors, which the hooks can see; the non-reentrant variant keeps
recomputed tensors in its own store, invisible to them (it saves the same memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .._optional import require
from ..core._validate import check_int, check_number
from ..core.memory import checkpoint_activation_bytes, checkpoint_segment
from ..core.results import ResultMixin
from .memory_check import SavedTensorTracker, block_model_bytes, transformer_block

__all__ = ["CheckpointMeasurement", "measure_checkpointing"]


@dataclass(frozen=True)
class CheckpointMeasurement(ResultMixin):
    """Saved activation bytes of an n-layer stack, measured and modelled.

    ``forward_passes`` counts block executions divided by the number of blocks: 1 without
    checkpointing, 2 with it (one extra forward pass).
    """

    layers: int
    checkpointing: str
    segment_layers: int | None
    after_forward_bytes: int
    peak_bytes: int
    model_after_forward_bytes: float
    model_peak_bytes: float
    peak_ratio: float
    forward_passes: float
    model_recomputed_layers: int
    max_input_grad_difference: float

    _units: ClassVar[dict[str, str]] = {
        "after_forward_bytes": "B",
        "peak_bytes": "B",
        "model_after_forward_bytes": "B",
        "model_peak_bytes": "B",
    }

    def _title(self) -> str:
        return f"Checkpointing '{self.checkpointing}' on {self.layers} transformer layers"


def measure_checkpointing(
    layers: int = 16,
    checkpointing: Any = "sqrt",
    *,
    seq_len: int = 16,
    batch: int = 2,
    hidden: int = 32,
    heads: int = 4,
    dropout: float = 0.0,
    seed: int = 0,
) -> CheckpointMeasurement:
    """Measure activation memory and recomputation of ``layers`` blocks (FP32, CPU).

    ``checkpointing``: 'none', 'every', 'sqrt', 'every-K' or an int K, as in
    :func:`~dlperf_widgets.core.memory.training_memory`. The input gradient is compared
    with an uncheckpointed run of the same blocks (``max_input_grad_difference``).
    """
    torch = require("torch", "live checkpointing measurement")
    n = check_int("layers", layers, allow_array=False)
    check_number("dropout", dropout, minimum=0, maximum=1)
    k = checkpoint_segment(n, checkpointing)
    torch.manual_seed(seed)
    blocks = torch.nn.ModuleList(transformer_block(hidden, heads, dropout) for _ in range(n))
    calls = [0]

    def count(*_: Any) -> None:
        calls[0] += 1

    handles = [b.register_forward_pre_hook(count) for b in blocks]
    x0 = torch.randn(batch, seq_len, hidden)

    def run(seg: int | None) -> tuple[int, int, Any]:
        x = x0.clone().requires_grad_(True)
        tracker = SavedTensorTracker(exclude=list(blocks.parameters()))
        with tracker:
            y = x
            if seg is None:
                for blk in blocks:
                    y = blk(y)
            else:
                for start in range(0, n, seg):
                    part = blocks[start : start + seg]

                    def segment(z: Any, part: Any = part) -> Any:
                        for blk in part:
                            z = blk(z)
                        return z

                    y = torch.utils.checkpoint.checkpoint(segment, y, use_reentrant=True)
            after = tracker.current_bytes
            y.sum().backward()
        return after, tracker.peak_bytes, x.grad

    try:
        calls[0] = 0
        after, peak, grad = run(k)
        passes = calls[0] / n
        _, _, reference = run(None) if k is not None else (0, 0, grad)
    finally:
        for h in handles:
            h.remove()
    layer, layer_input, _ = block_model_bytes(seq_len, batch, hidden, heads, dropout=dropout > 0)
    m_after, m_peak, recomputed = checkpoint_activation_bytes(n, layer, layer_input, checkpointing)
    mode = checkpointing if isinstance(checkpointing, str) else f"every-{checkpointing}"
    return CheckpointMeasurement(
        layers=n,
        checkpointing=mode,
        segment_layers=k,
        after_forward_bytes=int(after),
        peak_bytes=int(peak),
        model_after_forward_bytes=float(m_after),
        model_peak_bytes=float(m_peak),
        peak_ratio=peak / m_peak,
        forward_passes=passes,
        model_recomputed_layers=recomputed,
        max_input_grad_difference=float((grad - reference).abs().max()),
    )
