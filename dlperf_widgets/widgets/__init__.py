"""Interactive widgets (ipywidgets + matplotlib)."""
