"""SSDTrain: activations offloaded to SSD over the direct (GPUDirect Storage) path, with forwarding.

Wu, Park, Zhang, Hidayetoglu, Mailthody, Huang, Lumetta and Hwu, "SSDTrain: Faster Large Language
Model Training Using SSD-Based Activation Offloading", DAC 2025 (arXiv 2408.10013, "SSDTrain: An
Activation Offloading Framework to SSDs for Faster Large Language Model Training").

What the paper does (section III, the tensor cache): every activation autograd saves for the
backward pass is handed to a tensor cache, which writes it to NVMe SSDs with GPUDirect Storage
(GPU<->SSD, no host bounce buffer) asynchronously and drops its GPU copy when the write is done.
In the backward pass the cache prefetches the activations of the next layer to be processed
(layers run in reverse order) while the current one computes.  *Forwarding*: a tensor that is
still in GPU memory when it is asked for (its write not finished yet: typically the last layers
before the loss) is handed over in place and not read back; its SSD copy is discarded.  The
paper's axis of comparison is layer-wise full recomputation (Megatron's activation
checkpointing), against which it reports the memory saved at no throughput cost.

How it maps onto a trace (where we had to choose):

* Offloaded tensors are the saved activations (:func:`g10core.policies.offload.saved_activations`);
  the write (``to_ssd``) is issued at the kernel after the last forward use (the tensor-level
  simulator drops the GPU copy when the write completes, so the write must not overlap a kernel
  that still uses it).
* Layers come from the trace's parameter layers (``tensor_layer``): a kernel belongs to the layer
  of the parameters or gradients it touches, and a kernel that touches none to the layer of the
  kernel before it.  An activation is prefetched (``to_gpu``) when the backward pass of the layer
  processed before its own begins (one layer ahead, in backward order).
* Forwarding is decided on the ideal timeline: the writes run one after another at the SSD's
  bandwidth (capped by the link), in issue order; an activation whose write would end after its
  prefetch is issued is still on the GPU then, so it stays: no hint for it at all.  Its
  discarded write is not simulated (the write queue in the plan counts it; the simulated SSD
  does not).
* No adaptive offloading (the DAC version's choice of how much to offload): everything saved
  is offloaded, as in the paper's main experiments.  The recomputation baseline is not a policy
  here: full layer recomputation re-runs every forward kernel of a layer, including those whose
  outputs the backward pass never reads and which the recompute action cannot regenerate once
  they are dead (``g10core`` recomputes only tensors dropped by a ``free`` hint).

Needs tensor roles (activations), parameter layers and a forward/backward boundary; refuses
other traces with one line.  The SSD is the only tier (``host.*`` keys do not apply).
"""
from __future__ import annotations

import numpy as np

from ..codes import HINT_TO_GPU, HINT_TO_SSD, ROLE_GRADIENT, ROLE_PARAMETER
from ..workload.trace import Trace
from .base import HOST_KEYS, TENSOR_LEVEL_KEYS, register
from .offload import (PlannedOffloadPolicy, Timeline, hint_table, require_boundary, require_layers, require_roles,
                      saved_activations)


def kernel_layers(trace: Trace) -> np.ndarray:
    """The layer of each kernel: the largest layer among the parameters and gradients it touches,
    else the layer of the kernel before it (-1 before the first kernel with one)."""
    K = trace.n_kernels
    role = np.asarray(trace.tensor_role)
    layer = np.asarray(trace.tensor_layer).astype(np.int64)
    t = trace.access_tensor
    k = trace.access_kernel.astype(np.int64)
    has = ((role[t] == ROLE_PARAMETER) | (role[t] == ROLE_GRADIENT)) & (layer[t] >= 0)
    kl = np.full(K, -1, np.int64)
    np.maximum.at(kl, k[has], layer[t][has])
    # forward fill: a kernel without parameters belongs to the layer of the kernel before it
    idx = np.where(kl >= 0, np.arange(K), -1)
    np.maximum.accumulate(idx, out=idx)
    return np.where(idx >= 0, kl[np.maximum(idx, 0)], -1)


def backward_layer_starts(kl: np.ndarray, boundary: int) -> np.ndarray:
    """For each backward kernel, the first kernel of the backward segment (a run of kernels of one
    layer) before its own: where the prefetch of its activations is issued (``boundary`` for the
    first segment).  Index k - boundary."""
    seg = kl[boundary:]
    K = seg.size
    if K == 0:
        return np.zeros(0, np.int64)
    new = np.ones(K, bool)
    new[1:] = seg[1:] != seg[:-1]
    starts = np.flatnonzero(new) + boundary          # first kernel of each segment
    which = np.cumsum(new) - 1                       # segment of each kernel
    prev = np.concatenate(([boundary], starts[:-1]))
    return prev[which]


def ssdtrain_schedule(trace: Trace, config, policy: str = "ssdtrain") -> dict:
    """SSDTrain's plan: ``{"hints", "initial_tier" (None), "info", "forwarded"}``; see the module docstring.

    ``forwarded`` lists the tensors kept in place; ``info`` counts them (``n_forwarded``,
    ``forwarded_bytes``) beside ``n_offloaded`` and ``offloaded_bytes``.
    """
    require_roles(policy, trace)
    boundary = require_boundary(policy, trace)
    require_layers(policy, trace)
    saved = saved_activations(trace, boundary)
    tl = Timeline(trace, config)
    kl = kernel_layers(trace)
    pre_of = backward_layer_starts(kl, boundary)
    order = np.lexsort((saved.tensor, saved.last_forward))      # issue order of the writes
    queue_end = 0.0
    rows, forwarded = [], []
    off_bytes = fwd_bytes = 0
    for i in order.tolist():
        t = int(saved.tensor[i])
        off = int(saved.last_forward[i]) + 1
        back = int(saved.back_access[i])
        pre = int(pre_of[back - boundary])
        size = int(tl.size[t])
        queue_end = max(queue_end, tl.start_s[off]) + size / tl.ssd_Bps
        if off >= back or queue_end > tl.start_s[pre]:
            forwarded.append(t)             # still on the GPU when the cache is asked for it
            fwd_bytes += size
            continue
        rows.append((off, t, HINT_TO_SSD))
        if pre < back:
            rows.append((pre, t, HINT_TO_GPU))
        off_bytes += size
    n_off = sum(1 for r in rows if r[2] == HINT_TO_SSD)
    info = {"boundary": boundary, "n_saved": int(saved.tensor.size), "n_offloaded": n_off, "offloaded_bytes": off_bytes,
            "n_forwarded": len(forwarded), "forwarded_bytes": fwd_bytes}
    return {"hints": hint_table(rows), "initial_tier": None, "info": info, "forwarded": forwarded}


@register
class SSDTrain(PlannedOffloadPolicy):
    name = "ssdtrain"
    reads = TENSOR_LEVEL_KEYS - HOST_KEYS
    not_applicable = HOST_KEYS              # GPUDirect Storage: the SSD is the only tier
    description = ("SSDTrain (DAC 2025): saved activations written to SSD over GPUDirect Storage, prefetched "
                   "one layer ahead in backward; tensors still resident are forwarded in place")

    def make_plan(self, trace: Trace) -> dict:
        return ssdtrain_schedule(trace, self.config, self.name)


__all__ = ["SSDTrain", "backward_layer_starts", "kernel_layers", "ssdtrain_schedule"]
