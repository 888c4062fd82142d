"""vDNN: layer-wise offload of forward activations to host memory, ``vdnn`` and ``vdnn-conv``.

Rhu, Gimelshein, Clemons, Zulfiqar and Keckler, "vDNN: Virtualized Deep Neural Networks for
Scalable, Memory-Efficient Neural Network Design", MICRO 2016 (arXiv 1602.08124).

What the paper does (section III, "Virtualized DNN"): during forward propagation, each layer's
input feature maps (X) are offloaded from GPU memory to host (pinned CPU) memory, the copy
overlapping the layer's own computation, and released once the layer and its offload are done;
during backward propagation the offloaded X of a layer is prefetched back when the backward
computation of the layer after it starts, i.e. one layer ahead (section III-C).  Weights and
gradients stay in GPU memory.  Two static policies (section III-D): vDNN-all offloads the X
of every layer, vDNN-conv only those of convolutional layers; the dynamic policy (vDNN-dyn)
picks between them per network and is not modelled here.

How it maps onto a trace (where we had to choose):

* A *layer* is one kernel: vDNN manages memory per cuDNN layer call (a convolution, an
  activation, a pooling), and a captured trace has one kernel per framework operator.
* Its *X* are the saved activations (:func:`g10core.policies.offload.saved_activations`) that a
  forward kernel reads: the inputs of a forward layer that the backward pass needs again.
  Activations only the backward pass reads (masks, statistics) are not a layer's input and stay
  resident, as cuDNN's reserve space does in vDNN.
* The offload (``to_host``) is issued at the kernel after X's last forward reader: the
  tensor-level simulator releases a tensor's GPU memory when its eviction completes, so the
  eviction must not overlap a kernel that still reads it (vDNN starts the copy with that layer
  and releases X after it, which frees the memory at the same point).  vDNN's barrier (layer
  n+1 waits for the offload of layer n) is not modelled: the next layer starts at once, and a
  later allocation that needs the memory waits for the eviction instead.
* The prefetch (``to_gpu``) of X is issued at the backward kernel just before X's first backward
  reader: one layer ahead.  With ``vdnn-conv`` a *convolutional* layer is a kernel whose name
  says convolution or matrix product (``conv``, ``mm``, ``matmul``, ``linear``, ``gemm``,
  ``addmm``, ``bmm``): the layers of a transformer that hold the weights.
* Without host memory (``host.bandwidth_GBps = 0``) the simulator sends the offloads to SSD.
* The offloads go to pinned host memory, which vDNN has no tier below: an offload that
  ``host.memory_GiB`` cannot hold besides what is there fails the run, naming the tensor
  (``host_overflow = "fail"``).  An offload still queued when a kernel needs its tensor again
  is cancelled (the FIFO backs up without the barrier): the activation stays on the GPU.

Needs tensor roles (activations) and a forward/backward boundary (a loss kernel); refuses other
traces with one line.
"""
from __future__ import annotations

import re

import numpy as np

from ..codes import HINT_TO_GPU, HINT_TO_HOST
from ..workload.trace import ACCESS_READ, Trace
from .base import TENSOR_LEVEL_KEYS, register
from .offload import PlannedOffloadPolicy, hint_table, require_boundary, require_roles, saved_activations

CONV_PATTERN = re.compile(r"conv|(^|[^a-z])(add)?b?mm([^a-z]|$)|matmul|linear|gemm", re.IGNORECASE)


def is_conv_kernel(name: str) -> bool:
    """Whether a kernel name says convolution or matrix product (vDNN-conv's layers)."""
    return bool(CONV_PATTERN.search(str(name)))


def vdnn_schedule(trace: Trace, config, *, conv_only: bool = False, policy: str = "vdnn") -> dict:
    """vDNN's plan: ``{"hints", "initial_tier" (None), "info"}``; see the module docstring.

    ``info`` has ``boundary``, ``n_offloaded``, ``offloaded_bytes``.
    """
    require_roles(policy, trace)
    boundary = require_boundary(policy, trace)
    saved = saved_activations(trace, boundary)
    keep = saved.forward_read.copy()
    if conv_only:
        conv = np.array([is_conv_kernel(n) for n in trace.kernel_name.tolist()], bool)
        # X of a conv layer: a saved activation that some forward conv kernel reads
        read_by_conv = np.zeros(trace.n_tensors, bool)
        kern = trace.access_kernel
        sel = (kern < boundary) & ((trace.access_mode & ACCESS_READ) != 0) & conv[kern]
        read_by_conv[trace.access_tensor[sel]] = True
        keep &= read_by_conv[saved.tensor]
    rows = []
    for t, last, back in zip(saved.tensor[keep].tolist(), saved.last_forward[keep].tolist(),
                             saved.back_access[keep].tolist()):
        off = last + 1
        pre = max(back - 1, boundary)
        if off >= back:
            continue            # no idle kernel between the last forward and the first backward use
        rows.append((off, t, HINT_TO_HOST))
        if pre > off:
            rows.append((pre, t, HINT_TO_GPU))
    hints = hint_table(rows)
    off_t = hints["tensor"][hints["action"] == HINT_TO_HOST]
    page = config.gpu.page_size_bytes
    size = (trace.tensor_size_bytes[off_t] + page - 1) // page * page
    info = {"boundary": boundary, "variant": "conv" if conv_only else "all", "n_offloaded": int(off_t.size),
            "offloaded_bytes": int(size.sum())}
    return {"hints": hints, "initial_tier": None, "info": info}


@register
class VDNN(PlannedOffloadPolicy):
    name = "vdnn"
    conv_only = False
    reads = TENSOR_LEVEL_KEYS
    description = ("vDNN-all (MICRO 2016): every layer's input activations offloaded to host memory in "
                   "forward, prefetched one layer ahead in backward")

    def make_plan(self, trace: Trace) -> dict:
        return vdnn_schedule(trace, self.config, conv_only=self.conv_only, policy=self.name)


@register
class VDNNConv(VDNN):
    name = "vdnn-conv"
    conv_only = True
    description = ("vDNN-conv (MICRO 2016): the input activations of convolution and matrix-product layers "
                   "offloaded to host memory, prefetched one layer ahead in backward")


__all__ = ["VDNN", "VDNNConv", "is_conv_kernel", "vdnn_schedule"]
