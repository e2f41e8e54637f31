"""`dlperf model --module`: the user's code fails as the user's error, bounded, and quietly."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time

import pytest

from dlperf_widgets.cli import main
from dlperf_widgets.commands import model as model_command
from dlperf_widgets.magics import run_line

GOOD = """
import torch

def make():
    return torch.nn.Linear(8, 4), torch.zeros(2, 8)
"""

BROKEN = {
    "import_raises": "raise ValueError('bad config file')\n",
    "import_exits": "import sys\nsys.exit(3)\n",
    "import_missing_dependency": "import no_such_dependency_of_theirs\n",
    "factory_raises": "def make():\n    raise RuntimeError('weights not found')\n",
    "factory_exits": "import sys\ndef make():\n    sys.exit('stop here')\n",
    "factory_keyboard_like": "def make():\n    raise LookupError('x' * 100000)\n",
    "forward_raises": GOOD.replace(
        "return torch.nn.Linear(8, 4), torch.zeros(2, 8)",
        "return torch.nn.Linear(8, 4), torch.zeros(2, 9)",
    ),
}


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    """A current folder holding the user's modules, not on sys.path (as for the console script)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    yield tmp_path
    for name in list(sys.modules):
        if name.startswith("umod_"):
            del sys.modules[name]


def _write(folder, name: str, source: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(source))


def _cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_the_users_exception_is_their_error_in_one_line(case, user_folder, capsys):
    """Any exception (or sys.exit) from the user's module was a traceback, a silent rc 0/3, or
    in %dlperf 'internal error, please report it'."""
    if case == "forward_raises":
        pytest.importorskip("torch")
    name = f"umod_{case}"
    _write(user_folder, name, BROKEN[case])
    code, out, err = _cli(["model", "--module", f"{name}:make"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and len(err) < 500 and "Traceback" not in err
    assert "your code" in err and "not an error of the kit" in err
    code, out, err = _cli(["model", "--module", f"{name}:make", "--json"], capsys)
    payload = json.loads(out)
    assert code == 2 and payload["parameter"] == "module"
    shown = repr(run_line(f"model --module {name}:make"))
    assert shown.startswith("error: ") and "internal error" not in shown


def test_the_modules_own_message_is_quoted(user_folder, capsys):
    """The learner needs their module's message, not the kit's guess."""
    _write(user_folder, "umod_msg", BROKEN["factory_raises"])
    _, _, err = _cli(["model", "--module", "umod_msg:make"], capsys)
    assert "RuntimeError: weights not found" in err


@pytest.mark.parametrize("spec", [".mod:f", "..x:f", "a..b:f", "a.:f", "mod:", ":f", "a b:f"])
def test_malformed_specs_are_refused_by_the_kit(spec, capsys):
    """`.mod:f` crashed the kit's parsing (a relative import without a package: TypeError)."""
    code, out, _ = _cli(["model", "--module", spec, "--json"], capsys)
    assert code == 2
    assert json.loads(out)["parameter"] == "module"


def test_a_module_in_the_current_folder_is_found(user_folder, capsys):
    """The console script does not search the current folder: a user's module there was 'not
    importable'."""
    pytest.importorskip("torch")
    _write(user_folder, "umod_here", GOOD)
    code, out, err = _cli(["model", "--module", "umod_here:make", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["name"] == "Linear"
    assert str(user_folder) not in sys.path  # the path is as it was


def test_an_edited_module_is_reloaded(user_folder, capsys):
    """A kernel kept the first version of an edited module: the error stayed the old one."""
    _write(user_folder, "umod_edit", "def make():\n    raise ValueError('first')\n")
    _cli(["model", "--module", "umod_edit:make"], capsys)
    time.sleep(0.01)
    _write(user_folder, "umod_edit", "def make():\n    raise ValueError('second')\n")
    path = user_folder / "umod_edit.py"
    os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 5))
    _, _, err = _cli(["model", "--module", "umod_edit:make"], capsys)
    assert "second" in err


def test_prints_of_the_module_stay_out_of_json(user_folder, capsys):
    """print() in the user's factory corrupted `--json` on stdout."""
    pytest.importorskip("torch")
    _write(
        user_folder,
        "umod_print",
        "print('importing!')\n"
        + GOOD.replace("def make():\n", "def make():\n    print('building the model')\n"),
    )
    code, out, err = _cli(["model", "--module", "umod_print:make", "--json"], capsys)
    assert code == 0
    json.loads(out)
    assert "building the model" in err


def test_a_module_that_runs_forever_is_stopped(user_folder, capsys):
    """No time limit on the factory: a module that never returns blocked the CLI and kernel."""
    _write(user_folder, "umod_loop", "def make():\n    while True:\n        pass\n")
    start = time.perf_counter()
    code, _, err = _cli(["model", "--module", "umod_loop:make", "--max-seconds", "0.3"], capsys)
    assert time.perf_counter() - start < 3
    assert code == 2 and "more than 0.3 s" in err


def test_a_module_that_allocates_too_much_is_stopped(user_folder, capsys, monkeypatch):
    """No memory limit on the factory: past the limit the module's allocation fails as its own
    error instead of paging the machine (the limit is lowered to 200 MB here)."""
    monkeypatch.setattr(model_command, "_module_memory_bytes", lambda: 200 * 2**20)
    _write(user_folder, "umod_big", "def make():\n    return bytearray(4 * 2**30), 1\n")
    code, _, err = _cli(["model", "--module", "umod_big:make"], capsys)
    assert code == 2 and "ran out of memory" in err


@pytest.mark.parametrize("option", [["--layers", "12"], ["--seq-len", "64"], ["--batch", "2"]])
def test_transformer_options_with_module_are_refused(option, capsys):
    """--layers and friends were silently ignored with --module."""
    argv = ["model", "--module", "dlperf_widgets.live.examples:gpt2", *option, "--json"]
    code, out, _ = _cli(argv, capsys)
    assert code == 2
    assert json.loads(out)["parameter"] == option[0][2:].replace("-", "_")


@pytest.mark.parametrize("seconds", ["0", "-1", "nan"])
def test_a_time_limit_must_be_positive(seconds, capsys):
    """--max-seconds 0 silently meant no limit."""
    argv = ["model", "--module", "x:y", "--max-seconds", seconds, "--json"]
    code, out, _ = _cli(argv, capsys)
    assert code == 2 and json.loads(out)["parameter"] == "max_seconds"


def test_gpt2_leaves_the_environment_as_it_found_it(monkeypatch):
    """live.examples.gpt2() set HF_HUB_OFFLINE=1 for the rest of the session."""
    pytest.importorskip("transformers")
    from dlperf_widgets.live.examples import gpt2

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    gpt2(layers=1, hidden=64, heads=2, seq_len=8, vocab=128)
    assert "HF_HUB_OFFLINE" not in os.environ


def test_help_says_the_module_runs_user_code(capsys):
    """The help must say plainly that --module imports and runs the user's code."""
    assert main(["model", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "imports the module and runs its code" in text
