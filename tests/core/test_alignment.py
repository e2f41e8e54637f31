"""Guards the Tensor Core requirement table (R13) and the findings built from it."""

import pytest

from dlperf_widgets.core import InvalidParameter, alignment_findings, gpu, next_multiple
from dlperf_widgets.core.alignment import A100_MULTIPLES, legacy_required_multiple

# R13, "Tensor Core requirements by cuBLAS or cuDNN version" (slides, Table 1), by hand.
LEGACY = {"int8": 16, "fp16": 8, "tf32": None, "fp64": None}
CURRENT = {"int8": 16, "fp16": 8, "tf32": 4, "fp64": 2}
ON_A100 = {"int8": 128, "fp16": 64, "tf32": 32, "fp64": 16}


@pytest.mark.parametrize("dt", list(LEGACY))
def test_r13_table(dt):
    """Legacy libraries need 16/8 (INT8/FP16) and lack TF32/FP64; newer ones prefer 16/8/4/2; A100 128/64/32/16."""
    from dlperf_widgets.core import dtype

    assert legacy_required_multiple(dt) == LEGACY[dt]
    assert dtype(dt).tensor_core_multiple == CURRENT[dt]
    assert A100_MULTIPLES[dt] == ON_A100[dt]


def test_next_multiple_vocabulary_example():
    """A vocabulary of 33708 pads to 33712, the next multiple of 8."""
    assert next_multiple(33708, 8) == 33712
    assert next_multiple(64, 64) == 64


def test_findings_by_library():
    """Current libraries warn about misalignment; legacy ones report Tensor Cores unusable."""
    cur = alignment_findings({"k": 33708}, "fp16", gpu("V100"))
    (w,) = [f for f in cur if f.severity == "warning"]
    assert w.suggested_value == 33712 and w.fix == "pad k from 33708 to 33712"
    legacy = alignment_findings({"k": 33708}, "fp16", gpu("V100"), library="legacy")
    assert [f.severity for f in legacy] == ["error"]
    tf32_legacy = alignment_findings({"k": 4096}, "tf32", gpu("A100"), library="legacy")
    assert tf32_legacy[0].severity == "error" and "no Tensor Core path" in tf32_legacy[0].message


def test_a100_prefers_larger_multiples():
    """On A100 an FP16 size that is a multiple of 8 but not 64 gets one finding that names
    the A100 preference (merged with the divisible-by-64 advice when both name 1088)."""
    fs = alignment_findings({"n": 1032}, "fp16", gpu("A100"))
    assert len(fs) == 1 and fs[0].suggested_value == 1088 and "A100" in fs[0].message
    # divisible by 64 but not by the A100's 128 for int8: the A100 advice alone, as 'info'
    (only,) = alignment_findings({"n": 1088}, "int8", gpu("A100"))
    assert only.severity == "info" and "A100" in only.message and only.suggested_value == 1152
    assert not any(
        "A100" in f.message for f in alignment_findings({"n": 1032}, "fp16", gpu("V100"))
    )


def test_memory_bound_downgrades_advice():
    """Tuning sizes doesn't help a memory-bound operation: warnings become 'info'."""
    fs = alignment_findings({"k": 1001}, "fp16", gpu("A100"), memory_bound=True)
    assert fs and all(f.severity == "info" for f in fs)


def test_cuda_core_dtype_has_no_tensor_rules():
    """fp32 runs on CUDA cores: no alignment warnings, one note saying why."""
    fs = alignment_findings({"k": 1001}, "fp32", gpu("A100"))
    assert [f.severity for f in fs] == ["info"] and "CUDA cores" in fs[0].message


def test_bad_dimension():
    """Dimensions are validated like every other input."""
    with pytest.raises(InvalidParameter, match=r"'k' must be a positive integer \(got -1\)"):
        alignment_findings({"k": -1}, "fp16")


def test_misaligned_fp8_is_not_supported():
    """For FP8 the 16-byte rule is a hard requirement (torch._scaled_mm, cuBLASLt's FP8
    matmul and Transformer Engine refuse other sizes): n = 4100 is an error saying 'not
    supported' with the pad to 4112, where FP16's n = 4100 stays a warning about efficiency."""
    (fp8,) = alignment_findings({"n": 4100}, "fp8_e4m3", gpu("H100"))
    assert fp8.severity == "error" and "not supported" in fp8.message
    assert fp8.suggested_value == 4112
    (fp16,) = [
        f for f in alignment_findings({"n": 4100}, "fp16", gpu("H100")) if f.suggested_value == 4104
    ]
    assert fp16.severity == "warning" and "not supported" not in fp16.message
    assert alignment_findings({"n": 4096}, "fp8_e5m2", gpu("H100")) == []
