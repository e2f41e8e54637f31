""" "Am I using Tensor Cores?": profile an op and read the names of the kernels it launched.

The NVIDIA slides "NN Performance optimization" ("Am I use Tensor Cores?") answer the
question with ``torch.profiler``: profile a few steps and look at the GPU kernels. Kernel
names are not an API, but NVIDIA's libraries name their kernels consistently enough to
classify them. The heuristics, by where they appear:

=====================  =========================================================  ===============
pattern in the name    meaning                                                    architectures
=====================  =========================================================  ===============
``hmma`` ``imma``      half / integer matrix-multiply-accumulate instructions     Volta and newer
``wmma``               the CUDA C++ warp-level matrix API                         Volta and newer
``884`` + gemm/cudnn   the 8x8x4 Tensor Core shape (``volta_h884gemm``)           Volta
``1688`` ``8816``      16x8x8 / 8x8x16 shapes (``turing_fp16_s1688gemm``)         Turing, Ampere
``16816`` ``16832``    16x8x16 / 16x8x32 shapes (``ampere_bf16_s16816gemm``)      Ampere, Ada, Hopper
``tensorop``           CUTLASS Tensor Core kernels (``cutlass_80_tensorop_...``)  Volta and newer
``xmma``               NVIDIA's Tensor Core GEMM/convolution library in cuBLAS    Ampere and newer
                       and cuDNN (``sm80_xmma_gemm_...``, ``sm90_xmma_...``)
``gmma`` ``wgmma``     Hopper warp-group matrix instructions                      Hopper
``nvjet``              cuBLAS's Hopper-and-newer GEMM kernels (warp-group MMA)    Hopper, Blackwell
``tcgen05`` ``umma``   Blackwell's fifth-generation Tensor Core instructions      Blackwell
``flash`` ``fmha``     fused attention on fp16/bf16 (built on ``mma`` instructions) Ampere and newer
=====================  =========================================================  ===============

A matrix kernel that runs on CUDA cores says so too: ``sgemm``/``dgemm`` without a Tensor
Core shape (``ampere_sgemm_128x64_nn``), ``simt`` (CUTLASS), ``gemv``, ``scudnn`` and
``implicit_convolve_sgemm`` (cuDNN). Everything else (element-wise, reductions, norms,
layout transposes such as ``nchwToNhwcKernel``) is not a matrix kernel: Tensor Cores do
not apply to it, whatever the data type.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._optional import require
from ..core._validate import check_int, describe
from ..core.errors import InvalidParameter
from ..core.results import ResultMixin, format_quantity
from .device import detect_device


@contextlib.contextmanager
def quiet_native_stderr() -> Any:
    """Send file descriptor 2 to /dev/null while the profiler starts and stops: its native
    library prints bookkeeping lines (``STAGE:``, ``USDT:``) that a notebook shows as red
    error boxes. Python's own sys.stderr is untouched."""
    import os
    import sys

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real fd 2 (some embedded shells)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


__all__ = [
    "CUDA_CORE_PATTERNS",
    "TENSOR_CORE_PATTERNS",
    "VERDICTS",
    "Kernel",
    "TensorCoreReport",
    "classify_kernel",
    "quiet_native_stderr",
    "tensor_core_report",
]

VERDICTS = ("tensor_core", "cuda_core", "other", "unknown", "cpu")

# (regex, reason); searched case-insensitively in order. See the module docstring.
TENSOR_CORE_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"hmma|imma|wmma|mma_sync", "names a Tensor Core matrix-multiply instruction"),
    (r"tcgen05|(?<![a-z])umma", "Blackwell Tensor Core instructions (tcgen05 / UMMA)"),
    (r"wgmma|gmma|warpgroup", "Hopper warp-group matrix instructions (GMMA)"),
    (r"nvjet", "cuBLAS 'nvjet' GEMM (Hopper and newer, warp-group Tensor Core kernels)"),
    (
        r"(884|1688|8816|16816|16832)(gemm|cudnn|fprop|dgrad|wgrad)",
        "a Tensor Core instruction shape (884 Volta, 1688/8816 Turing, 16816 Ampere+)",
    ),
    (r"tensorop", "a CUTLASS Tensor Core ('tensorop') kernel"),
    (r"xmma", "NVIDIA's xmma Tensor Core GEMM/convolution kernels"),
    (
        r"(flash|fmha).*(f16|bf16|fp16|half)|(f16|bf16|fp16).*(flash|fmha)",
        "fused fp16/bf16 attention on Tensor Cores",
    ),
    (r"flash_(fwd|bwd)", "FlashAttention kernel (Tensor Core matrix instructions)"),
)
CUDA_CORE_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"simt", "a CUTLASS CUDA-core ('simt') kernel"),
    (r"[sdc]gemm|gemv|gemmsn|gemmk1|dot_kernel", "a CUDA-core GEMM/GEMV kernel"),
    (r"scudnn|implicit_convolve|convolve_sgemm|winograd", "a CUDA-core cuDNN convolution"),
)
_MATRIX_HINT = r"gemm|conv|matmul|mm_|_mm|bmm|attention|fmha|fprop|dgrad|wgrad"


def classify_kernel(name: str) -> tuple[str, str]:
    """(verdict, reason) for a GPU kernel name: 'tensor_core', 'cuda_core' (a matrix kernel
    on CUDA cores), 'other' (not a matrix kernel) or 'unknown' (a matrix kernel whose name
    does not tell). :func:`tensor_core_report` marks CPU operators 'cpu'.

    >>> classify_kernel("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn")[0]
    'tensor_core'
    >>> classify_kernel("volta_sgemm_128x64_nn")[0]
    'cuda_core'
    >>> classify_kernel("void at::native::vectorized_elementwise_kernel<4, ...>")[0]
    'other'
    """
    text = name.lower()
    if "xmma" in text and re.search(r"f32f32_f32f32", text) and "tf32" not in text:
        return "unknown", "an xmma kernel on fp32 data without TF32: cannot tell from the name"
    for pattern, reason in TENSOR_CORE_PATTERNS:
        if re.search(pattern, text):
            return "tensor_core", reason
    for pattern, reason in CUDA_CORE_PATTERNS:
        if re.search(pattern, text):
            return "cuda_core", reason
    if re.search(_MATRIX_HINT, text):
        return "unknown", "a matrix kernel whose name shows no known Tensor Core marker"
    return "other", "not a matrix kernel (memory-limited work: Tensor Cores do not apply)"


@dataclass(frozen=True)
class Kernel:
    """One kernel (GPU) or operator (CPU) seen by the profiler, summed over its calls."""

    name: str
    calls: int
    time_s: float
    verdict: str
    reason: str


@dataclass(frozen=True)
class TensorCoreReport(ResultMixin):
    """What ran, and whether the matrix work ran on Tensor Cores.

    ``uses_tensor_cores`` is True when at least one kernel is a Tensor Core kernel, False
    when matrix kernels ran and none was, and None on the CPU (no Tensor Cores there).
    ``tensor_core_time_share`` is the share of GPU kernel time spent in Tensor Core kernels.
    """

    label: str
    device: str
    device_kind: str
    architecture: str | None
    iterations: int
    kernels: tuple[Kernel, ...]
    uses_tensor_cores: bool | None
    tensor_core_time_share: float | None
    message: str

    def _title(self) -> str:
        return f"Am I using Tensor Cores? {self.label} on {self.device}"

    def _rows(self) -> list[tuple[str, str]]:
        answer = {True: "yes", False: "no", None: "does not apply (CPU)"}[self.uses_tensor_cores]
        rows = [("answer", answer), ("why", self.message)]
        if self.tensor_core_time_share is not None:
            rows.append(("Tensor Core share of kernel time", f"{self.tensor_core_time_share:.0%}"))
        for kern in self.kernels[:12]:
            rows.append(
                (
                    _short(kern.name),
                    f"{kern.calls} call(s), {format_quantity(kern.time_s, 's')}: {kern.verdict}",
                )
            )
        return rows


def _short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def _event_time(evt: Any, kind: str) -> float:
    if kind == "cuda":
        us = getattr(evt, "device_time_total", None)
        if us is None:  # older torch
            us = getattr(evt, "cuda_time_total", None) or 0.0
    else:
        us = evt.self_cpu_time_total
    return float(us) / 1e6


def tensor_core_report(
    fn: Callable[[], Any] | None = None,
    *,
    m: int = 4096,
    n: int = 4096,
    k: int = 4096,
    dtype: str = "fp16",
    device: str = "auto",
    iterations: int = 3,
    warmup: int = 2,
    label: str = "",
) -> TensorCoreReport:
    """Profile ``fn()`` (default: an M x N x K matmul in ``dtype``) and classify what ran.

    ``warmup`` calls run before the profiler starts (the slides' schedule waits and warms
    up before the active steps), then ``iterations`` calls are profiled. On a GPU the
    kernels are listed and classified with :func:`classify_kernel`; on the CPU the
    operators are listed and the report says Tensor Cores do not apply.
    """
    torch = require("torch", "the Tensor Core check")
    from torch.profiler import ProfilerActivity, profile

    iterations = check_int("iterations", iterations, allow_array=False)
    warmup = check_int("warmup", warmup, minimum=0, allow_array=False)
    info = detect_device(device)
    dev = "cuda" if info.kind == "cuda" else "cpu"
    state: dict[str, Any] = {}
    if fn is None:
        from .timing import _matmul_precision, _timed_dtype, _torch_dtype

        dname = _timed_dtype(dtype)
        m = check_int("m", m, allow_array=False)
        n = check_int("n", n, allow_array=False)
        k = check_int("k", k, allow_array=False)
        tdtype = _torch_dtype(torch, dname)
        gen = torch.Generator(device=dev).manual_seed(0)
        state["a"] = torch.randn(m, k, generator=gen, device=dev).to(tdtype)
        state["b"] = torch.randn(k, n, generator=gen, device=dev).to(tdtype)

        def fn() -> Any:
            return state["a"] @ state["b"]

        label = label or f"matmul {m} x {n} x {k} ({dname})"
        precision: contextlib.AbstractContextManager[None] = _matmul_precision(
            torch, dname, info.kind
        )
    else:
        if not callable(fn):
            raise InvalidParameter(
                f"'fn' must be a callable taking no arguments (got {describe(fn)})"
            )
        label = label or getattr(fn, "__name__", "callable")
        precision = contextlib.nullcontext()

    activities = [ProfilerActivity.CPU]
    if info.kind == "cuda":
        activities.append(ProfilerActivity.CUDA)
    try:
        with precision:
            for _ in range(warmup):
                fn()
            if info.kind == "cuda":
                torch.cuda.synchronize()
            with quiet_native_stderr(), profile(activities=activities) as prof:
                for _ in range(iterations):
                    fn()
                if info.kind == "cuda":
                    torch.cuda.synchronize()
    finally:
        state.clear()

    kernels = []
    for evt in prof.key_averages():
        is_gpu = str(getattr(evt, "device_type", "")).endswith("CUDA")
        if info.kind == "cuda":
            if not is_gpu:
                continue
            verdict, reason = classify_kernel(evt.key)
        else:
            if not evt.key.startswith("aten::"):
                continue
            verdict, reason = "cpu", "a CPU operator: Tensor Cores are a GPU unit"
        kernels.append(
            Kernel(evt.key, int(evt.count), _event_time(evt, info.kind), verdict, reason)
        )
    kernels.sort(key=lambda kk: kk.time_s, reverse=True)

    if info.kind == "cpu":
        ops = ", ".join(kk.name for kk in kernels[:4]) or "no aten operators"
        return TensorCoreReport(
            label=label,
            device="cpu",
            device_kind="cpu",
            architecture=None,
            iterations=iterations,
            kernels=tuple(kernels),
            uses_tensor_cores=None,
            tensor_core_time_share=None,
            message=(
                f"this ran on the CPU ({ops}); Tensor Cores are a GPU unit, so the question "
                f"only has an answer on an NVIDIA GPU"
            ),
        )
    total = sum(kk.time_s for kk in kernels)
    tc = [kk for kk in kernels if kk.verdict == "tensor_core"]
    matrix = [kk for kk in kernels if kk.verdict in ("tensor_core", "cuda_core", "unknown")]
    share = sum(kk.time_s for kk in tc) / total if total > 0 else None
    if tc:
        uses: bool | None = True
        message = f"{len(tc)} Tensor Core kernel(s), e.g. {_short(tc[0].name, 60)}: {tc[0].reason}"
    elif matrix:
        uses = False
        first = matrix[0]
        message = (
            f"the matrix work ran in {_short(first.name, 60)} ({first.reason}); check the "
            f"dtype (fp16/bf16, or fp32 with TF32 on) and the alignment of the sizes"
        )
    else:
        uses = False
        message = "no matrix kernel ran: this op is memory-limited and Tensor Cores do not apply"
    return TensorCoreReport(
        label=label,
        device=info.name,
        device_kind="cuda",
        architecture=info.gpu.architecture if info.gpu is not None else None,
        iterations=iterations,
        kernels=tuple(kernels),
        uses_tensor_cores=uses,
        tensor_core_time_share=share,
        message=message,
    )
