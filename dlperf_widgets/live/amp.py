"""An automatic-mixed-precision training loop on the CPU: autocast to bfloat16 + GradScaler.

The loop of the slides "NN Performance optimization" ("How to use it? In PyTorch"):
forward and loss under ``torch.autocast``, ``scaler.scale(loss).backward()``,
``scaler.step(optimizer)`` (which unscales and skips the step when a gradient is inf or
NaN) and ``scaler.update()``. On the CPU autocast runs matrix products in bfloat16; weights
and gradients stay FP32. bfloat16 has FP32's range, so scaling is not needed there; the
scaler is kept to show its behaviour, and ``inf_steps`` injects an overflow (the loss is
multiplied by inf) so a skipped step and the back-off can be seen and compared with
:func:`dlperf_widgets.core.loss_scaling.simulate_grad_scaler`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from .._optional import require
from ..core._validate import check_int, check_number
from ..core.loss_scaling import GradScalerTrace, simulate_grad_scaler
from ..core.results import ResultMixin

__all__ = ["AmpRun", "amp_training_loop"]


@dataclass(frozen=True)
class AmpRun(ResultMixin):
    """What an AMP loop did, step by step, and the core model's replay of the scaler."""

    steps: int
    autocast_dtype: str
    activation_dtype: str
    param_dtype: str
    grad_dtype: str
    losses: tuple[float, ...]
    scales: tuple[float, ...]
    skipped: tuple[bool, ...]
    final_scale: float
    model: GradScalerTrace
    matches_model: bool

    _hidden: ClassVar[tuple[str, ...]] = ("model",)

    def _title(self) -> str:
        return f"AMP loop on the CPU ({self.autocast_dtype} autocast), {self.steps} steps"


def amp_training_loop(
    steps: int = 8,
    *,
    inf_steps: Sequence[int] = (3,),
    init_scale: float = 2.0**16,
    growth_interval: int = 2,
    seed: int = 0,
) -> AmpRun:
    """Train a small MLP for ``steps`` steps with autocast(bfloat16) and a GradScaler."""
    torch = require("torch", "the live AMP loop")
    n = check_int("steps", steps, allow_array=False)
    init = check_number("init_scale", init_scale, minimum=0, strict=True)
    interval = check_int("growth_interval", growth_interval, allow_array=False)
    bad = {check_int("inf_steps", s, minimum=0, allow_array=False) for s in inf_steps}
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cpu", init_scale=init, growth_interval=interval)
    x, y = torch.randn(64, 32), torch.randn(64, 1)
    losses, scales, skipped = [], [], []
    act_dtype = ""
    for i in range(n):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
            act_dtype = str(out.dtype).replace("torch.", "")
            loss = torch.nn.functional.mse_loss(out.float(), y)
        if i in bad:
            loss = loss * float("inf")
        before = [p.detach().clone() for p in model.parameters()]
        scales.append(scaler.get_scale())
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        skipped.append(
            all(torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
        )
        losses.append(float(loss.detach()))
    p0 = next(model.parameters())
    trace = simulate_grad_scaler(
        [i in bad for i in range(n)], init_scale=init, growth_interval=interval
    )
    return AmpRun(
        steps=n,
        autocast_dtype="bfloat16",
        activation_dtype=act_dtype,
        param_dtype=str(p0.dtype).replace("torch.", ""),
        grad_dtype=str(p0.grad.dtype).replace("torch.", ""),
        losses=tuple(losses),
        scales=tuple(scales),
        skipped=tuple(skipped),
        final_scale=scaler.get_scale(),
        model=trace,
        matches_model=tuple(scales) == trace.scale and tuple(skipped) == trace.skipped,
    )
