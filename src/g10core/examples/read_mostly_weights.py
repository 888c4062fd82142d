"""A policy in a file that gives memory advice: weights read-mostly, evict by arrival.

    g10sim run bert_base-b256 --preset detailed --policy read_mostly_weights.py:ReadMostlyWeights
    g10sim run bert_base-b256 --policy read_mostly_weights.py:ReadMostlyWeights

Memory advice (``cudaMemAdvise``) is a hint action like a prefetch, applied when its kernel
begins to every page of its tensor, and kept until other advice replaces it: here, at kernel 0,
``read_mostly`` on every global tensor (the weights).  The replay then keeps the host copy of
a weight page it brings to the GPU from host memory, so evicting that page is a drop with no
write-back and no ``gpu_to_host`` traffic, until a kernel writes the weights (the optimizer step
collapses the duplicates): page by page under the ``detailed`` preset (the far-fault handler), per
tensor under ``default`` (the slot model).  Weights on the GPU when the advice is given (written
by the last optimizer step) have no host copy: they are written back, and the pages fetched from
host memory after that are duplicates.  ``counters.thrashing.readdup_clean_pages`` counts the
saved write-backs (0 where no weight page leaves the GPU between its fetch and its update).  The other advice
actions are ``prefer_gpu``, ``prefer_host`` and ``accessed_by`` (docs: guide/thrashing.md); the
``g10-artifact`` preset ignores advice (a run warns).
"""
import numpy as np

from g10core.codes import HINT_ADVISE_READ_MOSTLY
from g10core.policies import HINT_DTYPE, Policy


class ReadMostlyWeights(Policy):
    """Advise every global tensor read-mostly at kernel 0; evict in arrival order."""

    name = "read-mostly-weights"
    level = "page"
    eviction = "arrival"
    description = "cudaMemAdvise read-mostly on the weights; arrival-order eviction"

    def hints(self, trace) -> np.ndarray:
        rows = [(0, int(t), HINT_ADVISE_READ_MOSTLY) for t in np.flatnonzero(trace.tensor_is_global)]
        return np.array(rows, dtype=HINT_DTYPE)
