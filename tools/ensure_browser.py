#!/usr/bin/env python3
"""Make sure the browser tests can run: Debian's Chromium and the playwright package.

    python tools/ensure_browser.py

Installs what is missing when it can (Chromium with apt-get when running as root; playwright
with this interpreter's pip), prints one line saying what it found or did, and always exits
0: when nothing can be installed, the browser tests skip with their own message.
Playwright's own browser download is never used; the tests drive /usr/bin/chromium.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
# Keep in step with the 'test' extra in pyproject.toml.
PLAYWRIGHT = "playwright>=1.45"
APT_TIMEOUT_S = 900
PIP_TIMEOUT_S = 600


def find_chromium() -> str | None:
    explicit = os.environ.get("DLPERF_CHROMIUM")
    for path in ([explicit] if explicit else []) + list(CHROMIUM):
        if path and os.access(path, os.X_OK):
            return path
    return shutil.which("chromium")


def _quiet(cmd: list[str], timeout_s: float, env: dict[str, str] | None = None) -> str | None:
    """Run ``cmd``; None on success, else a short reason."""
    try:
        done = subprocess.run(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{cmd[0]}: {exc}"
    if done.returncode != 0:
        last = done.stdout.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return f"{' '.join(cmd[:3])} exited {done.returncode}: {last[0][:200]}"
    return None


def ensure_chromium() -> str:
    path = find_chromium()
    if path:
        return f"chromium present ({path})"
    if os.name != "posix" or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "chromium missing and not root: cannot apt-get install it"
    if not shutil.which("apt-get"):
        return "chromium missing and no apt-get here: cannot install it"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    why = _quiet(["apt-get", "update", "-qq"], APT_TIMEOUT_S, env) or _quiet(
        ["apt-get", "install", "-y", "-qq", "chromium"],
        APT_TIMEOUT_S,
        env,
    )
    path = find_chromium()
    if path:
        return f"chromium installed with apt-get ({path})"
    return f"chromium could not be installed ({why or 'not found after apt-get'})"


def ensure_playwright() -> str:
    if importlib.util.find_spec("playwright") is not None:
        return "playwright present"
    why = _quiet(
        [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", PLAYWRIGHT],
        PIP_TIMEOUT_S,
    )
    importlib.invalidate_caches()
    if why is None and importlib.util.find_spec("playwright") is not None:
        return "playwright installed with pip"
    return f"playwright could not be installed ({why or 'not importable after pip'})"


def main() -> int:
    try:
        parts = [ensure_chromium(), ensure_playwright()]
        ready = find_chromium() is not None and importlib.util.find_spec("playwright") is not None
        verdict = "browser tests will run" if ready else "browser tests will be skipped"
        print(f"[ensure_browser] {'; '.join(parts)}: {verdict}", flush=True)
    except Exception as exc:  # never fail the caller
        print(f"[ensure_browser] could not check the browser set-up ({exc!r})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
