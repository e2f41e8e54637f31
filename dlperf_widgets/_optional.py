"""Lazy access to optional dependencies, with one clear message when one is missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from .core.errors import MissingDependency

__all__ = ["missing_dependency", "require"]

_EXTRA = {
    "torch": "live",
    "matplotlib": "widgets",
    "ipywidgets": "widgets",
    "IPython": "widgets",
    "traitlets": "widgets",
    "transformers": "live",
}


# What pip installs for each extra. The kit is not on the package index, so a message names
# these packages and the install from a clone of the repository, never 'dlperf_widgets[...]'.
_PACKAGES = {
    "live": "torch transformers",
    "widgets": "ipywidgets matplotlib",
    "all": "torch transformers ipywidgets matplotlib",
}


def _message(top: str, purpose: str) -> str:
    extra = _EXTRA.get(top, "all")
    what = f" for {purpose}" if purpose else ""
    return (
        f"'{top}' is needed{what} but is not installed; install it with "
        f"pip install {_PACKAGES[extra]} (or, in a clone of the kit's repository, "
        f"pip install -e '.[{extra}]')"
    )


def missing_dependency(exc: ImportError, purpose: str = "") -> ImportError:
    """Turn an ImportError of an optional package into MissingDependency (others unchanged)."""
    top = (exc.name or "").split(".")[0]
    if top in _EXTRA:
        return MissingDependency(_message(top, purpose))
    return exc


def require(module: str, purpose: str = "") -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependency` saying what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(_message(module.split(".")[0], purpose)) from exc
