"""Fusion measured on this machine: eager vs ``torch.compile``, explicit attention vs SDPA.

- :func:`compare_compile` runs a function eagerly, counting the operators PyTorch's
  dispatcher executes (each is one kernel launch eagerly; views launch nothing), then
  compiles it with ``torch.compile`` (TorchInductor) and counts the kernels in the code
  Inductor generated: its own fused kernels plus the library calls it keeps (a matrix
  multiply stays a library GEMM). Both are timed (median of repeats after a warm-up); the
  first compiled call, which compiles, is timed on its own (``compile_time_s``), and the
  generated source is kept (``generated_code``) so a reader can see what the kernel does.
- :func:`attention_saved_memory` runs attention forward written out (``softmax(Q K^T) V``)
  and through ``torch.nn.functional.scaled_dot_product_attention`` (which on the CPU and on
  GPUs picks a fused, FlashAttention-style kernel) and records with
  ``saved_tensors_hooks`` what each keeps for the backward pass.

Compiling takes seconds on a CPU (Inductor writes and builds C++); keep the inputs small.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from .._optional import require
from ..core._validate import check_int
from ..core.results import ResultMixin
from .memory_check import SavedTensorTracker

__all__ = [
    "AttentionMemoryMeasurement",
    "CompileMeasurement",
    "attention_saved_memory",
    "compare_compile",
    "count_eager_ops",
]


def _torch() -> Any:
    return require("torch", "fusion measurements")


def count_eager_ops(fn: Callable[..., Any], *args: Any) -> list[str]:
    """Names of the aten operators ``fn(*args)`` runs eagerly (views and no-ops left out)."""
    torch = _torch()
    from torch.utils._python_dispatch import TorchDispatchMode

    names: list[str] = []

    class _Count(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None):  # type: ignore[no-untyped-def]
            if not func.is_view and func.overloadpacket.__name__ not in ("detach", "empty"):
                names.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with torch.no_grad(), _Count():
        fn(*args)
    return names


def _median_time_s(fn: Callable[..., Any], args: tuple[Any, ...], repeats: int) -> float:
    torch = _torch()
    with torch.no_grad():
        fn(*args)  # warm-up
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


@dataclass(frozen=True)
class CompileMeasurement(ResultMixin):
    """Eager vs compiled run of one function on this machine (a measurement)."""

    device: str
    eager_ops: tuple[str, ...]
    compiled_kernels: tuple[str, ...]
    eager_kernel_count: int
    compiled_kernel_count: int
    eager_time_s: float
    compiled_time_s: float
    compile_time_s: float
    speedup: float
    generated_code: str

    _units: ClassVar[dict[str, str]] = {
        "eager_time_s": "s",
        "compiled_time_s": "s",
        "compile_time_s": "s",
    }
    _hidden: ClassVar[tuple[str, ...]] = ("generated_code",)

    def _title(self) -> str:
        return f"eager vs torch.compile on {self.device} (measured)"

    def _rows(self) -> list[tuple[str, str]]:
        rows = super()._rows()
        return [
            *rows,
            ("eager_ops", ", ".join(self.eager_ops)),
            ("compiled_kernels", ", ".join(self.compiled_kernels)),
        ]


def compare_compile(fn: Callable[..., Any], *args: Any, repeats: int = 20) -> CompileMeasurement:
    """Count and time ``fn(*args)`` eagerly and compiled with ``torch.compile``."""
    torch = _torch()
    repeats = check_int("repeats", repeats, allow_array=False, maximum=10_000)
    from torch._inductor.utils import run_and_get_code

    eager_ops = count_eager_ops(fn, *args)
    compiled = torch.compile(fn)
    t0 = time.perf_counter()
    with torch.no_grad():
        _, codes = run_and_get_code(compiled, *args)
    compile_s = time.perf_counter() - t0
    kernels: list[str] = []
    for code in codes:
        body = code[code.find("def call(") :]
        kernels += re.findall(r"\b(cpp_fused_\w+|triton_\w+)\.run\(|\b(cpp_fused_\w+)\(", body)
        kernels += [f"extern {k}" for k in re.findall(r"extern_kernels\.(\w+)\(", body)]
    names = [k if isinstance(k, str) else (k[0] or k[1]) for k in kernels]
    t_eager = _median_time_s(fn, args, repeats)
    t_comp = _median_time_s(compiled, args, repeats)
    device = str(args[0].device) if args and hasattr(args[0], "device") else "cpu"
    return CompileMeasurement(
        device=device,
        eager_ops=tuple(eager_ops),
        compiled_kernels=tuple(names),
        eager_kernel_count=len(eager_ops),
        compiled_kernel_count=len(names),
        eager_time_s=t_eager,
        compiled_time_s=t_comp,
        compile_time_s=compile_s,
        speedup=t_eager / t_comp,
        generated_code="\n".join(codes),
    )


@dataclass(frozen=True)
class AttentionMemoryMeasurement(ResultMixin):
    """Bytes autograd keeps for backward: explicit attention vs SDPA (a measurement)."""

    batch: int
    heads: int
    seq_len: int
    head_dim: int
    dtype: str
    saved_bytes_explicit: int
    saved_bytes_sdpa: int
    saved_bytes_difference: int
    outputs_match: bool

    _units: ClassVar[dict[str, str]] = {
        "saved_bytes_explicit": "iB",
        "saved_bytes_sdpa": "iB",
        "saved_bytes_difference": "iB",
    }

    def _title(self) -> str:
        return "saved for backward: explicit attention vs scaled_dot_product_attention (measured)"


def attention_saved_memory(
    seq_len: int = 256, *, head_dim: int = 32, heads: int = 4, batch: int = 2
) -> AttentionMemoryMeasurement:
    """Measure what explicit attention and SDPA save for backward (FP32, on the CPU)."""
    torch = _torch()
    n = check_int("seq_len", seq_len, allow_array=False, maximum=4096)
    d = check_int("head_dim", head_dim, allow_array=False, maximum=512)
    h = check_int("heads", heads, allow_array=False, maximum=256)
    b = check_int("batch", batch, allow_array=False, maximum=256)
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, generator=gen, requires_grad=True) for _ in range(3))
    saved = []
    outs = []
    for explicit in (True, False):
        with SavedTensorTracker(exclude=(q, k, v)) as tr:
            if explicit:
                p = torch.softmax((q @ k.transpose(-2, -1)) * d**-0.5, dim=-1)
                out = p @ v
            else:
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            saved.append(tr.current_bytes)
            outs.append(out.detach())
        del out
    return AttentionMemoryMeasurement(
        batch=b,
        heads=h,
        seq_len=n,
        head_dim=d,
        dtype="fp32",
        saved_bytes_explicit=saved[0],
        saved_bytes_sdpa=saved[1],
        saved_bytes_difference=saved[0] - saved[1],
        outputs_match=bool(torch.allclose(outs[0], outs[1], atol=1e-5)),
    )
