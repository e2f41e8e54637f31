"""Guards the dtype table: sizes, Tensor Core multiples (16 bytes), aliases and errors."""

import pytest

from dlperf_widgets.core import dtype
from dlperf_widgets.core.errors import InvalidParameter


@pytest.mark.parametrize(
    ("name", "size", "multiple"),
    [
        ("fp64", 8, 2),
        ("fp32", 4, 4),
        ("tf32", 4, 4),
        ("fp16", 2, 8),
        ("bf16", 2, 8),
        ("fp8_e4m3", 1, 16),
        ("fp8_e5m2", 1, 16),
        ("int8", 1, 16),
        ("int4", 0.5, 32),
    ],
)
def test_sizes_and_multiples(name, size, multiple):
    """Bytes per element and the 16-byte multiple of the Get Started guide (4/8/16 for TF32/FP16/INT8)."""
    d = dtype(name)
    assert d.bytes_per_element == size
    assert d.tensor_core_multiple == multiple
    assert d.bits == size * 8


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("half", "fp16"),
        ("float16", "fp16"),
        ("bfloat16", "bf16"),
        ("torch.float32", "fp32"),
        ("FP8", "fp8_e4m3"),
        ("double", "fp64"),
    ],
)
def test_aliases(alias, name):
    """Common spellings, torch names included, resolve to the canonical dtype."""
    assert dtype(alias).name == name


def test_unknown_dtype_suggests():
    """An unknown dtype lists the valid names and a close match."""
    with pytest.raises(InvalidParameter, match=r"'dtype' must be one of .*\(got 'fp61'\).*fp16"):
        dtype("fp61")
    with pytest.raises(InvalidParameter, match=r"'dtype' must be one of"):
        dtype(16)
