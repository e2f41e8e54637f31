"""Settings shared by the whole test suite.

Property-based tests (hypothesis) search random inputs during development, which is how they
find new bugs. Under CI (the environment variable CI is set, as `.ci/run` is started) they run
derandomized: the same examples every time, so a submission's result does not depend on luck;
set DLPERF_HYPOTHESIS=random to search at random there too.
"""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") and os.environ.get("DLPERF_HYPOTHESIS") != "random":
    settings.load_profile("ci")

# A local calibration saved on this machine ('dlperf calibrate') must not change what the tests
# see: every test, and every process they start, reads an empty configuration folder.
os.environ["DLPERF_CONFIG_DIR"] = tempfile.mkdtemp(prefix="dlperf-test-config-")


@pytest.fixture
def close_after():
    """Close every widget a test registers, so no comm or figure outlives it."""
    made = []
    yield made.append
    for w in made:
        w.close()
