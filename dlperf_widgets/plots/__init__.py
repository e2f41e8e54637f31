"""Matplotlib drawing functions: (core result, Axes) -> artists."""
