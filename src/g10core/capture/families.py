"""Configurations of the model families ``g10sim trace capture`` builds (no torch needed here).

Sizes follow the published configurations: BERT-Base (Devlin et al. 2019; 12 layers,
768 wide, 12 heads), GPT-2 small and medium (Radford et al. 2019; 12 x 768 and 24 x 1024,
tied input and output embeddings), and LLaMA-style decoders (RMSNorm, rotary position
embedding, SwiGLU, optional grouped-query attention): ``1b`` with the shape of
TinyLlama-1.1B (22 layers, 2048 wide, 32 heads over 4 key/value heads), ``7b`` with that
of LLaMA-2-7B (32 layers, 4096 wide, 32 heads, 11008-wide MLP), ``13b`` that of LLaMA-2-13B
(40 layers, 5120 wide, 40 heads, 13824-wide MLP; Touvron et al. 2023, table 1 and the released
configuration).  :func:`parameter_count`
counts parameters in closed form (the tests check it against the built modules).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522
    hidden: int = 768
    layers: int = 12
    heads: int = 12
    intermediate: int = 3072
    max_positions: int = 512
    type_vocab_size: int = 2
    num_labels: int = 2            # sequence classification head (pooler + classifier)
    dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    layer_norm: str = "fused"      # "decomposed": from elementary operators, as the published G10 graph
    attention: str = "fused"       # "eager": scores, softmax and weighted sum as separate kernels


@dataclass(frozen=True)
class GPT2Config:
    vocab_size: int = 50257
    hidden: int = 768
    layers: int = 12
    heads: int = 12
    max_positions: int = 1024
    dropout: float = 0.1
    layer_norm_eps: float = 1e-5   # LM head tied to the token embedding
    attention: str = "fused"       # "eager": scores, softmax and weighted sum as separate kernels


@dataclass(frozen=True)
class LlamaConfig:
    vocab_size: int = 32000
    hidden: int = 4096
    layers: int = 32
    heads: int = 32
    kv_heads: int = 32             # < heads: grouped-query attention
    intermediate: int = 11008
    max_positions: int = 4096
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_embeddings: bool = False
    attention: str = "fused"       # "eager": scores, softmax and weighted sum as separate kernels


@dataclass(frozen=True)
class ResNetConfig:
    """A bottleneck ResNet (He et al. 2016; v1.5: the stride in the 3x3 convolution), its ResNeXt
    form (Xie et al. 2017: ``groups`` x ``width_per_group`` grouped 3x3 convolutions) and
    squeeze-and-excitation (Hu et al. 2018: ``se_reduction``)."""

    layers: tuple = (3, 4, 6, 3)   # bottleneck blocks per stage
    groups: int = 1                # cardinality of the grouped 3x3 convolution
    width_per_group: int = 64      # bottleneck width = planes * width_per_group / 64 * groups
    se_reduction: int = 0          # squeeze-and-excitation: channels / reduction in the gate (0: none)
    stem: str = "7x7"              # "7x7": one 7x7 convolution; "3x3": three 3x3 ones (SENet-154)
    num_classes: int = 1000
    image_size: int = 224          # the input's side (capture's seq_len, when given, overrides it)


@dataclass(frozen=True)
class ViTConfig:
    """A Vision Transformer (Dosovitskiy et al. 2021): patches of ``patch`` pixels embedded to
    ``hidden``, a class token, pre-norm encoder layers, a linear head on the class token."""

    image_size: int = 224
    patch: int = 32
    hidden: int = 384
    layers: int = 12
    heads: int = 6
    mlp: int = 1536
    num_classes: int = 1000
    dropout: float = 0.0
    attention: str = "fused"       # "eager": scores, softmax and weighted sum as separate kernels


@dataclass(frozen=True)
class InceptionConfig:
    """Inception-v3 (Szegedy et al. 2016, "Rethinking the Inception Architecture", table 1 and
    figures 5-7; every convolution followed by batch normalisation and ReLU; no auxiliary head)."""

    num_classes: int = 1000
    image_size: int = 299


FAMILIES = {
    "bert-base": {"base": BertConfig()},
    # BERT-Base and -Large (Devlin et al. 2019, table of model sizes: 12 x 768, 24 x 1024 with 16 heads)
    "bert": {"base": BertConfig(), "large": BertConfig(hidden=1024, layers=24, heads=16, intermediate=4096)},
    # GPT-3's shapes (Brown et al. 2020, table 2.1) at 2,048 tokens, as FlashAttention trains them
    # (Dao-AILab/flash-attention training/README.md: GPT3-125M to 2.7B; its 2.7B has head dim 128)
    "gpt3": {
        "125m": GPT2Config(hidden=768, layers=12, heads=12, max_positions=2048),
        "355m": GPT2Config(hidden=1024, layers=24, heads=16, max_positions=2048),
        "760m": GPT2Config(hidden=1536, layers=24, heads=16, max_positions=2048),
        "1.3b": GPT2Config(hidden=2048, layers=24, heads=16, max_positions=2048),
        "2.7b": GPT2Config(hidden=2560, layers=32, heads=20, max_positions=2048),
    },
    "resnet": {"50": ResNetConfig(), "101": ResNetConfig(layers=(3, 4, 23, 3)),
               "152": ResNetConfig(layers=(3, 8, 36, 3))},
    "resnext": {"101-32x4d": ResNetConfig(layers=(3, 4, 23, 3), groups=32, width_per_group=4)},
    "se-resnext": {"101-32x4d": ResNetConfig(layers=(3, 4, 23, 3), groups=32, width_per_group=4, se_reduction=16)},
    # SENet-154 (Hu et al. 2018): 3-8-36-3 bottlenecks of cardinality 64 with SE, the three-convolution stem
    "senet": {"154": ResNetConfig(layers=(3, 8, 36, 3), groups=64, width_per_group=4, se_reduction=16, stem="3x3")},
    # ViT-S/32 (the G10 artifact's ViT: 50 tokens of width 384, 6 heads) and ViT-B/16
    "vit": {"s32": ViTConfig(), "b16": ViTConfig(patch=16, hidden=768, heads=12, mlp=3072)},
    "inception": {"v3": InceptionConfig()},
    "gpt2": {"small": GPT2Config(), "medium": GPT2Config(hidden=1024, layers=24, heads=16)},
    "llama": {
        "1b": LlamaConfig(hidden=2048, layers=22, heads=32, kv_heads=4, intermediate=5632, max_positions=2048),
        "7b": LlamaConfig(),
        "13b": LlamaConfig(hidden=5120, layers=40, heads=40, kv_heads=40, intermediate=13824),
    },
}
DEFAULT_SIZE = {"bert-base": "base", "bert": "base", "gpt2": "small", "gpt3": "125m", "llama": "1b",
                "resnet": "50", "resnext": "101-32x4d", "se-resnext": "101-32x4d", "senet": "154", "vit": "s32",
                "inception": "v3"}
IMAGE_FAMILIES = ("resnet", "resnext", "se-resnext", "senet", "vit", "inception")
ATTENTION_KINDS = ("fused", "eager")


def family_config(family: str, size: str | None = None, **overrides):
    """The configuration of ``family`` at ``size`` (default size per family), with overrides."""
    if family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; known: {', '.join(FAMILIES)}")
    size = DEFAULT_SIZE[family] if size is None else size
    if size not in FAMILIES[family]:
        raise ValueError(f"unknown size {size!r} of {family}; known: {', '.join(FAMILIES[family])}")
    return replace(FAMILIES[family][size], **overrides)


def config_json(config) -> str:
    return json.dumps({"class": type(config).__name__, **asdict(config)}, sort_keys=True)


def parameter_count(config) -> int:
    """Trainable parameters of the module :mod:`.models` builds for ``config``."""
    if isinstance(config, BertConfig):
        h, f = config.hidden, config.intermediate
        emb = (config.vocab_size + config.max_positions + config.type_vocab_size) * h + 2 * h
        layer = 4 * (h * h + h) + 2 * h + (h * f + f) + (f * h + h) + 2 * h
        return emb + config.layers * layer + (h * h + h) + (h * config.num_labels + config.num_labels)
    if isinstance(config, GPT2Config):
        h = config.hidden
        emb = (config.vocab_size + config.max_positions) * h
        layer = 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * h + (h * 4 * h + 4 * h) + (4 * h * h + h)
        return emb + config.layers * layer + 2 * h
    if isinstance(config, LlamaConfig):
        h, f = config.hidden, config.intermediate
        head_dim = h // config.heads
        kv = config.kv_heads * head_dim
        layer = h + (h * h + 2 * h * kv + h * h) + h + 3 * h * f
        head = 0 if config.tie_embeddings else config.vocab_size * h
        return config.vocab_size * h + config.layers * layer + h + head
    if isinstance(config, ResNetConfig):
        return _resnet_parameters(config)
    if isinstance(config, ViTConfig):
        h, m = config.hidden, config.mlp
        tokens = (config.image_size // config.patch) ** 2 + 1
        embed = 3 * config.patch ** 2 * h + h + h + tokens * h          # patch conv, class token, positions
        layer = 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * h + (h * m + m) + (m * h + h)
        return embed + config.layers * layer + 2 * h + h * config.num_classes + config.num_classes
    if isinstance(config, InceptionConfig):
        return _inception_parameters(config)
    raise ValueError(f"not a family configuration: {type(config).__name__}")


def bottleneck_width(config: ResNetConfig, planes: int) -> int:
    """Channels of a bottleneck's grouped 3x3 convolution."""
    return planes * config.width_per_group // 64 * config.groups


def _resnet_parameters(c: ResNetConfig) -> int:
    def bn(ch):
        return 2 * ch

    if c.stem == "7x7":
        n, cin = 3 * 64 * 49 + bn(64), 64
    else:  # three 3x3 convolutions: 3 -> 64 -> 64 -> 128
        n, cin = 3 * 64 * 9 + bn(64) + 64 * 64 * 9 + bn(64) + 64 * 128 * 9 + bn(128), 128
    for stage, blocks in enumerate(c.layers):
        planes = 64 << stage
        width, out = bottleneck_width(c, planes), planes * 4
        for b in range(blocks):
            n += cin * width + bn(width) + width * (width // c.groups) * 9 + bn(width) + width * out + bn(out)
            if c.se_reduction:
                mid = out // c.se_reduction
                n += out * mid + mid + mid * out + out
            if b == 0 and (stage > 0 or cin != out):
                n += cin * out + bn(out)
            cin = out
    return n + cin * c.num_classes + c.num_classes


# Inception-v3's modules: (kind, input channels, its branch widths); see models.Inception
INCEPTION_MODULES = (
    ("A", 192, 32), ("A", 256, 64), ("A", 288, 64),   # 35 x 35 (figure 5), pool branch width
    ("B", 288, 0),                                     # grid reduction to 17 x 17
    ("C", 768, 128), ("C", 768, 160), ("C", 768, 160), ("C", 768, 192),   # 17 x 17 (figure 6), 7x7 width
    ("D", 768, 0),                                     # grid reduction to 8 x 8
    ("E", 1280, 0), ("E", 2048, 0),                    # 8 x 8 (figure 7)
)


def inception_convs(kind: str, cin: int, width: int) -> list:
    """(in, out, kernel height, kernel width) of every convolution of one Inception-v3 module."""
    if kind == "A":
        return [(cin, 64, 1, 1), (cin, 48, 1, 1), (48, 64, 5, 5), (cin, 64, 1, 1), (64, 96, 3, 3), (96, 96, 3, 3),
                (cin, width, 1, 1)]
    if kind == "B":
        return [(cin, 384, 3, 3), (cin, 64, 1, 1), (64, 96, 3, 3), (96, 96, 3, 3)]
    if kind == "C":
        w = width
        return [(cin, 192, 1, 1), (cin, w, 1, 1), (w, w, 1, 7), (w, 192, 7, 1), (cin, w, 1, 1), (w, w, 7, 1),
                (w, w, 1, 7), (w, w, 7, 1), (w, 192, 1, 7), (cin, 192, 1, 1)]
    if kind == "D":
        return [(cin, 192, 1, 1), (192, 320, 3, 3), (cin, 192, 1, 1), (192, 192, 1, 7), (192, 192, 7, 1),
                (192, 192, 3, 3)]
    if kind == "E":
        return [(cin, 320, 1, 1), (cin, 384, 1, 1), (384, 384, 1, 3), (384, 384, 3, 1), (cin, 448, 1, 1),
                (448, 384, 3, 3), (384, 384, 1, 3), (384, 384, 3, 1), (cin, 192, 1, 1)]
    raise ValueError(kind)


INCEPTION_STEM = ((3, 32, 3, 3), (32, 32, 3, 3), (32, 64, 3, 3), (64, 80, 1, 1), (80, 192, 3, 3))


def _inception_parameters(c: InceptionConfig) -> int:
    convs = list(INCEPTION_STEM)
    for kind, cin, width in INCEPTION_MODULES:
        convs += inception_convs(kind, cin, width)
    n = sum(i * o * kh * kw + 2 * o for i, o, kh, kw in convs)   # bias-free convolutions, BN scale and shift
    return n + 2048 * c.num_classes + c.num_classes
