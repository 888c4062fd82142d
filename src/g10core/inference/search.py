"""FlexGen's policy search: the placement and batch sizes its cost model says are the fastest.

FlexGen (Sheng et al., ICML 2023, section 4.3, "Cost Model and Policy Search") chooses the GPU
batch size, the number of GPU batches in a block and the percentages of weights, KV cache and
activations on GPU, CPU and disk that maximise generation throughput under the GPU's, host
memory's and disk's capacities (the machine's ``disk_GB``), with its cost model of a layer step (the longest of its five
resources, :mod:`g10core.inference.schedule`).  FlexGen solves a linear program per batch-size
pair; we enumerate a grid instead, with the same cost model:

* GPU batch sizes and block sizes (``gpu_batch_sizes`` x ``gpu_batches``);
* the weights' and the KV cache's (gpu, cpu) percentages on a grid of ``step`` percent (the rest
  on disk), activations on the GPU (FlexGen's searched policies keep them there or on the CPU;
  they are a few MB per layer at these batch sizes);
* attention on the CPU or not (FlexGen's ``--cpu``).

The GPU batches of a block are identical, so the layer aggregates of one GPU batch's trace
times the number of GPU batches are those of the whole block (weights are loaded once per
block): one trace per GPU batch size, the rest is arithmetic over numpy arrays.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..workload.llm import inference_trace
from .schedule import GB, Machine, Placement, layer_stats

DEFAULT_GPU_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128)
DEFAULT_GPU_BATCHES = (1, 2, 3, 4, 6, 8, 12, 16)


@dataclass(frozen=True)
class SearchResult:
    """The policy the search chose and what its cost model predicts for it."""

    gpu_batch_size: int
    gpu_batches: int
    placement: Placement
    cpu_attention: bool
    tokens_per_s: float
    total_s: float
    evaluated: int
    feasible: int
    wall_s: float

    @property
    def percent(self) -> tuple:
        """FlexGen's ``--percent wg wc cg cc hg hc``."""
        p = self.placement
        return tuple(round(100 * x) for x in (p.weights[0], p.weights[1], p.kv_cache[0], p.kv_cache[1],
                                               p.activations[0], p.activations[1]))

    def to_dict(self) -> dict:
        return {"gpu_batch_size": self.gpu_batch_size, "gpu_batches": self.gpu_batches,
                "batch": self.gpu_batch_size * self.gpu_batches, "percent": list(self.percent),
                "cpu_attention": self.cpu_attention, "tokens_per_s": self.tokens_per_s, "total_s": self.total_s,
                "evaluated": self.evaluated, "feasible": self.feasible, "wall_s": self.wall_s}


def _grid(step: int) -> np.ndarray:
    """(gpu, cpu, disk) fractions on a grid of ``step`` percent, shape (n, 3)."""
    pts = [(g, c) for g in range(0, 101, step) for c in range(0, 101 - g, step)]
    a = np.array(pts, float) / 100
    return np.column_stack([a, 1 - a.sum(axis=1)])


def search_flexgen(model, prompt: int, gen: int, machine: Machine, weights: str = "fp16", kv_cache: str = "fp16",
                   gpu_batch_sizes=DEFAULT_GPU_BATCH_SIZES, gpu_batches=DEFAULT_GPU_BATCHES,
                   step: int = 10) -> SearchResult:
    """The fastest FlexGen policy for ``model`` on ``machine`` by its cost model.

    Parameters
    ----------
    model : str or LMConfig
    prompt, gen : int
    machine : Machine
    weights, kv_cache : str
        ``fp16`` or ``int4`` (FlexGen's ``--compress-weight`` / ``--compress-cache``).
    gpu_batch_sizes, gpu_batches : sequences of int
        The candidates.
    step : int
        The percentages' grid step (a divisor of 100).

    Raises
    ------
    ValueError
        Bad arguments, or no candidate fits the machine.
    """
    if not isinstance(step, int) or step < 1 or 100 % step:
        raise ValueError(f"step = {step!r}: a divisor of 100")
    t0 = time.perf_counter()
    h2d, d2h = machine.link_GBps("to_device") * GB, machine.link_GBps("from_device") * GB
    dr, dw = machine.disk_read_GBps * GB, machine.disk_write_GBps * GB
    cpu_flops = machine.cpu_cores * machine.cpu_GFLOPs_per_core * 1e9
    cpu_bw = machine.cpu_memory_GBps * GB
    grid = _grid(step)                              # (n, 3)
    wg, wc, wd = grid[:, 0], grid[:, 1], grid[:, 2]     # weights (rows of the tables below)
    kg, kc = grid[:, 0], grid[:, 1]                    # KV cache (columns)
    best = None
    evaluated = feasible = 0
    for gbs in gpu_batch_sizes:
        trace = inference_trace(model, prompt, gen, int(gbs), gpu=machine.gpu, weights=weights, kv_cache=kv_cache)
        st = layer_stats(trace)
        W = st.weight_bytes                           # (NL,)
        Wsum, Wmax = float(W.sum()), float(W.max())
        for nb in gpu_batches:
            for cpu_attn in (False, True):
                # per weight placement (rows) x KV placement (columns)
                kv_total = st.kv_total * nb
                gpu_need = (wg * Wsum + 2 * Wmax * (wc + wd))[:, None] + kg[None, :] * kv_total + st.peak_activation
                cpu_need = (wc * Wsum)[:, None] + kc[None, :] * kv_total
                disk_need = (wd * Wsum)[:, None] + (1 - kg - kc)[None, :] * kv_total
                ok = ((gpu_need <= machine.gpu_memory_bytes) & (cpu_need <= machine.host_memory_GB * GB)
                      & (disk_need <= machine.disk_GB * GB))
                evaluated += ok.size
                if not ok.any():
                    continue
                # each resource per (phase, layer) as  a + b * weight-frac + c * kv-frac terms
                gpu_s, attn_s = st.gpu_s * nb, st.attention_s * nb
                kv_r, kv_w, aio = st.kv_read * nb, st.kv_write * nb, st.attention_io * nb
                cpu_s = np.maximum(st.attention_flops * nb / cpu_flops, (kv_r + kv_w) / cpu_bw)
                rows = np.flatnonzero(ok.any(axis=1))
                for i in rows.tolist():
                    cols = np.flatnonzero(ok[i])
                    koff = (grid[cols, 1] + grid[cols, 2])[:, None, None]
                    kd = grid[cols, 2][:, None, None]
                    ctog = ((wc[i] + wd[i]) * W / h2d)[None, None, :] + 0 * gpu_s[None]
                    dtoc = (wd[i] * W / dr)[None, None, :] + kd * kv_r[None] / dr
                    ctod = kd * kv_w[None] / dw
                    if cpu_attn:
                        comp = gpu_s[None] + koff * (cpu_s - attn_s)[None]
                        ctog = ctog + koff * aio[None] / 2 / h2d
                        gtoc = koff * aio[None] / 2 / d2h
                    else:
                        comp = gpu_s[None] + 0 * koff
                        ctog = ctog + koff * kv_r[None] / h2d
                        gtoc = koff * kv_w[None] / d2h
                    step_s = np.maximum(np.maximum(np.maximum(ctog, gtoc), np.maximum(dtoc, ctod)), comp)
                    total = step_s.sum(axis=(1, 2))
                    feasible += total.size
                    j = int(np.argmin(total))
                    tps = gbs * nb * gen / float(total[j])
                    if best is None or tps > best[0] * (1 + 1e-12):
                        best = (tps, float(total[j]), int(gbs), int(nb), grid[i], grid[cols[j]], cpu_attn)
    if best is None:
        raise ValueError(f"no FlexGen policy of {model if isinstance(model, str) else model.name} fits {machine.gpu} "
                         f"with {machine.host_memory_GB:g} GB of host memory at these batch sizes")
    tps, total, gbs, nb, w, kv, cpu_attn = best
    placement = Placement(tuple(w), tuple(kv), (1.0, 0.0, 0.0))
    return SearchResult(gbs, nb, placement, cpu_attn, tps, total, evaluated, feasible, time.perf_counter() - t0)
