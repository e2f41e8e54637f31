#!/usr/bin/env python3
"""Open every course notebook and exercise in Colab; point exercise links at the student copies.

    python tools/nb_colab.py            rewrite notebooks/NN_*.ipynb and exercises/NN_*.ipynb
                                        in place, then the student copies (safe to re-run)
    python tools/nb_colab.py --check    change nothing; exit 1 if a notebook needs rewriting

For each notebook (and each exercise's source notebook, from which
``python -m dlperf_widgets.exercises.release`` makes the student copy) this script, and
nothing else, maintains:

- a Colab badge on the line after the title of the first cell, opening that notebook from the
  project's repository on GitHub (for an exercise: its student copy);
- a first code cell (id ``colab-install``) that installs the kit when it runs on Colab and does
  nothing anywhere else (Binder, ``kit.py lab``, nbval);
- links to the exercises, which open the student copy (``../exercises/student/...``): with
  ``kit.py lab`` and on Binder the server's root is the repository, so the path resolves;
- the ``nbval-check-output`` tags listed in :data:`CHECK_OUTPUT` (file name -> cell ids).

The repository's address is defined once, in pyproject.toml's ``[project.urls]`` (Homepage);
the README's Binder badge is built from the same place (``binder_url``) and a test compares
them. Cells are found by id, edits are recomputed from scratch each run, so running the
script twice changes nothing the second time.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
EXERCISES = ROOT / "exercises"
STUDENT = EXERCISES / "student"
INSTALL_ID = "colab-install"
BRANCH = "main"
COLAB_BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
BADGE_LINE = re.compile(r"^\[!\[Open in Colab\]\([^)]*\)\]\([^)]*\)\n?", re.M)

# Cells whose printed numbers the course relies on: nbval compares their outputs. The
# notebooks already carry most of these tags; a cell listed here gets the tag if it lacks it.
CHECK_OUTPUT: dict[str, tuple[str, ...]] = {}


def home_url() -> str:
    """The project's Homepage from pyproject.toml's [project.urls]."""
    text = (ROOT / "pyproject.toml").read_text()
    try:
        import tomllib

        return str(tomllib.loads(text)["project"]["urls"]["Homepage"])
    except ModuleNotFoundError:  # Python 3.10: read the one line
        section = text.split("[project.urls]", 1)[1]
        found = re.search(r'^Homepage\s*=\s*"([^"]+)"', section, re.M)
        if not found:
            raise SystemExit("pyproject.toml has no [project.urls] Homepage") from None
        return found.group(1)


def github_slug(url: str | None = None) -> str:
    """'owner/name' of a https://github.com/owner/name address."""
    url = url or home_url()
    found = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?/?", url)
    if not found:
        raise SystemExit(f"the Homepage must be a GitHub repository address (got {url!r})")
    return found.group(1)


def binder_url() -> str:
    """The README's Binder badge target: JupyterLab on the first notebook."""
    return f"https://mybinder.org/v2/gh/{github_slug()}/HEAD?labpath=notebooks/00_start_here.ipynb"


def colab_url(name: str) -> str:
    """Colab's address of a course notebook, or of an exercise's student copy (the notebook a
    learner works in; its source holds the solutions)."""
    folder = "exercises/student" if name.endswith("_exercises.ipynb") else "notebooks"
    return f"https://colab.research.google.com/github/{github_slug()}/blob/{BRANCH}/{folder}/{name}"


def badge(name: str) -> str:
    return f"[![Open in Colab]({COLAB_BADGE_IMAGE})]({colab_url(name)})"


def install_source() -> str:
    return (
        "# On Google Colab: install the kit from its repository; elsewhere this cell does\n"
        "# nothing. Then choose Runtime > Change runtime type > GPU to time on a real GPU.\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    import subprocess\n"
        "\n"
        f'    kit = "dlperf_widgets[widgets] @ git+{home_url()}"\n'
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", kit], check=True)\n'
        "    from google.colab import output\n"
        "\n"
        "    output.enable_custom_widget_manager()  # Colab shows ipywidgets 8 this way"
    )


# -- links to the exercises -------------------------------------------------------------------

_SOLUTION_LINK = re.compile(
    r"\[exercises/(\d\d_\w+_exercises\.ipynb)\]\(\.\./exercises/(\d\d_\w+_exercises\.ipynb)\)"
)
_STUDENT_TEXT = re.compile(r"(?<!\[)`exercises/student/(\d\d_\w+_exercises\.ipynb)`")
# Sentences that named the solutions where a learner should open the student copy.
_REWORDED: dict[str, str] = {
    "in `exercises/03_tiles_and_waves_exercises.ipynb`; see": (
        "in [exercises/student/03_tiles_and_waves_exercises.ipynb]"
        "(../exercises/student/03_tiles_and_waves_exercises.ipynb); see"
    ),
    "**Exercises:** `exercises/09_measure_for_real_exercises.ipynb` (work in the copy under\n"
    "`exercises/student/`)": (
        "**Exercises:** [exercises/student/09_measure_for_real_exercises.ipynb]"
        "(../exercises/student/09_measure_for_real_exercises.ipynb) (solutions in\n"
        "`exercises/09_measure_for_real_exercises.ipynb`)"
    ),
}


def student_links(text: str) -> str:
    for old, new in _REWORDED.items():
        text = text.replace(old, new)
    text = _SOLUTION_LINK.sub(r"[exercises/student/\1](../exercises/student/\2)", text)
    return _STUDENT_TEXT.sub(r"[exercises/student/\1](../exercises/student/\1)", text)


# -- one notebook -----------------------------------------------------------------------------


def _with_badge(source: str, name: str) -> str:
    source = BADGE_LINE.sub("", source)
    title, _, rest = source.partition("\n")
    rest = rest.lstrip("\n")
    return f"{title}\n\n{badge(name)}\n\n{rest}" if rest else f"{title}\n\n{badge(name)}"


def transform(nb: dict, name: str) -> dict:
    """The notebook (nbformat 4 as a dict) with badge, install cell, links and tags applied."""
    nb = copy.deepcopy(nb)
    cells = nb["cells"]
    first = cells[0]
    if first["cell_type"] != "markdown":
        raise SystemExit(f"{name}: the first cell must be the markdown title")
    first["source"] = _with_badge(_text(first["source"]), name)

    install = next((c for c in cells if c.get("id") == INSTALL_ID), None)
    if install is None:
        code = [c for c in cells if c["cell_type"] == "code"]
        executed = bool(code) and all(c.get("execution_count") for c in code)
        install = {
            "cell_type": "code",
            "execution_count": None,
            "id": INSTALL_ID,
            "metadata": {},
            "outputs": [],
            "source": "",
        }
        if executed:
            # Outside Colab the cell prints nothing and defines only `sys`: a fresh run of
            # the notebook gives it count 1 and every later cell one more, as here.
            install["execution_count"] = 1
            for c in code:
                c["execution_count"] += 1
                for out in c.get("outputs", []):
                    if out.get("execution_count"):
                        out["execution_count"] += 1
        cells.insert(1, install)
    elif cells.index(install) != 1:
        cells.remove(install)
        cells.insert(1, install)
    install["source"] = install_source()
    install["metadata"] = {**install.get("metadata", {}), "tags": ["colab"]}

    for cell in cells:
        if cell["cell_type"] == "markdown":
            cell["source"] = student_links(_text(cell["source"]))
        if cell.get("id") in CHECK_OUTPUT.get(name, ()):
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if "nbval-check-output" not in tags:
                tags.append("nbval-check-output")
    return nb


def _text(source: str | list[str]) -> str:
    return source if isinstance(source, str) else "".join(source)


def notebook_paths(*folders: Path) -> list[Path]:
    """The course notebooks and the exercises' source notebooks (or those of ``folders``)."""
    return [
        p for f in folders or (NOTEBOOKS, EXERCISES) for p in sorted(f.glob("[0-9][0-9]_*.ipynb"))
    ]


def main(argv: list[str]) -> int:
    import nbformat

    check = "--check" in argv
    stale = []
    for path in notebook_paths():
        nb = nbformat.read(path, as_version=4)
        new = nbformat.from_dict(transform(nb, path.name))
        if nbformat.writes(new) == nbformat.writes(nb):
            continue
        stale.append(path.name)
        if not check:
            nbformat.write(new, path)
    sys.path.insert(0, str(ROOT))
    from dlperf_widgets.exercises.release import release_tree

    # the student copies carry the sources' badge and install cell
    stale += [
        p.relative_to(ROOT).as_posix() for p in release_tree(EXERCISES, STUDENT, write=not check)
    ]
    verb = "need rewriting" if check else "rewritten"
    print(f"{len(stale)} notebook(s) {verb}: {', '.join(stale) or 'none'}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
