"""Guards live/device.py: board names map to the right database GPU, unknown boards get a
custom entry from their reported properties, and the CPU is described when no GPU is used."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from dlperf_widgets.core.errors import InvalidParameter, MissingDependency
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.live.device import (
    architecture_for,
    detect_device,
    gpu_from_properties,
    match_gpu,
    resolve_device,
)

# Names as the CUDA driver reports them (torch.cuda.get_device_name) and the SM counts of
# those boards (NVIDIA whitepapers / datasheets).
DRIVER_NAMES = [
    ("NVIDIA H100 80GB HBM3", 132, "H100-SXM"),
    ("NVIDIA H100 PCIe", 114, "H100-PCIe"),
    ("NVIDIA H200", 132, "H200"),
    ("NVIDIA A100-SXM4-80GB", 108, "A100-SXM4-80GB"),
    ("NVIDIA A100-SXM4-40GB", 108, "A100-SXM4-40GB"),
    ("NVIDIA A100 80GB PCIe", 108, "A100-PCIe-80GB"),
    ("Tesla V100-SXM2-16GB", 80, "V100-SXM2-16GB"),
    ("Tesla V100-SXM2-32GB", 80, "V100-SXM2-32GB"),
    ("Tesla T4", 40, "T4"),
    ("NVIDIA A10", 72, "A10"),
    ("NVIDIA L4", 58, "L4"),
    ("NVIDIA L40S", 142, "L40S"),
    ("NVIDIA GeForce RTX 4090", 128, "RTX-4090"),
    ("NVIDIA GeForce RTX 3090", 82, "RTX-3090"),
]


@pytest.mark.parametrize(("name", "sms", "expected"), DRIVER_NAMES)
def test_driver_names_match_database(name, sms, expected):
    """Each board name the driver reports maps onto its database entry, SM count agreeing."""
    hit = match_gpu(name, sms=sms)
    assert hit is not None and hit.name == expected
    assert hit.sms == sms


def test_sm_mismatch_or_unknown_name_is_not_matched():
    """A MIG slice (fewer SMs), a 3090 Ti (84 SMs) and an unknown board are not matched."""
    assert match_gpu("NVIDIA A100-SXM4-80GB", sms=14) is None
    assert match_gpu("NVIDIA GeForce RTX 3090 Ti", sms=84) is None
    assert match_gpu("NVIDIA H100 NVL") is None
    assert match_gpu("NVIDIA Quadro P1000") is None


def test_architecture_from_compute_capability():
    """Compute capabilities map to the architectures of the FMA table; Pascal has none."""
    assert architecture_for(7, 0) == "volta"
    assert architecture_for(7, 5) == "turing"
    assert architecture_for(8, 0) == "ampere_ga100"
    assert architecture_for(8, 6) == "ampere_ga10x"
    assert architecture_for(8, 9) == "ada"
    assert architecture_for(9, 0) == "hopper"
    assert architecture_for(10, 0) == "blackwell"
    assert architecture_for(6, 1) is None


def _h100_nvl_props(**overrides):
    # H100 NVL as torch reports it: 132 SMs, 1785 MHz, HBM3 at 2619 MHz on a 6144-bit bus
    # (NVIDIA H100 NVL datasheet: 3.9 TB/s), 50 MiB L2, 94 GB.
    props = dict(
        name="NVIDIA H100 NVL",
        major=9,
        minor=0,
        multi_processor_count=132,
        total_memory=94 * 10**9,
        L2_cache_size=50 * 2**20,
        clock_rate=1_785_000,
        memory_clock_rate=2_619_000,
        memory_bus_width=6144,
    )
    props.update(overrides)
    return SimpleNamespace(**props)


def test_custom_entry_from_properties():
    """An unknown Hopper board becomes a custom GPU: SMs, L2 and memory as reported, DDR
    bandwidth 2 x clock x bus width / 8 (~4.02 TB/s for the NVL), Hopper FMA rates."""
    g = gpu_from_properties(_h100_nvl_props())
    assert g is not None
    assert g.architecture == "hopper" and g.sms == 132
    assert g.l2_bytes == 50 * 2**20 and g.memory_bytes == 94 * 10**9
    assert g.memory_bandwidth_bytes_per_s == pytest.approx(2 * 2.619e9 * 6144 / 8)
    # same SMs and architecture as the H100 SXM: dense FP16 scales with the clock only
    sxm = gpu("H100-SXM")
    ratio = g.peak_flops("fp16", unit="cuda") / sxm.peak_flops("fp16", unit="cuda")
    assert ratio == pytest.approx(1785 / sxm.boost_clock_mhz)


def test_custom_entry_needs_a_known_architecture_and_clocks():
    """Pre-Volta boards and properties without clocks give no model entry (None)."""
    assert gpu_from_properties(_h100_nvl_props(major=6, minor=1)) is None
    assert gpu_from_properties(_h100_nvl_props(clock_rate=0)) is None


def test_cpu_description():
    """device='cpu' describes the CPU, names no GPU model, and says Tensor Cores don't apply."""
    pytest.importorskip("torch")
    info = detect_device("cpu")
    assert info.kind == "cpu" and info.name == "cpu" and info.gpu is None
    assert info.threads and info.threads >= 1
    assert "Tensor Cores do not apply" in info.description
    assert info.to_dict()["model_gpu"] is None
    assert "Device:" in str(info) and "<table" in info._repr_html_()


def test_bad_device_and_missing_cuda(monkeypatch):
    """A device name outside auto/cpu/cuda, and 'cuda' without a GPU, are one clear sentence."""
    torch = pytest.importorskip("torch")
    with pytest.raises(InvalidParameter, match=r"'device' must be one of auto, cpu, cuda"):
        resolve_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(InvalidParameter, match=r"no CUDA GPU.*\(got 'cuda'\)"):
        resolve_device("cuda")
    assert resolve_device("auto") == "cpu"


def test_missing_torch_says_install_live_extra(monkeypatch):
    """Without torch, detection raises MissingDependency naming the `live` extra."""
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependency, match=r"pip install torch .*pip install -e '\.\[live\]'"):
        detect_device()


@pytest.mark.gpu
def test_present_gpu_is_described():
    """On a CUDA machine the present GPU is described with its SMs and a model entry."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    info = detect_device("cuda")
    props = torch.cuda.get_device_properties(info.index)
    assert info.kind == "cuda" and info.name == props.name
    assert info.sms == props.multi_processor_count
    assert info.match in ("database", "custom", "none")
