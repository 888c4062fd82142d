"""Inference workloads of decoder language models, built from the model's configuration.

:func:`inference_trace` writes the kernels of one batch of requests: the prompt's forward pass
(*prefill*) and then ``gen - 1`` *decode* steps, each the forward pass of one new token per
sequence over the keys and values cached so far (the first generated token comes out of
prefill, as FlexGen and Hugging Face ``generate`` count it: ``gen`` tokens in all).  Nothing
is run: every kernel's work (FLOPs, bytes, unit, kind, GEMM tiles) is written down from the
configuration, and the physical kernel-time model (:mod:`g10core.workload.physical`,
``physical-v1``) gives its time on the chosen GPU, so OPT-175B needs no GPU and no weights.

Kernels per layer, in order (``b`` sequences of the GPU batch, ``s`` new tokens each, ``L``
cached plus new tokens, ``d`` hidden, ``d_kv`` the keys' width (``d`` without grouped-query
attention), ``f`` the FFN width):

============  ==========================================================  =================
kernel        FLOPs                                                       kind
============  ==========================================================  =================
ln1           b s d (one per element of its result, as physical-v1)       other
qkv           2 b s d (d + 2 d_kv)                                        GEMM
attention     4 b h s L d_head (QK^T and PV)                              attention (fwd)
out_proj      2 b s d d                                                   GEMM
ln2           b s d                                                       other
fc1           2 b s d f (x 2: gate and up of a gated FFN, LLaMA)          GEMM
act           b s f                                                       other
fc2           2 b s f d                                                   GEMM
============  ==========================================================  =================

then the final norm and the LM head (``2 b s d V``; prefill computes the logits of every
prompt position, as Hugging Face's OPT does), the embedding lookup first.  A kernel's bytes are
its weights (as stored) and its activations in and out (fp16); attention's are its KV cache.
The head is its own weight tensor (layer ``layers + 1``) even where the model ties it to the
embedding, as FlexGen's OPT keeps a copy in its output layer.

**The KV cache** is one tensor per layer per phase, role ``kv_cache`` (trace format 5): prefill
writes the prompt's keys and values (``2 b s d_kv`` fp16 values per layer), each decode step a
tensor for its one new token, and the attention kernel of a step reads every earlier tensor of
its layer.  We chose tensors per step over one growing allocation because the replays allocate
a tensor at its size once (no tensor grows in place); the cache's bytes at step ``t`` are
exactly the closed form ``2 x layers x b x d_kv x (prompt + t) x 2 B``.

**Weights** are fp16 (2 B each) or int4 (``weights="int4"``): 4 bits per weight plus an fp16
scale and minimum per group of 64 (FlexGen's and ZeRO-Inference's group-wise asymmetric
quantization, group size 64: Sheng et al., ICML 2023, section 5 "Approximate Methods";
DeepSpeedExamples zero_inference README, ``group_size: 64``), 0.5625 B per weight.  Both
systems dequantise a weight matrix back to fp16 before its GEMM (FlexGen: "we decompress the
tensors back to FP16 before computation", same section): a ``dequant`` kernel per weight
matrix reads its int4 bytes, writes 2 B per weight and does 2 FLOPs per weight (subtract the
minimum, multiply by the scale), and the GEMM reads the fp16 copy.

**GPU batches**: ``gpu_batches = n`` splits the batch into ``n`` GPU batches of ``batch / n``
and runs each layer for all of them before the next layer (FlexGen's block schedule, Sheng et
al., section 4.2, Algorithm 1: the weights of a layer are loaded once per block); every GPU
batch has its own KV cache tensors.  ``n = 1`` is the usual order.

Model configurations (:data:`MODELS`) are the published ones, cited per family.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codes import ROLE_INPUT, ROLE_KV_CACHE, ROLE_PARAMETER, ROLE_TEMPORARY
from ..gpus import gpu_model
from .physical import (KIND_ATTENTION_FWD, KIND_GEMM, KIND_OTHER, UNIT_CUDA_FP32, UNIT_TENSOR_FP16, KernelWork,
                       best_tile, fault_times_ns, link_GBps, physical_model)
from .trace import ACCESS_READ, ACCESS_WRITE, MAX_ITERATION_TIME_NS, Trace, kernel_io_bytes, validate_trace

FP16_BYTES = 2
# 4-bit group-wise quantization, group 64, an fp16 scale and an fp16 minimum per group (see the docstring)
INT4_GROUP = 64
INT4_BYTES_PER_WEIGHT = 0.5 + 2 * FP16_BYTES / INT4_GROUP     # 0.5625
DEQUANT_FLOPS_PER_WEIGHT = 2.0
WEIGHT_FORMATS = ("fp16", "int4")

OPT_SRC = ("Zhang et al., 'OPT: Open Pre-trained Transformer Language Models', arXiv 2205.01068, Table 1 (layers, "
           "heads, d_model); FFN 4 d_model, vocabulary 50272 and 2048 positions: facebook/opt-* config.json")
LLAMA_SRC = ("Touvron et al., 'LLaMA' (arXiv 2302.13971) Table 2 and 'Llama 2' (arXiv 2307.09288) Table 1 and "
             "section 2.2 (grouped-query attention, 8 KV heads, for 70B); FFN widths and vocabulary 32000: "
             "meta-llama/Llama-2-*-hf config.json (intermediate_size 11008 / 28672)")
LLAMA3_SRC = ("Grattafiori et al., 'The Llama 3 Herd of Models' (arXiv 2407.21783) Table 3 (70B: 80 layers, model "
              "dimension 8192, FFN 28672, 64 attention heads, 8 key/value heads); vocabulary 128256 and 8192 positions: "
              "meta-llama/Meta-Llama-3-70B config.json")
GPT2_SRC = ("Radford et al., 'Language Models are Unsupervised Multitask Learners' (2019), Table 2 (layers, "
            "d_model); heads, vocabulary 50257, 1024 positions: openai-community/gpt2* config.json")
BLOOM_SRC = "BigScience, 'BLOOM', arXiv 2211.05100, Table 3 (176B: 70 layers, 112 heads, hidden 14336, vocab 250880)"


@dataclass(frozen=True)
class LMConfig:
    """A decoder-only transformer's shape: every figure from the publication in ``source``."""

    name: str
    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    kv_heads: int = 0            # 0: as many as ``heads`` (no grouped-query attention)
    gated_ffn: bool = False      # SwiGLU: gate and up projections (LLaMA)
    learned_positions: bool = True
    source: str = ""

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        return (self.kv_heads or self.heads) * self.head_dim

    def layer_weights(self) -> dict:
        """Weight elements of one block, by matrix (biases and norms included where the family has them)."""
        d, f = self.hidden, self.ffn
        mats = {"qkv": d * (d + 2 * self.kv_dim), "out_proj": d * d}
        if self.gated_ffn:
            mats.update(fc1=2 * d * f, fc2=f * d)
        else:
            mats.update(fc1=d * f, fc2=f * d)
        return mats

    def n_parameters(self) -> int:
        """Weights of the model (matrices, embeddings; norms and biases are < 0.1 % and left out)."""
        emb = self.vocab * self.hidden + (self.max_positions * self.hidden if self.learned_positions else 0)
        return int(self.layers * sum(self.layer_weights().values()) + emb)

    def kv_cache_bytes(self, tokens: int, batch: int, bytes_per_value: int = FP16_BYTES) -> int:
        """The closed form 2 x layers x kv_heads x head_dim x tokens x batch x bytes."""
        return 2 * self.layers * self.kv_dim * tokens * batch * bytes_per_value


def _opt(name, layers, hidden, heads):
    return LMConfig(name, layers, hidden, heads, 4 * hidden, 50272, 2048, source=OPT_SRC)


def _gpt2(name, layers, hidden, heads):
    return LMConfig(name, layers, hidden, heads, 4 * hidden, 50257, 1024, source=GPT2_SRC)


MODELS: dict[str, LMConfig] = {m.name: m for m in (
    _opt("opt-125m", 12, 768, 12), _opt("opt-1.3b", 24, 2048, 32), _opt("opt-6.7b", 32, 4096, 32),
    _opt("opt-13b", 40, 5120, 40), _opt("opt-30b", 48, 7168, 56), _opt("opt-66b", 64, 9216, 72),
    _opt("opt-175b", 96, 12288, 96),
    LMConfig("llama-7b", 32, 4096, 32, 11008, 32000, 2048, gated_ffn=True, learned_positions=False,
             source=LLAMA_SRC),
    LMConfig("llama-2-7b", 32, 4096, 32, 11008, 32000, 4096, gated_ffn=True, learned_positions=False,
             source=LLAMA_SRC),
    LMConfig("llama-2-70b", 80, 8192, 64, 28672, 32000, 4096, kv_heads=8, gated_ffn=True,
             learned_positions=False, source=LLAMA_SRC),
    LMConfig("llama-3-70b", 80, 8192, 64, 28672, 128256, 8192, kv_heads=8, gated_ffn=True,
             learned_positions=False, source=LLAMA3_SRC),
    _gpt2("gpt2", 12, 768, 12), _gpt2("gpt2-medium", 24, 1024, 16), _gpt2("gpt2-large", 36, 1280, 20),
    _gpt2("gpt2-xl", 48, 1600, 25),
    LMConfig("bloom-176b", 70, 14336, 112, 4 * 14336, 250880, 2048, learned_positions=False, source=BLOOM_SRC),
)}


def lm_config(name: str) -> LMConfig:
    """The configuration of ``name``; ValueError naming the known ones."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    return MODELS[name]


def check_request(cfg: LMConfig, prompt: int, gen: int, batch: int, gpu_batches: int = 1) -> None:
    """ValueError (one line, naming the argument) for a request the model cannot serve."""
    for name, v in (("prompt", prompt), ("gen", gen), ("batch", batch), ("gpu_batches", gpu_batches)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} = {v!r}: must be an integer >= 1"
                             + (" (zero generated tokens is no inference run)" if name == "gen" else ""))
    if prompt + gen > cfg.max_positions:
        raise ValueError(f"prompt + gen = {prompt + gen} tokens is beyond {cfg.name}'s context of "
                         f"{cfg.max_positions} positions")
    if batch % gpu_batches:
        raise ValueError(f"batch = {batch} is not a multiple of gpu_batches = {gpu_batches}")


class _Builder:
    def __init__(self):
        self.t_size, self.t_glob, self.t_name, self.t_role, self.t_layer = [], [], [], [], []
        self.k_name, self.k_phase, self.offsets = [], [], [0]
        self.a_t, self.a_m = [], []
        self.work = {k: [] for k in ("flops", "bytes", "unit", "kind", "tiles", "fill")}

    def tensor(self, name, size, glob, role, layer=-1) -> int:
        self.t_size.append(max(1, int(round(size))))
        self.t_glob.append(glob)
        self.t_name.append(name)
        self.t_role.append(role)
        self.t_layer.append(layer)
        return len(self.t_size) - 1

    def kernel(self, name, phase, reads, writes, flops, nbytes, unit, kind, tiles=0, fill=1.0):
        seen = set()
        for t in reads:
            if t not in seen:
                seen.add(t)
                self.a_t.append(t)
                self.a_m.append(ACCESS_READ | (ACCESS_WRITE if t in writes else 0))
        for t in writes:
            if t not in seen:
                seen.add(t)
                self.a_t.append(t)
                self.a_m.append(ACCESS_WRITE)
        self.offsets.append(len(self.a_t))
        self.k_name.append(name)
        self.k_phase.append(phase)
        w = self.work
        w["flops"].append(float(flops))
        w["bytes"].append(float(nbytes))
        w["unit"].append(unit)
        w["kind"].append(kind)
        w["tiles"].append(int(tiles))
        w["fill"].append(float(fill))


def inference_trace(model: str | LMConfig, prompt: int, gen: int, batch: int, gpu: str = "A100-40GB",
                    weights: str = "fp16", gpu_batches: int = 1, kv_cache: str = "fp16") -> Trace:
    """The trace of one batch of requests: prefill, then ``gen - 1`` decode steps.

    Parameters
    ----------
    model : str or LMConfig
        A key of :data:`MODELS` (``opt-175b``, ``llama-2-70b``, ``gpt2``, ...) or a configuration.
    prompt, gen, batch : int
        Prompt tokens per sequence, tokens generated per sequence (>= 1), sequences.
    gpu : str
        The GPU (:data:`g10core.gpus.GPUS`) the kernel times are for.
    weights : str
        ``fp16`` or ``int4`` (with a dequantisation kernel per weight matrix).
    gpu_batches : int
        GPU batches per block (FlexGen's zig-zag order); must divide ``batch``.
    kv_cache : str
        ``fp16`` or ``int4`` (FlexGen's ``--compress-cache``: the same group-wise 4-bit format
        as the weights, 0.5625 B per value; its (de)quantisation work is not modelled).

    Returns
    -------
    Trace
        Format-5 trace: ``kernel_phase`` 0 for prefill, ``i`` for decode step ``i``; the KV cache
        as ``kv_cache`` tensors, weights as global ``parameter`` tensors of their layer (0 the
        embedding, 1..layers the blocks, layers + 1 the head).

    Raises
    ------
    ValueError
        An unknown model, GPU or weight format, or a request the model cannot serve.

    Examples
    --------
    >>> from g10core.workload.llm import inference_trace
    >>> t = inference_trace("opt-125m", prompt=8, gen=4, batch=2, gpu="T4")
    >>> int(t.kernel_phase.max())
    3
    """
    cfg = lm_config(model) if isinstance(model, str) else model
    g = gpu_model(gpu)
    if weights not in WEIGHT_FORMATS:
        raise ValueError(f"weights = {weights!r}: one of {', '.join(WEIGHT_FORMATS)}")
    if kv_cache not in WEIGHT_FORMATS:
        raise ValueError(f"kv_cache = {kv_cache!r}: one of {', '.join(WEIGHT_FORMATS)}")
    check_request(cfg, prompt, gen, batch, gpu_batches)
    kvb = INT4_BYTES_PER_WEIGHT if kv_cache == "int4" else FP16_BYTES
    int4 = weights == "int4"
    wb = INT4_BYTES_PER_WEIGHT if int4 else FP16_BYTES
    d, f, V, dkv, h, hd = cfg.hidden, cfg.ffn, cfg.vocab, cfg.kv_dim, cfg.heads, cfg.head_dim
    gb = batch // gpu_batches
    B = _Builder()
    tile_cache: dict = {}

    def tiles(m, n, k):
        key = (m, n, k)
        if key not in tile_cache:
            tile_cache[key] = best_tile(m, n, 1, g.sms, k=k)
        return tile_cache[key]

    # weights: layer 0 the embedding, 1..layers the blocks, layers + 1 the final norm and LM head
    emb_elems = V * d + (cfg.max_positions * d if cfg.learned_positions else 0)
    w_emb = B.tensor("param:embed", emb_elems * FP16_BYTES, True, ROLE_PARAMETER, 0)   # lookups stay fp16
    blocks = []
    for i in range(cfg.layers):
        mats = {m: B.tensor(f"param:layers.{i}.{m}", n * wb, True, ROLE_PARAMETER, i + 1)
                for m, n in cfg.layer_weights().items()}
        mats["ln"] = B.tensor(f"param:layers.{i}.ln", 4 * d * FP16_BYTES, True, ROLE_PARAMETER, i + 1)
        blocks.append(mats)
    w_lnf = B.tensor("param:final_ln", 2 * d * FP16_BYTES, True, ROLE_PARAMETER, cfg.layers + 1)
    # the head is a tensor of its own even where the model ties it to the embedding (OPT, GPT-2, BLOOM):
    # FlexGen's OPT keeps a copy of the token embedding in its output layer, so each layer moves on its own
    w_head = B.tensor("param:lm_head", V * d * wb, True, ROLE_PARAMETER, cfg.layers + 1)
    kv = [[[] for _ in range(cfg.layers)] for _ in range(gpu_batches)]   # [gpu batch][layer] -> tensors

    def gemm(name, phase, x, w, out, m, n, k, nweights):
        reads = [x, w]
        src_bytes = nweights * FP16_BYTES
        if int4:
            deq = B.tensor(f"fp16:{name}", nweights * FP16_BYTES, False, ROLE_TEMPORARY)
            B.kernel(f"{name}.dequant", phase, [w], [deq], DEQUANT_FLOPS_PER_WEIGHT * nweights,
                     nweights * (INT4_BYTES_PER_WEIGHT + FP16_BYTES), UNIT_CUDA_FP32, KIND_OTHER)
            reads = [x, deq]
        t, fill = tiles(m, n, k)
        B.kernel(name, phase, reads, [out], 2.0 * m * n * k, src_bytes + (m * k + m * n) * FP16_BYTES,
                 UNIT_TENSOR_FP16, KIND_GEMM, t, fill)

    def other(name, phase, reads, out, elems, in_bytes):
        B.kernel(name, phase, reads, [out], elems, in_bytes + elems * FP16_BYTES, UNIT_CUDA_FP32, KIND_OTHER)

    for phase in range(gen):
        s = prompt if phase == 0 else 1
        ctx = prompt + phase                       # tokens cached after this step's new ones
        tag = "prefill" if phase == 0 else f"decode{phase}"
        xs = []
        for j in range(gpu_batches):
            tok = B.tensor(f"input:tokens.{tag}.g{j}", gb * s * 8, False, ROLE_INPUT)
            x = B.tensor(f"act:{tag}.g{j}.embed", gb * s * d * FP16_BYTES, False, ROLE_TEMPORARY)
            B.kernel(f"{tag}.g{j}.embed", phase, [tok, w_emb], [x], gb * s * d,
                     gb * s * 8 + 2 * gb * s * d * FP16_BYTES, UNIT_CUDA_FP32, KIND_OTHER)
            xs.append(x)
        for i in range(cfg.layers):
            mats = blocks[i]
            for j in range(gpu_batches):
                p = f"{tag}.g{j}.l{i}"
                m = gb * s
                act = lambda what, n: B.tensor(f"act:{p}.{what}", n * FP16_BYTES, False, ROLE_TEMPORARY)  # noqa: E731
                x = xs[j]
                a = act("ln1", m * d)
                other(f"{p}.ln1", phase, [x, mats["ln"]], a, m * d, m * d * FP16_BYTES)
                qkv = act("qkv", m * (d + 2 * dkv))
                gemm(f"{p}.qkv", phase, a, mats["qkv"], qkv, m, d + 2 * dkv, d, d * (d + 2 * dkv))
                new_kv = B.tensor(f"kv:{p}", 2 * gb * s * dkv * kvb, False, ROLE_KV_CACHE, i + 1)
                kv[j][i].append(new_kv)
                att = act("attn", m * d)
                cache_bytes = 2 * gb * ctx * dkv * kvb
                B.kernel(f"{p}.attention", phase, [qkv] + kv[j][i][:-1], [new_kv, att],
                         4.0 * gb * h * s * ctx * hd, cache_bytes + 2 * m * d * FP16_BYTES,
                         UNIT_TENSOR_FP16, KIND_ATTENTION_FWD)
                o = act("out", m * d)
                gemm(f"{p}.out_proj", phase, att, mats["out_proj"], o, m, d, d, d * d)
                a2 = act("ln2", m * d)
                other(f"{p}.ln2", phase, [o, x, mats["ln"]], a2, m * d, 2 * m * d * FP16_BYTES)
                n1 = 2 * f if cfg.gated_ffn else f
                h1 = act("fc1", m * n1)
                gemm(f"{p}.fc1", phase, a2, mats["fc1"], h1, m, n1, d, d * n1)
                h2 = act("act", m * f)
                other(f"{p}.act", phase, [h1], h2, m * f, m * n1 * FP16_BYTES)
                y = act("fc2", m * d)
                gemm(f"{p}.fc2", phase, h2, mats["fc2"], y, m, d, f, f * d)
                xs[j] = y
        for j in range(gpu_batches):
            p = f"{tag}.g{j}"
            m = gb * s
            z = B.tensor(f"act:{p}.final_ln", m * d * FP16_BYTES, False, ROLE_TEMPORARY)
            other(f"{p}.final_ln", phase, [xs[j], w_lnf], z, m * d, m * d * FP16_BYTES)
            logits = B.tensor(f"act:{p}.logits", m * V * FP16_BYTES, False, ROLE_TEMPORARY)
            gemm(f"{p}.lm_head", phase, z, w_head, logits, m, V, d, V * d)

    work = KernelWork(flops=np.array(B.work["flops"]), bytes=np.array(B.work["bytes"]),
                      unit=np.array(B.work["unit"], np.uint8), kind=np.array(B.work["kind"], np.uint8),
                      tiles=np.array(B.work["tiles"], np.int64), fill=np.array(B.work["fill"], np.float32))
    t11 = physical_model().ideal_ns(work, g)
    size = np.array(B.t_size, np.int64)
    offsets = np.array(B.offsets, np.int64)
    a_t = np.array(B.a_t, np.int32)
    a_m = np.array(B.a_m, np.uint8)
    in_b, out_b = kernel_io_bytes(offsets, a_t, a_m, size)
    t10, t00 = fault_times_ns(t11, in_b.astype(np.float64), out_b.astype(np.float64), link_GBps(g))
    if float(t00.sum()) > MAX_ITERATION_TIME_NS:
        raise ValueError("the run's kernel times add up to more than the trace format holds")
    params = dict(model=cfg.name, prompt=int(prompt), gen=int(gen), batch=int(batch), gpu=g.name, weights=weights,
                  gpu_batches=int(gpu_batches), kv_cache=kv_cache)
    trace = Trace(
        model=cfg.name, batch_size=int(batch), tensor_size_bytes=size, tensor_is_global=np.array(B.t_glob, bool),
        tensor_name=np.array(B.t_name, dtype=str), kernel_name=np.array(B.k_name, dtype=str),
        kernel_time_ideal_ns=t11, kernel_time_fault_all_ns=t00, kernel_time_fault_outputs_ns=t10,
        kernel_workspace_bytes=np.zeros(len(B.k_name), np.int64), access_offsets=offsets, access_tensor=a_t,
        access_mode=a_m,
        source="g10core.workload.llm.inference_trace(" + ", ".join(f"{k}={v!r}" for k, v in params.items()) + ")",
        profiling_gpu=f"NVIDIA {g.name} (analytical work, physical-v1 times)", profiled_gpu=g.name,
        attrs={f"inference_{k}": v for k, v in params.items()}, tensor_role=np.array(B.t_role, np.int8),
        tensor_layer=np.array(B.t_layer, np.int32), kernel_work=work, kernel_phase=np.array(B.k_phase, np.int32))
    validate_trace(trace)
    return trace


def is_inference_trace(trace: Trace) -> bool:
    """Whether ``trace`` is an inference run (it records its phases)."""
    return trace.kernel_phase is not None
