"""``dlperf reconcile [TRACE ...]``: the model against recorded and published measurements."""

from __future__ import annotations

import argparse

from . import Command


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "traces",
        nargs="*",
        metavar="TRACE",
        help="shipped trace names or trace CSV files (default: every shipped trace)",
    )
    p.add_argument(
        "--workloads",
        action="store_true",
        help="report the published whole-workload measurements instead (training, prefill, "
        "decode, attention, memory), each priced kernel by kernel: the error by kind",
    )


def _run(a: argparse.Namespace) -> object:
    # live.traces needs only numpy; imported here so the CLI starts fast.
    from ..core.errors import DlperfError, parameter_of
    from ..live.traces import model_error_report

    if a.workloads:
        from ..core.errors import InvalidParameter
        from ..live.workloads import workload_error_report

        if a.traces:
            raise InvalidParameter(
                f"'traces' must be empty with --workloads (got {', '.join(a.traces)})"
            )
        return workload_error_report()

    try:
        return model_error_report(a.traces or None)
    except DlperfError as exc:
        if parameter_of(exc) is None:  # a trace's content: the TRACE argument is at fault
            exc.parameter = "traces"  # type: ignore[attr-defined]
        raise


COMMANDS = [
    Command(
        "reconcile",
        "the model's and the plain roofline's time error on every shipped measurement, "
        "by trace, GPU and dtype",
        _configure,
        _run,
        order=75,
    )
]
