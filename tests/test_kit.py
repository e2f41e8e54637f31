"""The README's first command, tried as a new user would: ``python3 kit.py lab`` in a fresh copy.

The copy holds what a clone holds (tracked and unignored files). To stay quick it reuses an
installed environment (DLPERF_VENV, else the Python running the tests) with
DLPERF_NO_INSTALL=1, so the test checks what the kit does, not pip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import kit  # noqa: E402

URL_LINE = re.compile(r"\[kit\] open (http://localhost:(\d+)/lab/tree/(\S+)\?token=(\w+))")


def _fresh_copy(dest: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    return dest


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())


@pytest.mark.slow
def test_kit_lab_serves_the_course_from_the_repository_root(tmp_path):
    """`kit.py lab` exited at once as root and served only notebooks/, so the notebooks' links
    to the exercises led nowhere; now it starts (saying so when it adds --allow-root), prints
    one URL line on the first notebook, and serves notebooks/ and exercises/student/."""
    clone = _fresh_copy(tmp_path / "clone")
    venv = Path(os.environ.get("DLPERF_VENV", sys.prefix))
    env = {**os.environ, "DLPERF_VENV": str(venv), "DLPERF_NO_INSTALL": "1"}
    env["PYTHONPATH"] = str(clone)
    proc = subprocess.Popen(
        # "--port N" (the space form, as JupyterLab documents it) must reach the server
        [sys.executable, "kit.py", "lab", "--no-browser", "--port", str(kit._free_port(8960))],
        cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 150
        match = None
        assert proc.stdout is not None
        while match is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            match = URL_LINE.search(line)
        assert match, f"no URL line; kit said: {''.join(lines)[-2000:]}"
        _, port, path, token = match.groups()
        assert path == "notebooks/00_start_here.ipynb"
        said = "".join(lines)
        assert ("--allow-root" in said) == (os.geteuid() == 0)
        assert len([x for x in lines if "http" in x]) == 1  # one line, not the server's log
        api = f"http://127.0.0.1:{port}/api/contents"
        first = _get(f"{api}/notebooks/00_start_here.ipynb?content=0&token={token}")
        assert first["type"] == "notebook"
        student = _get(f"{api}/exercises/student?token={token}")
        names = {item["name"] for item in student["content"]}
        assert "01_gemm_and_intensity_exercises.ipynb" in names
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    # The server went with the kit (no JupyterLab left behind on the port).
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=3)


def test_lab_command_adds_allow_root_only_for_root(monkeypatch):
    """JupyterLab refuses root without --allow-root; a normal user gets no such flag."""
    monkeypatch.setattr(kit.os, "geteuid", lambda: 0, raising=False)
    root_cmd = kit.lab_command(["--no-browser"], "t", 9999)
    assert "--allow-root" in root_cmd
    assert f"--ServerApp.root_dir={kit.ROOT}" in root_cmd
    assert kit.FIRST_NOTEBOOK in root_cmd
    monkeypatch.setattr(kit.os, "geteuid", lambda: 1000, raising=False)
    assert "--allow-root" not in kit.lab_command(["--no-browser"], "t", 9999)


# -- which PyTorch, decided before installing --------------------------------------------------


def test_torch_plan_cpu_build_without_an_nvidia_gpu():
    """A Linux machine without nvidia-smi got the package index's CUDA build (5.3 GB .venv);
    it must take PyTorch's CPU index, and say so with a size before installing."""
    plan = kit.torch_plan("Linux", has_nvidia_gpu=False)
    assert plan.build == "cpu"
    assert plan.index_url == "https://download.pytorch.org/whl/cpu"
    assert "CPU build" in plan.line and "GB" in plan.line and "minutes" in plan.line


def test_torch_plan_cuda_build_with_an_nvidia_gpu_and_index_builds_elsewhere():
    """With an NVIDIA GPU the package index's (CUDA) build is the right one; macOS and Windows
    get CPU builds from the package index, so no second index is tried there."""
    cuda = kit.torch_plan("Linux", has_nvidia_gpu=True)
    assert (cuda.build, cuda.index_url) == ("cuda", None) and "CUDA build" in cuda.line
    for system in ("Darwin", "Windows"):
        plan = kit.torch_plan(system, has_nvidia_gpu=False)
        assert (plan.build, plan.index_url) == ("cpu", None)
        assert system in plan.line and "GB" in plan.line


def test_cpu_index_is_tried_briefly_then_the_package_index(monkeypatch, capsys):
    """Where only the package index is reachable (the machines that test this project) the
    CPU-index attempt must fail fast (short timeout, no retries) and the install go on."""
    calls: list[list[str]] = []

    class Failed:
        returncode = 1

    def fake_run(cmd, **kwargs):
        calls.append(cmd)
        return Failed()

    monkeypatch.setattr(kit.subprocess, "run", fake_run)
    plan = kit.torch_plan("Linux", has_nvidia_gpu=False)
    assert kit.install_torch_first(["pip", "install"], plan) is False
    (cmd,) = calls
    assert cmd[cmd.index("--index-url") + 1] == kit.CPU_INDEX
    assert cmd[cmd.index("--retries") + 1] == "0"
    assert int(cmd[cmd.index("--timeout") + 1]) <= 15
    assert cmd[-3:] == ["-c", "constraints.txt", "torch"]  # the pinned version, torch alone
    assert "package index instead" in capsys.readouterr().out
    calls.clear()
    assert kit.install_torch_first(["pip", "install"], kit.torch_plan("Linux", True)) is False
    assert calls == []  # nothing tried for the CUDA build


def test_constraints_pin_torch_so_the_cpu_index_matches():
    """The CPU index names its wheels 2.13.0+cpu; the '==' pin without a local label matches
    them (PEP 440), so the same constraints serve both indexes."""
    from packaging.requirements import Requirement

    lines = (kit.ROOT / "constraints.txt").read_text().splitlines()
    (torch_pin,) = [Requirement(x) for x in lines if x.startswith("torch")]
    version = str(torch_pin.specifier).removeprefix("==")
    assert torch_pin.specifier.contains(f"{version}+cpu")


# -- the command line is checked before anything is installed --------------------------------


def _kit(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    venv = tmp_path / "never-created"
    env = {**os.environ, "DLPERF_VENV": str(venv)}
    env.pop("DLPERF_NO_INSTALL", None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "kit.py"), *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert not venv.exists(), "the kit started installing"
    return done


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_exits_0_and_lists_the_commands(flag, tmp_path):
    """`kit.py --help` exited 2; it must print the usage with both commands and exit 0."""
    done = _kit(flag, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "kit.py lab" in done.stdout and "kit.py test" in done.stdout


def test_unknown_command_is_named_and_exits_2(tmp_path):
    """`kit.py foo` printed the usage without saying what was wrong."""
    done = _kit("foo", tmp_path=tmp_path)
    assert done.returncode == 2
    assert "unknown command 'foo'" in done.stderr and "lab" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("port", ["--port=abc", "--port=99999", "--port=0", "--port=-1"])
def test_bad_port_is_refused_before_installing(port, tmp_path):
    """`lab --port=abc` ran the whole install first, and 99999 printed an unusable URL; a bad
    port must be refused at once with one line naming the option, its rule and the value."""
    done = _kit("lab", port, tmp_path=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    value = port.split("=", 1)[1]
    assert line == f"[kit] '--port' must be an integer from 1 to 65535 (got {value!r})"


def test_port_forms_and_missing_value():
    """'--port N' and '--port=N' both give the port; a trailing '--port' is refused."""
    assert kit.split_lab_args(["--no-browser", "--port", "8890"]) == (8890, ["--no-browser"])
    assert kit.split_lab_args(["--port=65535"]) == (65535, [])
    assert kit.split_lab_args([]) == (None, [])
    with pytest.raises(kit.UsageError, match=r"got ''"):
        kit.split_lab_args(["--port"])


@pytest.mark.parametrize("command", ["lab", "test"])
def test_command_help_is_the_kits_own(command, tmp_path):
    """`lab --help` went to JupyterLab after installing and ended 'JupyterLab did not start';
    each command's help is the kit's, printed at once."""
    done = _kit(command, "--help", tmp_path=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith(f"python3 kit.py {command}")


def test_pytest_runs_on_workers_one_file_per_worker():
    """`kit.py test` took 13 min of pytest on one core; with pytest-xdist it uses up to four
    workers, keeping each file (a notebook's cells, the browser session) on one worker, and
    leaves a caller's own -n alone."""
    cmd = [str(c) for c in kit.pytest_command(["-k", "gemm"], cpus=2, has_xdist=True)]
    assert cmd[cmd.index("-n") + 1] == "2" and cmd[cmd.index("--dist") + 1] == "loadfile"
    assert cmd[-2:] == ["-k", "gemm"]
    many = [str(c) for c in kit.pytest_command([], cpus=64, has_xdist=True)]
    assert many[many.index("-n") + 1] == "4"
    for args, cpus, has in (([], 2, False), ([], 1, True), (["-n", "0"], 2, True)):
        assert "--dist" not in [str(c) for c in kit.pytest_command(args, cpus, has)]


def test_binder_environment_is_built_beside_a_full_run_only():
    """Guards the Binder build that kit.py test starts beside pytest: a full run starts
    tools/binder_env.py (the Binder test then finds its environment ready), a run of chosen
    tests (any pytest argument) does not install its 1.5 GB."""
    cmd = kit.binder_build_command([])
    assert cmd is not None and cmd[-1] == str(ROOT / "tools" / "binder_env.py")
    assert (ROOT / "tools" / "binder_env.py").is_file()
    for args in (["-k", "gemm"], ["tests/core"], ["-x"]):
        assert kit.binder_build_command(args) is None
