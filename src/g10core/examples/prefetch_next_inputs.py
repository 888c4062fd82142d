"""A policy in a file: prefetch each kernel's inputs one kernel ahead, evict by arrival.

Run it from the command line by file and class name (g10sim finds the shipped examples by
file name; copy this file to start your own policy)::

    g10sim run bert_base-b256 --policy prefetch_next_inputs.py:PrefetchNextInputs
    g10sim hints bert_base-b256 --policy prefetch_next_inputs.py:PrefetchNextInputs -o next.h5

or name it in a sweep file: ``policies = ["g10", "prefetch_next_inputs.py:PrefetchNextInputs"]``.

What it does.  A page-level policy gives the compiled replay a hint table: rows
``(kernel, tensor, action)``, applied when ``kernel`` begins, sorted by kernel (a row for
kernel K, the trace's kernel count, applies at the next iteration's kernel 0).  Here, when
kernel ``k`` begins, every input of kernel ``k + 1`` (of kernel 0 for the last kernel) is
prefetched to the GPU (``HINT_TO_GPU``), so its transfer overlaps kernel ``k``'s compute.
The policy never evicts on purpose: when the GPU is full, the replay's eviction rule picks the
victims, here ``arrival`` (the oldest-arrived page first; the published simulator's "LRU").
Outputs are not prefetched: a kernel's new output is allocated where it is written.

It is a smaller cousin of DeepUM+ (``--policy deepum``): one kernel ahead instead of
``scheduler.prefetch_degree``, inputs only, and no window-aware eviction.
"""
import numpy as np

from g10core.policies import HINT_DTYPE, HINT_TO_GPU, Policy
from g10core.workload.trace import ACCESS_READ


class PrefetchNextInputs(Policy):
    """Prefetch the next kernel's inputs; evict in arrival order."""

    name = "prefetch-next-inputs"       # how results, hint files and sweep records name it
    level = "page"                      # its plan is a hint table for the page-level replay
    eviction = "arrival"                # the rule for whatever the hints leave on a full GPU
    description = "prefetch each kernel's inputs one kernel ahead; arrival-order eviction"

    def hints(self, trace) -> np.ndarray:
        """The hint table for ``trace`` (``self.config`` holds the run's configuration)."""
        rows = []
        n = trace.n_kernels
        for k in range(n):
            nxt = (k + 1) % n
            lo, hi = trace.access_offsets[nxt], trace.access_offsets[nxt + 1]
            is_input = (trace.access_mode[lo:hi] & ACCESS_READ) != 0
            rows.extend((k, int(t), HINT_TO_GPU) for t in trace.access_tensor[lo:hi][is_input])
        return np.array(rows, dtype=HINT_DTYPE)
