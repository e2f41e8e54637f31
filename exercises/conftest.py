"""The student copies are generated from the solution notebooks; tests/exercises/test_release.py
runs them (every check must say "not answered yet"), so nbval need not run them again."""

collect_ignore = ["student"]
