"""Page-level baselines that need no scheduler: Base UVM, DeepUM+ and Ideal."""
from __future__ import annotations

import numpy as np

from . import HINT_DTYPE, HINT_TO_GPU, Policy, empty_hints, register


@register
class BaseUVM(Policy):
    """Demand paging only; LRU (arrival-order) eviction; dead tensors are never freed."""

    name = "base-uvm"
    level = "page"
    eviction = "lru"
    apply_hints = False
    description = "Base UVM: demand paging, LRU eviction, no hints"


def deepum_hints(trace, config) -> np.ndarray:
    """At kernel i, prefetch every tensor of kernel (i + degree) mod K (perfect look-ahead).

    Within a kernel the tensors come in the trace's access order; the artifact iterates
    a hash set of tensor pointers there, an order that cannot be recovered.
    """
    K = trace.n_kernels
    degree = config.scheduler.prefetch_degree
    off = trace.access_offsets
    target = (np.arange(K) + degree) % K
    counts = np.diff(off)[target]
    out = np.zeros(int(counts.sum()), HINT_DTYPE)
    out["kernel"] = np.repeat(np.arange(K, dtype=np.int32), counts)
    out["tensor"] = np.concatenate([trace.access_tensor[off[j]:off[j + 1]] for j in target]) if K else []
    out["action"] = HINT_TO_GPU
    return out


@register
class DeepUM(Policy):
    """DeepUM+: 8-kernel look-ahead prefetch, window-aware eviction, dead pages dropped."""

    name = "deepum"
    level = "page"
    eviction = "deepum"
    apply_hints = True
    description = "DeepUM+: perfect look-ahead prefetch of the next kernels' tensors"

    def hints(self, trace):
        return deepum_hints(trace, self.config)


@register
class Ideal(Policy):
    """Every tensor resident: the iteration takes the sum of ideal kernel times."""

    name = "ideal"
    level = "page"
    ideal = True
    apply_hints = False
    description = "Ideal: infinite GPU memory"

    def hints(self, trace):
        return empty_hints()
