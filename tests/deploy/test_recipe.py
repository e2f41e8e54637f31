"""The deployment recipe's files agree with each other and with the pins they reference.

deploy/jupyterhub_config.py (one machine) and deploy/values.yaml (Kubernetes) must say the
same per-learner figures; deploy/Dockerfile must take its versions from binder/ and the
package's extras, never repeat them; tools/ensure_hub.py must install the pinned hub.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
import yaml
from traitlets.config.loader import PyFileConfigLoader

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
sys.path.insert(0, str(ROOT / "tools"))
import ensure_hub  # noqa: E402


def _project() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return dict(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"])


def _hub_config(monkeypatch: pytest.MonkeyPatch, **env: str):  # type: ignore[no-untyped-def]
    for name in [n for n in os.environ if n.startswith("DLPERF_HUB_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return PyFileConfigLoader("jupyterhub_config.py", str(DEPLOY)).load_config()


def test_values_yaml_says_what_the_hub_config_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the two recipes from drifting apart: memory guarantee and limit, CPU, the
    landing notebook and idle culling are the same on one machine and on Kubernetes."""
    c = _hub_config(monkeypatch, DLPERF_HUB_SPAWNER="simple")
    values = yaml.safe_load((DEPLOY / "values.yaml").read_text())
    user = values["singleuser"]
    assert user["memory"] == {"guarantee": c.Spawner.mem_guarantee, "limit": c.Spawner.mem_limit}
    assert user["cpu"] == {"guarantee": c.Spawner.cpu_guarantee, "limit": c.Spawner.cpu_limit}
    assert user["defaultUrl"] == c.Spawner.default_url
    assert (ROOT / user["defaultUrl"].removeprefix("/lab/tree/")).exists()
    (culler,) = c.JupyterHub.services
    flags = dict(arg.lstrip("-").split("=") for arg in culler["command"] if arg.startswith("--"))
    cull = values["cull"]
    assert cull["enabled"] is True
    assert (int(flags["timeout"]), int(flags["cull-every"])) == (cull["timeout"], cull["every"])
    hub = values["hub"]["config"]
    assert hub["JupyterHub"]["authenticator_class"] == c.JupyterHub.authenticator_class


def test_hub_config_gives_the_culler_only_the_scopes_it_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Guards idle culling: the culler service exists, runs jupyterhub_idle_culler, and its
    role grants exactly the scopes the culler's documentation lists (no admin)."""
    c = _hub_config(monkeypatch, DLPERF_HUB_SPAWNER="simple", DLPERF_HUB_IDLE_S="1200")
    (culler,) = c.JupyterHub.services
    assert culler["command"][1:3] == ["-m", "jupyterhub_idle_culler"]
    assert "--timeout=1200" in culler["command"]
    (role,) = c.JupyterHub.load_roles
    assert role["services"] == [culler["name"]]
    assert set(role["scopes"]) == {"list:users", "read:users:activity", "read:servers",
                                   "delete:servers"}  # fmt: skip


def test_instructors_are_admins_and_not_filed_as_learners(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards nbgrader's student ids on the hub: a learner's server gets its hub name in
    DLPERF_STUDENT_ID, an instructor's gets none (they collect everyone's work)."""
    c = _hub_config(monkeypatch, DLPERF_HUB_SPAWNER="simple", DLPERF_HUB_INSTRUCTORS="ada, alan")
    assert set(c.Authenticator.admin_users) == {"ada", "alan"}
    assert c.JupyterHub.load_groups["instructors"]["users"] == ["ada", "alan"]
    student_id = c.Spawner.environment["DLPERF_STUDENT_ID"]

    class User:
        def __init__(self, name: str, admin: bool) -> None:
            self.name, self.admin = name, admin

    class Spawner:
        def __init__(self, user: User) -> None:
            self.user = user

    assert student_id(Spawner(User("bob", False))) == "bob"
    assert student_id(Spawner(User("ada", False))) == ""
    assert student_id(Spawner(User("root", True))) == ""


@pytest.mark.parametrize("variable", ["DLPERF_HUB_AUTH", "DLPERF_HUB_SPAWNER"])
def test_an_unknown_choice_is_refused_in_one_sentence(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """Guards the instructor from a typo: an unknown authenticator or spawner stops the hub
    with one sentence naming the variable, the choices and the value given."""
    with pytest.raises(ValueError, match=rf"^'{variable}' must be one of .* \(got 'ldap'\)$"):
        _hub_config(monkeypatch, **{variable: "ldap"})


def test_dockerfile_takes_its_versions_from_binder_and_the_extras() -> None:
    """Guards one set of pins: the image's Python is binder/runtime.txt's, its packages come
    from binder/requirements.txt and the package's extras, and it repeats no version."""
    docker = (DEPLOY / "Dockerfile").read_text()
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()  # e.g. python-3.11
    (image,) = re.findall(r"^FROM (\S+)", docker, flags=re.MULTILINE)
    assert image.startswith(f"python:{runtime.removeprefix('python-')}-")
    assert "pip install -r binder/requirements.txt" in docker
    assert not re.search(r"[\w\]]==\d", docker), "the Dockerfile repeats a version pin"
    project = _project()
    for extras in re.findall(r'"\.\[([\w,]+)\]"', docker):
        for extra in extras.split(","):
            assert extra in project["optional-dependencies"], extra
    for source in re.findall(r"^COPY (\S+)", docker, flags=re.MULTILINE):
        assert (ROOT / source).exists(), f"the Dockerfile copies {source}, which is missing"


def test_ensure_hub_installs_the_pinned_hub() -> None:
    """Guards tools/ensure_hub.py against drifting from the `hub` extra it stands in for."""
    project = _project()
    assert sorted(ensure_hub.PYTHON_PACKAGES.values()) == sorted(
        project["optional-dependencies"]["hub"]
    )
