"""Drive a real JupyterLab in headless Chromium: the shared harness of the browser tests
(``tests/browser``) and of ``benchmarks/bench_browser.py``.

``LabServer`` starts JupyterLab on a free localhost port with an empty token and throwaway
config, data and runtime folders, and stops it with every process it started (kernels run in
sessions of their own, so they are found through ``/proc`` and ended one by one).
``launch_chromium`` starts Debian's Chromium through playwright with background networking
off. The page helpers open a notebook, run all its cells through JupyterLab's own command,
and read back what the page shows: error outputs, widget views and their placeholders.

Only the standard library is imported here; the callers start playwright themselves and
hand it to ``launch_chromium``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
]
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
PLACEHOLDERS = ("Loading widget...", "Error displaying widget")

# Settings of the throwaway user: nothing is fetched from the internet, documents are never
# saved behind the test's back, and every cell is kept in the DOM (no virtual scrolling).
USER_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/extensionmanager-extension/plugin.jupyterlab-settings": {"enabled": False},
}


def find_chromium() -> str | None:
    """Path of a Chromium executable, or None. ``DLPERF_CHROMIUM``, when set, is the only
    place looked at."""
    explicit = os.environ.get("DLPERF_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for path in (*CHROMIUM_CANDIDATES, shutil.which("chromium") or ""):
        if path and os.access(path, os.X_OK):
            return path
    return None


def browser_unavailable_reason() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return (
            "browser tests need the playwright package (pip install playwright, part of the "
            "'test' extra)"
        )
    if find_chromium() is None:
        return (
            "browser tests need Chromium at /usr/bin/chromium (run `python tools/ensure_browser.py` "
            "or `apt-get install chromium`; DLPERF_CHROMIUM names another)"
        )
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = entry.read_text()
        except OSError:
            continue
        # The command name is in parentheses and may itself contain spaces.
        fields = text.rsplit(")", 1)[-1].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    return children


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux ``/proc``; empty elsewhere)."""
    if not Path("/proc").is_dir():
        return []
    tree = _children_map()
    found: list[int] = []
    stack = [pid]
    while stack:
        for child in tree.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


class LabServer:
    """A JupyterLab server on 127.0.0.1 with no token and a throwaway user profile.

    ``root_dir`` is what the file browser shows; ``python`` is the interpreter whose
    JupyterLab (and kernel) is used. Use as a context manager or call start() / stop().
    """

    def __init__(
        self,
        root_dir: str | os.PathLike[str],
        python: str = sys.executable,
        start_timeout_s: float = 90.0,
    ) -> None:
        self.root_dir = Path(root_dir)
        self.python = python
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.home: Path | None = None
        self._log: Any = None
        self._pids: set[int] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        assert self.home is not None
        return self.home / "server.log"

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except (OSError, AssertionError):
            return ""

    def _environment(self) -> dict[str, str]:
        assert self.home is not None
        env = dict(os.environ)
        for var, sub in (
            ("JUPYTER_CONFIG_DIR", "config"),
            ("JUPYTER_DATA_DIR", "data"),
            ("JUPYTER_RUNTIME_DIR", "runtime"),
            ("IPYTHONDIR", "ipython"),
        ):
            path = self.home / sub
            path.mkdir(parents=True, exist_ok=True)
            env[var] = str(path)
        env["JUPYTER_PLATFORM_DIRS"] = "1"
        env.pop("JUPYTER_PATH", None)
        env.pop("JUPYTER_TOKEN", None)
        env["PYTHONUNBUFFERED"] = "1"
        settings = self.home / "config" / "lab" / "user-settings"
        for name, values in USER_SETTINGS.items():
            target = settings / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(values))
        return env

    def start(self) -> LabServer:
        self.home = Path(tempfile.mkdtemp(prefix="dlperf-lab-"))
        self.port = free_port()
        env = self._environment()
        cmd = [
            self.python,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            "--port-retries=0",
            f"--ServerApp.root_dir={self.root_dir}",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            "--LabApp.expose_app_in_browser=True",
            "--JupyterNotebookApp.expose_app_in_browser=True",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            f"--LabApp.workspaces_dir={self.home / 'workspaces'}",
        ]
        self._log = open(self.log_path, "wb")  # closed in stop()
        self.process = subprocess.Popen(
            cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=self.root_dir,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log_tail()
                self.stop()
                raise RuntimeError(f"JupyterLab exited at start-up:\n{tail}")
            try:
                self.api("GET", "/api/status", timeout=2)
                self.api("GET", "/lab", timeout=10, raw=True)
                return self
            except (OSError, urllib.error.URLError):
                time.sleep(0.3)
        tail = self.log_tail()
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer in {self.start_timeout_s:.0f} s:\n{tail}")

    def api(self, method: str, path: str, timeout: float = 10, raw: bool = False) -> Any:
        request = urllib.request.Request(self.url + path, method=method)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        if raw or not body:
            return body
        return json.loads(body)

    def _remember_processes(self) -> None:
        if self.process is not None:
            self._pids.update(descendants(self.process.pid))

    def shutdown_kernels(self) -> None:
        """End every session and kernel (between notebooks, so they don't pile up)."""
        self._remember_processes()
        try:
            for session in self.api("GET", "/api/sessions"):
                self.api("DELETE", f"/api/sessions/{session['id']}")
            for kernel in self.api("GET", "/api/kernels"):
                self.api("DELETE", f"/api/kernels/{kernel['id']}")
        except (OSError, urllib.error.URLError, ValueError):
            pass

    def stop(self) -> None:
        """Stop the server, its kernels and anything they started; remove the profile."""
        process = self.process
        if process is not None:
            self._remember_processes()
            if process.poll() is None:
                try:
                    self.api("POST", "/api/shutdown", timeout=5)
                    process.wait(timeout=15)
                except (OSError, urllib.error.URLError, subprocess.TimeoutExpired):
                    pass
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(process.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    process.wait(timeout=10)
            for pid in self._pids:
                if _alive(pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    def __enter__(self) -> LabServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def launch_chromium(playwright: Any) -> Any:
    """Headless Debian Chromium through a started ``sync_playwright()`` object."""
    executable = find_chromium()
    if executable is None:
        raise RuntimeError(browser_unavailable_reason() or "no Chromium found")
    return playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)


def notebook_url(server: LabServer, path: str, ui: str = "lab") -> str:
    """URL that opens ``path`` (relative to the server root) in JupyterLab or Notebook 7."""
    if ui == "lab":
        return f"{server.url}/lab/tree/{quote(path)}?reset"
    if ui == "notebook":
        return f"{server.url}/notebooks/{quote(path)}"
    raise ValueError(f"'ui' must be 'lab' or 'notebook' (got {ui!r})")


# The JavaScript below talks to the application object that JupyterLab and Notebook 7 put
# on `window.jupyterapp` when started with expose_app_in_browser.
_JS_PANEL = """
(path) => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return null;
  const match = (w) => w && w.context && w.context.path === path && w.content && w.sessionContext;
  if (match(app.shell.currentWidget)) return app.shell.currentWidget;
  for (const w of app.shell.widgets('main')) { if (match(w)) return w; }
  return null;
}
"""

_JS_READY = f"""
(path) => {{
  const panel = ({_JS_PANEL})(path);
  if (!panel || !panel.context.isReady) return false;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return !!kernel && kernel.status === 'idle' && kernel.connectionStatus === 'connected';
}}
"""

_JS_RUN_ALL = f"""
(path) => {{
  const app = window.jupyterapp;
  const panel = ({_JS_PANEL})(path);
  app.shell.activateById(panel.id);
  const run = {{done: false, ok: null, error: null}};
  window.__dlperfRun = run;
  app.commands.execute('notebook:run-all-cells').then(
    (ok) => {{ run.ok = ok === undefined ? null : ok; run.done = true; }},
    (err) => {{ run.error = String(err); run.done = true; }});
}}
"""

_JS_REPORT = f"""
(args) => {{
  const [path, mime, placeholders] = args;
  const panel = ({_JS_PANEL})(path);
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const report = {{kernel: kernel ? kernel.status : null, cells: 0, renderedCells: 0,
                   unexecuted: [], errors: [], domErrors: [], widgetOutputs: 0, widgetViews: 0,
                   placeholders: [], images: 0, brokenImages: 0}};
  // An IPython traceback: a rule of dashes, "Traceback (most recent call last)" or "Cell In[n]".
  const traceback = /(^|\\n)-{{30,}}|Traceback \\(most recent call last\\)|Cell In\\[\\d+\\]/;
  report.renderedCells = panel.content.node.querySelectorAll('.jp-Cell').length;
  panel.content.widgets.forEach((cell, index) => {{
    if (cell.model.type !== 'code') return;
    report.cells += 1;
    const source = cell.model.sharedModel.getSource();
    if (!source.trim()) return;
    if (cell.model.executionCount === null) report.unexecuted.push(index);
    // Cells meant to fail, marked the way JupyterLab and nbval both understand.
    const tags = cell.model.getMetadata('tags') || [];
    const expected = tags.includes('raises-exception') || /NBVAL_RAISES_EXCEPTION/.test(source);
    for (const out of cell.model.outputs.toJSON()) {{
      if (out.output_type === 'error' && !expected) {{
        report.errors.push({{cell: index, ename: out.ename, evalue: out.evalue}});
      }}
      if ((out.data || {{}})[mime]) report.widgetOutputs += 1;
    }}
    for (const node of cell.node.querySelectorAll('.jp-OutputArea-output')) {{
      const text = node.textContent || '';
      if (!expected && node.matches('[data-mime-type="application/vnd.jupyter.stderr"]')
          && traceback.test(text)) {{
        report.domErrors.push({{cell: index, text: text.slice(0, 600)}});
      }}
      for (const p of placeholders) {{
        if (text.includes(p) && !node.querySelector('.jp-OutputArea-output')) {{
          report.placeholders.push({{cell: index, text: text.slice(0, 200)}});
        }}
      }}
    }}
    const top = cell.node.querySelectorAll(
      '.jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output');
    for (const node of top) {{
      if (node.querySelector(':scope > .jupyter-widgets')) report.widgetViews += 1;
    }}
    for (const img of cell.node.querySelectorAll('.jp-OutputArea-output img')) {{
      report.images += 1;
      if (!img.complete || img.naturalWidth === 0) report.brokenImages += 1;
    }}
  }});
  return report;
}}
"""

_JS_EXECUTE = f"""
async (args) => {{
  const [path, code, ms] = args;
  const panel = ({_JS_PANEL})(path);
  const kernel = panel.sessionContext.session.kernel;
  const future = kernel.requestExecute({{code: code, store_history: false}});
  let out = '';
  future.onIOPub = (msg) => {{
    const t = msg.header.msg_type;
    if (t === 'stream') out += msg.content.text;
    if (t === 'execute_result') out += msg.content.data['text/plain'] + '\\n';
    if (t === 'error') out += 'ERROR ' + msg.content.ename + ': ' + msg.content.evalue + '\\n';
  }};
  const timeout = new Promise((resolve) => setTimeout(() => resolve('TIMEOUT'), ms));
  if (await Promise.race([future.done, timeout]) === 'TIMEOUT') out += 'TIMEOUT\\n';
  return out;
}}
"""

# Round trip of a slider move: from the keydown on the handle to the moment the text of the
# first `selector` element differs, as seen by a MutationObserver in the page itself.
_JS_INSTALL_PROBE = """
(selector) => {
  if (window.__dlperfProbe) return;
  const probe = {t0: null, before: null, samples: [], selector: selector};
  const text = () => { const el = document.querySelector(probe.selector); return el ? el.textContent : null; };
  document.addEventListener('keydown', () => { probe.t0 = performance.now(); probe.before = text(); }, true);
  new MutationObserver(() => {
    if (probe.t0 === null) return;
    const now = text();
    if (now !== null && now !== probe.before) {
      probe.samples.push({ms: performance.now() - probe.t0, text: now});
      probe.t0 = null;
    }
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
  window.__dlperfProbe = probe;
}
"""


def _dialog_text(page: Any) -> str:
    try:
        dialogs = page.locator(".jp-Dialog")
        return (dialogs.first.inner_text(timeout=1000) if dialogs.count() else "").strip()
    except Exception:
        return ""


def _wait_for_kernel(page: Any, server: LabServer, path: str, timeout_s: float) -> None:
    try:
        page.wait_for_function(_JS_READY, arg=path, timeout=timeout_s * 1000, polling=200)
    except Exception as exc:
        dialog = _dialog_text(page)
        raise AssertionError(
            f"{path}: no idle kernel after {timeout_s:.0f} s"
            + (f"; the page shows a dialog: {dialog!r}" if dialog else "")
            + f"\nserver log:\n{server.log_tail(1500)}"
        ) from exc


def open_notebook(
    page: Any, server: LabServer, path: str, ui: str = "lab", timeout_s: float = 60
) -> None:
    """Open ``path`` in a freshly loaded page and wait until its kernel is connected and idle."""
    page.goto(notebook_url(server, path, ui), wait_until="domcontentloaded")
    _wait_for_kernel(page, server, path, timeout_s)


_JS_OPEN_IN_APP = """
async (path) => {
  const app = window.jupyterapp;
  const widget = await app.commands.execute('docmanager:open', {path: path, factory: 'Notebook'});
  app.shell.activateById(widget.id);
  return widget.id;
}
"""

# Closes every notebook tab without the "save changes?" dialog (the copy that JupyterLab
# serves is thrown away after the tests); says how many dialogs are still open.
_JS_CLOSE_NOTEBOOKS = """
() => {
  const app = window.jupyterapp;
  let closed = 0;
  for (const w of Array.from(app.shell.widgets('main'))) {
    if (w.context && w.content && w.sessionContext) {
      w.context.model.dirty = false;
      w.dispose();
      closed += 1;
    }
  }
  return {closed: closed, dialogs: document.querySelectorAll('.jp-Dialog').length};
}
"""


def load_lab(page: Any, server: LabServer, timeout_s: float = 60) -> None:
    """Load JupyterLab once in ``page`` (no notebook open); notebooks are then opened and
    closed inside it with :func:`open_in_lab` and :func:`close_notebooks`, which spares the
    seconds of CPU that loading the whole application costs for every notebook."""
    page.goto(f"{server.url}/lab?reset", wait_until="domcontentloaded")
    page.wait_for_function(
        "() => !!(window.jupyterapp && window.jupyterapp.shell)",
        timeout=timeout_s * 1000,
        polling=200,
    )
    page.evaluate("async () => { await window.jupyterapp.restored; }")


def open_in_lab(page: Any, server: LabServer, path: str, timeout_s: float = 60) -> None:
    """Open ``path`` in the JupyterLab already loaded in ``page`` (:func:`load_lab`) and wait
    until its kernel is connected and idle."""
    page.evaluate(_JS_OPEN_IN_APP, path)
    _wait_for_kernel(page, server, path, timeout_s)


def close_notebooks(page: Any, server: LabServer) -> None:
    """Close every notebook tab of ``page`` unsaved and end every kernel of ``server``, so
    the next notebook starts as in a fresh page; a page left with a dialog open (or that
    cannot be read) is loaded again."""
    try:
        state = page.evaluate(_JS_CLOSE_NOTEBOOKS)
    except Exception:
        state = {"dialogs": -1}
    server.shutdown_kernels()
    if state["dialogs"]:
        load_lab(page, server)


def run_all_cells(page: Any, path: str, timeout_s: float = 120) -> bool | None:
    """Run every cell with JupyterLab's "Run All Cells" and wait for the kernel to go idle.

    Returns what the command returned (False when a cell failed). Raises AssertionError when
    the cells have not finished after ``timeout_s``.
    """
    page.evaluate(_JS_RUN_ALL, path)
    try:
        page.wait_for_function(
            "() => window.__dlperfRun.done", timeout=timeout_s * 1000, polling=200
        )
        page.wait_for_function(_JS_READY, arg=path, timeout=timeout_s * 1000, polling=200)
    except Exception as exc:
        raise AssertionError(
            f"{path}: the cells had not finished after {timeout_s:.0f} s"
            f" (DLPERF_BROWSER_NOTEBOOK_TIMEOUT sets the limit)"
        ) from exc
    run = page.evaluate("() => window.__dlperfRun")
    if run["error"]:
        raise AssertionError(f"{path}: Run All Cells failed in the page: {run['error']}")
    return run["ok"]


def notebook_report(page: Any, path: str) -> dict[str, Any]:
    """What the open notebook shows: errors, unexecuted cells, widget views, placeholders."""
    return page.evaluate(_JS_REPORT, [path, WIDGET_MIME, list(PLACEHOLDERS)])


def wait_for_widgets(page: Any, path: str, timeout_s: float = 30) -> dict[str, Any]:
    """Poll until no widget placeholder is left (or the time is up); return the last report."""
    deadline = time.monotonic() + timeout_s
    report = notebook_report(page, path)
    while time.monotonic() < deadline:
        pending = [p for p in report["placeholders"] if "Loading" in p["text"]]
        if not pending and report["widgetViews"] >= report["widgetOutputs"]:
            break
        time.sleep(0.25)
        report = notebook_report(page, path)
    return report


def execute_in_kernel(page: Any, path: str, code: str, timeout_s: float = 60) -> str:
    """Run ``code`` in the notebook's kernel (not in a cell); return what it printed."""
    return str(page.evaluate(_JS_EXECUTE, [path, code, timeout_s * 1000]))


def control(page: Any, description: str, kind: str = "slider") -> Any:
    """Locator of the ipywidgets control whose description is exactly ``description``.

    ``kind``: "slider" (IntSlider and friends), "text" (Text, IntText, BoundedIntText...),
    "dropdown".
    """
    classes = {
        "slider": ".widget-slider",
        "text": ".widget-text",
        "dropdown": ".widget-dropdown",
    }
    label = page.locator(
        "label.widget-label", has_text=re.compile(rf"^\s*{re.escape(description)}\s*$")
    )
    return page.locator(classes[kind]).filter(has=label)


def slider_value(slider: Any) -> int:
    """Integer shown by a slider: its readout, or the text box beside it."""
    readout = slider.locator(".widget-readout")
    if readout.count() and readout.first.is_visible():
        text = readout.first.text_content() or ""
    else:
        text = slider.locator("input").first.input_value()
    digits = re.sub(r"[^0-9-]", "", text)
    if not digits:
        raise ValueError(f"slider shows no integer (got {text!r})")
    return int(digits)


def press_slider(slider: Any, key: str, settle_s: float = 10) -> int:
    """Press ``key`` on a slider's handle (a real keyboard move); return the new value."""
    before = slider_value(slider)
    slider.locator(".noUi-handle").first.press(key)
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline:
        value = slider_value(slider)
        if value != before:
            return value
        time.sleep(0.05)
    return before


def install_round_trip_probe(page: Any, selector: str) -> None:
    page.evaluate(_JS_INSTALL_PROBE, selector)


def round_trip_ms(page: Any, slider: Any, key: str, timeout_s: float = 10) -> tuple[float, str]:
    """Press ``key`` on the slider; milliseconds until the probed text changed, and the text."""
    count = page.evaluate("() => window.__dlperfProbe.samples.length")
    slider.locator(".noUi-handle").first.press(key)
    page.wait_for_function(
        "(n) => window.__dlperfProbe.samples.length > n", arg=count, timeout=timeout_s * 1000
    )
    sample = page.evaluate("() => window.__dlperfProbe.samples.at(-1)")
    return float(sample["ms"]), str(sample["text"])


def write_notebook(path: Path, sources: list[str]) -> Path:
    """A minimal nbformat-4 notebook of code cells (a markdown cell when a source starts '#')."""
    cells: list[dict[str, Any]] = []
    for index, source in enumerate(sources):
        if source.startswith("# "):
            cells.append(
                {"cell_type": "markdown", "id": f"cell-{index}", "metadata": {}, "source": source}
            )
        else:
            cells.append(
                {
                    "cell_type": "code",
                    "id": f"cell-{index}",
                    "execution_count": None,
                    "metadata": {},
                    "outputs": [],
                    "source": source,
                }
            )
    notebook = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook, indent=1))
    return path


# The starting shape of the GEMM notebooks below: small enough that one slider step changes
# the arithmetic intensity in its first decimal.
START_SHAPE: dict[str, Any] = {"m": 1024, "n": 1024, "k": 256, "dtype": "fp16", "gpu": "A100"}


def gemm_explorer_cells(shape: dict[str, Any] = START_SHAPE) -> list[str]:
    args = ", ".join(f"{key}={value!r}" for key, value in shape.items())
    return [
        "# GemmExplorer in the browser",
        f"from dlperf_widgets import GemmExplorer\n\nexplorer = GemmExplorer({args})\nexplorer",
    ]


def plain_widget_cells(shape: dict[str, Any] = START_SHAPE) -> list[str]:
    """The same interaction built from plain ipywidgets: a 'K' slider and an HTML readout
    of the core's arithmetic intensity. It checks the harness itself, whatever the package's
    widgets do."""
    m, n, k, dt, gp = (shape[key] for key in ("m", "n", "k", "dtype", "gpu"))
    return [
        "# Plain ipywidgets in the browser",
        "import ipywidgets as widgets\n"
        "import dlperf_widgets\n\n"
        f"k = widgets.IntSlider(value={k}, min=8, max=8192, step=8, description='K')\n"
        "shown = widgets.HTML()\n\n\n"
        "def update(change=None):\n"
        f"    result = dlperf_widgets.gemm({m}, {n}, k.value, dtype={dt!r}, gpu={gp!r})\n"
        "    shown.value = f'<span class=\"dlperf-ai\">{result.arithmetic_intensity:.1f}</span>'\n\n\n"
        "k.observe(update, 'value')\n"
        "update()\n"
        "widgets.VBox([k, shown])",
        "import matplotlib.pyplot as plt\n\nplt.plot([1, 2, 4], [1, 4, 16])\nplt.show()",
    ]


def gemm_explorer_available() -> str | None:
    """None when dlperf_widgets.widgets.GemmExplorer imports, else why not."""
    try:
        from dlperf_widgets.widgets import GemmExplorer  # noqa: F401
    except ImportError as exc:
        return f"dlperf_widgets.widgets.GemmExplorer is not importable ({exc})"
    return None


def iter_notebooks(folder: Path) -> Iterator[Path]:
    yield from sorted(folder.glob("*.ipynb"))
