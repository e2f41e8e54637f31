"""The kit's requirements accept what Google Colab has preinstalled.

Colab pins its own versions (IPython 7.34 among them); a `pip install` that replaces one of
them can break the runtime (an `ipython>=8.0` requirement did). The pinned list of Colab's
versions is kept in tests/data/colab_packages.txt with its source and date.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
COLAB_FILE = ROOT / "tests" / "data" / "colab_packages.txt"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

# Requirements that deliberately differ from Colab's version, and why each is safe there.
# Anything else that rejects a Colab version fails the test.
KNOWN_UPGRADES = {
    "ipywidgets": "the widgets use ipywidgets 8; the Colab install cell upgrades it and calls "
    "output.enable_custom_widget_manager(), Colab's way of showing ipywidgets 8",
    "notebook": "only in the 'lab' extra, which `kit.py lab` installs; on Colab the install "
    "cell installs the 'widgets' extra and Colab is the front end",
    "transformers": "the 'live' extra pins the version whose aten op lists the tests check; the "
    "Colab install cell does not install 'live', so Colab keeps its own transformers",
}


def colab_versions() -> dict[str, str]:
    versions = {}
    for line in COLAB_FILE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.strip().split("==")
            versions[canonicalize_name(name)] = version
    return versions


def kit_requirements() -> list[tuple[str, Requirement]]:
    """(where, requirement) for the base dependencies and the extras a learner installs."""
    extras = PROJECT["optional-dependencies"]
    found = [("dependencies", Requirement(spec)) for spec in PROJECT["dependencies"]]
    for extra in ("widgets", "lab", "live"):
        found += [(f"[{extra}]", Requirement(spec)) for spec in extras[extra]]
    return [(where, req) for where, req in found if canonicalize_name(req.name) != "dlperf-widgets"]


def test_colab_list_names_its_source_and_date():
    """The pinned list is only useful if one can tell how old it is and where to refresh it."""
    header = COLAB_FILE.read_text()
    assert re.search(r"^# date: \d{4}-\d\d-\d\d$", header, re.M)
    assert "github.com/googlecolab/backend-info" in header
    assert re.search(r"^# commit: [0-9a-f]{40}", header, re.M)
    assert {"ipython", "numpy", "matplotlib", "ipywidgets", "torch"} <= set(colab_versions())


def test_colab_ipython_and_widgets_install_keep_colabs_packages():
    """What the Colab install cell installs (base + 'widgets') must accept Colab's IPython,
    numpy and matplotlib: replacing IPython 7.34 put Colab's runtime in a crash loop."""
    colab = colab_versions()
    cell = [r for where, r in kit_requirements() if where in ("dependencies", "[widgets]")]
    by_name = {canonicalize_name(r.name): r for r in cell}
    for name in ("ipython", "numpy", "matplotlib"):
        assert by_name[name].specifier.contains(colab[name], prereleases=True), (
            f"{by_name[name]} rejects Colab's {name}=={colab[name]}"
        )


def test_every_requirement_accepts_colabs_version_or_says_why_not():
    """Each of the kit's specifiers (base, widgets, lab, live) contains Colab's version of that
    package, except the few listed in KNOWN_UPGRADES with a reason; a listed exception that
    no longer conflicts is removed from the list."""
    colab = colab_versions()
    rejected = {}
    for where, req in kit_requirements():
        name = canonicalize_name(req.name)
        if name in colab and not req.specifier.contains(colab[name], prereleases=True):
            rejected[name] = f"{where} {req} rejects Colab's {colab[name]}"
    unexplained = {k: v for k, v in rejected.items() if k not in KNOWN_UPGRADES}
    assert not unexplained, unexplained
    stale = set(KNOWN_UPGRADES) - set(rejected)
    assert not stale, f"no longer conflicting, drop from KNOWN_UPGRADES: {sorted(stale)}"
