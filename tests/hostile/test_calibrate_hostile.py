"""Hostile input to calibration: bad arguments to calibrate() and `dlperf calibrate`, and a
local calibration file that is unreadable, not JSON, or well-formed JSON with bad values.
A bad file is ignored (the model keeps the shipped constants) without a warning or an
exception, and the status says why in one sentence."""

from __future__ import annotations

import json
import warnings

import pytest
from hostile_support import HOSTILE_NUMBERS, assert_kit_error

from dlperf_widgets import gemm
from dlperf_widgets.core.calibration import achievable
from dlperf_widgets.core.errors import UnknownGPU
from dlperf_widgets.core.gpus import gpu
from dlperf_widgets.core.local_calibration import FORMAT, local_status

GOOD = {
    "format": FORMAT,
    "device": {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "model_gpu": "H100-SXM"},
    "entry": None,
    "date": "2026-01-01 00:00 UTC",
    "constants": {
        "bf16": {"math_fraction": 0.7, "memory_fraction": 0.8, "kernel_overhead_s": 3e-6}
    },
}


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setenv("DLPERF_CONFIG_DIR", str(tmp_path))
    return tmp_path


def _bad(data):
    out = json.loads(json.dumps(GOOD))
    out.update(data)
    return out


BAD_FILES = {
    "not json": b"{this is not json",
    "binary": bytes(range(256)) * 4,
    "empty": b"",
    "a list": b"[1, 2, 3]",
    "wrong format": json.dumps(_bad({"format": "something else"})).encode(),
    "no device": json.dumps(_bad({"device": None})).encode(),
    "no constants": json.dumps(_bad({"constants": {}})).encode(),
    "string fraction": json.dumps(
        _bad({"constants": {"bf16": {**GOOD["constants"]["bf16"], "math_fraction": "0.7"}}})
    ).encode(),
    "negative overhead": json.dumps(
        _bad({"constants": {"bf16": {**GOOD["constants"]["bf16"], "kernel_overhead_s": -1}}})
    ).encode(),
    "zero fraction": json.dumps(
        _bad({"constants": {"bf16": {**GOOD["constants"]["bf16"], "memory_fraction": 0}}})
    ).encode(),
    "nan fraction": json.dumps(
        _bad({"constants": {"bf16": {**GOOD["constants"]["bf16"], "math_fraction": float("nan")}}})
    ).encode(),
    "huge fraction": json.dumps(
        _bad({"constants": {"bf16": {**GOOD["constants"]["bf16"], "math_fraction": 1e300}}})
    ).encode(),
    "boolean fraction": json.dumps(
        _bad({"constants": {"bf16": {**GOOD["constants"]["bf16"], "math_fraction": True}}})
    ).encode(),
    "entry without peaks": json.dumps(_bad({"entry": {"name": "x"}})).encode(),
    "huge": b" " * (2**20 + 1) + json.dumps(GOOD).encode(),
}


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_bad_calibration_file_is_ignored_quietly_and_explained(config, name):
    """The model runs on the shipped constants, raises and warns nothing, and the status
    says in one sentence that the file was ignored and how to fix it."""
    shipped = achievable("H100-SXM", "bf16")
    (config / "calibration.json").write_bytes(BAD_FILES[name])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert achievable("H100-SXM", "bf16") == shipped
        gemm(1024, 1024, 1024, dtype="bf16", gpu="H100-SXM")
        status = local_status()
    assert "calibration.json" in status and "shipped constants" in status
    assert "\n" not in status and len(status) < 400


def test_unreadable_calibration_file_is_ignored(config):
    """A folder where the file should be (reading fails) is ignored like a corrupt file."""
    (config / "calibration.json").mkdir()
    assert achievable("H100-SXM", "bf16").basis == "fitted"
    assert "could not be read" in local_status()


def test_damaged_device_entry_leaves_the_name_unknown(config):
    """An entry whose figures are not numbers does not make a GPU: the name stays unknown."""
    data = _bad(
        {
            "device": {"kind": "cpu", "name": "cpu", "model_gpu": "CPU x"},
            "entry": {"name": "CPU x", "aliases": ["cpu"], "peaks": [{"unit": "cuda"}]},
            "constants": {"fp32": GOOD["constants"]["bf16"]},
        }
    )
    (config / "calibration.json").write_text(json.dumps(data))
    with pytest.raises(UnknownGPU):
        gpu("cpu")


def test_calibrate_rejects_bad_arguments(config):
    """calibrate() refuses bad devices, budgets, suites, dtypes and flags in one sentence,
    at once (before any timing)."""
    pytest.importorskip("torch")
    from dlperf_widgets.live.calibrate import calibrate

    for kwargs in (
        {"device": "gpu"},
        {"device": None},
        {"suite": "huge"},
        {"dtype": "fp8"},
        {"dtype": "nonsense"},
        {"save": "yes"},
        {"max_seconds": 1e9},
    ):
        msg = assert_kit_error(lambda kw=kwargs: calibrate(**kw))
        assert msg is not None and msg.startswith("'"), (kwargs, msg)
    for value in HOSTILE_NUMBERS:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 3600:
            continue  # a valid budget would start a run
        msg = assert_kit_error(lambda v=value: calibrate(max_seconds=v))
        assert msg is not None and "'max_seconds' must be" in msg, (value, msg)
