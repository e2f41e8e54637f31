"""LayerChecklist and NetworkBreakdown: layers as passes with fixes; a transformer's op classes."""

from __future__ import annotations

import html
from typing import Any

from ..core.alignment import Finding
from ..core.errors import InvalidParameter
from ..core.gpus import Gpu
from ..core.layers import LAYER_KINDS, LayerResult, layer
from ..core.network import TRANSFORMER_DTYPES, NetworkResult, transformer
from ..core.results import format_quantity
from ..plots.breakdown import (
    CLASS_LABELS,
    plot_breakdown,
    plot_passes,
    update_breakdown,
    update_passes,
)
from ._base import Explorer, _unobserve, gpu_dropdown, parse_int, widgets

__all__ = ["LayerChecklist", "NetworkBreakdown"]

_OPT = "opt:"


def _option_control(option: Any, value: Any) -> Any:
    label = option.name.replace("_", " ")
    if option.type == "bool":
        return widgets.Checkbox(
            value=bool(value), description=label, indent=False, layout=widgets.Layout(width="140px")
        )
    if option.choices:
        return widgets.Dropdown(
            options=list(option.choices),
            value=value,
            description=label,
            layout=widgets.Layout(width="220px"),
        )
    if isinstance(value, (tuple, list)):
        text = "x".join(str(v) for v in value)
    else:
        text = "" if value is None else str(value)
    box = widgets.Text(
        value=text,
        description=label,
        continuous_update=False,
        layout=widgets.Layout(width="200px"),
        tooltip=option.help,
    )
    return box


def _parse_option(option: Any, control: Any) -> Any:
    if option.type == "bool" or option.choices:
        return control.value
    text = str(control.value).strip()
    if not text:
        if option.default is None:
            return None
        raise InvalidParameter(f"'{option.name}' must be given (got nothing)")
    if isinstance(option.default, (tuple, list)) or option.name == "shape":
        parts = [p for p in text.replace("×", "x").replace(",", "x").split("x") if p.strip()]
        return tuple(parse_int(option.name, p) for p in parts)
    if option.type == "int":
        minimum = 0 if option.name in ("padding",) else 1
        return parse_int(option.name, text, minimum=minimum)
    return text


class LayerChecklist(Explorer):
    """A layer's GEMM and memory passes with their limiters, and the checklist's findings.

    Pick a layer type, enter its sizes: the core lists every pass (forward, activation and
    weight gradients, memory-limited passes) and the findings of the guides' checklists.
    'apply fix' sets the parameter a finding names to its suggested value and shows the
    predicted time before and after. ``.result`` is the core's
    :class:`~dlperf_widgets.core.layers.LayerResult`.
    """

    _margins = {"left": 0.3, "right": 0.97, "bottom": 0.16, "top": 0.88}  # noqa: RUF012
    result: LayerResult

    def __init__(
        self,
        kind: str = "linear",
        *,
        dtype: str = "fp16",
        gpu: str | Gpu = "V100",
        **options: Any,
    ) -> None:
        super().__init__()
        first = layer(kind, dtype=dtype, gpu=gpu, **options)  # validates
        gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
        g = self._gpu(gpu_dd.value)
        self._kind = LAYER_KINDS[first.layer] if first.layer in LAYER_KINDS else LAYER_KINDS[kind]
        controls: dict[str, Any] = {
            "layer": widgets.Dropdown(
                options=list(LAYER_KINDS), value=self._kind.name, description="layer"
            ),
            "dtype": widgets.Dropdown(options=g.dtypes(), value=first.dtype, description="dtype"),
            "gpu": gpu_dd,
        }
        values = {**self._kind.defaults(), **first.options}
        for opt in self._kind.options:
            controls[_OPT + opt.name] = _option_control(opt, values.get(opt.name, opt.default))
        self.fix = widgets.Dropdown(
            options=[], description="finding", layout=widgets.Layout(width="420px")
        )
        self.apply_button = widgets.Button(description="apply fix", button_style="")
        self.apply_button.on_click(self._apply_fix)
        self.fix_note = widgets.HTML(value="")
        self._artists: Any = None
        self._options_box = widgets.HBox(layout=widgets.Layout(flex_flow="row wrap"))
        self._setup(controls, rows=[["layer", "dtype", "gpu"]])
        self._options_box.children = [controls[n] for n in controls if n.startswith(_OPT)]
        first_box = self.children[0]
        first_box.children = (
            *first_box.children,
            self._options_box,
            widgets.HBox([self.fix, self.apply_button]),
            self.fix_note,
        )

    # -- option controls follow the layer kind ------------------------------------------
    def _react(self, name: str, value: Any) -> None:
        if name == "layer" and value != self._kind.name:
            self._kind = LAYER_KINDS[value]
            old = [n for n in self.controls if n.startswith(_OPT)]
            for n in old:
                w = self.controls.pop(n)
                _unobserve(w, self._on_change)
                w.close()
            defaults = self._kind.defaults()
            for opt in self._kind.options:
                w = _option_control(opt, defaults.get(opt.name, opt.default))
                self.controls[_OPT + opt.name] = w
                self._names[id(w)] = _OPT + opt.name
                w.observe(self._on_change, names="value")
            self._options_box.children = [
                self.controls[n] for n in self.controls if n.startswith(_OPT)
            ]

    def _compute(self) -> LayerResult:
        c = self.controls
        opts = {opt.name: _parse_option(opt, c[_OPT + opt.name]) for opt in self._kind.options}
        opts = {k: v for k, v in opts.items() if v is not None}
        return layer(self._kind.name, dtype=c["dtype"].value, gpu=self._gpu(c["gpu"].value), **opts)

    def _fixable(self, result: LayerResult) -> list[Finding]:
        return [
            f
            for f in result.findings
            if f.suggested_value is not None and _OPT + f.parameter in self.controls
        ]

    def _apply_fix(self, _button: Any = None) -> None:
        """Set the chosen finding's parameter to its suggested value; show the gain."""
        finding = self.fix.value
        if finding is None:
            self.fix_note.value = "<i>no finding with a concrete value to apply</i>"
            return
        before = self.result
        self.controls[_OPT + finding.parameter].value = str(finding.suggested_value)
        after = self.result
        note = ""
        if finding.predicted_time_s_after is not None:
            note = (
                f" (the checklist's estimate for this fix: "
                f"{html.escape(format_quantity(finding.predicted_time_s_before, 's'))} -> "
                f"{html.escape(format_quantity(finding.predicted_time_s_after, 's'))})"
            )
        self.fix_note.value = (
            f"<div class='dlperf-fix'>{html.escape(finding.fix)}: layer predicted "
            f"{html.escape(format_quantity(before.predicted_time_s, 's'))} -> "
            f"<b>{html.escape(format_quantity(after.predicted_time_s, 's'))}</b>{note}</div>"
        )

    def _render(self, result: LayerResult, changed: set[str]) -> None:
        fixable = self._fixable(result)
        self.fix.options = [(f"{f.parameter}: {f.fix}", f) for f in fixable]
        self.fix.value = fixable[0] if fixable else None
        self.apply_button.disabled = not fixable
        self.output.value = (
            f"<div class='dlperf-summary'>predicted <b class='dlperf-time'>"
            f"{html.escape(format_quantity(result.predicted_time_s, 's'))}</b> "
            f"({html.escape(result.limiter)}-bound overall), "
            f"{len(result.findings)} finding{'s' * (len(result.findings) != 1)}</div>"
            + result._repr_html_()
        )
        view = self.view
        full = True
        if self._artists is not None:
            try:
                full = update_passes(self._artists, result)
            except ValueError:  # other passes (another layer type): draw anew
                self._artists = None
        if self._artists is None:
            view.ax.cla()
            self._artists = plot_passes(result, view.ax)
            full = True
        a = self._artists
        view.set_dynamic([*a.bars, *a.labels, a.title], keep_background=not full)
        view.redraw(full=full)


class NetworkBreakdown(Explorer):
    """A transformer's operations by class: share of FLOPs next to share of runtime.

    Tensor contractions do nearly all the FLOPs but take a much smaller share of the time;
    normalizations and element-wise operations, memory-bound, take the rest (the pattern
    of the slides' PyTorch measurement: 99.8 % of FLOPs, 61 % of runtime). ``.result`` is
    the core's :class:`~dlperf_widgets.core.network.NetworkResult`.
    """

    result: NetworkResult
    _figsize = (6.4, 3.2)
    _margins = {"left": 0.22, "right": 0.97, "bottom": 0.16, "top": 0.88}  # noqa: RUF012

    def __init__(
        self,
        layers: int = 24,
        hidden: int = 1024,
        heads: int = 16,
        seq_len: int = 512,
        batch: int = 8,
        *,
        vocab: int = 30522,
        dtype: str = "fp16",
        gpu: str | Gpu = "A100",
        backward: bool = True,
    ) -> None:
        super().__init__()
        first = transformer(
            layers, hidden, heads, seq_len, batch, vocab, dtype=dtype, gpu=gpu, backward=backward
        )
        gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
        g = self._gpu(gpu_dd.value)

        def slider(name: str, value: int, lo: int, hi: int, step: int = 1) -> Any:
            return widgets.IntSlider(
                value=value,
                min=lo,
                max=max(hi, value),
                step=step,
                description=name,
                layout=widgets.Layout(width="320px"),
            )

        controls = {
            "layers": slider("layers", layers, 1, 96),
            "hidden": slider("hidden", hidden, 64, 12288, 64),
            "heads": slider("heads", heads, 1, 128),
            "seq_len": slider("seq len", seq_len, 1, 8192),
            "batch": slider("batch", batch, 1, 512),
            "vocab": widgets.Text(
                value=str(vocab),
                description="vocab",
                continuous_update=False,
                layout=widgets.Layout(width="200px"),
            ),
            "dtype": widgets.Dropdown(
                options=self._dtype_options(g), value=first.dtype, description="dtype"
            ),
            "gpu": gpu_dd,
            "backward": widgets.Checkbox(value=backward, description="training (backward)"),
        }
        self._artists: Any = None
        self._setup(
            controls,
            rows=[
                ["layers", "hidden", "heads"],
                ["seq_len", "batch", "vocab"],
                ["dtype", "gpu", "backward"],
            ],
        )

    @classmethod
    def from_module(
        cls,
        module: Any,
        *example_inputs: Any,
        dtype: str | None = None,
        gpu: str | Gpu = "A100",
        training: bool = True,
        **example_kwargs: Any,
    ) -> NetworkBreakdown:
        """The same breakdown for a PyTorch model: its operations are recorded once at the
        dispatcher (:func:`dlperf_widgets.live.modules.trace_module`), then priced again for
        each GPU and dtype chosen in the dropdowns."""
        from ..live.modules import module_dtype, module_result, trace_module

        ops = trace_module(module, *example_inputs, training=training, **example_kwargs)
        first = module_result(ops, type(module).__name__, dtype or module_dtype(module), gpu)
        self = cls.__new__(cls)
        Explorer.__init__(self)
        self._module = (ops, first.name)
        gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
        g = self._gpu(gpu_dd.value)
        controls = {
            "dtype": widgets.Dropdown(options=g.dtypes(), value=first.dtype, description="dtype"),
            "gpu": gpu_dd,
        }
        self._artists = None
        self._setup(controls, rows=[["dtype", "gpu"]])
        return self

    def _dtype_options(self, g: Gpu) -> list[str]:
        """A traced model runs in any dtype the GPU has; the transformer's step in those
        the kernel list has a recipe for."""
        if getattr(self, "_module", None) is not None:
            return g.dtypes()
        return [d for d in g.dtypes() if d in TRANSFORMER_DTYPES]

    def _compute(self) -> NetworkResult:
        c = self.controls
        traced = getattr(self, "_module", None)
        if traced is not None:
            from ..live.modules import module_result

            return module_result(traced[0], traced[1], c["dtype"].value, self._gpu(c["gpu"].value))
        return transformer(
            c["layers"].value,
            c["hidden"].value,
            c["heads"].value,
            c["seq_len"].value,
            c["batch"].value,
            parse_int("vocab", c["vocab"].value),
            dtype=c["dtype"].value,
            gpu=self._gpu(c["gpu"].value),
            backward=c["backward"].value,
        )

    def _render(self, result: NetworkResult, changed: set[str]) -> None:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(CLASS_LABELS.get(k, k))}</th>"
            f"<td style='text-align:right;padding:1px 8px'>{v['flops_share']:.2%}</td>"
            f"<td style='text-align:right;padding:1px 8px'>{v['runtime_share']:.1%}</td></tr>"
            for k, v in result.by_class.items()
        )
        self.output.value = (
            f"<div class='dlperf-summary'>{html.escape(format_quantity(result.flops, 'FLOP'))}, "
            f"predicted {html.escape(format_quantity(result.total_time_s, 's'))} per step</div>"
            "<table class='dlperf-result dlperf-breakdown'><tr><th></th><th>FLOPs</th>"
            f"<th>runtime</th></tr>{rows}</table>"
        )
        view = self.view
        if self._artists is None:
            self._artists = plot_breakdown(result, view.ax)
            a = self._artists
            view.set_dynamic([*a.flops, *a.runtime, *a.values, a.title])
            view.redraw(full=True)
            return
        update_breakdown(self._artists, result)
        view.redraw(full=False)
