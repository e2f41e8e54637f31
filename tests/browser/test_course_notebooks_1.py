"""The course notebooks in JupyterLab in real Chromium, part 1 of two (the notebooks at
places 1, 3, 5, ... of the sorted ``notebooks/``; ``lab_checks.py`` says what is checked).
Two files, so that two pytest-xdist workers run the halves at once."""

import lab_checks
import pytest

lab_checks.skip_module_if_unavailable()
pytestmark = pytest.mark.slow

test_notebook_runs_in_jupyterlab = lab_checks.notebook_test(part=1)
