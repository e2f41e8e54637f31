"""Custom GPU names cannot pass for built-in ones, nor be a megabyte long."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.gpus import custom_gpu, gpu_names, register_gpu

FIGURES = {
    "architecture": "ampere_ga100",
    "sms": 8,
    "boost_clock_mhz": 1410,
    "memory_bandwidth_bytes_per_s": 1e11,
}
LOOK_ALIKES = [
    "A100\u200b",  # zero-width space
    "\u0410100",  # Cyrillic capital A
    "\uff21\uff11\uff10\uff10",  # fullwidth A100
    "A100\u00a0",  # no-break space (not stripped as ASCII space)
    "x" * 1_000_000,
    "toy\nname",
    "",
    "  ",
]


@pytest.mark.parametrize("name", LOOK_ALIKES, ids=range(len(LOOK_ALIKES)))
def test_look_alike_names_are_refused(name):
    """These could be registered and read 'A100' in every dropdown."""
    with pytest.raises(InvalidParameter, match=r"^'name'"):
        custom_gpu(name, **FIGURES)


@pytest.mark.parametrize("name", LOOK_ALIKES[:4], ids=range(4))
def test_register_refuses_a_renamed_gpu(name):
    """A Gpu renamed with dataclasses.replace skipped custom_gpu()'s check."""
    toy = custom_gpu("toy-names-check", **FIGURES)
    with pytest.raises(InvalidParameter, match=r"^'name'"):
        register_gpu(dataclasses.replace(toy, name=name))
    assert name not in gpu_names()


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=80))
def test_any_accepted_name_is_plain_ascii(name):
    """Whatever text is tried, a name the kit accepts is printable ASCII of at most 64 chars."""
    try:
        made = custom_gpu(name, **FIGURES)
    except InvalidParameter as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 400
        return
    assert made.name.isascii() and made.name.isprintable() and len(made.name) <= 64
