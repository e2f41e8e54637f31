"""What every widget of the kit shares.

An :class:`Explorer` is an ``ipywidgets.VBox`` holding controls, one inline message line,
a figure and an HTML output. A control change calls the widget's one core function; a
:class:`~dlperf_widgets.core.errors.DlperfError` (bad text in a box, a value a rule
forbids) becomes one inline message with CSS class ``dlperf-error`` while the last good
``.result``, output and figure stay on screen. Nothing runs in the background: every
update happens inside the control's change notification.
"""

from __future__ import annotations

import contextlib
import functools
import html
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

from .._optional import require
from ..core._validate import describe
from ..core.assumptions import DEFAULT_CONTEXT, TIMING_CONTEXT_DESCRIPTIONS, TIMING_CONTEXTS
from ..core.calibration import check_context
from ..core.errors import DlperfError, InvalidParameter
from ..core.gpus import Gpu, gpu, gpu_names
from ._close import close_tree, close_value
from ._figure import FigureView

__all__ = ["MAX_DIM", "Explorer", "dropdown", "gpu_dropdown", "parse_int"]

widgets = require("ipywidgets", "widgets")
traitlets = require("traitlets", "widgets")
from ipywidgets.widgets.widget import _instances  # noqa: E402 - the registry of live widgets

# Largest matrix dimension a text box accepts (2**20): beyond what one GEMM of a model
# uses, small enough that every count stays exact.
MAX_DIM = 1 << 20

_ERROR_STYLE = "color:#D55E00;font-weight:600;margin:2px 0"


def parse_int(field: str, text: Any, *, minimum: int = 1, maximum: int = MAX_DIM) -> int:
    """A text box's content as an integer in range, or InvalidParameter naming the field.

    Accepts ``4096``, ``4_096``, ``4,096`` and integral floats such as ``4e3``.
    """
    if maximum is None:
        rule = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    else:
        rule = f"an integer between {minimum:,} and {maximum:,}"
    if isinstance(text, bool) or (isinstance(text, str) and len(text) > 40):
        raise InvalidParameter(f"'{field}' must be {rule} (got {describe(text)})")
    if isinstance(text, int):
        value = text
    else:
        s = str(text).strip().replace("_", "").replace(",", "")
        try:
            value = int(s)
        except ValueError:
            try:
                f = float(s)
            except ValueError:
                raise InvalidParameter(f"'{field}' must be {rule} (got {describe(text)})") from None
            if not f.is_integer():
                raise InvalidParameter(f"'{field}' must be {rule} (got {describe(text)})") from None
            value = int(f)
    if value < minimum or (maximum is not None and value > maximum):
        raise InvalidParameter(f"'{field}' must be {rule} (got {describe(text)})")
    return value


def dropdown(name: str, options: Sequence[Any], value: Any, **kwargs: Any) -> Any:
    """A Dropdown of ``options`` set to ``value``, or InvalidParameter naming ``name``.

    Text matches an option case-insensitively ("FP16" selects "fp16"), a number an equal
    option (8.0 selects 8): the spellings the core accepts. A value the widget cannot offer
    is refused in the kit's sentence, never as traitlets' "Invalid selection".
    """
    opts = list(options)
    chosen = _option(value, opts)
    if chosen is _MISSING:
        shown = ", ".join(str(o) for o in opts)
        raise InvalidParameter(
            f"'{name}' must be one of the widget's options {shown} (got {describe(value)})"
        )
    return widgets.Dropdown(options=opts, value=chosen, **kwargs)


_MISSING = object()


def _option(value: Any, options: list[Any]) -> Any:
    for o in options:
        if isinstance(o, str) and isinstance(value, str):
            if o.lower() == value.strip().lower():
                return o
        elif isinstance(o, int) and not isinstance(value, (bool, str)):
            try:
                if value == o:
                    return o
            except Exception:  # an object whose == raises
                continue
    return _MISSING


def context_dropdown(value: str = DEFAULT_CONTEXT) -> Any:
    """The timing context of a widget's predicted times (core.assumptions.TIMING_CONTEXTS;
    default: what the kit's own timer measures), refused in the core's sentence."""
    return widgets.Dropdown(
        options=list(TIMING_CONTEXTS), value=check_context(value), description="timing"
    )


def context_note(context: str) -> str:
    """HTML naming the timing context predicted times are for: 'kernel timing: an isolated
    kernel timed on the device (...)'."""
    return (
        f"<span class='dlperf-context'>{html.escape(context)} timing: "
        f"{html.escape(TIMING_CONTEXT_DESCRIPTIONS[context])}</span>"
    )


def gpu_dropdown(value: str | Gpu, description: str = "GPU") -> tuple[Any, dict[str, Gpu]]:
    """A Dropdown of every known GPU set to ``value`` (a name, alias or a custom Gpu).

    Returns the Dropdown and a map of the custom Gpu objects it offers beyond the database.
    """
    g = gpu(value)
    names = gpu_names()
    custom: dict[str, Gpu] = {}
    if g.name not in names:
        names = [*names, g.name]
        custom[g.name] = g
    dd = widgets.Dropdown(options=names, value=g.name, description=description)
    return dd, custom


def _guarded(init: Callable[..., None]) -> Callable[..., None]:
    """Wrap a widget's ``__init__``: if it raises, every widget it made is closed (nothing
    stays registered, nothing complains at exit) and a traitlets error becomes the kit's."""

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        before = set(_instances)
        try:
            init(self, *args, **kwargs)
        except BaseException as exc:
            _discard(self, before)
            if isinstance(exc, traitlets.TraitError):
                given = ", ".join(f"'{k}'" for k in kwargs) or "an argument"
                raise InvalidParameter(
                    f"{given} must be among the values {type(self).__name__} offers "
                    f"({' '.join(str(exc).split())[:150]})"
                ) from None
            raise

    return __init__


def _discard(widget: Any, before: set[Any]) -> None:
    """Close a half-built widget and whatever widgets its construction registered."""
    try:
        widget.close()
    except Exception:  # a half-built widget may lack what close() expects
        pass
    for key in set(_instances) - before:
        made = _instances.get(key)
        if made is not None:
            try:
                made.close()
            except Exception:
                pass


class Explorer(widgets.VBox):  # type: ignore[misc]
    """Base class: controls -> one core call -> HTML output and a figure.

    Subclasses build their controls, call :meth:`_setup`, and implement
    :meth:`_compute` (read the controls, call the core, return the result) and
    :meth:`_render` (show a result; ``changed`` names the controls that moved).
    A subclass's ``__init__`` that raises leaves no widget behind (:func:`_guarded`).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _guarded(cls.__dict__["__init__"])  # type: ignore[method-assign]

    _figsize: tuple[float, float] = (6.4, 3.6)
    _margins: ClassVar[dict[str, float] | None] = None

    def _setup(self, controls: dict[str, Any], rows: list[list[str]] | None = None) -> None:
        self.controls = controls
        self.message = widgets.HTML(value="")
        self.message.add_class("dlperf-message")
        self.output = widgets.HTML(value="")
        self.output.add_class("dlperf-output")
        self.view = FigureView(self._figsize, margins=self._margins)
        self._holding = 0
        self._pending: set[str] = set()
        self._names = {id(w): name for name, w in controls.items()}
        rows = rows or [list(controls)]
        control_box = widgets.VBox(
            [
                widgets.HBox(
                    [controls[n] for n in row],
                    layout=widgets.Layout(flex_flow="row wrap"),
                )
                for row in rows
            ]
        )
        body = widgets.HBox(
            [self.view.image, self.output],
            layout=widgets.Layout(flex_flow="row wrap", align_items="flex-start"),
        )
        self.children = (control_box, self.message, body)
        self.add_class("dlperf-widget")
        self._observe()
        self.result = self._compute()
        self._render(self.result, set(controls))

    # -- wiring ------------------------------------------------------------------------
    def _observe(self) -> None:
        """Observe every control once (calling it again adds no second observer)."""
        for w in self.controls.values():
            _unobserve(w, self._on_change)
            w.observe(self._on_change, names="value")

    @contextlib.contextmanager
    def _hold(self) -> Iterator[None]:
        """Change several controls with a single update at the end."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1

    _presets: ClassVar[dict[str, dict[str, Any]]] = {}
    _custom_gpus: dict[str, Gpu] = {}  # noqa: RUF012 - replaced per instance

    def _gpu(self, name: str) -> Gpu:
        """The Gpu behind a name of the 'GPU' dropdown (database or custom)."""
        return self._custom_gpus.get(name) or gpu(name)

    def _on_change(self, change: dict[str, Any]) -> None:
        name = self._names.get(id(change["owner"]), "")
        if name == "gpu" and "dtype" in self.controls:
            self._refresh_dtypes(change["new"])
        self._react(name, change["new"])
        if self._holding:
            self._pending.add(name)
            return
        if name == "preset":
            self._apply_preset(change["new"])
            return
        if "preset" in self.controls and self._leaves_preset(name):
            with self._hold():  # a hand-moved control leaves the preset
                self.controls["preset"].value = "custom"
        self.update({name})

    def _dtype_options(self, g: Gpu) -> list[str]:
        """The dtypes the dtype dropdown offers for ``g`` (subclasses narrow this)."""
        return g.dtypes()

    def _refresh_dtypes(self, gpu_name: str) -> None:
        """Offer the dtypes the new GPU runs; keep the current one if it can."""
        g = self._gpu(gpu_name)
        dd = self.controls["dtype"]
        names = self._dtype_options(g)
        wanted = dd.value
        with self._hold():
            dd.options = names
            dd.value = wanted if wanted in names else ("fp16" if "fp16" in names else names[0])

    def _apply_preset(self, preset: str) -> None:
        values = self._presets.get(preset, {})
        with self._hold():
            for key, value in values.items():
                control = self.controls[key]
                control.value = str(value) if isinstance(control, widgets.Text) else value
        self._react("preset", preset)
        self.update({"preset", *values})

    def _react(self, name: str, value: Any) -> None:
        """Side effects of a control change that precede the update (show/hide, enable)."""

    def _leaves_preset(self, name: str) -> bool:
        """Whether moving control ``name`` by hand switches the preset to 'custom'."""
        return True

    def update(self, changed: set[str] | None = None) -> bool:
        """Recompute from the controls and redraw; False (and a message) on bad input."""
        changed = set(changed or ()) | self._pending
        self._pending = set()
        try:
            result = self._compute()
        except DlperfError as exc:
            self._set_error(str(exc))
            return False
        self._set_error("")
        self.result = result
        self._render(result, changed)
        return True

    # -- messages ------------------------------------------------------------------------
    @property
    def error(self) -> str:
        """The inline message now shown ('' when the input is good)."""
        return self._error_text

    def _set_error(self, text: str) -> None:
        self._error_text = text
        if text:
            self.message.value = (
                f"<div class='dlperf-error' role='alert' style='{_ERROR_STYLE}'>"
                f"{html.escape(text)}</div>"
            )
        elif self.message.value:
            self.message.value = ""

    _error_text = ""

    # -- to implement ------------------------------------------------------------------------
    def _compute(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _render(self, result: Any, changed: set[str]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- static views ------------------------------------------------------------------
    def _static_html(self) -> str:
        img = f"<img src='data:image/png;base64,{self.view.png_base64()}' alt='figure'/>"
        return (
            "<div class='dlperf-widget-static' style='display:flex;flex-wrap:wrap;"
            f"gap:12px;align-items:flex-start'><div>{img}</div><div>{self.output.value}</div>"
            "</div>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        """The live widget view plus a picture of its state for viewers without a kernel."""
        data = super()._repr_mimebundle_(**kwargs)
        if data is None:  # a closed widget
            return None
        data = dict(data)
        data["text/html"] = self._static_html()
        data["image/png"] = self.view.png_base64()
        return data

    def snapshot(self) -> Any:
        """A static picture (PNG and HTML) of the current state, for a notebook's last cell."""
        return _Snapshot(self._static_html(), self.view.png())

    def close(self) -> None:
        """Close every widget this explorer made (controls, boxes, their layouts and styles),
        release its figure, and close the explorer itself; calling it twice is harmless."""
        if _exiting():  # Widget.__del__ at interpreter exit: nothing left to release
            return
        controls = getattr(self, "controls", {})
        for w in controls.values():
            _unobserve(w, self._on_change)
        seen: set[int] = {id(self)}
        for w in (
            *controls.values(),
            getattr(self, "message", None),
            getattr(self, "output", None),
        ):
            if w is not None:
                close_tree(w, seen)
        for name in self.keys:
            close_value(getattr(self, name, None), seen)
        if getattr(self, "view", None) is not None:
            self.view.close()
        self.result = None
        super().close()


def _exiting() -> bool:
    """True while the interpreter shuts down, when ipywidgets' ``__del__`` still calls
    ``close()`` but imports (matplotlib's among them) fail: "Exception ignored in
    Widget.__del__" on every widget alive at exit."""
    return sys.is_finalizing() or sys.meta_path is None


def _unobserve(w: Any, handler: Any) -> None:
    try:
        w.unobserve(handler, names="value")
    except ValueError:  # was not observing
        pass


class _Snapshot:
    """A frozen picture of a widget: shows as HTML (figure + table), or as PNG."""

    def __init__(self, markup: str, png: bytes) -> None:
        self.markup = markup
        self.png = png

    def _repr_html_(self) -> str:
        return self.markup

    def _repr_png_(self) -> bytes:
        return self.png
