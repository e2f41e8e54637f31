"""A matplotlib figure shown in an ipywidgets Image, redrawn only as much as needed.

The figure is created once per widget. A full draw renders everything and keeps a copy
of the result; artists registered as *dynamic* are left out of that copy and drawn on top
of it. An update that only moves dynamic artists (a point on a roofline) restores the copy
and draws those artists alone (blitting); anything else asks for a full draw. Either way
the canvas is encoded to PNG once and sent as the Image's value.

A dynamic legend is the costliest artist to draw (its text is laid out and rasterised
glyph by glyph, about 10 ms) and takes few different forms: its frame is made opaque and
square, so its pixels do not depend on what lies beneath, and the pixels of each form (its
texts and colours, its place, the axes' position, the canvas size) are kept and pasted
again. An axes title, drawn over the figure's plain margin, is kept the same way.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable
from typing import Any

from .._optional import require
from ..plots.style import style_context
from ._close import close_tree

__all__ = ["FigureView"]

# PNG compression level: 1 is several times faster than the default 6 for a few kB more.
_PNG_LEVEL = 1


class FigureView:
    """One Agg figure and the ipywidgets Image that displays it.

    ``full_draws`` and ``blits`` count the two kinds of redraw (tests use them to check
    that an update redraws no more than it changed).
    """

    def __init__(
        self,
        figsize: tuple[float, float] = (6.4, 3.6),
        dpi: int = 100,
        margins: dict[str, float] | None = None,
    ) -> None:
        widgets = require("ipywidgets", "widgets")
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        with style_context():
            self.figure = Figure(figsize=figsize, dpi=dpi)
            self.canvas = FigureCanvasAgg(self.figure)
            self.ax = self.figure.add_subplot()
        self.figure.subplots_adjust(
            **(margins or {"left": 0.12, "right": 0.97, "bottom": 0.15, "top": 0.88})
        )
        width = int(figsize[0] * dpi)
        self.image = widgets.Image(
            format="png",
            layout=widgets.Layout(width=f"{width}px", max_width="100%", height="auto"),
        )
        self.image.add_class("dlperf-figure")
        self._dynamic: list[Any] = []
        self._background: Any = None
        self._pixels: dict[Any, Any] = {}
        self._png: bytes = b""
        self.full_draws = 0
        self.blits = 0

    def set_dynamic(self, artists: Iterable[Any], *, keep_background: bool = False) -> None:
        """Artists drawn on top of the kept background (the rest is in the background).

        ``keep_background``: the new list only adds artists that were never drawn into the
        background (new ones) or drops dynamic ones, so the background stays valid.
        """
        new = [a for a in artists if a is not None]
        for a in self._dynamic:
            if not any(a is b for b in new):
                a.set_animated(False)
        # drawn in z-order, as a full draw would (a label box must not cover its point)
        self._dynamic = sorted(new, key=lambda a: a.get_zorder())
        for a in self._dynamic:
            a.set_animated(True)
        if not keep_background:
            self._background = None

    def redraw(self, full: bool = True) -> None:
        """Render (everything, or only the dynamic artists) and show the PNG."""
        if full or self._background is None:
            self.canvas.draw()
            self._background = self.canvas.copy_from_bbox(self.figure.bbox)
            self.full_draws += 1
        else:
            self.canvas.restore_region(self._background)
            self.blits += 1
        for a in self._dynamic:
            if a.get_visible() and a.figure is not None:
                self._draw_artist(a)
        self._png = self._encode()
        self.image.value = self._png

    def _draw_artist(self, a: Any) -> None:
        from matplotlib.legend import Legend

        if isinstance(a, Legend):
            frame = a.get_frame()
            if frame.get_alpha() != 1.0:  # opaque and square: its pixels are its own
                frame.set_alpha(1.0)
                frame.set_boxstyle("square", pad=0.0)
            texts: tuple[str, ...] = tuple(t.get_text() for t in a.get_texts())
            colors = tuple(str(h.get_color()) if hasattr(h, "get_color") else ""
                           for h in a.legend_handles)  # fmt: skip
            key: Any = ("legend", texts, colors, a._loc)
        elif a.axes is not None and a is a.axes.title:  # over the figure's plain margin
            key = ("title", a.get_text(), a.get_position(), a.get_fontsize(), a.get_color())
        else:
            self.figure.draw_artist(a)
            return
        key = (*key, a.axes.get_position().bounds if a.axes is not None else None,
               self.canvas.get_width_height())  # fmt: skip
        kept = self._pixels.get(key)
        if kept is not None:
            self.canvas.restore_region(kept)
            return
        self.figure.draw_artist(a)
        box = a.get_window_extent().padded(2.0)  # its edge line and antialiasing too
        if len(self._pixels) >= 16:
            self._pixels.pop(next(iter(self._pixels)))
        self._pixels[key] = self.canvas.copy_from_bbox(box)

    def show_png(self, png: bytes) -> None:
        """Show a PNG this view encoded earlier (of the figure as it is drawn now)."""
        self._png = png
        self.image.value = png

    def _encode(self) -> bytes:
        pil = require("PIL.Image", "figures")
        width, height = self.canvas.get_width_height()
        img = pil.frombuffer(
            "RGBA", (width, height), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1
        )
        img = img.convert("RGB")  # the background is opaque; RGB encodes faster
        buf = io.BytesIO()
        img.save(buf, format="png", compress_level=_PNG_LEVEL)
        return buf.getvalue()

    def png(self) -> bytes:
        """The PNG of the figure as last drawn."""
        if not self._png:
            self.redraw()
        return self._png

    def png_base64(self) -> str:
        return base64.b64encode(self.png()).decode("ascii")

    def close(self) -> None:
        """Close the image widget and free the figure (its artists and pixel buffers)."""
        close_tree(self.image)
        self._background = None
        self._pixels = {}
        self._png = b""
        self.figure.clear()
