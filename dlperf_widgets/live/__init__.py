"""Optional measurement with PyTorch: timing, device detection, and CPU demonstrations.

Nothing here imports torch at module import time; each function asks for it through
``dlperf_widgets._optional.require`` so a missing torch gives one sentence saying to install
the ``live`` extra.
"""
