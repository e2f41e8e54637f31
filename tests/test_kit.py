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
