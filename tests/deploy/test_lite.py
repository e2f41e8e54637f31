"""The JupyterLite site (tools/build_lite.py): which notebooks go in, and what the site holds.

The build runs offline into a temporary folder; the site must hold the chosen notebooks, each
with the cell that installs the kit in the browser, the kit's wheel in the site's own package
index (with the digest the index states), and the Pyodide kernel's configuration pointing at
that index.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import build_lite  # noqa: E402


def test_a_cell_needs_torch_when_it_imports_or_uses_a_measuring_name() -> None:
    """Guards the rule that picks the site's notebooks: imports of torch, transformers or a
    measuring module of the kit count, and so do later cells using a name they bound; the
    shipped published measurements (live.traces) and the model do not."""
    assert build_lite.needs_torch("import torch\nx = torch.ones(3)")
    assert build_lite.needs_torch("import os\nimport transformers")
    assert build_lite.needs_torch("from dlperf_widgets.live.timing import (\n    time_gemm,\n)")
    assert not build_lite.needs_torch("from dlperf_widgets.live.traces import measured_gemms")
    assert not build_lite.needs_torch("import dlperf_widgets as dw\ndw.gemm(8, 8, 8)")
    assert not build_lite.needs_torch("# no torch needed here, the model runs anywhere")
    # A later cell that uses the measuring function counts too.
    cells = ["from dlperf_widgets.live.checkpointing import measure_checkpointing as mc\n",
             "print('model only')", "mc(layers=4)"]  # fmt: skip
    flagged = build_lite.torch_cells(cells)
    assert flagged == (0, 2)


def test_the_measuring_notebook_is_left_out_and_the_model_notebooks_go_in() -> None:
    """Guards the site's content: notebook 09 (whose teaching is timing on this machine) is
    left out; notebooks 00-04, whose cells are the model and shipped measurements, go in."""
    chosen = {c.path.name: c.included for c in build_lite.choose()}
    assert chosen["09_measure_for_real.ipynb"] is False
    for name in ("00_start_here", "01_gemm_and_intensity", "02_bounds_and_roofline",
                 "03_tiles_and_waves", "04_tensor_cores_and_alignment"):  # fmt: skip
        assert chosen[f"{name}.ipynb"] is True, name


def test_the_install_cell_does_nothing_outside_the_browser(run_coroutine: Any) -> None:
    """Guards downloaded copies of the site's notebooks: the install cell touches piplite only
    under Pyodide (sys.platform "emscripten"); in ordinary Python it does nothing."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    code = compile(build_lite.INSTALL_CELL, "<lite-install>", "exec", flags=flags)
    namespace: dict[str, object] = {}
    result = eval(code, namespace)  # a coroutine, as the cell holds an await
    if asyncio.iscoroutine(result):
        run_coroutine(result)
    assert "piplite" not in namespace


@pytest.mark.slow
def test_the_site_holds_notebooks_wheel_and_configuration(tmp_path: Path) -> None:
    """Guards the built site: exactly the chosen notebooks (each with the install cell in
    place of the Colab cell, the rest unchanged), the kit's wheel with its data files in the
    site's package index under the digest the index states, a Python version the wheel
    accepts, and the kernel configured to install from that index."""
    from jupyterlite_pyodide_kernel.constants import PYODIDE_PYTHON_VERSION
    from packaging.specifiers import SpecifierSet

    site = tmp_path / "site"
    choices = build_lite.build(site)
    included = {c.path.relative_to(ROOT).as_posix() for c in choices if c.included}
    served = {p.relative_to(site / "files").as_posix() for p in (site / "files").rglob("*.ipynb")}
    assert served == included
    assert "notebooks/09_measure_for_real.ipynb" not in served

    for relative in served:
        source = json.loads((ROOT / relative).read_text())
        copy = json.loads((site / "files" / relative).read_text())
        install = [c for c in copy["cells"] if c.get("id") == build_lite.INSTALL_CELL_ID]
        assert len(install) == 1, relative
        assert "".join(install[0]["source"]) == build_lite.INSTALL_CELL
        tags = [c.get("metadata", {}).get("tags", []) for c in copy["cells"]]
        assert not any("colab" in t for t in tags), f"{relative} still has its Colab cell"
        kept = [c for c in source["cells"] if "colab" not in c.get("metadata", {}).get("tags", [])]
        assert [c for c in copy["cells"] if c not in install] == kept, relative

    (wheel,) = (site / "pypi").glob("dlperf_widgets-*-py3-none-any.whl")
    index = json.loads((site / "pypi" / "all.json").read_text())
    (release,) = [r for rs in index["dlperf-widgets"]["releases"].values() for r in rs]
    assert release["filename"] == wheel.name
    assert release["digests"]["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert PYODIDE_PYTHON_VERSION in SpecifierSet(release["requires_python"])
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        extras = archive.read(metadata).decode()
    assert "dlperf_widgets/__init__.py" in names
    packaged = {Path(n).name for n in names if n.startswith("dlperf_widgets/core/data/")}
    shipped = {p.name for p in (ROOT / "dlperf_widgets" / "core" / "data").glob("*.csv")}
    assert shipped and shipped <= packaged, "the wheel lacks the GPU database"
    assert "Provides-Extra: widgets" in extras  # the install cell asks for [widgets]

    config = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert any(url.startswith("./pypi/all.json") for url in kernel["pipliteUrls"])
    extensions = {e["name"] for e in config["federated_extensions"]}
    assert extensions == set(build_lite.LAB_EXTENSIONS)
