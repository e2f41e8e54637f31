#!/usr/bin/env python3
"""Build a JupyterLite site of the course: the notebooks run in the browser, no server.

    python tools/build_lite.py                      # -> build/lite/ (Pyodide from its CDN)
    python tools/build_lite.py --pyodide pyodide-314.0.6.tar.bz2   # Pyodide served by the site
    python tools/build_lite.py --list               # which notebooks, and why

Works offline with the `lite` extra installed (jupyterlite-core, jupyterlite-pyodide-kernel):
the kit's wheel is built from this checkout, copied into the site's own package index
(``pypi/``), and every notebook in the site starts with a cell that installs it with piplite on
first run. Pyodide itself, numpy and matplotlib are Pyodide packages, loaded by the browser
from Pyodide's CDN unless ``--pyodide`` puts a Pyodide distribution into the site
(deploy/README.md, "A site in the browser").

Only notebooks that stand without PyTorch go in: a notebook is left out when more than
MAX_TORCH_SHARE of its code cells need PyTorch (they import torch or transformers, or a
measuring module of ``dlperf_widgets.live``); the others keep those few cells, which say in
one line that PyTorch is missing there.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "build" / "lite"
SOURCES = (ROOT / "notebooks", ROOT / "exercises" / "student")
# A notebook whose live cells are a side dish stays; one whose teaching is the measurement
# (09, measuring for real; 08, measured memory beside the model) goes.
MAX_TORCH_SHARE = 0.2
# Modules of dlperf_widgets.live that read shipped measurements and need no PyTorch.
TORCH_FREE_LIVE = frozenset({"traces"})
TORCH_MODULES = ("torch", "transformers")
IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+(?:\(([^)]*)\)|([\w \t,]+))"
    r"|import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?)",
    re.MULTILINE,
)
# Lab extensions the site needs: widgets, and the Pyodide kernel (with piplite's wheels).
LAB_EXTENSIONS = ("@jupyter-widgets/jupyterlab-manager", "@jupyterlite/pyodide-kernel-extension")
INSTALL_CELL_ID = "lite-install"
INSTALL_CELL = """\
# In the browser (JupyterLite): install the kit from the wheel this site ships, on first run.
# Elsewhere this cell does nothing.
import sys

if sys.platform == "emscripten":
    import piplite

    await piplite.install(["dlperf_widgets[widgets]"])"""


@dataclass(frozen=True)
class Choice:
    path: Path
    code_cells: int
    torch_cells: tuple[int, ...]

    @property
    def share(self) -> float:
        return len(self.torch_cells) / max(self.code_cells, 1)

    @property
    def included(self) -> bool:
        return self.share <= MAX_TORCH_SHARE


def _needs_torch_module(module: str) -> bool:
    top = module.split(".")[0]
    if top in TORCH_MODULES:
        return True
    parts = module.split(".")
    return (
        parts[:2] == ["dlperf_widgets", "live"]
        and len(parts) > 2
        and parts[2] not in TORCH_FREE_LIVE
    )


def torch_names(source: str) -> set[str]:
    """Names a cell binds from PyTorch, transformers or a measuring module of the kit."""
    names = set()
    for match in IMPORT.finditer(source):
        from_module, listed, inline, module, alias = match.groups()
        if from_module and _needs_torch_module(from_module):
            imported = (listed or inline).replace("\n", " ").split(",")
            names |= {n.split()[-1] for n in imported if n.strip()}
        elif module and _needs_torch_module(module):
            names.add(alias or module.split(".")[0])
    return names


def torch_cells(sources: list[str]) -> tuple[int, ...]:
    """Which code cells need PyTorch: those that import it (or transformers, or a measuring
    module of dlperf_widgets.live), and those that use a name such an import bound earlier."""
    bound: set[str] = set()
    flagged = []
    for index, source in enumerate(sources):
        new = torch_names(source)
        if new or any(re.search(rf"\b{re.escape(name)}\b", source) for name in bound):
            flagged.append(index)
        bound |= new
    return tuple(flagged)


def needs_torch(source: str) -> bool:
    """Whether one cell, on its own, needs PyTorch."""
    return bool(torch_cells([source]))


def survey(path: Path) -> Choice:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    return Choice(path, len(sources), torch_cells(sources))


def choose(sources: tuple[Path, ...] = SOURCES) -> list[Choice]:
    return [survey(path) for folder in sources for path in sorted(folder.glob("[0-9]*.ipynb"))]


def site_copy(notebook: dict) -> dict:
    """The notebook as the site serves it: the install cell first among the code cells (in
    place of the Colab install cell where there is one)."""
    out = copy.deepcopy(notebook)
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "id": INSTALL_CELL_ID,
        "metadata": {"tags": ["lite"]},
        "outputs": [],
        "source": INSTALL_CELL.splitlines(keepends=True),
    }
    cells = out["cells"]
    colab = [i for i, c in enumerate(cells) if "colab" in c.get("metadata", {}).get("tags", [])]
    if colab:
        cells[colab[0]] = cell
    else:
        first_code = next((i for i, c in enumerate(cells) if c["cell_type"] == "code"), len(cells))
        cells.insert(first_code, cell)
    return out


# What the wheel is built from (pyproject.toml names the package, its data and its readme).
WHEEL_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "dlperf_widgets")


def build_wheel(into: Path) -> Path:
    """The kit's wheel, built from a copy of this checkout's package (so the build leaves
    nothing in the checkout), without the network where setuptools is installed (then no
    isolated build environment has to be downloaded)."""
    source = into / "source"
    for name in WHEEL_SOURCES:
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, source / name)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(into), str(source)]
    if importlib.util.find_spec("setuptools") is not None:
        cmd.insert(5, "--no-build-isolation")
    subprocess.run(cmd, check=True, cwd=into)
    (wheel,) = into.glob("dlperf_widgets-*.whl")
    return wheel


def lab_extension_dirs() -> list[str]:
    found = []
    for name in LAB_EXTENSIONS:
        where = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / name
        if not (where / "package.json").exists():
            raise SystemExit(f"lab extension {name} is missing: install the 'lite' extra")
        found.append(str(where))
    return found


def build(
    out: Path = DEFAULT_OUT, pyodide: str | None = None, wheels: tuple[Path, ...] = ()
) -> list[Choice]:
    """Build the site into ``out`` (replaced); return the survey of the notebooks.
    ``wheels``: more pure-Python wheels for the site's own index (e.g. ipywidgets)."""
    choices = choose()
    with tempfile.TemporaryDirectory(prefix="dlperf-lite-") as tmp:
        lite_dir = Path(tmp)
        for choice in choices:
            if not choice.included:
                continue
            folder = lite_dir / "content" / choice.path.parent.relative_to(ROOT)
            folder.mkdir(parents=True, exist_ok=True)
            notebook = json.loads(choice.path.read_text(encoding="utf-8"))
            text = json.dumps(site_copy(notebook), indent=1, ensure_ascii=False) + "\n"
            (folder / choice.path.name).write_text(text, encoding="utf-8")
        wheel = build_wheel(lite_dir / "wheels")
        config: dict[str, dict[str, object]] = {
            "LiteBuildConfig": {
                "contents": ["content"],
                "output_dir": str(out),
                # only the extensions the site needs, not every one installed here
                "ignore_sys_prefix": True,
                "federated_extensions": lab_extension_dirs(),
            },
            "PipliteAddon": {"piplite_urls": [str(wheel), *(str(w.resolve()) for w in wheels)]},
        }
        if pyodide:
            config["PyodideAddon"] = {"pyodide_url": pyodide}
        (lite_dir / "jupyter_lite_config.json").write_text(json.dumps(config, indent=2))
        (lite_dir / "jupyter-lite.json").write_text(
            json.dumps({"jupyter-config-data": {"appName": "dlperf_widgets course"}}, indent=2)
        )
        if out.exists():
            shutil.rmtree(out)
        done = subprocess.run(
            [sys.executable, "-m", "jupyterlite_core", "build", "--lite-dir", str(lite_dir)],
            cwd=lite_dir,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"jupyter lite build failed:\n{done.stdout}\n{done.stderr}")
    return choices


def describe(choices: list[Choice]) -> str:
    lines = []
    for c in choices:
        verdict = "in the site" if c.included else "left out"
        lines.append(
            f"{c.path.relative_to(ROOT)}: {len(c.torch_cells)} of {c.code_cells} code cells "
            f"need PyTorch ({c.share:.0%}): {verdict}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the site's folder")
    parser.add_argument(
        "--pyodide",
        help="URL or path of a Pyodide distribution archive to serve from the site itself "
        "(default: Pyodide from its CDN)",
    )
    parser.add_argument(
        "--wheel",
        type=Path,
        action="append",
        default=[],
        help="another pure-Python wheel for the site's package index (repeatable), so that "
        "the browser need not fetch it from PyPI",
    )
    parser.add_argument("--list", action="store_true", help="only say which notebooks go in")
    args = parser.parse_args(argv)
    if args.list:
        print(describe(choose()))
        return 0
    missing = [str(w) for w in args.wheel if not w.name.endswith(".whl") or not w.is_file()]
    if missing:
        parser.error(f"'--wheel' must name a wheel file (got {missing[0]!r})")
    choices = build(args.out.resolve(), args.pyodide, tuple(args.wheel))
    kept = sum(c.included for c in choices)
    print(f"[build_lite] {kept} of {len(choices)} notebooks in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
