# nbgrader configuration for the dlperf_widgets exercises. Copy it to the root of your
# nbgrader course folder (next to source/), or merge these lines into your own config.
c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

# Each answer cell sets its answer to `...` above the solution, so the stub must not raise:
# an untouched student notebook then runs to the end and every check says "not answered yet".
# `python -m dlperf_widgets.exercises.release` uses the same stub.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
