"""PipelineExplorer: pipeline-parallel schedules (GPipe, 1F1B, interleaved 1F1B), their
bubble, the activations each stage holds, and a timeline of every forward and backward."""

from __future__ import annotations

import html
from typing import Any

from ..core._validate import check_number
from ..core.scaleout import SCHEDULES, ScheduleResult, pipeline_schedule
from ..plots.scaleout import plot_pipeline_schedule, update_pipeline_schedule
from ._base import Explorer, dropdown, parse_int, widgets

__all__ = ["PipelineExplorer"]

# Largest pipeline the explorer draws: 16 stages x 32 micro-batches x 4 chunks (4,096 ops)
# stays a readable picture and a simulation of a few milliseconds. Its bars carry no
# micro-batch labels (a text each: most of a redraw); the static plot has them.
MAX_STAGES, MAX_MICRO_BATCHES, MAX_CHUNKS = 16, 32, 4


class PipelineExplorer(Explorer):
    """Stages p, micro-batches m, schedule and (interleaved) chunks per stage v: the
    simulated timeline of one step, its bubble beside Narayanan et al. 2021's closed forms,
    and the activations every stage holds under GPipe, 1F1B and the chosen schedule.

    Times are in units of one micro-batch's forward pass through a stage, the backward
    pass taking ``backward_ratio`` of them (2: two GEMMs per forward GEMM); no
    communication time. ``.result`` is the core's
    :class:`~dlperf_widgets.core.scaleout.ScheduleResult`; ``.compare`` holds the GPipe and
    1F1B results for the same p and m (unit times).
    """

    result: ScheduleResult
    _figsize = (6.4, 3.4)
    _margins = {"left": 0.13, "right": 0.98, "bottom": 0.15, "top": 0.9}  # noqa: RUF012

    def __init__(
        self,
        stages: int = 4,
        micro_batches: int = 8,
        schedule: str = "1f1b",
        *,
        chunks: int = 2,
        backward_ratio: float = 2.0,
    ) -> None:
        super().__init__()
        p = parse_int("stages", stages, maximum=MAX_STAGES)
        m = parse_int("micro_batches", micro_batches, maximum=MAX_MICRO_BATCHES)
        v = parse_int("chunks", chunks, minimum=2, maximum=MAX_CHUNKS)
        ratio = check_number("backward_ratio", backward_ratio, minimum=0.5, maximum=4.0)
        pipeline_schedule(p, m, schedule, chunks=v, backward_time=ratio)  # validates the rest
        slider = widgets.Layout(width="330px")
        controls = {
            "stages": widgets.IntSlider(
                value=p, min=1, max=MAX_STAGES, description="stages p", layout=slider
            ),
            "micro_batches": widgets.IntSlider(
                value=m,
                min=1,
                max=MAX_MICRO_BATCHES,
                description="micro-batches m",
                layout=slider,
                style={"description_width": "initial"},
            ),
            "schedule": dropdown("schedule", list(SCHEDULES), schedule, description="schedule"),
            "chunks": widgets.IntSlider(
                value=v,
                min=2,
                max=MAX_CHUNKS,
                description="chunks v",
                layout=slider,
                disabled=schedule.strip().lower() != "interleaved",
            ),
            "backward_ratio": widgets.FloatSlider(
                value=ratio,
                min=0.5,
                max=4.0,
                step=0.25,
                description="backward / forward",
                layout=slider,
                style={"description_width": "initial"},
            ),
        }
        self.compare: dict[str, ScheduleResult] = {}
        self._compare_key: tuple[int, int] | None = None
        self._artists: Any = None
        self._setup(
            controls,
            rows=[["stages", "micro_batches"], ["schedule", "chunks"], ["backward_ratio"]],
        )

    def _react(self, name: str, value: Any) -> None:
        if name == "schedule":
            self.controls["chunks"].disabled = value != "interleaved"

    def _compute(self) -> ScheduleResult:
        c = self.controls
        p, m, tb = c["stages"].value, c["micro_batches"].value, c["backward_ratio"].value
        result = pipeline_schedule(
            p, m, c["schedule"].value, chunks=c["chunks"].value, backward_time=tb
        )
        # the two non-interleaved schedules for the memory comparison (the same p and m;
        # the activations held do not depend on the op times)
        if self._compare_key != (p, m):
            self.compare = {s: pipeline_schedule(p, m, s) for s in ("gpipe", "1f1b")}
            self._compare_key = (p, m)
        return result

    def _render(self, result: ScheduleResult, changed: set[str]) -> None:
        self.output.value = _summary(result, self.compare)
        if self._artists is None:
            self._artists = plot_pipeline_schedule(result, self.view.ax, label=False, fit="round")
            layout = None
        else:
            layout = self._artists.layout
            update_pipeline_schedule(self._artists, result)
        a = self._artists
        # the axes stay as they were unless the stages or the time axis changed: then only
        # the bars, the end line and the title are drawn again
        same = layout == a.layout
        self.view.set_dynamic([*a.bars, a.end, a.title], keep_background=same)
        self.view.redraw(full=not same)


def _summary(r: ScheduleResult, compare: dict[str, ScheduleResult]) -> str:
    p, m, v = r.stages, r.micro_batches, r.chunks
    vm = f"{v} × {m}" if v > 1 else f"{m}"
    lead = (
        f"<div class='dlperf-summary'><i>exact arithmetic</i> (simulated op by op, no "
        f"communication time): each stage idles <b class='dlperf-bubble'>"
        f"{r.bubble_fraction:.1%}</b> of the step, (p − 1) / ({'v·' if v > 1 else ''}m + p − 1)"
        f" = {p - 1} / ({vm} + {p - 1}); Narayanan et al. 2021 count the bubble against the "
        f"ideal time instead: (p − 1) / ({'v·' if v > 1 else ''}m) = "
        f"{r.formula_bubble_over_ideal:.1%}. Each micro-batch makes {r.sends_per_micro_batch} "
        f"point-to-point sends.</div>"
    )
    cols = {"gpipe": compare["gpipe"], "1f1b": compare["1f1b"]}
    if r.schedule == "interleaved":
        cols[f"interleaved (v = {v})"] = r
    head = "".join(
        f"<th style='text-align:right;padding:1px 6px'>{html.escape(k)}</th>" for k in cols
    )
    rows = []
    # stage 0 holds the most; show the first stages and the last one
    shown = list(range(p)) if p <= 6 else [0, 1, 2, p - 2, p - 1]
    for s in shown:
        cells = "".join(
            f"<td style='text-align:right;padding:1px 6px'>{c.activations_per_stage[s]:g}</td>"
            for c in cols.values()
        )
        rows.append(f"<tr><th style='text-align:left'>stage {s}</th>{cells}</tr>")
    table = (
        "<table class='dlperf-result dlperf-activations'><caption style='text-align:left'>"
        "activations held at the peak (micro-batches' worth of a stage's layers)</caption>"
        f"<tr><th></th>{head}</tr>{''.join(rows)}</table>"
    )
    return lead + table
