"""ServingExplorer (an LLM server's batch, chunk and SLOs) and TraceExplorer (a profile's
timeline and the guide's fixes ranked by the time they would recover)."""

from __future__ import annotations

import html
from functools import lru_cache
from typing import Any

from ..core.inference import MODELS
from ..core.results import format_quantity
from ..core.serving import KvBudget, ServingSlo, kv_budget, serving_slo
from ..plots.serving import plot_profile_timeline, plot_slo, update_slo
from ..plots.style import style_context
from ._base import Explorer, gpu_dropdown, parse_int, widgets

__all__ = ["ServingExplorer", "TraceExplorer"]


def _text(value: Any, label: str) -> Any:
    return widgets.Text(value=str(value), description=label, continuous_update=False,
                        layout=widgets.Layout(width="190px"))  # fmt: skip


def _parse_ms(name: str, text: Any) -> float:
    from ..core._validate import check_number, describe
    from ..core.errors import InvalidParameter

    try:
        value = float(str(text).strip())
    except ValueError:
        raise InvalidParameter(f"'{name}' must be a number of ms (got {describe(text)})") from None
    return check_number(name, value, minimum=0.0, strict=True, maximum=1e6) / 1e3


class ServingExplorer(Explorer):
    """Model, GPU, prompt and output lengths, prefill chunk, block size and the two SLOs ->
    the paged KV cache (sequences that fit) and TTFT / TPOT against the decode batch, with
    the largest batch meeting both. ``.result`` is ``(ServingSlo, KvBudget)`` from
    :mod:`dlperf_widgets.core.serving`."""

    result: tuple[ServingSlo, KvBudget]

    def __init__(self, model: str = "llama-2-7b", *, gpu: str = "A100", prompt_len: int = 1024,
                 output_len: int = 256, chunk: int = 512, block_size: int = 16,
                 ttft_ms: float = 500.0, tpot_ms: float = 50.0) -> None:  # fmt: skip
        super().__init__()
        serving_slo(model, gpu, prompt_len=prompt_len, output_len=output_len, chunk=chunk,
                    ttft_slo_s=ttft_ms / 1e3, tpot_slo_s=tpot_ms / 1e3)  # validates  # fmt: skip
        gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
        controls = {
            "model": widgets.Dropdown(options=list(MODELS), value=model, description="model"),
            "gpu": gpu_dd,
            "prompt_len": _text(prompt_len, "prompt"),
            "output_len": _text(output_len, "output"),
            "chunk": _text(chunk, "chunk"),
            "block_size": _text(block_size, "block"),
            "ttft_ms": _text(ttft_ms, "TTFT ms"),
            "tpot_ms": _text(tpot_ms, "TPOT ms"),
        }
        self._artists: Any = None
        self._setup(controls, rows=[["model", "gpu"], ["prompt_len", "output_len", "chunk"],
                                    ["block_size", "ttft_ms", "tpot_ms"]])  # fmt: skip

    def _compute(self) -> tuple[ServingSlo, KvBudget]:
        c = self.controls
        g = self._gpu(c["gpu"].value)
        p = parse_int("prompt_len", c["prompt_len"].value, maximum=1 << 20)
        o = parse_int("output_len", c["output_len"].value, maximum=1 << 20)
        kv = kv_budget(c["model"].value, g, prompt_len=p, output_len=o,
                       block_size=parse_int("block_size", c["block_size"].value,
                                            maximum=4096))  # fmt: skip
        slo = serving_slo(c["model"].value, g, prompt_len=p, output_len=o,
                          chunk=parse_int("chunk", c["chunk"].value, maximum=1 << 20),
                          ttft_slo_s=_parse_ms("ttft_ms", c["ttft_ms"].value),
                          tpot_slo_s=_parse_ms("tpot_ms", c["tpot_ms"].value))  # fmt: skip
        return slo, kv

    def _render(self, result: tuple[ServingSlo, KvBudget], changed: set[str]) -> None:
        slo, kv = result
        self.output.value = _serving_html(slo, kv)
        a = self._artists
        if a is None:
            self._artists = a = plot_slo(slo, self.view.ax)
            self.view.set_dynamic([a.ttft, a.tpot, *a.slos, a.best, a.title])
            self.view.redraw(full=True)
            return
        grown = update_slo(a, slo)
        self.view.set_dynamic([a.ttft, a.tpot, *a.slos, a.best, a.title], keep_background=True)
        self.view.redraw(full=grown)


def _serving_html(slo: ServingSlo, kv: KvBudget) -> str:
    best = (f"<b class='dlperf-best-batch'>{slo.best_batch}</b> sequences, "
            f"{slo.best_tokens_per_s:,.0f} tokens/s" if slo.best_batch
            else "<b class='dlperf-best-batch' style='color:#D55E00'>no batch</b>")  # fmt: skip
    return (
        f"<div class='dlperf-summary'>Largest batch meeting both SLOs: {best} "
        "(the model's prediction, every step carrying a prefill chunk).</div>"
        f"<div>KV cache: {kv.blocks:,} blocks of {kv.block_size} tokens "
        f"({html.escape(format_quantity(kv.kv_budget_bytes, 'iB', 3))} after weights "
        f"{html.escape(format_quantity(kv.weights_bytes, 'iB', 3))}, activations and a "
        f"reserve); <b>{kv.sequences_paged:,}</b> sequences of "
        f"{kv.prompt_len + kv.output_len} tokens fit, {kv.fragmentation:.1%} of their "
        "blocks' slots empty.</div>"
    )


@lru_cache(maxsize=8)
def _explained(trace: str, gpu: str) -> Any:
    from ..live.profile import explain, shipped_profiles

    path = shipped_profiles().get(trace, trace)
    return explain(path, gpu or None)


class TraceExplorer(Explorer):
    """A profiler trace (a shipped one by name, or a path) and optionally the GPU to price
    on -> the timeline strip (measured) and the guide's fixes ranked by the time each would
    recover (the model's estimate). ``.result`` is a
    :class:`~dlperf_widgets.live.profile.ProfileReport`."""

    _figsize = (6.4, 3.0)

    def __init__(self, trace: str = "a100_alexnet_forward", *, gpu: str = "") -> None:
        super().__init__()
        from ..live.profile import shipped_profiles

        _explained(trace, gpu)  # validates
        names = list(shipped_profiles())
        controls = {
            "trace": widgets.Combobox(
                value=trace, options=names, description="trace", ensure_option=False
            ),
            "gpu": widgets.Text(
                value=gpu,
                description="price on",
                placeholder="the trace's GPU",
                continuous_update=False,
            ),
        }
        # id(report) -> (report, its axes, its PNG), oldest first
        self._drawn: dict[int, tuple[Any, Any, bytes]] = {}
        self._setup(controls, rows=[["trace", "gpu"]])

    def _compute(self) -> Any:
        c = self.controls
        return _explained(str(c["trace"].value), str(c["gpu"].value).strip())

    # traces whose drawn timeline is kept (as many as _explained keeps reports)
    _kept = 8

    def _render(self, result: Any, changed: set[str]) -> None:
        self.output.value = _findings_html(result)
        view = self.view
        # each trace gets its own axes, drawn once; switching back to a drawn trace shows its
        # axes alone and its kept PNG, without drawing or encoding again
        drawn = self._drawn
        hit = drawn.pop(id(result), None)  # each entry holds its report, so ids stay unique
        if hit is None:
            if view.ax in view.figure.axes and not any(a is view.ax for _, a, _ in drawn.values()):
                ax = view.ax  # the figure's first axes, holding no trace yet
            else:
                with style_context():
                    ax = view.figure.add_subplot()
        else:
            ax = hit[1]
        for _, other, _ in drawn.values():
            other.set_visible(False)
        ax.set_visible(True)
        view.ax = ax
        if hit is None:
            plot_profile_timeline(result, ax)
            view.redraw(full=True)
            hit = (result, ax, view.png())
            while len(drawn) >= self._kept:
                drawn.pop(next(iter(drawn)))[1].remove()
        else:
            view.show_png(hit[2])
        drawn[id(result)] = hit


def _findings_html(r: Any) -> str:
    rows = (
        "".join(
            f"<tr><td style='text-align:right'>{html.escape(format_quantity(f.recoverable_s, 's'))}"
            f"</td><td>{html.escape(f.fix)}</td><td>{html.escape(f.where)}</td>"
            f"<td>{html.escape(f.before)} &rarr; {html.escape(f.after)}</td></tr>"
            for f in r.findings
        )
        or "<tr><td colspan='4'>no fix found</td></tr>"
    )
    return (
        f"<div class='dlperf-summary'>{html.escape(r.device_name or 'GPU not recorded')}: busy "
        f"{r.gpu_busy_s / r.span_s:.0%} of {html.escape(format_quantity(r.span_s, 's'))}; "
        f"launch-bound idle {html.escape(format_quantity(r.launch_bound_idle_s, 's'))}; "
        f"<b class='dlperf-priced'>{r.priced_share:.0%}</b> of kernel time priced.</div>"
        "<table class='dlperf-findings'><tr><th>recovers</th><th>fix</th><th>where</th>"
        f"<th>before &rarr; after</th></tr>{rows}</table>"
    )
