"""The course deployment recipe, run for real: deploy/jupyterhub_config.py on 127.0.0.1.

A JupyterHub (from the package index) with configurable-http-proxy (from npm, installed into
build/node/ by tools/ensure_hub.py) is started from the recipe's own configuration file, with
only what a laptop needs changed on top (ports, paths, the local-process spawner). Three
learners log in through the login form, each gets a server, and notebook 00 runs cell by cell
in each learner's own kernel through the proxy (kernel websocket); carol's kernel has no
PyTorch. The idle culler must be running with enough scope to list users. Then one exercise goes
round nbgrader's exchange as configured by deploy/nbgrader_config.py: the instructor releases,
two learners fetch and submit from their own kernels, the instructor collects and
autogrades, and the scores must be what the instructor's own solution earns.

Each learner's memory (server + kernel, resident) and CPU time are printed (``pytest -s``), as
the sizing in deploy/README.md is based on them. Skipped, in one line, only where npm is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
NOTEBOOK = ROOT / "notebooks" / "00_start_here.ipynb"
EXERCISE = "03_tiles_and_waves_exercises.ipynb"
ASSIGNMENT = "ex03"
COURSE = "dlperf-test"
LEARNERS = ("alice", "bob", "carol")
INSTRUCTOR = "teacher"
PASSWORD = "toast-in-three-minutes"
ADMIN_TOKEN = uuid.uuid4().hex
START_TIMEOUT_S = 90
CELL_TIMEOUT_S = 120

pytestmark = pytest.mark.slow

sys.path.insert(0, str(ROOT / "tools"))
import ensure_hub  # noqa: E402


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _proxy() -> Path:
    found = ensure_hub.proxy_command()
    if found is None and shutil.which("npm") is None:
        pytest.skip("npm is missing: the hub test needs configurable-http-proxy from npm")
    if found is None:
        print(ensure_hub.ensure_proxy())
        found = ensure_hub.proxy_command()
    assert found is not None, "npm is present but configurable-http-proxy did not install"
    return found


class Hub:
    """A running hub: its URL, the admin token's session and its folders."""

    def __init__(self, tmp: Path) -> None:
        import requests

        self.tmp = tmp
        self.homes = tmp / "home"
        self.exchange = tmp / "exchange"
        self.etc = tmp / "etc"
        self.port, hub_port, api_port = _free_ports(3)
        self.url = f"http://127.0.0.1:{self.port}"
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"token {ADMIN_TOKEN}"
        self.log = tmp / "hub.log"
        self.proc: subprocess.Popen[bytes] | None = None
        for folder in (self.homes, self.exchange, self.etc):
            folder.mkdir()
        self.exchange.chmod(0o1777)  # as deploy/nbgrader_config.py asks
        # What the learner image installs as /etc/jupyter/nbgrader_config.py.
        shutil.copy(DEPLOY / "nbgrader_config.py", self.etc / "nbgrader_config.py")
        singleuser = Path(sys.executable).with_name("jupyterhub-singleuser")
        overlay = f"""
c = get_config()
load_subconfig({str(DEPLOY / "jupyterhub_config.py")!r})
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {self.port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{str(_proxy())!r}]
c.ConfigurableHTTPProxy.pid_file = {str(tmp / "proxy.pid")!r}
c.JupyterHub.pid_file = {str(tmp / "hub.pid")!r}
c.JupyterHub.db_url = "sqlite:///{tmp / "hub.sqlite"}"
c.JupyterHub.cookie_secret_file = {str(tmp / "cookie_secret")!r}
c.Spawner.cmd = [{str(singleuser)!r}]
c.Spawner.args = {["--allow-root"] if os.geteuid() == 0 else []!r}
c.Spawner.environment.update({{
    "PYTHONPATH": {str(ROOT)!r},
    "JUPYTER_CONFIG_PATH": {str(self.etc)!r},
    "DLPERF_NBGRADER_EXCHANGE": {str(self.exchange)!r},
    "DLPERF_COURSE_ID": {COURSE!r},
}})
c.JupyterHub.services.append({{"name": "course-admin", "api_token": {ADMIN_TOKEN!r}}})
c.JupyterHub.load_roles.append({{
    "name": "course-admin",
    "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "read:users",
               "read:services"],
    "services": ["course-admin"],
}})
"""
        (tmp / "hub_config.py").write_text(overlay)
        self.env = dict(
            os.environ,
            DLPERF_HUB_SPAWNER="simple",
            DLPERF_HUB_HOME_ROOT=str(self.homes),
            DLPERF_HUB_PASSWORD=PASSWORD,
            DLPERF_HUB_INSTRUCTORS=INSTRUCTOR,
            DLPERF_HUB_IDLE_S="600",
            PYTHONPATH=str(ROOT),
            # nbgrader runs `alembic` from PATH, as it would in an activated environment
            PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        )

    def start(self) -> None:
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(self.tmp / "hub_config.py")],
                cwd=self.tmp,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"the hub exited:\n{self.tail()}"
            with contextlib.suppress(OSError):
                if self.api.get(f"{self.url}/hub/api/", timeout=5).ok:
                    return
            time.sleep(0.5)
        raise AssertionError(f"the hub did not answer in {START_TIMEOUT_S} s:\n{self.tail()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        # SIGTERM lets the hub stop the learners' servers and the proxy it started.
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def login(self, name: str) -> None:
        """Log in through the form, as a learner's browser does."""
        import requests

        browser = requests.Session()
        browser.get(f"{self.url}/hub/login", timeout=30).raise_for_status()
        form = {"username": name, "password": PASSWORD, "_xsrf": browser.cookies.get("_xsrf")}
        reply = browser.post(f"{self.url}/hub/login", data=form, allow_redirects=False, timeout=30)
        assert reply.status_code == 302, f"{name}: login refused ({reply.status_code})"
        assert any(c.name.startswith("jupyterhub-") for c in browser.cookies), reply.headers
        wrong = requests.Session()
        wrong.get(f"{self.url}/hub/login", timeout=30)
        form = {
            "username": name,
            "password": "not-the-password",
            "_xsrf": wrong.cookies.get("_xsrf"),
        }
        reply = wrong.post(f"{self.url}/hub/login", data=form, allow_redirects=False, timeout=30)
        assert reply.status_code == 403, f"{name}: a wrong password got {reply.status_code}"

    def start_server(self, name: str) -> str:
        """Ask the hub for the user's server; return a token of that user's own."""
        reply = self.api.post(f"{self.url}/hub/api/users/{name}/server", timeout=30)
        assert reply.status_code in (201, 202), reply.text
        return self.token(name)

    def token(self, name: str) -> str:
        """A new API token of the user's own (it reaches only that user's server)."""
        reply = self.api.post(f"{self.url}/hub/api/users/{name}/tokens", json={}, timeout=30)
        reply.raise_for_status()
        return str(reply.json()["token"])

    def wait_ready(self, names: tuple[str, ...], since: float | None = None) -> dict[str, float]:
        """Seconds until each user's server is ready (from ``since``), polled together."""
        t0, ready = time.monotonic() if since is None else since, {}
        while time.monotonic() - t0 < START_TIMEOUT_S and len(ready) < len(names):
            for name in set(names) - set(ready):
                user = self.api.get(f"{self.url}/hub/api/users/{name}", timeout=30).json()
                if user.get("servers", {}).get("", {}).get("ready"):
                    ready[name] = time.monotonic() - t0
            time.sleep(0.25)
        late = sorted(set(names) - set(ready))
        assert not late, f"servers not ready in {START_TIMEOUT_S} s: {late}\n{self.tail()}"
        return ready


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    running = Hub(tmp_path_factory.mktemp("hub"))
    try:
        running.start()
        yield running
    finally:
        running.stop()


# ---------------------------------------------------------------------------------------------
# Running a notebook in a learner's kernel, over the kernel websocket
# ---------------------------------------------------------------------------------------------
class Kernel:
    """One kernel of a learner's server, driven over its websocket as JupyterLab does."""

    def __init__(self, hub: Hub, name: str, token: str, path: str) -> None:
        import requests

        self.name, self.token, self.path = name, token, path
        self.base = f"{hub.url}/user/{name}"
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"token {token}"
        self.session = uuid.uuid4().hex
        self.ws = None

    def put(self, path: str, model: dict) -> None:
        self.http.put(f"{self.base}/api/contents/{path}", json=model, timeout=30).raise_for_status()

    def get(self, path: str) -> dict:
        reply = self.http.get(f"{self.base}/api/contents/{path}", timeout=30)
        reply.raise_for_status()
        return dict(reply.json())

    async def open(self) -> None:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        body = {"path": self.path, "type": "notebook", "kernel": {"name": "python3"}}
        reply = await asyncio.to_thread(
            self.http.post, f"{self.base}/api/sessions", json=body, timeout=60
        )
        reply.raise_for_status()
        kernel_id = reply.json()["kernel"]["id"]
        ws_url = self.base.replace("http://", "ws://") + f"/api/kernels/{kernel_id}/channels"
        request = HTTPRequest(ws_url, headers={"Authorization": f"token {self.token}"})
        self.ws = await websocket_connect(request)

    async def run(self, code: str) -> tuple[str, list[str]]:
        """Execute one cell; (its stdout, its error lines) once the kernel is idle again."""
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "username": self.name,
                  "session": self.session, "date": "", "version": "5.3"}  # fmt: skip
        content = {"code": code, "silent": False, "store_history": True,
                   "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}  # fmt: skip
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content,
                   "channel": "shell", "buffers": []}  # fmt: skip
        assert self.ws is not None
        await self.ws.write_message(json.dumps(message))
        stdout, errors, replied, idle = [], [], False, False
        while not (replied and idle):
            raw = await asyncio.wait_for(self.ws.read_message(), CELL_TIMEOUT_S)
            assert raw is not None, f"{self.name}: the kernel websocket closed"
            if isinstance(raw, bytes):
                continue  # widget buffers
            reply = json.loads(raw)
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, body = reply["msg_type"], reply["content"]
            if kind == "stream" and body["name"] == "stdout":
                stdout.append(body["text"])
            elif kind == "error":
                errors.append(f"{body['ename']}: {body['evalue']}")
            elif kind == "execute_reply":
                replied = True
                if body["status"] != "ok":
                    errors.append(f"execute_reply {body['status']}: {body.get('evalue', '')}")
            elif kind == "status" and body["execution_state"] == "idle":
                idle = True
        return "".join(stdout), errors

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()


def _code_cells(notebook: dict) -> list[dict]:
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def _stdout(cell: dict) -> str:
    streams = [o for o in cell.get("outputs", []) if o.get("output_type") == "stream"]
    return "".join("".join(o["text"]) for o in streams if o["name"] == "stdout")


# carol's kernel has no PyTorch (as in the small image or a site without it): the notebook
# must run all the same, and her memory is the figure without PyTorch.
NO_TORCH = "carol"
HIDE_TORCH = "import sys\nsys.modules['torch'] = None  # import torch now raises ImportError"


async def _run_notebook(hub: Hub, name: str, token: str) -> dict[str, object]:
    notebook = json.loads(NOTEBOOK.read_text())
    kernel = Kernel(hub, name, token, "notebooks/00_start_here.ipynb")
    # Upload as a learner's browser saves a file: the folder, then the notebook.
    await asyncio.to_thread(kernel.put, "notebooks", {"type": "directory"})
    await asyncio.to_thread(
        kernel.put, kernel.path, {"type": "notebook", "format": "json", "content": notebook}
    )
    await kernel.open()
    failures, checked = [], 0
    t0 = time.monotonic()
    try:
        if name == NO_TORCH:
            await kernel.run(HIDE_TORCH)
        for index, cell in enumerate(_code_cells(notebook)):
            stdout, errors = await kernel.run("".join(cell["source"]))
            if errors:
                failures.append(f"cell {index}: {errors}")
            if "nbval-check-output" in cell["metadata"].get("tags", []):
                checked += 1
                if stdout != _stdout(cell):
                    failures.append(f"cell {index} printed {stdout!r}, expected {_stdout(cell)!r}")
        usage = await kernel.run(
            "import os, sys, psutil\n"
            "me = psutil.Process(os.getpid())\n"
            "server = me.parent()\n"
            "tree = [server, *server.children(recursive=True)]\n"
            "print(sum(p.memory_info().rss for p in tree))\n"
            "print(sum(sum(p.cpu_times()[:2]) for p in tree))\n"
            "print(sys.modules.get('torch') is not None)\n"
            "print(server.memory_info().rss)"
        )
    finally:
        kernel.close()
    return {
        "failures": failures,
        "checked": checked,
        "seconds": time.monotonic() - t0,
        "rss_bytes": int(usage[0].split()[0]),
        "cpu_s": float(usage[0].split()[1]),
        "torch": usage[0].split()[2] == "True",
        "server_rss_bytes": int(usage[0].split()[3]),
    }


def test_three_learners_run_notebook_00_on_their_own_servers(hub: Hub, run_coroutine: Any) -> None:
    """Guards the recipe's core promise: with deploy/jupyterhub_config.py, learners log in
    with the class password, get a server each, and notebook 00 runs in every learner's
    own kernel with no error and the same printed numbers as the committed notebook."""
    for name in LEARNERS:
        hub.login(name)
    t0 = time.monotonic()
    with ThreadPoolExecutor(len(LEARNERS)) as pool:  # three learners press Start at once
        tokens = dict(zip(LEARNERS, pool.map(hub.start_server, LEARNERS), strict=True))
    ready = hub.wait_ready(LEARNERS, since=t0)

    async def everyone() -> list[dict[str, object]]:
        return await asyncio.gather(*(_run_notebook(hub, n, tokens[n]) for n in LEARNERS))

    results = dict(zip(LEARNERS, run_coroutine(everyone()), strict=True))
    for name, result in results.items():
        torch = "with" if result["torch"] else "without"
        print(f"[hub] {name} ({torch} PyTorch): server ready after {ready[name]:.1f} s, notebook 00 in "
              f"{result['seconds']:.1f} s; server + kernel {int(result['rss_bytes']) / 1e6:.0f} MB "
              f"resident (the server alone {int(result['server_rss_bytes']) / 1e6:.0f} MB), "
              f"{float(result['cpu_s']):.1f} CPU s since start")  # fmt: skip
        assert result["failures"] == [], f"{name}: {result['failures']}\n{hub.tail()}"
        assert result["checked"] >= 1, "notebook 00 has no output-checked cell left to compare"
        assert result["torch"] == (name != NO_TORCH), f"{name}: PyTorch loaded is {result['torch']}"
    homes = sorted(p.name for p in hub.homes.iterdir())
    assert homes == sorted(LEARNERS), f"each learner has a home of their own, got {homes}"


def test_the_idle_culler_runs_with_the_scopes_it_was_given(hub: Hub) -> None:
    """Guards idle culling: the hub started jupyterhub-idle-culler as a service, it is still
    running, and its first round of requests to the hub was not refused for lack of scope."""
    import psutil

    reply = hub.api.get(f"{hub.url}/hub/api/services/idle-culler", timeout=30)
    reply.raise_for_status()
    pid = reply.json().get("pid")
    assert pid and psutil.pid_exists(pid), reply.json()
    assert "jupyterhub_idle_culler" in " ".join(psutil.Process(pid).cmdline())
    listed = re.compile(r" 200 GET /hub/api/users\?\S* \(idle-culler@")
    deadline = time.monotonic() + 30
    while not listed.search(hub.log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.5)  # the culler lists the users when it starts, then every --cull-every
    culler = [line for line in hub.log.read_text().splitlines() if "(idle-culler@" in line]
    assert any(listed.search(line) for line in culler), "\n".join(culler) or hub.tail()
    refused = [line for line in culler if re.search(r"\] 40[13] ", line)]
    assert not refused, refused


# ---------------------------------------------------------------------------------------------
# nbgrader's exchange round trip
# ---------------------------------------------------------------------------------------------
def _solution_of(grade_id: str) -> str:
    """The instructor's solution lines for one answer cell of the source exercise."""
    source = json.loads((ROOT / "exercises" / EXERCISE).read_text())
    for cell in source["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == grade_id:
            text = "".join(cell["source"])
            body = text.split("### BEGIN SOLUTION\n", 1)[1].split("### END SOLUTION", 1)[0]
            return body
    raise AssertionError(f"{EXERCISE} has no cell {grade_id!r}")


def _instructor(hub: Hub, course: Path, *args: str) -> str:
    env = dict(hub.env, JUPYTER_CONFIG_PATH=str(hub.etc), DLPERF_COURSE_ID=COURSE,
               DLPERF_NBGRADER_EXCHANGE=str(hub.exchange))  # fmt: skip
    env.pop("DLPERF_STUDENT_ID", None)
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


LEARNER_NBGRADER = """
import os, subprocess, sys
done = subprocess.run([sys.executable, "-m", "nbgrader", {args}], cwd=os.environ["HOME"],
                      capture_output=True, text=True)
print(done.returncode, os.environ.get("DLPERF_STUDENT_ID"))
print(done.stdout + done.stderr)
"""


async def _learner_kernel(hub: Hub, name: str, token: str) -> Kernel:
    """A kernel in the learner's server, on a new empty notebook of theirs."""
    kernel = Kernel(hub, name, token, "nbgrader.ipynb")
    empty = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    await asyncio.to_thread(
        kernel.put, kernel.path, {"type": "notebook", "format": "json", "content": empty}
    )
    await kernel.open()
    return kernel


async def _learner_nbgrader(kernel: Kernel, *args: str) -> None:
    """Run an nbgrader command as the learner does, from their own kernel and home."""
    code = LEARNER_NBGRADER.format(args=", ".join(repr(a) for a in args))
    stdout, errors = await kernel.run(code)
    assert not errors, errors
    assert stdout.startswith(f"0 {kernel.name}\n"), f"{kernel.name}: nbgrader {args}:\n{stdout}"


def test_nbgrader_release_fetch_submit_collect_autograde(hub: Hub, run_coroutine: Any) -> None:
    """Guards the recipe's nbgrader exchange (deploy/nbgrader_config.py): an exercise released
    by the instructor is fetched and submitted from learners' own servers, filed under their
    hub names, collected and autograded; alice, who answered task 1 with the instructor's
    solution, scores that task's point, and bob, who answered nothing, scores 0."""
    from nbgrader.api import Gradebook

    course = hub.tmp / "course"
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(ROOT / "exercises" / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copy(ROOT / "exercises" / EXERCISE, course / "source" / ASSIGNMENT / EXERCISE)
    _instructor(hub, course, "generate_assignment", ASSIGNMENT, "--force")
    _instructor(hub, course, "release_assignment", ASSIGNMENT, "--force")

    learners = ("alice", "bob")
    tokens = {}
    for name in learners:
        users = hub.api.get(f"{hub.url}/hub/api/users/{name}", timeout=30).json()
        if not users.get("servers", {}).get("", {}).get("ready"):
            hub.login(name)
            hub.start_server(name)
            hub.wait_ready((name,))
        tokens[name] = hub.token(name)

    async def fetch_answer_submit(name: str) -> None:
        kernel = await _learner_kernel(hub, name, tokens[name])
        try:
            await _learner_nbgrader(kernel, "fetch_assignment", ASSIGNMENT)
            if name == "alice":  # answers task 1 in the fetched copy, as in JupyterLab
                path = f"{ASSIGNMENT}/{EXERCISE}"
                model = await asyncio.to_thread(kernel.get, path)
                for cell in model["content"]["cells"]:
                    if cell["metadata"].get("nbgrader", {}).get("grade_id") == "tiles":
                        cell["source"] = "".join(cell["source"]).replace(
                            "# YOUR CODE HERE", _solution_of("tiles")
                        )
                saved = {"type": "notebook", "format": "json", "content": model["content"]}
                await asyncio.to_thread(kernel.put, path, saved)
            await _learner_nbgrader(kernel, "submit", ASSIGNMENT)
        finally:
            kernel.close()

    async def both() -> None:
        await asyncio.gather(*(fetch_answer_submit(name) for name in learners))

    run_coroutine(both())
    _instructor(hub, course, "collect", ASSIGNMENT)
    assert sorted(p.name for p in (course / "submitted").iterdir()) == sorted(learners)
    _instructor(hub, course, "autograde", ASSIGNMENT, "--create")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {n: gradebook.find_submission(ASSIGNMENT, n).score for n in learners}
        notebook = gradebook.find_submission_notebook(EXERCISE[:-6], ASSIGNMENT, "alice")
        earned = {g.name: g.score for g in notebook.grades if g.auto_score is not None}
    assert earned["check_03_tiles"] == 1, earned
    assert scores == {"alice": 1.0, "bob": 0.0}, (scores, earned)
