"""Guards live/modules.py: any nn.Module, analysed at PyTorch's dispatcher, gets exact
GEMM FLOPs (forward and training) against an independent count, and nothing is dropped.

Independent counts: ``torch.utils.flop_counter.FlopCounterMode`` (PyTorch's own FLOP
formulas per aten op, run separately) where it covers the model, with its gaps handled
as follows: SDPA on the CPU (``_scaled_dot_product_flash_attention_for_cpu``) is not
counted by it, so SDPA models are checked against the closed-form transformer count
(Narayanan et al. 2021: 24 b s h^2 + 4 b s^2 h per layer plus 2 b s h V for the head,
three times that for training); convolutions (grouped, strided, transposed) are checked
against hand formulas (2 x outputs x C_in/g x kernel taps per pass).
"""

from __future__ import annotations

import math
import os

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from dlperf_widgets.core.errors import InvalidParameter  # noqa: E402
from dlperf_widgets.live.modules import analyze_module, trace_module  # noqa: E402

os.environ["HF_HUB_OFFLINE"] = "1"


def _gemm_flops(result, passes=None):
    return sum(
        p.flops
        for p in result.ops
        if p.op_class == "tensor_contraction" and (passes is None or p.pass_ in passes)
    )


def _first_float(out):
    for name in ("logits", "last_hidden_state"):
        if hasattr(out, name):
            return getattr(out, name)
    return out[0] if isinstance(out, tuple) else out


def _counted(module, *inputs, training=True):
    with FlopCounterMode(display=False) as counter:
        out = module(*inputs)
        if training:
            _first_float(out).sum().backward()
    module.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def _close(a, b, rel=0.005):
    assert a == pytest.approx(b, rel=rel), (a, b)


# -- transformers models ----------------------------------------------------------------


def _hf():
    tr = pytest.importorskip("transformers")
    tr.logging.set_verbosity_error()
    return tr


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_gpt2_matches_the_closed_form_count(attn):
    """GPT-2 (transformers' Conv1D projections, eager or SDPA attention): forward and
    training GEMM FLOPs equal 24bsh^2 + 4bs^2h per layer + 2bshV, training 3x."""
    tr = _hf()
    L, h, heads, V, b, s = 2, 64, 4, 128, 2, 32
    cfg = tr.GPT2Config(
        n_layer=L,
        n_embd=h,
        n_head=heads,
        vocab_size=V,
        n_positions=64,
        attn_implementation=attn,
    )
    model = tr.GPT2LMHeadModel(cfg)
    x = torch.randint(0, V, (b, s))
    fwd = L * (24 * b * s * h * h + 4 * b * s * s * h) + 2 * b * s * h * V
    r = analyze_module(model, x)
    _close(_gemm_flops(r, ("forward",)), fwd)
    _close(_gemm_flops(r), 3 * fwd)
    assert r.unpriced_ops == {}
    if attn == "eager":
        _close(_gemm_flops(r), _counted(model, x))


@pytest.mark.parametrize("arch", ["bert", "llama"])
def test_bert_and_llama_match_flop_counter(arch):
    """BERT and Llama (RMSNorm, SiLU gates, rotary embeddings, grouped KV heads) built
    from small configs: training GEMM FLOPs equal FlopCounterMode's."""
    tr = _hf()
    if arch == "bert":
        cfg = tr.BertConfig(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            intermediate_size=128,
            vocab_size=100,
            max_position_embeddings=64,
            attn_implementation="eager",
        )
        model = tr.BertModel(cfg)
    else:
        cfg = tr.LlamaConfig(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=160,
            vocab_size=100,
            max_position_embeddings=64,
            attn_implementation="eager",
        )
        model = tr.LlamaForCausalLM(cfg)
    x = torch.randint(0, 100, (2, 24))
    r = analyze_module(model, x)
    _close(_gemm_flops(r), _counted(model, x))
    assert r.unpriced_ops == {}


# -- vision and recurrent models (structures written here) -------------------------------


class _Basic(nn.Module):
    """A ResNet basic block (He et al. 2016): two 3x3 convs, projection when strided."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.proj = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + self.proj(x))


class _InvertedResidual(nn.Module):
    """A MobileNetV2 block (Sandler et al. 2018): expand 1x1, depthwise 3x3, project 1x1."""

    def __init__(self, cin, cout, stride, expand=6):
        super().__init__()
        mid = cin * expand
        self.body = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False),
            nn.BatchNorm2d(mid),
            nn.ReLU6(),
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
            nn.BatchNorm2d(mid),
            nn.ReLU6(),
            nn.Conv2d(mid, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.skip = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.skip else self.body(x)


def _conv_forward_flops(model, x):
    """2 x output elements x C_in/groups x kernel taps, summed over the convolutions."""
    total = 0

    def hook(m, args, out):
        nonlocal total
        total += 2 * out.numel() * (m.in_channels // m.groups) * math.prod(m.kernel_size)

    hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        model(x)
    for h_ in hs:
        h_.remove()
    return total


@pytest.mark.parametrize("net", ["resnet", "mobilenet"])
def test_cnn_training_flops_equal_the_hand_count(net):
    """Strided, grouped and depthwise convolutions: training FLOPs are 3x the forward
    convolutions' minus the first layer's input gradient (the images need none), plus the
    classifier; the stem conv has no dgrad pass."""
    if net == "resnet":
        body = [
            nn.Conv2d(3, 16, 7, 2, 3, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
            _Basic(16, 16, 1),
            _Basic(16, 32, 2),
        ]
        width = 32
    else:
        body = [
            nn.Conv2d(3, 16, 3, 2, 1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU6(),
            _InvertedResidual(16, 16, 1),
            _InvertedResidual(16, 24, 2),
        ]
        width = 24
    model = nn.Sequential(*body, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10))
    x = torch.randn(2, 3, 32, 32)
    conv = _conv_forward_flops(model, x)
    stem = 2 * 2 * 16 * 16 * 16 * 3 * math.prod(body[0].kernel_size)
    fc = 2 * 2 * width * 10
    r = analyze_module(model, x)
    _close(_gemm_flops(r, ("forward",)), conv + fc)
    _close(_gemm_flops(r), 3 * conv - stem + 3 * fc)
    stem_passes = {p.pass_ for p in r.ops if p.op.startswith("0:")}
    assert "dgrad" not in stem_passes and "wgrad" in stem_passes
    assert r.unpriced_ops == {}


def test_vit_lstm_and_other_convolutions_match_flop_counter():
    """A ViT (patch conv + encoder layers), an LSTM, Conv1d, Conv3d and ConvTranspose2d:
    training GEMM FLOPs equal FlopCounterMode's, plus what it leaves out (counted by hand)."""
    vit = nn.Sequential(
        nn.Conv2d(3, 32, 8, 8),
        nn.Flatten(2),
        _Transpose(),
        nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0),
    )
    # FlopCounterMode does not count SDPA on the CPU: its forward is 4 b s^2 h (scores and
    # context; 16 patches, width 32), and training adds twice that (four products)
    sdpa = 3 * 4 * 2 * 16 * 16 * 32
    cases = [
        (vit, torch.randn(2, 3, 32, 32), sdpa),
        # FlopCounterMode counts the CPU's oneDNN LSTM (mkldnn_rnn_layer) as 0; by hand each
        # layer does 2 T B 4H (I + H) forward (T 5, B 3, H 24, I 16 then 24), training 3x
        (nn.LSTM(16, 24, num_layers=2), torch.randn(5, 3, 16), 3 * 2 * 5 * 3 * 96 * (40 + 48)),
        # FlopCounterMode counts a grouped conv's weight gradient `groups` times too
        # high: forward 2 x (2 x 18 outputs x 16 channels) x 4 in/group x 5 taps = 23040,
        # its wgrad counted as 2 x 23040; every pass does the forward's work
        (nn.Conv1d(8, 16, 5, stride=2, groups=2), torch.randn(2, 8, 40), -23040),
        (nn.Conv3d(4, 8, 3, padding=1), torch.randn(1, 4, 6, 6, 6), 0),
        (nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1), torch.randn(2, 8, 7, 7), 0),
    ]
    for model, x, gap in cases:
        x.requires_grad_(True)  # FlopCounterMode and the kit both count the input gradient
        _close(_gemm_flops(analyze_module(model, x)), _counted(model, x) + gap)


class _Transpose(nn.Module):
    def forward(self, x):
        return x.transpose(1, 2)


def test_bilinear_is_counted_by_hand():
    """nn.Bilinear (FlopCounterMode counts it as 0): 2 x batch x out x in1 x in2 forward;
    training adds the gradients of both inputs and the weight, each as much again."""
    m = nn.Bilinear(16, 24, 8)
    a, b = torch.randn(4, 16, requires_grad=True), torch.randn(4, 24, requires_grad=True)
    fwd = 2 * 4 * 8 * 16 * 24
    assert _gemm_flops(analyze_module(m, a, b, training=False)) == fwd
    r = analyze_module(m, a, b)
    assert r.unpriced_ops == {} and _gemm_flops(r) == 4 * fwd


def test_cross_attention_is_sized_from_queries_and_keys():
    """MultiheadAttention with 16 queries over 512 keys/values, width 512, 8 heads:
    570.4 MFLOP forward by hand (projections of q, k, v and out, scores, context)."""
    m = nn.MultiheadAttention(512, 8, batch_first=True)
    q, kv = torch.randn(1, 16, 512), torch.randn(1, 512, 512)
    hand = 2 * 512 * 512 * (16 + 512 + 512 + 16) + 2 * 2 * 16 * 512 * 512
    r = analyze_module(m, q, kv, kv, training=False)
    assert _gemm_flops(r) == hand
    _close(hand, 570.4e6, rel=1e-3)


# -- behaviour --------------------------------------------------------------------------


def test_unknown_operations_are_listed_with_their_count():
    """An op the kit has no model for (a sort) is listed in unpriced_ops, not dropped."""

    class Sorter(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            y = self.fc(x)
            return torch.sort(y, dim=-1).values + torch.sort(y, dim=0).values

    r = analyze_module(Sorter(), torch.randn(4, 8), training=False)
    assert r.unpriced_ops == {"sort": 2}
    assert "sort x2" in str(r)


def test_module_paths_and_passes_are_kept():
    """Each op names the module that ran it, in forward and in backward."""
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    ops = trace_module(model, torch.randn(3, 8))
    seen = {(o.module, o.aten, o.pass_) for o in ops}
    assert ("0", "addmm", "forward") in seen and ("2", "mm", "wgrad") in seen
    assert ("1", "gelu", "forward") in seen and ("1", "gelu_backward", "backward") in seen
    assert ("2", "mm", "dgrad") in seen and ("0", "mm", "dgrad") not in seen


def test_dtype_and_errors():
    """A half module is analysed as fp16; a non-module and a parameterless module for
    training get one-sentence errors."""
    half = nn.Linear(16, 16).half()
    assert analyze_module(half, torch.randn(4, 16).half(), gpu="A100").dtype == "fp16"
    with pytest.raises(InvalidParameter, match=r"'module' must be a torch\.nn\.Module"):
        analyze_module(lambda x: x, torch.randn(2))
    with pytest.raises(InvalidParameter, match="require a gradient"):
        analyze_module(nn.ReLU(), torch.randn(2))


# -- full-size vision models on the meta device (structures written here from the papers) --


class _Bottleneck(nn.Module):
    """ResNet-50's block (He et al. 2016): 1x1 reduce, 3x3 (strided), 1x1 expand x4."""

    def __init__(self, cin, mid, stride):
        super().__init__()
        cout = 4 * mid
        self.body = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False),
            nn.BatchNorm2d(mid),
            nn.ReLU(),
            nn.Conv2d(mid, mid, 3, stride, 1, bias=False),
            nn.BatchNorm2d(mid),
            nn.ReLU(),
            nn.Conv2d(mid, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.proj = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x):
        return torch.relu(self.body(x) + self.proj(x))


def _resnet(block, stages, expansion):
    layers = [
        nn.Conv2d(3, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
    ]
    cin = 64
    for i, (mid, n) in enumerate(zip((64, 128, 256, 512), stages, strict=True)):
        for j in range(n):
            stride = 2 if i > 0 and j == 0 else 1
            if block is _Basic:
                layers.append(_Basic(cin, mid, stride))
            else:
                layers.append(_Bottleneck(cin, mid, stride))
            cin = mid * expansion
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000))


class _MBBlock(nn.Module):
    """MobileNetV2's inverted residual, with no expansion conv when t = 1."""

    def __init__(self, cin, cout, stride, t):
        super().__init__()
        mid = cin * t
        pre = (
            [] if t == 1 else [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU6()]
        )
        self.body = nn.Sequential(
            *pre,
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
            nn.BatchNorm2d(mid),
            nn.ReLU6(),
            nn.Conv2d(mid, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.skip = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.skip else self.body(x)


def _mobilenet_v2():
    layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
    cin = 32
    settings = (
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    )  # Sandler et al. 2018, Table 2
    for t, c, n, s in settings:
        for i in range(n):
            layers.append(_MBBlock(cin, c, s if i == 0 else 1, t))
            cin = c
    return nn.Sequential(
        *layers,
        nn.Conv2d(320, 1280, 1, bias=False),
        nn.BatchNorm2d(1280),
        nn.ReLU6(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.2),
        nn.Linear(1280, 1000),
    )


class _Patches(nn.Module):
    """ViT-B/16's input (Dosovitskiy et al. 2021): 16x16 patches, class token, positions."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 768, 16, 16)
        self.cls = nn.Parameter(torch.zeros(1, 1, 768))
        self.pos = nn.Parameter(torch.zeros(1, 197, 768))

    def forward(self, x):
        x = self.conv(x).flatten(2).transpose(1, 2)
        return torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos


class _ClassHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln, self.fc = nn.LayerNorm(768), nn.Linear(768, 1000)

    def forward(self, x):
        return self.fc(self.ln(x[:, 0]))


def _vit_b16():
    blocks = [
        nn.TransformerEncoderLayer(
            768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        for _ in range(12)
    ]
    return nn.Sequential(_Patches(), *blocks, _ClassHead())


@pytest.mark.parametrize(
    "name,build,params,gmacs",
    [
        # published counts (torchvision's model tables: parameters, GFLOPS = multiply-adds)
        ("resnet18", lambda: _resnet(_Basic, (2, 2, 2, 2), 1), 11_689_512, 1.81),
        ("resnet50", lambda: _resnet(_Bottleneck, (3, 4, 6, 3), 4), 25_557_032, 4.09),
        ("mobilenet_v2", _mobilenet_v2, 3_504_872, 0.30),
        ("vit_b_16", _vit_b16, 86_567_656, 17.56),
    ],
)
def test_full_size_vision_models_match_published_counts(name, build, params, gmacs):
    """Full-size ResNet-18/50, MobileNetV2 and ViT-B/16 at 224x224, built on the meta
    device (no memory, nothing computed): parameter counts exact and forward multiply-adds
    equal to the published figures within 0.5 % plus their rounding (2 decimals)."""
    with torch.device("meta"):
        model = build()
        x = torch.empty(1, 3, 224, 224)
    assert sum(p.numel() for p in model.parameters()) == params
    r = analyze_module(model, x, training=False)
    macs = _gemm_flops(r) / 2e9
    assert macs == pytest.approx(gmacs, rel=0.005 + 0.005 / gmacs), macs
    assert r.unpriced_ops == {}
    if name == "resnet50":  # training: 3x forward, minus the stem's input gradient
        stem = 2 * 112 * 112 * 64 * 3 * 49
        _close(_gemm_flops(analyze_module(model, x)), 3 * macs * 2e9 - stem)
