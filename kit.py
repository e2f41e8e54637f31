#!/usr/bin/env python3
"""Set up and run the kit with nothing but Python >= 3.10 and pip.

    python3 kit.py lab [OPTIONS]    create/reuse .venv, install the kit, open JupyterLab on the
                                    first notebook (the whole repository is browsable)
    python3 kit.py test [ARGS]      create/reuse .venv, install the kit and test tools, run
                                    every check (ARGS go to pytest)
    python3 kit.py --help           this text; `kit.py lab --help`, `kit.py test --help`

Both create a virtual environment in ``.venv`` next to this file on first use and reuse it
afterwards (reinstalling only when pyproject.toml or constraints.txt change). PyTorch comes as
its CPU build unless the machine has an NVIDIA GPU (``nvidia-smi`` on PATH). Environment:
DLPERF_VENV names another environment; DLPERF_NO_INSTALL=1 uses it as it is, installing nothing.
"""

from __future__ import annotations

import hashlib
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import venv
from pathlib import Path
from typing import NamedTuple

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


# PyTorch's own index of CPU-only wheels (https://pytorch.org/get-started/locally/, "CPU").
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


class TorchPlan(NamedTuple):
    """Where PyTorch comes from, and the one line that tells the user before installing."""

    build: str  # "cpu" or "cuda"
    index_url: str | None  # an index tried first for torch alone; None: the package index
    line: str


def torch_plan(system: str, has_nvidia_gpu: bool) -> TorchPlan:
    """Choose PyTorch's build. On Linux the package index's torch is the CUDA build (about
    4.6 GB of torch, nvidia-* and triton wheels), so a machine without an NVIDIA GPU takes
    the CPU build from PyTorch's CPU index; macOS and Windows get CPU builds from the package
    index anyway. The CPU figure was measured on Linux (README, "Disk"); the CUDA figure is
    the .venv measured when the package index's Linux build was installed; the macOS and
    Windows line is an estimate."""
    if system == "Linux" and has_nvidia_gpu:
        return TorchPlan(
            "cuda",
            None,
            "NVIDIA GPU found (nvidia-smi): installing the CUDA build of PyTorch "
            "(.venv about 5.3 GB, 3-10 minutes)",
        )
    if system == "Linux":
        return TorchPlan(
            "cpu",
            CPU_INDEX,
            "no NVIDIA GPU (no nvidia-smi): installing the CPU build of PyTorch "
            "(.venv about 1.5 GB, 1-4 minutes)",
        )
    return TorchPlan(
        "cpu",
        None,
        f"installing PyTorch's standard build for {system or 'this system'} "
        "(.venv about 1.5 GB, 2-4 minutes)",
    )


def install_torch_first(pip: list[object], plan: TorchPlan) -> bool:
    """Install torch alone from ``plan.index_url`` with a short timeout and no retries, so a
    machine that reaches only the package index loses seconds, not minutes. True if it worked;
    otherwise the kit's own install takes torch from the package index."""
    if plan.index_url is None:
        return False
    cmd = [*pip, "--index-url", plan.index_url, "--timeout", "10", "--retries", "0"]
    cmd += ["-c", "constraints.txt", "torch"]
    _say(f"PyTorch from {plan.index_url}")
    done = subprocess.run(
        [str(c) for c in cmd], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode == 0:
        return True
    _say(
        f"{plan.index_url} is out of reach: PyTorch comes from the package index instead "
        "(on Linux that can be the CUDA build, about 5.3 GB)"
    )
    return False


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
    plan = torch_plan(platform.system(), shutil.which("nvidia-smi") is not None)
    _say(plan.line)
    install_torch_first(pip, plan)
    if _run([*pip, "-c", "constraints.txt", "-e", f".[{extras}]"]) != 0:
        sys.exit("[kit] installing the kit failed (see pip's message above)")
    stamp.write_text(digest_text)


def pytest_command(args: list[str], cpus: int | None, has_xdist: bool) -> list[object]:
    """pytest over every test, on up to 4 worker processes when pytest-xdist is there and the
    caller chose no -n of their own. ``--dist loadfile`` keeps each file on one worker: a
    notebook's cells run in order in one kernel (nbval), and a browser test file keeps one
    JupyterLab page. The repository's conftest.py hands out the longest files first."""
    workers = min(cpus or 1, 4)
    chose = any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in args)
    if not has_xdist or chose or workers < 2 or "no:xdist" in args:
        return [PY, "-m", "pytest", *args]
    return [PY, "-m", "pytest", "-n", str(workers), "--dist", "loadfile", *args]


def binder_build_command(args: list[str]) -> list[str] | None:
    """The command that builds the Binder simulation's environment beside pytest, for a full
    run only (no pytest arguments): a run of a few tests should not install 1.5 GB."""
    if args:
        return None
    return [str(PY), str(ROOT / "tools" / "binder_env.py")]


def cmd_test(args: list[str]) -> int:
    if "--help" in args or "-h" in args:
        print(TEST_HELP)
        return 0
    ensure_env(EXTRAS["test"])
    # Chromium (apt-get, as root) and playwright for the browser tests; never fails.
    _run([PY, ROOT / "tools" / "ensure_browser.py"])
    _run([PY, ROOT / "tools" / "ensure_hub.py"])  # the hub test's proxy (npm); never fails
    has_xdist = subprocess.call([PY, "-c", "import xdist"], stderr=subprocess.DEVNULL) == 0
    lint = {
        "ruff check": [PY, "-m", "ruff", "check", "."],
        "ruff format": [PY, "-m", "ruff", "format", "--check", "."],
        "mypy": [PY, "-m", "mypy"],
    }
    # The linters run beside pytest (they take a minute of one core); their output is
    # printed when pytest is done, so the two never interleave.
    started = {}
    for name, cmd in lint.items():
        _say(" ".join(str(c) for c in cmd) + "  (beside pytest)")
        started[name] = subprocess.Popen(
            [str(c) for c in cmd], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    # The Binder simulation's environment (1.5 GB of packages) is installed beside pytest too:
    # the install waits mostly on the disk, and the test finds it ready or waits for it.
    binder = None
    build = binder_build_command(args)
    if build is not None:
        (ROOT / "build").mkdir(exist_ok=True)
        _say(" ".join(build) + "  (beside pytest; log in build/binder-env.log)")
        with open(ROOT / "build" / "binder-env.log", "wb") as log:  # the child keeps its copy
            binder = subprocess.Popen(
                build, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
    failed = []
    if _run(pytest_command(args, os.cpu_count(), has_xdist)) != 0:
        failed.append("pytest")
    if binder is not None:  # its result is the Binder test's; here it is only waited for
        binder.wait()
    for name, proc in started.items():
        out, _ = proc.communicate()
        _say(f"{name}: {'passed' if proc.returncode == 0 else 'FAILED'}")
        if proc.returncode != 0:
            sys.stdout.write(out.decode(errors="replace"))
            failed.append(name)
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


LAB_HELP = """python3 kit.py lab [--port=N] [JupyterLab options]

Install the kit in .venv (first run only) and start JupyterLab on notebooks/00_start_here.ipynb,
serving the whole repository. Prints one line with the address to open; Ctrl-C stops.
  --port=N, --port N   the port (1-65535); default: the first free one from 8888
  other options        go to JupyterLab, e.g. --no-browser
"""

TEST_HELP = """python3 kit.py test [pytest arguments]

Install the kit and its test tools in .venv (first run only), then run ruff (lint and format),
mypy on dlperf_widgets/core and pytest; arguments go to pytest (e.g. -k gemm, tests/core).
"""


class UsageError(Exception):
    """A command line the kit refuses before installing anything."""


def parse_port(value: str) -> int:
    """A TCP port a server can listen on: an integer from 1 to 65535."""
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise UsageError(f"'--port' must be an integer from 1 to 65535 (got {value!r})")
    return int(value)


def split_lab_args(args: list[str]) -> tuple[int | None, list[str]]:
    """'--port=N' or '--port N' taken out (the kit passes the port itself); the rest goes to
    JupyterLab. Raises UsageError for a missing or bad port."""
    port: int | None = None
    rest: list[str] = []
    it = iter(args)
    for a in it:
        if a.startswith("--port="):
            port = parse_port(a.split("=", 1)[1])
        elif a == "--port":
            port = parse_port(next(it, ""))
        else:
            rest.append(a)
    return port, rest


def cmd_lab(args: list[str]) -> int:
    if "--help" in args or "-h" in args:
        print(LAB_HELP)
        return 0
    try:
        asked, args = split_lab_args(args)
    except UsageError as exc:
        print(f"[kit] {exc}", file=sys.stderr)
        return 2
    ensure_env(EXTRAS["lab"])
    token = secrets.token_hex(16)
    port = asked if asked is not None else _free_port()
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
    if argv and argv[0] in ("--help", "-h", "help"):
        print(__doc__)
        return 0
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] not in commands:
        print(
            f"[kit] unknown command {argv[0]!r}: use one of {', '.join(commands)} "
            "(python3 kit.py --help)",
            file=sys.stderr,
        )
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
