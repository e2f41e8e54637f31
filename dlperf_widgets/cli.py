"""The ``dlperf`` command: the core's answers as aligned tables or JSON.

Exit status 0 on success, 2 on bad input (one line on stderr, never a traceback; under
``--json`` the error is ``{"error": ..., "parameter": ...}`` on stdout), 1 when the output
cannot be written (standard output closed or full).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from .commands import execute
from .core.errors import DlperfError, parameter_of
from .core.results import to_jsonable

__all__ = ["main", "render"]


def render(command: object, result: object, as_json: bool) -> str:
    if as_json:
        return json.dumps(to_jsonable(result), indent=2)
    custom = getattr(command, "render", None)
    return custom(result) if custom else str(result)


def _json_wanted(args: list[str]) -> bool:
    return "--json" in args[: args.index("--")] if "--" in args else "--json" in args


def _report(exc: DlperfError, as_json: bool) -> int:
    """An error: one line on stderr, or ``{"error", "parameter"}`` on stdout under --json."""
    if as_json:
        return _write(json.dumps({"error": str(exc), "parameter": parameter_of(exc)}), code=2)
    prog = getattr(exc, "prog", "dlperf")
    print(f"{prog}: error: {exc}", file=sys.stderr)
    return 2


def _write(text: str, code: int = 0) -> int:
    """Print ``text``; a closed, full or vanished standard output is one line on stderr."""
    if sys.stdout is None:  # started with stdout closed (`dlperf gpus >&-`)
        print("dlperf: error: standard output is closed", file=sys.stderr)
        return 1
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `dlperf gpus | head`: the reader left; not an error of ours
        _detach_stdout()
    except OSError as exc:  # `> /dev/full`
        _detach_stdout()
        reason = exc.strerror or type(exc).__name__
        print(f"dlperf: error: could not write the output ({reason})", file=sys.stderr)
        return 1
    return code


def _detach_stdout() -> None:
    """Point stdout at /dev/null so that Python's exit-time flush raises nothing more."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = _json_wanted(args)
    try:
        command, result, as_json = execute(args)
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    except DlperfError as exc:
        return _report(exc, as_json)
    except MemoryError:
        return _report(DlperfError("the command ran out of memory; try smaller sizes"), as_json)
    except KeyboardInterrupt:
        return _interrupted()
    try:
        return _write(render(command, result, as_json))
    except KeyboardInterrupt:  # Ctrl-C while a long result is rendered or written
        _detach_stdout()
        return _interrupted()


def _interrupted() -> int:
    print("dlperf: interrupted", file=sys.stderr)
    return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
