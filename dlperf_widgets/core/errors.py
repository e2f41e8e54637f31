"""The kit's one exception family.

Every public entry point validates its input once and raises one of these, with a message
of the form ``'m' must be a positive integer (got -3)``: the parameter, the rule, the value.
"""

from __future__ import annotations

__all__ = ["DlperfError", "InvalidParameter", "MissingDependency", "UnknownGPU"]


class DlperfError(Exception):
    """Base class of every error the kit raises on purpose."""


class InvalidParameter(DlperfError, ValueError):
    """A parameter broke a rule (type, range, choice)."""


class UnknownGPU(DlperfError, KeyError):
    """A GPU name is not in the database; the message lists the closest names."""

    def __str__(self) -> str:  # KeyError would quote the message; keep it one plain sentence
        return str(self.args[0]) if self.args else ""


class MissingDependency(DlperfError, ImportError):
    """An optional dependency is absent; the message says which extra to install."""
