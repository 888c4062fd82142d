"""The Python mirror of the codes in ``_types.pxd`` (one definition each).

(Not ``types.py``: that name would shadow the standard library's ``types`` for any
script run from this folder.)

A leaf module: it imports nothing from g10core, so every layer (trace and hint
files, the simulators, the policies) can use the codes without importing the
policy registry.  ``g10core.policies`` re-exports the hint names.
"""
from __future__ import annotations

import numpy as np

# Hint actions (``_types.pxd``: ``HintAction``).
HINT_TO_GPU = 0    # prefetch; pre-allocate when the tensor is not present
HINT_TO_SSD = 1    # pre-evict to SSD
HINT_TO_HOST = 2   # pre-evict to host memory
HINT_FREE = 3      # pre-deallocate (drop without transfer)
ACTION_NAMES = {HINT_TO_GPU: "to_gpu", HINT_TO_SSD: "to_ssd", HINT_TO_HOST: "to_host", HINT_FREE: "free"}

# One migration hint: applied when kernel `kernel` (index within the iteration) begins.
HINT_DTYPE = np.dtype([("kernel", "<i4"), ("tensor", "<i4"), ("action", "i1")], align=False)
