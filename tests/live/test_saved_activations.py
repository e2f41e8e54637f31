"""Guards core.memory.saved_activation_bytes against what PyTorch really keeps: bytes
saved for backward (``saved_tensors_hooks``, parameters excluded, storages counted once)
in transformers' GPT-2 and Llama, eager and SDPA attention, FP32 and bf16 autocast, per
block within 5 % and for the whole model (embeddings, final norm, head, loss) within 10 %.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
tr = pytest.importorskip("transformers")

from dlperf_widgets.core.memory import saved_activation_bytes  # noqa: E402
from dlperf_widgets.live.memory_check import measure_saved_by_module  # noqa: E402

os.environ["HF_HUB_OFFLINE"] = "1"
tr.logging.set_verbosity_error()


def _model(family, attention, dropout, L, h, a, f, V):
    if family == "gpt2":
        off = {} if dropout else {"attn_pdrop": 0.0, "resid_pdrop": 0.0, "embd_pdrop": 0.0}
        cfg = tr.GPT2Config(
            n_layer=L,
            n_embd=h,
            n_head=a,
            vocab_size=V,
            n_positions=128,
            attn_implementation=attention,
            **off,
        )
        return tr.GPT2LMHeadModel(cfg)
    cfg = tr.LlamaConfig(
        num_hidden_layers=L,
        hidden_size=h,
        num_attention_heads=a,
        num_key_value_heads=a,
        intermediate_size=f,
        vocab_size=V,
        max_position_embeddings=128,
        attn_implementation=attention,
    )
    return tr.LlamaForCausalLM(cfg)


@pytest.mark.parametrize(
    "family,attention,dropout",
    [
        ("gpt2", "eager", True),
        ("gpt2", "sdpa", False),
        ("llama", "eager", False),
        ("llama", "sdpa", False),
    ],
)
@pytest.mark.parametrize("autocast", [None, "bf16"])
def test_saved_bytes_match_transformers_models(family, attention, dropout, autocast):
    """Model vs measurement, per block (5 %) and whole model (10 %), on two shapes."""
    for L, h, a, s, b, V in ((2, 96, 3, 40, 2, 200), (1, 128, 4, 64, 1, 256)):
        f = 4 * h if family == "gpt2" else 3 * h - 8
        torch.manual_seed(0)
        model = _model(family, attention, dropout, L, h, a, f, V).train()
        x = torch.randint(0, V, (b, s))
        measured = measure_saved_by_module(model, x, labels=x, autocast=autocast)
        modelled = saved_activation_bytes(
            s,
            b,
            h,
            a,
            layers=L,
            vocab=V,
            ffn=f,
            family=family,
            attention=attention,
            precision="bf16-autocast" if autocast else "fp32",
            dropout=dropout,
            device="cpu",
        )
        assert len(measured.blocks_bytes) == L
        for block in measured.blocks_bytes:
            assert modelled.block_bytes == pytest.approx(block, rel=0.05)
        assert modelled.stored_bytes == pytest.approx(measured.total_bytes, rel=0.10)


def test_fused_attention_and_autocast_effects_are_the_measured_ones():
    """SDPA keeps no s^2 tensor (the saving grows with seq_len); under autocast the
    residual stream and softmax stay FP32, so bf16 saves far less than half."""
    kw = dict(layers=1, vocab=256, family="llama", ffn=344, device="cpu")
    eager = saved_activation_bytes(512, 1, 128, 4, attention="eager", **kw)
    sdpa = saved_activation_bytes(512, 1, 128, 4, attention="sdpa", **kw)
    assert eager.block_parts["attention_scores"] == 4 * 512 * 512 * 4  # a s^2 b, FP32
    assert sdpa.block_parts["attention_scores"] == 0
    bf16 = saved_activation_bytes(
        512, 1, 128, 4, attention="eager", precision="bf16-autocast", **kw
    )
    assert bf16.block_bytes > 0.75 * eager.block_bytes
