#!/usr/bin/env python3
"""Set up and run the kit with nothing but Python >= 3.10 and pip.

    python3 kit.py lab     create/reuse .venv, install the kit, open JupyterLab on notebooks/
    python3 kit.py test    create/reuse .venv, install the kit and test tools, run every check

Both create a virtual environment in ``.venv`` next to this file on first use and reuse it
afterwards (reinstalling only when pyproject.toml or constraints.txt change).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("DLPERF_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")

EXTRAS = {"lab": "all", "test": "all,test"}


def _say(msg: str) -> None:
    print(f"[kit] {msg}", flush=True)


def _run(cmd: list[object], **kw: object) -> int:
    _say(" ".join(str(c) for c in cmd))
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, **kw)  # type: ignore[arg-type]


def ensure_env(extras: str) -> None:
    if sys.version_info < (3, 10):  # noqa: UP036 - this script may be started by an old Python
        sys.exit("[kit] Python >= 3.10 is needed (this is {}.{})".format(*sys.version_info[:2]))
    if not PY.exists():
        _say(f"creating virtual environment {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)

    def stamp_for(wanted: str) -> tuple[Path, str]:
        digest = hashlib.sha256()
        for name in ("pyproject.toml", "constraints.txt"):
            digest.update((ROOT / name).read_bytes())
        return VENV / f".dlperf-install-{wanted.replace(',', '-')}", digest.hexdigest()

    # An environment installed with more extras (the test set includes the lab set) will do.
    for wanted in {
        extras,
        *[e for e in EXTRAS.values() if set(extras.split(",")) <= set(e.split(","))],
    }:
        path, digest = stamp_for(wanted)
        if path.exists() and path.read_text() == digest:
            return
    stamp, digest_text = stamp_for(extras)
    pip = [PY, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    if _run([*pip, "--upgrade", "pip"]) != 0:
        sys.exit("[kit] could not upgrade pip")
    if _run([*pip, "-c", "constraints.txt", "-e", f".[{extras}]"]) != 0:
        sys.exit("[kit] installing the kit failed (see pip's message above)")
    stamp.write_text(digest_text)


def cmd_test(args: list[str]) -> int:
    ensure_env(EXTRAS["test"])
    # Chromium (apt-get, as root) and playwright for the browser tests; never fails.
    _run([PY, ROOT / "tools" / "ensure_browser.py"])
    steps = [
        [PY, "-m", "ruff", "check", "."],
        [PY, "-m", "ruff", "format", "--check", "."],
        [PY, "-m", "mypy"],
        [PY, "-m", "pytest", *args],
    ]
    failed = []
    for step in steps:
        if _run(step) != 0:
            failed.append(" ".join(str(s) for s in step[2:4]))
    if failed:
        _say("FAILED: " + ", ".join(failed))
        return 1
    _say("all checks passed")
    return 0


def cmd_lab(args: list[str]) -> int:
    ensure_env(EXTRAS["lab"])
    first = ROOT / "notebooks" / "00_start_here.ipynb"
    target = first.relative_to(ROOT) if first.exists() else Path("notebooks")
    return _run([PY, "-m", "jupyter", "lab", str(target), *args])


def main(argv: list[str]) -> int:
    commands = {"test": cmd_test, "lab": cmd_lab}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
