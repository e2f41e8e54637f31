"""The kit's one exception family.

Every public entry point validates its input once and raises one of these, with a message
of the form ``'m' must be a positive integer (got -3)``: the parameter, the rule, the value.
"""

from __future__ import annotations

import re

__all__ = [
    "DlperfError",
    "InvalidParameter",
    "MissingDependency",
    "UnknownGPU",
    "UserCodeError",
    "parameter_of",
]


class DlperfError(Exception):
    """Base class of every error the kit raises on purpose."""


_NAMED = re.compile(r"^(?:argument [^:]*: )?'([^']{1,60})'")
_OPTION = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)+$")  # an option's spelling: seq-len
_ARGUMENT = re.compile(r"^argument (?:--)?([\w-]{1,60})")


def parameter_of(exc: BaseException) -> str | None:
    """The parameter an error names: the first quoted name of the message (``'m' must ...``).

    Messages follow the template ``'<parameter>' must be <rule> (got <value>)``; argparse's
    own messages start ``argument --name:``. None when the message names no parameter.
    A command-line spelling (``seq-len``) is given as the Python name (``seq_len``).
    """
    explicit = getattr(exc, "parameter", None)
    if isinstance(explicit, str):
        return explicit
    text = str(exc)
    named = _NAMED.match(text)
    if named:
        return named.group(1).replace("-", "_") if _OPTION.match(named.group(1)) else named.group(1)
    argument = _ARGUMENT.match(text)
    return argument.group(1).replace("-", "_") if argument else None


class InvalidParameter(DlperfError, ValueError):
    """A parameter broke a rule (type, range, choice)."""


class UnknownGPU(DlperfError, KeyError):
    """A GPU name is not in the database; the message lists the closest names."""

    def __str__(self) -> str:  # KeyError would quote the message; keep it one plain sentence
        return str(self.args[0]) if self.args else ""


class MissingDependency(DlperfError, ImportError):
    """An optional dependency is absent; the message says which extra to install."""


class UserCodeError(DlperfError):
    """The user's own code (a module given to ``--module``) failed: the message quotes its
    error and says it came from that code, not from the kit."""

    def __init__(self, message: str, parameter: str = "module") -> None:
        super().__init__(message)
        self.parameter = parameter
