"""The value a plot function returns: its Axes and the artists it drew, by name."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

__all__ = ["Artists"]


class Artists(SimpleNamespace):
    """Named artists of one drawing (``.ax`` is the Axes they live in).

    Attributes hold a matplotlib artist, a list of artists, ``None``, or a setting the
    drawing keeps (a range). ``flat()`` lists every artist.
    """

    ax: Any

    def flat(self) -> list[Any]:
        out: list[Any] = []
        for name, value in vars(self).items():
            if name == "ax" or value is None:
                continue
            if isinstance(value, (list, tuple)):
                out.extend(v for v in value if hasattr(v, "draw"))
            elif hasattr(value, "draw"):
                out.append(value)
        return out
