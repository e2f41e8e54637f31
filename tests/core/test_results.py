"""Guards the display of quantities: decimal traffic and bandwidth, binary capacities, times."""

import pytest

from dlperf_widgets.core.results import format_quantity


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (1.25e14, "FLOP/s", "125 TFLOP/s"),
        (900e9, "B/s", "900 GB/s"),
        (138.4e6, "B", "138.4 MB"),
        (80 * 2**30, "iB", "80 GiB"),
        (1.5 * 2**20, "iB", "1.5 MiB"),
        (1.8e-4, "s", "180 us"),
        (2.5e-3, "s", "2.5 ms"),
        (3.0, "s", "3 s"),
        (None, "B", "-"),
        (12345, "", "12,345"),
    ],
)
def test_format_quantity(value, unit, text):
    """Numbers print with the unit a reader expects: 80 GiB of memory, 900 GB/s of bandwidth."""
    assert format_quantity(value, unit) == text


def test_ipython_text_form_is_the_table():
    """In IPython a result prints as its aligned table (the HTML form is used where it can be)."""
    from IPython.lib.pretty import pretty

    from dlperf_widgets.core import gemm

    text = pretty(gemm(8192, 128, 8192, gpu="V100"))
    assert text.startswith("GEMM 8192 x 128 x 8192 (fp16) on V100-SXM2-16GB")
    assert "arithmetic intensity" in text and "124.1 FLOP/B" in text
