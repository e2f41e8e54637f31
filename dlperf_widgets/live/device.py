"""Which device is here? The present GPU, matched to the database, or the CPU.

``torch.cuda.get_device_properties`` reports a board's marketing name, its SM count, memory,
L2 size and clocks. :func:`match_gpu` maps the name onto a database entry (``"NVIDIA H100
80GB HBM3"`` is an H100 SXM) and checks the SM count; when the name is unknown, or the SM
count differs (a MIG slice, a cut-down variant), :func:`gpu_from_properties` builds a custom
entry from the reported figures so the model still has something to predict with.

torch is imported only inside the functions that need it.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass, field
from typing import Any

from .._optional import require
from ..core._validate import check_choice
from ..core.errors import DlperfError, InvalidParameter, UnknownGPU
from ..core.gpus import Gpu, custom_gpu, gpu
from ..core.results import ResultMixin

__all__ = [
    "ARCHITECTURE_BY_COMPUTE_CAPABILITY",
    "DEVICES",
    "NAME_RULES",
    "DeviceInfo",
    "architecture_for",
    "detect_device",
    "gpu_from_properties",
    "match_gpu",
    "resolve_device",
]

DEVICES = ("auto", "cpu", "cuda")

# Compute capability (major, minor) -> key of core/data/architectures.csv. Capabilities
# from NVIDIA's CUDA C++ Programming Guide, "Compute Capabilities" table. A missing minor
# (None) matches every minor of that major.
ARCHITECTURE_BY_COMPUTE_CAPABILITY: dict[tuple[int, int | None], str] = {
    (7, 0): "volta",
    (7, 2): "volta",
    (7, 5): "turing",
    (8, 0): "ampere_ga100",
    (8, 6): "ampere_ga10x",
    (8, 7): "ampere_ga10x",
    (8, 9): "ada",
    (9, 0): "hopper",
    (10, None): "blackwell",
}

# Board name (as torch.cuda.get_device_name reports it) -> database name. Checked in order;
# the first pattern that matches wins, then the SM count must agree with the database.
# Names as the CUDA driver reports them, e.g. "NVIDIA H100 80GB HBM3" (the SXM5 board),
# "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB", "Tesla T4".
NAME_RULES: tuple[tuple[str, str], ...] = (
    (r"\bH200\b", "H200"),
    (r"\bH100\b.*\bPCIe\b", "H100-PCIe"),
    (r"\bH100\b.*\b(SXM|HBM3)\b", "H100-SXM"),
    (r"\bA100\b.*\bPCIe\b.*\b80GB\b|\bA100\b.*\b80GB\b.*\bPCIe\b", "A100-PCIe-80GB"),
    (r"\bA100\b.*\bSXM4?\b.*\b80GB\b", "A100-SXM4-80GB"),
    (r"\bA100\b.*\bSXM4?\b.*\b40GB\b", "A100-SXM4-40GB"),
    (r"\bA100\b.*\bPCIe\b.*\b40GB\b", "A100-PCIe-40GB"),
    (r"\bV100\b.*\bSXM2\b.*\b32GB\b", "V100-SXM2-32GB"),
    (r"\bV100\b.*\bSXM2\b.*\b16GB\b", "V100-SXM2-16GB"),
    (r"\bB200\b", "B200"),
    (r"\bL40S\b", "L40S"),
    (r"\bL4\b", "L4"),
    (r"\bA30\b", "A30"),
    (r"\bA10\b", "A10"),
    (r"\bT4\b", "T4"),
    (r"\bRTX 3090\b", "RTX-3090"),
    (r"\bRTX 4090\b", "RTX-4090"),
)


def architecture_for(major: int, minor: int) -> str | None:
    """The architectures.csv key for a compute capability, or None (pre-Volta, unknown)."""
    return ARCHITECTURE_BY_COMPUTE_CAPABILITY.get(
        (major, minor), ARCHITECTURE_BY_COMPUTE_CAPABILITY.get((major, None))
    )


def match_gpu(name: str, *, sms: int | None = None) -> Gpu | None:
    """The database GPU for a board name as the driver reports it, or None.

    With ``sms`` given, a name match whose SM count differs is rejected (a MIG slice or
    a variant the database does not list), so the caller builds a custom entry instead.

    >>> match_gpu("NVIDIA H100 80GB HBM3").name
    'H100-SXM'
    >>> match_gpu("NVIDIA H100 PCIe").name
    'H100-PCIe'
    >>> match_gpu("NVIDIA A100-SXM4-80GB", sms=108).name
    'A100-SXM4-80GB'
    >>> match_gpu("NVIDIA A100-SXM4-80GB", sms=14) is None
    True
    """
    hit: Gpu | None = None
    for pattern, target in NAME_RULES:
        if re.search(pattern, name, flags=re.IGNORECASE):
            hit = gpu(target)
            break
    if hit is None:
        cleaned = re.sub(r"^(NVIDIA|Tesla|GeForce)\s+", "", name.strip(), flags=re.IGNORECASE)
        for candidate in (name, cleaned):
            try:
                hit = gpu(candidate)
                break
            except (UnknownGPU, InvalidParameter):
                continue
    if hit is not None and sms is not None and hit.sms != sms:
        return None
    return hit


def gpu_from_properties(props: Any) -> Gpu | None:
    """A custom :class:`Gpu` from ``torch.cuda.get_device_properties`` (or any object with
    the same attributes), or None when the architecture has no rates in the database.

    Peak memory bandwidth = 2 x memory clock x bus width / 8 (double data rate), the
    formula of NVIDIA's developer blog "How to Query Device Properties and Handle Errors in
    CUDA C/C++". The SM clock is the reported maximum clock.
    """
    arch = architecture_for(int(props.major), int(props.minor))
    if arch is None:
        return None
    clock_khz = getattr(props, "clock_rate", 0) or 0
    mem_clock_khz = getattr(props, "memory_clock_rate", 0) or 0
    bus_bits = getattr(props, "memory_bus_width", 0) or 0
    if not (clock_khz and mem_clock_khz and bus_bits):
        return None  # torch too old to report clocks: no honest figures to build from
    bandwidth = 2.0 * mem_clock_khz * 1e3 * bus_bits / 8
    return custom_gpu(
        f"{props.name} (detected)",
        architecture=arch,
        sms=int(props.multi_processor_count),
        boost_clock_mhz=clock_khz / 1e3,
        memory_bandwidth_bytes_per_s=bandwidth,
        l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0),
        memory_bytes=int(props.total_memory),
        notes=(
            f"built from the device's reported properties (compute capability "
            f"{props.major}.{props.minor}, {arch} rates); not a database entry"
        ),
    )


@dataclass(frozen=True)
class DeviceInfo(ResultMixin):
    """The device a measurement runs on.

    ``kind`` is 'cuda' or 'cpu'. For a GPU, ``name`` is the board name the driver reports
    and ``gpu`` the model entry (database or custom, None when the model has no rates for
    the architecture); ``match`` says which ('database', 'custom', 'none'). For the CPU,
    ``name`` is 'cpu', ``processor`` the model the operating system reports and
    ``description`` the thread count: it leaves the processor out, so that a notebook saved
    with its outputs does not carry the recording machine's CPU model to its readers.
    """

    kind: str
    name: str
    description: str
    index: int | None = None
    sms: int | None = None
    memory_bytes: int | None = None
    l2_bytes: int | None = None
    compute_capability: str = ""
    match: str = "none"
    torch_version: str = ""
    cuda_version: str = ""
    threads: int | None = None
    processor: str = ""
    gpu: Gpu | None = field(default=None, repr=False)

    @property
    def model_gpu(self) -> str | None:
        """Name of the model's GPU entry, or None."""
        return self.gpu.name if self.gpu is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "description": self.description,
            "index": self.index,
            "sms": self.sms,
            "memory_bytes": self.memory_bytes,
            "l2_bytes": self.l2_bytes,
            "compute_capability": self.compute_capability,
            "match": self.match,
            "model_gpu": self.model_gpu,
            "torch_version": self.torch_version,
            "cuda_version": self.cuda_version,
            "threads": self.threads,
            "processor": self.processor,
        }

    def _title(self) -> str:
        return f"Device: {self.description}"

    def _rows(self) -> list[tuple[str, str]]:
        return [(k, "-" if v is None else str(v)) for k, v in self.to_dict().items()]


def _cpu_name() -> str:
    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return name or platform.processor() or platform.machine() or "unknown processor"


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' when a CUDA GPU is present, else 'cpu'; 'cuda' without one is an error."""
    choice = check_choice("device", device, DEVICES)
    torch = require("torch", "live timing")
    has_cuda = bool(torch.cuda.is_available())
    if choice == "auto":
        return "cuda" if has_cuda else "cpu"
    if choice == "cuda" and not has_cuda:
        raise InvalidParameter(
            "'device' must be 'auto' or 'cpu' on this machine, which has no CUDA GPU that "
            "PyTorch can use (got 'cuda')"
        )
    return choice


def detect_device(device: str = "auto") -> DeviceInfo:
    """Describe the device that ``device`` ('auto', 'cpu', 'cuda') resolves to.

    >>> detect_device("cpu").kind
    'cpu'
    """
    torch = require("torch", "live timing")
    kind = resolve_device(device)
    cuda_version = str(getattr(torch.version, "cuda", None) or "")
    if kind == "cpu":
        threads = int(torch.get_num_threads())
        cpu = _cpu_name()
        return DeviceInfo(
            kind="cpu",
            name="cpu",
            description=f"CPU, {threads} thread(s) (Tensor Cores do not apply)",
            threads=threads,
            processor=cpu,
            torch_version=str(torch.__version__),
            cuda_version=cuda_version,
        )
    index = int(torch.cuda.current_device())
    try:
        props = torch.cuda.get_device_properties(index)
    except RuntimeError as exc:  # driver trouble: say it in one sentence
        raise DlperfError(f"could not read the properties of CUDA device {index}: {exc}") from exc
    sms = int(props.multi_processor_count)
    matched = match_gpu(props.name, sms=sms)
    match = "database"
    if matched is None:
        matched = gpu_from_properties(props)
        match = "custom" if matched is not None else "none"
    model = f"model: {matched.name}" if matched is not None else "no model entry"
    return DeviceInfo(
        kind="cuda",
        name=str(props.name),
        description=f"{props.name} ({sms} SMs; {model})",
        index=index,
        sms=sms,
        memory_bytes=int(props.total_memory),
        l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0) or None,
        compute_capability=f"{props.major}.{props.minor}",
        match=match,
        torch_version=str(torch.__version__),
        cuda_version=cuda_version,
        gpu=matched,
    )
