"""Speculative decoding measured on this machine: a small draft/target pair in PyTorch.

The target is a small next-token network (token and position embeddings, a tanh, a head
over the vocabulary) with fixed random weights whose head is a low-rank matrix plus a little
full-rank noise; the draft keeps only the low-rank part, so it is cheaper and agrees with the
target on most, not all, tokens, as a real draft model does. Decoding is
greedy; :func:`measure_speculative` drafts ``draft_len`` tokens, verifies them with one
batched target pass, keeps the agreeing prefix and the target's own next token (Leviathan et
al. 2023, section 2.3, with greedy acceptance), and counts what each target pass yields.

The acceptance rate is measured separately, on every position of the target's own greedy
text (does the draft's next token equal the target's there?), so the core's expectation
(1 - a^(k+1)) / (1 - a) can be checked against the counted tokens.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .._optional import require
from ..core._validate import check_int, check_number
from ..core.results import ResultMixin
from ..core.serving import expected_accepted_tokens

__all__ = ["SpeculativeMeasurement", "measure_speculative", "speculative_pair"]


def speculative_pair(
    vocab: int = 256,
    hidden: int = 256,
    rank: int = 16,
    noise: float = 0.15,
    seed: int = 0,
    positions: int = 4096,
) -> tuple[Any, Any]:
    """(target, draft): functions from 1-D tensors of tokens and positions to next-token
    logits. The target's head is a rank-``rank`` matrix plus ``noise`` x a full random one;
    the draft keeps the low-rank part only (about ``rank`` / ``hidden`` of the head's work),
    so ``noise`` sets how often the two disagree."""
    torch = require("torch", "measuring speculative decoding")
    v = check_int("vocab", vocab, allow_array=False, maximum=1 << 16)
    h = check_int("hidden", hidden, allow_array=False, maximum=1 << 14)
    r = check_int("rank", rank, allow_array=False, maximum=h)
    eps = check_number("noise", noise, minimum=0.0, maximum=10.0)
    gen = torch.Generator().manual_seed(check_int("seed", seed, minimum=0, allow_array=False))
    emb = torch.randn(v, h, generator=gen)
    npos = check_int("positions", positions, allow_array=False, maximum=1 << 16)
    pos = torch.randn(npos, h, generator=gen)  # position embedding: no greedy cycles
    a = torch.randn(h, r, generator=gen) / h**0.5
    b = torch.randn(r, v, generator=gen) / r**0.5
    head = a @ b + eps * torch.randn(h, v, generator=gen) / h**0.5

    def target(tokens: Any, positions: Any) -> Any:
        return torch.tanh(emb[tokens] + pos[positions]) @ head

    def draft(tokens: Any, positions: Any) -> Any:
        return (torch.tanh(emb[tokens] + pos[positions]) @ a) @ b

    return target, draft


@dataclass(frozen=True)
class SpeculativeMeasurement(ResultMixin):
    """Greedy speculative decoding counted on this machine's CPU (a measurement).

    ``acceptance``: share of positions of the target's greedy text where the draft picks the
    same next token; ``tokens_per_pass``: generated tokens over target passes;
    ``expected_tokens``: the core's expectation at that acceptance; ``matches_target``:
    whether the output equals plain greedy decoding with the target (it must).
    ``plain_s`` / ``speculative_s``: wall-clock time of the two decodes (timed once; for a
    figure, see ``benchmarks/bench_speculative.py``).
    """

    draft_len: int
    tokens: int
    target_passes: int
    acceptance: float
    tokens_per_pass: float
    expected_tokens: float
    matches_target: bool
    plain_s: float
    speculative_s: float


def measure_speculative(
    draft_len: int = 4, tokens: int = 400, *, noise: float = 0.15, seed: int = 0
) -> SpeculativeMeasurement:
    """Decode ``tokens`` tokens greedily with the target alone and speculatively with the
    draft, and count tokens per target pass (see :class:`SpeculativeMeasurement`)."""
    torch = require("torch", "measuring speculative decoding")
    k = check_int("draft_len", draft_len, allow_array=False, maximum=64)
    n = check_int("tokens", tokens, allow_array=False, maximum=4000)
    target, draft = speculative_pair(noise=noise, seed=seed)

    def t_at(tok: list[int], first: int) -> list[int]:
        return target(torch.tensor(tok), torch.arange(first, first + len(tok))).argmax(-1).tolist()

    with torch.no_grad():
        t0 = time.perf_counter()
        plain = [0]
        for i in range(n):
            plain.append(t_at([plain[-1]], i)[0])
        plain_s = time.perf_counter() - t0
        seq, where = torch.tensor(plain[:-1]), torch.arange(n)
        agree = (draft(seq, where).argmax(-1) == target(seq, where).argmax(-1)).double().mean()

        t0 = time.perf_counter()
        out, passes = [0], 0
        while len(out) < n + 1:
            at = len(out) - 1  # position of the last accepted token
            prop = [out[-1]]
            for j in range(k):
                nxt = draft(torch.tensor([prop[-1]]), torch.tensor([at + j])).argmax()
                prop.append(int(nxt))
            # one target pass scores the last accepted token and all k drafts
            truth = t_at(prop, at)
            passes += 1
            i = 0
            while i < k and prop[i + 1] == truth[i]:
                i += 1
            out.extend(prop[1 : i + 1])
            out.append(truth[i])  # the correction, or the bonus token after k acceptances
        spec_s = time.perf_counter() - t0
    produced = len(out) - 1
    a = float(agree)
    return SpeculativeMeasurement(
        draft_len=k,
        tokens=n,
        target_passes=passes,
        acceptance=a,
        tokens_per_pass=produced / passes,
        expected_tokens=float(expected_accepted_tokens(a, k)),
        matches_target=out[: n + 1] == plain,
        plain_s=plain_s,
        speculative_s=spec_s,
    )
