"""notebooks/sanitize.cfg hides what legitimately differs between machines, and nothing else."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

CFG = Path(__file__).resolve().parents[2] / "notebooks" / "sanitize.cfg"


def sanitize(text: str) -> str:
    """Apply the sanitizers as nbval does: every section's regex, in file order."""
    parser = configparser.ConfigParser()
    parser.read(CFG)
    for section in parser.sections():
        text = re.sub(parser.get(section, "regex"), parser.get(section, "replace"), text)
    return text


@pytest.mark.parametrize(
    ("here", "there"),
    [
        (
            "CPU: AMD EPYC, 2 thread(s) (Tensor Cores do not apply)",
            "CPU: Intel(R) Xeon(R) Platinum 8480+, 16 thread(s) (Tensor Cores do not apply)",
        ),
        (
            "measured on cpu: 10.878 ms (measured), 197.4 GFLOP/s",
            "measured on NVIDIA A100-SXM4-80GB: 0.42 ms (measured), 250.1 TFLOP/s",
        ),
        (
            '{"pid": 4242, "tid": 7, "ts": 1719.25, "name": "gemm"}',
            '{"pid": 99, "tid": 3, "ts": 88.5, "name": "gemm"}',
        ),
        (
            "note  CPU measurement; runs spread 139.4x (slowest/fastest): busy",
            "note  CPU measurement",
        ),
    ],
    ids=["cpu-model", "measurement", "profiler", "spread-note"],
)
def test_machine_specific_parts_are_hidden(here, there):
    """Saved outputs differed per machine (CPU model, profiler pid/timestamps, measured times)."""
    assert sanitize(here) == sanitize(there)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "arithmetic intensity 124.1 FLOP/B -> memory-bound",
            "arithmetic intensity 120.0 FLOP/B -> memory-bound",
        ),
        ("fp32:  146.8 us, math-bound, 14.6 TFLOP/s", "fp32:  150.0 us, math-bound, 14.6 TFLOP/s"),
        ("naive: 4 minutes, best: 3 minutes", "naive: 4 minutes, best: 4 minutes"),
    ],
)
def test_model_numbers_stay_checked(before, after):
    """A changed model figure (not a measurement) must still fail nbval's comparison."""
    assert sanitize(before) != sanitize(after)
