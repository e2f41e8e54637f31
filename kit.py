#!/usr/bin/env python3
"""Set up and run the kit with nothing but Python >= 3.10 and pip.

    python3 kit.py lab     create/reuse .venv, install the kit, open JupyterLab on the first
                           notebook (the whole repository is browsable: notebooks/, exercises/)
    python3 kit.py test    create/reuse .venv, install the kit and test tools, run every check

Both create a virtual environment in ``.venv`` next to this file on first use and reuse it
afterwards (reinstalling only when pyproject.toml or constraints.txt change). Options after
``lab`` go to JupyterLab (``--no-browser``, ``--port=8890``). Environment: DLPERF_VENV names
another environment; DLPERF_NO_INSTALL=1 uses it as it is, installing nothing.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
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
    if os.environ.get("DLPERF_NO_INSTALL") == "1":
        if not PY.exists():
            sys.exit(f"[kit] DLPERF_NO_INSTALL=1 but there is no Python in {VENV}")
        return
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
    _run([PY, ROOT / "tools" / "ensure_hub.py"])  # the hub test's proxy (npm); never fails
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


FIRST_NOTEBOOK = "notebooks/00_start_here.ipynb"


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _free_port(start: int = 8888) -> int:
    for port in range(start, start + 100):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return 0


def lab_command(args: list[str], token: str, port: int) -> list[str]:
    """The JupyterLab command line: served from the repository root, on the first notebook.

    As root (containers, Colab-like machines, CI images) JupyterLab refuses to start unless
    told ``--allow-root``; the kit adds it and says so.
    """
    cmd = [
        str(PY),
        "-m",
        "jupyter",
        "lab",
        f"--ServerApp.root_dir={ROOT}",
        f"--IdentityProvider.token={token}",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        *args,
    ]
    if (ROOT / FIRST_NOTEBOOK).exists():
        cmd.insert(4, FIRST_NOTEBOOK)
    if _is_root() and "--allow-root" not in args:
        cmd.append("--allow-root")
    return cmd


def _wait_until_up(proc: subprocess.Popen[bytes], port: int, token: str, limit_s: float) -> bool:
    deadline = time.monotonic() + limit_s
    url = f"http://127.0.0.1:{port}/api/status?token={token}"
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return True
        except OSError:
            time.sleep(0.3)
    return False


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def cmd_lab(args: list[str]) -> int:
    ensure_env(EXTRAS["lab"])
    token = secrets.token_hex(16)
    # '--port=N' or '--port N': the kit passes the port itself, so take it out of the args
    asked: str | None = None
    rest: list[str] = []
    it = iter(args)
    for a in it:
        if a.startswith("--port="):
            asked = a.split("=", 1)[1]
        elif a == "--port":
            asked = next(it, "")
        else:
            rest.append(a)
    if asked is not None and not asked.isdigit():
        sys.exit(f"[kit] '--port' must be a port number (got {asked!r})")
    port = int(asked) if asked is not None else _free_port()
    args = rest
    if _is_root() and "--allow-root" not in args:
        _say("running as root: starting JupyterLab with --allow-root")
    log_path = ROOT / "build" / "jupyter-lab.log"
    log_path.parent.mkdir(exist_ok=True)
    # JupyterLab's server log (extensions loading, kernel messages) goes to a file, so the
    # learner sees one line: where to open the course.
    # A SIGTERM (a container stopping, `timeout`) stops JupyterLab too, as Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            lab_command(args, token, port), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            if not _wait_until_up(proc, port, token, limit_s=120):
                proc.terminate()
                proc.wait(timeout=10)
                tail = log_path.read_text(errors="replace").splitlines()[-15:]
                print("\n".join(tail), file=sys.stderr)
                _say(f"JupyterLab did not start (its log: {log_path})")
                return 1
            _say(
                f"open http://localhost:{port}/lab/tree/{FIRST_NOTEBOOK}?token={token}"
                f"  (Ctrl-C stops; log: {log_path.name})"
            )
            return proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
            _say("JupyterLab stopped")
            return 0


def main(argv: list[str]) -> int:
    commands = {"test": cmd_test, "lab": cmd_lab}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
