#!/usr/bin/env python3
"""Make sure the hub test can run: JupyterHub and its idle culler, and configurable-http-proxy.

    python tools/ensure_hub.py

Installs what is missing when it can (jupyterhub and jupyterhub-idle-culler with this
interpreter's pip; configurable-http-proxy with npm into ``build/node/``, never globally),
prints one line saying what it found or did, and always exits 0: when something cannot be
installed, tests/deploy/test_hub.py skips with its own one-line message.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from ensure_browser import _quiet  # noqa: E402 - the same quiet runner as the browser set-up

NODE_PREFIX = ROOT / "build" / "node"
# Keep in step with the 'test' extra in pyproject.toml and deploy/README.md.
PYTHON_PACKAGES = {"jupyterhub": "jupyterhub==6.1.1", "jupyterhub_idle_culler": "jupyterhub-idle-culler==2.0.0"}  # fmt: skip
PROXY_PACKAGE = "configurable-http-proxy@5.3.0"
PIP_TIMEOUT_S = 600
NPM_TIMEOUT_S = 300


def proxy_command() -> Path | None:
    """The configurable-http-proxy this project installed, or one on PATH."""
    local = NODE_PREFIX / "node_modules" / ".bin" / "configurable-http-proxy"
    if os.access(local, os.X_OK):
        return local
    found = shutil.which("configurable-http-proxy")
    return Path(found) if found else None


def ensure_python_packages() -> str:
    missing = [pin for mod, pin in PYTHON_PACKAGES.items() if importlib.util.find_spec(mod) is None]
    if not missing:
        return "jupyterhub present"
    constraints = ROOT / "constraints.txt"
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    cmd += ["-c", str(constraints)] if constraints.exists() else []
    why = _quiet([*cmd, *missing], PIP_TIMEOUT_S)
    importlib.invalidate_caches()
    if why is None and all(importlib.util.find_spec(mod) for mod in PYTHON_PACKAGES):
        return f"installed {', '.join(missing)} with pip"
    return f"could not install {', '.join(missing)} ({why or 'not importable after pip'})"


def ensure_proxy() -> str:
    found = proxy_command()
    if found:
        return f"configurable-http-proxy present ({found})"
    npm = shutil.which("npm")
    if not npm:
        return "npm missing: cannot install configurable-http-proxy"
    NODE_PREFIX.mkdir(parents=True, exist_ok=True)
    why = _quiet(
        [npm, "install", "--prefix", str(NODE_PREFIX), "--no-audit", "--no-fund", PROXY_PACKAGE],
        NPM_TIMEOUT_S,
    )
    found = proxy_command()
    if found:
        return f"configurable-http-proxy installed with npm ({found})"
    return f"configurable-http-proxy could not be installed ({why or 'not found after npm'})"


def main() -> int:
    try:
        parts = [ensure_python_packages(), ensure_proxy()]
        ready = proxy_command() is not None and all(
            importlib.util.find_spec(mod) for mod in PYTHON_PACKAGES
        )
        verdict = "the hub test will run" if ready else "the hub test will be skipped"
        print(f"[ensure_hub] {'; '.join(parts)}: {verdict}", flush=True)
    except Exception as exc:  # never fail the caller
        print(f"[ensure_hub] could not check the hub set-up ({exc!r})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
