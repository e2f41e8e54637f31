"""Real models to analyse, built from their published configurations with random weights.

Nothing is downloaded: the models come from ``transformers`` configuration classes (no
hub access; ``HF_HUB_OFFLINE`` is set), so they run on a machine with no network. Each
factory returns ``(model, example_input)``, the form ``dlperf model --module`` takes.
"""

from __future__ import annotations

import os
from typing import Any

from .._optional import require
from ..core._validate import check_choice, check_int

__all__ = ["gpt2"]


def gpt2(
    layers: int = 12,
    hidden: int = 768,
    heads: int = 12,
    seq_len: int = 128,
    batch: int = 1,
    vocab: int = 50257,
    attention: str = "sdpa",
    device: str = "meta",
) -> tuple[Any, Any]:
    """GPT-2 with its LM head (defaults: GPT-2 small, Radford et al. 2019: 12 layers,
    width 768, 12 heads, 50257 tokens) and a batch of random token ids.

    ``attention`` is transformers' attention implementation: 'sdpa' (fused
    ``scaled_dot_product_attention``) or 'eager' (explicit matmuls and softmax).
    ``device='meta'`` (default) builds tensors with shapes but no storage: instant to
    build and to analyse, nothing computed; ``'cpu'`` gives a model that really runs.
    """
    layers = check_int("layers", layers, allow_array=False)
    hidden = check_int("hidden", hidden, allow_array=False)
    heads = check_int("heads", heads, allow_array=False)
    seq_len = check_int("seq_len", seq_len, allow_array=False)
    batch = check_int("batch", batch, allow_array=False)
    vocab = check_int("vocab", vocab, allow_array=False)
    attention = check_choice("attention", attention, ("sdpa", "eager"))
    device = check_choice("device", device, ("meta", "cpu"))
    torch = require("torch", "building GPT-2")
    # Offline while transformers (and huggingface_hub, which reads the variable when first
    # imported) load; the user's own setting is back in place afterwards.
    before = os.environ.get("HF_HUB_OFFLINE")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        tr = require("transformers", "building GPT-2 from its configuration")
    finally:
        if before is None:
            del os.environ["HF_HUB_OFFLINE"]
    cfg = tr.GPT2Config(
        n_layer=layers,
        n_embd=hidden,
        n_head=heads,
        vocab_size=vocab,
        n_positions=max(1024, seq_len),
        attn_implementation=attention,
        bos_token_id=vocab - 1,
        eos_token_id=vocab - 1,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = tr.GPT2LMHeadModel(cfg)
    return model, torch.randint(0, vocab, (batch, seq_len), device=device)
