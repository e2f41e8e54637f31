"""`dlperf reconcile FILE` and `%dlperf reconcile` on crafted trace files: one line, exit 2."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hostile_support import run_limited
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlperf_widgets.cli import main
from dlperf_widgets.live.traces import MAX_TRACE_BYTES, model_error_report
from dlperf_widgets.magics import run_line

HEADER = "suite,op,dtype,m,n,k,batch,measured_time_s"
NUMBERS = [
    "4096",
    "1",
    "0",
    "-3",
    "1.5",
    "inf",
    "-inf",
    "nan",
    "1e400",
    str(2**63),
    "1e-320",
    "1e308",
    "-1e-3",
    "",
    "abc",
    "1e-3",
    "2e-5",
    " 7 ",
    '"8,9"',
    "9" * 5000,
]
number = st.one_of(st.sampled_from(NUMBERS), st.floats().map(repr), st.integers().map(str))
row = st.tuples(
    st.sampled_from(["sq", "", "a,b", '"q"']),
    st.sampled_from(["gemm", "linear", ""]),
    st.sampled_from(["fp16", "bf16", "fp7", ""]),
    number,
    number,
    number,
    number,
    number,
)
gpu_line = st.sampled_from(["#! gpu: A100", "#! gpu: V100", "#! gpu: nope", "", "#! gpu:"])


def _write(folder: Path, name: str, data: bytes) -> str:
    path = folder / f"{name}.csv"
    path.write_bytes(data)
    return str(path)


def _assert_one_line_error_or_table(argv: list[str], capsys) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 2), (code, err)
    assert "Traceback" not in out + err
    if code == 2:
        assert out == "" and err.count("\n") == 1 and len(err) < 500


def _assert_json(argv: list[str], capsys) -> None:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code in (0, 2) and err == ""
    # strict JSON: no NaN or Infinity tokens
    payload = json.loads(out, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))
    if code == 2:
        assert payload["parameter"] == "traces", payload


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(gpu=gpu_line, rows=st.lists(row, min_size=0, max_size=6))
def test_hypothesis_traces_give_a_table_or_one_line(gpu, rows, capsys):
    """Crafted traces gave 15 tracebacks in 55 tries (nan/inf/1e400 sizes and times ...)."""
    text = "\n".join([gpu, HEADER, *(",".join(r) for r in rows)]) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "crafted", text.encode())
        _assert_one_line_error_or_table(["reconcile", path], capsys)
        _assert_json(["reconcile", path], capsys)
        shown = run_line(f"reconcile {path}")
        assert "internal error" not in repr(shown)


BAD_FILES = {
    "utf16": "#! gpu: A100\nsuite,op,dtype,measured_time_s\nsq,gemm,fp16,1e-3\n".encode("utf-16"),
    "latin1": b"#! gpu: A100\nsuite,op,dtype,measured_time_s\n\xe9,gemm,fp16,1e-3\n",
    "wide_field": b"#! gpu: A100\nsuite,op,dtype,measured_time_s\n"
    + b"a" * 140_000
    + b",gemm,fp16,1e-3\n",
    "nul": b"#! gpu: A100\nsuite,op,dtype,measured_time_s\nsq\x00,gemm,fp16,1e-3\n",
}
CONTENT = {
    "nan_time": "nan",
    "inf_time": "inf",
    "subnormal_time": "1e-320",
    "absurd_time": "1e308",
    "negative_time": "-1e-3",
}
SIZES = {"inf_size": "inf", "huge_size": "1e400", "int64_size": str(2**63), "fraction": "1.5"}


def _gemm_trace(m: str = "4096", time_s: str = "1e-3") -> bytes:
    return f"#! gpu: A100\n{HEADER}\nsq,gemm,fp16,{m},4096,4096,1,{time_s}\n".encode()


CASES = {
    **BAD_FILES,
    **{k: _gemm_trace(time_s=v) for k, v in CONTENT.items()},
    **{k: _gemm_trace(m=v) for k, v in SIZES.items()},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_crafted_trace_is_refused_in_one_line(name, tmp_path, capsys):
    """Each of these was a traceback, or (negative times, fractional sizes) accepted silently."""
    path = _write(tmp_path, name, CASES[name])
    assert main(["reconcile", path]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert main(["reconcile", path, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["parameter"] == "traces"
    shown = repr(run_line(f"reconcile {path}"))
    assert shown.startswith("error: ") and "internal error" not in shown


def test_a_valid_trace_still_reconciles(tmp_path, capsys):
    """The checks refuse nonsense only: a plausible GEMM row is reconciled as before."""
    path = _write(tmp_path, "fine", _gemm_trace())
    assert main(["reconcile", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["count"] == 1


def test_one_trace_name_is_one_trace_not_its_characters():
    """model_error_report('xla_h100-sxm') iterated the name by character."""
    assert model_error_report("xla_h100-sxm").traces == ("xla_h100-sxm",)


def test_a_trace_over_the_size_cap_is_refused_unread(tmp_path, capsys):
    """A 14 MB trace peaked at 315 MB: files over the cap are refused before reading."""
    path = tmp_path / "large.csv"
    with path.open("wb") as f:
        f.write(_gemm_trace())
        f.truncate(MAX_TRACE_BYTES + 1)
    assert main(["reconcile", str(path)]) == 2
    assert "MiB" in capsys.readouterr().err


def test_the_largest_accepted_trace_stays_within_memory_and_time(tmp_path):
    """A trace just under the cap reconciles in a few seconds and well under 1 GB."""
    path = tmp_path / "largest.csv"
    line = "sq,gemm,fp16,4096,4095,1024,1,1.0e-4\n"
    head = f"#! gpu: A100\n{HEADER}\n"
    count = (MAX_TRACE_BYTES - len(head)) // len(line)
    path.write_text(head + line * count)
    run_limited(
        f"from dlperf_widgets.cli import main\nassert main(['reconcile', {str(path)!r}]) == 0\n",
        seconds=30,
    )
