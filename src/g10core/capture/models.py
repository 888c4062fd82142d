"""The model families of :mod:`.families` as plain ``torch.nn`` modules (needs torch).

Written from the papers' descriptions, not from any library's code.  Attention is fused by
default (``attention = "fused"``: one forward and one backward kernel per layer, as PyTorch's
``scaled_dot_product_attention`` runs training on a GPU: FlashAttention-2 for bf16/fp16,
the memory-efficient kernel for fp32); ``attention = "eager"`` is the unfused formulation
(scores, softmax, weighted sum), what runs where no fused kernel is available and what the
published G10 graphs contain.
"""
from __future__ import annotations

import math
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from .families import (ATTENTION_KINDS, INCEPTION_MODULES, BertConfig, GPT2Config, InceptionConfig, LlamaConfig,
                       ResNetConfig, ViTConfig, bottleneck_width, family_config)


class FusedAttention(torch.autograd.Function):
    """softmax(q k^T / sqrt(d)) v as one fused kernel forward and one backward (ATen's flash
    kernels for bf16/fp16, its memory-efficient kernels for fp32), which is what
    ``F.scaled_dot_product_attention`` dispatches to on a CUDA GPU; on the meta device that
    function takes the unfused path, so the kernels are called here by name."""

    @staticmethod
    def forward(ctx, q, k, v, dropout_p: float, causal: bool):
        scale = 1.0 / math.sqrt(q.shape[-1])
        if q.dtype in (torch.bfloat16, torch.float16):
            out, lse, cum_q, cum_k, max_q, max_k, seed, offset, _ = \
                torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, causal, False, scale=scale)
            ctx.flash = True
            ctx.lengths = (cum_q, cum_k, max_q, max_k)
        else:
            out, lse, seed, offset = torch.ops.aten._scaled_dot_product_efficient_attention(
                q, k, v, None, True, dropout_p, causal, scale=scale)
            ctx.flash = False
        ctx.save_for_backward(q, k, v, out, lse, seed, offset)
        ctx.dropout_p, ctx.causal, ctx.scale = dropout_p, causal, scale
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse, seed, offset = ctx.saved_tensors
        if ctx.flash:
            cum_q, cum_k, max_q, max_k = ctx.lengths
            dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_backward(
                grad_out, q, k, v, out, lse, cum_q, cum_k, max_q, max_k, ctx.dropout_p, ctx.causal, seed, offset,
                scale=ctx.scale)
        else:
            dq, dk, dv, _ = torch.ops.aten._scaled_dot_product_efficient_attention_backward(
                grad_out, q, k, v, None, out, lse, seed, offset, ctx.dropout_p, [True, True, True, False],
                ctx.causal, scale=ctx.scale)
        return dq, dk, dv, None, None


def _attention(q, k, v, mask, dropout: float, training: bool, fused: bool = False, causal: bool = False):
    """softmax(q k^T / sqrt(d) + mask) v over (batch, heads, seq, head_dim) tensors; ``fused``: one
    kernel each way (:class:`FusedAttention`, ``causal`` instead of ``mask``)."""
    if fused:
        return FusedAttention.apply(q, k, v, dropout if training else 0.0, causal)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + mask
    probs = _dropout(torch.softmax(scores, dim=-1), dropout, training)
    return torch.matmul(probs, v)


def _dropout(x, p: float, training: bool):
    """Dropout as the CUDA backend runs it: one fused kernel that also writes a 1-byte mask
    (``F.dropout`` on the meta device takes the unfused path with a float noise tensor)."""
    if not training or p == 0.0:
        return x
    return torch.native_dropout(x, p, True)[0]


class DecomposedLayerNorm(nn.Module):
    """Layer normalisation from elementary operators, as the original TensorFlow BERT and the
    published G10 graph compute it (mean, centred square, mean, add, sqrt, divide, scale, shift)."""

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))
        self.bias = nn.Parameter(torch.zeros(hidden))

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        var = centred.pow(2).mean(-1, keepdim=True)
        return self.weight * (centred / torch.sqrt(var + self.eps)) + self.bias


def _layer_norm(kind: str, hidden: int, eps: float) -> nn.Module:
    if kind == "fused":
        return nn.LayerNorm(hidden, eps=eps)
    if kind == "decomposed":
        return DecomposedLayerNorm(hidden, eps)
    raise ValueError(f"layer_norm = {kind!r}: fused or decomposed")


def _causal_mask(seq_len: int, device, dtype):
    return torch.full((seq_len, seq_len), float("-inf"), device=device, dtype=dtype).triu(1)


def _split_heads(x, heads):
    b, s, h = x.shape
    return x.view(b, s, heads, h // heads).transpose(1, 2)


def _merge_heads(x):
    b, n, s, d = x.shape
    return x.transpose(1, 2).reshape(b, s, n * d)


# ---- BERT ------------------------------------------------------------------------

class BertLayer(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.heads, self.p, self.fused = c.heads, c.dropout, c.attention == "fused"
        self.query = nn.Linear(c.hidden, c.hidden)
        self.key = nn.Linear(c.hidden, c.hidden)
        self.value = nn.Linear(c.hidden, c.hidden)
        self.attn_out = nn.Linear(c.hidden, c.hidden)
        self.attn_norm = _layer_norm(c.layer_norm, c.hidden, c.layer_norm_eps)
        self.ffn_in = nn.Linear(c.hidden, c.intermediate)
        self.ffn_out = nn.Linear(c.intermediate, c.hidden)
        self.ffn_norm = _layer_norm(c.layer_norm, c.hidden, c.layer_norm_eps)

    def forward(self, x):
        q, k, v = (_split_heads(f(x), self.heads) for f in (self.query, self.key, self.value))
        a = self.attn_out(_merge_heads(_attention(q, k, v, None, self.p, self.training, self.fused)))
        x = self.attn_norm(x + _dropout(a, self.p, self.training))
        f = self.ffn_out(F.gelu(self.ffn_in(x)))
        return self.ffn_norm(x + _dropout(f, self.p, self.training))


class Bert(nn.Module):
    """BERT encoder with the sequence-classification head (pooler on the first token)."""

    def __init__(self, c: BertConfig):
        super().__init__()
        self.config, self.p = c, c.dropout
        self.word = nn.Embedding(c.vocab_size, c.hidden)
        self.position = nn.Embedding(c.max_positions, c.hidden)
        self.token_type = nn.Embedding(c.type_vocab_size, c.hidden)
        self.embed_norm = _layer_norm(c.layer_norm, c.hidden, c.layer_norm_eps)
        self.layers = nn.ModuleList(BertLayer(c) for _ in range(c.layers))
        self.pooler = nn.Linear(c.hidden, c.hidden)
        self.classifier = nn.Linear(c.hidden, c.num_labels)

    def forward(self, input_ids, token_type_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids)
        x = _dropout(self.embed_norm(x), self.p, self.training)
        for layer in self.layers:
            x = layer(x)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(_dropout(pooled, self.p, self.training))


# ---- GPT-2 -----------------------------------------------------------------------

class GPT2Block(nn.Module):
    def __init__(self, c: GPT2Config):
        super().__init__()
        self.heads, self.p, self.fused = c.heads, c.dropout, c.attention == "fused"
        self.norm1 = nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)
        self.qkv = nn.Linear(c.hidden, 3 * c.hidden)
        self.proj = nn.Linear(c.hidden, c.hidden)
        self.norm2 = nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)
        self.fc = nn.Linear(c.hidden, 4 * c.hidden)
        self.fc_proj = nn.Linear(4 * c.hidden, c.hidden)

    def forward(self, x, mask):
        q, k, v = (_split_heads(t, self.heads) for t in self.qkv(self.norm1(x)).split(x.shape[-1], dim=-1))
        a = self.proj(_merge_heads(_attention(q, k, v, mask, self.p, self.training, self.fused, causal=True)))
        x = x + _dropout(a, self.p, self.training)
        f = self.fc_proj(F.gelu(self.fc(self.norm2(x)), approximate="tanh"))
        return x + _dropout(f, self.p, self.training)


class GPT2(nn.Module):
    """GPT-2 language model (LM head tied to the token embedding); returns logits."""

    def __init__(self, c: GPT2Config):
        super().__init__()
        self.config, self.p = c, c.dropout
        self.token = nn.Embedding(c.vocab_size, c.hidden)
        self.position = nn.Embedding(c.max_positions, c.hidden)
        self.blocks = nn.ModuleList(GPT2Block(c) for _ in range(c.layers))
        self.norm = nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)

    def forward(self, input_ids):
        s = input_ids.shape[1]
        positions = torch.arange(s, device=input_ids.device)
        x = _dropout(self.token(input_ids) + self.position(positions), self.p, self.training)
        mask = None if self.config.attention == "fused" else _causal_mask(s, x.device, x.dtype)
        for block in self.blocks:
            x = block(x, mask)
        return F.linear(self.norm(x), self.token.weight)


# ---- LLaMA-style decoder ---------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.heads, self.kv_heads, self.fused = c.heads, c.kv_heads, c.attention == "fused"
        self.head_dim = c.hidden // c.heads
        kv = c.kv_heads * self.head_dim
        self.attn_norm = RMSNorm(c.hidden, c.rms_norm_eps)
        self.q = nn.Linear(c.hidden, c.hidden, bias=False)
        self.k = nn.Linear(c.hidden, kv, bias=False)
        self.v = nn.Linear(c.hidden, kv, bias=False)
        self.o = nn.Linear(c.hidden, c.hidden, bias=False)
        self.mlp_norm = RMSNorm(c.hidden, c.rms_norm_eps)
        self.gate = nn.Linear(c.hidden, c.intermediate, bias=False)
        self.up = nn.Linear(c.hidden, c.intermediate, bias=False)
        self.down = nn.Linear(c.intermediate, c.hidden, bias=False)

    def forward(self, x, cos, sin, mask):
        h = self.attn_norm(x)
        q = _split_heads(self.q(h), self.heads)
        k = _split_heads(self.k(h), self.kv_heads)
        v = _split_heads(self.v(h), self.kv_heads)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        if self.kv_heads != self.heads:  # grouped-query attention: each key/value head serves a group
            group = self.heads // self.kv_heads
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
        x = x + self.o(_merge_heads(_attention(q, k, v, mask, 0.0, self.training, self.fused, causal=True)))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llama(nn.Module):
    """LLaMA-style decoder language model; returns logits."""

    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.config = c
        self.token = nn.Embedding(c.vocab_size, c.hidden)
        self.blocks = nn.ModuleList(LlamaBlock(c) for _ in range(c.layers))
        self.norm = RMSNorm(c.hidden, c.rms_norm_eps)
        self.lm_head = None if c.tie_embeddings else nn.Linear(c.hidden, c.vocab_size, bias=False)
        head_dim = c.hidden // c.heads
        inv_freq = 1.0 / (c.rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, input_ids):
        s = input_ids.shape[1]
        x = self.token(input_ids)
        angles = torch.outer(torch.arange(s, device=x.device, dtype=torch.float32), self.inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        mask = None if self.config.attention == "fused" else _causal_mask(s, x.device, x.dtype)
        for block in self.blocks:
            x = block(x, cos, sin, mask)
        x = self.norm(x)
        return F.linear(x, self.token.weight) if self.lm_head is None else self.lm_head(x)


# ---- ResNet, ResNeXt, SE-ResNeXt, SENet -----------------------------------------------

class SqueezeExcite(nn.Module):
    """Channel gate: global average pool, 1x1 reduce, ReLU, 1x1 expand, sigmoid, scale."""

    def __init__(self, channels: int, reduction: int):
        super().__init__()
        self.reduce = nn.Conv2d(channels, channels // reduction, 1)
        self.expand = nn.Conv2d(channels // reduction, channels, 1)

    def forward(self, x):
        g = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.expand(F.relu(self.reduce(g), inplace=True)))


class Bottleneck(nn.Module):
    def __init__(self, cin: int, planes: int, stride: int, c: ResNetConfig):
        super().__init__()
        width, out = bottleneck_width(c, planes), planes * 4
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=c.groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out)
        self.se = SqueezeExcite(out, c.se_reduction) if c.se_reduction else None
        self.down = None
        if stride != 1 or cin != out:
            self.down = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)), inplace=True)
        y = F.relu(self.bn2(self.conv2(y)), inplace=True)
        y = self.bn3(self.conv3(y))
        if self.se is not None:
            y = self.se(y)
        return F.relu(y + (x if self.down is None else self.down(x)), inplace=True)


class ResNet(nn.Module):
    """Bottleneck ResNet / ResNeXt / SE-ResNeXt / SENet image classifier; returns logits."""

    def __init__(self, c: ResNetConfig):
        super().__init__()
        self.config = c
        if c.stem == "7x7":
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True))
            cin = 64
        else:
            self.stem = nn.Sequential(
                nn.Conv2d(3, 64, 3, 2, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                nn.Conv2d(64, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                nn.Conv2d(64, 128, 3, 1, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU(inplace=True))
            cin = 128
        blocks = []
        for stage, n in enumerate(c.layers):
            planes = 64 << stage
            for b in range(n):
                blocks.append(Bottleneck(cin, planes, 2 if (b == 0 and stage > 0) else 1, c))
                cin = planes * 4
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, c.num_classes)

    def forward(self, images):
        x = F.max_pool2d(self.stem(images), 3, 2, 1)
        x = F.adaptive_avg_pool2d(self.blocks(x), 1).flatten(1)
        return self.fc(x)


# ---- Vision Transformer ----------------------------------------------------------------

class ViTBlock(nn.Module):
    def __init__(self, c: ViTConfig):
        super().__init__()
        self.heads, self.p, self.fused = c.heads, c.dropout, c.attention == "fused"
        self.norm1 = nn.LayerNorm(c.hidden, eps=1e-6)
        self.qkv = nn.Linear(c.hidden, 3 * c.hidden)
        self.proj = nn.Linear(c.hidden, c.hidden)
        self.norm2 = nn.LayerNorm(c.hidden, eps=1e-6)
        self.fc1 = nn.Linear(c.hidden, c.mlp)
        self.fc2 = nn.Linear(c.mlp, c.hidden)

    def forward(self, x):
        q, k, v = (_split_heads(t, self.heads) for t in self.qkv(self.norm1(x)).split(x.shape[-1], dim=-1))
        x = x + _dropout(self.proj(_merge_heads(_attention(q, k, v, None, self.p, self.training, self.fused))),
                         self.p, self.training)
        return x + _dropout(self.fc2(F.gelu(self.fc1(self.norm2(x)))), self.p, self.training)


class ViT(nn.Module):
    """Vision Transformer classifier (class token, pre-norm layers); returns logits."""

    def __init__(self, c: ViTConfig):
        super().__init__()
        self.config = c
        tokens = (c.image_size // c.patch) ** 2
        self.patch = nn.Conv2d(3, c.hidden, c.patch, c.patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, c.hidden))
        self.position = nn.Parameter(torch.zeros(1, tokens + 1, c.hidden))
        self.blocks = nn.ModuleList(ViTBlock(c) for _ in range(c.layers))
        self.norm = nn.LayerNorm(c.hidden, eps=1e-6)
        self.head = nn.Linear(c.hidden, c.num_classes)

    def forward(self, images):
        x = self.patch(images).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), dim=1) + self.position
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


# ---- Inception-v3 ------------------------------------------------------------------------

class ConvBN(nn.Sequential):
    def __init__(self, cin, cout, kernel, stride=1, padding=0):
        super().__init__(nn.Conv2d(cin, cout, kernel, stride, padding, bias=False), nn.BatchNorm2d(cout, eps=1e-3),
                         nn.ReLU(inplace=True))


def _same(kh, kw):
    return (kh // 2, kw // 2)


class InceptionModule(nn.Module):
    """One module of Inception-v3 (kind A, B, C, D or E): parallel branches, concatenated."""

    def __init__(self, kind: str, cin: int, width: int):
        super().__init__()
        self.kind = kind
        if kind == "A":
            self.branches = nn.ModuleList([
                ConvBN(cin, 64, 1),
                nn.Sequential(ConvBN(cin, 48, 1), ConvBN(48, 64, 5, padding=2)),
                nn.Sequential(ConvBN(cin, 64, 1), ConvBN(64, 96, 3, padding=1), ConvBN(96, 96, 3, padding=1)),
                nn.Sequential(nn.AvgPool2d(3, 1, 1), ConvBN(cin, width, 1))])
        elif kind == "B":
            self.branches = nn.ModuleList([
                ConvBN(cin, 384, 3, stride=2),
                nn.Sequential(ConvBN(cin, 64, 1), ConvBN(64, 96, 3, padding=1), ConvBN(96, 96, 3, stride=2)),
                nn.MaxPool2d(3, 2)])
        elif kind == "C":
            w = width
            self.branches = nn.ModuleList([
                ConvBN(cin, 192, 1),
                nn.Sequential(ConvBN(cin, w, 1), ConvBN(w, w, (1, 7), padding=_same(1, 7)),
                              ConvBN(w, 192, (7, 1), padding=_same(7, 1))),
                nn.Sequential(ConvBN(cin, w, 1), ConvBN(w, w, (7, 1), padding=_same(7, 1)),
                              ConvBN(w, w, (1, 7), padding=_same(1, 7)), ConvBN(w, w, (7, 1), padding=_same(7, 1)),
                              ConvBN(w, 192, (1, 7), padding=_same(1, 7))),
                nn.Sequential(nn.AvgPool2d(3, 1, 1), ConvBN(cin, 192, 1))])
        elif kind == "D":
            self.branches = nn.ModuleList([
                nn.Sequential(ConvBN(cin, 192, 1), ConvBN(192, 320, 3, stride=2)),
                nn.Sequential(ConvBN(cin, 192, 1), ConvBN(192, 192, (1, 7), padding=_same(1, 7)),
                              ConvBN(192, 192, (7, 1), padding=_same(7, 1)), ConvBN(192, 192, 3, stride=2)),
                nn.MaxPool2d(3, 2)])
        else:  # E: the 3x3 branches end in a 1x3 and a 3x1 convolution side by side
            self.b1 = ConvBN(cin, 320, 1)
            self.b3 = ConvBN(cin, 384, 1)
            self.b3a, self.b3b = ConvBN(384, 384, (1, 3), padding=(0, 1)), ConvBN(384, 384, (3, 1), padding=(1, 0))
            self.d1, self.d2 = ConvBN(cin, 448, 1), ConvBN(448, 384, 3, padding=1)
            self.d3a, self.d3b = ConvBN(384, 384, (1, 3), padding=(0, 1)), ConvBN(384, 384, (3, 1), padding=(1, 0))
            self.pool = nn.Sequential(nn.AvgPool2d(3, 1, 1), ConvBN(cin, 192, 1))

    def forward(self, x):
        if self.kind != "E":
            return torch.cat([b(x) for b in self.branches], 1)
        b3 = self.b3(x)
        d = self.d2(self.d1(x))
        return torch.cat([self.b1(x), self.b3a(b3), self.b3b(b3), self.d3a(d), self.d3b(d), self.pool(x)], 1)


class InceptionV3(nn.Module):
    """Inception-v3 image classifier (no auxiliary head); returns logits."""

    def __init__(self, c: InceptionConfig):
        super().__init__()
        self.config = c
        self.stem = nn.Sequential(ConvBN(3, 32, 3, stride=2), ConvBN(32, 32, 3), ConvBN(32, 64, 3, padding=1),
                                  nn.MaxPool2d(3, 2), ConvBN(64, 80, 1), ConvBN(80, 192, 3), nn.MaxPool2d(3, 2))
        self.modules_ = nn.Sequential(*(InceptionModule(k, cin, w) for k, cin, w in INCEPTION_MODULES))
        self.fc = nn.Linear(2048, c.num_classes)

    def forward(self, images):
        x = self.modules_(self.stem(images))
        return self.fc(_dropout(F.adaptive_avg_pool2d(x, 1).flatten(1), 0.5, self.training))


def _check_image_side(family: str, config, batch: int, side: int) -> None:
    """Refuse an image side (``seq_len``) the model cannot take, naming the argument."""
    if isinstance(config, ViTConfig):
        if side % config.patch:
            raise ValueError(f"seq_len = {side}: the image side of {family} must be a multiple of its "
                             f"{config.patch}-pixel patches")
    elif isinstance(config, InceptionConfig):
        if side < 75:
            raise ValueError(f"seq_len = {side}: Inception-v3 needs images of at least 75 x 75 (its stem and grid "
                             f"reductions shrink the image 32-fold with valid convolutions; 299 is the published size)")
    elif isinstance(config, ResNetConfig):
        last = -(-side // 32)        # the last stage's side (the stem and three stages halve it five times)
        if side < 32 or batch * last * last < 2:
            raise ValueError(f"seq_len = {side} with batch {batch}: the last stage of {family} would have "
                             f"{batch * last * last} value(s) per channel; training batch normalisation needs at "
                             f"least 2 (a side of 32 or more, and a batch of 2 at a side under 64)")


def build_model(config, dtype=torch.float32, device="meta") -> nn.Module:
    """The module for ``config``, on ``device`` (meta: nothing is allocated), in training mode."""
    cls = {BertConfig: Bert, GPT2Config: GPT2, LlamaConfig: Llama, ResNetConfig: ResNet, ViTConfig: ViT,
           InceptionConfig: InceptionV3}.get(type(config))
    if cls is None:
        raise ValueError(f"not a family configuration: {type(config).__name__}")
    with torch.device(device):
        model = cls(config)
    return model.to(dtype).train()


def family_workload(family: str, size: str | None, batch: int, seq_len: int, dtype: str = "float32",
                    **overrides):
    """(model, inputs, targets, loss_fn, config) of one family on meta, ready for :func:`capture`."""
    if not (isinstance(batch, int) and batch >= 1):
        raise ValueError(f"batch = {batch!r}: must be an integer >= 1")
    if not (isinstance(seq_len, int) and seq_len >= 1):
        raise ValueError(f"seq_len = {seq_len!r}: must be an integer >= 1")
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype)
    if torch_dtype is None:
        raise ValueError(f"dtype = {dtype!r}: one of float32, bfloat16, float16")
    config = family_config(family, size, **overrides)
    if getattr(config, "attention", "fused") not in ATTENTION_KINDS:
        raise ValueError(f"attention = {config.attention!r}: one of {', '.join(ATTENTION_KINDS)}")
    meta = torch.device("meta")
    if isinstance(config, (ResNetConfig, ViTConfig, InceptionConfig)):
        side = seq_len
        _check_image_side(family, config, batch, side)
        if isinstance(config, ViTConfig) and side != config.image_size:
            config = replace(config, image_size=side)     # its learned positions cover the image's patches
        model = build_model(config, torch_dtype)
        inputs = (torch.empty((batch, 3, side, side), dtype=torch_dtype, device=meta),)
        targets = (torch.empty((batch,), dtype=torch.long, device=meta),)

        def loss_fn(logits, labels):
            return F.cross_entropy(logits, labels)
        return model, inputs, targets, loss_fn, config
    if hasattr(config, "max_positions") and not isinstance(config, LlamaConfig) and seq_len > config.max_positions:
        raise ValueError(f"seq_len = {seq_len}: {family} has learned positions up to {config.max_positions}")
    model = build_model(config, torch_dtype)
    ids = torch.empty((batch, seq_len), dtype=torch.long, device=meta)
    if isinstance(config, BertConfig):
        inputs = (ids, torch.empty((batch, seq_len), dtype=torch.long, device=meta))
        targets = (torch.empty((batch,), dtype=torch.long, device=meta),)

        def loss_fn(logits, labels):
            return F.cross_entropy(logits, labels)
    else:
        inputs = (ids,)
        targets = (torch.empty((batch, seq_len), dtype=torch.long, device=meta),)

        def loss_fn(logits, labels):  # labels are the next tokens, already shifted
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
    return model, inputs, targets, loss_fn, config
