"""Guards live/modules.py: a real nn.Module becomes the core's op list, and the FLOPs of
Linear, Conv2d and attention matmuls equal torch.utils.flop_counter.FlopCounterMode."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from dlperf_widgets.core.errors import InvalidParameter  # noqa: E402
from dlperf_widgets.live.modules import analyze_module, module_layers  # noqa: E402


def _counted(module, *inputs):
    with FlopCounterMode(display=False) as counter:
        module(*inputs)
    return counter.get_total_flops()


def _modelled(result):
    return sum(
        p.flops for p in result.ops if p.pass_ == "forward" and p.op_class == "tensor_contraction"
    )


def test_linear_flops_equal_flop_counter_on_random_shapes():
    """Linear layers on random input ranks and sizes: model FLOPs == FlopCounterMode."""
    rng = random.Random(1)
    for _ in range(20):
        fin, fout = rng.randint(1, 300), rng.randint(1, 300)
        lead = [rng.randint(1, 12) for _ in range(rng.randint(0, 2))]
        m = nn.Linear(fin, fout, bias=rng.random() < 0.5)
        x = torch.randn(*lead, fin)
        assert _modelled(analyze_module(m, x)) == _counted(m, x)


def test_conv2d_flops_equal_flop_counter_on_random_shapes():
    """Conv2d with random groups, stride, padding, dilation and kernels: equal FLOPs."""
    rng = random.Random(2)
    checked = 0
    while checked < 30:
        groups = rng.choice([1, 1, 2, 3, 4])
        cin = groups * rng.randint(1, 6)
        cout = groups * rng.randint(1, 6)
        k = (rng.randint(1, 5), rng.randint(1, 5))
        stride = (rng.randint(1, 3), rng.randint(1, 3))
        pad = (rng.randint(0, 2), rng.randint(0, 2))
        dil = (rng.randint(1, 2), rng.randint(1, 2))
        h, w = rng.randint(4, 20), rng.randint(4, 20)
        if dil[0] * (k[0] - 1) + 1 > h + 2 * pad[0] or dil[1] * (k[1] - 1) + 1 > w + 2 * pad[1]:
            continue
        m = nn.Conv2d(cin, cout, k, stride=stride, padding=pad, dilation=dil, groups=groups)
        x = torch.randn(rng.randint(1, 3), cin, h, w)
        assert _modelled(analyze_module(m, x)) == _counted(m, x), (
            cin,
            cout,
            k,
            stride,
            pad,
            dil,
            groups,
            h,
            w,
        )
        checked += 1


def test_depthwise_conv_flops_equal_flop_counter():
    """Depthwise convolutions are not GEMMs in the model but count the same FLOPs."""
    m = nn.Conv2d(16, 32, 3, padding=1, groups=16)
    x = torch.randn(2, 16, 12, 12)
    assert _modelled(analyze_module(m, x)) == _counted(m, x)


@pytest.mark.parametrize("batch_first", [True, False])
def test_attention_matmul_flops_equal_flop_counter(batch_first):
    """MultiheadAttention: Q/K/V and output projections plus the two attention matmuls."""
    rng = random.Random(3 + batch_first)
    for _ in range(6):
        heads = rng.randint(1, 6)
        embed = heads * rng.randint(1, 12)
        b, s = rng.randint(1, 4), rng.randint(1, 24)
        m = nn.MultiheadAttention(embed, heads, batch_first=batch_first)
        q = torch.randn(b, s, embed) if batch_first else torch.randn(s, b, embed)
        assert _modelled(analyze_module(m, q, q, q)) == _counted(m, q, q, q)


def test_op_list_of_a_small_transformer_and_rnn():
    """A realistic module becomes the core's op list: embedding, attention, norms, dropout,
    linear, LSTM/GRU layers (per layer and direction), in execution order."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 32)
            self.enc = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
            self.rnn = nn.LSTM(32, 16, num_layers=2, bidirectional=True, batch_first=True)
            self.gru = nn.GRU(32, 8, batch_first=True)
            self.act = nn.GELU()
            self.out = nn.Linear(8, 100)

        def forward(self, i):
            h = self.enc(self.emb(i))
            h, _ = self.rnn(h)
            h, _ = self.gru(h)
            return self.out(self.act(h))

    specs = module_layers(Net(), torch.randint(0, 100, (2, 10)))
    kinds = [s.kind for s in specs]
    assert kinds[0] == "embedding"
    assert "attention" in kinds and "layernorm" in kinds and "dropout" in kinds
    lstm = [s for s in specs if s.kind == "lstm"]
    assert [s.options["input_size"] for s in lstm] == [32, 32]
    assert all(
        s.repeat == 2 and s.options["seq_len"] == 10 and s.options["batch"] == 2 for s in lstm
    )
    assert kinds[-3:] == ["gru", "gelu", "linear"]
    r = analyze_module(Net(), torch.randint(0, 100, (2, 10)))
    assert r.dtype == "fp32"
    assert r.total_time_s > 0


def test_cnn_module_layout_and_dtype():
    """A conv net's input layout decides NCHW vs NHWC; a half-precision module is 'fp16'."""
    net = nn.Sequential(
        nn.Conv2d(8, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.AdaptiveAvgPool2d(1),
    )
    x = torch.randn(2, 8, 16, 16)
    specs = module_layers(net, x)
    assert [s.kind for s in specs] == ["conv2d", "batchnorm", "relu", "maxpool", "avgpool"]
    assert specs[0].options["layout"] == "nchw"
    cl = module_layers(
        net.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    )
    assert cl[0].options["layout"] == "nhwc"
    assert specs[-1].options["kernel_size"] == (8, 8)
    half = nn.Linear(16, 16).half()
    assert analyze_module(half, torch.randn(4, 16).half(), gpu="A100").dtype == "fp16"


def test_not_a_module_and_no_supported_layer():
    """Clear errors for a non-module and for a module with nothing the model knows."""
    with pytest.raises(InvalidParameter, match=r"'module' must be a torch\.nn\.Module"):
        module_layers(lambda x: x, torch.randn(2))
    with pytest.raises(InvalidParameter, match="at least one supported layer"):
        analyze_module(nn.Identity(), torch.randn(2))
