"""Gradient accumulation checked on PyTorch: same gradients, smaller activations (CPU).

The slides "NN Performance optimization" ("Gradient accumulation") split a batch into
micro-batches run one after the other, divide each loss by the number of steps and call
``optimizer.step()`` once at the end. :func:`compare_accumulation` runs a transformer block
and a linear head both ways and compares the gradients, and measures with saved-tensor
hooks the activations one pass keeps: the micro-batch keeps 1/k of the full batch's, as
:func:`dlperf_widgets.core.memory.training_memory` assumes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .._optional import require
from ..core._validate import check_int
from ..core.errors import InvalidParameter
from ..core.results import ResultMixin
from .memory_check import SavedTensorTracker, transformer_block

__all__ = ["AccumulationResult", "compare_accumulation"]


@dataclass(frozen=True)
class AccumulationResult(ResultMixin):
    """Gradients of one large batch vs k accumulated micro-batches, and their activations."""

    batch: int
    accumulation_steps: int
    micro_batch: int
    max_abs_grad_difference: float
    max_abs_grad: float
    grads_match: bool
    full_batch_activation_bytes: int
    micro_batch_activation_bytes: int
    activation_ratio: float

    _units: ClassVar[dict[str, str]] = {
        "full_batch_activation_bytes": "B",
        "micro_batch_activation_bytes": "B",
    }

    def _title(self) -> str:
        return (
            f"Gradient accumulation: {self.accumulation_steps} x {self.micro_batch} vs {self.batch}"
        )


def compare_accumulation(
    batch: int = 16,
    accumulation_steps: int = 4,
    *,
    seq_len: int = 16,
    hidden: int = 32,
    heads: int = 4,
    seed: int = 0,
) -> AccumulationResult:
    """Gradients with and without accumulation (FP32, dropout off so both see the same net)."""
    torch = require("torch", "live gradient accumulation check")
    b = check_int("batch", batch, allow_array=False)
    k = check_int("accumulation_steps", accumulation_steps, allow_array=False)
    if b % k:
        raise InvalidParameter(f"'accumulation_steps' must divide batch ({b}) (got {k})")
    torch.manual_seed(seed)
    model = torch.nn.Sequential(transformer_block(hidden, heads, 0.0), torch.nn.Linear(hidden, 1))
    params = list(model.parameters())
    x = torch.randn(b, seq_len, hidden)
    target = torch.randn(b, seq_len, 1)

    def loss_of(xb: Any, tb: Any) -> Any:
        return torch.nn.functional.mse_loss(model(xb), tb)

    tracker = SavedTensorTracker(exclude=params)
    with tracker:
        loss = loss_of(x, target)
        full_bytes = tracker.current_bytes
    loss.backward()
    full = [p.grad.clone() for p in params]
    model.zero_grad()

    micro = b // k
    micro_bytes = 0
    for i in range(k):
        sl = slice(i * micro, (i + 1) * micro)
        tracker = SavedTensorTracker(exclude=params)
        with tracker:
            # copies, as a data loader would hand them out (a view would keep all of x)
            xb, tb = x[sl].clone(), target[sl].clone()
            loss = loss_of(xb, tb) / k  # normalise, as the slides do
            micro_bytes = max(micro_bytes, tracker.current_bytes)
        loss.backward()  # gradients add up in .grad
    diff = max(float((p.grad - g).abs().max()) for p, g in zip(params, full, strict=True))
    biggest = max(float(g.abs().max()) for g in full)
    return AccumulationResult(
        batch=b,
        accumulation_steps=k,
        micro_batch=micro,
        max_abs_grad_difference=diff,
        max_abs_grad=biggest,
        grads_match=all(
            torch.allclose(p.grad, g, rtol=1e-4, atol=1e-6)
            for p, g in zip(params, full, strict=True)
        ),
        full_batch_activation_bytes=int(full_bytes),
        micro_batch_activation_bytes=int(micro_bytes),
        activation_ratio=full_bytes / micro_bytes,
    )
