"""Lazy access to optional dependencies, with one clear message when one is missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from .core.errors import MissingDependency

__all__ = ["require"]

_EXTRA = {
    "torch": "live",
    "matplotlib": "widgets",
    "ipywidgets": "widgets",
    "IPython": "widgets",
}


def require(module: str, purpose: str = "") -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependency` saying what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = _EXTRA.get(top, "all")
        what = f" for {purpose}" if purpose else ""
        raise MissingDependency(
            f"'{top}' is needed{what} but is not installed; install it with "
            f"pip install 'dlperf_widgets[{extra}]'"
        ) from exc
