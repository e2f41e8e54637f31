"""IPython extension: ``%load_ext dlperf_widgets`` registers ``%dlperf``.

``%dlperf`` takes exactly the CLI's commands and options (``%dlperf gemm 8192 128 8192
--gpu V100``) and shows the result as an HTML table; with ``--json`` it shows the JSON.
Errors are one red line, never a traceback.
"""

from __future__ import annotations

import html
import io
import json
import shlex
from contextlib import redirect_stdout
from typing import Any

from ._optional import require
from .commands import execute
from .core.errors import DlperfError
from .core.results import to_jsonable
from .display import Html, error_html

__all__ = ["dlperf_magic", "load_ipython_extension", "run_line"]


def run_line(line: str) -> Any:
    """Run one ``%dlperf`` line and return what the cell should display."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        return error_html(f"could not split the line into words: {exc}")
    buf = io.StringIO()
    try:
        with redirect_stdout(buf):
            command, result, as_json = execute(argv, prog="%dlperf")
    except SystemExit:  # --help, --version: argparse printed into buf
        text = buf.getvalue()
        return Html(text, f"<pre>{html.escape(text)}</pre>")
    except DlperfError as exc:
        return error_html(str(exc))
    except Exception as exc:  # a bug of ours: still one line in the cell, never a traceback
        return error_html(
            f"internal error in %dlperf ({type(exc).__name__}: {exc}); please report it"
        )
    if as_json:
        text = json.dumps(to_jsonable(result), indent=2)
        return Html(text, f"<pre>{html.escape(text)}</pre>")
    if hasattr(result, "_repr_html_"):
        return result
    if isinstance(result, list) and command.render is not None:
        text = command.render(result)
        return Html(text, f"<pre>{html.escape(text)}</pre>")
    return result


def dlperf_magic(line: str) -> Any:
    """%dlperf COMMAND [ARGS]: the dlperf CLI inside a notebook (try `%dlperf --help`)."""
    return run_line(line)


# Registered without IPython's $name / {expr} expansion (what IPython's @no_var_expand sets,
# set here so that this module imports without IPython): the line reaches the kit as typed,
# and a 140 KB line is refused at once instead of being expanded for tens of seconds first.
dlperf_magic._ipython_magic_no_var_expand = True  # type: ignore[attr-defined]


def load_ipython_extension(ipython: Any) -> None:
    require("IPython", "the %dlperf magic")
    ipython.register_magic_function(dlperf_magic, magic_kind="line", magic_name="dlperf")
    from .cell_needs import register

    register(ipython)  # `# needs: torch` cells (dlperf_widgets.cell_needs)
    try:  # the timing cell magic lives with the optional live-measurement layer
        from .live.magic import dlperf_time_cell
    except ImportError:
        return
    ipython.register_magic_function(dlperf_time_cell, magic_kind="cell", magic_name="dlperf_time")
