"""Guards the memory view of core/workload.py against PyTorch: the bytes autograd really saves
(counted with saved_tensors_hooks) in a small Llama-like model on the CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dlperf_widgets.core.workload import LlmSpec, workload, workload_memory  # noqa: E402
from dlperf_widgets.live.memory_check import SavedTensorTracker  # noqa: E402

F = torch.nn.functional


class _Layer(torch.nn.Module):
    """Pre-norm layer with one QKV GEMM, GQA, causal attention and a SwiGLU MLP."""

    def __init__(self, h: int, a: int, kv: int, ffn: int, eager: bool) -> None:
        super().__init__()
        self.a, self.kv, self.d, self.eager = a, kv, h // a, eager
        self.n1, self.n2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
        self.qkv = torch.nn.Linear(h, (a + 2 * kv) * self.d, bias=False)
        self.o = torch.nn.Linear(a * self.d, h, bias=False)
        self.gu = torch.nn.Linear(h, 2 * ffn, bias=False)
        self.down = torch.nn.Linear(ffn, h, bias=False)

    def forward(self, x):  # type: ignore[no-untyped-def]
        b, t, _ = x.shape
        a, kv, d = self.a, self.kv, self.d
        q, k, v = self.qkv(self.n1(x)).split([a * d, kv * d, kv * d], -1)
        q = q.view(b, t, a, d).transpose(1, 2)
        k = k.view(b, t, kv, d).transpose(1, 2)
        v = v.view(b, t, kv, d).transpose(1, 2)
        if self.eager:  # each K/V head serves a // kv query heads: group the queries
            qg = q.reshape(b, kv, a // kv * t, d)
            p = (qg @ k.transpose(-2, -1)) / d**0.5
            mask = torch.ones(t, t, dtype=torch.bool).triu(1)
            p = p.view(b, kv, a // kv, t, t).masked_fill(mask, float("-inf")).softmax(-1)
            o = (p.view(b, kv, a // kv * t, t) @ v).view(b, a, t, d)
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(o.transpose(1, 2).reshape(b, t, -1))
        gate, up = self.gu(self.n2(x)).chunk(2, -1)
        return x + self.down(F.silu(gate) * up)


class _Model(torch.nn.Module):
    def __init__(self, spec: LlmSpec, eager: bool, checkpoint: bool) -> None:
        super().__init__()
        h = spec.hidden
        self.checkpoint = checkpoint
        self.emb = torch.nn.Embedding(spec.vocab, h)
        self.layers = torch.nn.ModuleList(
            _Layer(h, spec.heads, spec.kv_heads, spec.ffn, eager) for _ in range(spec.layers)
        )
        self.norm = torch.nn.LayerNorm(h)
        self.head = torch.nn.Linear(h, spec.vocab, bias=False)

    def forward(self, ids):  # type: ignore[no-untyped-def]
        x = self.emb(ids)
        for layer in self.layers:
            if self.checkpoint:
                x = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=False)
            else:
                x = layer(x)
        return self.head(self.norm(x))


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("kv_heads", [2, 8])
@pytest.mark.parametrize("recompute", ["none", "full"])
def test_saved_activations_match_pytorch(attention, kv_heads, recompute):
    """The kernel list's saved bytes (activations of one micro-batch) are within 5 % of what
    autograd keeps in a real FP32 model on the CPU, for eager and SDPA attention, GQA and
    MHA, and full recomputation (torch.utils.checkpoint per layer); what the kit leaves out
    is only the norms' per-row statistics and the token ids (under 1 %)."""
    spec = LlmSpec("tiny", 2, 256, 8, kv_heads, 32, 512, 1000, rotary=False)
    torch.manual_seed(0)
    model = _Model(spec, attention == "eager", recompute == "full")
    ids = torch.randint(0, spec.vocab, (2, 128))
    tracker = SavedTensorTracker(exclude=list(model.parameters()))
    with tracker:
        logits = model(ids)
        loss = F.cross_entropy(logits.float().view(-1, spec.vocab), ids.view(-1))
        measured = tracker.current_bytes
    loss.backward()
    w = workload(spec, batch=2, seq=128, precision="fp32", attention=attention,
                 recompute=recompute)  # fmt: skip
    predicted = workload_memory(w).activations_bytes
    assert measured == pytest.approx(predicted, rel=0.05)
