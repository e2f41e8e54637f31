"""``python -m dlperf_widgets`` is the ``dlperf`` command."""

import sys

from .cli import main

sys.exit(main())
