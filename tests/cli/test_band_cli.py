"""Guards how `dlperf gemm` reports the error band: the predicted time line carries the
range and what it rests on, and --json has the band's keys."""

from __future__ import annotations

import json
import re

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.core.gemm import gemm


def test_gemm_prints_the_band_beside_the_prediction(capsys):
    """`dlperf gemm 4096 4096 4096 --gpu H100 --dtype bf16` prints
    'predicted time  X us (L-H us, 80 % band from N H100-SXM, ... rows (...))', with the numbers
    of the Python result."""
    assert main(["gemm", "4096", "4096", "4096", "--gpu", "H100", "--dtype", "bf16"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("predicted time"))
    found = re.search(
        r"\(([\d.]+)-([\d.]+) us, 80 % band from (\d+) [\w, -]*H100-SXM[\w, -]* rows", line
    )
    assert found, line
    r = gemm(4096, 4096, 4096, dtype="bf16", gpu="H100")
    assert float(found.group(1)) == pytest.approx(r.time_low_s * 1e6, rel=5e-3)
    assert float(found.group(2)) == pytest.approx(r.time_high_s * 1e6, rel=5e-3)
    assert int(found.group(3)) > 0


def test_gemm_json_has_the_band(capsys):
    """--json carries time_low_s <= time_high_s and band_basis (the A100: widest band)."""
    assert main(["gemm", "8192", "8192", "8192", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert 0 < data["time_low_s"] < data["time_high_s"]
    assert data["band_basis"].startswith("widest band")
