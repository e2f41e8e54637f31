"""Speculative decoding on this machine's CPU: the counted tokens per target pass, and the
wall-clock speed-up beside what the core's formula predicts from the measured draft cost.

Run: python benchmarks/bench_speculative.py (about a minute on a 2-core machine). The
printed times are measurements of this CPU; the predicted speed-up uses Leviathan et al.'s
improvement factor with c = draft step / target step measured here.
"""

from __future__ import annotations

import statistics
import time

import torch

from dlperf_widgets.core.serving import expected_accepted_tokens
from dlperf_widgets.live.speculative import measure_speculative, speculative_pair


def step_time(fn, n: int = 300) -> float:
    tok, pos = torch.tensor([1]), torch.tensor([1])
    with torch.no_grad():
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                fn(tok, pos).argmax()
            runs.append((time.perf_counter() - t0) / n)
    return statistics.median(runs)


def main() -> None:
    torch.set_num_threads(1)
    target, draft = speculative_pair()
    t_target, t_draft = step_time(target), step_time(draft)
    c = t_draft / t_target
    print(f"target step {t_target * 1e6:.1f} us, draft step {t_draft * 1e6:.1f} us, c = {c:.2f}")
    for k in (1, 2, 4, 8):
        r = measure_speculative(k, 1000, noise=0.2)
        e = float(expected_accepted_tokens(r.acceptance, k))
        predicted = e / (k * c + 1)
        print(
            f"k={k}: a={r.acceptance:.3f} tokens/pass {r.tokens_per_pass:.2f} (expected {e:.2f}); "
            f"speed-up measured {r.plain_s / r.speculative_s:.2f}x, formula {predicted:.2f}x"
        )


if __name__ == "__main__":
    main()
