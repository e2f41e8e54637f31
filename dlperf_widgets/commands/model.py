"""``dlperf model transformer ...`` or ``dlperf model --module pkg.mod:factory``: a whole
network's operations and runtime by class.

``--module`` names a function (``package.module:function``) that returns
``(model, example_input)``, a ``torch.nn.Module`` and a tensor or tuple of tensors; the
model runs once on the CPU under the dispatcher recorder of :mod:`dlperf_widgets.live.modules`
and every operation is priced on the GPU. ``dlperf_widgets.live.examples:gpt2`` is GPT-2
small built from its configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import os
import sys
from collections.abc import Iterator
from typing import Any

from .._limits import TimeLimitExceeded, memory_limit, time_limit
from ..core._validate import check_number, describe
from ..core.errors import DlperfError, InvalidParameter, UserCodeError
from ..core.network import transformer
from . import Command, UsageError, float_arg, int_arg

# The transformer's options and their defaults; None on the parser, so that an option given
# beside --module (where it would mean nothing) is seen and refused.
_TRANSFORMER = {
    "layers": 24,
    "hidden": 1024,
    "heads": 16,
    "seq_len": 512,
    "batch": 8,
    "vocab": 30522,
    "ffn_mult": 4,
}

MODULE_SECONDS = 300.0
"""Default time limit on a --module's factory and forward pass (``--max-seconds``)."""


def _module_memory_bytes() -> int:
    """Memory a --module may add: half of the machine's RAM (8 GiB where it cannot be read)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")) // 2
    except (AttributeError, ValueError, OSError):
        return 8 * 2**30


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "architecture",
        nargs="?",
        choices=["transformer"],
        help="network family (transformer); or give --module",
    )
    p.add_argument(
        "--module",
        metavar="PKG.MOD:FACTORY",
        help="analyse a PyTorch model: a function returning (model, example_input), "
        "e.g. dlperf_widgets.live.examples:gpt2. This imports the module and runs its code "
        "(the function and the model's forward pass) with your permissions: give only code "
        "you trust. The current folder is searched first.",
    )
    p.add_argument(
        "--max-seconds",
        type=float_arg("max-seconds"),
        help=f"with --module: stop the module's code after this many seconds ({MODULE_SECONDS:g})",
    )
    p.add_argument("--layers", type=int_arg("layers"), help="transformer blocks (24)")
    p.add_argument("--hidden", type=int_arg("hidden"), help="hidden size (1024)")
    p.add_argument("--heads", type=int_arg("heads"), help="attention heads (16)")
    p.add_argument("--seq-len", type=int_arg("seq-len"), help="sequence length (512)")
    p.add_argument("--batch", type=int_arg("batch"), help="batch size (8)")
    p.add_argument("--vocab", type=int_arg("vocab"), help="vocabulary (30522)")
    p.add_argument(
        "--ffn-mult",
        type=int_arg("ffn-mult"),
        help="feed-forward width as a multiple of hidden (4)",
    )
    p.add_argument(
        "--dtype", default=None, help="fp16, bf16, tf32, fp32, ... (fp16; a module: its own)"
    )
    p.add_argument("--gpu", default="A100", help="GPU name or alias (A100)")
    p.add_argument("--forward-only", action="store_true", help="inference: no backward passes")


# Source files of the modules --module imported, with their modification times: a module
# edited since is reloaded, so that a notebook kernel sees the user's latest code.
_IMPORTED: dict[str, tuple[str, float]] = {}


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _import_user_module(name: str) -> Any:
    """Import (or, if its file changed since, reload) the user's module ``name``."""
    here = os.getcwd()
    added = here not in sys.path and "" not in sys.path
    if added:  # the console script does not search the current folder; the user expects it
        sys.path.insert(0, here)
    try:
        module = sys.modules.get(name)
        seen = _IMPORTED.get(name)
        if module is not None and seen is not None and _mtime(seen[0]) != seen[1]:
            module = importlib.reload(module)
        elif module is None:
            module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and not name.startswith(exc.name) and not exc.name.startswith(name):
            raise _user_error(f"importing {name}", exc) from None  # a missing dependency of theirs
        raise InvalidParameter(
            f"'module' must name an importable Python module; {name} was not found in the "
            f"current folder or on PYTHONPATH (got {describe(name)})"
        ) from None
    finally:
        if added:
            sys.path.remove(here)
    path = getattr(module, "__file__", None)
    if isinstance(path, str):
        _IMPORTED[name] = (path, _mtime(path))
    return module


def _user_error(what: str, exc: BaseException) -> UserCodeError:
    """The user's code failed: one sentence quoting its own error."""
    if isinstance(exc, SystemExit):
        said = f"called sys.exit({describe(exc.code)})"
    elif isinstance(exc, MemoryError):
        said = "ran out of memory (the kit allows it half of this machine's RAM)"
    else:
        text = " ".join(str(exc).split())
        text = text if len(text) <= 200 else f"{text[:180]}... ({len(text)} characters)"
        said = f"raised {type(exc).__name__}" + (f": {text}" if text else "")
    return UserCodeError(
        f"your code failed while {what}: it {said.rstrip('.')} (not an error of the kit)"
    )


@contextlib.contextmanager
def _user_code(what: str, seconds: float) -> Iterator[None]:
    """Run the user's code: its prints go to stderr (stdout carries the result, maybe JSON),
    its time and memory are limited, and whatever it raises is reported as its own error."""
    try:
        with (
            contextlib.redirect_stdout(sys.stderr),
            time_limit(seconds),
            memory_limit(_module_memory_bytes()),
        ):
            yield
    except TimeLimitExceeded:
        raise UserCodeError(
            f"your code took more than {seconds:g} s while {what}; raise --max-seconds or "
            "make the example smaller"
        ) from None
    except DlperfError:
        raise
    except (Exception, SystemExit) as exc:  # the user's code, whatever it raised
        raise _user_error(what, exc) from None


def load_factory(spec: Any, max_seconds: float = MODULE_SECONDS) -> tuple[Any, tuple[Any, ...]]:
    """Import the ``package.module:function`` named by ``spec``, call it and return its model
    and inputs. This runs the user's code: see :func:`_user_code` for the limits."""
    if not isinstance(spec, str):
        raise InvalidParameter(
            f"'module' must look like package.module:function (got {describe(spec)})"
        )
    mod_name, sep, func_name = spec.partition(":")
    if (
        not sep
        or not func_name.isidentifier()
        or not all(part.isidentifier() for part in mod_name.split("."))
    ):
        raise InvalidParameter(
            f"'module' must look like package.module:function (got {describe(spec)})"
        )
    with _user_code(f"importing {mod_name}", max_seconds):
        mod = _import_user_module(mod_name)
    factory = getattr(mod, func_name, None)
    if not callable(factory):
        raise InvalidParameter(
            f"'module' must name a function of {mod_name} (got {describe(func_name)})"
        )
    try:
        inspect.signature(factory).bind()
    except TypeError as exc:
        raise InvalidParameter(
            f"'module' must name a function callable with no arguments (got {spec}: {exc})"
        ) from None
    except ValueError:  # a builtin without a signature: try it
        pass
    with _user_code(f"running {spec}", max_seconds):
        made = factory()
    if not (isinstance(made, tuple) and len(made) == 2):
        raise InvalidParameter(
            f"'module' must name a function returning (model, example_input) "
            f"(got {describe(type(made).__name__)} from {spec})"
        )
    model, inputs = made
    return model, inputs if isinstance(inputs, tuple) else (inputs,)


def _run(a: argparse.Namespace) -> object:
    if a.module is not None:
        if a.architecture is not None:
            raise UsageError("give either an architecture or --module, not both")
        for name in _TRANSFORMER:
            if getattr(a, name) is not None:
                raise UsageError(
                    f"'{name}' applies to the transformer architecture, not to --module "
                    f"(got --{name.replace('_', '-')} {getattr(a, name)})"
                )
        seconds = MODULE_SECONDS if a.max_seconds is None else a.max_seconds
        seconds = check_number("max_seconds", seconds, minimum=0, strict=True)
        from ..live.modules import analyze_module

        model, inputs = load_factory(a.module, seconds)
        with _user_code(f"running the forward pass of {a.module}", seconds):
            return analyze_module(
                model, *inputs, dtype=a.dtype, gpu=a.gpu, training=not a.forward_only
            )
    if a.architecture is None:
        raise UsageError("'architecture' must be given (transformer) unless --module is")
    if a.max_seconds is not None:
        raise UsageError(
            f"'max_seconds' applies to --module, not to the transformer architecture "
            f"(got --max-seconds {a.max_seconds:g})"
        )
    sizes = {
        name: default if getattr(a, name) is None else getattr(a, name)
        for name, default in _TRANSFORMER.items()
    }
    return transformer(
        sizes["layers"],
        sizes["hidden"],
        sizes["heads"],
        sizes["seq_len"],
        sizes["batch"],
        sizes["vocab"],
        sizes["ffn_mult"],
        dtype=a.dtype or "fp16",
        gpu=a.gpu,
        backward=not a.forward_only,
    )


COMMANDS = [
    Command(
        "model",
        "model a whole network (a transformer, or any PyTorch model with --module): every "
        "operation, and FLOPs and runtime by operation class",
        _configure,
        _run,
        order=40,
    ),
]
