"""Guards the GPU database: derived peaks against NVIDIA's published figures, lookup, errors."""

from __future__ import annotations

import csv
from importlib import resources

import pytest

from dlperf_widgets.core import custom_gpu, gpu, gpu_names, gpus, register_gpu
from dlperf_widgets.core.errors import InvalidParameter, UnknownGPU
from dlperf_widgets.core.gpus import _read_csv

REQUIRED = [
    "V100-SXM2-16GB",
    "V100-SXM2-32GB",
    "T4",
    "A100-SXM4-40GB",
    "A100-SXM4-80GB",
    "A100-PCIe-80GB",
    "A10",
    "A30",
    "L4",
    "L40S",
    "RTX-3090",
    "RTX-4090",
    "H100-SXM",
    "H100-PCIe",
    "H200",
    "B200",
]


def test_database_has_every_required_gpu():
    """The issue's minimum list of GPUs is present under its canonical names."""
    assert set(REQUIRED) <= set(gpu_names())


def _published():
    text = resources.files("dlperf_widgets.core.data").joinpath("published_peaks.csv").read_text()
    rows = [r for r in csv.DictReader(ln for ln in text.splitlines() if not ln.startswith("#"))]
    return [(r["gpu"], r["unit"], r["dtype"], r["sparse"] == "1", float(r["tflops"])) for r in rows]


@pytest.mark.parametrize(("name", "unit", "dt", "sparse", "tflops"), _published())
def test_derived_peak_matches_published_figure(name, unit, dt, sparse, tflops):
    """SMs x clock x FMA/clk/SM x 2 (with documented overrides) is within 1 % of the datasheet."""
    derived = gpu(name).peak_flops(dt, sparse=sparse, unit=unit)
    assert derived == pytest.approx(tflops * 1e12, rel=0.01)


def test_r04_a100_peaks_from_first_principles():
    """R04: 108 SMs x 1.41 GHz x 512 (TF32) / 1024 (FP16) FMA x 2 = 156 / 312 TFLOPS."""
    a100 = gpu("A100")
    assert a100.sms == 108 and a100.boost_clock_mhz == 1410
    assert 108 * 1.41e9 * 512 * 2 == pytest.approx(a100.peak_flops("tf32"))
    assert a100.peak_flops("tf32") / 1e12 == pytest.approx(156, rel=0.01)
    assert a100.peak_flops("fp16") / 1e12 == pytest.approx(312, rel=0.01)


def test_r01_v100_ops_per_byte():
    """R01: V100 FP16 Tensor Cores 125 TFLOPS over 900 GB/s is an ops:byte ratio of 138.9."""
    assert gpu("V100").ops_per_byte("fp16") == pytest.approx(138.9, rel=0.01)


# The slides' table "Multiply-add operations per clock per SM", transcribed here by hand as an
# independent copy of the data file (R05). None: the cell is empty on the slide.
SLIDE_TABLE = {
    "volta": {"cuda": {"fp64": 32, "fp32": 64, "fp16": 128, "int8": 256}, "tensor": {"fp16": 512}},
    "turing": {
        "cuda": {"fp64": 2, "fp32": 64, "fp16": 128, "int8": 256},
        "tensor": {"fp16": 512, "int8": 1024, "int4": 2048},
    },
    "ampere_ga100": {
        "cuda": {"fp64": 32, "fp32": 64, "fp16": 256, "int8": 256},
        "tensor": {"fp64": 64, "tf32": 512, "fp16": 1024, "int8": 2048, "int4": 4096},
    },
}
SLIDE_SPARSE = {"tf32": 1024, "fp16": 2048, "int8": 4096, "int4": 8192}


def test_r05_fma_table_matches_slides():
    """R05: the architecture table reproduces the slides' FMA/clk/SM table, dense and sparse."""
    rows = {(r["architecture"], r["unit"], r["dtype"]): r for r in _read_csv("architectures.csv")}
    for arch, units in SLIDE_TABLE.items():
        for unit, rates in units.items():
            for dt, fma in rates.items():
                assert int(rows[(arch, unit, dt)]["fma_dense"]) == fma, (arch, unit, dt)
    for dt, fma in SLIDE_SPARSE.items():
        assert int(rows[("ampere_ga100", "tensor", dt)]["fma_sparse"]) == fma


def test_every_row_cites_a_source():
    """Every GPU, architecture rate and override names the document it comes from."""
    for name in ("gpus.csv", "architectures.csv", "peak_overrides.csv"):
        for row in _read_csv(name):
            assert row["source"], (name, row)
    for row in _read_csv("peak_overrides.csv"):
        assert row["reason"], row


def test_sparse_rate_is_twice_dense_where_supported():
    """2:4 sparsity doubles the Tensor Core math rate on Ampere and later (slides)."""
    for g in gpus():
        for dt, sparse in g.peak_sparse_flops_per_s.items():
            best_unit = next(p for p in g.peaks if p.dtype == dt and p.sparse_flops_per_s == sparse)
            assert sparse == pytest.approx(2 * best_unit.flops_per_s)


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("v100", "V100-SXM2-16GB"),
        ("A100", "A100-SXM4-80GB"),
        ("h100", "H100-SXM"),
        ("H200", "H200"),
        ("nvidia a10", "A10"),
        ("rtx 4090", "RTX-4090"),
        ("a100_40gb", "A100-SXM4-40GB"),
    ],
)
def test_aliases_case_insensitive(alias, canonical):
    """Short names and case/spacing variants find the same entry."""
    assert gpu(alias).name == canonical


def test_unknown_gpu_lists_closest_names():
    """An unknown name raises UnknownGPU naming the parameter, the value and close names."""
    with pytest.raises(UnknownGPU) as info:
        gpu("H10")
    msg = str(info.value)
    assert "'gpu'" in msg and "'H10'" in msg and "H100-SXM" in msg
    assert isinstance(info.value, KeyError)


def test_dtype_not_run_by_gpu_is_a_clear_error():
    """V100 has no bf16: asking for its peak names the dtype and what the GPU runs."""
    with pytest.raises(InvalidParameter, match=r"'dtype' must be a type V100-SXM2-16GB runs"):
        gpu("V100").peak_flops("bf16")


def test_custom_gpu_derives_peaks_and_registers():
    """A user GPU gets its peaks from the architecture table and can be found by name."""
    toy = custom_gpu(
        "toy-8sm",
        architecture="ampere_ga100",
        sms=8,
        boost_clock_mhz=1000,
        memory_bandwidth_bytes_per_s=1e11,
    )
    assert toy.peak_flops("fp16") == pytest.approx(8 * 1e9 * 1024 * 2)
    register_gpu(toy)
    assert gpu("TOY-8SM") is toy


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"sms": 0}, r"'sms' must be a positive integer \(got 0\)"),
        ({"boost_clock_mhz": -5}, r"'boost_clock_mhz' must be a positive number \(got -5\)"),
        ({"architecture": "pascal"}, r"'architecture' must be one of .* \(got 'pascal'\)"),
    ],
)
def test_custom_gpu_rejects_bad_figures(kwargs, pattern):
    """custom_gpu validates its figures with the kit's message template."""
    base = dict(
        architecture="volta", sms=4, boost_clock_mhz=1000, memory_bandwidth_bytes_per_s=1e11
    )
    base.update(kwargs)
    with pytest.raises(InvalidParameter, match=pattern):
        custom_gpu("bad", **base)


def test_gpu_json_keys():
    """to_dict carries the keys `dlperf gpu --json` promises."""
    d = gpu("A100").to_dict()
    for key in (
        "name",
        "architecture",
        "sms",
        "boost_clock_mhz",
        "l2_bytes",
        "memory_bytes",
        "memory_bandwidth_bytes_per_s",
        "peak_flops_per_s",
        "peak_sparse_flops_per_s",
        "ops_per_byte",
    ):
        assert key in d
    assert d["l2_bytes"] == 40 * 2**20 and d["memory_bandwidth_bytes_per_s"] == 2039e9
    assert d["peak_sparse_flops_per_s"]["fp16"] == pytest.approx(624e12, rel=0.01)


def test_reprs_are_readable():
    """A GPU prints as a table with units and renders as HTML in a notebook."""
    g = gpu("V100")
    assert "ops:byte" in str(g) and "GB/s" in str(g)
    assert "<table" in g._repr_html_()


def test_sparse_rate_missing_is_explained():
    """Volta has no 2:4 sparse Tensor Cores: the message says so instead of listing dense types."""
    with pytest.raises(
        InvalidParameter, match=r"2:4 sparse Tensor Core rate on V100-SXM2-16GB \(it has: none\)"
    ):
        gpu("V100").peak_flops("fp16", sparse=True)


def test_integer_peaks_are_quoted_in_tops():
    """NVIDIA quotes INT8 peaks in TOPS (624 for the A100), not TFLOP/s: the GPU card says
    'TOPS' for integer types and 'FLOP/s' for floating-point ones."""
    from dlperf_widgets.core.gpus import peak_unit

    text = str(gpu("A100"))
    assert "623.7 TOPS" in text and "TFLOP/s" in text
    assert peak_unit("int8") == "OPS" and peak_unit("fp16") == "FLOP/s"
