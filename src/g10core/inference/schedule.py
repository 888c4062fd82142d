"""Offloaded inference schedules (FlexGen, ZeRO-Inference, Accelerate) run over an inference trace.

A run is one batch of requests: prefill, then the decode steps (:mod:`g10core.workload.llm`).
The trace gives, per phase and per layer, the GPU time of its kernels (``physical-v1``), the
weights the layer reads, the KV cache its attention reads and writes, and the activations that
cross into the next layer.  A policy places each of weights, KV cache and activations on the
GPU, host memory (``cpu``) or the SSD (``disk``) and moves them layer by layer; a layer step of a
phase takes

* with overlap (FlexGen, ZeRO-Inference's prefetch): ``max(ctog, gtoc, dtoc, ctod, comp)``,
  FlexGen's cost model (Sheng et al., "FlexGen: High-Throughput Generative Inference of Large
  Language Models with a Single GPU", ICML 2023, section 4.3 and its appendix: the five
  resources of a layer step, host-to-GPU and GPU-to-host copies, disk reads and writes and
  computation, overlap, and a step takes the longest of them); ``comp`` is the GPU kernels plus
  the CPU's attention where attention runs on the CPU;
* without overlap (Hugging Face Accelerate's hooks move an offloaded layer's weights to the
  GPU when the layer is called, then run it): the sum of the same terms.

Copies run at the GPU link's effective bandwidth (:class:`g10core.link.pcie.PcieSpec` of the GPU's
PCIe generation and lanes); the SSD at the machine's read and write bandwidth; a layer's weights
coming from the SSD pass through host memory on their way to the GPU (both hops counted, the
slower one bounding an overlapped step).  Attention on the CPU (FlexGen's ``--cpu``,
ZeRO-Inference's KV offload) streams the layer's cached keys and values from host memory: its
time is ``max(flops / (cores x per-core FLOP/s), cache bytes / host bandwidth)``; the new
keys, values and queries go down and the attention output comes back over the link.

Metrics (FlexGen's definitions, its ``flex_opt.py`` benchmark): time to first token = prefill
(the first token comes out of the prompt's forward pass); time per output token = the decode
steps' time over ``gen - 1``; generation throughput = ``batch x gen / (prefill + decode)``.

Every policy refuses a placement the machine cannot hold (:class:`InferenceMemoryError`, the
bytes it needs beside what there is): the GPU holds its share of the weights, its share of the
whole batch's KV cache at the last step, a layer's weights in flight (two with prefetch: the
one computing and the next), and the largest kernel's activations; host memory holds its
shares, the SSD the rest.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ..codes import ROLE_KV_CACHE, ROLE_PARAMETER
from ..errors import InferenceMemoryError  # noqa: F401 (importable from here)
from ..gpus import gpu_model
from ..link.pcie import PcieSpec
from ..workload.physical import KIND_ATTENTION_FWD
from ..workload.trace import ACCESS_READ, ACCESS_WRITE, Trace

GB = 1e9
POLICIES = ("flexgen", "zero-inference", "accelerate")


@dataclass(frozen=True)
class Machine:
    """The machine an inference run is on: GPU, host memory and CPU, SSD.

    Parameters
    ----------
    gpu : str
        A :data:`g10core.gpus.GPUS` key (memory, PCIe link, the kernel times' GPU).
    host_memory_GB : float
        DRAM available to the run.
    disk_read_GBps, disk_write_GBps : float
        The SSD's sequential bandwidths.
    cpu_cores, cpu_GFLOPs_per_core, cpu_memory_GBps : float
        The CPU that runs attention over an offloaded cache: cores, fp32 FLOP/s per core,
        sustained DRAM bandwidth.
    disk_GB : float
        The SSD's capacity (default: unbounded).
    gpu_memory_GB : float or None
        The GPU memory a run may use; None: the GPU model's (``memory_GiB``).
    sources : dict
        Where each figure comes from.
    """

    gpu: str
    host_memory_GB: float
    disk_read_GBps: float
    disk_write_GBps: float
    cpu_cores: int
    cpu_GFLOPs_per_core: float
    cpu_memory_GBps: float
    disk_GB: float = math.inf
    gpu_memory_GB: float | None = None    # None: the GPU model's memory
    sources: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        gpu_model(self.gpu)
        for name in ("host_memory_GB", "disk_read_GBps", "disk_write_GBps", "cpu_cores", "cpu_GFLOPs_per_core",
                     "cpu_memory_GBps"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"machine.{name} = {v!r}: must be a number > 0")

    @property
    def gpu_memory_bytes(self) -> float:
        if self.gpu_memory_GB is not None:
            return self.gpu_memory_GB * GB
        return gpu_model(self.gpu).memory_GiB * (1 << 30)

    def link_GBps(self, direction: str) -> float:
        g = gpu_model(self.gpu)
        return PcieSpec(generation=g.pcie_generation, lanes=g.pcie_lanes).effective_GBps(direction)


# A GCP n1-highmem-32 (32 vCPUs = 16 Skylake cores, 208 GB): FlexGen's T4 machine (its
# batch_size_table.md: "an NVIDIA T4 (16GB) instance on GCP with 208GB of DRAM and 1.5TB of SSD";
# 208 GB is the n1-highmem-32's memory, GCP "General-purpose machine family" page).
_SKYLAKE = ("a Skylake-SP core: 2.0 GHz x 2 AVX-512 FMA units x 16 fp32 lanes x 2 = 128 GFLOP/s (Intel ARK, Xeon "
            "Gold 6138-class N1 host); sustained DRAM bandwidth 6 channels x DDR4-2666 x 8 B = 128 GB/s x 0.757 "
            "(STREAM share, params.CPUSpec.memory_stream_fraction) = 96.9 GB/s; the VM's share of its socket is "
            "not published (an assumption)")
MACHINES: dict = {
    "flexgen-t4": Machine(
        "T4", 208.0, 1.2, 1.2, 16, 128.0, 96.9, disk_GB=1500.0,
        sources={"disk_GB": "1.5 TB of SSD (FlexGen batch_size_table.md)",
                 "gpu": "FlexGen batch_size_table.md: one T4 16 GB", "host_memory_GB": "208 GB DRAM (same)",
                 "disk_read_GBps": ("1,200 MB/s: DeepSpeedExamples zero_inference/README.md, its (commented) T4 "
                                    "configuration 'NVIDIA T4 GPU with 16GB HBM; 208GB host CPU memory with disk "
                                    "throughput of 1200 MB/s' (FlexGen's machine); writes taken as reads"),
                 "cpu": _SKYLAKE}),
    "zero-inference-a6000": Machine(
        "A6000", 252.0, 5.6, 5.6, 16, 128.0, 96.9, disk_GB=2000.0,
        sources={"disk_GB": "CS3040 NVMe 2 TB (same README)",
                 "gpu": "DeepSpeedExamples zero_inference/README.md: one NVIDIA A6000 48 GB",
                 "host_memory_GB": "252 GB host CPU memory (same)",
                 "disk_read_GBps": "CS3040 NVMe 2 TB, 5600 MB/s sequential reads (same); writes taken as reads",
                 "cpu": "not published (a Lambda workstation): the FlexGen machine's CPU figures, " + _SKYLAKE}),
}


# DeepNVMe's LLaMA-3-70B ZeRO-Inference runs (microsoft/DeepSpeed blogs/deepnvme/03-2025/README.md): one GPU, the
# weights read from a RAID0 of NVMe drives; the drive sets' read / write rates are the same post's ds_io
# measurements (1 GB transfers between HBM and the RAID0 volume), taken as the disk's bandwidths.
_DEEPNVME = "microsoft/DeepSpeed blogs/deepnvme/03-2025/README.md"
_DEEPNVME_UNUSED = ("not published; does not bind (the weights stream from the drives, the KV cache stays on the GPU: "
                    "the run holds nothing in host memory and runs no CPU attention), so the FlexGen machine's CPU "
                    "figures and 880 GB stand in")


def _deepnvme(gpu: str, drives: str, read: float, write: float, gpu_src: str) -> Machine:
    return Machine(gpu, 880.0, read, write, 16, 128.0, 96.9,
                   sources={"gpu": gpu_src, "disk_read_GBps": f"{drives}: reads {read:g} GB/s, writes {write:g} "
                                                              f"GB/s, DeepNVMe's ds_io measurement ({_DEEPNVME})",
                            "host_memory_GB": _DEEPNVME_UNUSED, "cpu": _DEEPNVME_UNUSED})


MACHINES.update({
    "deepnvme-a100-4xgen4": _deepnvme(
        "A100-80GB", "4 PCIe Gen4 NVMe drives in RAID0", 10.0, 5.0,
        f"one A100-80GB of an Azure NC_A100_v4 VM ({_DEEPNVME}, its earlier deepspeed-gds post)"),
    # the post ran the Gen5 drive sets on ND-MI300X-v5 and ND-H200-v5 VMs without saying which set was on which;
    # both GPUs have PCIe Gen5 x16 links, and the MI300X is not in our catalogue: the H200 stands for both
    "deepnvme-h200-4xgen5": _deepnvme(
        "H200", "4 PCIe Gen5 NVMe drives in RAID0", 27.0, 11.0,
        f"an ND-MI300X-v5 or ND-H200-v5 VM ({_DEEPNVME}); the H200 (PCIe Gen5) stands for both"),
    "deepnvme-h200-8xgen5": _deepnvme(
        "H200", "8 PCIe Gen5 NVMe drives in RAID0", 48.0, 26.0,
        f"an ND-MI300X-v5 or ND-H200-v5 VM ({_DEEPNVME}); the H200 (PCIe Gen5) stands for both"),
})


@dataclass(frozen=True)
class Placement:
    """Where weights, KV cache and activations live: fractions on GPU, CPU (host memory), disk."""

    weights: tuple = (1.0, 0.0, 0.0)
    kv_cache: tuple = (1.0, 0.0, 0.0)
    activations: tuple = (1.0, 0.0, 0.0)

    def __post_init__(self):
        for name in ("weights", "kv_cache", "activations"):
            v = tuple(float(x) for x in getattr(self, name))
            if len(v) != 3 or any(not (0 <= x <= 1) for x in v) or abs(sum(v) - 1) > 1e-9:
                raise ValueError(f"placement {name} = {getattr(self, name)!r}: three fractions (gpu, cpu, disk) "
                                 f"in [0, 1] that sum to 1")
            object.__setattr__(self, name, v)

    @classmethod
    def from_percent(cls, wg, wc, cg, cc, hg, hc) -> "Placement":
        """FlexGen's ``--percent wg wc cg cc hg hc`` (the rest of each on disk)."""
        def three(g, c):
            if g < 0 or c < 0 or g + c > 100:
                raise ValueError(f"--percent {g} {c}: two percentages >= 0 whose sum is at most 100")
            return (g / 100, c / 100, (100 - g - c) / 100)
        return cls(three(wg, wc), three(cg, cc), three(hg, hc))


@dataclass(frozen=True)
class LayerStats:
    """Per phase (rows) and layer (columns) aggregates of an inference trace."""

    gpu_s: np.ndarray            # GPU kernel time, all kernels
    attention_s: np.ndarray      # of which attention kernels
    attention_flops: np.ndarray
    kv_read: np.ndarray          # bytes of cached keys and values attention reads
    kv_write: np.ndarray         # bytes of new keys and values
    attention_io: np.ndarray     # bytes of attention's other inputs and outputs (q, k, v in; output out)
    act_out: np.ndarray          # bytes written in the step and read by a later layer step
    weight_bytes: np.ndarray     # per layer
    kv_total: float              # the whole batch's cache at the last step
    peak_activation: float       # largest kernel's non-weight, non-cache bytes
    batch: int
    gen: int


def kernel_layers(trace: Trace) -> np.ndarray:
    """Per kernel, its layer: the largest layer of the weights and cache tensors it touches, else the
    layer of the kernel before it (0 before any)."""
    K = trace.n_kernels
    at = trace.access_tensor.astype(np.int64)
    ak = np.repeat(np.arange(K), np.diff(trace.access_offsets))
    has_layer = np.isin(trace.tensor_role[at], (ROLE_PARAMETER, ROLE_KV_CACHE))
    klayer = np.full(K, -1, np.int64)
    np.maximum.at(klayer, ak[has_layer], trace.tensor_layer[at[has_layer]].astype(np.int64))
    idx = np.where(klayer >= 0, np.arange(K), 0)
    np.maximum.accumulate(idx, out=idx)
    return np.maximum(klayer[idx], 0)


def layer_stats(trace: Trace) -> LayerStats:
    """Aggregate ``trace`` by (phase, layer): see :class:`LayerStats`.  A kernel's layer is the
    largest layer of the weights and cache tensors it touches, else the layer of the kernel before
    it."""
    if trace.kernel_phase is None:
        raise ValueError(f"{trace.model}: not an inference trace (no kernel phases; make one with "
                         f"`g10sim trace inference`)")
    K = trace.n_kernels
    off, at, am = trace.access_offsets, trace.access_tensor.astype(np.int64), trace.access_mode
    ak = np.repeat(np.arange(K), np.diff(off))
    role, tl, size = trace.tensor_role, trace.tensor_layer, trace.tensor_size_bytes.astype(np.float64)
    klayer = kernel_layers(trace)
    phase = trace.kernel_phase.astype(np.int64)
    P, NL = int(phase.max()) + 1, int(klayer.max()) + 1
    step = phase * NL + klayer
    t = trace.kernel_time_ideal_ns / 1e9
    attn = trace.kernel_work.kind == KIND_ATTENTION_FWD if trace.kernel_work is not None else np.zeros(K, bool)

    def per_step(values, mask=None):
        v = values if mask is None else np.where(mask, values, 0.0)
        return np.bincount(step, weights=v, minlength=P * NL).reshape(P, NL)

    a_step = step[ak]
    a_size = size[at]
    is_kv = role[at] == ROLE_KV_CACHE
    rd, wr = (am & ACCESS_READ) != 0, (am & ACCESS_WRITE) != 0
    kv_read = np.bincount(a_step[is_kv & rd & ~wr], weights=a_size[is_kv & rd & ~wr], minlength=P * NL)
    kv_write = np.bincount(a_step[is_kv & wr], weights=a_size[is_kv & wr], minlength=P * NL)
    attn_acc = attn[ak] & ~is_kv
    attention_io = np.bincount(a_step[attn_acc], weights=a_size[attn_acc], minlength=P * NL)
    # activations crossing layer steps: written in one step, read in a later one
    T = trace.n_tensors
    temp = ~trace.tensor_is_global & (role != ROLE_KV_CACHE)
    wstep = np.full(T, -1, np.int64)
    np.maximum.at(wstep, at[wr], a_step[wr])
    crossing = rd & temp[at] & (wstep[at] >= 0) & (a_step > wstep[at])
    crossed = np.zeros(T, bool)
    crossed[at[crossing]] = True
    act_out = np.bincount(wstep[crossed], weights=size[crossed], minlength=P * NL)
    weight_bytes = np.bincount(tl[role == ROLE_PARAMETER].astype(np.int64), weights=size[role == ROLE_PARAMETER],
                               minlength=NL)[:NL]
    nonweight = temp[at]
    ws = np.bincount(ak[nonweight], weights=a_size[nonweight], minlength=K)
    attrs = trace.attrs
    return LayerStats(
        gpu_s=per_step(t), attention_s=per_step(t, attn),
        attention_flops=per_step(trace.kernel_work.flops if trace.kernel_work is not None else np.zeros(K), attn),
        kv_read=kv_read.reshape(P, NL), kv_write=kv_write.reshape(P, NL), attention_io=attention_io.reshape(P, NL),
        act_out=act_out.reshape(P, NL), weight_bytes=weight_bytes, kv_total=float(size[role == ROLE_KV_CACHE].sum()),
        peak_activation=float(ws.max()), batch=int(trace.batch_size),
        gen=int(attrs.get("inference_gen", P)))


@dataclass(frozen=True)
class InferenceResult:
    """One run: time to first token, time per output token, tokens/s, where things were."""

    policy: str
    model: str
    gpu: str
    batch: int
    gpu_batches: int
    prompt: int
    gen: int
    prefill_s: float
    decode_s: float
    placement: dict
    phase_s: list                # per phase: prefill, then each decode step
    memory: dict                 # bytes needed on gpu, cpu, disk and what there is
    busy_s: dict = field(default_factory=dict)    # seconds each resource is busy (copies each way, disk, compute)
    bound_s: dict = field(default_factory=dict)   # seconds of the layer steps each resource is the longest in

    @property
    def total_s(self) -> float:
        return self.prefill_s + self.decode_s

    @property
    def ttft_s(self) -> float:
        """Time to first token: the prefill (the first token comes out of it)."""
        return self.prefill_s

    @property
    def tpot_s(self) -> float | None:
        """Time per output token after the first (None when one token is generated)."""
        return self.decode_s / (self.gen - 1) if self.gen > 1 else None

    @property
    def tokens_per_s(self) -> float:
        """Generation throughput: batch x gen / (prefill + decode), FlexGen's definition."""
        return self.batch * self.gen / self.total_s

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(total_s=self.total_s, ttft_s=self.ttft_s, tpot_s=self.tpot_s, tokens_per_s=self.tokens_per_s)
        return d

    def to_pandas(self):
        """One row per phase (``prefill``, ``decode1``, ...) with its seconds, and the run's metrics as columns."""
        import pandas as pd

        names = ["prefill"] + [f"decode{i}" for i in range(1, len(self.phase_s))]
        df = pd.DataFrame({"phase": names, "seconds": self.phase_s})
        for k in ("policy", "model", "gpu", "batch", "prompt", "gen", "ttft_s", "tpot_s", "tokens_per_s"):
            v = getattr(self, k)
            df[k] = v
        return df

    def summary(self) -> str:
        tpot = f"{self.tpot_s:.4g} s" if self.tpot_s is not None else "-"
        return (f"{self.policy} {self.model} on {self.gpu}, batch {self.batch} ({self.gpu_batches} GPU batches), "
                f"prompt {self.prompt}, {self.gen} tokens: time to first token {self.ttft_s:.4g} s, time per "
                f"output token {tpot}, {self.tokens_per_s:.4g} tokens/s")


def _fits(policy, need: dict, machine: Machine) -> None:
    have = {"gpu": machine.gpu_memory_bytes, "cpu": machine.host_memory_GB * GB, "disk": machine.disk_GB * GB}
    for tier in ("gpu", "cpu", "disk"):
        if need[tier] > have[tier]:
            raise InferenceMemoryError(
                f"{policy}: needs {need[tier] / GB:.1f} GB of {tier} memory, the machine has {have[tier] / GB:.1f} GB")


def accelerate_device_map(st: LayerStats, machine: Machine) -> np.ndarray:
    """Per layer, where Accelerate's ``device_map="auto"`` puts its weights: 0 GPU, 1 CPU, 2 disk.

    In layer order, a layer goes to the GPU while it fits beside the batch's KV cache, the largest
    kernel's activations and one offloaded layer's weights in flight, then to host memory while it
    fits, then to disk."""
    W = st.weight_bytes
    where = np.full(W.size, 2, np.int64)
    gpu_room = machine.gpu_memory_bytes - st.kv_total - st.peak_activation - float(W.max())
    cpu_room = machine.host_memory_GB * GB
    for layer in range(W.size):
        if W[layer] <= gpu_room:
            where[layer] = 0
            gpu_room -= W[layer]
        elif W[layer] <= cpu_room:
            where[layer] = 1
            cpu_room -= W[layer]
    return where


def run_inference(trace: Trace, machine: Machine, policy: str, placement: Placement | None = None,
                  cpu_attention: bool = False, overlap: bool | None = None, stats: LayerStats | None = None,
                  zero_device: str = "cpu") -> InferenceResult:
    """Run ``trace`` under ``policy`` on ``machine``.

    Parameters
    ----------
    trace : Trace
        An inference trace (:func:`g10core.workload.llm.inference_trace`); its GPU batches are
        FlexGen's block (every layer's weights are loaded once per block).
    machine : Machine
    policy : str
        ``flexgen`` (``placement``, ``cpu_attention``, ``overlap``, default on),
        ``zero-inference`` (all weights on ``zero_device``, ``cpu`` or ``nvme``, prefetched one
        layer ahead; the KV cache on the GPU, or in host memory with attention on the CPU when
        ``cpu_attention``), ``accelerate`` (device map: the first layers that fit on the GPU, the
        next in host memory, the rest on disk; an offloaded layer's weights copied when it runs,
        no overlap; the KV cache on the GPU).
    stats : LayerStats, optional
        ``layer_stats(trace)``, when already computed.

    Raises
    ------
    InferenceMemoryError
        The placement does not fit the machine.
    ValueError
        Not an inference trace, an unknown policy or device.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown inference policy {policy!r}; one of {', '.join(POLICIES)}")
    st = stats or layer_stats(trace)
    if trace.profiled_gpu != machine.gpu:
        raise ValueError(f"the trace's kernel times are for {trace.profiled_gpu}, the machine's GPU is {machine.gpu}; "
                         f"make the trace for {machine.gpu}")
    h2d, d2h = machine.link_GBps("to_device") * GB, machine.link_GBps("from_device") * GB
    dr, dw = machine.disk_read_GBps * GB, machine.disk_write_GBps * GB
    cpu_flops = machine.cpu_cores * machine.cpu_GFLOPs_per_core * 1e9
    cpu_bw = machine.cpu_memory_GBps * GB
    W = st.weight_bytes
    NL = W.size
    gpu_batches = int(trace.attrs.get("inference_gpu_batches", 1))
    prompt = int(trace.attrs.get("inference_prompt", 0))

    if policy == "flexgen":
        pl = placement or Placement()
        ov = True if overlap is None else overlap
        w_frac = np.tile(np.array(pl.weights), (NL, 1))
        kv_pl, act_pl, attn_cpu = pl.kv_cache, pl.activations, cpu_attention
        prefetch_layers = 2 if ov else 1
    elif policy == "zero-inference":
        if zero_device not in ("cpu", "nvme"):
            raise ValueError(f"zero-inference device {zero_device!r}: cpu or nvme")
        ov = True
        w_frac = np.tile(np.array((0.0, 1.0, 0.0) if zero_device == "cpu" else (0.0, 0.0, 1.0)), (NL, 1))
        kv_pl = (0.0, 1.0, 0.0) if cpu_attention else (1.0, 0.0, 0.0)
        act_pl, attn_cpu = (1.0, 0.0, 0.0), cpu_attention
        prefetch_layers = 2
    else:   # accelerate: device_map "auto" fills the GPU, then host memory, then disk, in layer order
        ov = False
        kv_pl, act_pl, attn_cpu = (1.0, 0.0, 0.0), (1.0, 0.0, 0.0), False
        prefetch_layers = 1
        w_frac = np.zeros((NL, 3))
        w_frac[np.arange(NL), accelerate_device_map(st, machine)] = 1

    # memory
    off_gpu = w_frac[:, 1] + w_frac[:, 2]
    staged = np.sort(W * off_gpu)[::-1][:prefetch_layers].sum()   # the off-GPU share of the layers in flight
    need = {"gpu": float((W * w_frac[:, 0]).sum() + staged + kv_pl[0] * st.kv_total + st.peak_activation),
            "cpu": float((W * w_frac[:, 1]).sum() + kv_pl[1] * st.kv_total),
            "disk": float((W * w_frac[:, 2]).sum() + kv_pl[2] * st.kv_total)}
    _fits(policy, need, machine)

    # per (phase, layer) resources
    kv_off = kv_pl[1] + kv_pl[2]
    ctog = (W * off_gpu)[None, :] / h2d + np.zeros_like(st.gpu_s)
    dtoc = (W * w_frac[:, 2])[None, :] / dr + np.zeros_like(st.gpu_s)
    gtoc = np.zeros_like(st.gpu_s)
    ctod = np.zeros_like(st.gpu_s)
    comp = st.gpu_s.copy()
    if attn_cpu and kv_off > 0:
        comp -= kv_off * st.attention_s
        cpu_s = np.maximum(st.attention_flops / cpu_flops, (st.kv_read + st.kv_write) / cpu_bw)
        comp += kv_off * cpu_s
        ctog += kv_off * st.attention_io / 2 / h2d     # the attention output comes back
        gtoc += kv_off * st.attention_io / 2 / d2h     # q, k, v go down
    else:
        ctog += kv_off * st.kv_read / h2d
        gtoc += kv_off * st.kv_write / d2h
    dtoc += kv_pl[2] * st.kv_read / dr
    ctod += kv_pl[2] * st.kv_write / dw
    act_off = act_pl[1] + act_pl[2]
    gtoc += act_off * st.act_out / d2h
    ctog += act_off * np.roll(st.act_out, 1, axis=1) / h2d
    dtoc += act_pl[2] * st.act_out / dr
    ctod += act_pl[2] * st.act_out / dw
    # a layer's weights read from disk reach the GPU through host memory: with overlap the two hops
    # pipeline (the slower bounds the step); without, they add up
    parts = np.stack([ctog, gtoc, dtoc, ctod, comp])
    if ov:
        step = parts.max(axis=0)
    else:
        step = parts.sum(axis=0)
    phase_s = step.sum(axis=1)
    # what the time went to: each resource's busy seconds, and the seconds of the steps it bounds
    names = ("cpu_to_gpu", "gpu_to_cpu", "disk_to_cpu", "cpu_to_disk", "compute")
    busy = {n: float(parts[i].sum()) for i, n in enumerate(names)}
    winner = parts.argmax(axis=0)
    bound = {n: float(step[winner == i].sum()) for i, n in enumerate(names)}
    share = (W[:, None] * w_frac).sum(axis=0) / W.sum()
    place = {"weights": {"gpu": float(share[0]), "cpu": float(share[1]), "disk": float(share[2])},
             "kv_cache": dict(zip(("gpu", "cpu", "disk"), kv_pl)),
             "activations": dict(zip(("gpu", "cpu", "disk"), act_pl)),
             "cpu_attention": bool(attn_cpu and kv_off > 0), "overlap": bool(ov)}
    if policy == "zero-inference":
        place["device"] = zero_device
    mem = {f"{k}_needed_bytes": v for k, v in need.items()}
    mem.update(gpu_bytes=machine.gpu_memory_bytes, cpu_bytes=machine.host_memory_GB * GB)
    return InferenceResult(policy=policy, model=trace.model, gpu=machine.gpu, batch=st.batch, gpu_batches=gpu_batches,
                           prompt=prompt, gen=st.gen, prefill_s=float(phase_s[0]), decode_s=float(phase_s[1:].sum()),
                           placement=place, phase_s=[float(x) for x in phase_s], memory=mem, busy_s=busy,
                           bound_s=bound)


__all__ = ["Machine", "MACHINES", "Placement", "LayerStats", "layer_stats", "InferenceResult", "run_inference",
           "InferenceMemoryError", "POLICIES", "replace"]
