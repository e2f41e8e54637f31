"""Guards core.memory.training_memory (a view of the kernel list) against PyTorch: the peak
bytes of a real training step on the CPU, measured by following every tensor the step's
ops create (live.memory_check.AllocationTracker), for small GPT-2-like and Llama-like
models, eager and SDPA attention, FP32 and bf16 autocast, with and without full
recomputation."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dlperf_widgets.core.memory import training_memory  # noqa: E402
from dlperf_widgets.live.memory_check import AllocationTracker  # noqa: E402

F = torch.nn.functional


class _Layer(torch.nn.Module):
    """Pre-norm layer: one QKV GEMM, causal attention (eager with its own softmax, or
    SDPA), and a SwiGLU (Llama-like) or GELU (GPT-2-like) MLP."""

    def __init__(self, h: int, a: int, kv: int, ffn: int, eager: bool, gated: bool) -> None:
        super().__init__()
        self.a, self.kv, self.d, self.eager, self.gated = a, kv, h // a, eager, gated
        self.n1, self.n2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
        self.qkv = torch.nn.Linear(h, (a + 2 * kv) * self.d, bias=False)
        self.o = torch.nn.Linear(a * self.d, h, bias=False)
        self.up = torch.nn.Linear(h, (2 if gated else 1) * ffn, bias=False)
        self.down = torch.nn.Linear(ffn, h, bias=False)

    def forward(self, x):  # type: ignore[no-untyped-def]
        b, t, _ = x.shape
        a, kv, d = self.a, self.kv, self.d
        q, k, v = self.qkv(self.n1(x)).split([a * d, kv * d, kv * d], -1)
        q = q.view(b, t, a, d).transpose(1, 2)
        k = k.view(b, t, kv, d).transpose(1, 2)
        v = v.view(b, t, kv, d).transpose(1, 2)
        if self.eager:
            qg = q.reshape(b, kv, a // kv * t, d)
            p = (qg @ k.transpose(-2, -1)) / d**0.5
            mask = torch.ones(t, t, dtype=torch.bool).triu(1)
            p = p.view(b, kv, a // kv, t, t).masked_fill(mask, float("-inf")).softmax(-1)
            o = (p.view(b, kv, a // kv * t, t) @ v).view(b, a, t, d)
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(o.transpose(1, 2).reshape(b, t, -1))
        if self.gated:
            gate, up = self.up(self.n2(x)).chunk(2, -1)
            return x + self.down(F.silu(gate) * up)
        return x + self.down(F.gelu(self.up(self.n2(x))))


class _Model(torch.nn.Module):
    def __init__(self, cfg: dict, eager: bool, checkpoint: bool) -> None:
        super().__init__()
        h = cfg["hidden"]
        self.checkpoint = checkpoint
        self.emb = torch.nn.Embedding(cfg["vocab"], h)
        self.layers = torch.nn.ModuleList(
            _Layer(h, cfg["heads"], cfg["kv_heads"], cfg["ffn"], eager, cfg["gated_mlp"])
            for _ in range(cfg["layers"])
        )
        self.norm = torch.nn.LayerNorm(h)
        self.head = torch.nn.Linear(h, cfg["vocab"], bias=False)

    def forward(self, ids):  # type: ignore[no-untyped-def]
        x = self.emb(ids)
        for layer in self.layers:
            if self.checkpoint:
                x = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=False)
            else:
                x = layer(x)
        return self.head(self.norm(x))


LLAMA = dict(layers=2, hidden=256, heads=8, kv_heads=2, ffn=512, gated_mlp=True, vocab=4000)
GPT2 = dict(layers=3, hidden=192, heads=6, kv_heads=6, ffn=768, gated_mlp=False, vocab=6000)


def _measured_peak(cfg: dict, attention: str, precision: str, recompute: bool,
                   batch: int, seq: int) -> tuple[int, int]:  # fmt: skip
    """(parameters, peak bytes) of a steady-state AdamW step: weights, gradients (kept,
    zero_grad(set_to_none=False)) and both moments, plus the peak of everything the
    forward and backward passes create while the loop holds the logits."""
    torch.manual_seed(0)
    model = _Model(cfg, attention == "eager", recompute)
    opt = torch.optim.AdamW(model.parameters(), foreach=False)
    ids = torch.randint(0, cfg["vocab"], (batch, seq))

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision != "fp32"):
            logits = model(ids)
        loss = F.cross_entropy(logits.float().view(-1, cfg["vocab"]), ids.view(-1))
        loss.backward()

    step()
    opt.step()
    opt.zero_grad(set_to_none=False)
    existing = [ids, *model.parameters(), *(p.grad for p in model.parameters())]
    for state in opt.state.values():
        existing += [v for v in state.values() if isinstance(v, torch.Tensor) and v.dim()]
    states = sum(t.untyped_storage().nbytes() for t in existing) - ids.untyped_storage().nbytes()
    with AllocationTracker(existing) as tracker:
        step()
    return sum(p.numel() for p in model.parameters()), states + tracker.peak_bytes


@pytest.mark.parametrize("family", ["llama", "gpt2"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("precision", ["fp32", "bf16-autocast"])
@pytest.mark.parametrize("recompute", [False, True])
def test_peak_matches_pytorch(family, attention, precision, recompute):
    """training_memory's per-GPU bytes (model states by the precision's convention, the
    kernel list's saved tensors, the loss backward's transients) are within 5 % of the
    measured peak of a real training step."""
    cfg = LLAMA if family == "llama" else GPT2
    batch, seq = 2, 128
    params, measured = _measured_peak(cfg, attention, precision, recompute, batch, seq)
    r = training_memory(params, optimizer="adamw", precision=precision, seq_len=seq,
                        batch=batch, attention=attention, dropout=False,
                        checkpointing="every" if recompute else "none", **cfg)  # fmt: skip
    assert r.per_gpu_bytes == pytest.approx(measured, rel=0.05)


def test_fused_attention_keeps_no_scores_at_long_sequence():
    """At a sequence where the s x s probabilities dominate, the measured peak with SDPA is
    far below eager's, and training_memory follows both within 5 %."""
    cfg = dict(LLAMA, layers=1, vocab=512)
    got = {}
    for attention in ("eager", "sdpa"):
        params, measured = _measured_peak(cfg, attention, "fp32", False, 1, 1024)
        r = training_memory(params, precision="fp32", seq_len=1024, batch=1,
                            attention=attention, dropout=False, **cfg)  # fmt: skip
        assert r.per_gpu_bytes == pytest.approx(measured, rel=0.05)
        got[attention] = measured
    assert got["sdpa"] < 0.7 * got["eager"]
