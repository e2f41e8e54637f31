"""Binder, simulated on this machine: what mybinder.org does with ``binder/``, then the course.

A fresh virtual environment is built from ``binder/requirements.txt``, with only the torch
source adjusted (the PyTorch CPU index is out of reach here, and ``torch==2.13.0`` installs
the local CPU build), ``binder/postBuild`` is run in it, and notebooks are run with nbval by
that environment's own Python: by default the three that lean on the most pinned packages
(:data:`BINDER_NOTEBOOKS`: device detection; widgets and matplotlib; PyTorch, transformers, the
profiler and the magics), since the main environment's nbval already runs every notebook with
the same code; ``DLPERF_BINDER_NOTEBOOKS=all`` runs every notebook, as mybinder.org users may.
The environment is built by ``tools/binder_env.py`` (which ``kit.py test`` starts beside pytest,
as the install waits mostly on the disk) and kept under ``build/binder-sim/<hash of the
requirements>``, so that reruns only repeat postBuild and the notebooks. Every step has a time
limit.

The quick tests at the top check the form of the Binder files themselves.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
POSTBUILD_TIMEOUT_S = 600
NOTEBOOKS_TIMEOUT_S = 1200
CELL_TIMEOUT_S = 300
BINDER_NOTEBOOKS = (
    "00_start_here.ipynb",
    "01_gemm_and_intensity.ipynb",
    "09_measure_for_real.ipynb",
)
# What a clone of the repository would not hold (as in .gitignore), left out of the copy
# that postBuild runs in.
NOT_CLONED = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "test-output", "__pycache__", "*.egg-info",
    ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".ipynb_checkpoints", ".whl",
)  # fmt: skip

sys.path.insert(0, str(ROOT / "tools"))
import binder_env  # noqa: E402
from binder_env import PIN, local_requirements, requirement_lines  # noqa: E402


def test_requirements_are_pinned_and_torch_is_cpu_only() -> None:
    """Guards Binder's repeatability and size: every requirement is an exact pin, and torch
    comes with the PyTorch CPU index (the default one pulls GB of CUDA packages)."""
    lines = requirement_lines()
    options = [line for line in lines if line.startswith("-")]
    pins = [line for line in lines if not line.startswith("-")]
    assert options == ["--extra-index-url https://download.pytorch.org/whl/cpu"]
    bad = [line for line in pins if not PIN.match(line)]
    assert not bad, f"binder/requirements.txt lines that are not exact pins: {bad}"
    names = {PIN.match(line).group(1).lower() for line in pins}  # type: ignore[union-attr]
    for needed in (
        "torch",
        "numpy",
        "matplotlib",
        "ipywidgets",
        "ipykernel",
        "jupyterlab",
        "nbval",
    ):
        assert needed in names, f"binder/requirements.txt does not pin {needed}"
    assert local_requirements().count("torch==") == 1
    assert "download.pytorch.org" not in local_requirements()


def test_requirements_cover_what_the_package_needs() -> None:
    """Guards postBuild's ``--no-deps`` install: every dependency of the package and of its
    'widgets' extra is pinned in binder/requirements.txt, at a version the package accepts."""
    tomllib = pytest.importorskip("tomllib")
    requirements = pytest.importorskip("packaging.requirements")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {}
    for line in requirement_lines():
        match = PIN.match(line)
        if match:
            pins[match.group(1).lower()] = match.group(2)
    for spec in [*project["dependencies"], *project["optional-dependencies"]["widgets"]]:
        req = requirements.Requirement(spec)
        name = req.name.lower()
        assert name in pins, f"binder/requirements.txt does not pin {name} (pyproject: {spec})"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"binder/requirements.txt pins {name}=={pins[name]}, pyproject asks {spec}"
        )


def test_runtime_and_postbuild() -> None:
    """Guards the other two Binder files: a Python 3.x runtime line, and an executable bash
    postBuild that stops at the first failing command and installs the package."""
    assert re.fullmatch(r"python-3\.\d+\s*", (BINDER / "runtime.txt").read_text())
    post = BINDER / "postBuild"
    text = post.read_text()
    assert text.startswith("#!/bin/bash") or text.startswith("#!/usr/bin/env bash")
    assert re.search(r"^set -e", text, re.M), "postBuild must `set -e`"
    assert re.search(r"pip install .*\.\s*$", text, re.M), "postBuild must install the package"
    assert os.access(post, os.X_OK), "binder/postBuild must be executable"


def test_binder_notebooks_exist() -> None:
    """The notebooks the simulation runs by default are real ones: a renamed notebook must not
    silently shrink what the Binder environment is checked with."""
    for name in BINDER_NOTEBOOKS:
        assert (ROOT / "notebooks" / name).is_file(), name


def _run(cmd: list[str], timeout_s: float, env: dict[str, str], what: str, cwd: Path = ROOT) -> str:
    try:
        return binder_env.run(cmd, timeout_s, env, what, cwd=cwd)
    except binder_env.BuildError as exc:
        pytest.fail(str(exc))


@pytest.mark.slow
def test_binder_simulation_runs_every_notebook() -> None:
    """Guards the Binder demo: an environment made only from binder/ (requirements, then
    postBuild) installs the package with its data files and runs notebooks with nbval (those of
    BINDER_NOTEBOOKS, or every one with DLPERF_BINDER_NOTEBOOKS=all)."""
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if os.environ.get("DLPERF_BINDER_NOTEBOOKS") != "all":
        notebooks = [p for p in notebooks if p.name in BINDER_NOTEBOOKS]
    if not notebooks:
        pytest.skip("notebooks/ has no notebook yet: nothing to run in the Binder simulation")
    with tempfile.TemporaryDirectory(prefix="dlperf-binder-") as tmp:
        # Binder copies the repository into the image and runs postBuild there; so does this
        # test, which also keeps postBuild's build files and the notebooks' own files out of
        # the working tree.
        home, repo = Path(tmp) / "home", Path(tmp) / "repo"
        shutil.copytree(ROOT, repo, ignore=NOT_CLONED)
        try:
            venv = binder_env.binder_venv(home)
        except binder_env.BuildError as exc:
            pytest.fail(str(exc))
        env = binder_env.environment(venv, home)
        _run(["bash", "binder/postBuild"], POSTBUILD_TIMEOUT_S, env, "binder/postBuild", cwd=repo)
        python = str(venv / "bin" / "python")
        where = _run(
            [python, "-c", "import dlperf_widgets as d; d.gpu('A100'); print(d.__file__)"],
            60,
            env,
            "importing the installed package",
            cwd=home,  # not the repository, whose source tree would shadow the installed copy
        ).strip()
        assert Path(where).is_relative_to(venv), f"dlperf_widgets imported from {where}"
        nbval = [
            python, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q",
            "--nbval-lax", f"--nbval-cell-timeout={CELL_TIMEOUT_S}",
        ]  # fmt: skip
        if (repo / "notebooks" / "sanitize.cfg").exists():
            nbval += ["--nbval-sanitize-with", "notebooks/sanitize.cfg"]
        _run(
            [*nbval, *[f"notebooks/{p.name}" for p in notebooks]],
            NOTEBOOKS_TIMEOUT_S,
            env,
            "nbval on notebooks/ in the Binder environment",
            cwd=repo,
        )
