"""Model FLOPs utilization (MFU) and hardware FLOPs utilization (HFU).

MFU (Chowdhery et al. 2022, "PaLM", section 4.1 and Appendix B) is the throughput a
training run achieves, counted in the FLOPs the *model* needs, over the peak of the GPUs:

    MFU = tokens/s x model FLOPs per token / (GPUs x peak FLOP/s)

Model FLOPs per token of a dense decoder-only transformer with N parameters (embeddings
excluded), L layers, hidden size h and sequence length s (PaLM, Appendix B):

    6 N + 12 L h s

6 N: each weight takes part in one multiply-add (2 FLOPs) in the forward pass and two in the
backward pass (input gradient and weight gradient); 12 L h s: the attention scores Q K^T and
the weighted sum with V, 4 L h s FLOPs per token forward, times 3. Narayanan et al. 2021
("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
section 5.1) count the same per iteration as 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) without
recomputation (the tests check that the two agree).

HFU counts the FLOPs the hardware really executes, including recomputation for gradient
checkpointing (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", section 6): full recomputation repeats the forward pass (8 N + 16 L h s
per token); selective recomputation repeats only the attention scores (+ 4 L h s). MFU is
the number to compare across runs, because it does not reward wasted work.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import ClassVar

from ._validate import check_choice, check_int, check_number, describe
from .errors import InvalidParameter
from .gpus import Gpu, _read_csv
from .gpus import gpu as _gpu
from .results import ResultMixin

__all__ = [
    "RECOMPUTE",
    "MfuResult",
    "PublishedMfu",
    "megatron_flops_per_iteration",
    "mfu",
    "published_mfu",
    "transformer_flops_per_token",
    "transformer_params",
]

RECOMPUTE = ("none", "selective", "full")


def transformer_params(layers: int, hidden: int, *, ffn_mult: int = 4) -> float:
    """Weights of the transformer blocks (no embeddings, biases or norms): (4 + 2 f) L h^2.

    Q, K, V and the output projection are four h x h matrices; the MLP two h x f h ones
    (f = 4 gives the familiar 12 L h^2).
    """
    layers = check_int("layers", layers, allow_array=False)
    hidden = check_int("hidden", hidden, allow_array=False)
    ffn_mult = check_int("ffn_mult", ffn_mult, allow_array=False)
    return float((4 + 2 * ffn_mult) * layers * hidden * hidden)


def transformer_flops_per_token(
    params: float,
    *,
    layers: int = 0,
    hidden: int = 0,
    seq_len: int = 0,
    recompute: str = "none",
    attention_width: int = 0,
) -> float:
    """Training FLOPs per token, PaLM's 6 N + 12 L H Q s (model FLOPs, ``recompute='none'``).

    ``layers``, ``hidden`` and ``seq_len`` give the attention term (leave them 0 to count
    6 N only). PaLM's attention term (Chowdhery et al. 2022, appendix B) uses heads x head
    size (H Q), which is the hidden size in most models but not in PaLM (48 x 256 = 12,288
    against h = 18,432): pass it as ``attention_width`` (0: the hidden size).
    ``recompute`` adds the FLOPs recomputation executes (hardware FLOPs).
    """
    n = check_number("params", params, minimum=0, strict=True)
    layers = check_int("layers", layers, minimum=0, allow_array=False)
    hidden = check_int("hidden", hidden, minimum=0, allow_array=False)
    seq_len = check_int("seq_len", seq_len, minimum=0, allow_array=False)
    recompute = check_choice("recompute", recompute, RECOMPUTE)
    width = check_int("attention_width", attention_width, minimum=0, allow_array=False) or hidden
    attention_forward = 4.0 * layers * width * seq_len  # Q K^T and P V, per token
    flops = 6.0 * n + 3 * attention_forward
    if recompute == "full":
        flops += 2.0 * n + attention_forward  # the forward pass once more
    elif recompute == "selective":
        flops += attention_forward  # only the attention scores and their softmax input
    return flops


def megatron_flops_per_iteration(
    batch: int, seq_len: int, layers: int, hidden: int, vocab: int, *, recompute: bool = False
) -> float:
    """FLOPs of one iteration by Narayanan et al. 2021, section 5.1 (logit layer included).

    With full recomputation: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)); without it, the
    forward pass is not repeated: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
    """
    b = check_int("batch", batch, allow_array=False)
    s = check_int("seq_len", seq_len, allow_array=False)
    L = check_int("layers", layers, allow_array=False)
    h = check_int("hidden", hidden, allow_array=False)
    V = check_int("vocab", vocab, allow_array=False)
    if not isinstance(recompute, bool):
        raise InvalidParameter(f"'recompute' must be True or False (got {describe(recompute)})")
    if recompute:
        return 96.0 * b * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    return 72.0 * b * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))


@dataclass(frozen=True)
class MfuResult(ResultMixin):
    """MFU and HFU of a training run: model and hardware FLOPs per second per GPU."""

    gpu: str
    dtype: str
    gpus: int
    tokens_per_s: float
    model_flops_per_token: float
    hardware_flops_per_token: float
    peak_flops_per_s: float
    model_flops_per_s_per_gpu: float
    hardware_flops_per_s_per_gpu: float
    mfu: float
    hfu: float
    recompute: str

    _units: ClassVar[dict[str, str]] = {
        "model_flops_per_token": "FLOP",
        "hardware_flops_per_token": "FLOP",
        "peak_flops_per_s": "FLOP/s",
        "model_flops_per_s_per_gpu": "FLOP/s",
        "hardware_flops_per_s_per_gpu": "FLOP/s",
    }

    def _title(self) -> str:
        return f"MFU {self.mfu:.1%}, HFU {self.hfu:.1%} on {self.gpus} x {self.gpu} ({self.dtype})"


def mfu(
    tokens_per_s: float,
    params: float | None = None,
    *,
    flops_per_token: float | None = None,
    layers: int = 0,
    hidden: int = 0,
    seq_len: int = 0,
    gpus: int = 1,
    gpu: str | Gpu = "H100",
    dtype: str = "bf16",
    recompute: str = "none",
    peak_flops_per_s: float | None = None,
    attention_width: int = 0,
) -> MfuResult:
    """MFU and HFU of a run that trains ``tokens_per_s`` tokens per second on ``gpus`` GPUs.

    The peak is the GPU's dense peak for ``dtype`` unless ``peak_flops_per_s`` gives
    another (a TPU, or a clock you measured). Example, PaLM 540B on 6144 TPU v4 chips
    (275 TFLOP/s each) at 238.3k tokens/s with 48 heads of 256: ``mfu(238.3e3, 540.35e9,
    layers=118, hidden=18432, seq_len=2048, attention_width=48 * 256, gpus=6144,
    peak_flops_per_s=275e12).mfu`` is the paper's 0.462.

    ``flops_per_token`` replaces the formula by a count of your own, e.g. the training FLOPs
    of an analysed model divided by the tokens of its example batch
    (``analyze_module(model, x).flops / x.numel()``); HFU then equals MFU.
    """
    rate = check_number("tokens_per_s", tokens_per_s, minimum=0, strict=True)
    n_gpus = check_int("gpus", gpus, allow_array=False)
    g = _gpu(gpu)
    if peak_flops_per_s is None:
        peak = g.peak_flops(dtype)
        dname = dtype
    else:
        peak = check_number("peak_flops_per_s", peak_flops_per_s, minimum=0, strict=True)
        dname = str(dtype)
    if (params is None) == (flops_per_token is None):
        raise InvalidParameter(
            "'params' or 'flops_per_token' must be given, not both or neither "
            f"(got params={describe(params)}, flops_per_token={describe(flops_per_token)})"
        )
    if flops_per_token is not None:
        model = hw = check_number("flops_per_token", flops_per_token, minimum=0, strict=True)
    else:
        assert params is not None
        model = transformer_flops_per_token(params, layers=layers, hidden=hidden, seq_len=seq_len,
                                            attention_width=attention_width)  # fmt: skip
        hw = transformer_flops_per_token(
            params, layers=layers, hidden=hidden, seq_len=seq_len, recompute=recompute,
            attention_width=attention_width,
        )  # fmt: skip
    per_gpu = rate / n_gpus
    hfu = per_gpu * max(model, hw) / peak
    if not hfu <= 1.0:  # above 100 % (or inf): no run does more than its peak
        if not math.isfinite(hfu):
            shown = "an unbounded multiple"
        elif hfu < 100:
            shown = f"{hfu:.0%}"
        else:  # a multiple, kept short however absurd the inputs
            shown = f"{hfu:.3g} times"
        raise InvalidParameter(
            f"'tokens_per_s' must be a rate the GPUs can reach: {rate:.4g} tokens/s on "
            f"{n_gpus} GPU(s) would need {shown} of the peak, more than 100 % (check the "
            f"rate, the GPU count, the model size and the peak)"
        )
    return MfuResult(
        gpu=g.name if peak_flops_per_s is None else "custom peak",
        dtype=dname,
        gpus=n_gpus,
        tokens_per_s=rate,
        model_flops_per_token=model,
        hardware_flops_per_token=hw,
        peak_flops_per_s=peak,
        model_flops_per_s_per_gpu=per_gpu * model,
        hardware_flops_per_s_per_gpu=per_gpu * hw,
        mfu=per_gpu * model / peak,
        hfu=per_gpu * hw / peak,
        recompute=check_choice("recompute", recompute, RECOMPUTE),
    )


@dataclass(frozen=True)
class PublishedMfu:
    """One published training run's utilization (``data/published_mfu.csv``)."""

    run: str
    hardware: str
    precision: str
    mfu: float | None
    hfu: float | None
    source: str


@functools.lru_cache(maxsize=1)
def published_mfu() -> tuple[PublishedMfu, ...]:
    """What good looks like: MFU and HFU of published large training runs, with sources."""
    out = []
    for r in _read_csv("published_mfu.csv"):
        out.append(
            PublishedMfu(
                run=r["run"],
                hardware=r["hardware"],
                precision=r["precision"],
                mfu=float(r["mfu"]) if r["mfu"] else None,
                hfu=float(r["hfu"]) if r["hfu"] else None,
                source=r["source"],
            )
        )
    return tuple(out)
