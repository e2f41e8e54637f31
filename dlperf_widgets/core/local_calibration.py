"""The local calibration: constants ``dlperf calibrate`` measured on this machine's device.

``dlperf calibrate`` (:mod:`dlperf_widgets.live.calibrate`) times a small suite on the device
at hand, fits its achievable math fraction, DRAM bandwidth fraction and fixed cost per
kernel, and saves them as JSON in the user's configuration folder:
``$DLPERF_CONFIG_DIR/calibration.json`` when that variable is set, else
``$XDG_CONFIG_HOME/dlperf_widgets/calibration.json`` or
``~/.config/dlperf_widgets/calibration.json``. The model then prices that device with them
(:func:`dlperf_widgets.core.calibration.achievable` checks here first) and says so.

A device the GPU database does not hold (the CPU, a GPU reported only by its properties) is
saved with its figures as an ``entry``, which :func:`dlperf_widgets.core.gpus.gpu` finds by
name or alias in later sessions.

A file that cannot be read, is not JSON or breaks the format is ignored: the model runs on
the shipped constants and :func:`local_status` says in one sentence why. Nothing here warns
or raises on a bad file. Standard library only.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "CONFIG_ENV",
    "FORMAT",
    "calibration_path",
    "config_dir",
    "local_constants",
    "local_entry",
    "local_status",
    "read_local",
    "remove_local",
    "save_local",
]

CONFIG_ENV = "DLPERF_CONFIG_DIR"
FORMAT = "dlperf_widgets local calibration 1"
_FILE = "calibration.json"
# Sanity limits of a saved constant: a fraction of a datasheet figure above 2 or a fixed cost
# above a second is a broken file, not a device.
_FRACTION_MAX = 2.0
_OVERHEAD_MAX_S = 1.0
_MAX_FILE_BYTES = 2**20  # a saved calibration is a few kB: anything far larger is not one


def config_dir() -> Path:
    """The folder the kit keeps user settings in (see the module docstring)."""
    env = os.environ.get(CONFIG_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "dlperf_widgets"


def calibration_path() -> Path:
    """Where the local calibration is saved."""
    return config_dir() / _FILE


_cache: dict[str, Any] = {"key": None, "data": None, "problem": ""}


def _check(data: Any) -> str:
    """'' when ``data`` is a well-formed calibration, else why not (one clause)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return f"it is not a {FORMAT!r} file"
    device = data.get("device")
    if not isinstance(device, dict) or not isinstance(device.get("model_gpu"), str):
        return "it names no device"
    consts = data.get("constants")
    if not isinstance(consts, dict) or not consts:
        return "it holds no constants"
    for dt, c in consts.items():
        if not isinstance(c, dict):
            return f"its constants for {dt!r} are not a table"
        for key, top in (
            ("math_fraction", _FRACTION_MAX),
            ("memory_fraction", _FRACTION_MAX),
            ("kernel_overhead_s", _OVERHEAD_MAX_S),
        ):
            raw: Any = c.get(key)
            number = isinstance(raw, (int, float)) and not isinstance(raw, bool)
            v = float(raw) if number else math.nan
            low_ok = key == "kernel_overhead_s" or v > 0
            if not (math.isfinite(v) and 0 <= v <= top and low_ok):
                return f"its {key} for {str(dt)[:40]!r} is not a number in (0, {top:g}]"
    entry = data.get("entry")
    if entry is not None:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            return "its device entry has no name"
        peaks = entry.get("peaks")
        if not isinstance(peaks, list) or not peaks:
            return "its device entry has no peaks"
    return ""


def read_local() -> dict[str, Any] | None:
    """The saved calibration, or None (no file, or a bad one: see :func:`local_status`).

    Read again only when the file changes (its modification time and size)."""
    path = calibration_path()
    try:
        st = path.stat()
        key: Any = (str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        key = (str(path), None, 0)
    if key == _cache["key"]:
        return _cache["data"]
    data, problem = None, ""
    if key[1] is not None and key[2] > _MAX_FILE_BYTES:
        problem = f"is larger than a calibration can be ({key[2]:,} bytes)"
    elif key[1] is not None:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            problem = f"could not be read ({type(exc).__name__})"
        except ValueError:
            problem = "is not valid JSON"
        else:
            why = _check(raw)
            if why:
                problem = f"was ignored because {why}"
            else:
                data = raw
    if problem:
        problem = (
            f"the local calibration {path} {problem}; the model uses the shipped "
            f"constants (run 'dlperf calibrate' again, or 'dlperf calibrate --reset')"
        )
    _cache.update(key=key, data=data, problem=problem)
    return data


def local_status() -> str:
    """One sentence: which local calibration the model uses, or why none."""
    data = read_local()
    if data is not None:
        dev = data["device"]
        return (
            f"the model prices {dev['model_gpu']} with the local calibration of "
            f"{data.get('date', '?')} ({calibration_path()})"
        )
    return _cache["problem"] or f"no local calibration is saved ({calibration_path()})"


def local_constants(gpu_name: str, dtype_name: str) -> dict[str, Any] | None:
    """The locally measured constants for ``gpu_name`` (a database or entry name), or None.

    ``math_fraction`` is the one measured in ``dtype_name``, or None when the suite did not
    run that dtype (the caller keeps the shipped one); the memory fraction and the fixed cost
    per kernel belong to the device. ``basis`` says what the constants rest on."""
    data = read_local()
    if data is None or data["device"]["model_gpu"] != gpu_name:
        return None
    consts = data["constants"]
    own = consts.get(dtype_name)
    any_c = own if own is not None else next(iter(consts.values()))
    basis = f"local calibration of {data['device'].get('name', gpu_name)}, {data.get('date', '?')}"
    return {
        "math_fraction": float(own["math_fraction"]) if own else None,
        "memory_fraction": float(any_c["memory_fraction"]),
        "kernel_overhead_s": float(any_c["kernel_overhead_s"]),
        "basis": basis,
    }


def local_entry() -> dict[str, Any] | None:
    """The saved device entry (name, aliases, figures, peaks) of a device the database
    does not hold, or None."""
    data = read_local()
    return None if data is None else data.get("entry")


def save_local(data: dict[str, Any]) -> Path:
    """Write the calibration (atomically: a half-written file is never read)."""
    why = _check(data)
    if why:
        raise ValueError(f"refusing to save a calibration: {why}")
    path = calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".calibration-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
    os.replace(tmp, path)
    _cache["key"] = None
    return path


def remove_local() -> bool:
    """Delete the saved calibration; True when there was one."""
    path = calibration_path()
    _cache["key"] = None
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
