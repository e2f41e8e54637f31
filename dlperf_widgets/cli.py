"""The ``dlperf`` command: the core's answers as aligned tables or JSON.

Exit status 0 on success, 2 on bad input (one line on stderr, never a traceback).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from .commands import execute
from .core.errors import DlperfError
from .core.results import to_jsonable

__all__ = ["main", "render"]


def render(command: object, result: object, as_json: bool) -> str:
    if as_json:
        return json.dumps(to_jsonable(result), indent=2)
    custom = getattr(command, "render", None)
    return custom(result) if custom else str(result)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        command, result, as_json = execute(args)
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    except DlperfError as exc:
        prog = getattr(exc, "prog", "dlperf")
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dlperf: interrupted", file=sys.stderr)
        return 130
    try:
        print(render(command, result, as_json))
        sys.stdout.flush()
    except BrokenPipeError:  # `dlperf gpus | head`: the reader left; not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
