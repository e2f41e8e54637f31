#!/usr/bin/env python3
"""Build the Binder simulation's environment ahead of its test.

    python tools/binder_env.py

The environment is what ``tests/binder/test_binder_sim.py`` runs the notebooks in: a fresh
virtual environment with ``binder/requirements.txt`` installed, the torch source adjusted (the
PyTorch CPU index is out of reach on the machines that test the kit, and ``torch==<pin>``
installs the CPU build there). It is kept under ``build/binder-sim/<hash of the
requirements>``. Installing it writes about 1.5 GB and waits mostly on the disk, so
``kit.py test`` starts this script beside pytest and the test finds it built (or waits for
the build under way: a lock file keeps two builds from running at once). Run alone, the test
builds it itself. Exits 0 when the environment is there, 1 with pip's message otherwise.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
CACHE = ROOT / "build" / "binder-sim"
INSTALL_TIMEOUT_S = 1800
PIN = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)==([A-Za-z0-9_.+\-]+)$")


class BuildError(RuntimeError):
    """A step of the build failed or ran out of time; the message holds its output's tail."""


def requirement_lines() -> list[str]:
    lines = (BINDER / "requirements.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def local_requirements() -> str:
    """binder/requirements.txt with only the torch source changed: index options dropped
    and the torch pin written as plain ``torch==<version>`` (the CPU build carried here)."""
    out = []
    for line in requirement_lines():
        if line.startswith(("--extra-index-url", "--index-url", "-i ", "--find-links", "-f ")):
            continue
        match = PIN.match(line)
        if match and match.group(1).lower() == "torch":
            line = f"torch=={match.group(2).split('+')[0]}"
        out.append(line)
    return "\n".join(out) + "\n"


def run(cmd: list[str], timeout_s: float, env: dict[str, str], what: str, cwd: Path = ROOT) -> str:
    """Run ``cmd``; its output, or BuildError naming ``what`` with the output's tail."""
    try:
        done = subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace")
        raise BuildError(f"{what} took longer than {timeout_s:.0f} s:\n{out[-4000:]}") from None
    out = done.stdout.decode(errors="replace")
    if done.returncode != 0:
        raise BuildError(f"{what} failed (exit {done.returncode}):\n{out[-6000:]}")
    return out


def environment(venv: Path, home: Path) -> dict[str, str]:
    """Variables for a process of the Binder environment, with its own Jupyter folders."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[var] = str(home / var.lower())
    env["MPLCONFIGDIR"] = str(home / "matplotlib")
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env


def binder_venv(env_home: Path) -> Path:
    """The cached environment for the current requirements, built on first use; a build that
    another process has under way is waited for."""
    requirements = local_requirements()
    key = hashlib.sha256((requirements + sys.version + sys.platform).encode()).hexdigest()[:16]
    venv = CACHE / key / "venv"
    stamp = CACHE / key / "installed"
    env_home.mkdir(parents=True, exist_ok=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE.parent / "binder-sim.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if stamp.exists():
            return venv
        for old in CACHE.iterdir():  # environments of older requirements, or a cut-short build
            shutil.rmtree(old, ignore_errors=True)
        (CACHE / key).mkdir(parents=True)
        req_file = CACHE / key / "requirements.txt"
        req_file.write_text(requirements)
        env = environment(venv, env_home)
        run([sys.executable, "-m", "venv", str(venv)], 300, env, "creating the virtual environment")
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        run(
            # --no-compile: bytecode is written when a module is first imported instead of
            # for all ~1.5 GB of packages at install time.
            [*pip, "--no-compile", "-r", str(req_file)],
            INSTALL_TIMEOUT_S,
            env,
            "pip install -r binder/requirements.txt (torch source adjusted)",
        )
        stamp.write_text(requirements)
    return venv


def main() -> int:
    try:
        with tempfile.TemporaryDirectory(prefix="dlperf-binder-env-") as home:
            venv = binder_venv(Path(home))
    except BuildError as exc:
        print(f"[binder_env] {exc}", file=sys.stderr)
        return 1
    print(f"[binder_env] the Binder environment is ready: {venv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
